// Layers beyond Dense, written with differentiable ops so that the tape, every device and MirroredStrategy work
// for them unchanged.
#include <fmt/format.h>

#include "keras/activations.h"
#include "osprey/errors.h"
#include "osprey/keras/layers.h"
#include "osprey/random.h"

namespace osprey::keras::layers {

static Tensor scalar(double v) { return Tensor::scalar(v); }

// ---- Activation ----

Activation::Activation(const std::string& activation, std::string name)
    : Layer(name, "activation"), name_of_activation_(ActivationFn::get(activation).name) {}
Shape Activation::build(const Shape& input_shape) {
  return finish_build(input_shape);
}
Tensor Activation::call(const Tensor& x, bool) { return ActivationFn::get(name_of_activation_)(x); }

// ---- LeakyReLU ----

LeakyReLU::LeakyReLU(double negative_slope, std::string name) : Layer(name, "leaky_re_lu"), slope_(negative_slope) {
  if (!(negative_slope >= 0.0)) {
    throw ValueError(fmt::format("The negative_slope value of a Leaky ReLU layer cannot be None or negative value. "
                                 "Expected a float. Received: negative_slope={}",
                                 negative_slope));
  }
}
Shape LeakyReLU::build(const Shape& input_shape) {
  return finish_build(input_shape);
}
Tensor LeakyReLU::call(const Tensor& x, bool) {
  // max(x, slope·x) for slopes up to 1; the general form otherwise: x·[x ≥ 0] + slope·x·[x < 0].
  if (slope_ <= 1.0) return ops::maximum(x, ops::mul(x, scalar(slope_)));
  const Tensor pos = ops::greater_equal(x, scalar(0.0));
  return ops::add(ops::mul(x, pos), ops::mul(ops::mul(x, scalar(slope_)), ops::sub(scalar(1.0), pos)));
}

// ---- Dropout ----

Dropout::Dropout(double rate, std::string name) : Layer(name, "dropout"), rate_(rate) {
  if (!(rate >= 0.0 && rate < 1.0)) {
    throw ValueError(fmt::format("Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                                 "Received: rate={}",
                                 rate));
  }
}
Shape Dropout::build(const Shape& input_shape) {
  return finish_build(input_shape);
}
Tensor Dropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0.0) return x;
  // keep = uniform >= rate (probability 1 − rate), a constant for the tape; kept values scaled by 1/(1 − rate).
  const Tensor keep = ops::greater_equal(random::uniform(x.shape()), scalar(rate_));
  return ops::mul(ops::mul(x, keep), scalar(1.0 / (1.0 - rate_)));
}

// ---- Flatten / Reshape ----

Flatten::Flatten(std::string name) : Layer(name, "flatten") {}
Shape Flatten::build(const Shape& input_shape) {
  return finish_build(Shape({input_shape.num_elements()}));
}
Tensor Flatten::call(const Tensor& x, bool) {
  const int64_t n = x.shape()[0];
  return ops::reshape(x, Shape({n, n ? x.num_elements() / n : output_shape_[0]}));
}

Reshape::Reshape(std::vector<int64_t> target_shape, std::string name)
    : Layer(name, "reshape"), target_(std::move(target_shape)) {}

static std::string dims_string(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}
Shape Reshape::build(const Shape& input_shape) {
  std::vector<int64_t> dims = target_;
  int64_t known = 1, unknown = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (unknown >= 0) throw ValueError("Reshape: there can only be one unknown dimension (-1) in target_shape");
      unknown = static_cast<int64_t>(i);
    } else {
      known *= dims[i];
    }
  }
  const int64_t total = input_shape.num_elements();
  if (unknown >= 0) {
    if (known == 0 || total % known) {
      throw ValueError(fmt::format("Reshape: input shape {} cannot be reshaped to {}", input_shape.to_string(),
                                   dims_string(target_)));
    }
    dims[unknown] = total / known;
  } else if (known != total) {
    throw ValueError(fmt::format("Reshape: total size of the new array must be unchanged, input_shape = {}, "
                                 "output_shape = {}",
                                 input_shape.to_string(), dims_string(target_)));
  }
  return finish_build(Shape(dims));
}
Tensor Reshape::call(const Tensor& x, bool) {
  std::vector<int64_t> dims{x.shape()[0]};
  for (int64_t d : output_shape_.dims()) dims.push_back(d);
  return ops::reshape(x, Shape(dims));
}

// ---- BatchNormalization ----

BatchNormalization::BatchNormalization(BatchNormalizationOptions o) : Layer(o.name, "batch_normalization"), o_(o) {
  if (!(o.epsilon > 0)) throw ValueError(fmt::format("BatchNormalization: epsilon must be positive, got {}", o.epsilon));
}

// Sequential builds every layer again when a layer is added: the weights are created once.
static void check_rebuild(const std::string& layer, const Shape& built_for, const Shape& input_shape) {
  if (built_for[-1] != input_shape[-1]) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected axis -1 of input "
                                 "shape to have value {}, but received input with shape {}",
                                 layer, built_for[-1], input_shape.to_keras_string()));
  }
}

Shape BatchNormalization::build(const Shape& input_shape) {
  if (built_) {
    check_rebuild(name_, output_shape_, input_shape);
    return output_shape_;
  }
  const int64_t d = input_shape[-1];
  if (o_.scale) gamma_ = &add_weight("gamma", Tensor::ones({d}));
  if (o_.center) beta_ = &add_weight("beta", Tensor::zeros({d}));
  // Replica-local under a strategy, averaged when read (Keras: ON_READ, MEAN).
  const VariableOptions stats{.trainable = false, .synchronization = VariableSynchronization::ON_READ,
                              .aggregation = VariableAggregation::MEAN};
  moving_mean_ = &add_weight("moving_mean", Tensor::zeros({d}), stats);
  moving_variance_ = &add_weight("moving_variance", Tensor::ones({d}), stats);
  return finish_build(input_shape);
}

Tensor BatchNormalization::call(const Tensor& inputs, bool training) {
  const int64_t d = inputs.shape()[-1];
  const int64_t rows = d ? inputs.num_elements() / d : 0;
  const Tensor x = inputs.shape().rank() == 2 ? inputs : ops::reshape(inputs, Shape({rows, d}));
  Tensor y;
  if (training && trainable) {  // a frozen BatchNormalization runs in inference mode, as in Keras
    const Tensor mean = ops::reduce_mean(x, 0);
    const Tensor centered = ops::sub(x, mean);
    const Tensor var = ops::reduce_mean(ops::square(centered), 0);
    y = ops::mul(centered, ops::div(scalar(1.0), ops::sqrt(ops::add(var, scalar(o_.epsilon)))));
    const Tensor m = scalar(o_.momentum), one_minus = scalar(1.0 - o_.momentum);
    moving_mean_->assign(ops::add(ops::mul(moving_mean_->value(), m), ops::mul(mean, one_minus)));
    moving_variance_->assign(ops::add(ops::mul(moving_variance_->value(), m), ops::mul(var, one_minus)));
  } else {
    const Tensor inv = ops::div(scalar(1.0), ops::sqrt(ops::add(moving_variance_->value(), scalar(o_.epsilon))));
    y = ops::mul(ops::sub(x, moving_mean_->value()), inv);
  }
  if (gamma_) y = ops::mul(y, gamma_->value());
  if (beta_) y = ops::add(y, beta_->value());
  return inputs.shape().rank() == 2 ? y : ops::reshape(y, inputs.shape());
}

// ---- LayerNormalization ----

LayerNormalization::LayerNormalization(LayerNormalizationOptions o) : Layer(o.name, "layer_normalization"), o_(o) {}

Shape LayerNormalization::build(const Shape& input_shape) {
  if (built_) {
    check_rebuild(name_, output_shape_, input_shape);
    return output_shape_;
  }
  const int64_t d = input_shape[-1];
  if (o_.scale) gamma_ = &add_weight("gamma", Tensor::ones({d}));
  if (o_.center) beta_ = &add_weight("beta", Tensor::zeros({d}));
  return finish_build(input_shape);
}

Tensor LayerNormalization::call(const Tensor& inputs, bool) {
  const int64_t d = inputs.shape()[-1];
  const int64_t rows = d ? inputs.num_elements() / d : 0;
  const Tensor x = inputs.shape().rank() == 2 ? inputs : ops::reshape(inputs, Shape({rows, d}));
  // Per-row statistics as (rows, 1) columns spread back over the features with a product by a row of ones.
  const Tensor ones_col = Tensor::full({d, 1}, 1.0 / static_cast<double>(d));
  const Tensor ones_row = Tensor::ones({1, d});
  const Tensor mean = ops::matmul(ops::matmul(x, ones_col), ones_row);
  const Tensor centered = ops::sub(x, mean);
  const Tensor var = ops::matmul(ops::matmul(ops::square(centered), ones_col), ones_row);
  Tensor y = ops::div(centered, ops::sqrt(ops::add(var, scalar(o_.epsilon))));
  if (gamma_) y = ops::mul(y, gamma_->value());
  if (beta_) y = ops::add(y, beta_->value());
  return inputs.shape().rank() == 2 ? y : ops::reshape(y, inputs.shape());
}

}  // namespace osprey::keras::layers
