// The linear-algebra kernels' algorithms on one matrix, in double, shared by the CPU kernels (kernels_linalg.cpp)
// and the CUDA ones (kernels_linalg.cu: one thread per matrix), so both backends compute the same thing: LU with
// partial pivoting, Cholesky, triangular solves, cyclic Jacobi for the symmetric eigendecomposition, one-sided
// Jacobi for the SVD, Householder QR. Row-major matrices; callers provide the scratch. Meant for the small and
// mid-sized matrices of keras.ops.linalg, not for large dense solvers.
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define OSPREY_LINALG_HD __host__ __device__
#else
#define OSPREY_LINALG_HD
#endif

namespace osprey::linalg_core {

constexpr int kMaxSweeps = 60;

/// LU with partial pivoting of the n x n matrix m, in place (L's multipliers below the diagonal, U on and above):
/// row i of the result is row perm[i] of the input. Pivots are the first row of largest magnitude (Eigen's); a zero
/// pivot column is left as it is. Returns the permutation's sign.
OSPREY_LINALG_HD inline double lu_in_place(double* m, int32_t* perm, int64_t n) {
  double sign = 1.0;
  for (int64_t i = 0; i < n; ++i) perm[i] = static_cast<int32_t>(i);
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i) {
      if (::fabs(m[i * n + k]) > ::fabs(m[p * n + k])) p = i;
    }
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) {
        const double t = m[k * n + j];
        m[k * n + j] = m[p * n + j];
        m[p * n + j] = t;
      }
      const int32_t t = perm[k];
      perm[k] = perm[p];
      perm[p] = t;
      sign = -sign;
    }
    const double pivot = m[k * n + k];
    if (pivot == 0.0) continue;
    for (int64_t i = k + 1; i < n; ++i) {
      const double l = m[i * n + k] / pivot;
      m[i * n + k] = l;
      for (int64_t j = k + 1; j < n; ++j) m[i * n + j] -= l * m[k * n + j];
    }
  }
  return sign;
}

/// The lower Cholesky factor l (n x n, its upper triangle zeroed) of the matrix x, reading x's lower triangle. From
/// the first non-positive pivot on the factor is NaN (TensorFlow's kernel gives NaN there too).
OSPREY_LINALG_HD inline void cholesky(const float* x, double* l, int64_t n) {
  for (int64_t i = 0; i < n * n; ++i) l[i] = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    double d = x[j * n + j];
    for (int64_t k = 0; k < j; ++k) d -= l[j * n + k] * l[j * n + k];
    const double ljj = d > 0.0 ? ::sqrt(d) : NAN;
    l[j * n + j] = ljj;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = x[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = s / ljj;
    }
  }
}

/// Solves M·x = r for one right-hand side: M = a (n x n) or, with `adjoint`, aᵀ, triangular (`lower`: a's lower
/// triangle is read, else its upper one), its diagonal taken as ones with `unit`. r[i] is rhs[perm[i] * stride]
/// (perm may be null: the identity). x: n doubles.
OSPREY_LINALG_HD inline void triangular_solve(const float* a, int64_t n, const float* rhs, int64_t stride,
                                              const int32_t* perm, bool lower, bool adjoint, bool unit, double* x) {
  for (int64_t i = 0; i < n; ++i) x[i] = rhs[(perm ? perm[i] : i) * stride];
  const bool forward = lower != adjoint;  // M is lower triangular
  for (int64_t step = 0; step < n; ++step) {
    const int64_t i = forward ? step : n - 1 - step;
    double v = x[i];
    const int64_t j0 = forward ? 0 : i + 1, j1 = forward ? i : n;
    for (int64_t j = j0; j < j1; ++j) v -= static_cast<double>(adjoint ? a[j * n + i] : a[i * n + j]) * x[j];
    x[i] = unit ? v : v / static_cast<double>(a[i * n + i]);
  }
}

/// Makes the largest-magnitude entry of column j of v (rows x cols) positive (the first of equal ones), flipping
/// column j of `also` (also_rows x also_cols; may be null) with it: eigen- and singular vectors have no sign of
/// their own, and this gives every backend the same one.
OSPREY_LINALG_HD inline void fix_sign(double* v, int64_t rows, int64_t cols, int64_t j, double* also, int64_t also_rows,
                                      int64_t also_cols) {
  if (rows == 0) return;
  int64_t best = 0;
  for (int64_t i = 1; i < rows; ++i) {
    if (::fabs(v[i * cols + j]) > ::fabs(v[best * cols + j]) * (1.0 + 1e-12)) best = i;
  }
  if (v[best * cols + j] >= 0.0) return;
  for (int64_t i = 0; i < rows; ++i) v[i * cols + j] = -v[i * cols + j];
  if (also) {
    for (int64_t i = 0; i < also_rows; ++i) also[i * also_cols + j] = -also[i * also_cols + j];
  }
}

// Swaps columns x and y of the (rows x cols) matrix m.
OSPREY_LINALG_HD inline void swap_columns(double* m, int64_t rows, int64_t cols, int64_t x, int64_t y) {
  for (int64_t r = 0; r < rows; ++r) {
    const double t = m[r * cols + x];
    m[r * cols + x] = m[r * cols + y];
    m[r * cols + y] = t;
  }
}

// The rotation (c, s) of columns p, q of the (rows x cols) matrix m: p <- c·p - s·q, q <- s·p + c·q.
OSPREY_LINALG_HD inline void rotate_columns(double* m, int64_t rows, int64_t cols, int64_t p, int64_t q, double c,
                                            double s) {
  for (int64_t r = 0; r < rows; ++r) {
    const double x = m[r * cols + p], y = m[r * cols + q];
    m[r * cols + p] = c * x - s * y;
    m[r * cols + q] = s * x + c * y;
  }
}

/// Cyclic Jacobi on the symmetric n x n matrix s (both triangles filled; destroyed): eigenvalues w ascending and
/// eigenvectors as the columns of v (n x n).
OSPREY_LINALG_HD inline void symmetric_eig(double* s, int64_t n, double* w, double* v) {
  for (int64_t i = 0; i < n * n; ++i) v[i] = 0.0;
  for (int64_t i = 0; i < n; ++i) v[i * n + i] = 1.0;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    double off = 0.0, total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (i == j) total += s[i * n + j] * s[i * n + j];
        else off += s[i * n + j] * s[i * n + j];
      }
    }
    if (off == 0.0 || off <= 1e-30 * (total + off)) break;
    for (int64_t p = 0; p + 1 < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = s[p * n + q];
        if (apq == 0.0) continue;
        const double theta = (s[q * n + q] - s[p * n + p]) / (2.0 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (::fabs(theta) + ::sqrt(theta * theta + 1.0));
        const double c = 1.0 / ::sqrt(t * t + 1.0), sn = t * c;
        rotate_columns(s, n, n, p, q, c, sn);  // S·J
        for (int64_t r = 0; r < n; ++r) {     // Jᵀ·S
          const double x = s[p * n + r], y = s[q * n + r];
          s[p * n + r] = c * x - sn * y;
          s[q * n + r] = sn * x + c * y;
        }
        s[p * n + q] = s[q * n + p] = 0.0;
        rotate_columns(v, n, n, p, q, c, sn);
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) w[i] = s[i * n + i];
  for (int64_t i = 1; i < n; ++i) {  // insertion sort, ascending (stable)
    for (int64_t j = i; j > 0 && w[j] < w[j - 1]; --j) {
      const double t = w[j];
      w[j] = w[j - 1];
      w[j - 1] = t;
      swap_columns(v, n, n, j, j - 1);
    }
  }
  for (int64_t j = 0; j < n; ++j) fix_sign(v, n, n, j, nullptr, 0, 0);
}

/// Columns [from, cols) of the (rows x cols) matrix q made orthonormal to every column before them (Gram-Schmidt,
/// twice, over the standard basis vectors in order): completes an orthonormal basis. c: rows doubles of scratch.
OSPREY_LINALG_HD inline void complete_basis(double* q, int64_t rows, int64_t cols, int64_t from, double* c) {
  int64_t next_e = 0;
  for (int64_t j = from; j < cols; ++j) {
    for (; next_e < rows; ++next_e) {
      for (int64_t r = 0; r < rows; ++r) c[r] = r == next_e ? 1.0 : 0.0;
      for (int pass = 0; pass < 2; ++pass) {
        for (int64_t k = 0; k < j; ++k) {
          double d = 0.0;
          for (int64_t r = 0; r < rows; ++r) d += q[r * cols + k] * c[r];
          for (int64_t r = 0; r < rows; ++r) c[r] -= d * q[r * cols + k];
        }
      }
      double norm = 0.0;
      for (int64_t r = 0; r < rows; ++r) norm += c[r] * c[r];
      norm = ::sqrt(norm);
      if (norm > 1e-6) {
        for (int64_t r = 0; r < rows; ++r) q[r * cols + j] = c[r] / norm;
        ++next_e;
        break;
      }
    }
  }
}

/// Doubles of scratch svd_tall needs for a (rows x cols) matrix.
OSPREY_LINALG_HD inline int64_t svd_scratch(int64_t rows, int64_t cols) { return cols + rows; }

/// One-sided Jacobi SVD of the (rows x cols) matrix x, rows >= cols (destroyed): x = u·diag(s)·vᵀ, s (cols)
/// descending, u (rows x ucols; ucols = cols, or rows to complete it to a square orthonormal matrix), v (cols x
/// cols). scratch: svd_scratch(rows, cols) doubles.
OSPREY_LINALG_HD inline void svd_tall(double* x, int64_t rows, int64_t cols, int64_t ucols, double* s, double* u,
                                      double* v, double* scratch) {
  for (int64_t i = 0; i < cols * cols; ++i) v[i] = 0.0;
  for (int64_t i = 0; i < cols; ++i) v[i * cols + i] = 1.0;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p + 1 < cols; ++p) {
      for (int64_t q = p + 1; q < cols; ++q) {
        double alpha = 0.0, beta = 0.0, gamma = 0.0;
        for (int64_t r = 0; r < rows; ++r) {
          const double xp = x[r * cols + p], xq = x[r * cols + q];
          alpha += xp * xp;
          beta += xq * xq;
          gamma += xp * xq;
        }
        if (gamma == 0.0 || ::fabs(gamma) <= 1e-15 * ::sqrt(alpha * beta)) continue;
        rotated = true;
        const double zeta = (beta - alpha) / (2.0 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (::fabs(zeta) + ::sqrt(1.0 + zeta * zeta));
        const double c = 1.0 / ::sqrt(1.0 + t * t), sn = c * t;
        rotate_columns(x, rows, cols, p, q, c, sn);
        rotate_columns(v, cols, cols, p, q, c, sn);
      }
    }
    if (!rotated) break;
  }
  for (int64_t j = 0; j < cols; ++j) {
    double ss = 0.0;
    for (int64_t r = 0; r < rows; ++r) ss += x[r * cols + j] * x[r * cols + j];
    s[j] = ::sqrt(ss);
  }
  for (int64_t i = 1; i < cols; ++i) {  // insertion sort, descending (stable)
    for (int64_t j = i; j > 0 && s[j] > s[j - 1]; --j) {
      const double t = s[j];
      s[j] = s[j - 1];
      s[j - 1] = t;
      swap_columns(x, rows, cols, j, j - 1);
      swap_columns(v, cols, cols, j, j - 1);
    }
  }
  for (int64_t i = 0; i < rows * ucols; ++i) u[i] = 0.0;
  const double largest = cols ? s[0] : 0.0;
  int64_t with_direction = 0;  // columns of (numerically) zero norm get theirs from the basis completion
  for (int64_t j = 0; j < cols; ++j) {
    if (s[j] > 0.0 && s[j] > largest * 1e-13) {
      for (int64_t r = 0; r < rows; ++r) u[r * ucols + j] = x[r * cols + j] / s[j];
      ++with_direction;
    }
  }
  complete_basis(u, rows, ucols, with_direction, scratch);
  for (int64_t j = 0; j < cols; ++j) fix_sign(v, cols, cols, j, u, rows, ucols);
}

/// Householder QR of the (m x n) matrix a (destroyed): q (m x qc, the first qc columns of H1·H2·…) and r (qc x n,
/// upper triangular), qc = min(m, n) or m. Each reflection makes the diagonal entry -sign(x0)·‖x‖ (Eigen's and
/// LAPACK's choice, so R's signs are TensorFlow's); a column already zero below the diagonal is left unreflected.
/// scratch: m·m + m doubles.
OSPREY_LINALG_HD inline void householder_qr(double* a, int64_t m, int64_t n, int64_t qc, double* q, double* r,
                                            double* scratch) {
  double* full_q = scratch;  // m x m
  double* v = scratch + m * m;
  for (int64_t i = 0; i < m * m; ++i) full_q[i] = 0.0;
  for (int64_t i = 0; i < m; ++i) full_q[i * m + i] = 1.0;
  const int64_t steps = m - 1 < n ? m - 1 : n;
  for (int64_t k = 0; k < steps; ++k) {
    double tail = 0.0;
    for (int64_t i = k + 1; i < m; ++i) tail += a[i * n + k] * a[i * n + k];
    if (tail == 0.0) continue;
    const double x0 = a[k * n + k];
    const double norm = ::sqrt(x0 * x0 + tail);
    const double alpha = x0 >= 0.0 ? -norm : norm;
    v[k] = x0 - alpha;
    for (int64_t i = k + 1; i < m; ++i) v[i] = a[i * n + k];
    const double vv = v[k] * v[k] + tail;
    for (int64_t j = k; j < n; ++j) {  // A <- (I - 2vvᵀ/vᵀv)·A on rows k.., columns k..
      double d = 0.0;
      for (int64_t i = k; i < m; ++i) d += v[i] * a[i * n + j];
      const double f = 2.0 * d / vv;
      for (int64_t i = k; i < m; ++i) a[i * n + j] -= f * v[i];
    }
    for (int64_t i = k + 1; i < m; ++i) a[i * n + k] = 0.0;
    a[k * n + k] = alpha;
    for (int64_t row = 0; row < m; ++row) {  // Q <- Q·(I - 2vvᵀ/vᵀv)
      double d = 0.0;
      for (int64_t i = k; i < m; ++i) d += full_q[row * m + i] * v[i];
      const double f = 2.0 * d / vv;
      for (int64_t i = k; i < m; ++i) full_q[row * m + i] -= f * v[i];
    }
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < qc; ++j) q[i * qc + j] = full_q[i * m + j];
  }
  for (int64_t i = 0; i < qc; ++i) {
    for (int64_t j = 0; j < n; ++j) r[i * n + j] = a[i * n + j];
  }
}

}  // namespace osprey::linalg_core
