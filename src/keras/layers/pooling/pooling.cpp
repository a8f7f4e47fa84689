// keras.layers.{Max,Average}Pooling{1,2,3}D and Global{Max,Average}Pooling{1,2,3}D on osprey::ops::pool;
// Adaptive{Max,Average}Pooling{1,2,3}D on keras::ops::adaptive_*_pool.
#include <fmt/format.h>

// keras/ops.h before the rest (see include/osprey/keras/ops.h): osprey::ops is spelled in full here.
#include "osprey/keras/ops.h"

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/pooling.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace {

std::string pool_class(osprey::ops::PoolKind kind, int rank, bool global) {
  return fmt::format("{}{}Pooling{}D", global ? "Global" : "", kind == osprey::ops::PoolKind::max ? "Max" : "Average", rank);
}
std::string pool_prefix(osprey::ops::PoolKind kind, int rank, bool global) {
  return fmt::format("{}{}_pooling{}d", global ? "global_" : "", kind == osprey::ops::PoolKind::max ? "max" : "average", rank);
}

std::string adaptive_class(osprey::ops::PoolKind kind, int rank) {
  return fmt::format("Adaptive{}Pooling{}D", kind == osprey::ops::PoolKind::max ? "Max" : "Average", rank);
}
std::string adaptive_prefix(osprey::ops::PoolKind kind, int rank) {
  return fmt::format("adaptive_{}_pooling{}d", kind == osprey::ops::PoolKind::max ? "max" : "average", rank);
}

using detail::check_rank;
using detail::with_batch;

// The rank error of build() for a call on a tensor of another rank than (batch, spatial..., channels).
void check_call_rank(const std::string& layer, int rank, const Tensor& inputs) {
  if (inputs.shape().rank() == rank + 2) return;
  const auto d = inputs.shape().dims();
  check_rank(layer, rank, Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
}

}  // namespace

BasePooling::BasePooling(osprey::ops::PoolKind kind, int rank, const Ints& pool_size, PoolOptions options)
    : Layer(options.name, pool_prefix(kind, rank, false), options.dtype), kind_(kind), rank_(rank), options_(std::move(options)) {
  const std::string cls = pool_class(kind, rank, false);
  pool_size_ = detail::per_axis(pool_size, rank, 1, cls, "pool_size");
  strides_ = options_.strides.values.empty() ? pool_size_ : detail::per_axis(options_.strides, rank, 1, cls, "strides");
  if (options_.padding != "valid" && options_.padding != "same") {
    throw ValueError(fmt::format("{}: the `padding` argument must be one of \"valid\", \"same\". Received: padding={}",
                                 cls, options_.padding));
  }
  detail::check_data_format(options_.data_format, cls);
}

std::string BasePooling::class_name() const { return pool_class(kind_, rank_, false); }

Shape BasePooling::build(const Shape& input_shape) {
  check_rank(name_, rank_, input_shape);
  const bool first = options_.data_format == "channels_first";
  std::vector<int64_t> out;
  for (int i = 0; i < rank_; ++i) {
    const int64_t in = input_shape[first ? i + 1 : i];
    const int64_t o = options_.padding == "same" ? (in + strides_[i] - 1) / strides_[i]
                                                 : (in < pool_size_[i] ? -1 : (in - pool_size_[i]) / strides_[i] + 1);
    if (o < 1) {
      throw ValueError(fmt::format("Computed output size would be negative. Received: `inputs.shape={}` and "
                                   "`pool_size=({})`.",
                                   with_batch(input_shape), fmt::join(pool_size_, ", ")));
    }
    out.push_back(o);
  }
  const int64_t channels = input_shape[first ? 0 : rank_];
  if (first) out.insert(out.begin(), channels);
  else out.push_back(channels);
  return finish_build(Shape(out));
}

Tensor BasePooling::call(const Tensor& inputs, bool) {
  const bool first = options_.data_format == "channels_first";
  check_call_rank(name_, rank_, inputs);
  const Tensor x = first ? osprey::ops::transpose(inputs, detail::to_channels_last(rank_)) : inputs;
  osprey::ops::PoolParams p{kind_, pool_size_, strides_, {}, {}};
  for (int i = 0; i < rank_; ++i) {
    const auto [before, after] = detail::axis_padding(options_.padding, x.shape()[i + 1], pool_size_[i], strides_[i], 1);
    p.pad_before.push_back(before);
    p.pad_after.push_back(after);
  }
  const Tensor y = osprey::ops::pool(x, p);
  return first ? osprey::ops::transpose(y, detail::to_channels_first(rank_)) : y;
}

BaseGlobalPooling::BaseGlobalPooling(osprey::ops::PoolKind kind, int rank, const std::string& data_format, bool keepdims,
                                     const std::string& name)
    : Layer(name, pool_prefix(kind, rank, true)), kind_(kind), rank_(rank), data_format_(data_format),
      keepdims_(keepdims) {
  detail::check_data_format(data_format_, pool_class(kind, rank, true));
}

std::string BaseGlobalPooling::class_name() const { return pool_class(kind_, rank_, true); }

Shape BaseGlobalPooling::build(const Shape& input_shape) {
  check_rank(name_, rank_, input_shape);
  const bool first = data_format_ == "channels_first";
  const int64_t channels = input_shape[first ? 0 : rank_];
  if (!keepdims_) return finish_build(Shape({channels}));
  std::vector<int64_t> out(static_cast<std::size_t>(rank_), 1);
  if (first) out.insert(out.begin(), channels);
  else out.push_back(channels);
  return finish_build(Shape(out));
}

// One pooling window over the whole of every spatial axis.
Tensor BaseGlobalPooling::call(const Tensor& inputs, bool) {
  const bool first = data_format_ == "channels_first";
  check_call_rank(name_, rank_, inputs);
  const Tensor x = first ? osprey::ops::transpose(inputs, detail::to_channels_last(rank_)) : inputs;
  const auto d = x.shape().dims();
  const std::vector<int64_t> window(d.begin() + 1, d.end() - 1), ones(window.size(), 1), zeros(window.size(), 0);
  const Tensor pooled = osprey::ops::pool(x, {kind_, window, ones, zeros, zeros});  // (N, 1..., C)
  const int64_t n = d[0], c = d.back();
  if (!keepdims_) return osprey::ops::reshape(pooled, Shape({n, c}));
  return first ? osprey::ops::transpose(pooled, detail::to_channels_first(rank_)) : pooled;
}

// Σ_t x·m / Σ_t m per sample and channel (Keras's masked mean), with the time steps as the product's rows: x as
// (C, N·T) rows scaled by the mask, then summed per (C·N) row over T.
Tensor BaseGlobalPooling::call_masked(const Tensor& inputs, bool training, const Tensor& mask) {
  if (!mask.defined()) return call(inputs, training);
  if (inputs.shape().rank() != 3) return call(inputs, training);  // the rank error
  const bool first = data_format_ == "channels_first";
  const Tensor x = first ? osprey::ops::transpose(inputs, {0, 2, 1}) : inputs;  // (N, T, C)
  const int64_t n = x.shape()[0], t = x.shape()[1], c = x.shape()[2];
  if (mask.shape() != Shape({n, t})) {
    throw ValueError(fmt::format("Layer '{}': the mask has shape {}, but the input {} needs ({}, {})", name_,
                                 mask.shape().to_string(), inputs.shape().to_string(), n, t));
  }
  const Tensor m = mask.dtype() == DType::float32 ? mask : mask.cast(DType::float32);
  const Tensor rows = osprey::ops::reshape(osprey::ops::transpose(x, {2, 0, 1}), Shape({c, n * t}));
  const Tensor kept = osprey::ops::reshape(osprey::ops::mul(rows, osprey::ops::reshape(m, Shape({n * t}))), Shape({c * n, t}));
  const Tensor sums = osprey::ops::reshape(osprey::ops::reduce_sum(kept, 1), Shape({c, n}));
  const Tensor mean = osprey::ops::transpose(osprey::ops::div(sums, osprey::ops::reduce_sum(m, 1)), {1, 0});  // (N, C)
  if (!keepdims_) return mean;
  return first ? osprey::ops::reshape(mean, Shape({n, c, 1})) : osprey::ops::reshape(mean, Shape({n, 1, c}));
}

BaseAdaptivePooling::BaseAdaptivePooling(osprey::ops::PoolKind kind, int rank, const Ints& output_size,
                                         AdaptivePoolOptions options)
    : Layer(options.name, adaptive_prefix(kind, rank), options.dtype), kind_(kind), rank_(rank),
      options_(std::move(options)) {
  const std::string cls = adaptive_class(kind, rank);
  output_size_ = detail::per_axis(output_size, rank, 1, cls, "output_size");  // Keras's TypeError as a ValueError
  detail::check_data_format(options_.data_format, cls);
}

std::string BaseAdaptivePooling::class_name() const { return adaptive_class(kind_, rank_); }

Shape BaseAdaptivePooling::build(const Shape& input_shape) {
  check_rank(name_, rank_, input_shape);
  const bool first = options_.data_format == "channels_first";
  std::vector<int64_t> out = output_size_;
  const int64_t channels = input_shape[first ? 0 : rank_];
  if (first) out.insert(out.begin(), channels);
  else out.push_back(channels);
  return finish_build(Shape(out));
}

Tensor BaseAdaptivePooling::call(const Tensor& inputs, bool) {
  check_call_rank(name_, rank_, inputs);
  return kind_ == osprey::ops::PoolKind::max ? keras::ops::adaptive_max_pool(inputs, output_size_, options_.data_format)
                                     : keras::ops::adaptive_average_pool(inputs, output_size_, options_.data_format);
}

// ---- Keras configs (layer.get_config()) and from_config ----

namespace ser = serialization;
using ser::json;

std::string BasePooling::get_config() const {
  return ser::config_text(*this, {{"pool_size", pool_size_},
                                  {"padding", options_.padding},
                                  {"strides", strides_},
                                  {"data_format", options_.data_format}});
}

std::string BaseAdaptivePooling::get_config() const {
  return ser::config_text(*this, {{"output_size", output_size_}, {"data_format", options_.data_format}});
}

std::string BaseGlobalPooling::get_config() const {
  return ser::config_text(*this, {{"data_format", data_format_}, {"keepdims", keepdims_}});
}

namespace {

Ints pool_ints(const json& c, const char* key, int rank, const std::string& what) {
  if (c[key].is_number_integer()) return Ints(ser::integer(c, key, 1, int64_t{1} << 30, what));
  return Ints(ser::integers(c, key, 1, int64_t{1} << 30, what, static_cast<std::size_t>(rank)));
}

std::shared_ptr<Layer> pooling_from_config(osprey::ops::PoolKind kind, int rank, const json& c) {
  const std::string what = pool_class(kind, rank, false) + " " + ser::name_of(c);
  PoolOptions o;
  if (c.contains("strides") && !c["strides"].is_null()) o.strides = pool_ints(c, "strides", rank, what);
  o.padding = ser::value_or<std::string>(c, "padding", "valid");
  o.data_format = ser::value_or<std::string>(c, "data_format", "channels_last");
  o.name = ser::name_of(c);
  const Ints size = c.contains("pool_size") && !c["pool_size"].is_null() ? pool_ints(c, "pool_size", rank, what) : Ints(2);
  return std::make_shared<BasePooling>(kind, rank, size, o);
}

}  // namespace

OSPREY_REGISTER_LAYERS(pooling) {
  for (auto kind : {osprey::ops::PoolKind::max, osprey::ops::PoolKind::average}) {
    for (int rank = 1; rank <= 3; ++rank) {
      ser::register_layer_class(pool_class(kind, rank, false), {false, [kind, rank](const json& c) {
                                  return pooling_from_config(kind, rank, c);
                                }});
      ser::register_layer_class(adaptive_class(kind, rank), {false, [kind, rank](const json& c) -> std::shared_ptr<Layer> {
                                  const std::string what = adaptive_class(kind, rank) + " " + ser::name_of(c);
                                  AdaptivePoolOptions o;
                                  o.data_format = ser::value_or<std::string>(c, "data_format", "channels_last");
                                  o.name = ser::name_of(c);
                                  return std::make_shared<BaseAdaptivePooling>(kind, rank, pool_ints(c, "output_size", rank, what), o);
                                }});
      ser::register_layer_class(pool_class(kind, rank, true), {false, [kind, rank](const json& c) -> std::shared_ptr<Layer> {
                                  return std::make_shared<BaseGlobalPooling>(
                                      kind, rank, ser::value_or<std::string>(c, "data_format", "channels_last"),
                                      ser::value_or(c, "keepdims", false), ser::name_of(c));
                                }});
    }
  }
}

}  // namespace osprey::keras::layers
