// Data parallelism on one CPU: the wide MLP (784 -> 512 -> 512 -> 10, Adam, sparse CE, batch 256) trained on
//   single:   one logical CPU with every intra-op thread, or
//   mirrored: MirroredStrategy over N logical CPUs, the threads shared out between the replicas.
// Prints one JSON line: µs per step (best of three rounds) and samples/s. Usage: mirrored_step <single|mirrored> [replicas] [steps]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "single";
  const int replicas = argc > 2 ? std::atoi(argv[2]) : 2;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 30;
  const int batch = 256;
  if (mode == "mirrored") {
    std::vector<osprey::LogicalDeviceConfiguration> configs(replicas);
    osprey::config::set_logical_device_configuration(osprey::config::list_physical_devices("CPU")[0], configs);
  }
  osprey::random::set_seed(0);
  auto x = osprey::random::uniform({batch, 784});
  auto y = osprey::random::randint(0, 10, {batch}).cast(osprey::float32);
  auto build = [] {
    keras::Sequential m({layers::Input({784}), layers::Dense(512, "relu"), layers::Dense(512, "relu"),
                         layers::Dense(10, "softmax")});
    m.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
    return m;
  };
  keras::Sequential model;
  std::unique_ptr<osprey::distribute::MirroredStrategy> strategy;
  if (mode == "mirrored") {
    strategy = std::make_unique<osprey::distribute::MirroredStrategy>();
    auto scope = strategy->scope();
    model = build();
  } else {
    model = build();
  }
  for (int i = 0; i < 5; ++i) model.train_on_batch(x, y);
  double us = 1e30;  // the best of three rounds: this machine is noisy
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) model.train_on_batch(x, y);
    us = std::min(us, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / steps);
  }
  std::printf("{\"case\": \"wide MLP batch %d, %s%s\", \"threads\": %u, \"us_per_step\": %.1f, \"samples_per_s\": %.0f}\n",
              batch, mode.c_str(), mode == "mirrored" ? (" over " + std::to_string(replicas) + " logical CPUs").c_str() : " (1 device)",
              std::thread::hardware_concurrency(), us, batch / us * 1e6);
  return 0;
}
