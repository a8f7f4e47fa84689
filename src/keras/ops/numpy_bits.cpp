// keras::ops on integers (bitwise ops, shifts, gcd, lcm: the IntegerBinary op), Bessel's I0, the NaN-ignoring
// quantiles, 1-D cross-correlation, argpartition and the complex-number functions of real tensors. All but the
// integer ones are compositions of osprey::ops (every backend; differentiable through them).
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;
using detail::scalar;

namespace {

// Both operands in their common dtype (Keras's promotion), then the integer op.
Tensor integer_op(const TensorLike& a, const TensorLike& b, core::IntegerKind kind) {
  const DType t = result_type(a, b);
  return core::integer_binary(convert_to_tensor(a, t), convert_to_tensor(b, t), kind);
}

// Abramowitz and Stegun 9.8.1 / 9.8.2: polynomials in (x / 3.75)^2 up to 3.75, e^|x| / sqrt|x| times one in
// 3.75 / |x| above (each branch fed values of its own range, so that neither makes infinities or NaNs).
Tensor bessel_i0(const Tensor& x) {
  const Tensor ax = absolute(x);
  auto poly = [&](const Tensor& t, std::initializer_list<double> c) {
    Tensor acc = scalar(*(c.end() - 1), t);
    for (auto it = c.end() - 1; it != c.begin();) acc = add(multiply(acc, t), scalar(*--it, t));
    return acc;
  };
  const Tensor small_x = minimum(ax, scalar(3.75, ax)), large_x = maximum(ax, scalar(3.75, ax));
  const Tensor ts = square(divide(small_x, scalar(3.75, ax)));
  const Tensor small = poly(ts, {1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813});
  const Tensor tl = divide(scalar(3.75, ax), large_x);
  const Tensor large = multiply(divide(exp(large_x), sqrt(large_x)),
                                poly(tl, {0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706,
                                          0.02635537, -0.01647633, 0.00392377}));
  return where(less_equal(ax, 3.75), small, large);
}

}  // namespace

Tensor bitwise_and(const TensorLike& x, const TensorLike& y) { return integer_op(x, y, core::IntegerKind::bitwise_and); }
Tensor bitwise_or(const TensorLike& x, const TensorLike& y) { return integer_op(x, y, core::IntegerKind::bitwise_or); }
Tensor bitwise_xor(const TensorLike& x, const TensorLike& y) { return integer_op(x, y, core::IntegerKind::bitwise_xor); }
Tensor bitwise_invert(const Tensor& x) {  // ~x = x ^ -1 (every bit set)
  return core::integer_binary(x, Tensor::scalar(-1.0, x.dtype()), core::IntegerKind::bitwise_xor);
}
Tensor bitwise_not(const Tensor& x) { return bitwise_invert(x); }
Tensor bitwise_left_shift(const TensorLike& x, const TensorLike& y) {
  return integer_op(x, y, core::IntegerKind::left_shift);
}
Tensor left_shift(const TensorLike& x, const TensorLike& y) { return bitwise_left_shift(x, y); }
Tensor bitwise_right_shift(const TensorLike& x, const TensorLike& y) {
  return integer_op(x, y, core::IntegerKind::right_shift);
}
Tensor right_shift(const TensorLike& x, const TensorLike& y) { return bitwise_right_shift(x, y); }
Tensor gcd(const TensorLike& x1, const TensorLike& x2) { return integer_op(x1, x2, core::IntegerKind::gcd); }
Tensor lcm(const TensorLike& x1, const TensorLike& x2) { return integer_op(x1, x2, core::IntegerKind::lcm); }

Tensor i0(const Tensor& x) { return bessel_i0(detail::floating(x)); }

Tensor nanquantile(const Tensor& x_in, const std::vector<double>& q, const Axes& axis, const std::string& method,
                   bool keepdims) {
  detail::check_quantiles(q, method, "nanquantile");
  const Tensor x = detail::floating(x_in);
  std::vector<int> axes;
  const Tensor rows = detail::quantile_rows(x, axis, "nanquantile", axes);
  const int64_t n = rows.shape()[rows.shape().rank() - 1];
  // NaNs sorted to the end as +inf; each slice's positions from its count of the others.
  const Tensor sorted = sort(detail::nan_filled(rows, INFINITY), -1);
  const Tensor count = sum(core::cast(logical_not(isnan(rows)), x.dtype()), -1, true);  // (..., 1)
  auto index = [&](const Tensor& i) { return core::cast(clip(i, 0.0, static_cast<double>(n - 1)), DType::int64); };
  std::vector<Tensor> per_q;
  for (double v : q) {
    const Tensor at = multiply(scalar(v, x), subtract(count, scalar(1.0, x)));
    Tensor lo = floor(at), hi = ceil(at);
    if (method == "nearest") lo = hi = round(at);  // halves to even
    if (method == "lower") hi = lo;
    if (method == "higher") lo = hi;
    Tensor frac = subtract(at, lo);
    if (method == "midpoint") frac = where(equal(lo, hi), scalar(0.0, x), scalar(0.5, x));
    const Tensor a = take_along_axis(sorted, index(lo), -1), b = take_along_axis(sorted, index(hi), -1);
    const Tensor value = method == "linear" || method == "midpoint" ? add(a, multiply(subtract(b, a), frac)) : a;
    per_q.push_back(where(equal(count, 0.0), scalar(NAN, x), value));  // (..., 1)
  }
  return detail::quantiles_first(concatenate(per_q, -1), x.shape(), axes, keepdims);
}

Tensor nanquantile(const Tensor& x, double q, const Axes& axis, const std::string& method, bool keepdims) {
  return detail::only_quantile(nanquantile(x, std::vector<double>{q}, axis, method, keepdims));
}

Tensor nanmedian(const Tensor& x, const Axes& axis, bool keepdims) { return nanquantile(x, 0.5, axis, "linear", keepdims); }

Tensor nanpercentile(const Tensor& x, double q, const Axes& axis, const std::string& method, bool keepdims) {
  if (!(q >= 0 && q <= 100)) throw InvalidArgumentError(fmt::format("nanpercentile: q must be in [0, 100]; got {}", q));
  return nanquantile(x, q / 100.0, axis, method, keepdims);
}

Tensor correlate(const Tensor& x1_in, const Tensor& x2_in, const std::string& mode) {
  if (mode != "valid" && mode != "same" && mode != "full") {
    throw ValueError(fmt::format("Invalid mode: '{}'. Mode must be one of: 'full', 'same', 'valid'.", mode));
  }
  if (x1_in.shape().rank() != 1 || x2_in.shape().rank() != 1) {
    throw ValueError(fmt::format("correlate: expects two 1-D sequences; got shapes {} and {}",
                                 x1_in.shape().to_string(), x2_in.shape().to_string()));
  }
  DType t = result_type(x1_in, x2_in);
  t = t == DType::int64 ? DType::float64 : is_floating(t) ? t : DType::float32;
  const Tensor x1 = core::cast(x1_in, t), x2 = core::cast(x2_in, t);
  const int64_t n = x1.shape()[0], m = x2.shape()[0];
  if (m == 0 || (mode == "valid" && m > n)) {
    throw InvalidArgumentError(fmt::format("correlate: in mode '{}' the second sequence ({} values) must be non-empty{}",
                                           mode, m, mode == "valid" ? fmt::format(" and no longer than the first ({})", n)
                                                                    : std::string()));
  }
  // Each output is a window of x1 (zero-padded by m - 1 on both sides outside "valid") dotted with x2.
  const Tensor padded = mode == "valid" ? x1 : pad(x1, {{m - 1, m - 1}});
  const Tensor windows = extract_sequences(padded, m, 1);  // (L, m)
  Tensor out = core::reshape(matmul(windows, core::reshape(x2, Shape({m, 1}))), Shape({windows.shape()[0]}));
  if (mode == "same") {
    const int64_t len = std::max(n, m), start = (n + m - 1 - len) / 2;
    out = slice(out, {start}, {len});
  }
  return out;
}

Tensor argpartition(const Tensor& x, int64_t kth, int axis) {
  const int r = x.shape().rank();
  if (r == 0) throw ValueError("argpartition: x must have at least one axis");
  const int ax = detail::normalized(axis, r, "argpartition");
  const Tensor moved = moveaxis(x, ax, -1);
  const int64_t n = moved.shape()[r - 1];
  if (n == 0) return core::cast(moved, DType::int32);
  const int64_t k = std::clamp<int64_t>(kth, 0, n - 1);
  // A stable ascending order: the first kth + 1 as they come, the rest reversed (largest first).
  const Tensor order = core::cast(argsort(moved, -1), DType::int32);
  std::vector<int64_t> start(static_cast<std::size_t>(r), 0), size = moved.shape().dims_vector();
  size.back() = k + 1;
  const Tensor low = slice(order, start, size);
  start.back() = k + 1;
  size.back() = n - k - 1;
  const Tensor high = flip(slice(order, start, size), std::vector<int>{-1});
  return moveaxis(concatenate({low, high}, -1), -1, ax);
}

Tensor real(const Tensor& x) { return x; }
Tensor imag(const Tensor& x) { return zeros_like(x); }
Tensor conj(const Tensor& x) { return x; }
Tensor conjugate(const Tensor& x) { return conj(x); }
Tensor angle(const Tensor& x_in) {
  const Tensor x = detail::floating(x_in);
  return where(less(x, 0.0), scalar(M_PI, x), scalar(0.0, x));
}
Tensor isreal(const Tensor& x) { return core::cast(ones_like(x), DType::bool_); }

}  // namespace osprey::keras::ops
