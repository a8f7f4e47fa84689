// Concatenation and slicing along one axis: forward through dispatch, each the other's gradient.
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/attrs.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

// `axis` in [-rank, rank) made non-negative; InvalidArgumentError naming the op otherwise.
static int normalize_axis(int axis, int rank, const char* op) {
  if (axis < -rank || axis >= rank) {
    throw InvalidArgumentError(fmt::format("{}: axis {} is out of range for tensors of rank {} (valid: [{}, {}))", op,
                                           axis, rank, -rank, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

static AxisBlocks blocks_of(const Shape& shape, int axis, int64_t begin) {
  const auto dims = shape.dims();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= dims[i];
  for (int i = axis + 1; i < shape.rank(); ++i) inner *= dims[i];
  return {outer, inner, begin};
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw InvalidArgumentError("concat needs at least one tensor, got none");
  const Shape& first = xs[0].shape();
  const int ax = normalize_axis(axis, first.rank(), "ConcatV2");
  int64_t total = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Shape& s = xs[i].shape();
    bool ok = s.rank() == first.rank() && xs[i].dtype() == xs[0].dtype();
    for (int d = 0; ok && d < s.rank(); ++d) ok = d == ax || s[d] == first[d];
    if (!ok) {
      throw InvalidArgumentError(fmt::format("ConcatV2: all inputs must have the same dtype and the same dimensions "
                                             "except on axis {}; input 0 is {} {} and input {} is {} {}",
                                             axis, dtype_name(xs[0].dtype()), first.to_string(), i,
                                             dtype_name(xs[i].dtype()), s.to_string()));
    }
    total += s[ax];
  }
  std::vector<Tensor> in(xs);
  auto& dev = place(OpId::Concat, "ConcatV2", in);
  Tensor out = Tensor::empty(first.with_dim(ax, total), xs[0].dtype(), &dev);
  const AxisBlocks attrs = blocks_of(first, ax, 0);
  run(OpId::Concat, dev, in, {&out, 1}, &attrs);
  maybe_record("ConcatV2", in, {&out, 1}, [&] {
    std::vector<int64_t> sizes;
    for (const auto& x : in) sizes.push_back(x.shape()[ax]);
    return BackwardFn([sizes, ax](const std::vector<Tensor>& g) {
      std::vector<Tensor> grads;
      int64_t begin = 0;
      for (int64_t size : sizes) {
        grads.push_back(slice_axis(g[0], ax, begin, size));
        begin += size;
      }
      return grads;
    });
  });
  return out;
}

Tensor slice_axis(const Tensor& x, int axis, int64_t begin, int64_t size) {
  const int ax = normalize_axis(axis, x.shape().rank(), "Slice");
  const int64_t dim = x.shape()[ax];
  if (begin < 0 || size < 0 || begin + size > dim) {
    throw InvalidArgumentError(fmt::format("Slice: [{}, {}) is out of range for axis {} of shape {} (size {})", begin,
                                           begin + size, axis, x.shape().to_string(), dim));
  }
  Tensor in[1] = {x};
  auto& dev = place(OpId::Slice, "Slice", in);
  Tensor out = Tensor::empty(x.shape().with_dim(ax, size), x.dtype(), &dev);
  const AxisBlocks attrs = blocks_of(x.shape(), ax, begin);
  run(OpId::Slice, dev, in, {&out, 1}, &attrs);
  maybe_record("Slice", in, {&out, 1}, [&] {
    return BackwardFn([shape = x.shape(), ax, begin, size](const std::vector<Tensor>& g) {
      // The slice's gradient in place, zeros around it.
      std::vector<Tensor> pieces;
      if (begin > 0) pieces.push_back(Tensor::zeros(shape.with_dim(ax, begin), g[0].dtype()));
      pieces.push_back(g[0]);
      if (begin + size < shape[ax]) {
        pieces.push_back(Tensor::zeros(shape.with_dim(ax, shape[ax] - begin - size), g[0].dtype()));
      }
      return std::vector<Tensor>{pieces.size() == 1 ? g[0] : concat(pieces, ax)};
    });
  });
  return out;
}

std::vector<Tensor> split(const Tensor& x, int axis, const std::vector<int64_t>& sizes) {
  const int ax = normalize_axis(axis, x.shape().rank(), "Split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw InvalidArgumentError(fmt::format("Split: the sizes must be >= 0; got {}", fmt::join(sizes, ", ")));
    total += s;
  }
  if (total != x.shape()[ax]) {
    throw InvalidArgumentError(fmt::format("Split: the sizes ({}) add up to {}, but axis {} of shape {} has {}",
                                           fmt::join(sizes, ", "), total, axis, x.shape().to_string(), x.shape()[ax]));
  }
  Tensor in[1] = {x};
  auto& dev = place(OpId::Slice, "Split", in);
  std::vector<Tensor> outs;
  outs.reserve(sizes.size());
  int64_t begin = 0;
  for (int64_t size : sizes) {
    Tensor out = Tensor::empty(x.shape().with_dim(ax, size), x.dtype(), &dev);
    const AxisBlocks attrs = blocks_of(x.shape(), ax, begin);
    run(OpId::Slice, dev, in, {&out, 1}, &attrs);
    outs.push_back(std::move(out));
    begin += size;
  }
  maybe_record("Split", in, outs, [&] {
    return BackwardFn([ax](const std::vector<Tensor>& g) { return std::vector<Tensor>{concat(g, ax)}; });
  });
  return outs;
}

void assign(const Tensor& dst, const Tensor& src) {
  if (!dst.defined() || !src.defined() || dst.shape() != src.shape() || dst.dtype() != src.dtype()) {
    throw InvalidArgumentError(fmt::format("assign: the value must have the destination's shape and dtype; got {} {} "
                                           "for {} {}",
                                           src.defined() ? dtype_name(src.dtype()) : "undefined",
                                           src.defined() ? src.shape().to_string() : "",
                                           dst.defined() ? dtype_name(dst.dtype()) : "undefined",
                                           dst.defined() ? dst.shape().to_string() : ""));
  }
  Tensor in[2] = {dst, src};
  auto& dev = place(OpId::Cast, "Assign", in, /*pinned=*/true);  // where dst lives; src copied there
  const CastAttrs attrs{dst.dtype()};
  Tensor out = dst;
  run(OpId::Cast, dev, {in + 1, 1}, {&out, 1}, &attrs);
}

Tensor transpose(const Tensor& x, const std::vector<int>& perm) {
  const int rank = x.shape().rank();
  std::vector<bool> seen(static_cast<std::size_t>(std::max(rank, 0)), false);
  bool ok = static_cast<int>(perm.size()) == rank && rank <= kMaxTransposeRank;
  for (int p : perm) {
    ok = ok && p >= 0 && p < rank && !seen[static_cast<std::size_t>(p)];
    if (ok) seen[static_cast<std::size_t>(p)] = true;
  }
  if (!ok) {
    throw InvalidArgumentError(fmt::format("Transpose: perm [{}] is not a permutation of the {} axes of shape {} "
                                           "(rank at most {})",
                                           fmt::join(perm, ", "), rank, x.shape().to_string(), kMaxTransposeRank));
  }
  TransposeAttrs attrs{rank, {}, {}};
  std::vector<int64_t> out_dims;
  for (int i = 0; i < rank; ++i) {
    attrs.in_dims[i] = x.shape()[i];
    attrs.perm[i] = perm[static_cast<std::size_t>(i)];
    out_dims.push_back(x.shape()[perm[static_cast<std::size_t>(i)]]);
  }
  Tensor in[1] = {x};
  auto& dev = place(OpId::Transpose, "Transpose", in);
  Tensor out = Tensor::empty(Shape(out_dims), x.dtype(), &dev);
  run(OpId::Transpose, dev, in, {&out, 1}, &attrs);
  maybe_record("Transpose", in, {&out, 1}, [&] {
    std::vector<int> inverse(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<int>(i);
    return BackwardFn([inverse](const std::vector<Tensor>& g) { return std::vector<Tensor>{transpose(g[0], inverse)}; });
  });
  return out;
}

}  // namespace osprey::ops
