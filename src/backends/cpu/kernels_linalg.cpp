// CPU kernels of the linear-algebra ops on batches of float32 matrices: LU with partial pivoting, Cholesky,
// triangular solves, the symmetric eigendecomposition and the SVD (by Jacobi rotations), QR, each matrix computed in
// double by ops/linalg_core.h (which the CUDA plug-in runs too) and rounded once; matrices are shared out between
// the threads whole.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "backends/cpu/kernels.h"
#include "ops/linalg_core.h"
#include "osprey/errors.h"

namespace osprey::cpu {

namespace {

namespace linalg = osprey::linalg_core;
using ops::KernelContext;
using runtime::DeviceType;

void expect_float32(const KernelContext& ctx, const char* op) {
  for (const Tensor& t : ctx.inputs) {
    if (t.dtype() != DType::float32 && t.dtype() != DType::int32) {
      throw InvalidArgumentError(fmt::format("{} kernel: float32 matrices, got {}", op, dtype_name(t.dtype())));
    }
  }
}

// Runs f(b) for each matrix of the batch, matrices shared out between the threads (one per chunk).
template <typename F>
void per_matrix(int64_t batch, int64_t work_per_matrix, F&& f) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, work_per_matrix));
  parallel_chunks(batch, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) f(b);
  }, grain);
}

void lu_factor_kernel(const KernelContext& ctx) {
  expect_float32(ctx, "LuFactor");
  const auto& at = ctx.attr<ops::LinalgAttrs>();
  const int64_t n = at.n;
  const float* a = ctx.inputs[0].data<float>();
  float* lu_out = ctx.outputs[0].data<float>();
  int32_t* perm_out = ctx.outputs[1].data<int32_t>();
  float* sign_out = ctx.outputs[2].data<float>();
  per_matrix(at.batch, n * n * n, [&](int64_t b) {
    std::vector<double> m(a + b * n * n, a + (b + 1) * n * n);
    sign_out[b] = static_cast<float>(linalg::lu_in_place(m.data(), perm_out + b * n, n));
    std::copy(m.begin(), m.end(), lu_out + b * n * n);
  });
}

void cholesky_kernel(const KernelContext& ctx) {
  expect_float32(ctx, "Cholesky");
  const auto& at = ctx.attr<ops::LinalgAttrs>();
  const int64_t n = at.n;
  const float* a = ctx.inputs[0].data<float>();
  float* out = ctx.outputs[0].data<float>();
  per_matrix(at.batch, n * n * n / 3 + 1, [&](int64_t b) {
    std::vector<double> l(static_cast<std::size_t>(n * n));
    linalg::cholesky(a + b * n * n, l.data(), n);
    std::copy(l.begin(), l.end(), out + b * n * n);
  });
}

// a (n, n) triangular, b (n, k); with a third input perm, b's rows are taken in that order (LU's P·b).
void triangular_solve_kernel(const KernelContext& ctx) {
  expect_float32(ctx, "TriangularSolve");
  const auto& at = ctx.attr<ops::LinalgAttrs>();
  const int64_t n = at.n, k = at.k;
  const float* a = ctx.inputs[0].data<float>();
  const float* rhs = ctx.inputs[1].data<float>();
  const int32_t* perm = ctx.inputs.size() > 2 ? ctx.inputs[2].data<int32_t>() : nullptr;
  float* out = ctx.outputs[0].data<float>();
  per_matrix(at.batch, n * n * std::max<int64_t>(k, 1), [&](int64_t b) {
    std::vector<double> x(static_cast<std::size_t>(n));
    for (int64_t c = 0; c < k; ++c) {
      linalg::triangular_solve(a + b * n * n, n, rhs + b * n * k + c, k, perm ? perm + b * n : nullptr, at.lower,
                               at.adjoint, at.unit_diagonal, x.data());
      for (int64_t i = 0; i < n; ++i) out[(b * n + i) * k + c] = static_cast<float>(x[static_cast<std::size_t>(i)]);
    }
  });
}

void self_adjoint_eig_kernel(const KernelContext& ctx) {
  expect_float32(ctx, "SelfAdjointEig");
  const auto& at = ctx.attr<ops::LinalgAttrs>();
  const int64_t n = at.n;
  const float* a = ctx.inputs[0].data<float>();
  float* w_out = ctx.outputs[0].data<float>();
  float* v_out = ctx.outputs[1].data<float>();
  per_matrix(at.batch, 10 * n * n * n, [&](int64_t b) {
    const float* x = a + b * n * n;
    std::vector<double> s(static_cast<std::size_t>(n * n)), w(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(n * n));
    for (int64_t i = 0; i < n; ++i) {  // the lower triangle, mirrored
      for (int64_t j = 0; j <= i; ++j) s[static_cast<std::size_t>(i * n + j)] = s[static_cast<std::size_t>(j * n + i)] = x[i * n + j];
    }
    linalg::symmetric_eig(s.data(), n, w.data(), v.data());
    std::copy(w.begin(), w.end(), w_out + b * n);
    std::copy(v.begin(), v.end(), v_out + b * n * n);
  });
}

void svd_kernel(const KernelContext& ctx) {
  expect_float32(ctx, "Svd");
  const auto& at = ctx.attr<ops::LinalgAttrs>();
  const int64_t m = at.m, n = at.n, p = std::min(m, n);
  const bool full = at.k != 0;  // full_matrices: u (m x m) and v (n x n), else (m x p) and (n x p)
  const int64_t uc = full ? m : p, vc = full ? n : p;
  const float* a = ctx.inputs[0].data<float>();
  float* s_out = ctx.outputs[0].data<float>();
  float* u_out = ctx.outputs[1].data<float>();
  float* v_out = ctx.outputs[2].data<float>();
  per_matrix(at.batch, 10 * m * n * p, [&](int64_t b) {
    // The tall orientation: x itself when m >= n, else xᵀ (then its u and v are the answer's v and u).
    const bool tall = m >= n;
    const int64_t rows = tall ? m : n, cols = p, big_cols = tall ? uc : vc;
    std::vector<double> w(static_cast<std::size_t>(rows * cols)), s(static_cast<std::size_t>(cols)),
        big(static_cast<std::size_t>(rows * big_cols)), small(static_cast<std::size_t>(cols * cols)),
        scratch(static_cast<std::size_t>(linalg::svd_scratch(rows, cols)));
    const float* x = a + b * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) w[static_cast<std::size_t>(tall ? i * n + j : j * m + i)] = x[i * n + j];
    }
    linalg::svd_tall(w.data(), rows, cols, big_cols, s.data(), big.data(), small.data(), scratch.data());
    std::copy(s.begin(), s.end(), s_out + b * p);
    const std::vector<double>& uu = tall ? big : small;
    const std::vector<double>& vv = tall ? small : big;
    std::copy(uu.begin(), uu.end(), u_out + b * m * uc);
    std::copy(vv.begin(), vv.end(), v_out + b * n * vc);
  });
}

void qr_kernel(const KernelContext& ctx) {
  expect_float32(ctx, "Qr");
  const auto& at = ctx.attr<ops::LinalgAttrs>();
  const int64_t m = at.m, n = at.n, qc = at.k != 0 ? m : std::min(m, n);
  const float* a = ctx.inputs[0].data<float>();
  float* q_out = ctx.outputs[0].data<float>();
  float* r_out = ctx.outputs[1].data<float>();
  per_matrix(at.batch, 2 * m * m * n, [&](int64_t b) {
    std::vector<double> w(a + b * m * n, a + (b + 1) * m * n), q(static_cast<std::size_t>(m * qc)),
        r(static_cast<std::size_t>(qc * n)), scratch(static_cast<std::size_t>(m * m + m));
    linalg::householder_qr(w.data(), m, n, qc, q.data(), r.data(), scratch.data());
    std::copy(q.begin(), q.end(), q_out + b * m * qc);
    std::copy(r.begin(), r.end(), r_out + b * qc * n);
  });
}

}  // namespace

void register_linalg_kernels() {
  ops::register_kernel(ops::OpId::LuFactor, DeviceType::CPU, lu_factor_kernel);
  ops::register_kernel(ops::OpId::Cholesky, DeviceType::CPU, cholesky_kernel);
  ops::register_kernel(ops::OpId::TriangularSolve, DeviceType::CPU, triangular_solve_kernel);
  ops::register_kernel(ops::OpId::SelfAdjointEig, DeviceType::CPU, self_adjoint_eig_kernel);
  ops::register_kernel(ops::OpId::Svd, DeviceType::CPU, svd_kernel);
  ops::register_kernel(ops::OpId::Qr, DeviceType::CPU, qr_kernel);
}

}  // namespace osprey::cpu
