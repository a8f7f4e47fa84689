// Normalization layers (keras.layers.BatchNormalization, LayerNormalization), written with differentiable ops so
// that the tape, every device and MirroredStrategy work for them unchanged.
#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/keras/layers/normalization.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

static Tensor scalar(double v) { return Tensor::scalar(v); }

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
