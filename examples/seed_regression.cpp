// The second seed's program: regression with Dense(64, relu) -> Dense(1) and MSE, silent training.
#include <iostream>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main() {
  osprey::keras::utils::set_random_seed(42);
  auto x = osprey::random::uniform({1024, 8});
  // y = sum of the features, a learnable target.
  auto y = osprey::ops::reduce_sum(x, 1).reshape({1024, 1});

  keras::Sequential model({layers::Input({8}), layers::Dense(64, "relu"), layers::Dense(1)});
  model.compile({.optimizer = "adam", .loss = "mse"});
  auto history = model.fit(x, y, {.epochs = 20, .batch_size = 32, .verbose = 0});
  std::cout << "loss after epoch 1: " << history.history["loss"].front() << "\n";
  std::cout << "loss after epoch 20: " << history.history["loss"].back() << "\n";
  std::cout << "evaluate: " << model.evaluate(x, y, {.verbose = 0})[0] << "\n";
  return 0;
}
