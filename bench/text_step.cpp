// A text classifier's training step (issue 18): Embedding(10000, 128, mask_zero) + Bidirectional(LSTM(128)) +
// Dense(1, sigmoid), Adam, binary cross-entropy; batch 64 of 100 token ids, each row right-padded with zeros after
// 20 to 100 tokens (fixed seed). Time per train_on_batch step (one JSON line). "steps" as the 3rd argument runs the
// LSTMs step by step (use_cudnn=false) instead of oneDNN's primitive: the same model, the two paths. "pre" as the
// 4th pads each row before its tokens (keras.utils.pad_sequences's default: left-padded masks).
// bench/torch_lstm.py's "text" mode and bench/keras_bench.py's "text" case build the same network (right-padded).
//   text_step [batch] [steps] [auto|steps] [post|pre]
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <osprey/osprey.h>

#include "train_step_timing.h"

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 64;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 3;
  const bool by_steps = argc > 3 && std::string(argv[3]) == "steps";
  const std::string padding = argc > 4 ? argv[4] : "post";
  constexpr int kTokens = 100, kVocab = 10000;
  osprey::random::set_seed(0);
  // Lengths 20..100 and ids 1..9999 from a fixed linear congruential sequence (the Python benchmarks use the same).
  std::vector<std::vector<int64_t>> rows(static_cast<std::size_t>(batch));
  std::vector<float> labels(static_cast<std::size_t>(batch));
  uint64_t state = 12345;
  auto next = [&state] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int b = 0; b < batch; ++b) {
    const int len = 20 + static_cast<int>(next() % 81);
    for (int k = 0; k < len; ++k) rows[static_cast<std::size_t>(b)].push_back(1 + static_cast<int64_t>(next() % (kVocab - 1)));
    labels[static_cast<std::size_t>(b)] = static_cast<float>(next() % 2);
  }
  const auto x = keras::utils::pad_sequences(rows, {.maxlen = kTokens, .padding = padding});
  const auto y = osprey::Tensor::from_vector(labels, {batch, 1});
  const std::optional<bool> use_cudnn = by_steps ? std::optional<bool>(false) : std::nullopt;
  auto tokens = keras::Input({kTokens}, {.dtype = osprey::DType::int32});
  auto h = layers::Embedding(kVocab, 128, {.mask_zero = true})(tokens);
  h = layers::Bidirectional(std::make_shared<layers::LSTM>(128, layers::RecurrentOptions{},
                                                           layers::RNNOptions{.use_cudnn = use_cudnn}))(h);
  keras::Model model(tokens, layers::Dense(1, "sigmoid")(h));
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy"});
  bench::report(false, "text", batch, "/CPU:0",
                std::string("Embedding(10000, 128, mask_zero) + Bidirectional(LSTM(128)) over 100 ") +
                    (padding == "pre" ? "left" : "right") + "-padded tokens, batch " +
                    std::to_string(batch) + (by_steps ? ", step by step" : "") + ", train_on_batch",
                bench::best_us_per_step(model, x, y, steps));
  return 0;
}
