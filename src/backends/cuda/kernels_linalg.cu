// Device kernels of the linear-algebra ops: one thread per matrix (per matrix and right-hand side column for the
// triangular solves) running ops/linalg_core.h, the CPU kernels' own algorithms, in double in a scratch buffer.
// Made for the small and mid-sized matrices of keras.ops.linalg (a thread's loop is O(n³) for n x n).
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"
#include "ops/linalg_core.h"

namespace osprey::cuda {

namespace {

namespace core = osprey::linalg_core;

__global__ void lu_factor_k(const float* a, float* lu, int32_t* perm, float* sign, double* scratch, int64_t batch,
                            int64_t n) {
  GRID_STRIDE(b, batch) {
    double* m = scratch + b * n * n;
    for (int64_t i = 0; i < n * n; ++i) m[i] = a[b * n * n + i];
    sign[b] = static_cast<float>(core::lu_in_place(m, perm + b * n, n));
    for (int64_t i = 0; i < n * n; ++i) lu[b * n * n + i] = static_cast<float>(m[i]);
  }
}

__global__ void cholesky_k(const float* a, float* l, double* scratch, int64_t batch, int64_t n) {
  GRID_STRIDE(b, batch) {
    double* f = scratch + b * n * n;
    core::cholesky(a + b * n * n, f, n);
    for (int64_t i = 0; i < n * n; ++i) l[b * n * n + i] = static_cast<float>(f[i]);
  }
}

__global__ void triangular_solve_k(const float* a, const float* rhs, const int32_t* perm, float* out, double* scratch,
                                   int64_t batch, int64_t n, int64_t k, bool lower, bool adjoint, bool unit) {
  GRID_STRIDE(t, batch * k) {
    const int64_t b = t / k, c = t % k;
    double* x = scratch + t * n;
    core::triangular_solve(a + b * n * n, n, rhs + b * n * k + c, k, perm ? perm + b * n : nullptr, lower, adjoint, unit, x);
    for (int64_t i = 0; i < n; ++i) out[(b * n + i) * k + c] = static_cast<float>(x[i]);
  }
}

__global__ void self_adjoint_eig_k(const float* a, float* w_out, float* v_out, double* scratch, int64_t batch,
                                   int64_t n) {
  GRID_STRIDE(b, batch) {
    double* s = scratch + b * (2 * n * n + n);
    double* v = s + n * n;
    double* w = v + n * n;
    const float* x = a + b * n * n;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j <= i; ++j) s[i * n + j] = s[j * n + i] = x[i * n + j];
    }
    core::symmetric_eig(s, n, w, v);
    for (int64_t i = 0; i < n; ++i) w_out[b * n + i] = static_cast<float>(w[i]);
    for (int64_t i = 0; i < n * n; ++i) v_out[b * n * n + i] = static_cast<float>(v[i]);
  }
}

__global__ void svd_k(const float* a, float* s_out, float* u_out, float* v_out, double* scratch, int64_t per_matrix,
                      int64_t batch, int64_t m, int64_t n, bool full) {
  GRID_STRIDE(b, batch) {
    const int64_t p = m < n ? m : n, uc = full ? m : p, vc = full ? n : p;
    const bool tall = m >= n;
    const int64_t rows = tall ? m : n, cols = p, big_cols = tall ? uc : vc;
    double* w = scratch + b * per_matrix;
    double* s = w + rows * cols;
    double* big = s + cols;
    double* small = big + rows * big_cols;
    double* work = small + cols * cols;
    const float* x = a + b * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) w[tall ? i * n + j : j * m + i] = x[i * n + j];
    }
    core::svd_tall(w, rows, cols, big_cols, s, big, small, work);
    for (int64_t j = 0; j < p; ++j) s_out[b * p + j] = static_cast<float>(s[j]);
    const double* uu = tall ? big : small;
    const double* vv = tall ? small : big;
    for (int64_t i = 0; i < m * uc; ++i) u_out[b * m * uc + i] = static_cast<float>(uu[i]);
    for (int64_t i = 0; i < n * vc; ++i) v_out[b * n * vc + i] = static_cast<float>(vv[i]);
  }
}

__global__ void qr_k(const float* a, float* q_out, float* r_out, double* scratch, int64_t batch, int64_t m, int64_t n,
                     int64_t qc) {
  GRID_STRIDE(b, batch) {
    double* w = scratch + b * (m * n + m * qc + qc * n + m * m + m);
    double* q = w + m * n;
    double* r = q + m * qc;
    double* work = r + qc * n;
    for (int64_t i = 0; i < m * n; ++i) w[i] = a[b * m * n + i];
    core::householder_qr(w, m, n, qc, q, r, work);
    for (int64_t i = 0; i < m * qc; ++i) q_out[b * m * qc + i] = static_cast<float>(q[i]);
    for (int64_t i = 0; i < qc * n; ++i) r_out[b * qc * n + i] = static_cast<float>(r[i]);
  }
}

}  // namespace

int64_t svd_scratch_per_matrix(int64_t m, int64_t n, bool full) {
  const int64_t p = m < n ? m : n, rows = m >= n ? m : n, big_cols = full ? rows : p;
  return rows * p + p + rows * big_cols + p * p + core::svd_scratch(rows, p);
}

void launch_lu_factor(const float* a, float* lu, int32_t* perm, float* sign, double* scratch, int64_t batch, int64_t n,
                      cudaStream_t s) {
  if (batch == 0) return;
  lu_factor_k<<<blocks_for(batch), kThreads, 0, s>>>(a, lu, perm, sign, scratch, batch, n);
}

void launch_cholesky(const float* a, float* l, double* scratch, int64_t batch, int64_t n, cudaStream_t s) {
  if (batch == 0) return;
  cholesky_k<<<blocks_for(batch), kThreads, 0, s>>>(a, l, scratch, batch, n);
}

void launch_triangular_solve(const float* a, const float* rhs, const int32_t* perm, float* x, double* scratch,
                             int64_t batch, int64_t n, int64_t k, bool lower, bool adjoint, bool unit, cudaStream_t s) {
  if (batch * k == 0) return;
  triangular_solve_k<<<blocks_for(batch * k), kThreads, 0, s>>>(a, rhs, perm, x, scratch, batch, n, k, lower, adjoint,
                                                                unit);
}

void launch_self_adjoint_eig(const float* a, float* w, float* v, double* scratch, int64_t batch, int64_t n,
                             cudaStream_t s) {
  if (batch == 0) return;
  self_adjoint_eig_k<<<blocks_for(batch), kThreads, 0, s>>>(a, w, v, scratch, batch, n);
}

void launch_svd(const float* a, float* s_out, float* u, float* v, double* scratch, int64_t batch, int64_t m, int64_t n,
                bool full, cudaStream_t s) {
  if (batch == 0) return;
  svd_k<<<blocks_for(batch), kThreads, 0, s>>>(a, s_out, u, v, scratch, svd_scratch_per_matrix(m, n, full), batch, m,
                                               n, full);
}

void launch_qr(const float* a, float* q, float* r, double* scratch, int64_t batch, int64_t m, int64_t n, int64_t qc,
               cudaStream_t s) {
  if (batch == 0) return;
  qr_k<<<blocks_for(batch), kThreads, 0, s>>>(a, q, r, scratch, batch, m, n, qc);
}

}  // namespace osprey::cuda
