// The second seed's device programs in C++: find the GPUs, let their memory grow, keep one, log where ops run,
// and train inside an explicit device scope. Runs on a machine without a GPU too (it says why there is none).
//
//   ./gpu_select                          every GPU visible; the program keeps the first one
//   CUDA_VISIBLE_DEVICES=1 ./gpu_select   only physical GPU 1, which becomes /physical_device:GPU:0
#include <cstdlib>
#include <iostream>

#include <osprey/doctor.h>
#include <osprey/osprey.h>

namespace cfg = osprey::config;
namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main() {
  if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES")) std::cout << "CUDA_VISIBLE_DEVICES=" << cvd << "\n";
  // Configure before anything creates a device: afterwards these calls throw RuntimeError, as in TensorFlow.
  auto gpus = cfg::list_physical_devices("GPU");
  std::cout << gpus.size() << " physical GPU(s)\n";
  for (const auto& gpu : gpus) cfg::experimental::set_memory_growth(gpu, true);
  if (!gpus.empty()) cfg::set_visible_devices({gpus[0]}, "GPU");
  const auto logical_gpus = cfg::list_logical_devices("GPU");  // initialises the runtime
  std::cout << gpus.size() << " Physical GPUs, " << logical_gpus.size() << " Logical GPUs\n";
  if (logical_gpus.empty()) {
    std::cout << "No GPU is usable: " << osprey::doctor::run().checks.front().detail << "\n"
              << "(`osprey doctor` explains it in full.) The scope below falls back to the CPU (soft placement).\n";
  }
  std::cout << osprey::doctor::devices_table();

  auto x = osprey::random::uniform({512, 20});
  auto y = osprey::random::randint(0, 2, {512, 1}).cast(osprey::float32);
  {
    osprey::DeviceScope on("/GPU:0");  // with soft placement on, a missing GPU means the CPU
    keras::Sequential model({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(1, "sigmoid")});
    model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
    std::cout << "kernel of the first layer lives on " << model.variables()[0]->value().device().name << "\n";

    osprey::debugging::set_log_device_placement(true);  // one logged training step: where every op ran
    model.train_on_batch(x.slice_rows(0, 64), y.slice_rows(0, 64));
    osprey::debugging::set_log_device_placement(false);

    model.fit(x, y, {.epochs = 2, .batch_size = 64});
  }
  auto mem = cfg::experimental::get_memory_info(logical_gpus.empty() ? "CPU:0" : "GPU:0");
  std::cout << "memory on " << (logical_gpus.empty() ? "CPU:0" : "GPU:0") << ": current " << mem.current
            << " bytes, peak " << mem.peak << " bytes\n";
  return 0;
}
