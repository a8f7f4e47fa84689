// The projective transform that maps 4 end points onto 4 start points (Keras's compute_homography_matrix: the
// 8 unknowns [a0, a1, a2, b0, b1, b2, c0, c1] of ImageProjectiveTransformV3), solved in double by Gaussian
// elimination with partial pivoting. Shared by keras::ops::perspective_transform and RandomPerspective.
#pragma once

#include <array>
#include <cmath>
#include <utility>

namespace osprey::keras::imaging {

/// start and end: 4 points (x, y) each, as 8 numbers. Returns false (and leaves `out`) when the points are
/// degenerate (three of them on a line: no transform maps them).
inline bool homography(const float* start, const float* end, std::array<float, 8>& out) {
  double a[8][9] = {};
  for (int k = 0; k < 4; ++k) {
    const double sx = start[2 * k], sy = start[2 * k + 1], ex = end[2 * k], ey = end[2 * k + 1];
    double* r0 = a[2 * k];
    double* r1 = a[2 * k + 1];
    r0[0] = ex, r0[1] = ey, r0[2] = 1.0, r0[6] = -sx * ex, r0[7] = -sx * ey, r0[8] = sx;
    r1[3] = ex, r1[4] = ey, r1[5] = 1.0, r1[6] = -sy * ex, r1[7] = -sy * ey, r1[8] = sy;
  }
  for (int col = 0; col < 8; ++col) {
    int pivot = col;
    for (int r = col + 1; r < 8; ++r) {
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    }
    if (!(std::abs(a[pivot][col]) > 1e-12)) return false;
    if (pivot != col) {
      for (int c = 0; c < 9; ++c) std::swap(a[pivot][c], a[col][c]);
    }
    for (int r = 0; r < 8; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      if (f == 0.0) continue;
      for (int c = col; c < 9; ++c) a[r][c] -= f * a[col][c];
    }
  }
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<float>(a[i][8] / a[i][i]);
  return true;
}

}  // namespace osprey::keras::imaging
