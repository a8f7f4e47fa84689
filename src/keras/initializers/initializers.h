// Internal to the initializers. Private.
#pragma once

namespace osprey::keras::detail {
/// While one is alive on this thread, an initializer Osprey does not sample (STFT) gives zeros instead of an error:
/// load_model builds a model whose weights then come from the file.
struct WeightsFollow {
  WeightsFollow();
  ~WeightsFollow();
  WeightsFollow(const WeightsFollow&) = delete;
  WeightsFollow& operator=(const WeightsFollow&) = delete;
};
}  // namespace osprey::keras::detail
