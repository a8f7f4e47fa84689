// Data parallelism on one CPU: the wide MLP (784 -> 512 -> 512 -> 10, Adam, sparse CE, batch 256) trained on
//   single:   one logical CPU with every intra-op thread, or
//   mirrored: MirroredStrategy over N logical CPUs, the threads shared out between the replicas, or
//   workers:  MultiWorkerMirroredStrategy, one worker per process of `mpirun -np W` (N logical CPUs each; batch 256
//             is the global batch), printed by the chief.
// Steps by train_on_batch (the default) or by fit() over `steps` batches (one epoch, no shuffle).
// Prints one JSON line: µs per step (best of three rounds) and samples/s.
// Usage: mirrored_step <single|mirrored|workers> [replicas] [steps] [train_on_batch|fit]
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
  const bool by_fit = argc > 4 && std::string(argv[4]) == "fit";
  const int batch = 256;
  if (mode == "mirrored" || (mode == "workers" && replicas > 1)) {
    std::vector<osprey::LogicalDeviceConfiguration> configs(replicas);
    osprey::config::set_logical_device_configuration(osprey::config::list_physical_devices("CPU")[0], configs);
  }
  osprey::random::set_seed(0);
  const int rows = by_fit ? batch * steps : batch;
  auto x = osprey::random::uniform({rows, 784});
  auto y = osprey::random::randint(0, 10, {rows}).cast(osprey::float32);
  auto build = [] {
    keras::Sequential m({layers::Input({784}), layers::Dense(512, "relu"), layers::Dense(512, "relu"),
                         layers::Dense(10, "softmax")});
    m.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
    return m;
  };
  keras::Sequential model;
  std::unique_ptr<osprey::distribute::MirroredStrategy> strategy;
  std::unique_ptr<osprey::distribute::MultiWorkerMirroredStrategy> workers;
  if (mode == "workers") {
    workers = std::make_unique<osprey::distribute::MultiWorkerMirroredStrategy>();
    auto scope = workers->scope();
    model = build();
  } else if (mode == "mirrored") {
    strategy = std::make_unique<osprey::distribute::MirroredStrategy>();
    auto scope = strategy->scope();
    model = build();
  } else {
    model = build();
  }
  const keras::FitOptions fit_options{.epochs = 1, .batch_size = batch, .verbose = 0, .shuffle = false};
  auto run = [&](int n) {
    if (by_fit) {
      model.fit(x, y, fit_options);
    } else {
      for (int i = 0; i < n; ++i) model.train_on_batch(x, y);
    }
  };
  run(5);  // warm-up (fit: one epoch)
  double us = 1e30;  // the best of three rounds: this machine is noisy
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    run(steps);
    us = std::min(us, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / steps);
  }
  if (workers && !workers->is_chief()) return 0;
  const std::string where = workers ? " of " + std::to_string(workers->num_workers()) + " x " +
                                          std::to_string(replicas) + " logical CPU(s)"
                            : mode == "mirrored" ? " over " + std::to_string(replicas) + " logical CPUs"
                                                 : " (1 device)";
  std::printf("{\"case\": \"wide MLP batch %d, %s%s, %s\", \"threads\": %u, \"us_per_step\": %.1f, "
              "\"samples_per_s\": %.0f}\n",
              batch, mode.c_str(), where.c_str(),
              by_fit ? "fit" : "train_on_batch", std::thread::hardware_concurrency(), us, batch / us * 1e6);
  return 0;
}
