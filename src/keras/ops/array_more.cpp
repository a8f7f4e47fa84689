// More of keras::ops's array functions: stacking and splitting (append ... unstack), flips and rotations,
// constructors (tri, vander, logspace, diagflat), products (kron, cross, vdot), select, and the searching and
// counting functions (digitize, searchsorted, bincount, in_top_k, multi_hot, isin), as compositions of osprey::ops.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "keras/ops/common.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;
using detail::where_is;

namespace {

// x as at least 3-D (NumPy's atleast_3d: a 1-D x of n becomes (1, n, 1), a 2-D one (m, n, 1)).
Tensor at_least_3d(const Tensor& x) {
  const int r = x.shape().rank();
  if (r >= 3) return x;
  std::vector<int64_t> d{1, 1, 1};
  if (r == 1) d[1] = x.shape()[0];
  if (r == 2) d[0] = x.shape()[0], d[1] = x.shape()[1];
  return core::reshape(x, Shape(d));
}

Tensor concat_of(const std::vector<Tensor>& xs, int axis, const char* op) {
  if (xs.empty()) throw ValueError(fmt::format("{} needs at least one tensor", op));
  return core::concat(xs, axis);
}

// Comparisons of every element of x (as a trailing axis) against the 1-D `against`: (x.shape..., n) bool.
Tensor against_each(const Tensor& x, const Tensor& against, core::CompareKind kind) {
  std::vector<int64_t> d(x.shape().dims().begin(), x.shape().dims().end());
  d.push_back(1);
  const DType t = result_type(x, against);
  return core::compare(cast(core::reshape(x, Shape(d)), t), cast(ravel(against), t), kind);
}

}  // namespace

Tensor append(const Tensor& x1, const Tensor& x2, std::optional<int> axis) {
  const DType t = result_type(x1, x2);
  if (!axis) return core::concat({cast(ravel(x1), t), cast(ravel(x2), t)}, 0);
  return core::concat({cast(x1, t), cast(x2, t)}, *axis);
}
Tensor hstack(const std::vector<Tensor>& xs) {
  if (!xs.empty() && xs[0].shape().rank() <= 1) {
    std::vector<Tensor> flat;
    for (const Tensor& x : xs) flat.push_back(x.shape().rank() == 0 ? core::reshape(x, Shape({1})) : x);
    return concat_of(flat, 0, "hstack");
  }
  return concat_of(xs, 1, "hstack");
}
Tensor vstack(const std::vector<Tensor>& xs) {
  // Along the first axis as they are (Keras's: 1-D inputs give a longer 1-D tensor, not NumPy's rows).
  return concat_of(xs, 0, "vstack");
}
Tensor dstack(const std::vector<Tensor>& xs) {
  std::vector<Tensor> three;
  for (const Tensor& x : xs) three.push_back(at_least_3d(x));
  return concat_of(three, 2, "dstack");
}
std::vector<Tensor> array_split(const Tensor& x, int64_t sections, int axis) {
  if (sections <= 0) throw ValueError(fmt::format("array_split: sections must be positive; got {}", sections));
  const int ax = detail::normalized(axis, x.shape().rank(), "array_split");
  const int64_t n = x.shape()[ax], base = n / sections, extra = n % sections;
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < sections; ++i) sizes.push_back(base + (i < extra ? 1 : 0));
  return core::split(x, ax, sizes);
}
std::vector<Tensor> hsplit(const Tensor& x, int64_t sections) { return split(x, sections, x.shape().rank() == 1 ? 0 : 1); }
std::vector<Tensor> vsplit(const Tensor& x, int64_t sections) {
  if (x.shape().rank() < 2) throw ValueError("vsplit only works on tensors of rank 2 or more");
  return split(x, sections, 0);
}
std::vector<Tensor> dsplit(const Tensor& x, int64_t sections) {
  if (x.shape().rank() < 3) throw ValueError("dsplit only works on tensors of rank 3 or more");
  return split(x, sections, 2);
}
std::vector<Tensor> unstack(const Tensor& x, int axis) {
  const int ax = detail::normalized(axis, x.shape().rank(), "unstack");
  std::vector<Tensor> out;
  for (const Tensor& piece : core::split(x, ax, std::vector<int64_t>(static_cast<std::size_t>(x.shape()[ax]), 1))) {
    out.push_back(squeeze(piece, ax));
  }
  return out;
}

Tensor fliplr(const Tensor& x) {
  if (x.shape().rank() < 2) throw ValueError("fliplr needs a tensor of rank 2 or more");
  return flip(x, 1);
}
Tensor flipud(const Tensor& x) {
  if (x.shape().rank() < 1) throw ValueError("flipud needs a tensor of rank 1 or more");
  return flip(x, 0);
}
Tensor rot90(const Tensor& x, int k, std::pair<int, int> axes) {
  const int r = x.shape().rank();
  if (r < 2) throw ValueError(fmt::format("rot90 needs a tensor of rank 2 or more; got rank {}", r));
  const int a = detail::normalized(axes.first, r, "rot90"), b = detail::normalized(axes.second, r, "rot90");
  if (a == b) throw ValueError(fmt::format("rot90: the axes must differ; got ({}, {})", axes.first, axes.second));
  k = ((k % 4) + 4) % 4;
  if (k == 0) return x;
  if (k == 2) return flip(flip(x, a), b);
  // One turn: flip the second axis, then swap the two (NumPy's order); three: swap, then flip it.
  return k == 1 ? swapaxes(flip(x, b), a, b) : flip(swapaxes(x, a, b), b);
}

Tensor tri(int64_t n, std::optional<int64_t> m, int64_t k, DType dtype) {
  return tril(ones({n, m.value_or(n)}, dtype), k);
}
Tensor vander(const Tensor& x, std::optional<int64_t> n, bool increasing) {
  if (x.shape().rank() != 1) {
    throw ValueError(fmt::format("vander needs a 1-D x; got shape {}", x.shape().to_string()));
  }
  const int64_t cols = n.value_or(x.shape()[0]);
  std::vector<Tensor> powers;
  for (int64_t j = 0; j < cols; ++j) {
    const int64_t p = increasing ? j : cols - 1 - j;
    powers.push_back(power(x, p));
  }
  return stack(powers, 1);
}
Tensor kron(const Tensor& x1, const Tensor& x2) {
  const int r = std::max(x1.shape().rank(), x2.shape().rank());
  auto dims_of = [r](const Tensor& t) {
    std::vector<int64_t> d(static_cast<std::size_t>(r - t.shape().rank()), 1);
    d.insert(d.end(), t.shape().dims().begin(), t.shape().dims().end());
    return d;
  };
  const auto a = dims_of(x1), b = dims_of(x2);
  // (a0, 1, a1, 1, ...) times (1, b0, 1, b1, ...), then the pairs merged.
  std::vector<int64_t> ai, bi, out;
  for (int i = 0; i < r; ++i) {
    ai.insert(ai.end(), {a[static_cast<std::size_t>(i)], 1});
    bi.insert(bi.end(), {1, b[static_cast<std::size_t>(i)]});
    out.push_back(a[static_cast<std::size_t>(i)] * b[static_cast<std::size_t>(i)]);
  }
  return core::reshape(multiply(core::reshape(x1, Shape(ai)), core::reshape(x2, Shape(bi))), Shape(out));
}
Tensor cross(const Tensor& x1, const Tensor& x2, int axis) {
  const int a1 = detail::normalized(axis, x1.shape().rank(), "cross"), a2 = detail::normalized(axis, x2.shape().rank(), "cross");
  const int64_t n1 = x1.shape()[a1], n2 = x2.shape()[a2];
  if ((n1 != 2 && n1 != 3) || (n2 != 2 && n2 != 3)) {
    throw ValueError(fmt::format("cross: the vectors must have 2 or 3 components along axis {}; got {} and {}", axis,
                                 n1, n2));
  }
  auto components = [](const Tensor& x, int ax, int64_t n) {
    std::vector<Tensor> c;
    for (int64_t i = 0; i < n; ++i) c.push_back(squeeze(core::slice_axis(x, ax, i, 1), ax));
    if (n == 2) c.push_back(zeros_like(c[0]));
    return c;
  };
  const auto u = components(x1, a1, n1), v = components(x2, a2, n2);
  auto term = [&](int i, int j) { return subtract(multiply(u[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(j)]),
                                                  multiply(u[static_cast<std::size_t>(j)], v[static_cast<std::size_t>(i)])); };
  if (n1 == 2 && n2 == 2) return term(0, 1);  // NumPy: the z component alone
  return stack({term(1, 2), term(2, 0), term(0, 1)}, -1);
}
Tensor vdot(const Tensor& x1, const Tensor& x2) { return sum(multiply(ravel(x1), ravel(x2))); }
Tensor logspace(double start, double stop, int64_t num, bool endpoint, double base, DType dtype) {
  const Tensor exps = linspace(start, stop, num, endpoint, DType::float64);
  return cast(core::pow(Tensor::scalar(base, DType::float64), exps), dtype);
}
Tensor diagflat(const Tensor& x, int64_t k) { return diag(ravel(x), k); }

Tensor select(const std::vector<Tensor>& condlist, const std::vector<Tensor>& choicelist,
              const TensorLike& default_value) {
  if (condlist.size() != choicelist.size() || condlist.empty()) {
    throw ValueError(fmt::format("select: condlist and choicelist must be non-empty and of one length; got {} and {}",
                                 condlist.size(), choicelist.size()));
  }
  Tensor out = where(condlist.back(), choicelist.back(), default_value);
  for (std::size_t i = condlist.size() - 1; i-- > 0;) out = where(condlist[i], choicelist[i], out);
  return out;
}

Tensor digitize(const Tensor& x, const Tensor& bins) {
  if (bins.shape().rank() != 1) {
    throw ValueError(fmt::format("digitize: bins must be 1-D; got shape {}", bins.shape().to_string()));
  }
  return cast(sum(cast(against_each(x, bins, core::CompareKind::greater_equal), DType::int32), -1), DType::int32);
}
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, const std::string& side) {
  if (side != "left" && side != "right") {
    throw ValueError(fmt::format("searchsorted: side must be 'left' or 'right'; got '{}'", side));
  }
  if (sorted_sequence.shape().rank() != 1) {
    throw ValueError(fmt::format("searchsorted: sorted_sequence must be 1-D; got shape {}",
                                 sorted_sequence.shape().to_string()));
  }
  // The number of elements before each value: those below it ("left") or not above it ("right").
  const auto kind = side == "left" ? core::CompareKind::greater : core::CompareKind::greater_equal;
  return cast(sum(cast(against_each(values, sorted_sequence, kind), DType::int32), -1), DType::int32);
}
Tensor bincount(const Tensor& x, const std::optional<Tensor>& weights, int64_t minlength) {
  const int r = x.shape().rank();
  if ((r != 1 && r != 2) || is_floating(x.dtype()) || x.dtype() == DType::bool_) {
    throw ValueError(fmt::format("bincount takes 1-D or 2-D integer tensors; got {} of shape {}", dtype_name(x.dtype()),
                                 x.shape().to_string()));
  }
  if (minlength < 0) throw ValueError(fmt::format("bincount: minlength must be non-negative; got {}", minlength));
  if (weights && weights->shape() != x.shape()) {
    throw ValueError(fmt::format("bincount: weights {} must have x's shape {}", weights->shape().to_string(),
                                 x.shape().to_string()));
  }
  // The length depends on the values: read on the host (as TensorFlow's bincount sizes its output).
  int64_t length = minlength;
  if (x.num_elements() > 0) {
    const auto lo = static_cast<int64_t>(min(x).item()), hi = static_cast<int64_t>(max(x).item());
    if (lo < 0) throw InvalidArgumentError(fmt::format("bincount: x must be non-negative; it holds {}", lo));
    length = std::max(length, hi + 1);
  }
  // A segment sum of the weights (or ones) by value; a 2-D x's rows as blocks of `length` segments each.
  const Tensor counted = weights ? *weights : Tensor::ones(x.shape(), DType::int32);
  if (r == 1) return segment_sum(counted, x, length);
  const int64_t rows = x.shape()[0], n = x.num_elements();
  const Tensor row_base = core::reshape(arange(0, static_cast<double>(rows * length), static_cast<double>(length),
                                               DType::int64),
                                        Shape({rows, 1}));
  const Tensor ids = core::add(cast(x, DType::int64), where_is(row_base, x));
  return core::reshape(segment_sum(core::reshape(counted, Shape({n})), core::reshape(ids, Shape({n})), rows * length),
                       Shape({rows, length}));
}
Tensor in_top_k(const Tensor& targets, const Tensor& predictions, int64_t k) {
  if (predictions.shape().rank() != 2 || targets.shape().rank() != 1 || targets.shape()[0] != predictions.shape()[0]) {
    throw ValueError(fmt::format("in_top_k needs targets (batch,) and predictions (batch, classes); got {} and {}",
                                 targets.shape().to_string(), predictions.shape().to_string()));
  }
  const Tensor p = detail::floating(predictions);
  const Tensor target_value = take_along_axis(p, expand_dims(cast(targets, DType::int32), 1), 1);  // (batch, 1)
  // In the top k when fewer than k predictions are above it (ties count as in); a non-finite target never is.
  const Tensor above = sum(cast(core::compare(p, target_value, core::CompareKind::greater), DType::int32), 1);
  const Tensor in = core::compare(above, Tensor::scalar(k, DType::int32), core::CompareKind::less);
  return core::compare(in, squeeze(isfinite(target_value), 1), core::CompareKind::logical_and);
}
Tensor multi_hot(const Tensor& inputs, int64_t num_classes, DType dtype) {
  const int r = inputs.shape().rank();
  if (r == 0) throw ValueError("multi_hot needs class indices of rank 1 or more");
  return max(one_hot(inputs, num_classes, -1, dtype), r - 1);
}
Tensor isin(const Tensor& x1, const Tensor& x2, bool invert) {
  const Tensor found = any(against_each(x1, x2, core::CompareKind::equal), -1);
  return invert ? logical_not(found) : found;
}
Tensor copy(const Tensor& x) {
  // Floats through x·1 (a new buffer, the gradient passing through; -0.0 and NaN kept), others as a clone.
  return is_floating(x.dtype()) ? core::mul(x, Tensor::scalar(1.0, x.dtype())) : x.clone();
}

}  // namespace osprey::keras::ops
