// keras.layers.Conv1D/2D/3D, DepthwiseConv1D/2D and SeparableConv1D/2D (Keras's BaseConv, BaseDepthwiseConv and
// BaseSeparableConv) on osprey::ops::conv: arguments checked as Keras checks them, TensorFlow's padding, channels_first
// through transposes.
#include <fmt/format.h>

#include <limits>

#include "keras/activations/activations.h"
#include "keras/layers/weight_rules.h"
#include "keras/layers/convolutional/conv_config.h"
#include "keras/saving/serialization.h"
#include "ops/attrs.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace detail {

std::vector<int64_t> per_axis(const Ints& values, int rank, int64_t min, const std::string& layer,
                              const std::string& argument) {
  std::vector<int64_t> v = values.values;
  if (v.size() == 1) v.assign(static_cast<std::size_t>(rank), v[0]);
  if (static_cast<int>(v.size()) != rank) {
    throw ValueError(fmt::format("{}: the `{}` argument must be an integer or a tuple of {} integers. Received: {}={}",
                                 layer, argument, rank, argument, fmt::join(values.values, ", ")));
  }
  for (int64_t e : v) {
    if (e < min) {
      throw ValueError(fmt::format("{}: the `{}` argument must have values >= {}. Received {}=({})", layer, argument,
                                   min, argument, fmt::join(v, ", ")));
    }
  }
  return v;
}

void check_data_format(const std::string& data_format, const std::string& layer) {
  if (data_format != "channels_last" && data_format != "channels_first") {
    throw ValueError(fmt::format("{}: the `data_format` argument must be one of {{'channels_first', "
                                 "'channels_last'}}. Received: data_format={}",
                                 layer, data_format));
  }
}

std::vector<int> to_channels_last(int rank) {
  std::vector<int> p{0};
  for (int i = 0; i < rank; ++i) p.push_back(i + 2);
  p.push_back(1);
  return p;
}
std::vector<int> to_channels_first(int rank) {
  std::vector<int> p{0, rank + 1};
  for (int i = 0; i < rank; ++i) p.push_back(i + 1);
  return p;
}

std::pair<int64_t, int64_t> axis_padding(const std::string& padding, int64_t in, int64_t window, int64_t stride,
                                         int64_t dilation) {
  const int64_t span = (window - 1) * dilation + 1;
  if (padding == "causal") return {span - 1, 0};
  if (padding != "same") return {0, 0};
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + span - in, 0);
  return {total / 2, total - total / 2};
}

int64_t deconv_output_length(int64_t in, int64_t window, int64_t stride, int64_t dilation, const std::string& padding,
                             int64_t output_padding) {
  const int64_t k = (window - 1) * dilation + 1;
  if (output_padding < 0) return padding == "valid" ? in * stride + std::max<int64_t>(k - stride, 0) : in * stride;
  const int64_t pad = padding == "same" ? k / 2 : 0;
  return (in - 1) * stride + k - 2 * pad + output_padding;
}

std::string with_batch(const Shape& sample) {
  std::vector<int64_t> dims{0};
  for (auto d : sample.dims()) dims.push_back(d);
  return Shape(dims).to_keras_string();
}

void check_rank(const std::string& layer, int rank, const Shape& sample) {
  if (sample.rank() != rank + 1) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected ndim={}, found "
                                 "ndim={}. Full shape received: {}",
                                 layer, rank + 2, sample.rank() + 1, with_batch(sample)));
  }
}

}  // namespace detail

namespace {

const char* prefix_of(BaseConv::Kind kind, int rank) {
  static const char* names[3][3] = {{"conv1d", "conv2d", "conv3d"},
                                    {"depthwise_conv1d", "depthwise_conv2d", "depthwise_conv3d"},
                                    {"separable_conv1d", "separable_conv2d", "separable_conv3d"}};
  return names[static_cast<int>(kind)][rank - 1];
}

std::string class_of(BaseConv::Kind kind, int rank) {
  const char* base = kind == BaseConv::Kind::standard ? "Conv" : kind == BaseConv::Kind::depthwise ? "DepthwiseConv"
                                                                                                   : "SeparableConv";
  return fmt::format("{}{}D", base, rank);
}

}  // namespace

using detail::with_batch;

BaseConv::BaseConv(Kind kind, int rank, int64_t filters, const Ints& kernel_size, ConvOptions options)
    : Layer(options.name, prefix_of(kind, rank), options.dtype), kind_(kind), rank_(rank), filters_(filters),
      options_(std::move(options)) {
  const std::string cls = class_of(kind, rank);
  activation_name_ = ActivationFn::get(options_.activation).name;  // ValueError for unknown names
  if (kind != Kind::depthwise && filters <= 0) {
    throw ValueError(fmt::format("Invalid value for argument `filters`. Expected a strictly positive value. Received "
                                 "filters={}.",
                                 filters));
  }
  if (options_.groups <= 0) {
    throw ValueError(fmt::format("The number of groups must be a positive integer. Received: groups={}.",
                                 options_.groups));
  }
  if (kind == Kind::standard && filters % options_.groups != 0) {
    throw ValueError(fmt::format("The number of filters must be evenly divisible by the number of groups. Received: "
                                 "groups={}, filters={}.",
                                 options_.groups, filters));
  }
  if (kind != Kind::standard && options_.groups != 1) {
    throw ValueError(fmt::format("{}: `groups` applies to Conv layers only; received groups={}", cls, options_.groups));
  }
  if (kind != Kind::standard && options_.depth_multiplier <= 0) {
    throw ValueError(fmt::format("Invalid value for argument `depth_multiplier`. Expected a strictly positive value. "
                                 "Received depth_multiplier={}.",
                                 options_.depth_multiplier));
  }
  kernel_size_ = detail::per_axis(kernel_size, rank, 1, cls, "kernel_size");
  strides_ = detail::per_axis(options_.strides, rank, 1, cls, "strides");
  dilation_ = detail::per_axis(options_.dilation_rate, rank, 1, cls, "dilation_rate");
  const auto above_one = [](const std::vector<int64_t>& v) {
    return std::any_of(v.begin(), v.end(), [](int64_t e) { return e > 1; });
  };
  if (above_one(strides_) && above_one(dilation_)) {
    throw ValueError(fmt::format("`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                                 "strides=({}) and dilation_rate=({})",
                                 fmt::join(strides_, ", "), fmt::join(dilation_, ", ")));
  }
  const std::string& p = options_.padding;
  if (!(p == "valid" || p == "same" || (p == "causal" && rank == 1 && kind == Kind::standard))) {
    throw ValueError(fmt::format("The `padding` argument must be one of \"valid\", \"same\" (or \"causal\", only for "
                                 "`Conv1D`). Received: padding={}",
                                 p));
  }
  detail::check_data_format(options_.data_format, cls);
}

std::string BaseConv::class_name() const { return class_of(kind_, rank_); }

Shape BaseConv::output_shape_for(const Shape& input_shape) const {
  const bool first = options_.data_format == "channels_first";
  std::vector<int64_t> out;
  for (int i = 0; i < rank_; ++i) {
    const int64_t in = input_shape[first ? i + 1 : i];
    const int64_t span = (kernel_size_[i] - 1) * dilation_[i] + 1;
    const int64_t o = options_.padding == "valid" ? (in - span < 0 ? -1 : (in - span) / strides_[i] + 1)
                                                  : (in + strides_[i] - 1) / strides_[i];
    if (o < 1) {
      throw ValueError(fmt::format("Computed output size would be negative. Received `inputs shape={}`, `kernel "
                                   "shape=({})`, `dilation_rate=({})`.",
                                   with_batch(input_shape), fmt::join(kernel_size_, ", "),
                                   fmt::join(dilation_, ", ")));
    }
    out.push_back(o);
  }
  const int64_t channels = kind_ == Kind::depthwise ? input_shape[first ? 0 : rank_] * options_.depth_multiplier
                                                    : filters_;
  if (first) out.insert(out.begin(), channels);
  else out.push_back(channels);
  return Shape(out);
}

Shape BaseConv::build(const Shape& input_shape) {
  detail::check_rank(name_, rank_, input_shape);
  const int64_t cin = input_shape[options_.data_format == "channels_first" ? 0 : rank_];
  if (built_) {
    const int64_t want = kind_ == Kind::standard ? kernel_->shape()[-2] * options_.groups : kernel_->shape()[-2];
    if (cin != want) {
      throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected the channel axis "
                                   "to have value {}, but received input with shape {}",
                                   name_, want, with_batch(input_shape)));
    }
    return output_shape_for(input_shape);
  }
  if (cin % options_.groups != 0) {
    throw ValueError(fmt::format("The number of input channels must be evenly divisible by the number of groups. "
                                 "Received groups={}, but the input has {} channels (full input shape is {}).",
                                 options_.groups, cin, with_batch(input_shape)));
  }
  const Shape out = output_shape_for(input_shape);
  std::vector<int64_t> k(kernel_size_);
  const int64_t mult = options_.depth_multiplier;
  if (kind_ == Kind::standard) {
    k.insert(k.end(), {cin / options_.groups, filters_});
    kernel_ = &add_weight("kernel", initialize(options_.kernel_initializer, Shape(k)));
  } else {
    k.insert(k.end(), {cin, mult});
    kernel_ = &add_weight(kind_ == Kind::depthwise ? "kernel" : "depthwise_kernel",
                          initialize(options_.kernel_initializer, Shape(k)));
  }
  if (kind_ == Kind::separable) {
    std::vector<int64_t> pk(static_cast<std::size_t>(rank_), 1);
    pk.insert(pk.end(), {cin * mult, filters_});
    pointwise_ = &add_weight("pointwise_kernel", initialize(options_.pointwise_initializer, Shape(pk)));
  }
  if (options_.use_bias) {
    const int64_t n = kind_ == Kind::depthwise ? cin * mult : filters_;
    bias_ = &add_weight("bias", initialize(options_.bias_initializer, {n}));
  }
  return finish_build(out);
}

osprey::ops::ConvParams BaseConv::params_for(const Shape& x) const {
  osprey::ops::ConvParams p;
  for (int i = 0; i < rank_; ++i) {
    const auto [before, after] = detail::axis_padding(options_.padding, x[i + 1], kernel_size_[i], strides_[i],
                                                      dilation_[i]);
    p.strides.push_back(strides_[i]);
    p.dilation.push_back(dilation_[i]);
    p.pad_before.push_back(before);
    p.pad_after.push_back(after);
  }
  p.groups = options_.groups;
  return p;
}

Tensor BaseConv::call(const Tensor& inputs, bool) {
  const bool first = options_.data_format == "channels_first";
  if (!built_ || inputs.shape().rank() != rank_ + 2) {
    const auto d = inputs.shape().dims();
    build(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  }
  const Tensor x = first ? osprey::ops::transpose(inputs, detail::to_channels_last(rank_)) : inputs;
  osprey::ops::ConvParams p = params_for(x.shape());
  // Under a mixed policy the variables are read in the compute dtype (bfloat16 convolutions run natively on the
  // CPU through oneDNN; others compute in float32 copies).
  const Tensor bias = bias_ ? autocast_variable(*bias_) : Tensor();
  const Tensor kernel = autocast_variable(*kernel_);
  // The activation inside the (last) convolution when the op can take it (relu on oneDNN's post-op: one pass over
  // the output fewer each way), else after it.
  const ActivationFn act = ActivationFn::get(activation_name_);
  const bool fuse = !act.composite && osprey::ops::fusable_after_op(act.kernel);
  osprey::ops::ConvParams last = p;
  if (fuse) last.activation = act.kernel;
  Tensor y;
  if (kind_ == Kind::standard) {
    y = osprey::ops::conv(x, kernel, bias, last);
  } else {
    // (window..., C, multiplier) is the grouped kernel (window..., 1, C·multiplier) with one group per channel.
    const Shape& ks = kernel_->shape();
    const Tensor dk = osprey::ops::reshape(kernel, ks.with_dim(ks.rank() - 2, 1).with_dim(ks.rank() - 1, ks[-2] * ks[-1]));
    p.groups = last.groups = ks[-2];
    if (kind_ == Kind::depthwise) {
      y = osprey::ops::conv(x, dk, bias, last);
    } else {
      const std::vector<int64_t> ones(static_cast<std::size_t>(rank_), 1), zeros(static_cast<std::size_t>(rank_), 0);
      y = osprey::ops::conv(osprey::ops::conv(x, dk, Tensor(), p), autocast_variable(*pointwise_), bias,
                    {ones, ones, zeros, zeros, 1, last.activation});
    }
  }
  if (!fuse) y = act(y);
  return first ? osprey::ops::transpose(y, detail::to_channels_first(rank_)) : y;
}

#define OSPREY_CONV_RULES                                                                \
  {{kernel_, options_.kernel_regularizer, options_.kernel_constraint},                  \
   {pointwise_, options_.pointwise_regularizer, options_.pointwise_constraint},         \
   {bias_, options_.bias_regularizer, options_.bias_constraint}}
bool BaseConv::has_regularization() const { return detail::any_penalty(OSPREY_CONV_RULES); }
std::vector<Tensor> BaseConv::regularization_losses() { return detail::penalties(OSPREY_CONV_RULES); }
void BaseConv::apply_constraints() { detail::constrain(OSPREY_CONV_RULES); }
#undef OSPREY_CONV_RULES

// ---- Keras configs (layer.get_config()) and from_config ----

namespace ser = serialization;
using ser::json;

std::string BaseConv::get_config() const {
  json c = ser::base_config(*this);
  const auto& o = options_;
  const bool depthwise = kind_ != Kind::standard;
  if (depthwise) c["depth_multiplier"] = o.depth_multiplier;
  if (kind_ != Kind::depthwise) c["filters"] = filters_;
  c["kernel_size"] = kernel_size_;
  c["strides"] = strides_;
  c["padding"] = o.padding;
  c["data_format"] = o.data_format;
  c["dilation_rate"] = dilation_;
  if (!depthwise) c["groups"] = o.groups;
  c["activation"] = activation_name_;
  c["use_bias"] = o.use_bias;
  c[depthwise ? "depthwise_initializer" : "kernel_initializer"] = ser::initializer(o.kernel_initializer);
  if (kind_ == Kind::separable) c["pointwise_initializer"] = ser::initializer(o.pointwise_initializer);
  c["bias_initializer"] = ser::initializer(o.bias_initializer);
  c[depthwise ? "depthwise_regularizer" : "kernel_regularizer"] = ser::regularizer(o.kernel_regularizer);
  if (kind_ == Kind::separable) c["pointwise_regularizer"] = ser::regularizer(o.pointwise_regularizer);
  c["bias_regularizer"] = ser::regularizer(o.bias_regularizer);
  c["activity_regularizer"] = nullptr;
  c[depthwise ? "depthwise_constraint" : "kernel_constraint"] = ser::constraint(o.kernel_constraint);
  if (kind_ == Kind::separable) c["pointwise_constraint"] = ser::constraint(o.pointwise_constraint);
  c["bias_constraint"] = ser::constraint(o.bias_constraint);
  return ser::dumps(c);
}

Ints detail::conv_ints_from(const json& c, const char* key, int rank, int64_t lo, const std::string& what) {
  if (!c.contains(key) || c[key].is_null()) {
    if (std::string(key) == "kernel_size") throw ValueError(fmt::format("{}: the config has no `kernel_size`", what));
    return Ints(1);
  }
  if (c[key].is_number_integer()) return Ints(ser::integer(c, key, lo, int64_t{1} << 30, what));
  return Ints(ser::integers(c, key, lo, int64_t{1} << 30, what, static_cast<std::size_t>(rank)));
}

namespace {

using detail::conv_ints_from;

std::shared_ptr<Layer> conv_from_config(BaseConv::Kind kind, int rank, const json& c) {
  const std::string what = class_of(kind, rank) + " " + ser::name_of(c);
  const bool depthwise = kind != BaseConv::Kind::standard;
  ConvOptions o;
  o.strides = conv_ints_from(c, "strides", rank, 1, what);
  o.padding = ser::value_or<std::string>(c, "padding", "valid");
  o.data_format = ser::value_or<std::string>(c, "data_format", "channels_last");
  o.dilation_rate = conv_ints_from(c, "dilation_rate", rank, 1, what);
  if (!depthwise && c.contains("groups")) o.groups = static_cast<int>(ser::integer(c, "groups", 1, 1 << 20, what));
  if (depthwise && c.contains("depth_multiplier")) {
    o.depth_multiplier = static_cast<int>(ser::integer(c, "depth_multiplier", 1, 1 << 20, what));
  }
  o.activation = ser::activation_from(c.value("activation", json("linear")));
  o.use_bias = ser::value_or(c, "use_bias", true);
  const char* k_init = depthwise ? "depthwise_initializer" : "kernel_initializer";
  if (c.contains(k_init)) o.kernel_initializer = ser::initializer_from(c[k_init]);
  if (c.contains("pointwise_initializer")) o.pointwise_initializer = ser::initializer_from(c["pointwise_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = ser::initializer_from(c["bias_initializer"]);
  o.name = ser::name_of(c);
  o.kernel_regularizer = ser::regularizer_from(c.value(depthwise ? "depthwise_regularizer" : "kernel_regularizer", json()));
  o.pointwise_regularizer = ser::regularizer_from(c.value("pointwise_regularizer", json()));
  o.bias_regularizer = ser::regularizer_from(c.value("bias_regularizer", json()));
  o.kernel_constraint = ser::constraint_from(c.value(depthwise ? "depthwise_constraint" : "kernel_constraint", json()));
  o.pointwise_constraint = ser::constraint_from(c.value("pointwise_constraint", json()));
  o.bias_constraint = ser::constraint_from(c.value("bias_constraint", json()));
  ser::refuse_set(c, {"activity_regularizer", "lora_rank"}, class_of(kind, rank),
                  "kernel/bias regularizers and constraints");
  const Ints kernel = conv_ints_from(c, "kernel_size", rank, 1, what);
  const int64_t filters = kind == BaseConv::Kind::depthwise
                              ? 0
                              : ser::integer(c, "filters", 1, std::numeric_limits<int>::max(), what);
  using K = BaseConv::Kind;
  switch (rank * 3 + static_cast<int>(kind)) {
    case 3 + 0: return std::make_shared<Conv1D>(filters, kernel, o);
    case 6 + 0: return std::make_shared<Conv2D>(filters, kernel, o);
    case 9 + 0: return std::make_shared<Conv3D>(filters, kernel, o);
    case 3 + static_cast<int>(K::depthwise): return std::make_shared<DepthwiseConv1D>(kernel, o);
    case 6 + static_cast<int>(K::depthwise): return std::make_shared<DepthwiseConv2D>(kernel, o);
    case 3 + static_cast<int>(K::separable): return std::make_shared<SeparableConv1D>(filters, kernel, o);
    default: return std::make_shared<SeparableConv2D>(filters, kernel, o);
  }
}

}  // namespace

OSPREY_REGISTER_LAYERS(convolutional) {
  using K = BaseConv::Kind;
  const std::pair<K, int> classes[] = {{K::standard, 1},  {K::standard, 2},  {K::standard, 3}, {K::depthwise, 1},
                                       {K::depthwise, 2}, {K::separable, 1}, {K::separable, 2}};
  for (const auto& [kind, rank] : classes) {
    ser::register_layer_class(class_of(kind, rank), {true, [kind = kind, rank = rank](const json& c) {
                                return conv_from_config(kind, rank, c);
                              }});
  }
}

}  // namespace osprey::keras::layers
