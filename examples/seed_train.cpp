// The first seed's program: binary classification of random data with a small MLP, on the best device.
#include <iostream>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main() {
  std::cout << "Osprey " << osprey::version() << "\n";
  for (const auto& d : osprey::config::list_physical_devices()) std::cout << "Physical device: " << d << "\n";
  for (const auto& d : osprey::config::list_logical_devices()) std::cout << "Logical device:  " << d << "\n";
  if (osprey::config::list_physical_devices("GPU").empty()) std::cout << "No GPU visible: training on the CPU.\n";

  auto x_train = osprey::random::uniform({2048, 20});  // float32
  auto y_train = osprey::random::randint(0, 2, {2048, 1}).cast(osprey::float32);

  keras::Sequential model({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(32, "relu"),
                           layers::Dense(1, "sigmoid")});
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  model.summary();
  auto history = model.fit(x_train, y_train, {.epochs = 3, .batch_size = 64});
  std::cout << "final loss: " << history.history["loss"].back()
            << ", final accuracy: " << history.history["accuracy"].back() << "\n";
  return 0;
}
