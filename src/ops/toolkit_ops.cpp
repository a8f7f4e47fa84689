// The general ops behind keras::ops: broadcast_to, comparisons, where, reductions over any axes, cumulative sums
// and products, top_k. Forward through dispatch; backward as ops.
#include <numeric>

#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/broadcast.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

namespace {

Tensor unbroadcast_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  return reduce_axes(g, ReduceOp::sum, broadcast_axes(shape, g.shape()), false).reshape(shape);
}

int normalized_axis(int axis, int rank, const char* op) {
  if (axis < -rank || axis >= rank) {
    throw InvalidArgumentError(fmt::format("{}: axis {} is out of range for a tensor of rank {} (valid: [{}, {}))", op,
                                           axis, rank, -rank, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t product(const Shape& s, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) p *= s[i];
  return p;
}

bool is_float(DType t) { return t == DType::float32 || t == DType::float64; }

// The reduction of a (outer, r, inner) tensor over its middle axis, as one op and one tape node.
Tensor reduce_block(const Tensor& w, ReduceOp op, DType out_dtype) {
  const ReduceAxisAttrs attrs{op, w.shape()[0], w.shape()[1], w.shape()[2]};
  if ((op == ReduceOp::argmax || op == ReduceOp::argmin) && attrs.r == 0) {
    throw InvalidArgumentError("argmax/argmin: the reduction axis is empty (size 0)");
  }
  Tensor in[1] = {w};
  const char* name = op == ReduceOp::sum ? "Sum" : op == ReduceOp::prod ? "Prod" : op == ReduceOp::max ? "Max"
                     : op == ReduceOp::min ? "Min" : op == ReduceOp::argmax ? "ArgMax" : op == ReduceOp::argmin ? "ArgMin"
                     : op == ReduceOp::any ? "Any" : "All";
  auto& dev = place(OpId::ReduceAxis, name, in);
  Tensor out = Tensor::empty({attrs.outer, attrs.inner}, out_dtype, &dev);
  run(OpId::ReduceAxis, dev, in, {&out, 1}, &attrs);
  if (op == ReduceOp::sum || op == ReduceOp::prod || op == ReduceOp::max || op == ReduceOp::min) {
    maybe_record(name, in, {&out, 1}, [&] {
      return BackwardFn([w = in[0], y = out, op](const std::vector<Tensor>& g) -> std::vector<Tensor> {
        const Shape kept{w.shape()[0], 1, w.shape()[2]};
        const Tensor gk = g[0].reshape(kept);
        switch (op) {
          case ReduceOp::sum: return {broadcast_to(gk, w.shape())};
          case ReduceOp::prod:
            return {mul(gk, mul(cumulative(w, 1, true, true, false), cumulative(w, 1, true, true, true)))};
          default: {  // max, min: shared between the ties
            const Tensor ties = cast(compare(w, y.reshape(kept), CompareKind::equal), w.dtype());
            const Tensor count = reduce_axes(ties, ReduceOp::sum, {1}, true);
            return {mul(ties, div(gk, count))};
          }
        }
      });
    });
  }
  return out;
}

}  // namespace

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (shape.rank() < x.shape().rank() || broadcast_shapes(x.shape(), shape) != shape) {
    throw InvalidArgumentError(fmt::format("Unable to broadcast a tensor of shape {} to shape {}",
                                           x.shape().to_string(), shape.to_string()));
  }
  if (x.shape() == shape) return x;
  const StridedGeometry g = strided_geometry(shape, {&x.shape()});
  Tensor in[1] = {x};
  auto& dev = place(OpId::BroadcastTo, "BroadcastTo", in);
  Tensor out = Tensor::empty(shape, x.dtype(), &dev);
  run(OpId::BroadcastTo, dev, in, {&out, 1}, &g);
  maybe_record("BroadcastTo", in, {&out, 1}, [&] {
    return BackwardFn([from = x.shape()](const std::vector<Tensor>& gr) {
      return std::vector<Tensor>{unbroadcast_to(gr[0], from)};
    });
  });
  return out;
}

Tensor frames(const Tensor& x, int64_t length, int64_t step) {
  const int r = x.shape().rank();
  const int64_t n = r ? x.shape()[-1] : 0;
  if (r < 1 || length < 1 || step < 1 || length > n) {
    throw InvalidArgumentError(fmt::format("frames: needs rank >= 1, 1 <= length <= the last axis and step >= 1; got "
                                           "shape {}, length {}, step {}",
                                           x.shape().to_string(), length, step));
  }
  const int64_t count = 1 + (n - length) / step, outer = product(x.shape(), 0, r - 1);
  std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end() - 1);
  dims.push_back(count);
  dims.push_back(length);
  // The BroadcastTo kernel's strided copy through overlapping rows: (outer, count, length) read at strides
  // (n, step, 1).
  StridedGeometry g{};
  g.rank = 3;
  g.dims[0] = outer, g.dims[1] = count, g.dims[2] = length;
  g.strides[0][0] = n, g.strides[0][1] = step, g.strides[0][2] = 1;
  Tensor in[1] = {x};
  auto& dev = place(OpId::BroadcastTo, "Frame", in);
  Tensor out = Tensor::empty(Shape(dims), x.dtype(), &dev);
  if (out.num_elements() > 0) run(OpId::BroadcastTo, dev, in, {&out, 1}, &g);
  maybe_record("Frame", in, {&out, 1}, [&] {
    return BackwardFn([shape = x.shape(), step, n](const std::vector<Tensor>& gr) {
      // The frames added back where they overlap; samples after the last frame get none.
      Tensor dx = overlap_add(gr[0], step);
      const int64_t covered = dx.shape()[-1];
      if (covered < n) dx = concat({dx, Tensor::zeros(dx.shape().with_dim(dx.shape().rank() - 1, n - covered), dx.dtype())}, -1);
      return std::vector<Tensor>{reshape(dx, shape)};
    });
  });
  return out;
}

Tensor overlap_add(const Tensor& frames, int64_t step) {
  const int r = frames.shape().rank();
  if (r < 2 || step < 1) {
    throw InvalidArgumentError(fmt::format("overlap_add: needs frames of rank >= 2 and step >= 1; got shape {}, step {}",
                                           frames.shape().to_string(), step));
  }
  const int64_t count = frames.shape()[-2], length = frames.shape()[-1], outer = product(frames.shape(), 0, r - 2);
  const int64_t total = count ? (count - 1) * step + length : 0, segments = (length + step - 1) / step;
  std::vector<int64_t> dims(frames.shape().dims().begin(), frames.shape().dims().end() - 2);
  dims.push_back(total);
  if (total == 0 || outer == 0) return Tensor::zeros(Shape(dims), frames.dtype());
  // Each frame cut into `segments` pieces of `step` (zero-padded), `segments` zero frames after the last: a reshape
  // then shifts piece j of frame f to output piece f + j, and a sum over the pieces adds them up.
  Tensor f = reshape(frames, Shape({outer, count, length}));
  if (segments * step > length) {
    f = concat({f, Tensor::zeros(Shape({outer, count, segments * step - length}), f.dtype())}, 2);
  }
  f = concat({f, Tensor::zeros(Shape({outer, segments, segments * step}), f.dtype())}, 1);
  f = transpose(reshape(f, Shape({outer, count + segments, segments, step})), std::vector<int>{0, 2, 1, 3});
  f = slice_axis(reshape(f, Shape({outer, (count + segments) * segments, step})), 1, 0, (count + segments - 1) * segments);
  f = reduce_axes(reshape(f, Shape({outer, segments, count + segments - 1, step})), ReduceOp::sum, {1});
  f = slice_axis(reshape(f, Shape({outer, (count + segments - 1) * step})), 1, 0, total);
  return reshape(f, Shape(dims));
}

Tensor compare(const Tensor& a_in, const Tensor& b_in, CompareKind kind) {
  const bool logical = kind == CompareKind::logical_and || kind == CompareKind::logical_or ||
                       kind == CompareKind::logical_xor;
  Tensor a = a_in, b = b_in;
  if (logical) {
    if (a.dtype() != DType::bool_) a = cast(a, DType::bool_);
    if (b.dtype() != DType::bool_) b = cast(b, DType::bool_);
  } else if (a.dtype() != b.dtype()) {
    throw InvalidArgumentError(fmt::format("Comparison of {} with {}: cast one side first", dtype_name(a.dtype()),
                                           dtype_name(b.dtype())));
  }
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape());
  const CompareAttrs attrs{kind, strided_geometry(out_shape, {&a.shape(), &b.shape()})};
  Tensor in[2] = {a, b};
  auto& dev = place(OpId::Compare, "Compare", in);
  Tensor out = Tensor::empty(out_shape, DType::bool_, &dev);
  run(OpId::Compare, dev, in, {&out, 1}, &attrs);
  return out;
}

Tensor integer_binary(const Tensor& a, const Tensor& b, IntegerKind kind) {
  static const char* names[] = {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd", "lcm"};
  const char* name = names[static_cast<int>(kind)];
  const bool integer = a.dtype() == DType::int32 || a.dtype() == DType::int64;
  if (!integer || a.dtype() != b.dtype()) {
    throw InvalidArgumentError(fmt::format("{}: expects two integer tensors (int32 or int64) of one dtype; got {} and {}",
                                           name, dtype_name(a.dtype()), dtype_name(b.dtype())));
  }
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape());
  const IntegerBinaryAttrs attrs{kind, strided_geometry(out_shape, {&a.shape(), &b.shape()})};
  Tensor in[2] = {a, b};
  auto& dev = place(OpId::IntegerBinary, name, in);
  Tensor out = Tensor::empty(out_shape, a.dtype(), &dev);
  run(OpId::IntegerBinary, dev, in, {&out, 1}, &attrs);
  return out;
}

Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
  if (x.dtype() != y.dtype()) {
    throw InvalidArgumentError(fmt::format("where: x and y differ in dtype ({} vs {}); cast one side first",
                                           dtype_name(x.dtype()), dtype_name(y.dtype())));
  }
  const Tensor c = condition.dtype() == DType::bool_ ? condition : cast(condition, DType::bool_);
  const Shape out_shape = broadcast_shapes(broadcast_shapes(c.shape(), x.shape()), y.shape());
  const StridedGeometry g = strided_geometry(out_shape, {&c.shape(), &x.shape(), &y.shape()});
  Tensor in[3] = {c, x, y};
  auto& dev = place(OpId::Select, "SelectV2", in);
  Tensor out = Tensor::empty(out_shape, x.dtype(), &dev);
  run(OpId::Select, dev, in, {&out, 1}, &g);
  if (is_float(x.dtype())) {
    maybe_record("SelectV2", in, {&out, 1}, [&] {
      return BackwardFn([c = in[0], xs = x.shape(), ys = y.shape(), dt = x.dtype()](const std::vector<Tensor>& gr) {
        const Tensor zero = Tensor::scalar(0.0, dt);
        return std::vector<Tensor>{Tensor(), unbroadcast_to(where(c, gr[0], zero), xs),
                                   unbroadcast_to(where(c, zero, gr[0]), ys)};
      });
    });
  }
  return out;
}

Tensor reduce_axes(const Tensor& x_in, ReduceOp op, const std::vector<int>& axes, bool keepdims) {
  Tensor x = x_in;
  const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  if (op == ReduceOp::any || op == ReduceOp::all) {
    if (x.dtype() != DType::bool_) x = cast(x, DType::bool_);
  } else if (x.dtype() == DType::bool_) {
    if (arg || op == ReduceOp::sum || op == ReduceOp::prod) x = cast(x, DType::int32);
  }
  const int r = x.shape().rank();
  std::vector<bool> reduced(static_cast<std::size_t>(r), axes.empty());
  for (int a : axes) {
    const int ax = normalized_axis(a, r, "reduce");
    if (reduced[static_cast<std::size_t>(ax)]) {
      throw InvalidArgumentError(fmt::format("reduce: axis {} is given more than once", a));
    }
    reduced[static_cast<std::size_t>(ax)] = true;
  }
  const int count = static_cast<int>(std::count(reduced.begin(), reduced.end(), true));
  if (arg && count != 1 && !(axes.empty() && r <= 1)) {
    if (!axes.empty()) throw InvalidArgumentError(fmt::format("argmax/argmin take one axis, got {}", axes.size()));
    const Tensor flat = reshape(x, {x.num_elements()});  // axis=None: the index into the flattened tensor
    return reduce_axes(flat, op, {0}, false);
  }
  std::vector<int64_t> out_dims;
  for (int i = 0; i < r; ++i) {
    if (!reduced[static_cast<std::size_t>(i)]) out_dims.push_back(x.shape()[i]);
    else if (keepdims) out_dims.push_back(1);
  }
  // The reduced axes as one block: (outer, r, inner) directly when they are adjacent (axes of size 1 ignored),
  // else the kept axes moved before them.
  int first = r, last = -1;
  for (int i = 0; i < r; ++i) {
    if (reduced[static_cast<std::size_t>(i)] && x.shape()[i] != 1) first = std::min(first, i), last = std::max(last, i);
  }
  bool adjacent = true;
  for (int i = first; i <= last; ++i) adjacent = adjacent && (reduced[static_cast<std::size_t>(i)] || x.shape()[i] == 1);
  Tensor work;
  if (last < 0) {
    work = reshape(x, {x.num_elements(), 1, 1});
  } else if (adjacent) {
    work = reshape(x, {product(x.shape(), 0, first), product(x.shape(), first, last + 1), product(x.shape(), last + 1, r)});
  } else {
    std::vector<int> perm;
    int64_t kept = 1, red = 1;
    for (int i = 0; i < r; ++i) {
      if (!reduced[static_cast<std::size_t>(i)]) perm.push_back(i), kept *= x.shape()[i];
    }
    for (int i = 0; i < r; ++i) {
      if (reduced[static_cast<std::size_t>(i)]) perm.push_back(i), red *= x.shape()[i];
    }
    work = reshape(transpose(x, perm), {kept, red, 1});
  }
  const DType out_dtype = arg ? DType::int32 : (op == ReduceOp::any || op == ReduceOp::all) ? DType::bool_ : x.dtype();
  return reshape(reduce_block(work, op, out_dtype), Shape(out_dims));
}

Tensor cumulative(const Tensor& x, int axis, bool prod, bool exclusive, bool reverse) {
  if (x.dtype() == DType::bool_) return cumulative(cast(x, DType::int32), axis, prod, exclusive, reverse);
  const int r = x.shape().rank();
  if (r == 0) return cumulative(x.reshape({1}), 0, prod, exclusive, reverse).reshape(x.shape());
  const int ax = normalized_axis(axis, r, prod ? "cumprod" : "cumsum");
  const CumulativeAttrs attrs{prod, exclusive, reverse, product(x.shape(), 0, ax), x.shape()[ax],
                              product(x.shape(), ax + 1, r)};
  const char* name = prod ? "Cumprod" : "Cumsum";
  Tensor in[1] = {x};
  auto& dev = place(OpId::Cumulative, name, in);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), &dev);
  run(OpId::Cumulative, dev, in, {&out, 1}, &attrs);
  if (is_float(x.dtype())) {
    maybe_record(name, in, {&out, 1}, [&] {
      return BackwardFn([x = in[0], y = out, ax, prod, exclusive, reverse](const std::vector<Tensor>& g) {
        // TensorFlow's: the reversed running sum of the upstream gradient (times the products, over x).
        if (!prod) return std::vector<Tensor>{cumulative(g[0], ax, false, exclusive, !reverse)};
        return std::vector<Tensor>{div(cumulative(mul(g[0], y), ax, false, exclusive, !reverse), x)};
      });
    });
  }
  return out;
}

std::vector<Tensor> top_k(const Tensor& x, int64_t k, bool largest) {
  const int r = x.shape().rank();
  if (r == 0) throw InvalidArgumentError("top_k: the input must have at least one axis, got a scalar");
  const int64_t n = x.shape()[-1];
  if (k < 0 || k > n) {
    throw InvalidArgumentError(fmt::format("top_k: k = {} is not in [0, {}] (the last axis of shape {})", k, n,
                                           x.shape().to_string()));
  }
  if (x.dtype() == DType::bool_) throw InvalidArgumentError("top_k/sort: bool tensors are not ordered; cast first");
  const TopKAttrs attrs{n ? x.num_elements() / n : 0, n, k, largest};
  const Shape out_shape = x.shape().with_dim(r - 1, k);
  Tensor in[1] = {x};
  auto& dev = place(OpId::TopK, "TopKV2", in);
  Tensor outs[2] = {Tensor::empty(out_shape, x.dtype(), &dev), Tensor::empty(out_shape, DType::int32, &dev)};
  run(OpId::TopK, dev, in, outs, &attrs);
  if (x.dtype() == DType::float32) {
    maybe_record("TopKV2", in, outs, [&] {
      return BackwardFn([indices = outs[1], shape = x.shape(), attrs](const std::vector<Tensor>& g) {
        if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
        // Each value's gradient goes back to the position it came from: a row-offset scatter.
        std::vector<int64_t> offsets(static_cast<std::size_t>(attrs.rows));
        for (int64_t i = 0; i < attrs.rows; ++i) offsets[static_cast<std::size_t>(i)] = i * attrs.r;
        const Tensor flat = add(cast(indices.reshape({attrs.rows, attrs.k}), DType::int64),
                                Tensor::from_vector(offsets, {attrs.rows, 1}));
        const Tensor dx = scatter_add_rows(g[0].reshape({attrs.rows * attrs.k, 1}), flat.reshape({attrs.rows * attrs.k}),
                                           attrs.rows * attrs.r);
        return std::vector<Tensor>{dx.reshape(shape)};
      });
    });
  }
  return {outs[0], outs[1]};
}

}  // namespace osprey::ops
