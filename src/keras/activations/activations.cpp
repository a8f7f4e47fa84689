// Keras activations that have no kernel of their own: written with differentiable ops, so they train through the
// tape on every device. Dense applies them after its fused linear product.
#include <map>

#include <fmt/format.h>

#include "keras/activations/activations.h"
#include "osprey/errors.h"

namespace osprey::keras {

namespace {

Tensor s(double v) { return Tensor::scalar(v); }
Tensor clip(const Tensor& x, double lo, double hi) { return osprey::ops::minimum(osprey::ops::maximum(x, s(lo)), s(hi)); }
Tensor softplus(const Tensor& x) { return osprey::ops::activation(x, osprey::ops::Activation::softplus); }
// 1 where |x| > t (strictly), else 0.
Tensor outside(const Tensor& x, double t) { return osprey::ops::sub(s(1.0), osprey::ops::greater_equal(s(t), osprey::ops::abs(x))); }

Tensor celu(const Tensor& x) { return osprey::ops::add(osprey::ops::relu(x), osprey::ops::minimum(s(0.0), osprey::ops::sub(osprey::ops::exp(x), s(1.0)))); }
Tensor relu6(const Tensor& x) { return clip(x, 0.0, 6.0); }
Tensor hard_sigmoid(const Tensor& x) { return osprey::ops::div(relu6(osprey::ops::add(x, s(3.0))), s(6.0)); }
Tensor hard_silu(const Tensor& x) { return osprey::ops::mul(x, hard_sigmoid(x)); }
Tensor hard_tanh(const Tensor& x) { return clip(x, -1.0, 1.0); }
Tensor hard_shrink(const Tensor& x) { return osprey::ops::mul(x, outside(x, 0.5)); }
Tensor soft_shrink(const Tensor& x) {
  return osprey::ops::sub(osprey::ops::relu(osprey::ops::sub(x, s(0.5))), osprey::ops::relu(osprey::ops::sub(osprey::ops::neg(x), s(0.5))));
}
Tensor log_sigmoid(const Tensor& x) { return osprey::ops::neg(softplus(osprey::ops::neg(x))); }
Tensor log_softmax(const Tensor& x) { return osprey::ops::log(osprey::ops::maximum(osprey::ops::softmax(x), s(1e-37))); }
Tensor mish(const Tensor& x) { return osprey::ops::mul(x, osprey::ops::tanh(softplus(x))); }
Tensor sparse_plus(const Tensor& x) {
  const Tensor q = osprey::ops::add(clip(x, -1.0, 1.0), s(1.0));
  return osprey::ops::add(osprey::ops::div(osprey::ops::mul(q, q), s(4.0)), osprey::ops::relu(osprey::ops::sub(x, s(1.0))));
}
Tensor sparse_sigmoid(const Tensor& x) { return osprey::ops::div(osprey::ops::add(clip(x, -1.0, 1.0), s(1.0)), s(2.0)); }
Tensor squareplus(const Tensor& x) {
  return osprey::ops::div(osprey::ops::add(x, osprey::ops::sqrt(osprey::ops::add(osprey::ops::square(x), s(4.0)))), s(2.0));
}
Tensor tanh_shrink(const Tensor& x) { return osprey::ops::sub(x, osprey::ops::tanh(x)); }
// a·sigmoid(b) for the two halves of the last axis (selected with 0/1 matrices, so the tape sees matmuls).
Tensor glu(const Tensor& x) {
  const int64_t d = x.shape()[-1];
  if (x.shape().rank() != 2 || d % 2) {
    throw ValueError(fmt::format("glu needs a 2-D input with an even last dimension, got {}", x.shape().to_string()));
  }
  std::vector<float> first(static_cast<size_t>(d * d / 2), 0.f), second(first.size(), 0.f);
  for (int64_t i = 0; i < d / 2; ++i) {
    first[static_cast<size_t>(i * (d / 2) + i)] = 1.f;
    second[static_cast<size_t>((i + d / 2) * (d / 2) + i)] = 1.f;
  }
  const Tensor a = osprey::ops::matmul(x, Tensor::from_vector(first, {d, d / 2}));
  const Tensor b = osprey::ops::matmul(x, Tensor::from_vector(second, {d, d / 2}));
  return osprey::ops::mul(a, osprey::ops::sigmoid(b));
}

using Fn = Tensor (*)(const Tensor&);
const std::map<std::string, Fn>& table() {
  static const std::map<std::string, Fn> t = {
      {"celu", celu},
      {"glu", glu},
      {"hard_shrink", hard_shrink},
      {"hard_sigmoid", hard_sigmoid},
      {"hard_silu", hard_silu},
      {"hard_swish", hard_silu},
      {"hard_tanh", hard_tanh},
      {"log_sigmoid", log_sigmoid},
      {"log_softmax", log_softmax},
      {"mish", mish},
      {"relu6", relu6},
      {"soft_shrink", soft_shrink},
      {"sparse_plus", sparse_plus},
      {"sparse_sigmoid", sparse_sigmoid},
      {"squareplus", squareplus},
      {"tanh_shrink", tanh_shrink},
  };
  return t;
}

}  // namespace

ActivationFn ActivationFn::get(const std::string& name) {
  ActivationFn f;
  f.name = name.empty() ? "linear" : name;
  if (table().count(f.name)) {
    f.composite = true;
    return f;
  }
  try {
    f.kernel = osprey::ops::activation_from_name(name);
  } catch (const ValueError&) {
    std::string known;
    for (const auto& [k, v] : table()) known += ", " + k;
    throw ValueError(fmt::format("Could not interpret activation function identifier: '{}'. Known: linear, relu, "
                                 "sigmoid, tanh, softmax, gelu, elu, selu, softplus, softsign, silu (swish), "
                                 "leaky_relu, exponential{}.",
                                 name, known));
  }
  f.name = osprey::ops::activation_name(f.kernel);
  return f;
}

Tensor ActivationFn::operator()(const Tensor& x) const {
  if (composite) return table().at(name)(x);
  return kernel == osprey::ops::Activation::linear ? x : osprey::ops::activation(x, kernel);
}

}  // namespace osprey::keras
