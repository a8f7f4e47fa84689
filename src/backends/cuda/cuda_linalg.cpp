// The CUDA plug-in's linear-algebra kernels (kernels_linalg.cu) in Osprey's op table: each takes a float64 scratch
// tensor on its device for the matrices' working copies.
#include <algorithm>

#include <fmt/format.h>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_launch.h"
#include "ops/attrs.h"
#include "ops/kernel.h"
#include "osprey/errors.h"

namespace osprey::cuda {

namespace {

using ops::OpId;
using runtime::DeviceType;

const ops::LinalgAttrs& float_matrices(const ops::KernelContext& ctx, const char* op) {
  if (ctx.inputs[0].dtype() != DType::float32) {
    throw InvalidArgumentError(fmt::format("{} kernel: float32 matrices, got {}", op, dtype_name(ctx.inputs[0].dtype())));
  }
  return ctx.attr<ops::LinalgAttrs>();
}

Tensor scratch(const ops::KernelContext& ctx, int64_t doubles) {
  return Tensor::empty({std::max<int64_t>(doubles, 1)}, DType::float64, ctx.device);
}

void lu_factor_kernel(const ops::KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = float_matrices(ctx, "LuFactor");
  Tensor work = scratch(ctx, at.batch * at.n * at.n);
  launch_lu_factor(ctx.inputs[0].data<float>(), ctx.outputs[0].data<float>(), ctx.outputs[1].data<int32_t>(),
                   ctx.outputs[2].data<float>(), work.data<double>(), at.batch, at.n, l.s());
  l.done("LuFactor");
}

void cholesky_kernel(const ops::KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = float_matrices(ctx, "Cholesky");
  Tensor work = scratch(ctx, at.batch * at.n * at.n);
  launch_cholesky(ctx.inputs[0].data<float>(), ctx.outputs[0].data<float>(), work.data<double>(), at.batch, at.n, l.s());
  l.done("Cholesky");
}

void triangular_solve_kernel(const ops::KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = float_matrices(ctx, "TriangularSolve");
  Tensor work = scratch(ctx, at.batch * at.k * at.n);
  const int32_t* perm = ctx.inputs.size() > 2 ? ctx.inputs[2].data<int32_t>() : nullptr;
  launch_triangular_solve(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), perm, ctx.outputs[0].data<float>(),
                          work.data<double>(), at.batch, at.n, at.k, at.lower, at.adjoint, at.unit_diagonal, l.s());
  l.done("TriangularSolve");
}

void self_adjoint_eig_kernel(const ops::KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = float_matrices(ctx, "SelfAdjointEig");
  Tensor work = scratch(ctx, at.batch * (2 * at.n * at.n + at.n));
  launch_self_adjoint_eig(ctx.inputs[0].data<float>(), ctx.outputs[0].data<float>(), ctx.outputs[1].data<float>(),
                          work.data<double>(), at.batch, at.n, l.s());
  l.done("SelfAdjointEig");
}

void svd_kernel(const ops::KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = float_matrices(ctx, "Svd");
  const bool full = at.k != 0;
  Tensor work = scratch(ctx, at.batch * svd_scratch_per_matrix(at.m, at.n, full));
  launch_svd(ctx.inputs[0].data<float>(), ctx.outputs[0].data<float>(), ctx.outputs[1].data<float>(),
             ctx.outputs[2].data<float>(), work.data<double>(), at.batch, at.m, at.n, full, l.s());
  l.done("Svd");
}

void qr_kernel(const ops::KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = float_matrices(ctx, "Qr");
  const int64_t m = at.m, n = at.n, qc = at.k != 0 ? m : std::min(m, n);
  Tensor work = scratch(ctx, at.batch * (m * n + m * qc + qc * n + m * m + m));
  launch_qr(ctx.inputs[0].data<float>(), ctx.outputs[0].data<float>(), ctx.outputs[1].data<float>(), work.data<double>(),
            at.batch, m, n, qc, l.s());
  l.done("Qr");
}

}  // namespace

void register_cuda_linalg_kernels() {
  ops::register_kernel(OpId::LuFactor, DeviceType::GPU, lu_factor_kernel);
  ops::register_kernel(OpId::Cholesky, DeviceType::GPU, cholesky_kernel);
  ops::register_kernel(OpId::TriangularSolve, DeviceType::GPU, triangular_solve_kernel);
  ops::register_kernel(OpId::SelfAdjointEig, DeviceType::GPU, self_adjoint_eig_kernel);
  ops::register_kernel(OpId::Svd, DeviceType::GPU, svd_kernel);
  ops::register_kernel(OpId::Qr, DeviceType::GPU, qr_kernel);
}

}  // namespace osprey::cuda
