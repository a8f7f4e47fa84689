// Convolution layers: keras.layers.Conv1D/2D/3D, DepthwiseConv1D/2D, SeparableConv1D/2D.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// An integer or a tuple of integers, as Keras takes kernel_size=3 or kernel_size=(3, 3): one value stands for
/// every spatial axis.
struct Ints {
  Ints() = default;
  Ints(int64_t v) : values{v} {}
  Ints(std::initializer_list<int64_t> v) : values(v) {}
  Ints(std::vector<int64_t> v) : values(std::move(v)) {}
  std::vector<int64_t> values;
};

/// The keyword arguments of Keras's convolution layers. `kernel_*` is a Conv's kernel and the depthwise kernel of
/// DepthwiseConv / SeparableConv (Keras's `depthwise_*`); `pointwise_*` is SeparableConv's 1x1 kernel.
struct ConvOptions {
  Ints strides = 1;
  std::string padding = "valid";  ///< "valid", "same", or "causal" (Conv1D only)
  std::string data_format = "channels_last";  ///< or "channels_first"
  Ints dilation_rate = 1;
  int groups = 1;            ///< Conv only: channels split into independent groups
  int depth_multiplier = 1;  ///< DepthwiseConv / SeparableConv: output channels per input channel
  Ints output_padding{};     ///< ConvTranspose: extra output rows per axis (empty: Keras's None)
  std::string activation{};
  bool use_bias = true;
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer pointwise_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  std::string name{};
  std::optional<Regularizer> kernel_regularizer{}, pointwise_regularizer{}, bias_regularizer{};
  std::optional<Constraint> kernel_constraint{}, pointwise_constraint{}, bias_constraint{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// Keras's BaseConv: the shared part of every convolution layer (one, two or three spatial axes). Inputs are
/// (batch, spatial..., channels), or (batch, channels, spatial...) with data_format "channels_first"; kernels are
/// in Keras's layout (window..., in channels / groups, filters), whatever the data format.
class BaseConv : public Layer {
 public:
  enum class Kind { standard, depthwise, separable };
  BaseConv(Kind kind, int rank, int64_t filters, const Ints& kernel_size, ConvOptions options);
  bool recordable() const override { return true; }
  /// Computes in the policy's half type under a mixed policy (bfloat16: oneDNN's bfloat16 convolutions).
  bool supports_half_compute() const override { return true; }
  std::string class_name() const override;
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;

  Kind kind() const { return kind_; }
  int rank() const { return rank_; }
  int64_t filters() const { return filters_; }
  const std::vector<int64_t>& kernel_size() const { return kernel_size_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  const std::vector<int64_t>& dilation_rate() const { return dilation_; }
  const ConvOptions& options() const { return options_; }
  /// The (depthwise) kernel, SeparableConv's pointwise kernel (nullptr otherwise), the bias (nullptr without).
  Variable* kernel() { return kernel_; }
  Variable* pointwise_kernel() { return pointwise_; }
  Variable* bias() { return bias_; }

 private:
  // The explicit padding of each spatial axis for an input of these extents ("same": TensorFlow's split).
  osprey::ops::ConvParams params_for(const Shape& channels_last_input) const;
  Shape output_shape_for(const Shape& input_shape) const;

  Kind kind_;
  int rank_;
  int64_t filters_;
  std::vector<int64_t> kernel_size_, strides_, dilation_;
  ConvOptions options_;
  std::string activation_name_;
  Variable* kernel_ = nullptr;
  Variable* pointwise_ = nullptr;
  Variable* bias_ = nullptr;
};

/// keras.layers.Conv1D(filters, kernel_size, ...): `layers::Conv1D(16, 5, {.padding = "causal"})`.
class Conv1D : public BaseConv {
 public:
  Conv1D(int64_t filters, const Ints& kernel_size, ConvOptions options = {})
      : BaseConv(Kind::standard, 1, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(Conv1D)
};
/// keras.layers.Conv2D: `layers::Conv2D(32, 3, {.padding = "same", .activation = "relu"})`.
class Conv2D : public BaseConv {
 public:
  Conv2D(int64_t filters, const Ints& kernel_size, ConvOptions options = {})
      : BaseConv(Kind::standard, 2, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(Conv2D)
};
/// keras.layers.Conv3D.
class Conv3D : public BaseConv {
 public:
  Conv3D(int64_t filters, const Ints& kernel_size, ConvOptions options = {})
      : BaseConv(Kind::standard, 3, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(Conv3D)
};
/// keras.layers.DepthwiseConv1D(kernel_size, ...): each input channel convolved with depth_multiplier filters of
/// its own (kernel (window..., channels, depth_multiplier)).
class DepthwiseConv1D : public BaseConv {
 public:
  explicit DepthwiseConv1D(const Ints& kernel_size, ConvOptions options = {})
      : BaseConv(Kind::depthwise, 1, 0, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(DepthwiseConv1D)
};
/// keras.layers.DepthwiseConv2D.
class DepthwiseConv2D : public BaseConv {
 public:
  explicit DepthwiseConv2D(const Ints& kernel_size, ConvOptions options = {})
      : BaseConv(Kind::depthwise, 2, 0, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(DepthwiseConv2D)
};
/// keras.layers.SeparableConv1D(filters, kernel_size, ...): a depthwise convolution, then a 1x1 one to `filters`.
class SeparableConv1D : public BaseConv {
 public:
  SeparableConv1D(int64_t filters, const Ints& kernel_size, ConvOptions options = {})
      : BaseConv(Kind::separable, 1, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(SeparableConv1D)
};
/// keras.layers.SeparableConv2D.
class SeparableConv2D : public BaseConv {
 public:
  SeparableConv2D(int64_t filters, const Ints& kernel_size, ConvOptions options = {})
      : BaseConv(Kind::separable, 2, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(SeparableConv2D)
};

/// Keras's BaseConvTranspose (Conv1DTranspose/2D/3D): the gradient of a convolution with respect to its input, as
/// tf.nn.conv_transpose computes it; kernel (window..., filters, input channels), output extents by Keras's
/// deconv_output_length.
class BaseConvTranspose : public Layer {
 public:
  BaseConvTranspose(int rank, int64_t filters, const Ints& kernel_size, ConvOptions options);
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Conv" + std::to_string(rank_) + "DTranspose"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;
  const ConvOptions& options() const { return options_; }
  Variable* kernel() { return kernel_; }
  Variable* bias() { return bias_; }

 private:
  std::vector<int64_t> output_extents(const std::vector<int64_t>& input_extents) const;

  int rank_;
  int64_t filters_;
  std::vector<int64_t> kernel_size_, strides_, dilation_, output_padding_;
  ConvOptions options_;
  std::string activation_name_;
  Variable* kernel_ = nullptr;
  Variable* bias_ = nullptr;
};
/// keras.layers.Conv2DTranspose(filters, kernel_size, ...): `layers::Conv2DTranspose(16, 3, {.strides = 2,
/// .padding = "same"})`. Conv1DTranspose and Conv3DTranspose alike.
class Conv1DTranspose : public BaseConvTranspose {
 public:
  Conv1DTranspose(int64_t filters, const Ints& kernel_size, ConvOptions options = {})
      : BaseConvTranspose(1, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(Conv1DTranspose)
};
class Conv2DTranspose : public BaseConvTranspose {
 public:
  Conv2DTranspose(int64_t filters, const Ints& kernel_size, ConvOptions options = {})
      : BaseConvTranspose(2, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(Conv2DTranspose)
};
class Conv3DTranspose : public BaseConvTranspose {
 public:
  Conv3DTranspose(int64_t filters, const Ints& kernel_size, ConvOptions options = {})
      : BaseConvTranspose(3, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(Conv3DTranspose)
};

/// Keras's other names for the convolution layers (keras.layers.Convolution2D is Conv2D; files name the class).
using Convolution1D = Conv1D;
using Convolution2D = Conv2D;
using Convolution3D = Conv3D;
using Convolution1DTranspose = Conv1DTranspose;
using Convolution2DTranspose = Conv2DTranspose;
using Convolution3DTranspose = Conv3DTranspose;
using SeparableConvolution1D = SeparableConv1D;
using SeparableConvolution2D = SeparableConv2D;

namespace detail {
/// `values` as one entry per spatial axis: a single value repeated `rank` times, or exactly `rank` values, each
/// >= `min`; ValueError naming the layer class and the argument otherwise.
std::vector<int64_t> per_axis(const Ints& values, int rank, int64_t min, const std::string& layer,
                              const std::string& argument);
/// "channels_last" or "channels_first"; ValueError otherwise.
void check_data_format(const std::string& data_format, const std::string& layer);
/// The permutation from channels_first to channels_last for a tensor of `rank` spatial axes (batch included), and
/// its inverse.
std::vector<int> to_channels_last(int rank);
std::vector<int> to_channels_first(int rank);
/// TensorFlow's padding of one axis: "valid" none, "same" the total split with the extra element after, "causal"
/// all of it before. Returns {before, after}.
std::pair<int64_t, int64_t> axis_padding(const std::string& padding, int64_t in, int64_t window, int64_t stride,
                                         int64_t dilation);
/// Keras's deconv_output_length: a transposed convolution's output extent along one axis from the input's (output
/// padding negative: none given).
int64_t deconv_output_length(int64_t in, int64_t window, int64_t stride, int64_t dilation, const std::string& padding,
                             int64_t output_padding = -1);
/// "(None, 5, 5, 3)": a per-sample shape with Keras's batch dimension.
std::string with_batch(const Shape& sample);
/// Keras's InputSpec(ndim=rank + 2) error for an input of another rank (`sample`: without the batch dimension).
void check_rank(const std::string& layer, int rank, const Shape& sample);
}  // namespace detail

}  // namespace osprey::keras::layers
