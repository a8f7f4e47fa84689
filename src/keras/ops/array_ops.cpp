// keras::ops's array constructors and rearrangements (eye, full, linspace, tril/triu, flip, roll, swapaxes,
// moveaxis, diagonal, diag), NaN/inf tests, and the contractions on top of matmul (tensordot, dot, inner, outer,
// trace): compositions of osprey::ops, so each has those ops' CPU and CUDA kernels and gradients.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;

namespace {

using detail::floating;
using detail::index_vector;
using detail::normalized;

// The bool mask (rows, cols) of the elements with col - row >= k (upper) or <= k (lower).
Tensor band(int64_t rows, int64_t cols, int64_t k, bool upper) {
  std::vector<float> m(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) m[static_cast<std::size_t>(r * cols + c)] = (upper ? c - r >= k : c - r <= k);
  }
  return core::cast(Tensor::from_vector(m, {rows, cols}), DType::bool_);
}

Tensor triangle(const Tensor& x, int64_t k, bool upper, const char* op) {
  if (x.shape().rank() < 2) {
    throw InvalidArgumentError(fmt::format("{}: a tensor of rank >= 2 (the last two axes are the matrix), got shape {}",
                                           op, x.shape().to_string()));
  }
  return core::where(band(x.shape()[-2], x.shape()[-1], k, upper), x, Tensor::scalar(0, x.dtype()));
}

}  // namespace

Tensor eye(int64_t n, std::optional<int64_t> m, int64_t k, DType dtype) {
  const int64_t cols = m ? *m : n;
  if (n < 0 || cols < 0) throw InvalidArgumentError(fmt::format("eye: negative size ({}, {})", n, cols));
  std::vector<float> v(static_cast<std::size_t>(n * cols), 0.f);
  for (int64_t r = 0; r < n; ++r) {
    if (r + k >= 0 && r + k < cols) v[static_cast<std::size_t>(r * cols + r + k)] = 1.f;
  }
  return core::cast(Tensor::from_vector(v, {n, cols}), dtype);
}
Tensor identity(int64_t n, DType dtype) { return eye(n, std::nullopt, 0, dtype); }

Tensor full(const std::vector<int64_t>& shape, const TensorLike& fill_value, std::optional<DType> dtype) {
  // Keras's default is floatx() whatever the value (ops.full((2,), 7) is float32).
  return core::broadcast_to(fill_value.as_tensor(dtype ? *dtype : DType::float32), Shape(shape));
}
Tensor full_like(const Tensor& x, const TensorLike& fill_value, std::optional<DType> dtype) {
  return full(x.shape().dims_vector(), fill_value, dtype ? *dtype : x.dtype());
}

Tensor linspace(double start, double stop, int64_t num, bool endpoint, DType dtype) {
  if (num < 0) throw ValueError(fmt::format("linspace: num must be >= 0, got {}", num));
  const int64_t div = endpoint ? num - 1 : num;
  const double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  std::vector<double> v(static_cast<std::size_t>(num));
  for (int64_t i = 0; i < num; ++i) v[static_cast<std::size_t>(i)] = start + static_cast<double>(i) * step;
  if (endpoint && num > 1) v.back() = stop;
  return core::cast(Tensor::from_vector(v, {num}), dtype);
}

Tensor tril(const Tensor& x, int64_t k) { return triangle(x, k, false, "tril"); }
Tensor triu(const Tensor& x, int64_t k) { return triangle(x, k, true, "triu"); }

Tensor flip(const Tensor& x, const Axes& axis) {
  Tensor out = x;
  for (int a : detail::resolved_axes(axis, x.shape().rank(), "flip")) {
    std::vector<int64_t> idx(static_cast<std::size_t>(x.shape()[a]));
    std::iota(idx.rbegin(), idx.rend(), 0);
    out = take(out, index_vector(idx), a);
  }
  return out;
}

Tensor roll(const Tensor& x, int64_t shift, std::optional<int> axis) {
  const Tensor flat = axis ? x : ravel(x);
  const int a = normalized(axis ? *axis : 0, flat.shape().rank(), "roll");
  const int64_t n = flat.shape()[a];
  if (n == 0) return x;
  std::vector<int64_t> idx(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<std::size_t>(i)] = ((i - shift) % n + n) % n;
  const Tensor rolled = take(flat, index_vector(idx), a);
  return axis ? rolled : core::reshape(rolled, x.shape());
}

Tensor swapaxes(const Tensor& x, int axis1, int axis2) {
  const int r = x.shape().rank();
  std::vector<int> perm(static_cast<std::size_t>(r));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<std::size_t>(normalized(axis1, r, "swapaxes"))],
            perm[static_cast<std::size_t>(normalized(axis2, r, "swapaxes"))]);
  return transpose(x, perm);
}

Tensor moveaxis(const Tensor& x, const std::vector<int>& source, const std::vector<int>& destination) {
  const int r = x.shape().rank();
  if (source.size() != destination.size()) {
    throw InvalidArgumentError(fmt::format("moveaxis: {} source axes and {} destinations; they must pair up",
                                           source.size(), destination.size()));
  }
  std::vector<int> src, dst, perm(static_cast<std::size_t>(r), -1);
  for (std::size_t i = 0; i < source.size(); ++i) {
    src.push_back(normalized(source[i], r, "moveaxis"));
    dst.push_back(normalized(destination[i], r, "moveaxis"));
  }
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (std::count(src.begin(), src.end(), src[i]) > 1 || std::count(dst.begin(), dst.end(), dst[i]) > 1) {
      throw InvalidArgumentError("moveaxis: repeated axes");
    }
    perm[static_cast<std::size_t>(dst[i])] = src[i];
  }
  int next = 0;  // the other axes in their order, into the free places
  for (int& p : perm) {
    if (p >= 0) continue;
    while (std::find(src.begin(), src.end(), next) != src.end()) ++next;
    p = next++;
  }
  return transpose(x, perm);
}
Tensor moveaxis(const Tensor& x, int source, int destination) {
  return moveaxis(x, std::vector<int>{source}, std::vector<int>{destination});
}

Tensor isnan(const Tensor& x) {
  if (!is_floating(x.dtype())) return core::broadcast_to(Tensor::scalar(0, DType::bool_), x.shape());
  return core::compare(x, x, core::CompareKind::not_equal);
}
Tensor isinf(const Tensor& x) {
  if (!is_floating(x.dtype())) return core::broadcast_to(Tensor::scalar(0, DType::bool_), x.shape());
  return core::compare(core::abs(x), Tensor::scalar(INFINITY, x.dtype()), core::CompareKind::equal);
}
Tensor isfinite(const Tensor& x) {
  return core::compare(core::compare(isnan(x), isinf(x), core::CompareKind::logical_or), Tensor::scalar(0, DType::bool_),
                       core::CompareKind::equal);
}
Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  if (!is_floating(x.dtype())) return x;
  const double big = x.dtype() == DType::float64   ? std::numeric_limits<double>::max()
                     : x.dtype() == DType::float16 ? 65504.0
                     : x.dtype() == DType::bfloat16 ? 3.3895313892515355e38
                                                    : static_cast<double>(std::numeric_limits<float>::max());
  const Tensor inf = Tensor::scalar(INFINITY, x.dtype());
  Tensor out = core::where(isnan(x), Tensor::scalar(nan, x.dtype()), x);
  out = core::where(core::compare(x, inf, core::CompareKind::equal), Tensor::scalar(posinf ? *posinf : big, x.dtype()), out);
  return core::where(core::compare(x, core::neg(inf), core::CompareKind::equal),
                     Tensor::scalar(neginf ? *neginf : -big, x.dtype()), out);
}

Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b) {
  if (axes_a.size() != axes_b.size()) {
    throw InvalidArgumentError(fmt::format("tensordot: {} axes of the first operand and {} of the second",
                                           axes_a.size(), axes_b.size()));
  }
  const int ra = a.shape().rank(), rb = b.shape().rank();
  std::vector<int> ca, cb, fa, fb;
  int64_t contracted = 1;
  for (std::size_t i = 0; i < axes_a.size(); ++i) {
    ca.push_back(normalized(axes_a[i], ra, "tensordot"));
    cb.push_back(normalized(axes_b[i], rb, "tensordot"));
    if (a.shape()[ca.back()] != b.shape()[cb.back()]) {
      throw InvalidArgumentError(fmt::format("tensordot: axis {} of {} ({}) and axis {} of {} ({}) differ", ca.back(),
                                             a.shape().to_string(), a.shape()[ca.back()], cb.back(),
                                             b.shape().to_string(), b.shape()[cb.back()]));
    }
    contracted *= a.shape()[ca.back()];
  }
  std::vector<int64_t> out_dims;
  int64_t free_a = 1, free_b = 1;
  for (int i = 0; i < ra; ++i) {
    if (std::find(ca.begin(), ca.end(), i) == ca.end()) fa.push_back(i), out_dims.push_back(a.shape()[i]), free_a *= a.shape()[i];
  }
  for (int i = 0; i < rb; ++i) {
    if (std::find(cb.begin(), cb.end(), i) == cb.end()) fb.push_back(i), out_dims.push_back(b.shape()[i]), free_b *= b.shape()[i];
  }
  std::vector<int> pa = fa, pb = cb;
  pa.insert(pa.end(), ca.begin(), ca.end());
  pb.insert(pb.end(), fb.begin(), fb.end());
  const Tensor ma = core::reshape(transpose(a, pa), {free_a, contracted});
  const Tensor mb = core::reshape(transpose(b, pb), {contracted, free_b});
  return core::reshape(matmul(ma, mb), Shape(out_dims));
}
Tensor tensordot(const Tensor& a, const Tensor& b, int axes) {
  if (axes < 0 || axes > a.shape().rank() || axes > b.shape().rank()) {
    throw InvalidArgumentError(fmt::format("tensordot: axes={} for operands of rank {} and {}", axes, a.shape().rank(),
                                           b.shape().rank()));
  }
  std::vector<int> xa, xb;
  for (int i = 0; i < axes; ++i) {
    xa.push_back(a.shape().rank() - axes + i);
    xb.push_back(i);
  }
  return tensordot(a, b, xa, xb);
}

Tensor dot(const Tensor& a, const Tensor& b) {
  if (a.shape().rank() == 0 || b.shape().rank() == 0) return multiply(a, b);
  if (b.shape().rank() == 1) return tensordot(a, b, {-1}, {0});
  return tensordot(a, b, {-1}, {-2});  // NumPy's dot: a's last axis with b's second-to-last
}
Tensor inner(const Tensor& a, const Tensor& b) {
  if (a.shape().rank() == 0 || b.shape().rank() == 0) return multiply(a, b);
  return tensordot(a, b, {-1}, {-1});
}
Tensor outer(const Tensor& a, const Tensor& b) {
  return multiply(core::reshape(a, {a.num_elements(), 1}), core::reshape(b, {1, b.num_elements()}));
}

Tensor diagonal(const Tensor& x, int64_t offset, int axis1, int axis2) {
  const int r = x.shape().rank();
  if (r < 2) throw InvalidArgumentError(fmt::format("diagonal: a tensor of rank >= 2, got shape {}", x.shape().to_string()));
  const int a1 = normalized(axis1, r, "diagonal"), a2 = normalized(axis2, r, "diagonal");
  if (a1 == a2) throw InvalidArgumentError(fmt::format("diagonal: axis1 and axis2 are both {}", a1));
  const Tensor moved = moveaxis(x, std::vector<int>{a1, a2}, std::vector<int>{-2, -1});
  const int64_t m = moved.shape()[-2], n = moved.shape()[-1];
  const int64_t len = std::max<int64_t>(0, offset >= 0 ? std::min(m, n - offset) : std::min(m + offset, n));
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < len; ++i) idx.push_back(offset >= 0 ? i * n + i + offset : (i - offset) * n + i);
  std::vector<int64_t> lead = moved.shape().dims_vector();
  lead.resize(lead.size() - 2);
  std::vector<int64_t> flat_dims = lead;
  flat_dims.push_back(m * n);
  return take(core::reshape(moved, Shape(flat_dims)), index_vector(idx), -1);
}
Tensor trace(const Tensor& x, int64_t offset, int axis1, int axis2) {
  return sum(diagonal(x, offset, axis1, axis2), -1);
}
Tensor diag(const Tensor& x, int64_t k) {
  if (x.shape().rank() == 2) return diagonal(x, k, 0, 1);
  if (x.shape().rank() != 1) {
    throw InvalidArgumentError(fmt::format("diag: a 1-D or 2-D tensor, got shape {}", x.shape().to_string()));
  }
  // x on the k-th diagonal of an n×n matrix: each element gathered from x, or from the zero appended to it.
  const int64_t len = x.shape()[0], n = len + std::abs(k);
  const Tensor padded = core::concat({x, Tensor::zeros({1}, x.dtype())}, 0);
  std::vector<int64_t> idx(static_cast<std::size_t>(n * n), len);
  for (int64_t i = 0; i < len; ++i) {
    const int64_t r = k >= 0 ? i : i - k, c = k >= 0 ? i + k : i;
    idx[static_cast<std::size_t>(r * n + c)] = i;
  }
  return core::reshape(take(padded, index_vector(idx), 0), {n, n});
}

Tensor count_nonzero(const Tensor& x, const Axes& axis) {
  const Tensor nz = core::compare(x, Tensor::scalar(0, x.dtype()), core::CompareKind::not_equal);
  return sum(core::cast(nz, DType::int32), axis);
}

Tensor rsqrt(const Tensor& x) {
  const Tensor f = floating(x);
  return core::div(Tensor::scalar(1.0, f.dtype()), core::sqrt(f));
}

Tensor ravel(const Tensor& x) { return core::reshape(x, {x.num_elements()}); }

Tensor logaddexp(const TensorLike& a, const TensorLike& b) {
  const DType f = detail::float_of(result_type(a, b));
  const Tensor x = a.as_tensor(f), y = b.as_tensor(f);
  // max(x, y) + log(1 + exp(-|x - y|)), as Keras (x + y where the difference is NaN: two infinities alike).
  const Tensor d = core::sub(x, y);
  const Tensor stable = core::add(core::maximum(x, y), core::log1p(core::exp(core::neg(core::abs(d)))));
  return core::where(isnan(d), core::add(x, y), stable);
}

Tensor average(const Tensor& x_in, const Axes& axis, const std::optional<Tensor>& weights) {
  const Tensor x = floating(x_in);
  if (!weights) return mean(x, axis);
  Tensor w = cast(*weights, x.dtype());
  if (w.shape() != x.shape()) {  // 1-D weights along the one axis, as NumPy
    if (axis.all() || axis.axes().size() != 1 || w.shape().rank() != 1) {
      throw InvalidArgumentError(fmt::format("average: weights of shape {} for x of shape {}; give x's shape, or 1-D "
                                             "weights along one axis",
                                             w.shape().to_string(), x.shape().to_string()));
    }
    const int a = normalized(axis.axes()[0], x.shape().rank(), "average");
    if (w.shape()[0] != x.shape()[a]) {
      throw InvalidArgumentError(fmt::format("average: {} weights for axis {} of {} elements", w.shape()[0], a,
                                             x.shape()[a]));
    }
    std::vector<int64_t> dims(static_cast<std::size_t>(x.shape().rank()), 1);
    dims[static_cast<std::size_t>(a)] = w.shape()[0];
    w = core::reshape(w, Shape(dims));
  }
  return core::div(sum(core::mul(x, w), axis), sum(core::broadcast_to(w, x.shape()), axis));
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing) {
  if (indexing != "xy" && indexing != "ij") {
    throw ValueError(fmt::format("meshgrid: indexing must be 'xy' or 'ij', got '{}'", indexing));
  }
  std::vector<int64_t> dims;
  for (const auto& x : xs) dims.push_back(x.num_elements());
  if (indexing == "xy" && dims.size() >= 2) std::swap(dims[0], dims[1]);
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::size_t at = i;
    if (indexing == "xy" && xs.size() >= 2 && i < 2) at = 1 - i;  // x varies along columns, y along rows
    std::vector<int64_t> shape(dims.size(), 1);
    shape[at] = dims[at];
    out.push_back(core::broadcast_to(core::reshape(xs[i], Shape(shape)), Shape(dims)));
  }
  return out;
}

Tensor quantile(const Tensor& x_in, const std::vector<double>& q, const Axes& axis, const std::string& method,
                bool keepdims) {
  detail::check_quantiles(q, method, "quantile");
  const Tensor x = floating(x_in);
  std::vector<int> axes;
  const Tensor rows = detail::quantile_rows(x, axis, "quantile", axes);
  const int64_t n = rows.shape()[rows.shape().rank() - 1];
  const Tensor sorted = sort(rows, -1);
  std::vector<int64_t> lo, hi;
  std::vector<double> frac;
  for (double v : q) {
    const double at = v * static_cast<double>(n - 1);
    int64_t l = static_cast<int64_t>(std::floor(at)), h = static_cast<int64_t>(std::ceil(at));
    if (method == "nearest") l = h = static_cast<int64_t>(std::nearbyint(at));  // halves to even
    if (method == "lower") h = l;
    if (method == "higher") l = h;
    lo.push_back(l);
    hi.push_back(h);
    frac.push_back(method == "midpoint" ? (l == h ? 0.0 : 0.5) : at - static_cast<double>(l));
  }
  const int64_t k = static_cast<int64_t>(q.size());
  const Tensor a = take(sorted, index_vector(lo), -1), b = take(sorted, index_vector(hi), -1);
  Tensor weights = core::cast(Tensor::from_vector(frac, {k}), x.dtype());
  if (method == "lower" || method == "higher" || method == "nearest") weights = core::mul(weights, Tensor::scalar(0, x.dtype()));
  const Tensor out = core::add(a, core::mul(core::sub(b, a), weights));  // (..., k)
  return detail::quantiles_first(out, x.shape(), axes, keepdims);
}

Tensor quantile(const Tensor& x, double q, const Axes& axis, const std::string& method, bool keepdims) {
  return detail::only_quantile(quantile(x, std::vector<double>{q}, axis, method, keepdims));
}

Tensor median(const Tensor& x, const Axes& axis, bool keepdims) { return quantile(x, 0.5, axis, "linear", keepdims); }

}  // namespace osprey::keras::ops
