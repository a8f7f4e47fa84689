// keras::ops's neural-network functions (keras.ops.relu ... log_softmax, moments, normalize) and norm, on the
// activation kernels and the element-wise and reduction ops of osprey::ops.
#include <cmath>

#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;
using detail::scalar;

namespace {

using detail::floating;
using detail::normalized;

// An activation kernel (float32 and half tensors): float64 through float32 and back, integers as float32.
Tensor act(const Tensor& x, core::Activation a) {
  if (x.dtype() == DType::float64) return core::cast(core::activation(core::cast(x, DType::float32), a), DType::float64);
  return core::activation(floating(x), a);
}

}  // namespace

Tensor relu(const Tensor& x) { return act(x, core::Activation::relu); }
Tensor relu6(const Tensor& x) {
  const Tensor r = relu(x);
  return core::minimum(r, scalar(6.0, r));
}
Tensor sigmoid(const Tensor& x) { return act(x, core::Activation::sigmoid); }
Tensor softplus(const Tensor& x) { return act(x, core::Activation::softplus); }
Tensor softsign(const Tensor& x) { return act(x, core::Activation::softsign); }
Tensor silu(const Tensor& x) { return act(x, core::Activation::silu); }
Tensor swish(const Tensor& x) { return silu(x); }
Tensor selu(const Tensor& x) { return act(x, core::Activation::selu); }
Tensor elu(const Tensor& x, double alpha) {
  if (alpha == 1.0) return act(x, core::Activation::elu);
  const Tensor f = floating(x);
  return core::where(core::compare(f, scalar(0.0, f), core::CompareKind::greater), f,
                     core::mul(core::expm1(f), scalar(alpha, f)));
}
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  if (negative_slope == 0.2) return act(x, core::Activation::leaky_relu);
  const Tensor f = floating(x);
  return core::where(core::compare(f, scalar(0.0, f), core::CompareKind::greater), f,
                     core::mul(f, scalar(negative_slope, f)));
}
Tensor hard_sigmoid(const Tensor& x) {
  const Tensor f = floating(x);
  return core::div(relu6(core::add(f, scalar(3.0, f))), scalar(6.0, f));
}
Tensor hard_silu(const Tensor& x) { return core::mul(floating(x), hard_sigmoid(x)); }
Tensor gelu(const Tensor& x, bool approximate) {
  if (!approximate) return act(x, core::Activation::gelu);  // the erf form
  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), TensorFlow's approximate GELU.
  const Tensor f = floating(x);
  const Tensor inner = core::mul(core::add(f, core::mul(core::mul(core::square(f), f), scalar(0.044715, f))),
                                 scalar(std::sqrt(2.0 / M_PI), f));
  const Tensor t = f.dtype() == DType::float64 ? core::cast(core::tanh(core::cast(inner, DType::float32)), DType::float64)
                                               : core::tanh(inner);
  return core::mul(core::mul(f, scalar(0.5, f)), core::add(t, scalar(1.0, f)));
}

Tensor softmax(const Tensor& x, int axis) {
  const int r = x.shape().rank();
  if (r == 0) throw InvalidArgumentError("softmax needs a tensor of rank >= 1, got a scalar");
  const int ax = normalized(axis, r, "softmax");
  if (ax == r - 1) return act(x, core::Activation::softmax);
  std::vector<int> perm;  // the axis last, the others in order; then back
  for (int i = 0; i < r; ++i) {
    if (i != ax) perm.push_back(i);
  }
  perm.push_back(ax);
  std::vector<int> back(static_cast<std::size_t>(r));
  for (int i = 0; i < r; ++i) back[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = i;
  return core::transpose(act(core::transpose(x, perm), core::Activation::softmax), back);
}
Tensor log_softmax(const Tensor& x, int axis) {
  const Tensor f = floating(x);
  normalized(axis, f.shape().rank(), "log_softmax");
  return core::sub(f, logsumexp(f, axis, true));
}

Tensor ctc_loss(const Tensor& target, const Tensor& output, const Tensor& target_length, const Tensor& output_length,
                int64_t mask_index) {
  // Keras on TensorFlow: float16/bfloat16 give float32, float64 is computed in float32 and cast back.
  const Tensor target32 = is_floating(target.dtype()) ? core::cast(target, DType::int32) : target;
  const Tensor loss = core::ctc_loss(target32, output, target_length, output_length, mask_index);
  return output.dtype() == DType::float64 ? core::cast(loss, DType::float64) : loss;
}

std::pair<Tensor, Tensor> ctc_decode(const Tensor& inputs, const Tensor& sequence_lengths, const std::string& strategy,
                                     int64_t beam_width, int64_t top_paths, bool merge_repeated,
                                     std::optional<int64_t> mask_index) {
  const int64_t classes = inputs.shape().rank() == 3 ? inputs.shape()[2] : 1;
  const int64_t blank = mask_index.value_or(classes - 1);
  const Tensor x = floating(inputs);
  std::pair<Tensor, Tensor> out;
  if (strategy == "greedy") {
    auto [decoded, scores] = core::ctc_greedy_decode(x, sequence_lengths, merge_repeated, blank);
    out = {decoded.reshape(Shape({1, decoded.shape()[0], decoded.shape()[1]})), scores};
  } else if (strategy == "beam_search") {
    out = core::ctc_beam_search_decode(x, sequence_lengths, beam_width, top_paths, blank);
  } else {
    throw ValueError(fmt::format("Invalid strategy {}. Supported values are 'greedy' and 'beam_search'.", strategy));
  }
  if (x.dtype() == DType::float64) out.second = core::cast(out.second, DType::float64);
  return out;
}

std::vector<Tensor> moments(const Tensor& x, const Axes& axes, bool keepdims) {
  return {mean(x, axes, keepdims), var(x, axes, keepdims)};
}

Tensor normalize(const Tensor& x_in, int axis, int order, double epsilon) {
  if (order < 1) throw ValueError(fmt::format("normalize: order must be an int >= 1, got {}", order));
  const Tensor x = x_in.shape().rank() == 0 ? core::reshape(x_in, Shape({1})) : x_in;
  if (order == 2) {  // x·min(1/√Σx², 1/ε), as Keras
    const Tensor f = floating(x);
    const Tensor inv = core::div(scalar(1.0, f), core::sqrt(sum(core::square(f), axis, true)));
    return core::mul(f, core::minimum(inv, scalar(1.0 / epsilon, f)));
  }
  const Tensor n = norm(x, static_cast<double>(order), axis, true);
  return core::div(floating(x), core::maximum(n, scalar(epsilon, n)));
}

namespace {

using detail::kEpsilon;

void check_same_shape(const Tensor& target, const Tensor& output, const char* op) {
  if (target.shape() != output.shape()) {
    throw ValueError(fmt::format("{}: arguments `target` and `output` must have the same shape. Received: "
                                 "target.shape={}, output.shape={}",
                                 op, target.shape().to_string(), output.shape().to_string()));
  }
}

}  // namespace

Tensor binary_crossentropy(const Tensor& target_in, const Tensor& output_in, bool from_logits) {
  check_same_shape(target_in, output_in, "binary_crossentropy");
  const Tensor output = floating(output_in), target = cast(target_in, output.dtype());
  const Tensor one = scalar(1.0, output);
  if (from_logits) {  // max(x, 0) - x·t + log(1 + exp(-|x|)), TensorFlow's sigmoid_cross_entropy_with_logits
    return core::add(core::sub(relu(output), core::mul(output, target)),
                     core::log1p(core::exp(core::neg(core::abs(output)))));
  }
  const Tensor o = clip(output, kEpsilon, 1.0 - kEpsilon);
  const Tensor bce = core::add(core::mul(target, core::log(o)), core::mul(core::sub(one, target), core::log(core::sub(one, o))));
  return core::neg(bce);
}

Tensor categorical_crossentropy(const Tensor& target_in, const Tensor& output_in, bool from_logits, int axis) {
  if (target_in.shape().rank() < 1) {
    throw ValueError(fmt::format("categorical_crossentropy: arguments `target` and `output` must be at least rank 1. "
                                 "Received: target.shape={}, output.shape={}",
                                 target_in.shape().to_string(), output_in.shape().to_string()));
  }
  check_same_shape(target_in, output_in, "categorical_crossentropy");
  const Tensor output = floating(output_in), target = cast(target_in, output.dtype());
  normalized(axis, output.shape().rank(), "categorical_crossentropy");
  if (from_logits) return core::neg(sum(core::mul(target, log_softmax(output, axis)), axis));
  // Each row's probabilities scaled to add up to 1, clipped, as Keras.
  const Tensor o = clip(core::div(output, sum(output, axis, true)), kEpsilon, 1.0 - kEpsilon);
  return core::neg(sum(core::mul(target, core::log(o)), axis));
}

Tensor sparse_categorical_crossentropy(const Tensor& target_in, const Tensor& output_in, bool from_logits, int axis) {
  const Tensor output = floating(output_in);
  const int r = output.shape().rank();
  if (r < 1) {
    throw ValueError(fmt::format("sparse_categorical_crossentropy: argument `output` must be at least rank 1. "
                                 "Received: output.shape={}",
                                 output.shape().to_string()));
  }
  if (axis != -1 && axis != r - 1) {
    throw ValueError(fmt::format("sparse_categorical_crossentropy: only axis=-1 is supported, as Keras. Received: "
                                 "axis={}",
                                 axis));
  }
  Tensor target = target_in;
  if (target.shape().rank() == r && target.shape()[-1] == 1) target = squeeze(target, -1);
  std::vector<int64_t> lead = output.shape().dims_vector();
  lead.pop_back();
  if (target.shape() != Shape(lead)) {
    throw ValueError(fmt::format("sparse_categorical_crossentropy: arguments `target` and `output` must have the same "
                                 "shape up until the last dimension: target.shape={}, output.shape={}",
                                 target_in.shape().to_string(), output.shape().to_string()));
  }
  const Tensor labels = core::cast(target, DType::int64);
  const int64_t classes = output.shape()[-1];
  if (labels.num_elements() > 0) {  // TensorFlow's check of every label (read back: a synchronisation on a GPU)
    const int64_t lo = static_cast<int64_t>(min(labels).item()), hi = static_cast<int64_t>(max(labels).item());
    if (lo < 0 || hi >= classes) {
      throw InvalidArgumentError(fmt::format("sparse_categorical_crossentropy: received a label value of {} which is "
                                             "outside the valid range of [0, {})",
                                             lo < 0 ? lo : hi, classes));
    }
  }
  const Tensor logits = from_logits ? output : core::log(clip(output, kEpsilon, 1.0 - kEpsilon));
  const Tensor picked = take_along_axis(log_softmax(logits, -1), expand_dims(labels, -1), -1);
  return core::neg(squeeze(picked, -1));
}

namespace {

// The matrix norms from singular values (2: the largest, -2: the smallest, 'nuc': their sum) over axes row and col,
// as Keras's TensorFlow backend: the matrix axes moved last, then the SVD.
Tensor singular_value_norm(const Tensor& x, int row, int col, bool keepdims, const char* how) {
  const Tensor moved = moveaxis(x, {row, col}, {-2, -1});
  const Tensor s = svd(moved, false, false)[0];
  const std::string h = how;
  Tensor out = h == "max" ? max(s, -1) : h == "min" ? min(s, -1) : sum(s, -1);
  if (keepdims) {
    out = expand_dims(out, std::min(row, col));
    out = expand_dims(out, std::max(row, col));
  }
  return out;
}

}  // namespace

Tensor norm(const Tensor& x_in, std::optional<double> ord, const Axes& axis, bool keepdims) {
  const Tensor x = floating(x_in);
  const int r = x.shape().rank();
  const std::vector<int> axes = detail::resolved_axes(axis, r, "norm");
  if (axes.size() == 1) {
    const int ax = axes[0];
    if (!ord || *ord == 2) return core::sqrt(sum(core::square(x), ax, keepdims));
    const Tensor a = core::abs(x);
    if (std::isinf(*ord)) return *ord > 0 ? max(a, ax, keepdims) : min(a, ax, keepdims);
    if (*ord == 0) {
      return sum(core::cast(core::compare(x, scalar(0.0, x), core::CompareKind::not_equal), x.dtype()), ax, keepdims);
    }
    const Tensor p = scalar(*ord, x);
    return core::pow(sum(core::pow(a, p), ax, keepdims), scalar(1.0 / *ord, x));
  }
  if (axes.size() != 2) {  // Keras's ValueError (a rank-3 tensor with axis unset, too)
    throw ValueError(fmt::format("norm: {} axes of a tensor of shape {}; a vector norm takes one axis, a matrix norm "
                                 "two (give axis)",
                                 axes.size(), x.shape().to_string()));
  }
  int row = axes[0], col = axes[1];
  if (row == col) throw InvalidArgumentError(fmt::format("norm: the matrix axes are both {}", row));
  if (!ord) return core::sqrt(sum(core::square(x), Axes(axes), keepdims));  // Frobenius
  const Tensor a = core::abs(x);
  if (*ord == 1 || *ord == -1) {  // column sums, then their max (min)
    if (!keepdims && col > row) --col;
    const Tensor s = sum(a, row, keepdims);
    return *ord > 0 ? max(s, col, keepdims) : min(s, col, keepdims);
  }
  if (std::isinf(*ord)) {  // row sums, then their max (min)
    if (!keepdims && row > col) --row;
    const Tensor s = sum(a, col, keepdims);
    return *ord > 0 ? max(s, row, keepdims) : min(s, row, keepdims);
  }
  if (*ord == 2 || *ord == -2) return singular_value_norm(x, row, col, keepdims, *ord > 0 ? "max" : "min");
  throw ValueError(fmt::format("norm: invalid ord {} for a matrix norm (1, -1, 2, -2, inf, -inf, 'fro', 'nuc')", *ord));
}

Tensor norm(const Tensor& x_in, const std::string& ord, const Axes& axis, bool keepdims) {
  const Tensor x = floating(x_in);
  const std::vector<int> axes = detail::resolved_axes(axis, x.shape().rank(), "norm");
  if (axes.size() != 2 || (ord != "fro" && ord != "nuc")) {
    throw ValueError(fmt::format("norm: invalid ord '{}' for {} axes (the string ords 'fro' and 'nuc' are matrix "
                                 "norms, over two axes)", ord, axes.size()));
  }
  if (axes[0] == axes[1]) throw InvalidArgumentError(fmt::format("norm: the matrix axes are both {}", axes[0]));
  if (ord == "fro") return norm(x, std::nullopt, axis, keepdims);
  return singular_value_norm(x, axes[0], axes[1], keepdims, "sum");
}

}  // namespace osprey::keras::ops
