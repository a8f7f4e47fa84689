// keras.layers.ReversibleEmbedding: an Embedding whose reverse call (reverse=True, a per-call keyword argument kept
// on the model's node) projects hidden states back to the vocabulary through the embeddings' transpose (tied) or a
// reverse_embeddings matrix of its own, with Keras's optional reverse_dtype and logit soft cap.
#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/keras_tensor.h"
#include "osprey/keras/layers/core.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace {

DType reverse_dtype_of(const std::string& name, const std::string& layer) {
  if (name.empty() || name == "float32") return DType::float32;
  if (name == "bfloat16") return DType::bfloat16;
  if (name == "float16") return DType::float16;
  throw ValueError(fmt::format("ReversibleEmbedding '{}': reverse_dtype must be float32, bfloat16 or float16 in "
                               "Osprey (or unset: the compute dtype); received: {}",
                               layer, name));
}

bool reverse_of(const Layer::CallArguments& arguments) {
  const auto it = arguments.find("reverse");
  return it != arguments.end() && it->second;
}

}  // namespace

ReversibleEmbedding::ReversibleEmbedding(int64_t input_dim, int64_t output_dim, ReversibleEmbeddingOptions reverse,
                                         EmbeddingOptions options)
    : Embedding(input_dim, output_dim, std::move(options), "reversible_embedding"), reverse_(std::move(reverse)) {
  (void)reverse_dtype_of(reverse_.reverse_dtype, name_);
  if (reverse_.logit_soft_cap && !(*reverse_.logit_soft_cap > 0.0)) {
    throw ValueError(fmt::format("ReversibleEmbedding '{}': logit_soft_cap must be positive; received: {}", name_,
                                 *reverse_.logit_soft_cap));
  }
}

Shape ReversibleEmbedding::build(const Shape& input_shape) {
  const bool first = !built_;
  Shape out = Embedding::build(input_shape);
  if (first && !reverse_.tie_weights) {
    reverse_embeddings_ =
        &add_weight("reverse_embeddings", initialize(embedding_options().embeddings_initializer, {output_dim(), input_dim()}));
  }
  return out;
}

Shape ReversibleEmbedding::build_with(const std::vector<Shape>& input_shapes, const CallArguments& arguments) {
  if (!reverse_of(arguments)) return Layer::build_with(input_shapes, arguments);
  if (input_shapes.size() != 1 || input_shapes[0].rank() < 1 || input_shapes[0][-1] != output_dim()) {
    std::string shown;
    for (const auto& s : input_shapes) shown += (shown.empty() ? "" : ", ") + s.to_string();
    throw ValueError(fmt::format("ReversibleEmbedding '{}' called with reverse=True takes one input whose last "
                                 "axis is output_dim={}; received shape(s) (batch) + {}",
                                 name_, output_dim(), shown));
  }
  if (!built_) build(input_shapes[0]);  // the weights do not depend on the input's shape
  std::vector<int64_t> out(input_shapes[0].dims().begin(), input_shapes[0].dims().end());
  out.back() = input_dim();
  return Shape(out);
}

Tensor ReversibleEmbedding::call_with(const std::vector<Tensor>& inputs, bool training,
                                      const CallArguments& arguments) {
  if (!reverse_of(arguments)) return Layer::call_with(inputs, training, arguments);
  if (inputs.size() != 1 || !inputs[0].defined() || inputs[0].shape().rank() < 2) {
    throw ValueError(fmt::format("ReversibleEmbedding '{}' called with reverse=True takes one batch of rank >= 2 "
                                 "(batch, ..., output_dim={})",
                                 name_, output_dim()));
  }
  const auto d = inputs[0].shape().dims();
  (void)build_with({Shape(std::vector<int64_t>(d.begin() + 1, d.end()))}, arguments);  // builds; checks the shape
  Tensor x = autocast_input(inputs[0]);
  Tensor kernel = autocast_variable(reverse_.tie_weights ? *embeddings() : *reverse_embeddings_);
  if (!reverse_.reverse_dtype.empty()) {
    const DType dt = reverse_dtype_of(reverse_.reverse_dtype, name_);
    if (x.dtype() != dt) x = osprey::ops::cast(x, dt);
    if (kernel.dtype() != dt) kernel = osprey::ops::cast(kernel, dt);
  }
  const int64_t rows = x.num_elements() / output_dim();
  // (rows, output_dim) x (output_dim, input_dim): the embeddings (input_dim, output_dim) transposed, or the reverse
  // matrix as it is.
  Tensor logits = osprey::ops::matmul(osprey::ops::reshape(x, Shape({rows, output_dim()})), kernel, false, reverse_.tie_weights);
  if (reverse_.logit_soft_cap) {
    const Tensor cap = osprey::ops::cast(Tensor::scalar(*reverse_.logit_soft_cap), logits.dtype());
    logits = osprey::ops::mul(osprey::ops::tanh(osprey::ops::div(logits, cap)), cap);
  }
  std::vector<int64_t> out(d.begin(), d.end());
  out.back() = input_dim();
  return osprey::ops::reshape(logits, Shape(out));
}

Tensor ReversibleEmbedding::reverse(const Tensor& hidden) { return call_with({hidden}, false, {{"reverse", true}}); }

KerasTensor ReversibleEmbedding::reverse(const KerasTensor& hidden) & { return call_with(hidden, {{"reverse", true}}); }

// ---- Keras config ----

namespace ser = serialization;
using ser::json;

std::string ReversibleEmbedding::get_config() const {
  json c = json::parse(Embedding::get_config());
  c["tie_weights"] = reverse_.tie_weights;
  c["reverse_dtype"] = reverse_.reverse_dtype.empty() ? json() : json(reverse_.reverse_dtype);
  c["logit_soft_cap"] = reverse_.logit_soft_cap ? json(*reverse_.logit_soft_cap) : json();
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(reversible_embedding) {
  ser::register_layer_class("ReversibleEmbedding", {true, [](const json& c) -> std::shared_ptr<Layer> {
    ser::refuse_set(c, {"lora_rank", "quantization_config", "activity_regularizer"}, "ReversibleEmbedding",
                    "input_dim, output_dim, tie_weights, embeddings_initializer/regularizer/constraint, mask_zero, "
                    "reverse_dtype, logit_soft_cap");
    // The Embedding's own arguments through its registered reader (its checks and defaults), then this class's.
    const auto* embedding = ser::find_layer_class("Embedding");
    const auto base = std::dynamic_pointer_cast<Embedding>(embedding->from_config(c));
    ReversibleEmbeddingOptions r;
    r.tie_weights = ser::value_or(c, "tie_weights", true);
    if (c.contains("reverse_dtype") && !c["reverse_dtype"].is_null()) {
      if (!c["reverse_dtype"].is_string()) {
        throw ValueError(fmt::format("ReversibleEmbedding: reverse_dtype must be a dtype name or null; received {}",
                                     c["reverse_dtype"].dump()));
      }
      r.reverse_dtype = c["reverse_dtype"].get<std::string>();
    }
    if (c.contains("logit_soft_cap") && !c["logit_soft_cap"].is_null()) {
      r.logit_soft_cap = ser::number(c, "logit_soft_cap", 1e-30, 1e30, "ReversibleEmbedding");
    }
    EmbeddingOptions o = base->embedding_options();
    o.name = base->name();
    return std::make_shared<ReversibleEmbedding>(base->input_dim(), base->output_dim(), std::move(r), std::move(o));
  }});
}

}  // namespace osprey::keras::layers
