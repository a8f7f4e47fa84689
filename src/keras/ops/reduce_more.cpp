// More of keras::ops's reductions: NumPy's amax/amin/ptp, the NaN-ignoring reductions, percentile, diff and
// trapezoid, as compositions of osprey::ops (every backend; differentiable through them).
#include <cmath>

#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;
using detail::scalar;
using detail::floating;
using detail::nan_filled;

namespace {

// How many elements over axis are not NaN (x's float type).
Tensor count_numbers(const Tensor& x, const Axes& axis, bool keepdims) {
  const Tensor f = floating(x);
  return sum(cast(logical_not(isnan(f)), f.dtype()), axis, keepdims);
}

// r, NaN where every element over axis is NaN.
Tensor nan_where_none(const Tensor& r, const Tensor& x, const Axes& axis, bool keepdims) {
  if (!is_floating(x.dtype())) return r;
  const Tensor none = core::compare(count_numbers(x, axis, keepdims), scalar(0.0, r), core::CompareKind::equal);
  return core::where(none, scalar(NAN, r), r);
}

}  // namespace

Tensor amax(const Tensor& x, const Axes& axis, bool keepdims) { return max(x, axis, keepdims); }
Tensor amin(const Tensor& x, const Axes& axis, bool keepdims) { return min(x, axis, keepdims); }
Tensor ptp(const Tensor& x, const Axes& axis, bool keepdims) {
  return subtract(max(x, axis, keepdims), min(x, axis, keepdims));
}

Tensor nansum(const Tensor& x, const Axes& axis, bool keepdims) { return sum(nan_filled(x, 0.0), axis, keepdims); }
Tensor nanprod(const Tensor& x, const Axes& axis, bool keepdims) { return prod(nan_filled(x, 1.0), axis, keepdims); }
Tensor nanmean(const Tensor& x_in, const Axes& axis, bool keepdims) {
  const Tensor x = floating(x_in);
  return core::div(nansum(x, axis, keepdims), count_numbers(x, axis, keepdims));  // 0/0: NaN where none
}
Tensor nanmax(const Tensor& x, const Axes& axis, bool keepdims) {
  return nan_where_none(max(nan_filled(x, -INFINITY), axis, keepdims), x, axis, keepdims);
}
Tensor nanmin(const Tensor& x, const Axes& axis, bool keepdims) {
  return nan_where_none(min(nan_filled(x, INFINITY), axis, keepdims), x, axis, keepdims);
}
Tensor nanvar(const Tensor& x_in, const Axes& axis, bool keepdims) {
  const Tensor x = floating(x_in);
  // The NaNs' deviations set to 0 after the subtraction (so that no NaN reaches the gradient of the rest).
  const Tensor nan = isnan(x);
  const Tensor centred = core::where(nan, scalar(0.0, x), core::sub(x, nanmean(x, axis, true)));
  return core::div(sum(core::square(centred), axis, keepdims), count_numbers(x, axis, keepdims));
}
Tensor nanstd(const Tensor& x, const Axes& axis, bool keepdims) { return core::sqrt(nanvar(x, axis, keepdims)); }

Tensor percentile(const Tensor& x, double q, const Axes& axis, const std::string& method, bool keepdims) {
  if (!(q >= 0.0 && q <= 100.0)) {
    throw InvalidArgumentError(fmt::format("percentile: q must be in [0, 100]; got {}", q));
  }
  return quantile(x, q / 100.0, axis, method, keepdims);
}

Tensor diff(const Tensor& a, int n, int axis) {
  if (n < 0) throw ValueError(fmt::format("diff: order n must be non-negative; got {}", n));
  const int ax = detail::normalized(axis, a.shape().rank(), "diff");
  Tensor d = a;
  for (int i = 0; i < n && d.shape()[ax] > 0; ++i) {
    const int64_t len = d.shape()[ax];
    d = subtract(core::slice_axis(d, ax, 1, len - 1), core::slice_axis(d, ax, 0, len - 1));
  }
  return d;
}

Tensor trapezoid(const Tensor& y_in, const std::optional<Tensor>& x, double dx, int axis) {
  const Tensor y = floating(y_in);
  const int ax = detail::normalized(axis, y.shape().rank(), "trapezoid");
  const int64_t len = y.shape()[ax];
  if (len == 0) return sum(y, ax);
  const Tensor heights = core::mul(core::add(core::slice_axis(y, ax, 1, len - 1), core::slice_axis(y, ax, 0, len - 1)),
                                   scalar(0.5, y));
  Tensor widths = scalar(dx, y);
  if (x) {
    const Tensor xs = cast(*x, y.dtype());
    if (xs.shape().rank() == 1) {
      if (xs.shape()[0] != len) {
        throw InvalidArgumentError(fmt::format("trapezoid: x has {} points, y {} along axis {}", xs.shape()[0], len,
                                               axis));
      }
      std::vector<int64_t> dims(static_cast<std::size_t>(y.shape().rank()), 1);
      dims[static_cast<std::size_t>(ax)] = len - 1;
      widths = core::reshape(diff(xs), Shape(dims));
    } else {
      widths = diff(xs, 1, axis);
    }
  }
  return sum(core::mul(heights, widths), ax);
}

}  // namespace osprey::keras::ops
