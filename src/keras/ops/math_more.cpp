// More of keras::ops's element-wise functions (cbrt ... isposinf) and activations (celu ... squareplus), the
// normalization functions and psnr: compositions of osprey::ops (so on every backend, differentiable through them).
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;
using detail::scalar;
using detail::float_of;
using detail::floating;

namespace {

Tensor less_than(const Tensor& x, double v) { return core::compare(x, scalar(v, x), core::CompareKind::less); }
Tensor greater_than(const Tensor& x, double v) { return core::compare(x, scalar(v, x), core::CompareKind::greater); }

// Both operands in their result type and, for integers, float64 copies (exact below 2^53) for floor arithmetic.
struct Pair {
  Tensor a, b;
  DType type;
};
Pair pair_of(const TensorLike& x1, const TensorLike& x2) {
  DType t = result_type(x1, x2);
  if (t == DType::bool_) t = DType::int32;
  const DType compute = is_floating(t) ? t : DType::float64;
  return {x1.as_tensor(compute), x2.as_tensor(compute), t};
}

Tensor floor_div(const Tensor& a, const Tensor& b) { return core::floor(core::div(a, b)); }
Tensor floor_mod(const Tensor& a, const Tensor& b) { return core::sub(a, core::mul(floor_div(a, b), b)); }

}  // namespace

Tensor cbrt(const Tensor& x_in) {
  const Tensor x = floating(x_in);
  return core::mul(sign(x), core::pow(core::abs(x), scalar(1.0 / 3.0, x)));
}
Tensor exp2(const Tensor& x_in) {
  const Tensor x = floating(x_in);
  return core::pow(scalar(2.0, x), x);
}
Tensor deg2rad(const Tensor& x) { return core::mul(floating(x), Tensor::scalar(M_PI / 180.0, float_of(x.dtype()))); }
Tensor rad2deg(const Tensor& x) { return core::mul(floating(x), Tensor::scalar(180.0 / M_PI, float_of(x.dtype()))); }
Tensor fabs(const Tensor& x) { return core::abs(floating(x)); }
Tensor trunc(const Tensor& x) {
  if (!is_floating(x.dtype())) return x;
  return core::where(less_than(x, 0.0), core::ceil(x), core::floor(x));
}
Tensor floor_divide(const TensorLike& x1, const TensorLike& x2) {
  const Pair p = pair_of(x1, x2);
  return cast(floor_div(p.a, p.b), p.type);
}
Tensor mod(const TensorLike& x1, const TensorLike& x2) {
  const Pair p = pair_of(x1, x2);
  return cast(floor_mod(p.a, p.b), p.type);
}
Tensor fmod(const TensorLike& x1, const TensorLike& x2) {
  // The dividend's sign on the remainder of the magnitudes (Keras's TensorFlow form).
  const Pair p = pair_of(x1, x2);
  return cast(core::mul(sign(p.a), floor_mod(core::abs(p.a), core::abs(p.b))), p.type);
}
Tensor divide_no_nan(const TensorLike& x1, const TensorLike& x2) {
  const DType t = float_of(result_type(x1, x2));
  const Tensor a = x1.as_tensor(t), b = x2.as_tensor(t);
  const Tensor zero = core::compare(b, Tensor::scalar(0.0, t), core::CompareKind::equal);
  const Tensor q = core::div(a, core::where(zero, Tensor::scalar(1.0, t), b));
  return core::where(zero, Tensor::scalar(0.0, t), q);
}
Tensor heaviside(const TensorLike& x1, const TensorLike& x2) {
  const DType t = float_of(result_type(x1, x2));
  const Tensor a = x1.as_tensor(t), b = x2.as_tensor(t);
  return core::where(less_than(a, 0.0), Tensor::scalar(0.0, t),
                     core::where(greater_than(a, 0.0), Tensor::scalar(1.0, t), b));
}
Tensor signbit(const Tensor& x) {
  if (x.dtype() == DType::bool_) return core::compare(x, x, core::CompareKind::not_equal);  // all false
  if (!is_floating(x.dtype())) return less_than(x, 0.0);
  // -0.0 too: 1 / -0.0 is -inf.
  const Tensor zero = core::compare(x, scalar(0.0, x), core::CompareKind::equal);
  const Tensor negative_zero = core::compare(zero, less_than(core::div(scalar(1.0, x), x), 0.0),
                                             core::CompareKind::logical_and);
  return core::compare(less_than(x, 0.0), negative_zero, core::CompareKind::logical_or);
}
Tensor sinc(const Tensor& x_in) {
  const Tensor x = floating(x_in);
  const Tensor zero = core::compare(x, scalar(0.0, x), core::CompareKind::equal);
  const Tensor pi_x = core::mul(core::where(zero, scalar(1.0, x), x), scalar(M_PI, x));
  return core::where(zero, scalar(1.0, x), core::div(core::sin(pi_x), pi_x));
}
Tensor logaddexp2(const TensorLike& x1, const TensorLike& x2) {
  const DType t = float_of(result_type(x1, x2));
  const Tensor ln2 = Tensor::scalar(M_LN2, t);
  return core::div(logaddexp(core::mul(x1.as_tensor(t), ln2), core::mul(x2.as_tensor(t), ln2)), ln2);
}
Tensor erfc(const Tensor& x_in) {
  const Tensor x = floating(x_in);
  return core::sub(scalar(1.0, x), core::erf(x));
}
Tensor erfinv(const Tensor& x_in) {
  const Tensor x = floating(x_in);
  const DType t = x.dtype() == DType::float64 ? DType::float64 : DType::float32;
  // In float64: Winitzki's approximation (relative error ~2e-3), then three Newton steps on erf(y) = x; ±1 give ±inf,
  // beyond them NaN. The value carries no tape history; the gradient √π/2·exp(y²) enters through x − stop(x), which
  // is zero in the forward pass.
  const Tensor d = core::cast(stop_gradient(x), DType::float64);
  const auto c = [](double v) { return Tensor::scalar(v, DType::float64); };
  const double a = 0.147;
  const Tensor w = core::neg(core::log(core::mul(core::sub(c(1), d), core::add(c(1), d))));  // −ln(1 − x²)
  const Tensor half = core::sub(c(2.0 / (M_PI * a)), core::mul(w, c(0.5)));
  const Tensor mag = core::sqrt(core::maximum(
      core::sub(core::sqrt(core::add(core::square(half), core::div(w, c(a)))), half), c(0)));
  const Tensor sign = core::where(core::compare(d, c(0), core::CompareKind::less), c(-1), c(1));
  Tensor y = core::mul(sign, mag);
  for (int step = 0; step < 3; ++step) {
    const Tensor slope = core::mul(c(2.0 / std::sqrt(M_PI)), core::exp(core::neg(core::square(y))));
    y = core::sub(y, core::div(core::sub(core::erf(y), d), slope));
  }
  const Tensor ad = core::abs(d);
  y = core::where(core::compare(ad, c(1), core::CompareKind::equal),
                  core::mul(sign, c(std::numeric_limits<double>::infinity())),
                  core::where(core::compare(ad, c(1), core::CompareKind::less), y,
                              c(std::numeric_limits<double>::quiet_NaN())));
  const Tensor value = core::cast(y, t);
  const Tensor slope = core::cast(core::mul(c(std::sqrt(M_PI) / 2), core::exp(core::square(y))), t);
  const Tensor finite = core::compare(ad, c(1), core::CompareKind::less);
  const Tensor delta = core::sub(core::cast(x, t), stop_gradient(core::cast(x, t)));
  const Tensor out = core::add(value, core::where(finite, core::mul(delta, slope), Tensor::scalar(0.0, t)));
  return x.dtype() == t ? out : core::cast(out, x.dtype());
}
Tensor isclose(const TensorLike& x1, const TensorLike& x2, double rtol, double atol, bool equal_nan) {
  const DType t = result_type(x1, x2);
  const Tensor a = x1.as_tensor(t), b = x2.as_tensor(t);
  if (!is_floating(t)) return core::compare(a, b, core::CompareKind::equal);
  const Tensor bound = core::add(Tensor::scalar(atol, t), core::mul(Tensor::scalar(rtol, t), core::abs(b)));
  Tensor close = core::compare(core::abs(core::sub(a, b)), bound, core::CompareKind::less_equal);
  if (equal_nan) {
    close = core::compare(close, core::compare(isnan(a), isnan(b), core::CompareKind::logical_and),
                          core::CompareKind::logical_or);
  }
  return close;
}
Tensor allclose(const TensorLike& x1, const TensorLike& x2, double rtol, double atol, bool equal_nan) {
  return all(isclose(x1, x2, rtol, atol, equal_nan));
}
Tensor isneginf(const Tensor& x) {
  if (!is_floating(x.dtype())) return core::compare(x, x, core::CompareKind::not_equal);
  return core::compare(x, scalar(-INFINITY, x), core::CompareKind::equal);
}
Tensor isposinf(const Tensor& x) {
  if (!is_floating(x.dtype())) return core::compare(x, x, core::CompareKind::not_equal);
  return core::compare(x, scalar(INFINITY, x), core::CompareKind::equal);
}

Tensor celu(const Tensor& x_in, double alpha) {
  const Tensor x = floating(x_in);
  const Tensor neg = core::mul(scalar(alpha, x), core::expm1(core::div(x, scalar(alpha, x))));
  return core::add(core::maximum(x, scalar(0.0, x)), core::minimum(neg, scalar(0.0, x)));
}
Tensor glu(const Tensor& x_in, int axis) {
  const Tensor x = floating(x_in);
  const int a = detail::normalized(axis, x.shape().rank(), "glu");
  const int64_t n = x.shape()[a];
  if (n % 2 != 0) {
    throw ValueError(fmt::format("glu expects axis {} of even size, got {} (shape {})", axis, n, x.shape().to_string()));
  }
  const auto halves = core::split(x, a, {n / 2, n / 2});
  return core::mul(halves[0], sigmoid(halves[1]));
}
Tensor hard_shrink(const Tensor& x_in, double threshold) {
  const Tensor x = floating(x_in);
  return core::where(greater_than(core::abs(x), threshold), x, scalar(0.0, x));
}
Tensor soft_shrink(const Tensor& x_in, double threshold) {
  const Tensor x = floating(x_in);
  return core::where(greater_than(x, threshold), core::sub(x, scalar(threshold, x)),
                     core::where(less_than(x, -threshold), core::add(x, scalar(threshold, x)), scalar(0.0, x)));
}
Tensor tanh_shrink(const Tensor& x_in) {
  const Tensor x = floating(x_in);
  return core::sub(x, tanh(x));
}
Tensor threshold(const Tensor& x_in, double threshold, double default_value) {
  const Tensor x = floating(x_in);
  return core::where(greater_than(x, threshold), x, scalar(default_value, x));
}
Tensor hard_tanh(const Tensor& x) { return clip(floating(x), -1.0, 1.0); }
Tensor hard_swish(const Tensor& x) { return hard_silu(x); }
Tensor log_sigmoid(const Tensor& x_in) {
  const Tensor x = floating(x_in);
  return core::neg(softplus(core::neg(x)));
}
Tensor sparse_plus(const Tensor& x_in) {
  const Tensor x = floating(x_in);
  const Tensor mid = core::div(core::square(core::add(x, scalar(1.0, x))), scalar(4.0, x));
  return core::where(core::compare(x, scalar(-1.0, x), core::CompareKind::less_equal), scalar(0.0, x),
                     core::where(core::compare(x, scalar(1.0, x), core::CompareKind::greater_equal), x, mid));
}
Tensor squareplus(const Tensor& x_in, double b) {
  const Tensor x = floating(x_in);
  return core::div(core::add(x, core::sqrt(core::add(core::square(x), scalar(b, x)))), scalar(2.0, x));
}

Tensor rms_normalization(const Tensor& x_in, const std::optional<Tensor>& scale, int axis,
                         std::optional<double> epsilon) {
  const DType original = x_in.dtype();
  const Tensor x = cast(x_in, is_half(original) || !is_floating(original) ? DType::float32 : original);
  const Tensor ms = mean(core::square(x), axis, true);
  Tensor y = core::mul(x, rsqrt(core::add(ms, scalar(epsilon.value_or(detail::kEpsilon), x))));
  if (scale) y = core::mul(y, cast(*scale, x.dtype()));
  return is_floating(original) ? cast(y, original) : y;
}
Tensor layer_normalization(const Tensor& x_in, const std::optional<Tensor>& gamma, const std::optional<Tensor>& beta,
                           int axis, std::optional<double> epsilon) {
  const DType original = x_in.dtype();
  const Tensor x = cast(x_in, is_half(original) || !is_floating(original) ? DType::float32 : original);
  const auto mv = moments(x, axis, true);
  Tensor inv = rsqrt(core::add(mv[1], scalar(epsilon.value_or(detail::kEpsilon), x)));
  if (gamma) inv = core::mul(inv, cast(*gamma, x.dtype()));
  Tensor y = core::sub(core::mul(x, inv), core::mul(mv[0], inv));
  if (beta) y = core::add(y, cast(*beta, x.dtype()));
  return is_floating(original) ? cast(y, original) : y;
}
Tensor psnr(const Tensor& x1, const Tensor& x2, double max_val) {
  if (x1.shape() != x2.shape()) {
    throw ValueError(fmt::format("psnr: x1 and x2 must have the same shape; got {} and {}", x1.shape().to_string(),
                                 x2.shape().to_string()));
  }
  const Tensor a = floating(x1), b = cast(x2, a.dtype());
  const Tensor mse = mean(core::square(core::sub(a, b)));
  return core::sub(scalar(20.0 * std::log10(max_val), a), core::mul(scalar(10.0, a), log10(mse)));
}

}  // namespace osprey::keras::ops
