// Walking a StridedGeometry (ops/attrs.h) on the CPU: the output's innermost rows, with every operand's offset.
#pragma once

#include <cstdint>

#include "ops/attrs.h"

namespace osprey::cpu {

/// The number of innermost rows of `g` (its output's elements over the last merged axis).
inline int64_t strided_rows(const ops::StridedGeometry& g) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < g.rank; ++i) rows *= g.dims[i];
  return rows;
}

/// Calls f(row, off) for rows [begin, end) of `g`, `off[k]` operand k's element offset at the row's start; the
/// row's elements are then off[k] + j·g.strides[k][g.rank − 1], j < g.dims[g.rank − 1].
template <int N, typename F>
void for_strided_rows(const ops::StridedGeometry& g, int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;  // no rows (an empty outer axis: its index would divide by zero)
  const int r = g.rank;
  int64_t idx[ops::kMaxBroadcastRank] = {};
  int64_t rem = begin;
  for (int i = r - 2; i >= 0; --i) {
    idx[i] = rem % g.dims[i];
    rem /= g.dims[i];
  }
  int64_t off[N] = {};
  for (int k = 0; k < N; ++k) {
    for (int i = 0; i + 1 < r; ++i) off[k] += idx[i] * g.strides[k][i];
  }
  for (int64_t row = begin; row < end; ++row) {
    f(row, static_cast<const int64_t*>(off));
    for (int i = r - 2; i >= 0; --i) {  // the next row: carry through the outer axes
      for (int k = 0; k < N; ++k) off[k] += g.strides[k][i];
      if (++idx[i] < g.dims[i]) break;
      for (int k = 0; k < N; ++k) off[k] -= g.strides[k][i] * g.dims[i];
      idx[i] = 0;
    }
  }
}

}  // namespace osprey::cpu
