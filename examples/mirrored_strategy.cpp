// The first seed's multi-device advice in C++: "do not manually split the batches yourself. Use a distribution
// strategy." Without GPUs the CPU is split into two logical devices so that two replicas train; with GPUs every
// logical GPU is a replica.
#include <iostream>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main() {
  if (osprey::config::list_physical_devices("GPU").empty()) {
    auto cpu = osprey::config::list_physical_devices("CPU")[0];
    osprey::config::set_logical_device_configuration(cpu, {osprey::LogicalDeviceConfiguration{},
                                                           osprey::LogicalDeviceConfiguration{}});
  }
  osprey::distribute::MirroredStrategy strategy;  // all logical GPUs, else the logical CPUs
  std::cout << "Number of devices: " << strategy.num_replicas_in_sync() << "\n";

  auto x = osprey::random::uniform({2048, 20});
  auto y = osprey::random::randint(0, 2, {2048, 1}).cast(osprey::float32);
  keras::Sequential model;
  {
    auto scope = strategy.scope();
    model = keras::Sequential({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(1, "sigmoid")});
    model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  }
  model.fit(x, y, {.epochs = 3, .batch_size = 64});  // 64 is the global batch: 32 rows per replica
  auto weights = model.variables()[0];
  std::cout << "first kernel has " << weights->num_components() << " replicas, on "
            << weights->component(0).device().name << " and "
            << weights->component(weights->num_components() - 1).device().name << "\n";
  return 0;
}
