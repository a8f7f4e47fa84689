// Activation layers (keras.layers.Activation, LeakyReLU).
#include <fmt/format.h>

#include "keras/activations/activations.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/activations.h"
#include "osprey/ops.h"

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

}  // namespace osprey::keras::layers
