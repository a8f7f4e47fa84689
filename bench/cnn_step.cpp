// The CIFAR-shaped benchmark of issue 17: a small VGG-style network on 32x32x3 inputs, batch 128, Adam, sparse
// categorical crossentropy; time per train_on_batch step (one JSON line, or a Markdown row with "row").
//   cnn_step [batch] [steps] [device] [row|json] [policy]   (policy: a dtype policy, "mixed_bfloat16")
//   conv 32 3x3 same relu -> conv 32 -> maxpool 2 -> conv 64 -> conv 64 -> maxpool 2 -> flatten -> dense 128 relu
//   -> dense 10 softmax (bench/torch_cnn.py and bench/keras_bench.py cnn build the same network)
#include <cstdio>
#include <cstdlib>
#include <string>

#include <osprey/keras/mixed_precision.h>
#include <osprey/osprey.h>

#include "train_step_timing.h"

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 128;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  const std::string device = argc > 3 ? argv[3] : "/CPU:0";
  const bool row = argc > 4 && std::string(argv[4]) == "row";
  const std::string policy = argc > 5 ? argv[5] : "float32";
  keras::mixed_precision::set_global_policy(policy);
  // A row names the policy with the device (scripts/gpu-check.sh prints float32 and mixed rows together).
  const std::string where = row && policy != "float32" ? device + ", " + policy : device;
  if (bench::skip_without_gpu("cnn", batch, device, where)) return 0;
  osprey::config::set_soft_device_placement(false);
  osprey::random::set_seed(0);
  osprey::DeviceScope on(device);
  auto x = osprey::random::uniform({batch, 32, 32, 3});
  auto y = osprey::random::randint(0, 10, {batch}).cast(osprey::float32);
  const keras::layers::ConvOptions relu_same{.padding = "same", .activation = "relu"};
  keras::Sequential model({layers::Input({32, 32, 3}), layers::Conv2D(32, 3, relu_same), layers::Conv2D(32, 3, relu_same),
                           layers::MaxPooling2D(2), layers::Conv2D(64, 3, relu_same), layers::Conv2D(64, 3, relu_same),
                           layers::MaxPooling2D(2), layers::Flatten(), layers::Dense(128, "relu"),
                           layers::Dense(10, "softmax")});
  model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  // Three warm-up steps: the primitives, the pools, the recorded step.
  bench::report(row, "cnn", batch, where,
                "VGG-style CNN 32x32x3 batch " + std::to_string(batch) + ", train_on_batch, default threads" +
                    (policy == "float32" ? "" : ", " + policy),
                bench::best_us_per_step(model, x, y, steps, 3));
  return 0;
}
