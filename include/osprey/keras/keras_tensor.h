// Symbolic tensors (keras.KerasTensor) and keras.Input: what functional models are built from.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/dtype.h"
#include "osprey/shape.h"

namespace osprey::keras {

class Layer;
struct Node;

/// A symbolic tensor: the output of keras::Input or of a layer called on symbolic tensors. It has a shape (batch
/// dimension excluded) and a dtype but no values; keras::Model(inputs, outputs) turns the graph between them into
/// a model.
class KerasTensor {
 public:
  KerasTensor() = default;
  KerasTensor(std::shared_ptr<Node> node, int index) : node_(std::move(node)), index_(index) {}

  bool defined() const { return node_ != nullptr; }
  /// The shape of one sample (the batch dimension excluded), as Layer::build sees it.
  const Shape& shape() const;
  DType dtype() const;
  /// The tensor's name: an Input's name, else the name of the layer that made it.
  const std::string& name() const;
  /// Keras's repr: <KerasTensor shape=(None, 20), dtype=float32, name=input_layer>.
  std::string to_string() const;

  const std::shared_ptr<Node>& node() const { return node_; }
  int index() const { return index_; }

 private:
  std::shared_ptr<Node> node_;
  int index_ = 0;
};

/// keras.Input's keyword arguments.
struct InputOptions {
  std::string name{};  ///< default "input_layer", "input_layer_1", ... (Keras's auto-naming)
  DType dtype = DType::float32;
  std::optional<int64_t> batch_size{};
};
/// keras.Input(shape=...): a model input of per-sample `shape`.
KerasTensor Input(const Shape& shape, InputOptions options = {});

/// One or several symbolic tensors: a model's inputs or outputs, as a list or as a name map (the map's keys become
/// the names by which fit/predict take their data).
struct KerasTensors {
  KerasTensors(const KerasTensor& t) : tensors{t}, single(true) {}
  KerasTensors(std::initializer_list<KerasTensor> ts) : tensors(ts) {}
  KerasTensors(std::vector<KerasTensor> ts) : tensors(std::move(ts)) {}
  KerasTensors(const std::map<std::string, KerasTensor>& named);
  std::vector<KerasTensor> tensors;
  std::vector<std::string> keys;  ///< the map's keys in its order, when given as a map
  bool single = false;             ///< one tensor, not a list of one (a model's config keeps that form, as Keras's)
};

}  // namespace osprey::keras
