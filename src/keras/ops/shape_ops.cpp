// keras::ops's shape, indexing, linear-algebra and sorting ops, on the general ops of osprey::ops.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;

namespace {

using detail::index_vector;
using detail::normalized;

// The permutation that moves axis `from` to position `to`, the others in order.
std::vector<int> moved(int rank, int from, int to) {
  std::vector<int> perm;
  for (int i = 0; i < rank; ++i) {
    if (i != from) perm.push_back(i);
  }
  perm.insert(perm.begin() + to, from);
  return perm;
}

Tensor permuted(const Tensor& x, const std::vector<int>& perm) {
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int>(i);
  return identity ? x : core::transpose(x, perm);
}

std::vector<int> inverse(const std::vector<int>& perm) {
  std::vector<int> inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inv[static_cast<std::size_t>(perm[i])] = static_cast<int>(i);
  return inv;
}

// int64 indices with negative ones counted from the end of an axis of n.
Tensor wrapped_indices(const Tensor& indices, int64_t n) {
  if (indices.dtype() != DType::int32 && indices.dtype() != DType::int64) {
    throw InvalidArgumentError(fmt::format("indices must be int32 or int64, got {}", dtype_name(indices.dtype())));
  }
  const Tensor idx = indices.dtype() == DType::int64 ? indices : core::cast(indices, DType::int64);
  const Tensor zero = Tensor::scalar(0, DType::int64);
  return core::where(core::compare(idx, zero, core::CompareKind::less),
                     core::add(idx, Tensor::scalar(static_cast<double>(n), DType::int64)), idx);
}

std::vector<int64_t> dims_of(const Shape& s) { return s.dims_vector(); }

}  // namespace

Tensor reshape(const Tensor& x, const std::vector<int64_t>& new_shape) {
  std::vector<int64_t> dims = new_shape;
  int64_t known = 1;
  int unknown = -1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (unknown >= 0) throw InvalidArgumentError("reshape: only one dimension may be -1");
      unknown = static_cast<int>(i);
    } else if (dims[i] < 0) {
      throw InvalidArgumentError(fmt::format("reshape: dimension {} is {}; sizes are >= 0 (or one -1)", i, dims[i]));
    } else {
      known *= dims[i];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || x.num_elements() % known != 0) {
      throw InvalidArgumentError(fmt::format("Cannot reshape a tensor of shape {} ({} elements) into a shape with "
                                             "{} elements per -1",
                                             x.shape().to_string(), x.num_elements(), known));
    }
    dims[static_cast<std::size_t>(unknown)] = x.num_elements() / known;
  }
  return core::reshape(x, Shape(dims));
}

Tensor transpose(const Tensor& x, std::optional<std::vector<int>> axes) {
  const int r = x.shape().rank();
  std::vector<int> perm;
  if (axes) {
    if (static_cast<int>(axes->size()) != r) {
      throw InvalidArgumentError(fmt::format("transpose: axes has {} entries for a tensor of rank {}", axes->size(), r));
    }
    for (int a : *axes) perm.push_back(normalized(a, r, "transpose"));
  } else {
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  return permuted(x, perm);
}

Tensor expand_dims(const Tensor& x, int axis) {
  const int r = x.shape().rank();
  const int ax = normalized(axis, r + 1, "expand_dims");
  std::vector<int64_t> dims = dims_of(x.shape());
  dims.insert(dims.begin() + ax, 1);
  return core::reshape(x, Shape(dims));
}

Tensor squeeze(const Tensor& x, std::optional<int> axis) {
  std::vector<int64_t> dims;
  const int r = x.shape().rank();
  const int ax = axis ? normalized(*axis, r, "squeeze") : -1;
  if (axis && x.shape()[ax] != 1) {
    throw InvalidArgumentError(fmt::format("squeeze: axis {} of shape {} is {}, not 1", *axis, x.shape().to_string(),
                                           x.shape()[ax]));
  }
  for (int i = 0; i < r; ++i) {
    if (axis ? i != ax : x.shape()[i] != 1) dims.push_back(x.shape()[i]);
  }
  return core::reshape(x, Shape(dims));
}

Tensor broadcast_to(const Tensor& x, const std::vector<int64_t>& shape) { return core::broadcast_to(x, Shape(shape)); }

Tensor concatenate(const std::vector<Tensor>& xs, int axis) {
  // Tensors of several dtypes are joined in their result type (Keras's ops.concatenate).
  DType to = xs.empty() ? DType::float32 : xs[0].dtype();
  for (const auto& x : xs) to = detail::wider(to, x.dtype());
  bool mixed = false;
  for (const auto& x : xs) mixed = mixed || x.dtype() != to;
  if (!mixed) return core::concat(xs, axis);
  std::vector<Tensor> same;
  for (const auto& x : xs) same.push_back(x.dtype() == to ? x : core::cast(x, to));
  return core::concat(same, axis);
}

Tensor stack(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw InvalidArgumentError("stack needs at least one tensor");
  std::vector<Tensor> expanded;
  for (const auto& x : xs) {
    if (x.shape() != xs[0].shape()) {
      throw InvalidArgumentError(fmt::format("stack: every tensor must have one shape, got {} and {}",
                                             xs[0].shape().to_string(), x.shape().to_string()));
    }
    expanded.push_back(expand_dims(x, axis));
  }
  const int r = xs[0].shape().rank() + 1;
  return core::concat(expanded, normalized(axis, r, "stack"));
}

std::vector<Tensor> split(const Tensor& x, int64_t sections, int axis) {
  const int ax = normalized(axis, x.shape().rank(), "split");
  const int64_t n = x.shape()[ax];
  if (sections <= 0 || n % sections != 0) {
    throw InvalidArgumentError(fmt::format("split: an axis of {} does not divide into {} equal sections", n, sections));
  }
  return core::split(x, ax, std::vector<int64_t>(static_cast<std::size_t>(sections), n / sections));
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& indices, int axis) {
  const int ax = normalized(axis, x.shape().rank(), "split");
  const int64_t n = x.shape()[ax];
  std::vector<int64_t> sizes;
  int64_t at = 0;
  for (int64_t i : indices) {
    const int64_t cut = std::clamp<int64_t>(i < 0 ? i + n : i, at, n);  // NumPy: empty pieces past the end
    sizes.push_back(cut - at);
    at = cut;
  }
  sizes.push_back(n - at);
  return core::split(x, ax, sizes);
}

Tensor take(const Tensor& x_in, const Tensor& indices, std::optional<int> axis) {
  const Tensor x = axis ? x_in : core::reshape(x_in, {x_in.num_elements()});
  const int r = x.shape().rank();
  const int ax = normalized(axis ? *axis : 0, r, "take");
  const int64_t n = x.shape()[ax];
  const Tensor idx = wrapped_indices(indices, n);
  // The axis first, as rows; gathered; then the indices' axes put where the axis was.
  const Tensor front = permuted(x, moved(r, ax, 0));
  const int64_t rest = n ? front.num_elements() / n : 0;
  const Tensor rows = core::gather_rows(core::reshape(front, {n, rest}), core::reshape(idx, {idx.num_elements()}));
  std::vector<int64_t> dims = dims_of(idx.shape());
  const int k = idx.shape().rank();
  for (int i = 1; i < r; ++i) dims.push_back(front.shape()[i]);
  const Tensor gathered = core::reshape(rows, Shape(dims));
  std::vector<int> perm;  // gathered: idx axes, x's axes before ax, x's axes after ax
  for (int i = 0; i < ax; ++i) perm.push_back(k + i);
  for (int i = 0; i < k; ++i) perm.push_back(i);
  for (int i = ax + 1; i < r; ++i) perm.push_back(k + i - 1);
  return permuted(gathered, perm);
}

Tensor take_along_axis(const Tensor& x, const Tensor& indices, int axis) {
  const int r = x.shape().rank();
  if (indices.shape().rank() != r) {
    throw InvalidArgumentError(fmt::format("take_along_axis: indices of rank {} for x of rank {}; they must match",
                                           indices.shape().rank(), r));
  }
  const int ax = normalized(axis, r, "take_along_axis");
  // x and the indices broadcast on every other axis; then both with the axis last, as rows.
  std::vector<int64_t> xd = dims_of(x.shape()), id = dims_of(indices.shape());
  std::vector<int64_t> xo = xd, io = id;
  xo[static_cast<std::size_t>(ax)] = 1, io[static_cast<std::size_t>(ax)] = 1;
  std::vector<int64_t> common = dims_of(core::broadcast_shapes(Shape(xo), Shape(io)));
  std::vector<int64_t> xt = common, it = common;
  xt[static_cast<std::size_t>(ax)] = xd[static_cast<std::size_t>(ax)], it[static_cast<std::size_t>(ax)] = id[static_cast<std::size_t>(ax)];
  const int64_t n = xd[static_cast<std::size_t>(ax)], m = id[static_cast<std::size_t>(ax)];
  const std::vector<int> last = moved(r, ax, r - 1);
  const Tensor xs = permuted(core::broadcast_to(x, Shape(xt)), last);
  const Tensor is = permuted(core::broadcast_to(wrapped_indices(indices, n), Shape(it)), last);
  const int64_t rows = n ? xs.num_elements() / n : 0;
  std::vector<int64_t> offsets(static_cast<std::size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) offsets[static_cast<std::size_t>(i)] = i * n;
  const Tensor flat = core::add(core::reshape(is, {rows, m}), Tensor::from_vector(offsets, {rows, 1}));
  const Tensor picked = core::gather_rows(core::reshape(xs, {rows * n, 1}), core::reshape(flat, {rows * m}));
  return permuted(core::reshape(picked, is.shape()), inverse(last));
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& shape) {
  return x.slice(start_indices, shape);
}

Tensor get_item(const Tensor& x, int64_t i) { return x[i]; }

Tensor one_hot(const Tensor& x, int64_t num_classes, int axis, DType dtype) {
  if (num_classes < 0) throw InvalidArgumentError(fmt::format("one_hot: num_classes is {}; it must be >= 0", num_classes));
  const Tensor idx = core::cast(x, DType::int64);
  const Tensor classes = arange(0, static_cast<double>(num_classes), 1.0, DType::int64);
  const Tensor hot = core::cast(core::compare(expand_dims(idx, -1), classes, core::CompareKind::equal), dtype);
  const int r = hot.shape().rank();
  const int ax = normalized(axis, r, "one_hot");
  return permuted(hot, moved(r, r - 1, ax));
}

Tensor arange(double start, std::optional<double> stop, double step, std::optional<DType> dtype) {
  double lo = start, hi = 0;
  if (stop) hi = *stop;
  else std::swap(lo, hi);  // arange(n): [0, n)
  if (step == 0) throw InvalidArgumentError("arange: step is 0");
  const bool integral = lo == std::floor(lo) && hi == std::floor(hi) && step == std::floor(step);
  const DType t = dtype ? *dtype : integral ? DType::int32 : DType::float32;
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((hi - lo) / step)));
  std::vector<double> values(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = lo + static_cast<double>(i) * step;
  return core::cast(Tensor::from_vector(values, {n}), t);
}

Tensor zeros(const std::vector<int64_t>& shape, DType dtype) { return Tensor::zeros(Shape(shape), dtype); }
Tensor ones(const std::vector<int64_t>& shape, DType dtype) { return Tensor::ones(Shape(shape), dtype); }
Tensor zeros_like(const Tensor& x) { return Tensor::zeros(x.shape(), x.dtype()); }
Tensor ones_like(const Tensor& x) { return Tensor::ones(x.shape(), x.dtype()); }

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  if (a_in.shape().rank() == 0 || b_in.shape().rank() == 0) {
    throw InvalidArgumentError("matmul: scalars are not allowed (use multiply)");
  }
  const bool va = a_in.shape().rank() == 1, vb = b_in.shape().rank() == 1;
  const DType t = a_in.dtype();
  Tensor a = va ? expand_dims(a_in, 0) : a_in, b = vb ? expand_dims(b_in, -1) : b_in;
  if (a.dtype() != DType::float32) a = core::cast(a, DType::float32);  // products run in float32
  if (b.dtype() != DType::float32) b = core::cast(b, DType::float32);
  const int ra = a.shape().rank(), rb = b.shape().rank();
  const int64_t m = a.shape()[-2], k = a.shape()[-1], kb = b.shape()[-2], n = b.shape()[-1];
  if (k != kb) {
    throw InvalidArgumentError(fmt::format("matmul: shapes {} and {} do not align ({} != {})", a_in.shape().to_string(),
                                           b_in.shape().to_string(), k, kb));
  }
  Tensor out;
  std::vector<int64_t> batch;
  if (ra == 2 && rb == 2) {
    out = core::matmul(a, b);
  } else {
    const std::vector<int64_t> da = dims_of(a.shape()), db = dims_of(b.shape());
    batch = dims_of(core::broadcast_shapes(Shape(std::vector<int64_t>(da.begin(), da.end() - 2)),
                                           Shape(std::vector<int64_t>(db.begin(), db.end() - 2))));
    int64_t nb = 1;
    for (int64_t d : batch) nb *= d;
    std::vector<int64_t> sa = batch, sb = batch;
    sa.insert(sa.end(), {m, k});
    sb.insert(sb.end(), {k, n});
    const Tensor a3 = core::reshape(core::broadcast_to(a, Shape(sa)), {nb, m, k});
    const Tensor b3 = core::reshape(core::broadcast_to(b, Shape(sb)), {nb, k, n});
    out = core::matmul(a3, b3);
  }
  std::vector<int64_t> dims = batch;
  if (!va) dims.push_back(m);
  if (!vb) dims.push_back(n);
  out = core::reshape(out, Shape(dims));
  return t == DType::float32 ? out : core::cast(out, t);
}

std::vector<Tensor> top_k(const Tensor& x, int64_t k, bool /*sorted*/) { return core::top_k(x, k, true); }

// The ascending sort along `axis` (top_k of the whole axis, smallest first): output 0 the values, 1 the indices.
static Tensor sorted_along(const Tensor& x, int axis, const char* op, int output) {
  const int r = x.shape().rank();
  const std::vector<int> last = moved(r, normalized(axis, r, op), r - 1);
  const Tensor xs = permuted(x, last);
  return permuted(core::top_k(xs, xs.shape()[-1], false)[static_cast<std::size_t>(output)], inverse(last));
}

Tensor sort(const Tensor& x, int axis) { return sorted_along(x, axis, "sort", 0); }
Tensor argsort(const Tensor& x, int axis) { return sorted_along(x, axis, "argsort", 1); }

Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats) {
  for (int64_t k : repeats) {
    if (k < 0) throw InvalidArgumentError(fmt::format("tile: repeats must be >= 0, got {}", k));
  }
  const int d = std::max<int>(x.shape().rank(), static_cast<int>(repeats.size()));
  std::vector<int64_t> dims(static_cast<std::size_t>(d - x.shape().rank()), 1), reps(static_cast<std::size_t>(d) - repeats.size(), 1);
  for (int64_t v : dims_of(x.shape())) dims.push_back(v);
  reps.insert(reps.end(), repeats.begin(), repeats.end());
  // (1, a1, 1, a2, ...) broadcast to (r1, a1, r2, a2, ...), then each pair merged.
  std::vector<int64_t> spread, target, out;
  for (int i = 0; i < d; ++i) {
    const auto u = static_cast<std::size_t>(i);
    spread.insert(spread.end(), {1, dims[u]});
    target.insert(target.end(), {reps[u], dims[u]});
    out.push_back(reps[u] * dims[u]);
  }
  return core::reshape(core::broadcast_to(core::reshape(x, Shape(spread)), Shape(target)), Shape(out));
}

Tensor repeat(const Tensor& x_in, const std::vector<int64_t>& repeats, std::optional<int> axis) {
  const Tensor x = axis ? x_in : ravel(x_in);
  const int ax = normalized(axis ? *axis : 0, x.shape().rank(), "repeat");
  const int64_t n = x.shape()[ax];
  if (repeats.size() != 1 && static_cast<int64_t>(repeats.size()) != n) {
    throw InvalidArgumentError(fmt::format("repeat: {} repeat counts for an axis of {} elements; give one, or one per "
                                           "element",
                                           repeats.size(), n));
  }
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = repeats.size() == 1 ? repeats[0] : repeats[static_cast<std::size_t>(i)];
    if (k < 0) throw InvalidArgumentError(fmt::format("repeat: repeats must be >= 0, got {}", k));
    idx.insert(idx.end(), static_cast<std::size_t>(k), i);
  }
  return take(x, index_vector(idx), ax);
}

Tensor repeat(const Tensor& x, int64_t repeats, std::optional<int> axis) {
  return repeat(x, std::vector<int64_t>{repeats}, axis);
}

}  // namespace osprey::keras::ops
