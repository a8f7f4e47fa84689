// keras.utils.model_to_dot and plot_model: a model's graph as Graphviz DOT, drawn by Graphviz's `dot` program.
#pragma once

#include <string>

#include "osprey/keras/model.h"

namespace osprey::keras::utils {

/// plot_model's arguments (Keras's names and defaults).
struct PlotOptions {
  bool show_shapes = false;
  bool show_dtype = false;
  bool show_layer_names = true;
  std::string rankdir = "TB";  ///< "TB" (top to bottom) or "LR"
  int dpi = 200;
  bool show_layer_activations = false;
  bool show_trainable = false;
  /// Nested models (a functional or Sequential model used as a layer) drawn with their own layers, in a dashed
  /// cluster named after the model; edges into it reach its first node and leave from its last, as Keras draws
  /// them. A subclassed nested model stays one box.
  bool expand_nested = false;
};

/// The model's graph in Graphviz's DOT language: one node per layer call (Inputs included), an edge per tensor
/// (with expand_nested, a nested model's nodes in a "cluster_" subgraph). Each node is Keras 3's HTML-like table:
/// the name and class on a black row, then a cell each for the input and output shapes, the output dtype, and
/// Trainable / Non-trainable (layers with weights), as the options ask; the activation on a row of its own.
/// ValueError for a model that is not built (a Sequential without an Input before its first batch) or a subclassed
/// model (it has no graph).
std::string model_to_dot(const Model& model, const PlotOptions& options = {});

/// Draws the model to `to_file`; the format is the file's extension (png, svg, pdf, jpg... anything `dot -T`
/// takes; ".dot" writes the DOT text itself). NotFoundError when Graphviz's `dot` is not on PATH (Debian:
/// apt-get install graphviz), InternalError when it fails; the file is written whole or not at all.
void plot_model(const Model& model, const std::string& to_file = "model.png", const PlotOptions& options = {});

}  // namespace osprey::keras::utils
