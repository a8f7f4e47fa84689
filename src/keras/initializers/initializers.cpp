// Keras's initializers by name (keras.initializers): variance scaling with Keras's fans, constants, random.
#include "keras/initializers/initializers.h"

#include <cmath>

#include "osprey/errors.h"
#include "osprey/keras/layers/layer.h"
#include "osprey/random.h"

namespace osprey::keras {

static const char* const kInitializers[] = {"glorot_uniform", "glorot_normal", "he_uniform",  "he_normal",
                                           "lecun_uniform",  "lecun_normal",  "zeros",       "ones",
                                           "random_normal",  "random_uniform", "truncated_normal"};

void check_initializer(const std::string& init) {
  for (const char* known : kInitializers) {
    if (init == known) return;
  }
  throw ValueError("Could not interpret initializer identifier: '" + init +
                   "'. Known: glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_uniform, lecun_normal, "
                   "zeros, ones, random_normal, random_uniform, truncated_normal.");
}

Tensor initialize(const std::string& init, const Shape& shape) {
  check_initializer(init);
  // Fans as Keras's compute_fans: 2-D (in, out); 1-D (n, n); scalars 1.
  double fan_in = 1, fan_out = 1;
  if (shape.rank() == 1) {
    fan_in = fan_out = static_cast<double>(shape[0]);
  } else if (shape.rank() >= 2) {
    double receptive = 1;
    for (int i = 0; i < shape.rank() - 2; ++i) receptive *= static_cast<double>(shape[i]);
    fan_in = static_cast<double>(shape[-2]) * receptive;
    fan_out = static_cast<double>(shape[-1]) * receptive;
  }
  auto variance_scaling = [&](double scale, double fan, bool uniform) {
    const double s = scale / std::max(1.0, fan);
    if (uniform) {
      const double limit = std::sqrt(3.0 * s);
      return random::uniform(shape, -limit, limit);
    }
    return random::truncated_normal(shape, 0.0, std::sqrt(s) / 0.87962566103423978);
  };
  if (init == "glorot_uniform") return variance_scaling(1.0, (fan_in + fan_out) / 2, true);
  if (init == "glorot_normal") return variance_scaling(1.0, (fan_in + fan_out) / 2, false);
  if (init == "he_uniform") return variance_scaling(2.0, fan_in, true);
  if (init == "he_normal") return variance_scaling(2.0, fan_in, false);
  if (init == "lecun_uniform") return variance_scaling(1.0, fan_in, true);
  if (init == "lecun_normal") return variance_scaling(1.0, fan_in, false);
  if (init == "zeros") return Tensor::zeros(shape);
  if (init == "ones") return Tensor::ones(shape);
  if (init == "random_normal") return random::normal(shape, 0.0, 0.05);
  if (init == "random_uniform") return random::uniform(shape, -0.05, 0.05);
  return random::truncated_normal(shape, 0.0, 0.05);
}

}  // namespace osprey::keras
