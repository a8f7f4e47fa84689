// Time per training step of a model on one device, as train_on_batch() runs it (it returns the loss, so every
// step's work is complete when it returns). Prints one Markdown table row.
//   device_step <seed|wide> <batch> <device> [steps] [policy]   (policy: a dtype policy, "mixed_bfloat16")
//   seed: 20 -> 64 -> 32 -> 1 (relu, relu, sigmoid), Adam, binary crossentropy
//   wide: 784 -> 512 -> 512 -> 10 (relu, relu, softmax), Adam, sparse categorical crossentropy
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <seed|wide> <batch> <device> [steps] [policy]\n", argv[0]);
    return 2;
  }
  const std::string model_name = argv[1], device = argv[3];
  const int batch = std::atoi(argv[2]);
  const int steps = argc > 4 ? std::atoi(argv[4]) : 200;
  const std::string policy = argc > 5 ? argv[5] : "float32";
  keras::mixed_precision::set_global_policy(policy);
  const std::string label = policy == "float32" ? device : device + ", " + policy;
  const bool wide = model_name == "wide";
  if (osprey::DeviceSpec::from_string(device).device_type == "GPU" &&
      osprey::config::list_logical_devices("GPU").empty()) {
    std::printf("| %s | %d | %s | skipped: no GPU |\n", model_name.c_str(), batch, label.c_str());
    return 0;
  }
  osprey::config::set_soft_device_placement(false);  // a step that cannot run on the device is an error here
  osprey::random::set_seed(0);
  osprey::DeviceScope on(device);
  const int in = wide ? 784 : 20;
  auto x = osprey::random::uniform({batch, in});
  auto y = wide ? osprey::random::randint(0, 10, {batch}).cast(osprey::float32)
                : osprey::random::randint(0, 2, {batch, 1}).cast(osprey::float32);
  auto model = wide ? keras::Sequential({layers::Input({784}), layers::Dense(512, "relu"), layers::Dense(512, "relu"),
                                         layers::Dense(10, "softmax")})
                    : keras::Sequential({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(32, "relu"),
                                         layers::Dense(1, "sigmoid")});
  model.compile({.optimizer = "adam",
                 .loss = wide ? "sparse_categorical_crossentropy" : "binary_crossentropy"});
  for (int i = 0; i < 10; ++i) model.train_on_batch(x, y);  // warm-up: plans, pools, caches
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  for (int i = 0; i < steps; ++i) model.train_on_batch(x, y);
  const double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count() / steps;
  std::printf("| %s | %d | %s | %.1f |\n", model_name.c_str(), batch, label.c_str(), us);
  return 0;
}
