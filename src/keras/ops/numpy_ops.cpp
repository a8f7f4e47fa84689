// keras::ops's element-wise ops, comparisons and reductions, on the general ops of osprey::ops.
#include <cmath>
#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;

namespace {

bool is_float(DType t) { return is_floating(t); }

using detail::rank_of;
using detail::wider;

// Both operands as tensors of their result type.
std::pair<Tensor, Tensor> promoted(const TensorLike& a, const TensorLike& b) {
  const DType t = result_type(a, b);
  return {a.as_tensor(t), b.as_tensor(t)};
}

using detail::float_of;

std::vector<int> axes_of(const Axes& axis) { return axis.all() ? std::vector<int>{} : axis.axes(); }

Tensor compare(const TensorLike& a, const TensorLike& b, core::CompareKind kind) {
  auto [x, y] = promoted(a, b);
  return core::compare(x, y, kind);
}

}  // namespace

Tensor TensorLike::as_tensor(DType dtype) const {
  if (is_tensor()) return tensor_.dtype() == dtype ? tensor_ : core::cast(tensor_, dtype);
  return Tensor::scalar(scalar_, dtype);
}

DType result_type(const TensorLike& a, const TensorLike& b) {
  auto weak = [](const TensorLike& s) {
    return s.boolean() ? DType::bool_ : s.integral() ? DType::int32 : DType::float32;
  };
  if (a.is_tensor() && b.is_tensor()) {
    return wider(a.tensor().dtype(), b.tensor().dtype());
  }
  if (!a.is_tensor() && !b.is_tensor()) {
    const DType x = weak(a), y = weak(b);
    return rank_of(x) >= rank_of(y) ? x : y;
  }
  const DType strong = a.is_tensor() ? a.tensor().dtype() : b.tensor().dtype();
  const DType w = weak(a.is_tensor() ? b : a);
  // A number takes the tensor's dtype unless it needs a wider kind (a float with an integer or bool tensor).
  if (is_float(w) && !is_float(strong)) return DType::float32;
  if (w == DType::int32 && strong == DType::bool_) return DType::int32;
  return strong;
}

Tensor convert_to_tensor(const TensorLike& x, std::optional<DType> dtype) {
  if (x.is_tensor()) return dtype ? cast(x.tensor(), *dtype) : x.tensor();
  const DType t = dtype ? *dtype : x.boolean() ? DType::bool_ : x.integral() ? DType::int32 : DType::float32;
  return Tensor::scalar(x.scalar(), t);
}

Tensor cast(const Tensor& x, DType dtype) { return x.dtype() == dtype ? x : core::cast(x, dtype); }

// A view of x that no tape has seen: nothing recorded downstream of it leads back to x.
Tensor stop_gradient(const Tensor& x) { return x.reshape(x.shape()); }

Tensor add(const TensorLike& a, const TensorLike& b) {
  auto [x, y] = promoted(a, b);
  if (x.dtype() == DType::bool_) return core::compare(x, y, core::CompareKind::logical_or);
  return core::add(x, y);
}
Tensor subtract(const TensorLike& a, const TensorLike& b) {
  auto [x, y] = promoted(a, b);
  return core::sub(x, y);
}
Tensor multiply(const TensorLike& a, const TensorLike& b) {
  auto [x, y] = promoted(a, b);
  if (x.dtype() == DType::bool_) return core::compare(x, y, core::CompareKind::logical_and);
  return core::mul(x, y);
}
Tensor divide(const TensorLike& a, const TensorLike& b) {
  const DType t = float_of(result_type(a, b));
  return core::div(a.as_tensor(t), b.as_tensor(t));
}
Tensor true_divide(const TensorLike& a, const TensorLike& b) { return divide(a, b); }
Tensor power(const TensorLike& a, const TensorLike& b) {
  const DType t = result_type(a, b);
  if (is_float(t)) return core::pow(a.as_tensor(t), b.as_tensor(t));
  // Integer powers: computed in float64 and rounded (exact below 2^53), then cast back, as NumPy's integer result.
  // (CUDA's pow may land an ulp below the integer: 3^1 became 2.999... and then 2 on the first GPU.)
  return core::cast(core::round(core::pow(a.as_tensor(DType::float64), b.as_tensor(DType::float64))), t);
}
Tensor maximum(const TensorLike& a, const TensorLike& b) {
  auto [x, y] = promoted(a, b);
  return core::maximum(x, y);
}
Tensor minimum(const TensorLike& a, const TensorLike& b) {
  auto [x, y] = promoted(a, b);
  return core::minimum(x, y);
}
Tensor negative(const Tensor& x) {
  if (is_float(x.dtype())) return core::neg(x);
  const DType t = x.dtype() == DType::bool_ ? DType::int32 : x.dtype();
  return core::sub(Tensor::scalar(0, t), cast(x, t));
}
Tensor abs(const Tensor& x) {
  if (is_float(x.dtype())) return core::abs(x);
  return core::where(core::compare(x, Tensor::scalar(0, x.dtype()), core::CompareKind::less), core::neg(x), x);
}
Tensor absolute(const Tensor& x) { return abs(x); }
Tensor square(const Tensor& x) { return is_float(x.dtype()) ? core::square(x) : core::mul(x, x); }
Tensor sqrt(const Tensor& x) { return core::sqrt(cast(x, float_of(x.dtype()))); }
Tensor exp(const Tensor& x) { return core::exp(cast(x, float_of(x.dtype()))); }
Tensor log(const Tensor& x) { return core::log(cast(x, float_of(x.dtype()))); }

// The element-wise math functions: integers and bools computed as float32, as Keras's (int64 too: floatx()).
#define OSPREY_KERAS_FLOAT_FN(name, core_fn) \
  Tensor name(const Tensor& x) { return core::core_fn(cast(x, float_of(x.dtype()))); }
OSPREY_KERAS_FLOAT_FN(sin, sin)
OSPREY_KERAS_FLOAT_FN(cos, cos)
OSPREY_KERAS_FLOAT_FN(tan, tan)
OSPREY_KERAS_FLOAT_FN(arcsin, asin)
OSPREY_KERAS_FLOAT_FN(arccos, acos)
OSPREY_KERAS_FLOAT_FN(arctan, atan)
OSPREY_KERAS_FLOAT_FN(sinh, sinh)
OSPREY_KERAS_FLOAT_FN(cosh, cosh)
OSPREY_KERAS_FLOAT_FN(tanh, tanh)
OSPREY_KERAS_FLOAT_FN(arcsinh, asinh)
OSPREY_KERAS_FLOAT_FN(arccosh, acosh)
OSPREY_KERAS_FLOAT_FN(arctanh, atanh)
OSPREY_KERAS_FLOAT_FN(floor, floor)
OSPREY_KERAS_FLOAT_FN(ceil, ceil)
OSPREY_KERAS_FLOAT_FN(log1p, log1p)
OSPREY_KERAS_FLOAT_FN(expm1, expm1)
OSPREY_KERAS_FLOAT_FN(erf, erf)
#undef OSPREY_KERAS_FLOAT_FN
Tensor log2(const Tensor& x) {
  const Tensor f = cast(x, float_of(x.dtype()));
  return core::div(core::log(f), core::log(Tensor::scalar(2.0, f.dtype())));
}
Tensor log10(const Tensor& x) {
  const Tensor f = cast(x, float_of(x.dtype()));
  return core::div(core::log(f), core::log(Tensor::scalar(10.0, f.dtype())));
}
Tensor reciprocal(const Tensor& x) {
  const Tensor f = cast(x, float_of(x.dtype()));
  return core::div(Tensor::scalar(1.0, f.dtype()), f);
}
Tensor arctan2(const TensorLike& a, const TensorLike& b) {
  const DType t = float_of(result_type(a, b));
  const Tensor y = a.as_tensor(t), x = b.as_tensor(t);
  const Tensor zero = Tensor::scalar(0.0, t), one = Tensor::scalar(1.0, t), pi = Tensor::scalar(M_PI, t);
  // Signs with signed zeros (1/-0 = -inf), as NumPy's arctan2(-0., -1.) = -π.
  auto negative = [&](const Tensor& v) { return core::compare(core::div(one, v), zero, core::CompareKind::less); };
  const Tensor x_zero = core::compare(x, zero, core::CompareKind::equal);
  const Tensor x_neg = negative(x), y_neg = negative(y);
  // atan(y / x), shifted by ±π where x < 0 (x replaced by 1 where it is 0, so that no gradient is NaN there).
  const Tensor base = core::atan(core::div(y, core::where(x_zero, one, x)));
  const Tensor shifted = core::where(y_neg, core::sub(base, pi), core::add(base, pi));
  const Tensor off_axis = core::where(x_neg, shifted, base);
  // x == 0: ±π/2 by y's sign, written as ±π/2 - atan(x / y) for TensorFlow's gradient in x there (-1/y); y == 0
  // too: y itself (±0), or ±π where x is -0.
  const Tensor y_zero = core::compare(y, zero, core::CompareKind::equal);
  const Tensor origin = core::where(x_neg, core::where(y_neg, core::neg(pi), pi), y);
  const Tensor vertical = core::sub(core::mul(sign(y), Tensor::scalar(M_PI / 2, t)),
                                    core::atan(core::div(x, core::where(y_zero, one, y))));
  const Tensor on_axis = core::where(y_zero, origin, vertical);
  return core::where(x_zero, on_axis, off_axis);
}
Tensor hypot(const TensorLike& a, const TensorLike& b) {
  const DType t = float_of(result_type(a, b));
  const Tensor x = a.as_tensor(t), y = b.as_tensor(t);
  return core::sqrt(core::add(core::square(x), core::square(y)));
}
Tensor round(const Tensor& x, int decimals) {
  if (decimals == 0 && is_float(x.dtype())) return core::round(x);
  if (!is_float(x.dtype()) && decimals >= 0) return x;  // an integer has no digits after the point
  // x·10^d rounded, then divided back (integers with d < 0 through float32, cast back as Keras).
  const Tensor f = cast(x, float_of(x.dtype()));
  const Tensor factor = Tensor::scalar(std::pow(10.0, decimals), f.dtype());
  const Tensor r = core::div(core::round(core::mul(f, factor)), factor);
  return is_float(x.dtype()) ? r : cast(r, x.dtype());
}
Tensor sign(const Tensor& x) {
  const Tensor zero = Tensor::scalar(0, x.dtype());
  const Tensor pos = core::cast(core::compare(x, zero, core::CompareKind::greater), x.dtype());
  const Tensor neg = core::cast(core::compare(x, zero, core::CompareKind::less), x.dtype());
  return core::sub(pos, neg);  // no gradient flows (as tf.sign's is zero)
}
Tensor clip(const Tensor& x, const TensorLike& x_min, const TensorLike& x_max) {
  const DType t = x.dtype() == DType::bool_ ? DType::int32 : x.dtype();
  return core::minimum(core::maximum(cast(x, t), x_min.as_tensor(t)), x_max.as_tensor(t));
}
Tensor where(const TensorLike& condition, const TensorLike& x1, const TensorLike& x2) {
  auto [a, b] = promoted(x1, x2);
  return core::where(condition.as_tensor(DType::bool_), a, b);
}

Tensor equal(const TensorLike& a, const TensorLike& b) { return compare(a, b, core::CompareKind::equal); }
Tensor not_equal(const TensorLike& a, const TensorLike& b) { return compare(a, b, core::CompareKind::not_equal); }
Tensor less(const TensorLike& a, const TensorLike& b) { return compare(a, b, core::CompareKind::less); }
Tensor less_equal(const TensorLike& a, const TensorLike& b) { return compare(a, b, core::CompareKind::less_equal); }
Tensor greater(const TensorLike& a, const TensorLike& b) { return compare(a, b, core::CompareKind::greater); }
Tensor greater_equal(const TensorLike& a, const TensorLike& b) {
  return compare(a, b, core::CompareKind::greater_equal);
}
Tensor logical_and(const TensorLike& a, const TensorLike& b) {
  return core::compare(a.as_tensor(DType::bool_), b.as_tensor(DType::bool_), core::CompareKind::logical_and);
}
Tensor logical_or(const TensorLike& a, const TensorLike& b) {
  return core::compare(a.as_tensor(DType::bool_), b.as_tensor(DType::bool_), core::CompareKind::logical_or);
}
Tensor logical_xor(const TensorLike& a, const TensorLike& b) {
  return core::compare(a.as_tensor(DType::bool_), b.as_tensor(DType::bool_), core::CompareKind::logical_xor);
}
Tensor logical_not(const Tensor& x) {
  return core::compare(cast(x, DType::bool_), Tensor::scalar(0, DType::bool_), core::CompareKind::equal);
}

Tensor sum(const Tensor& x, const Axes& axis, bool keepdims) {
  return core::reduce_axes(x, core::ReduceOp::sum, axes_of(axis), keepdims);
}
Tensor mean(const Tensor& x, const Axes& axis, bool keepdims) {
  const Tensor xf = cast(x, float_of(x.dtype()));
  const Tensor s = core::reduce_axes(xf, core::ReduceOp::sum, axes_of(axis), keepdims);
  const int64_t n = s.num_elements() ? xf.num_elements() / s.num_elements() : 0;
  return core::div(s, Tensor::scalar(static_cast<double>(n), xf.dtype()));  // 0/0 = NaN for an empty axis
}
Tensor max(const Tensor& x, const Axes& axis, bool keepdims) {
  if (x.dtype() == DType::bool_) return any(x, axis, keepdims);
  return core::reduce_axes(x, core::ReduceOp::max, axes_of(axis), keepdims);
}
Tensor min(const Tensor& x, const Axes& axis, bool keepdims) {
  if (x.dtype() == DType::bool_) return all(x, axis, keepdims);
  return core::reduce_axes(x, core::ReduceOp::min, axes_of(axis), keepdims);
}
Tensor prod(const Tensor& x, const Axes& axis, bool keepdims) {
  return core::reduce_axes(x, core::ReduceOp::prod, axes_of(axis), keepdims);
}
Tensor any(const Tensor& x, const Axes& axis, bool keepdims) {
  return core::reduce_axes(x, core::ReduceOp::any, axes_of(axis), keepdims);
}
Tensor all(const Tensor& x, const Axes& axis, bool keepdims) {
  return core::reduce_axes(x, core::ReduceOp::all, axes_of(axis), keepdims);
}
Tensor logsumexp(const Tensor& x_in, const Axes& axis, bool keepdims) {
  const Tensor x = cast(x_in, float_of(x_in.dtype()));
  // The maximum, as a constant (no gradient flows through it; the result's gradient is the softmax), with
  // infinite maxima replaced by 0 (rows of -inf give -inf, not NaN).
  Tensor m = core::reduce_axes(stop_gradient(x), core::ReduceOp::max, axes_of(axis), true);
  const Tensor finite = core::compare(core::abs(m), Tensor::scalar(INFINITY, x.dtype()), core::CompareKind::less);
  m = core::where(finite, m, Tensor::scalar(0.0, x.dtype()));
  const Tensor s = core::reduce_axes(core::exp(core::sub(x, m)), core::ReduceOp::sum, axes_of(axis), keepdims);
  return core::add(core::log(s), keepdims ? m : core::reshape(m, s.shape()));
}
Tensor var(const Tensor& x_in, const Axes& axis, bool keepdims) {
  const Tensor x = cast(x_in, float_of(x_in.dtype()));
  const Tensor centred = core::sub(x, mean(x, axis, true));
  return mean(core::square(centred), axis, keepdims);
}
Tensor std(const Tensor& x, const Axes& axis, bool keepdims) { return core::sqrt(var(x, axis, keepdims)); }

Tensor argmax(const Tensor& x, std::optional<int> axis, bool keepdims) {
  if (!axis) {
    Tensor r = core::reduce_axes(x, core::ReduceOp::argmax, {}, false);
    return keepdims ? r.reshape(Shape(std::vector<int64_t>(static_cast<std::size_t>(x.shape().rank()), 1))) : r;
  }
  return core::reduce_axes(x, core::ReduceOp::argmax, {*axis}, keepdims);
}
Tensor argmin(const Tensor& x, std::optional<int> axis, bool keepdims) {
  if (!axis) {
    Tensor r = core::reduce_axes(x, core::ReduceOp::argmin, {}, false);
    return keepdims ? r.reshape(Shape(std::vector<int64_t>(static_cast<std::size_t>(x.shape().rank()), 1))) : r;
  }
  return core::reduce_axes(x, core::ReduceOp::argmin, {*axis}, keepdims);
}
Tensor cumsum(const Tensor& x, std::optional<int> axis) {
  if (!axis) return core::cumulative(core::reshape(x, {x.num_elements()}), 0, false);
  return core::cumulative(x, *axis, false);
}
Tensor cumprod(const Tensor& x, std::optional<int> axis) {
  if (!axis) return core::cumulative(core::reshape(x, {x.num_elements()}), 0, true);
  return core::cumulative(x, *axis, true);
}

}  // namespace osprey::keras::ops
