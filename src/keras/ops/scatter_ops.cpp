// keras::ops's segment, scatter and slice-update functions on osprey::ops's row scatter-add, gather and select, and
// the functions whose output shape depends on the values (nonzero, unique, and the segment count when unset):
// those read the values on the host, as TensorFlow sizes such outputs there.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;
using detail::check_integer;
using detail::where_is;

namespace {

// The rows of data (N, ...) summed into `segments` rows by id (ids outside [0, segments): InvalidArgumentError,
// negative ones dropped, as TensorFlow's unsorted segment sum); data as float32 for the kernel (integers cast back).
Tensor segment_rows_sum(const Tensor& data, const Tensor& ids, int64_t segments) {
  const int64_t n = data.shape()[0];
  const Shape rest = Shape(std::vector<int64_t>(data.shape().dims().begin() + 1, data.shape().dims().end()));
  const int64_t width = rest.num_elements();
  const DType t = DType::float32;  // the row scatter-add kernel's type
  const Tensor id64 = cast(ids, DType::int64);
  const Tensor dropped = core::compare(id64, Tensor::scalar(0, DType::int64), core::CompareKind::less);
  const Tensor safe_ids = core::where(dropped, Tensor::scalar(0, DType::int64), id64);
  Tensor rows = core::reshape(cast(data, t), Shape({n, width}));
  rows = core::where(core::reshape(dropped, Shape({n, 1})), Tensor::scalar(0.0, t), rows);
  std::vector<int64_t> out{segments};
  out.insert(out.end(), rest.dims().begin(), rest.dims().end());
  const Tensor summed = core::reshape(core::scatter_add_rows(rows, safe_ids, segments), Shape(out));
  return cast(summed, data.dtype());
}

int64_t segment_count(const Tensor& ids, std::optional<int64_t> num_segments) {
  if (num_segments) {
    if (*num_segments < 0) throw ValueError(fmt::format("num_segments must be non-negative; got {}", *num_segments));
    return *num_segments;
  }
  return ids.num_elements() ? static_cast<int64_t>(max(ids).item()) + 1 : 0;
}

void check_segments(const Tensor& data, const Tensor& ids, const char* op) {
  check_integer(ids, op, "segment_ids");
  if (data.shape().rank() < 1 || ids.shape().rank() != 1 || ids.shape()[0] != data.shape()[0]) {
    throw ValueError(fmt::format("{}: segment_ids must be 1-D with one id per row of data; got {} for data {}", op,
                                 ids.shape().to_string(), data.shape().to_string()));
  }
}

// The lowest value of t's dtype (an empty segment's maximum, as TensorFlow's), or the highest.
double extreme(DType t, bool lowest) {
  double v = 0;
  switch (t) {
    case DType::int32: v = std::numeric_limits<int32_t>::max(); break;
    case DType::int64: v = static_cast<double>(std::numeric_limits<int64_t>::max()); break;
    case DType::float64: v = std::numeric_limits<double>::max(); break;
    default: v = std::numeric_limits<float>::max();
  }
  return lowest ? (t == DType::int32 || t == DType::int64 ? -v - 1 : -v) : v;
}

enum class Combine { max, min, prod };

// The rows of data (N, ...) combined into `groups` rows by their group id (N,) int64 (ids outside [0, groups) left
// out): each group's rows picked by a (groups, N) membership mask, the others replaced by the combination's
// identity (the dtype's extreme, or 1), then reduced (memory groups·N·width). Differentiable in data.
Tensor combine_rows(const Tensor& data, const Tensor& ids, int64_t groups, Combine how) {
  const int64_t n = data.shape()[0];
  const Tensor range = where_is(core::reshape(arange(0, static_cast<double>(groups), 1.0, DType::int64),
                                              Shape({groups, 1})),
                                ids);
  const Tensor member = core::compare(range, core::reshape(cast(ids, DType::int64), Shape({1, n})),
                                      core::CompareKind::equal);  // (groups, n)
  std::vector<int64_t> mdims{groups, n};
  for (int i = 1; i < data.shape().rank(); ++i) mdims.push_back(1);
  std::vector<int64_t> ddims{1};
  ddims.insert(ddims.end(), data.shape().dims().begin(), data.shape().dims().end());
  const double identity = how == Combine::prod ? 1.0 : extreme(data.dtype(), how == Combine::max);
  const Tensor picked = core::where(core::reshape(member, Shape(mdims)), core::reshape(data, Shape(ddims)),
                                    Tensor::scalar(identity, data.dtype()));
  switch (how) {
    case Combine::max: return max(picked, 1);
    case Combine::min: return min(picked, 1);
    case Combine::prod: break;
  }
  return prod(picked, 1);
}

// segment max, min or product (an empty segment: the dtype's lowest/highest value, or 1, as TensorFlow's).
Tensor segment_combine(const Tensor& data, const Tensor& ids, std::optional<int64_t> num_segments, Combine how,
                       const char* op) {
  check_segments(data, ids, op);
  return combine_rows(data, ids, segment_count(ids, num_segments), how);
}

// The row-major linear index into the first k axes of `shape` of each row of indices (N, k), int64, after checking
// each index against its axis on the host (an index outside it: InvalidArgumentError, as TensorFlow's scatter_nd).
Tensor linear_rows(const Tensor& indices, const std::vector<int64_t>& shape, const char* op) {
  check_integer(indices, op, "indices");
  const int r = indices.shape().rank();
  const int64_t k = r == 0 ? 0 : indices.shape()[-1];
  if (r < 1 || k < 1 || k > static_cast<int64_t>(shape.size())) {
    throw ValueError(fmt::format("{}: indices of shape {} index a tensor of shape ({}): their last axis names up to {} "
                                 "axes",
                                 op, indices.shape().to_string(), fmt::join(shape, ", "), shape.size()));
  }
  const auto host = cast(indices, DType::int64).to_vector<int64_t>();
  for (std::size_t i = 0; i < host.size(); ++i) {
    const int64_t axis_len = shape[i % static_cast<std::size_t>(k)];
    if (host[i] < 0 || host[i] >= axis_len) {
      throw InvalidArgumentError(fmt::format("{}: index {} of row {} is {}, outside [0, {})", op, i % k, i / k, host[i],
                                             axis_len));
    }
  }
  std::vector<int64_t> linear(host.size() / static_cast<std::size_t>(k), 0);
  for (std::size_t row = 0; row < linear.size(); ++row) {
    for (int64_t j = 0; j < k; ++j) linear[row] = linear[row] * shape[static_cast<std::size_t>(j)] + host[row * k + j];
  }
  return where_is(Tensor::from_vector(linear, Shape({static_cast<int64_t>(linear.size())})), indices);
}

}  // namespace

Tensor segment_sum(const Tensor& data, const Tensor& segment_ids, std::optional<int64_t> num_segments) {
  check_segments(data, segment_ids, "segment_sum");
  return segment_rows_sum(data, segment_ids, segment_count(segment_ids, num_segments));
}
Tensor segment_max(const Tensor& data, const Tensor& segment_ids, std::optional<int64_t> num_segments) {
  return segment_combine(data, segment_ids, num_segments, Combine::max, "segment_max");
}
Tensor segment_min(const Tensor& data, const Tensor& segment_ids, std::optional<int64_t> num_segments) {
  return segment_combine(data, segment_ids, num_segments, Combine::min, "segment_min");
}
Tensor segment_prod(const Tensor& data, const Tensor& segment_ids, std::optional<int64_t> num_segments) {
  return segment_combine(data, segment_ids, num_segments, Combine::prod, "segment_prod");
}

Tensor scatter(const Tensor& indices, const Tensor& values, const std::vector<int64_t>& shape) {
  const Tensor rows = linear_rows(indices, shape, "scatter");
  const auto k = static_cast<std::size_t>(indices.shape()[-1]);
  const int64_t n = rows.shape()[0];
  std::vector<int64_t> rest(shape.begin() + static_cast<std::ptrdiff_t>(k), shape.end());
  std::vector<int64_t> expected{n};
  expected.insert(expected.end(), rest.begin(), rest.end());
  if (values.shape() != Shape(expected)) {
    throw ValueError(fmt::format("scatter: values of shape {} for {} indices into ({}); expected ({})",
                                 values.shape().to_string(), n, fmt::join(shape, ", "), fmt::join(expected, ", ")));
  }
  int64_t outer = 1;
  for (std::size_t j = 0; j < k; ++j) outer *= shape[j];
  const int64_t width = Shape(rest).num_elements();
  const Tensor summed = core::scatter_add_rows(core::reshape(cast(values, DType::float32), Shape({n, width})), rows, outer);
  return cast(core::reshape(summed, Shape(shape)), values.dtype());
}

Tensor scatter_update(const Tensor& inputs, const Tensor& indices, const Tensor& updates,
                      const std::optional<std::string>& reduction) {
  const std::vector<int64_t> shape = inputs.shape().dims_vector();
  if (reduction && (*reduction == "max" || *reduction == "min" || *reduction == "mul")) {
    // Each indexed slice combined with every update aimed at it (tensor_scatter_nd_max/min; "mul" multiplies them
    // in, as Keras's loop over the updates); slices no index names stay as they were.
    const Tensor rows = linear_rows(indices, shape, "scatter_update");
    const auto k = static_cast<std::size_t>(indices.shape()[-1]);
    const int64_t n = rows.shape()[0];
    int64_t outer = 1;
    for (std::size_t j = 0; j < k; ++j) outer *= shape[j];
    const int64_t width = inputs.num_elements() / std::max<int64_t>(outer, 1);
    const Tensor u = cast(updates, inputs.dtype());
    if (u.num_elements() != n * width) {
      throw ValueError(fmt::format("scatter_update: updates of shape {} for {} indices into {}: expected {} values",
                                   u.shape().to_string(), n, inputs.shape().to_string(), n * width));
    }
    const Combine how = *reduction == "max" ? Combine::max : (*reduction == "min" ? Combine::min : Combine::prod);
    const Tensor combined = combine_rows(core::reshape(u, Shape({n, width})), rows, outer, how);  // (outer, width)
    const Tensor flat = core::reshape(inputs, Shape({outer, width}));
    const Tensor merged = how == Combine::max   ? maximum(flat, combined)
                          : how == Combine::min ? minimum(flat, combined)
                                                : multiply(flat, combined);
    const Tensor hit = core::reshape(scatter(indices, ones({n}), std::vector<int64_t>(shape.begin(), shape.begin() +
                                                                                     static_cast<std::ptrdiff_t>(k))),
                                     Shape({outer, 1}));
    return core::reshape(core::where(greater(hit, 0.0), merged, flat), inputs.shape());
  }
  const Tensor placed = scatter(indices, cast(updates, inputs.dtype()), shape);
  if (reduction && *reduction == "add") return add(inputs, placed);
  if (reduction) {
    throw ValueError(fmt::format("scatter_update: reduction must be unset (replace), 'add', 'max', 'min' or 'mul'; "
                                 "got '{}'",
                                 *reduction));
  }
  // Where some index points (its update replaces the input; repeated indices add up their updates).
  const auto k = static_cast<std::size_t>(indices.shape()[-1]);
  const std::vector<int64_t> head(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(k));
  const Tensor hit = scatter(indices, ones({indices.shape()[0]}), head);
  std::vector<int64_t> mdims = head;
  mdims.resize(shape.size(), 1);
  const Tensor mask = core::reshape(core::compare(hit, Tensor::scalar(0.0, DType::float32), core::CompareKind::greater),
                                    Shape(mdims));
  return core::where(mask, placed, inputs);
}

Tensor slice_update(const Tensor& inputs, const std::vector<int64_t>& start_indices, const Tensor& updates) {
  const int r = inputs.shape().rank();
  if (static_cast<int>(start_indices.size()) != r || updates.shape().rank() != r) {
    throw ValueError(fmt::format("slice_update: inputs {} need {} start indices and updates of rank {}; got {} and {}",
                                 inputs.shape().to_string(), r, r, start_indices.size(), updates.shape().to_string()));
  }
  std::vector<std::pair<int64_t, int64_t>> widths;
  for (int i = 0; i < r; ++i) {
    const int64_t s = start_indices[static_cast<std::size_t>(i)], u = updates.shape()[i], n = inputs.shape()[i];
    if (s < 0 || s + u > n) {
      throw InvalidArgumentError(fmt::format("slice_update: axis {}: updates of {} from {} do not fit in {}", i, u, s, n));
    }
    widths.emplace_back(s, n - s - u);
  }
  const Tensor placed = pad(cast(updates, inputs.dtype()), widths);
  const Tensor mask = pad(Tensor::ones(updates.shape(), DType::float32), widths);
  return core::where(greater(where_is(mask, inputs), 0.0), placed, inputs);
}

std::vector<Tensor> nonzero(const Tensor& x) {
  const auto v = (x.dtype() == DType::float64 ? x : cast(x, DType::float64)).to_vector<double>();
  const int r = x.shape().rank();
  std::vector<std::vector<int32_t>> coords(static_cast<std::size_t>(std::max(r, 1)));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == 0.0) continue;
    auto rem = static_cast<int64_t>(i);
    for (int a = r - 1; a >= 0; --a) {
      coords[static_cast<std::size_t>(a)].push_back(static_cast<int32_t>(rem % x.shape()[a]));
      rem /= x.shape()[a];
    }
    if (r == 0) coords[0].push_back(0);
  }
  std::vector<Tensor> out;
  for (auto& c : coords) {
    const auto len = static_cast<int64_t>(c.size());
    out.push_back(where_is(Tensor::from_vector(c, Shape({len})), x));
  }
  return out;
}

namespace {

// x's elements as unique() compares them: n entries along the axis (every element when flattened), each a slice of
// `width` values in the order TensorFlow's lexicographic sort reads them (the axis swapped with the first one,
// then row-major), in double.
struct Slices {
  int64_t n = 0, width = 1, pre = 1, post = 1;  // x as (pre, n, post) around the axis
  std::vector<double> key;                      // n slices of width values, in comparison order
  bool has_nan(int64_t k) const {
    return std::any_of(key.begin() + k * width, key.begin() + (k + 1) * width, [](double v) { return std::isnan(v); });
  }
  // Lexicographic, NaN after every number and NaNs tied (a total order: the sort is stable).
  bool less(int64_t a, int64_t b) const {
    for (int64_t i = 0; i < width; ++i) {
      const double u = key[static_cast<std::size_t>(a * width + i)], v = key[static_cast<std::size_t>(b * width + i)];
      const bool nu = std::isnan(u), nv = std::isnan(v);
      if (nu || nv) {
        if (nu != nv) return nv;
        continue;
      }
      if (u != v) return u < v;
    }
    return false;
  }
};

Slices slices_of(const std::vector<double>& v, const Shape& shape, std::optional<int> axis) {
  Slices s;
  if (!axis) {
    s.n = static_cast<int64_t>(v.size());
    s.key = v;
    return s;
  }
  const int r = shape.rank();
  s.n = shape[*axis];
  for (int d = 0; d < *axis; ++d) s.pre *= shape[d];
  for (int d = *axis + 1; d < r; ++d) s.post *= shape[d];
  s.width = s.pre * s.post;
  // TensorFlow transposes the axis with axis 0 (a swap, not a move) and reads each slice row-major.
  std::vector<int> perm(static_cast<std::size_t>(r));
  for (int d = 0; d < r; ++d) perm[static_cast<std::size_t>(d)] = d;
  std::swap(perm[0], perm[static_cast<std::size_t>(*axis)]);
  std::vector<int64_t> stride(static_cast<std::size_t>(r), 1);
  for (int d = r - 2; d >= 0; --d) stride[static_cast<std::size_t>(d)] = stride[static_cast<std::size_t>(d + 1)] * shape[d + 1];
  s.key.resize(v.size());
  std::vector<int64_t> at(static_cast<std::size_t>(r), 0);  // an index of the transposed tensor
  for (std::size_t i = 0; i < v.size(); ++i) {
    int64_t src = 0;
    for (int d = 0; d < r; ++d) src += at[static_cast<std::size_t>(d)] * stride[static_cast<std::size_t>(perm[static_cast<std::size_t>(d)])];
    s.key[i] = v[static_cast<std::size_t>(src)];
    for (int d = r - 1; d >= 0; --d) {  // the next transposed index, row-major
      if (++at[static_cast<std::size_t>(d)] < shape[perm[static_cast<std::size_t>(d)]]) break;
      at[static_cast<std::size_t>(d)] = 0;
    }
  }
  return s;
}

}  // namespace

std::vector<Tensor> unique(const Tensor& x, const UniqueOptions& o) {
  std::optional<int> axis;
  if (o.axis) {
    if (x.shape().rank() == 0) throw ValueError("unique: axis is given for a scalar input (rank 0)");
    axis = detail::normalized(*o.axis, x.shape().rank(), "unique");
  }
  if (o.size && *o.size < 0) throw ValueError(fmt::format("unique: size must be non-negative, got {}", *o.size));
  const auto v = (x.dtype() == DType::float64 ? x : cast(x, DType::float64)).to_vector<double>();
  const Slices s = slices_of(v, x.shape(), axis);
  // The distinct slices in the order they first occur (as tf.unique); one with a NaN equals nothing (Keras's
  // TensorFlow backend keeps them apart; NumPy would make NaNs one).
  std::map<std::vector<double>, int32_t> seen;
  std::vector<int64_t> first;  // each distinct slice's first entry
  std::vector<int32_t> inverse(static_cast<std::size_t>(s.n)), counts;
  for (int64_t k = 0; k < s.n; ++k) {
    const auto next = static_cast<int32_t>(first.size());
    int32_t id = next;
    if (!s.has_nan(k)) {
      id = seen.emplace(std::vector<double>(s.key.begin() + k * s.width, s.key.begin() + (k + 1) * s.width), next)
               .first->second;
    }
    if (id == next) first.push_back(k), counts.push_back(0);
    inverse[static_cast<std::size_t>(k)] = id;
    ++counts[static_cast<std::size_t>(id)];
  }
  std::vector<int64_t> order(first.size());  // output position -> distinct slice
  for (std::size_t u = 0; u < order.size(); ++u) order[u] = static_cast<int64_t>(u);
  if (o.sorted) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return s.less(first[static_cast<std::size_t>(a)], first[static_cast<std::size_t>(b)]);
    });
    std::vector<int32_t> rank(order.size());
    for (std::size_t p = 0; p < order.size(); ++p) rank[static_cast<std::size_t>(order[p])] = static_cast<int32_t>(p);
    for (auto& id : inverse) id = rank[static_cast<std::size_t>(id)];
  }
  // Truncated or padded to `size`: the values with fill_value, the first indices with 1 and the counts with 0, as
  // Keras's TensorFlow backend pads them.
  const int64_t found = static_cast<int64_t>(order.size()), out_n = o.size.value_or(found);
  std::vector<double> values(static_cast<std::size_t>(s.pre * out_n * s.post), o.fill_value);
  std::vector<int32_t> index(static_cast<std::size_t>(out_n), 1), count(static_cast<std::size_t>(out_n), 0);
  for (int64_t p = 0; p < std::min(found, out_n); ++p) {
    const int64_t u = order[static_cast<std::size_t>(p)], k = first[static_cast<std::size_t>(u)];
    index[static_cast<std::size_t>(p)] = static_cast<int32_t>(k);
    count[static_cast<std::size_t>(p)] = counts[static_cast<std::size_t>(u)];
    for (int64_t a = 0; a < s.pre; ++a) {
      for (int64_t b = 0; b < s.post; ++b) {
        values[static_cast<std::size_t>((a * out_n + p) * s.post + b)] = v[static_cast<std::size_t>((a * s.n + k) * s.post + b)];
      }
    }
  }
  std::vector<int64_t> dims{out_n};
  if (axis) {
    dims = x.shape().dims_vector();
    dims[static_cast<std::size_t>(*axis)] = out_n;
  }
  std::vector<Tensor> out{where_is(cast(Tensor::from_vector(values, Shape(dims)), x.dtype()), x)};
  if (o.return_index) out.push_back(where_is(Tensor::from_vector(index, Shape({out_n})), x));
  if (o.return_inverse) {
    out.push_back(where_is(Tensor::from_vector(inverse, axis ? Shape({s.n}) : x.shape()), x));
  }
  if (o.return_counts) out.push_back(where_is(Tensor::from_vector(count, Shape({out_n})), x));
  return out;
}

std::vector<Tensor> unique(const Tensor& x, bool return_inverse, bool return_counts) {
  return unique(x, UniqueOptions{.return_inverse = return_inverse, .return_counts = return_counts});
}

}  // namespace osprey::keras::ops
