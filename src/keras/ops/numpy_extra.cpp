// Still more of keras::ops: NumPy's window functions (computed on the host: they take only a length), the
// NaN-aware fmax/fmin, scans and arg-reductions, geomspace, and the sparse activations sparse_sigmoid and
// sparsemax. The tensor ones are compositions of osprey::ops (every backend; differentiable through them), written
// as Keras's TensorFlow backend writes them.
#include <cmath>
#include <functional>
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

// A window of m points, f(n, m - 1) for n in [0, m), computed in float64 and given as float32; one point is [1].
Tensor window(int64_t m, const char* op, const std::function<double(double, double)>& f) {
  if (m < 0) throw ValueError(fmt::format("{}: the number of points must be >= 0; got {}", op, m));
  std::vector<float> v(static_cast<std::size_t>(m));
  for (int64_t n = 0; n < m; ++n) {
    v[static_cast<std::size_t>(n)] = m == 1 ? 1.f : static_cast<float>(f(static_cast<double>(n), static_cast<double>(m - 1)));
  }
  return Tensor::from_vector(v, {m});
}

// The modified Bessel function of the first kind, order 0 (its power series; every term positive).
double bessel_i0(double x) {
  const double q = x * x / 4.0;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 500 && term > sum * 1e-17; ++k) {
    term *= q / (static_cast<double>(k) * k);
    sum += term;
  }
  return sum;
}

// fmax/fmin: where exactly one operand is NaN, the other one.
Tensor nan_ignoring(const TensorLike& a, const TensorLike& b, bool max) {
  const DType t = result_type(a, b);
  const Tensor x1 = convert_to_tensor(a, t), x2 = convert_to_tensor(b, t);
  Tensor res = max ? maximum(x1, x2) : minimum(x1, x2);
  if (!is_floating(t)) return res;
  const Tensor nan1 = isnan(x1), nan2 = isnan(x2);
  res = where(logical_and(nan1, logical_not(nan2)), x2, res);
  return where(logical_and(nan2, logical_not(nan1)), x1, res);
}

// nanargmax/nanargmin: the arg-reduction with NaNs as -inf/+inf, and -1 where every element is NaN.
Tensor nan_arg(const Tensor& x, std::optional<int> axis, bool keepdims, bool max) {
  if (!is_floating(x.dtype())) return max ? argmax(x, axis, keepdims) : argmin(x, axis, keepdims);
  const Tensor nan = isnan(x);
  const Tensor filled = core::where(nan, scalar(max ? -INFINITY : INFINITY, x), x);
  const Tensor arg = max ? argmax(filled, axis, keepdims) : argmin(filled, axis, keepdims);
  const Axes axes = axis ? Axes(*axis) : Axes();
  return where(all(nan, axes, keepdims), Tensor::scalar(-1, DType::int32), arg);
}

}  // namespace

Tensor bartlett(int64_t m) {
  return window(m, "bartlett", [](double n, double d) { return n <= d / 2 ? 2.0 * n / d : 2.0 - 2.0 * n / d; });
}
Tensor hamming(int64_t m) {
  return window(m, "hamming", [](double n, double d) { return 0.54 - 0.46 * std::cos(2.0 * M_PI * n / d); });
}
Tensor hanning(int64_t m) {
  return window(m, "hanning", [](double n, double d) { return 0.5 - 0.5 * std::cos(2.0 * M_PI * n / d); });
}
Tensor blackman(int64_t m) {
  return window(m, "blackman", [](double n, double d) {
    return 0.42 - 0.5 * std::cos(2.0 * M_PI * n / d) + 0.08 * std::cos(4.0 * M_PI * n / d);
  });
}
Tensor kaiser(int64_t m, double beta) {
  return window(m, "kaiser", [beta](double n, double d) {
    const double r = (n - d / 2) / (d / 2);
    return bessel_i0(beta * std::sqrt(std::max(0.0, 1.0 - r * r))) / bessel_i0(beta);
  });
}

Tensor fmax(const TensorLike& x1, const TensorLike& x2) { return nan_ignoring(x1, x2, true); }
Tensor fmin(const TensorLike& x1, const TensorLike& x2) { return nan_ignoring(x1, x2, false); }

Tensor nancumsum(const Tensor& x, std::optional<int> axis) { return cumsum(nan_to_num(x), axis); }
Tensor nancumprod(const Tensor& x, std::optional<int> axis) { return cumprod(nan_to_num(x, 1.0), axis); }

Tensor nanargmax(const Tensor& x, std::optional<int> axis, bool keepdims) { return nan_arg(x, axis, keepdims, true); }
Tensor nanargmin(const Tensor& x, std::optional<int> axis, bool keepdims) { return nan_arg(x, axis, keepdims, false); }

Tensor geomspace(double start, double stop, int64_t num, bool endpoint, DType dtype) {
  if (start == 0.0 || stop == 0.0 || (start < 0) != (stop < 0)) {
    throw ValueError(fmt::format("geomspace: start ({}) and stop ({}) must be non-zero and of one sign", start, stop));
  }
  const Tensor magnitudes = logspace(std::log10(std::abs(start)), std::log10(std::abs(stop)), num, endpoint, 10.0, dtype);
  return start < 0 ? negative(magnitudes) : magnitudes;
}

Tensor sparse_sigmoid(const Tensor& x_in) {
  const Tensor x = detail::floating(x_in);
  return where(less_equal(x, -1.0), scalar(0.0, x),
               where(greater_equal(x, 1.0), scalar(1.0, x), multiply(scalar(0.5, x), add(x, scalar(1.0, x)))));
}

// Keras's TensorFlow backend: the sorted logits' running sums find the support {k : 1 + k·z_(k) > Σ_{j≤k} z_(j)}
// and the threshold τ = (Σ_support z - 1) / |support|; the output is max(x - τ, 0).
Tensor sparsemax(const Tensor& x_in, int axis) {
  const Tensor x = detail::floating(x_in);
  const int r = x.shape().rank();
  const int a = detail::normalized(axis, r, "sparsemax");
  const Tensor sorted = negative(sort(negative(x), a));  // descending
  const Tensor running = cumsum(sorted, a);
  std::vector<int64_t> k_shape(static_cast<std::size_t>(r), 1);
  k_shape[static_cast<std::size_t>(a)] = x.shape()[a];
  const Tensor k = reshape(cast(arange(1.0, static_cast<double>(x.shape()[a]) + 1.0), x.dtype()), k_shape);
  const Tensor support = greater(subtract(sorted, divide(subtract(running, 1.0), k)), 0.0);
  const Tensor size = sum(cast(support, x.dtype()), a, true);
  const Tensor tau = divide(subtract(sum(where(support, running, 0.0), a, true), 1.0), size);
  return maximum(subtract(x, tau), 0.0);
}

}  // namespace osprey::keras::ops
