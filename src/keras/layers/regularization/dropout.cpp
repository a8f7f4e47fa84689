// Regularization layers (keras.layers.Dropout).
#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/keras/layers/regularization.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::keras::layers {

static Tensor scalar(double v) { return Tensor::scalar(v); }

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

}  // namespace osprey::keras::layers
