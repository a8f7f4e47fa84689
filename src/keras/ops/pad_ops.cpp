// keras.ops.pad with every mode of Keras 3's JAX and NumPy backends (jnp.pad / np.pad): the axes padded one after
// the other, each axis's padding read from the tensor as padded so far (so a later axis's statistics include the
// earlier axes' padding, as NumPy's). Built from take, concat and reductions: differentiable in x where those are.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;

namespace {

using detail::index_vector;

constexpr const char* kModes[] = {"constant", "edge",      "linear_ramp", "maximum", "mean", "median",
                                  "minimum",  "reflect",   "symmetric",   "wrap",    "empty", "circular"};

bool known_mode(const std::string& mode) {
  for (const char* m : kModes) {
    if (mode == m) return true;
  }
  return false;
}

// The element of an axis of size n (> 0) that position p (0 the axis's first element; negative before it, n and up
// after it) copies: NumPy's edge, wrap, reflect (edge not repeated, period 2(n - 1)) and symmetric (edge repeated,
// period 2n), for any padding width.
int64_t source_index(const std::string& mode, int64_t p, int64_t n) {
  auto mod = [](int64_t a, int64_t m) { return ((a % m) + m) % m; };
  if (mode == "edge") return std::clamp<int64_t>(p, 0, n - 1);
  if (mode == "wrap" || mode == "circular") return mod(p, n);
  if (mode == "reflect") {
    if (n == 1) return 0;
    const int64_t m = mod(p, 2 * (n - 1));
    return m < n ? m : 2 * (n - 1) - m;
  }
  const int64_t m = mod(p, 2 * n);  // symmetric
  return m < n ? m : 2 * n - 1 - m;
}

// `slice` (1 long along `axis`) repeated `count` times along it.
Tensor repeated(const Tensor& slice, int axis, int64_t count) {
  std::vector<int64_t> d(slice.shape().dims().begin(), slice.shape().dims().end());
  d[static_cast<std::size_t>(axis)] = count;
  return core::broadcast_to(slice, Shape(d));
}

// maximum, minimum, mean or median of the axis (kept, 1 long), in x's dtype: integers' means and medians rounded
// half to even, as NumPy's np.around.
Tensor statistic(const Tensor& x, const std::string& mode, int axis) {
  if (mode == "maximum") return max(x, {axis}, true);
  if (mode == "minimum") return min(x, {axis}, true);
  const bool integral = !is_floating(x.dtype());
  const Tensor v = integral ? core::cast(x, DType::float32) : x;
  Tensor s = mode == "mean" ? mean(v, {axis}, true) : median(v, {axis}, true);
  if (integral) s = core::cast(round(s), x.dtype());
  return s.dtype() == x.dtype() ? s : core::cast(s, x.dtype());
}

// NumPy's linear_ramp to an end value of 0: `count` values along axis stepping from 0 toward the edge slice
// (endpoint excluded), outermost first before the axis (`before`), nearest the edge first after it. Integers floor
// the ramp, as np.linspace does for an integer dtype.
Tensor ramp(const Tensor& edge, int axis, int64_t count, bool before) {
  std::vector<int64_t> wd(static_cast<std::size_t>(edge.shape().rank()), 1);
  wd[static_cast<std::size_t>(axis)] = count;
  std::vector<float> steps(static_cast<std::size_t>(count));
  for (int64_t k = 0; k < count; ++k) steps[static_cast<std::size_t>(k)] = static_cast<float>(before ? k : count - 1 - k);
  const Tensor k = detail::where_is(Tensor::from_vector(steps, Shape(wd)), edge);
  if (is_floating(edge.dtype())) {
    return multiply(edge, core::cast(divide(k, static_cast<double>(count)), edge.dtype()));
  }
  // Integers: edge * k / count in float32 (the product exact below 2^24), floored.
  return core::cast(floor(divide(multiply(core::cast(edge, DType::float32), k), static_cast<double>(count))),
                    edge.dtype());
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width, const std::string& mode,
           double constant_values) {
  const int r = x.shape().rank();
  if (!known_mode(mode)) {
    throw ValueError(fmt::format("pad: mode '{}' is not one of constant, edge, linear_ramp, maximum, mean, median, "
                                 "minimum, reflect, symmetric, wrap, empty, circular",
                                 mode));
  }
  if (mode != "constant" && constant_values != 0) {
    throw ValueError(fmt::format("pad: constant_values ({}) is only used with mode 'constant', not '{}'",
                                 constant_values, mode));
  }
  if (pad_width.size() != 1 && pad_width.size() != static_cast<std::size_t>(r)) {
    throw InvalidArgumentError(fmt::format("pad: {} (before, after) pairs for a tensor of rank {} of shape {}; give "
                                           "one per axis or one for all",
                                           pad_width.size(), r, x.shape().to_string()));
  }
  Tensor out = x;
  for (int ax = 0; ax < r; ++ax) {
    const auto [before, after] = pad_width.size() == 1 ? pad_width[0] : pad_width[static_cast<std::size_t>(ax)];
    const int64_t n = x.shape()[ax];
    if (before < 0 || after < 0) {
      throw InvalidArgumentError(fmt::format("pad: negative padding ({}, {}) on axis {}", before, after, ax));
    }
    if (before == 0 && after == 0) continue;
    if (n == 0 && mode != "constant" && mode != "empty") {
      throw ValueError(fmt::format("pad: cannot extend the empty axis {} of shape {} with mode '{}' (only 'constant' "
                                   "and 'empty' pad an empty axis)",
                                   ax, x.shape().to_string(), mode));
    }
    Tensor stat;
    auto make = [&](int64_t count, bool is_before) -> Tensor {
      if (mode == "constant" || mode == "empty") {  // "empty" (values NumPy leaves unset) pads zeros, as JAX's
        std::vector<int64_t> d(out.shape().dims().begin(), out.shape().dims().end());
        d[static_cast<std::size_t>(ax)] = count;
        return detail::where_is(Tensor::full(Shape(d), mode == "constant" ? constant_values : 0.0, x.dtype()), out);
      }
      if (mode == "maximum" || mode == "minimum" || mode == "mean" || mode == "median") {
        if (!stat.defined()) stat = statistic(out, mode, ax);  // one for both sides
        return repeated(stat, ax, count);
      }
      if (mode == "linear_ramp") {
        return ramp(core::slice_axis(out, ax, is_before ? 0 : n - 1, 1), ax, count, is_before);
      }
      // Only the padding is gathered (a gather along an inner axis goes through a transposed copy).
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < count; ++i) idx.push_back(source_index(mode, is_before ? i - count : n + i, n));
      return take(out, index_vector(idx), ax);
    };
    std::vector<Tensor> parts;
    if (before) parts.push_back(make(before, true));
    parts.push_back(out);
    if (after) parts.push_back(make(after, false));
    out = core::concat(parts, ax);
  }
  return out;
}

}  // namespace osprey::keras::ops
