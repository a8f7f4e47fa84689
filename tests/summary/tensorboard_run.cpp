// Writes a TensorBoard run for tests/summary/check_with_tensorboard.py: the reference script's two fits of one
// model (tests/keras/keras_tensorboard_reference.py), into <dir>/epoch and <dir>/batch, and <dir>/expected.json
// with each fit's History and the final weights by variable path.
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
namespace layers = osprey::keras::layers;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tensorboard_run <dir>\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  random::set_seed(3);
  const Tensor x = random::normal({12, 4});
  const Tensor y = random::randint(0, 2, {12, 1}).cast(DType::float32);
  random::set_seed(4);
  keras::Sequential model({layers::Input({4}), layers::Dense(3, "relu"), layers::Dense(1, "sigmoid")});
  model.compile({.optimizer = "sgd", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  nlohmann::json out;
  for (const std::string run : {"epoch", "batch"}) {
    keras::TensorBoardOptions o;
    if (run == "epoch") o.histogram_freq = 1;
    else o.update_freq = "batch", o.write_steps_per_second = true;
    auto history = model.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0,
                                    .callbacks = {keras::TensorBoard((dir / run).string(), o)},
                                    .validation_data = {x.slice_rows(0, 8), y.slice_rows(0, 8)}});
    out[run]["history"] = history.history;
    for (const auto& layer : model.layers())
      for (Variable* v : layer->variables()) out[run]["weights"][v->path()] = v->value().to_vector<float>();
  }
  std::ofstream(dir / "expected.json") << out.dump();
  return 0;
}
