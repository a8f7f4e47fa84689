// Still more of keras::ops: NumPy's window functions (computed on the host: they take only a length), the
// NaN-aware fmax/fmin, scans and arg-reductions, geomspace, the sparse activations sparse_sigmoid and sparsemax,
// depth_to_space/space_to_depth, corrcoef, cdist, ldexp, histogram, unravel_index and extract_sequences. The tensor ones are compositions of osprey::ops (every backend; differentiable through them), written
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
  const Tensor filled = detail::nan_filled(x, max ? -INFINITY : INFINITY);
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

// Blocks of b×b pixels to and from channels (TensorFlow's order: channel (i·b + j)·C' + c of a block holds its
// pixel (i, j)), on channels-last images; channels_first ones are transposed around it.
static Tensor rearranged_blocks(const Tensor& x_in, int64_t b, const std::string& data_format, bool to_space) {
  const char* op = to_space ? "depth_to_space" : "space_to_depth";
  const bool first = data_format == "channels_first";
  if (x_in.shape().rank() != 4 || b < 2 || (!first && data_format != "channels_last")) {
    throw ValueError(fmt::format("{}: expects a 4-D input, block_size >= 2 and data_format 'channels_last' or "
                                 "'channels_first'; got shape {}, block_size {}, '{}'",
                                 op, x_in.shape().to_string(), b, data_format));
  }
  const Tensor x = first ? transpose(x_in, std::vector<int>{0, 2, 3, 1}) : x_in;
  const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  if (to_space ? c % (b * b) != 0 : (h % b != 0 || w % b != 0)) {
    throw ValueError(fmt::format("{}: {} must divide by block_size {} (input {})", op,
                                 to_space ? "the channels" : "height and width", to_space ? b * b : b,
                                 x.shape().to_string()));
  }
  const std::vector<int> swap{0, 1, 3, 2, 4, 5};  // its own inverse
  const Tensor y = to_space ? reshape(transpose(reshape(x, {n, h, w, b, b, c / (b * b)}), swap), {n, h * b, w * b, c / (b * b)})
                            : reshape(transpose(reshape(x, {n, h / b, b, w / b, b, c}), swap), {n, h / b, w / b, c * b * b});
  return first ? transpose(y, std::vector<int>{0, 3, 1, 2}) : y;
}
Tensor depth_to_space(const Tensor& x, int64_t block_size, const std::string& data_format) {
  return rearranged_blocks(x, block_size, data_format, true);
}
Tensor space_to_depth(const Tensor& x, int64_t block_size, const std::string& data_format) {
  return rearranged_blocks(x, block_size, data_format, false);
}

// Keras's TensorFlow backend: the covariance of the rows over the last axis (N - 1), divided by the outer product
// of their standard deviations, clipped to [-1, 1].
Tensor corrcoef(const Tensor& x_in) {
  const Tensor x = detail::floating(x_in);
  if (x.shape().rank() == 0) return Tensor::scalar(NAN, DType::float32);
  const Tensor centered = subtract(x, mean(x, -1, true));
  const Tensor rows = x.shape().rank() == 1 ? reshape(centered, {1, x.shape()[0]}) : centered;
  const Tensor cov = divide(matmul(rows, transpose(rows)), static_cast<double>(x.shape()[-1] - 1));
  const Tensor std = sqrt(diagonal(cov));
  const Tensor corr = clip(divide(cov, outer(std, std)), -1.0, 1.0);
  return x.shape().rank() == 1 ? reshape(corr, {}) : corr;
}

Tensor cdist(const Tensor& x, const Tensor& y) {
  if (x.shape().rank() < 2 || y.shape().rank() < 2 || x.shape()[-1] != y.shape()[-1]) {
    throw ValueError(fmt::format("cdist: inputs must have rank >= 2 and one last dimension; got {} and {}",
                                 x.shape().to_string(), y.shape().to_string()));
  }
  return sqrt(sum(square(subtract(expand_dims(x, -2), expand_dims(y, -3))), -1));
}

Tensor ldexp(const Tensor& x1, const Tensor& x2) {
  detail::check_integer(x2, "ldexp", "the exponents x2");
  const Tensor x = detail::floating(x1);
  const Tensor scaled = multiply(x, power(scalar(2.0, x), cast(x2, x.dtype())));
  return where(logical_or(isinf(x), equal(x, 0.0)), x, scaled);
}

Tensor nextafter(const TensorLike& x1, const TensorLike& x2) {
  // Keras's TensorFlow backend: the step in float64, the result in the operands' float type (so float32 operands
  // mostly give x1 back: a float64 step is below float32's resolution).
  const DType t = detail::float_of(result_type(x1, x2));
  return cast(core::nextafter(x1.as_tensor(DType::float64), x2.as_tensor(DType::float64)), t);
}

// Keras's TensorFlow backend: the values in [min, max] counted into `bins` equal bins (a value on an inner edge in
// the bin above it, max in the last); the edges in x's dtype.
std::vector<Tensor> histogram(const Tensor& x_in, int64_t bins, std::optional<std::pair<double, double>> range) {
  if (bins < 1 || x_in.shape().rank() != 1) {
    throw ValueError(fmt::format("histogram: expects a 1-D input and bins >= 1; got shape {} and bins {}",
                                 x_in.shape().to_string(), bins));
  }
  const Tensor x = detail::floating(x_in);
  const Tensor lo = range ? scalar(range->first, x) : min(x), hi = range ? scalar(range->second, x) : max(x);
  const Tensor i = cast(arange(0.0, static_cast<double>(bins) + 1.0), x.dtype());
  const Tensor edges = where(equal(i, static_cast<double>(bins)), hi,  // the last edge exactly max
                             add(lo, multiply(subtract(hi, lo), divide(i, static_cast<double>(bins)))));
  const Tensor inside = cast(logical_and(greater_equal(x, lo), less_equal(x, hi)), x.dtype());
  const Tensor bin = searchsorted(slice(edges, {1}, {bins - 1}), x, "right");
  const Tensor counts = sum(multiply(one_hot(bin, bins, -1, x.dtype()), expand_dims(inside, -1)), 0);
  return {stop_gradient(counts), edges};
}

// NumPy's: the coordinates of flat indices into `shape`, one tensor per axis, the last axis varying fastest.
std::vector<Tensor> unravel_index(const Tensor& indices, const std::vector<int64_t>& shape) {
  detail::check_integer(indices, "unravel_index", "indices");
  std::vector<Tensor> coords(shape.size());
  Tensor rest = indices;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] < 1) throw ValueError(fmt::format("unravel_index: shape dimensions must be >= 1; got {}", shape[i]));
    const Tensor dim = Tensor::scalar(static_cast<double>(shape[i]), indices.dtype());
    coords[i] = mod(rest, dim);
    rest = floor_divide(rest, dim);
  }
  return coords;
}

// Frames of sequence_length along the last axis every sequence_stride (tf.signal.frame without padding).
Tensor extract_sequences(const Tensor& x, int64_t sequence_length, int64_t sequence_stride) {
  const int64_t n = x.shape().rank() ? x.shape()[-1] : 0;
  if (x.shape().rank() < 1 || sequence_length < 1 || sequence_stride < 1 || sequence_length > n) {
    throw ValueError(fmt::format("extract_sequences: expects rank >= 1, 1 <= sequence_length <= the last axis and "
                                 "sequence_stride >= 1; got shape {}, {}, {}",
                                 x.shape().to_string(), sequence_length, sequence_stride));
  }
  return osprey::ops::frames(x, sequence_length, sequence_stride);
}

}  // namespace osprey::keras::ops
