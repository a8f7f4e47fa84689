// Issue 18's LSTM benchmark: batch 64, 100 steps of 128 inputs, LSTM(256) then Dense(1), Adam, mse; time per
// train_on_batch step (one JSON line). bench/torch_lstm.py builds the same network.
// "gru" as the 6th argument: GRU(256) (Keras's reset_after form) instead; "steps" as the 7th: the layer with
// use_cudnn=false (its steps as ops, not the whole-sequence op: oneDNN's or cuDNN's RNN); a Keras dtype policy as
// the 8th ("mixed_bfloat16": the LSTM on oneDNN's bfloat16 RNN, the Dense in bfloat16).
//   lstm_step [batch] [steps] [time_steps] [device] [row|json] [lstm|gru] [auto|steps] [policy]   ("row": a
//   Markdown row for scripts/gpu-check.sh)
#include <cstdlib>
#include <optional>
#include <string>

#include <osprey/osprey.h>

#include "train_step_timing.h"

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 64;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 3;
  const int time_steps = argc > 3 ? std::atoi(argv[3]) : 100;
  const std::string device = argc > 4 ? argv[4] : "/CPU:0";
  const bool row = argc > 5 && std::string(argv[5]) == "row";
  const bool gru = argc > 6 && std::string(argv[6]) == "gru";
  const bool by_steps = argc > 7 && std::string(argv[7]) == "steps";
  const std::string policy = argc > 8 ? argv[8] : "float32";
  const std::string name =
      std::string(gru ? "gru" : "lstm") + (by_steps ? " steps" : "") + (policy != "float32" ? " " + policy : "");
  if (bench::skip_without_gpu(name.c_str(), batch, device)) return 0;
  osprey::DeviceScope on(device);
  keras::mixed_precision::set_global_policy(policy);
  osprey::random::set_seed(0);
  auto x = osprey::random::uniform({batch, time_steps, 128});
  auto y = osprey::random::uniform({batch, 1});
  const layers::RNNOptions r{.use_cudnn = by_steps ? std::optional<bool>(false) : std::nullopt};
  keras::Sequential model({layers::Input({time_steps, 128}),
                           gru ? keras::LayerRef(layers::GRU(256, {}, r)) : keras::LayerRef(layers::LSTM(256, {}, r)),
                           layers::Dense(1)});
  model.compile({.optimizer = "adam", .loss = "mse"});
  bench::report(row, name.c_str(), batch, device,
                std::string(gru ? "GRU" : "LSTM") + "(256) over " + std::to_string(time_steps) + " steps of 128, batch " +
                    std::to_string(batch) + (by_steps ? ", use_cudnn=false" : "") +
                    (policy != "float32" ? ", " + policy : "") + ", train_on_batch",
                bench::best_us_per_step(model, x, y, steps));
  return 0;
}
