// keras.layers.Conv1DTranspose/2D/3D (Keras's BaseConvTranspose) on osprey::ops::conv_backprop_input: the output extents
// by Keras's deconv_output_length, the padding TensorFlow's conv_transpose derives from them.
#include <fmt/format.h>

#include <limits>

#include "keras/activations/activations.h"
#include "keras/layers/weight_rules.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

BaseConvTranspose::BaseConvTranspose(int rank, int64_t filters, const Ints& kernel_size, ConvOptions options)
    : Layer(options.name, fmt::format("conv{}d_transpose", rank), options.dtype), rank_(rank), filters_(filters),
      options_(std::move(options)) {
  const std::string cls = class_name();
  activation_name_ = ActivationFn::get(options_.activation).name;
  if (filters <= 0) {
    throw ValueError(fmt::format("Invalid value for argument `filters`. Expected a strictly positive value. Received "
                                 "filters={}.",
                                 filters));
  }
  if (options_.groups != 1 || options_.depth_multiplier != 1) {
    throw ValueError(fmt::format("{}: `groups` and `depth_multiplier` do not apply to transposed convolutions", cls));
  }
  kernel_size_ = detail::per_axis(kernel_size, rank, 1, cls, "kernel_size");
  strides_ = detail::per_axis(options_.strides, rank, 1, cls, "strides");
  dilation_ = detail::per_axis(options_.dilation_rate, rank, 1, cls, "dilation_rate");
  if (!options_.output_padding.values.empty()) {
    output_padding_ = detail::per_axis(options_.output_padding, rank, 0, cls, "output_padding");
    for (int i = 0; i < rank; ++i) {
      if (output_padding_[i] >= strides_[i]) {
        throw ValueError(fmt::format("{}: `output_padding` ({}) must be smaller than the stride ({}) on every axis",
                                     cls, fmt::join(output_padding_, ", "), fmt::join(strides_, ", ")));
      }
    }
  }
  if (options_.padding != "valid" && options_.padding != "same") {
    throw ValueError(fmt::format("The `padding` argument must be one of \"valid\", \"same\". Received: padding={}",
                                 options_.padding));
  }
  detail::check_data_format(options_.data_format, cls);
}

// Keras's deconv_output_length per axis.
std::vector<int64_t> BaseConvTranspose::output_extents(const std::vector<int64_t>& in) const {
  std::vector<int64_t> out;
  for (int i = 0; i < rank_; ++i) {
    out.push_back(detail::deconv_output_length(in[i], kernel_size_[i], strides_[i], dilation_[i], options_.padding,
                                               output_padding_.empty() ? -1 : output_padding_[i]));
  }
  return out;
}

Shape BaseConvTranspose::build(const Shape& input_shape) {
  detail::check_rank(name_, rank_, input_shape);
  const bool first = options_.data_format == "channels_first";
  const int64_t cin = input_shape[first ? 0 : rank_];
  std::vector<int64_t> in;
  for (int i = 0; i < rank_; ++i) in.push_back(input_shape[first ? i + 1 : i]);
  std::vector<int64_t> out = output_extents(in);
  for (int64_t o : out) {
    if (o < 1) {
      throw ValueError(fmt::format("{}: the output would be empty for input {}", class_name(),
                                   detail::with_batch(input_shape)));
    }
  }
  if (first) out.insert(out.begin(), filters_);
  else out.push_back(filters_);
  if (built_) {
    if (kernel_->shape()[-1] != cin) {
      throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected the channel axis "
                                   "to have value {}, but received input with shape {}",
                                   name_, kernel_->shape()[-1], detail::with_batch(input_shape)));
    }
    return Shape(out);
  }
  std::vector<int64_t> k(kernel_size_);
  k.insert(k.end(), {filters_, cin});
  kernel_ = &add_weight("kernel", initialize(options_.kernel_initializer, Shape(k)));
  if (options_.use_bias) bias_ = &add_weight("bias", initialize(options_.bias_initializer, {filters_}));
  return finish_build(Shape(out));
}

Tensor BaseConvTranspose::call(const Tensor& inputs, bool) {
  const bool first = options_.data_format == "channels_first";
  const auto d = inputs.shape().dims();
  if (!built_ || inputs.shape().rank() != rank_ + 2) build(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  const Tensor x = first ? osprey::ops::transpose(inputs, detail::to_channels_last(rank_)) : inputs;
  std::vector<int64_t> in;
  for (int i = 0; i < rank_; ++i) in.push_back(x.shape()[i + 1]);
  const std::vector<int64_t> out = output_extents(in);
  // The forward convolution this layer transposes: from the output extents back to the input's, with
  // TensorFlow's padding of those extents.
  osprey::ops::ConvParams p;
  for (int i = 0; i < rank_; ++i) {
    const auto [before, after] = detail::axis_padding(options_.padding, out[i], kernel_size_[i], strides_[i], dilation_[i]);
    p.strides.push_back(strides_[i]);
    p.dilation.push_back(dilation_[i]);
    p.pad_before.push_back(before);
    p.pad_after.push_back(after);
  }
  Tensor y = osprey::ops::conv_backprop_input(x, kernel_->value(), out, p);
  if (bias_) y = osprey::ops::add(y, bias_->value());
  y = ActivationFn::get(activation_name_)(y);
  return first ? osprey::ops::transpose(y, detail::to_channels_first(rank_)) : y;
}

#define OSPREY_TRANSPOSE_RULES                                             \
  {{kernel_, options_.kernel_regularizer, options_.kernel_constraint},    \
   {bias_, options_.bias_regularizer, options_.bias_constraint}}
bool BaseConvTranspose::has_regularization() const { return detail::any_penalty(OSPREY_TRANSPOSE_RULES); }
std::vector<Tensor> BaseConvTranspose::regularization_losses() { return detail::penalties(OSPREY_TRANSPOSE_RULES); }
void BaseConvTranspose::apply_constraints() { detail::constrain(OSPREY_TRANSPOSE_RULES); }
#undef OSPREY_TRANSPOSE_RULES

namespace ser = serialization;
using ser::json;

std::string BaseConvTranspose::get_config() const {
  json c = ser::base_config(*this);
  const auto& o = options_;
  c["filters"] = filters_;
  c["kernel_size"] = kernel_size_;
  c["strides"] = strides_;
  c["padding"] = o.padding;
  c["output_padding"] = output_padding_.empty() ? json(nullptr) : json(output_padding_);
  c["data_format"] = o.data_format;
  c["dilation_rate"] = dilation_;
  c["activation"] = activation_name_;
  c["use_bias"] = o.use_bias;
  c["kernel_initializer"] = ser::initializer(o.kernel_initializer);
  c["bias_initializer"] = ser::initializer(o.bias_initializer);
  c["kernel_regularizer"] = ser::regularizer(o.kernel_regularizer);
  c["bias_regularizer"] = ser::regularizer(o.bias_regularizer);
  c["activity_regularizer"] = nullptr;
  c["kernel_constraint"] = ser::constraint(o.kernel_constraint);
  c["bias_constraint"] = ser::constraint(o.bias_constraint);
  return ser::dumps(c);
}

namespace {

Ints tuple_from(const json& c, const char* key, int rank, int64_t lo, const std::string& what, Ints fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (c[key].is_number_integer()) return Ints(ser::integer(c, key, lo, int64_t{1} << 30, what));
  return Ints(ser::integers(c, key, lo, int64_t{1} << 30, what, static_cast<std::size_t>(rank)));
}

std::shared_ptr<Layer> transpose_from_config(int rank, const json& c) {
  const std::string what = fmt::format("Conv{}DTranspose {}", rank, ser::name_of(c));
  ConvOptions o;
  o.strides = tuple_from(c, "strides", rank, 1, what, Ints(1));
  o.padding = ser::value_or<std::string>(c, "padding", "valid");
  o.data_format = ser::value_or<std::string>(c, "data_format", "channels_last");
  o.dilation_rate = tuple_from(c, "dilation_rate", rank, 1, what, Ints(1));
  o.output_padding = tuple_from(c, "output_padding", rank, 0, what, Ints());
  o.activation = ser::activation_from(c.value("activation", json("linear")));
  o.use_bias = ser::value_or(c, "use_bias", true);
  if (c.contains("kernel_initializer")) o.kernel_initializer = ser::initializer_from(c["kernel_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = ser::initializer_from(c["bias_initializer"]);
  o.name = ser::name_of(c);
  o.kernel_regularizer = ser::regularizer_from(c.value("kernel_regularizer", json()));
  o.bias_regularizer = ser::regularizer_from(c.value("bias_regularizer", json()));
  o.kernel_constraint = ser::constraint_from(c.value("kernel_constraint", json()));
  o.bias_constraint = ser::constraint_from(c.value("bias_constraint", json()));
  ser::refuse_set(c, {"activity_regularizer"}, what, "kernel/bias regularizers and constraints");
  if (!c.contains("kernel_size") || c["kernel_size"].is_null()) {
    throw ValueError(fmt::format("{}: the config has no `kernel_size`", what));
  }
  const Ints kernel = tuple_from(c, "kernel_size", rank, 1, what, Ints());
  const int64_t filters = ser::integer(c, "filters", 1, std::numeric_limits<int>::max(), what);
  if (rank == 1) return std::make_shared<Conv1DTranspose>(filters, kernel, o);
  if (rank == 2) return std::make_shared<Conv2DTranspose>(filters, kernel, o);
  return std::make_shared<Conv3DTranspose>(filters, kernel, o);
}

}  // namespace

OSPREY_REGISTER_LAYERS(convolutional_transpose) {
  for (int rank = 1; rank <= 3; ++rank) {
    ser::register_layer_class(fmt::format("Conv{}DTranspose", rank),
                              {true, [rank](const json& c) { return transpose_from_config(rank, c); }});
  }
}

}  // namespace osprey::keras::layers
