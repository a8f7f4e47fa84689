// A folder of PNG images to a trained classifier, as Keras's image-classification tutorial does it: writes a small
// generated data set (two classes, 16x16 RGB: horizontal and vertical stripes with random phase, colour and noise)
// into class folders, reads it back with image_dataset_from_directory (80/20 split), and trains a small CNN.
// Exits 1 when validation accuracy is below 90 %.
//   build/release/examples/image_folder [directory]   (default: a fresh folder under the system's temp directory)
#include <filesystem>
#include <iostream>
#include <random>

#include "osprey/keras/image.h"
#include "osprey/osprey.h"

using namespace osprey;
using namespace osprey::keras;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (!utils::image_codecs_available()) {
    std::cout << "skipped: this Osprey was built without libpng / libjpeg-turbo\n";
    return 0;
  }
  const fs::path root = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "osprey_image_folder";
  fs::remove_all(root);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (const std::string cls : {"horizontal", "vertical"}) {
    fs::create_directories(root / cls);
    for (int i = 0; i < 60; ++i) {
      const int period = 3 + static_cast<int>(unit(rng) * 4), phase = static_cast<int>(unit(rng) * 8);
      const float color[3] = {80 + 175 * unit(rng), 80 + 175 * unit(rng), 80 + 175 * unit(rng)};
      std::vector<float> pixels;
      for (int y = 0; y < 16; ++y) {
        for (int x = 0; x < 16; ++x) {
          const int along = cls == "horizontal" ? y : x;
          const bool on = ((along + phase) / period) % 2 == 0;
          for (int c = 0; c < 3; ++c) pixels.push_back(std::min(255.f, (on ? color[c] : 20.f) + 40 * unit(rng)));
        }
      }
      utils::save_img((root / cls / ("img" + std::to_string(i) + ".png")).string(),
                      Tensor::from_vector(pixels, Shape({16, 16, 3})));
    }
  }
  utils::ImageDatasetOptions options{.batch_size = 16, .image_size = {16, 16}, .seed = 1, .validation_split = 0.2,
                                     .subset = "training"};
  auto train = utils::image_dataset_from_directory(root.string(), options);
  options.subset = "validation";
  auto val = utils::image_dataset_from_directory(root.string(), options);
  std::cout << "classes:";
  for (const auto& c : train->class_names()) std::cout << " " << c;
  std::cout << "\n";

  utils::set_random_seed(2);
  Sequential model({layers::Input({16, 16, 3}), layers::Rescaling(1.0 / 255),
                    layers::Conv2D(8, 3, {.padding = "same", .activation = "relu"}), layers::MaxPooling2D(2),
                    layers::Conv2D(16, 3, {.padding = "same", .activation = "relu"}),
                    layers::GlobalAveragePooling2D(), layers::Dense(2, "softmax")},
                   "image_folder");
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "sparse_categorical_crossentropy",
                 .metrics = {"accuracy"}});
  const auto [vx, vy] = val->load_all();
  const auto history = model.fit(*train, {.epochs = 15, .verbose = 2, .validation_data = {vx, vy}});
  const double accuracy = history.history.at("val_accuracy").back();
  std::cout << "validation accuracy: " << accuracy << (accuracy >= 0.9 ? " (>= 0.90)" : " (below 0.90)") << "\n";
  fs::remove_all(root);
  return accuracy >= 0.9 ? 0 : 1;
}
