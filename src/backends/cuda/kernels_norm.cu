// The CUDA plug-in's layer normalization (ops::layer_norm) and its gradient: one warp per row, lanes striding over
// the features, sums by warp shuffles; the CPU kernels' formulas (kernels_norm.cpp).
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"

namespace osprey::cuda {

namespace {

__global__ void layer_norm_k(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                             long long rows, long long d, float epsilon) {
  const int lane = threadIdx.x & 31;
  for (long long r = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); r < rows;
       r += static_cast<long long>(gridDim.x) * kWarpsPerBlock) {
    const float* xr = x + r * d;
    float s = 0.f;
    for (long long c = lane; c < d; c += 32) s += xr[c];
    const float m = warp_sum(s) / static_cast<float>(d);
    float v = 0.f;
    for (long long c = lane; c < d; c += 32) v += (xr[c] - m) * (xr[c] - m);
    const float inv = rsqrtf(warp_sum(v) / static_cast<float>(d) + epsilon);
    if (lane == 0) {
      mean[r] = m;
      rstd[r] = inv;
    }
    for (long long c = lane; c < d; c += 32) {
      const float g = gamma ? gamma[c] * inv : inv;
      y[r * d + c] = (xr[c] - m) * g + (beta ? beta[c] : 0.f);
    }
  }
}

__global__ void layer_norm_grad_k(const float* dy, const float* x, const float* gamma, const float* mean,
                                  const float* rstd, float* dx, float* dyx, long long rows, long long d) {
  const int lane = threadIdx.x & 31;
  for (long long r = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); r < rows;
       r += static_cast<long long>(gridDim.x) * kWarpsPerBlock) {
    const float m = mean[r], inv = rstd[r];
    float sg = 0.f, sgx = 0.f;
    for (long long c = lane; c < d; c += 32) {
      const float xhat = (x[r * d + c] - m) * inv;
      const float g = gamma ? dy[r * d + c] * gamma[c] : dy[r * d + c];
      sg += g;
      sgx += g * xhat;
      dyx[r * d + c] = dy[r * d + c] * xhat;
    }
    const float mg = warp_sum(sg) / static_cast<float>(d), mgx = warp_sum(sgx) / static_cast<float>(d);
    for (long long c = lane; c < d; c += 32) {
      const float xhat = (x[r * d + c] - m) * inv;
      const float g = gamma ? dy[r * d + c] * gamma[c] : dy[r * d + c];
      dx[r * d + c] = inv * (g - mg - xhat * mgx);
    }
  }
}

}  // namespace

void launch_layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                       int64_t rows, int64_t d, float epsilon, cudaStream_t s) {
  if (rows == 0 || d == 0) return;
  layer_norm_k<<<blocks_for_rows(rows), kThreads, 0, s>>>(x, gamma, beta, y, mean, rstd, rows, d, epsilon);
}

void launch_layer_norm_grad(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                            float* dx, float* dyx, int64_t rows, int64_t d, cudaStream_t s) {
  if (rows == 0 || d == 0) return;
  layer_norm_grad_k<<<blocks_for_rows(rows), kThreads, 0, s>>>(dy, x, gamma, mean, rstd, dx, dyx, rows, d);
}

}  // namespace osprey::cuda
