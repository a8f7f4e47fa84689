// The process the crash-safety test (test_crash_safety.cpp) kills with SIGKILL at random moments: it trains a small
// model for ever, writing a ModelCheckpoint .keras file and a .weights.h5 file after every epoch.
//   checkpoint_victim <directory>
#include <iostream>
#include <string>
#include <vector>

#include "osprey/keras.h"

using namespace osprey;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: checkpoint_victim <directory>\n";
    return 2;
  }
  const std::string dir = argv[1];
  keras::Sequential m({keras::layers::Input({8}), keras::layers::Dense(64, "relu"), keras::layers::Dense(1)});
  m.compile({.optimizer = "adam", .loss = "mse"});
  std::vector<float> xs(64 * 8), ys(64);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 7) * 0.1f;
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<float>(i % 3);
  const Tensor x = Tensor::from_vector(xs, Shape({64, 8})), y = Tensor::from_vector(ys, Shape({64, 1}));
  m.fit(x, y, {.epochs = 1000000, .batch_size = 32, .verbose = 0,
               .callbacks = {keras::ModelCheckpoint(dir + "/ckpt.keras"),
                             keras::ModelCheckpoint(dir + "/ckpt.weights.h5")}});
  return 0;
}
