// keras.layers.Embedding and Masking (the two layers that make masks). Embedding: a gather of the table's rows (osprey::ops::gather_rows, whose gradient is osprey::ops::scatter_add_rows),
// with the id check's error given the layer's name and the id's position in the input.
#include <fmt/format.h>

#include "keras/layers/weight_rules.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/core.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace {

constexpr int64_t kMaxRows = int64_t{1} << 31, kMaxDim = int64_t{1} << 20;

// The position of flat element `i` of a tensor of `dims`, as TensorFlow writes it: "1,3".
std::string position_of(int64_t i, std::span<const int64_t> dims) {
  std::vector<int64_t> at(dims.size());
  for (std::size_t a = dims.size(); a-- > 0;) {
    at[a] = dims[a] ? i % dims[a] : 0;
    i = dims[a] ? i / dims[a] : 0;
  }
  return fmt::format("{}", fmt::join(at, ","));
}

}  // namespace

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Embedding(input_dim, output_dim, std::move(options), "embedding") {}

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options, const std::string& default_prefix)
    : Layer(options.name, default_prefix, options.dtype), input_dim_(input_dim), output_dim_(output_dim),
      options_(std::move(options)) {
  if (input_dim <= 0 || input_dim > kMaxRows) {
    throw ValueError(fmt::format("`input_dim` must be a positive integer (at most 2^31 in Osprey). Received: "
                                 "input_dim={}",
                                 input_dim));
  }
  if (output_dim <= 0 || output_dim > kMaxDim) {
    throw ValueError(fmt::format("`output_dim` must be a positive integer (at most 2^20 in Osprey). Received: "
                                 "output_dim={}",
                                 output_dim));
  }
}

// Keras: ops.not_equal(inputs, 0). Valid ids are >= 0 (gather checks them), and Keras truncates float ids, so the
// kept ones are those >= 1.
Tensor Embedding::compute_mask(const Tensor& inputs, const Tensor&) {
  if (!options_.mask_zero) return Tensor();
  const Tensor ids = inputs.dtype() == DType::float32 ? inputs : osprey::ops::cast(inputs, DType::float32);
  return osprey::ops::greater_equal(ids, Tensor::scalar(1.0));
}

Masking::Masking(double mask_value, std::string name) : Layer(name, "masking"), mask_value_(mask_value) {}

Shape Masking::build(const Shape& input_shape) {
  if (input_shape.rank() < 1) {
    throw ValueError(fmt::format("Layer '{}' (Masking) needs inputs of rank >= 2 (batch, ..., features)", name_));
  }
  return finish_build(input_shape);
}

// 1 where any feature differs from mask_value, over the last axis: (x >= v)·(-x >= -v) is 1 exactly where x == v.
Tensor Masking::compute_mask(const Tensor& inputs, const Tensor&) {
  const Tensor x = inputs.dtype() == DType::float32 ? inputs : osprey::ops::cast(inputs, DType::float32);
  const int64_t f = x.shape()[-1], rows = x.num_elements() / std::max<int64_t>(f, 1);
  const Tensor equal = osprey::ops::mul(osprey::ops::greater_equal(x, Tensor::scalar(mask_value_)),
                                osprey::ops::greater_equal(osprey::ops::neg(x), Tensor::scalar(-mask_value_)));
  const Tensor differ = osprey::ops::neg(osprey::ops::sub(equal, Tensor::scalar(1.0)));
  const Tensor any = osprey::ops::greater_equal(osprey::ops::reduce_sum(osprey::ops::reshape(differ, Shape({rows, f})), 1), Tensor::scalar(0.5));
  const auto d = x.shape().dims();
  return osprey::ops::reshape(any, Shape(std::vector<int64_t>(d.begin(), d.end() - 1)));
}

Tensor Masking::call(const Tensor& inputs, bool) {
  const Tensor x = inputs.dtype() == DType::float32 ? inputs : osprey::ops::cast(inputs, DType::float32);
  const int64_t f = x.shape()[-1], rows = x.num_elements() / std::max<int64_t>(f, 1);
  const Tensor mask = osprey::ops::reshape(compute_mask(x, Tensor()), Shape({rows}));
  const Tensor by_feature = osprey::ops::transpose(osprey::ops::reshape(x, Shape({rows, f})), {1, 0});  // (f, rows)
  return osprey::ops::reshape(osprey::ops::transpose(osprey::ops::mul(by_feature, mask), {1, 0}), x.shape());
}

Shape Embedding::build(const Shape& input_shape) {
  if (!built_) {
    if (input_dim_ * output_dim_ > (int64_t{1} << 32)) {
      throw ValueError(fmt::format("Embedding '{}': a table of {} x {} values is larger than Osprey allows (2^32)",
                                   name_, input_dim_, output_dim_));
    }
    embeddings_ = &add_weight("embeddings", initialize(options_.embeddings_initializer, {input_dim_, output_dim_}));
  }
  std::vector<int64_t> out(input_shape.dims().begin(), input_shape.dims().end());
  out.push_back(output_dim_);
  return finish_build(Shape(out));
}

Tensor Embedding::call(const Tensor& inputs, bool) {
  const auto d = inputs.shape().dims();
  if (!built_) build(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  if (inputs.dtype() == DType::float64) {
    throw InvalidArgumentError(fmt::format("Embedding '{}': token ids must be int32, int64 or float32; got float64",
                                           name_));
  }
  const Tensor ids = osprey::ops::reshape(inputs.dtype() == DType::int64 ? inputs : osprey::ops::cast(inputs, DType::int64),
                                  Shape({inputs.num_elements()}));
  Tensor rows;
  try {
    rows = osprey::ops::gather_rows(embeddings_->value(), ids);
  } catch (const InvalidArgumentError&) {  // say which id, where, in which layer (the kernel checked them)
    const auto v = ids.to_vector<int64_t>();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 0 || v[i] >= input_dim_) {
        throw InvalidArgumentError(fmt::format("Exception encountered when calling Embedding.call() of layer '{}': "
                                               "indices[{}] = {} is not in [0, {}) (a token id outside the "
                                               "vocabulary; input shape {})",
                                               name_, position_of(static_cast<int64_t>(i), d), v[i], input_dim_,
                                               inputs.shape().to_string()));
      }
    }
    throw;
  }
  std::vector<int64_t> out(d.begin(), d.end());
  out.push_back(output_dim_);
  return osprey::ops::reshape(rows, Shape(out));
}

#define OSPREY_EMBEDDING_RULES {{embeddings_, options_.embeddings_regularizer, options_.embeddings_constraint}}
bool Embedding::has_regularization() const { return detail::any_penalty(OSPREY_EMBEDDING_RULES); }
std::vector<Tensor> Embedding::regularization_losses() { return detail::penalties(OSPREY_EMBEDDING_RULES); }
void Embedding::apply_constraints() { detail::constrain(OSPREY_EMBEDDING_RULES); }
#undef OSPREY_EMBEDDING_RULES

// ---- Keras config ----

namespace ser = serialization;
using ser::json;

std::string Masking::get_config() const {
  json c = ser::base_config(*this);
  c["mask_value"] = mask_value_;
  return ser::dumps(c);
}

std::string Embedding::get_config() const {
  json c = ser::base_config(*this);
  c["input_dim"] = input_dim_;
  c["output_dim"] = output_dim_;
  c["embeddings_initializer"] = ser::initializer(options_.embeddings_initializer);
  c["embeddings_regularizer"] = ser::regularizer(options_.embeddings_regularizer);
  c["activity_regularizer"] = nullptr;
  c["embeddings_constraint"] = ser::constraint(options_.embeddings_constraint);
  c["mask_zero"] = options_.mask_zero;
  c["quantization_config"] = nullptr;
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(embedding) {
  ser::register_layer_class("Embedding", {true, [](const json& c) -> std::shared_ptr<Layer> {
    ser::refuse_set(c, {"lora_rank", "quantization_config", "activity_regularizer"}, "Embedding",
                    "input_dim, output_dim, embeddings_initializer/regularizer/constraint");
    EmbeddingOptions o;
    if (c.contains("embeddings_initializer")) o.embeddings_initializer = ser::initializer_from(c["embeddings_initializer"]);
    o.embeddings_regularizer = ser::regularizer_from(c.value("embeddings_regularizer", json()));
    o.embeddings_constraint = ser::constraint_from(c.value("embeddings_constraint", json()));
    o.mask_zero = ser::value_or(c, "mask_zero", false);
    o.name = ser::name_of(c);
    return std::make_shared<Embedding>(ser::integer(c, "input_dim", 1, kMaxRows, "Embedding"),
                                       ser::integer(c, "output_dim", 1, kMaxDim, "Embedding"), std::move(o));
  }});
  ser::register_layer_class("Masking", {false, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<Masking>(c.contains("mask_value") ? ser::number(c, "mask_value", -1e30, 1e30, "Masking") : 0.0,
                                     ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
