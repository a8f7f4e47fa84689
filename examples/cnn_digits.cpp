// A convolutional network on scikit-learn's 8x8 digits (tests/data/digits.csv: 1797 images, 10 classes): the
// images as 8x8x1 tensors, two Conv2D + MaxPooling2D stages and a Dense head, trained with Adam; the last 20 % are
// the validation set. Exits 1 when validation accuracy is below 98 %. A dtype policy as the second argument trains
// under it (mixed_bfloat16: the Dense head in bfloat16; the convolutions have no half kernels and run in float32).
//   build/release/examples/cnn_digits [path/to/digits.csv] [policy]
#include <fstream>
#include <iostream>
#include <sstream>

#include "osprey/osprey.h"

using namespace osprey;
using namespace osprey::keras;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : OSPREY_DIGITS_CSV;
  std::ifstream in(path);
  if (!in) {
    std::cerr << "cannot read " << path << " (the digits CSV: tests/data/digits.csv)\n";
    return 2;
  }
  std::vector<float> pixels, labels;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream row(line);
    std::vector<float> values;
    for (std::string cell; std::getline(row, cell, ',');) values.push_back(std::stof(cell));
    if (values.size() != 65) {
      std::cerr << path << ": a row has " << values.size() << " values, expected 64 pixels and a label\n";
      return 2;
    }
    for (int i = 0; i < 64; ++i) pixels.push_back(values[i] / 16.f);
    labels.push_back(values[64]);
  }
  const auto n = static_cast<int64_t>(labels.size());
  const Tensor x = Tensor::from_vector(pixels, {n, 8, 8, 1}), y = Tensor::from_vector(labels, {n});

  if (argc > 2) mixed_precision::set_global_policy(argv[2]);
  utils::set_random_seed(3);
  Sequential model({layers::Input({8, 8, 1}),
                    layers::Conv2D(32, 3, {.padding = "same", .activation = "relu"}),
                    layers::MaxPooling2D(2),
                    layers::Conv2D(64, 3, {.padding = "same", .activation = "relu"}),
                    layers::MaxPooling2D(2),
                    layers::Flatten(),
                    layers::Dropout(0.25),
                    layers::Dense(64, "relu"),
                    layers::Dense(10, "softmax")},
                   "cnn_digits");
  model.summary();
  model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  const auto history = model.fit(x, y, {.epochs = 25, .batch_size = 32, .verbose = 2, .validation_split = 0.2});
  const double accuracy = history.history.at("val_accuracy").back();
  std::cout << "validation accuracy: " << accuracy << (accuracy >= 0.98 ? " (>= 0.98)" : " (below 0.98)") << "\n";
  return accuracy >= 0.98 ? 0 : 1;
}
