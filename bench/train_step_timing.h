// What the layer-family benchmarks (cnn_step, lstm_step, transformer_step) share: the device argument (a "skipped:
// no GPU" row where none is), one warm-up train_on_batch, the best of 3 repetitions of `steps` steps, and the output
// as one JSON line or, with "row", a Markdown row for scripts/gpu-check.sh.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include <osprey/osprey.h>

namespace bench {

/// True (after printing the row, its device column `label` where given) when `device` is a GPU and none is visible.
inline bool skip_without_gpu(const char* name, int batch, const std::string& device, const std::string& label = "") {
  if (osprey::DeviceSpec::from_string(device).device_type != "GPU" ||
      !osprey::config::list_logical_devices("GPU").empty()) {
    return false;
  }
  std::printf("| %s | %d | %s | skipped: no GPU |\n", name, batch, (label.empty() ? device : label).c_str());
  return true;
}

/// µs per train_on_batch step: `warm_up` steps, then the best of 3 repetitions of `steps` steps.
inline double best_us_per_step(osprey::keras::Model& model, const osprey::Tensor& x, const osprey::Tensor& y, int steps,
                               int warm_up = 1) {
  for (int i = 0; i < warm_up; ++i) model.train_on_batch(x, y);
  using clock = std::chrono::steady_clock;
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = clock::now();
    for (int i = 0; i < steps; ++i) model.train_on_batch(x, y);
    best = std::min(best, std::chrono::duration<double, std::micro>(clock::now() - t0).count() / steps);
  }
  return best;
}

/// The result: a Markdown row (`row`) or one JSON line naming the case.
inline void report(bool row, const char* name, int batch, const std::string& device, const std::string& what, double us) {
  if (row) {
    std::printf("| %s | %d | %s | %.1f |\n", name, batch, device.c_str(), us);
  } else {
    std::printf("{\"framework\": \"osprey\", \"case\": \"%s\", \"us_per_step\": %.1f}\n", what.c_str(), us);
  }
}

}  // namespace bench
