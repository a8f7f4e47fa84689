// Issue 18's Transformer benchmark: one encoder block (MultiHeadAttention with 4 heads of 64 over 128 steps of
// width 256, residual Add + LayerNormalization, a 1024-unit ReLU feed-forward, residual Add + LayerNormalization),
// batch 32, Adam, mse against a random target; time per train_on_batch step (one JSON line).
// bench/torch_transformer.py builds the same block.
//   transformer_step [batch] [steps] [time_steps] [device] [row|json] [policy]
//   ("row": a Markdown row for scripts/gpu-check.sh; policy: a keras::mixed_precision policy, e.g. mixed_bfloat16)
#include <cstdlib>
#include <string>

#include <osprey/osprey.h>

#include "train_step_timing.h"

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 32;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 3;
  const int time_steps = argc > 3 ? std::atoi(argv[3]) : 128;
  const std::string device = argc > 4 ? argv[4] : "/CPU:0";
  const bool row = argc > 5 && std::string(argv[5]) == "row";
  const std::string policy = argc > 6 ? argv[6] : "float32";
  keras::mixed_precision::set_global_policy(policy);
  constexpr int width = 256;
  // A row names the policy with the device (scripts/gpu-check.sh prints float32 and mixed rows together).
  const std::string where = row && policy != "float32" ? device + ", " + policy : device;
  if (bench::skip_without_gpu("transformer", batch, device, where)) return 0;
  osprey::DeviceScope on(device);
  osprey::random::set_seed(0);
  auto x = osprey::random::uniform({batch, time_steps, width});
  auto y = osprey::random::uniform({batch, time_steps, width});
  auto in = keras::Input({time_steps, width});
  auto a = layers::MultiHeadAttention(4, width / 4)({in, in});
  auto h = layers::LayerNormalization()(layers::Add()({in, a}));
  auto f = layers::Dense(width)(layers::Dense(4 * width, "relu")(h));
  keras::Model model(in, layers::LayerNormalization({.dtype = "float32"})(layers::Add()({h, f})));
  model.compile({.optimizer = "adam", .loss = "mse"});
  bench::report(row, "transformer", batch, where,
                "Transformer encoder block (4 heads, width " + std::to_string(width) + ", " + std::to_string(time_steps) +
                    " steps), batch " + std::to_string(batch) + ", train_on_batch",
                bench::best_us_per_step(model, x, y, steps));
  return 0;
}
