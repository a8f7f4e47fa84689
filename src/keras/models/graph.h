// The graph of a functional model: nodes made by calling layers on symbolic tensors, ordered once so that a
// forward pass is a walk over a vector.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/keras/keras_tensor.h"
#include "osprey/keras/layers.h"

namespace osprey::keras {

/// One call of a layer on symbolic tensors (or a keras::Input, whose layer is its InputLayer).
struct Node {
  std::shared_ptr<Layer> layer;
  std::vector<KerasTensor> inputs;  // empty for an Input
  std::vector<Shape> shapes;        // each output's shape without the batch dimension (most layers have one)
  DType dtype = DType::float32;
  std::string name;                 // the output's name: the Input's, or the layer's
  std::optional<int64_t> batch_size;
  Layer::CallArguments arguments;   // the call's keyword arguments (Layer::call_with); empty for a plain call
  bool is_input() const { return inputs.empty(); }
};

/// A functional model's graph from its inputs to its outputs.
struct Graph {
  // run() keeps every node's outputs in one vector of values: a node's outputs are the slots from its `slot` on.
  struct Step {
    Node* node;
    std::vector<int> parents;  // the slots of the node's inputs
    int slot = 0;              // the slot of its first output
  };
  std::vector<KerasTensor> inputs, outputs;
  std::vector<std::string> input_names, output_names;
  bool inputs_named = false, outputs_named = false;  // given as name maps (a model's config keeps that form)
  bool inputs_single = false, outputs_single = false;  // given as one tensor, not a list (the same)
  std::vector<Step> steps;  // topological order; the inputs first, in inputs' order
  std::vector<int> output_slots;
  int num_slots = 0;
  // Each layer once in Keras's order (model.layers: by depth from the outputs, the deepest first, ties in the order
  // a search from the outputs meets them); `layers` without the Inputs, `all_layers` with them.
  std::vector<std::shared_ptr<Layer>> layers, all_layers;
  bool masked = false;  // a layer makes masks (Embedding(mask_zero), Masking): run() carries them along

  /// The outputs for `xs` (one per input, already on the right device). For output i with shortcut[i], the
  /// output's Dense computes its logits into (*logits)[i] and applies its activation after.
  /// With `output_masks`, each output's mask (undefined where it has none).
  std::vector<Tensor> run(const std::vector<Tensor>& xs, bool training, const std::vector<bool>* shortcut = nullptr,
                          std::vector<Tensor>* logits = nullptr, std::vector<Tensor>* output_masks = nullptr) const;
};

/// Orders the nodes between `inputs` and `outputs`. ValueError when an output depends on a tensor that is not one
/// of the inputs, an input is given twice, or two different layers have one name.
std::unique_ptr<Graph> build_graph(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs,
                                   const std::string& model_name);

}  // namespace osprey::keras
