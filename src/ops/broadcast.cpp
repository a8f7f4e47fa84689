#include "ops/broadcast.h"

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const int r = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(static_cast<std::size_t>(r));
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      throw InvalidArgumentError(fmt::format("Incompatible shapes: {} vs. {} (operands could not be broadcast "
                                             "together: axis {} is {} in the first and {} in the second)",
                                             a.to_string(), b.to_string(), i - r, da, db));
    }
    dims[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  return Shape(dims);
}

StridedGeometry strided_geometry(const Shape& out, std::initializer_list<const Shape*> operands) {
  const int r = out.rank();
  const int n = static_cast<int>(operands.size());
  std::vector<std::vector<int64_t>> full(static_cast<std::size_t>(n), std::vector<int64_t>(static_cast<std::size_t>(r), 0));
  int k = 0;
  for (const Shape* s : operands) {
    const int offset = r - s->rank();
    int64_t stride = 1;
    for (int i = r - 1; i >= offset; --i) {
      const int64_t d = (*s)[i - offset];
      full[k][static_cast<std::size_t>(i)] = d == 1 ? 0 : stride;
      stride *= d;
    }
    ++k;
  }
  StridedGeometry g{};
  for (int i = 0; i < r; ++i) {
    const int64_t d = out[i];
    if (d == 1) continue;
    bool merge = g.rank > 0;
    for (int o = 0; o < n && merge; ++o) merge = g.strides[o][g.rank - 1] == full[o][static_cast<std::size_t>(i)] * d;
    if (merge) {
      g.dims[g.rank - 1] *= d;
      for (int o = 0; o < n; ++o) g.strides[o][g.rank - 1] = full[o][static_cast<std::size_t>(i)];
      continue;
    }
    if (g.rank == kMaxBroadcastRank) {
      throw InvalidArgumentError(fmt::format("Broadcasting to shape {} alternates broadcast and whole axes more than "
                                             "{} times; reshape the operands first",
                                             out.to_string(), kMaxBroadcastRank));
    }
    g.dims[g.rank] = d;
    for (int o = 0; o < n; ++o) g.strides[o][g.rank] = full[o][static_cast<std::size_t>(i)];
    ++g.rank;
  }
  if (g.rank == 0) {  // every axis 1: one element
    g.rank = 1;
    g.dims[0] = 1;
  }
  return g;
}

std::vector<int> broadcast_axes(const Shape& operand, const Shape& out) {
  std::vector<int> axes;
  const int offset = out.rank() - operand.rank();
  for (int i = 0; i < out.rank(); ++i) {
    if (i < offset || (operand[i - offset] == 1 && out[i] != 1)) axes.push_back(i);
  }
  return axes;
}

}  // namespace osprey::ops
