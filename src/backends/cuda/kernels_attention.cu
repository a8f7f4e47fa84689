// The CUDA plug-in's attention kernels: the masked softmax over the last axis (ops::masked_softmax) and its
// gradient, one warp per row (lanes stride over the columns; max, sum and dot by warp shuffles), with the CPU
// kernels' semantics (kernels_attention.cpp).
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"

namespace osprey::cuda {

namespace {

struct RowMask {
  long long offset, t;
};
__device__ RowMask row_mask(const MaskedSoftmaxShape& a, long long r) {
  RowMask m{0, 0};
  long long rest = r;
  for (int i = a.rank - 2; i >= 0; --i) {
    const long long at = rest % a.dims[i];
    rest /= a.dims[i];
    if (i == a.rank - 2) m.t = at;
    m.offset += at * a.mask_strides[i];
  }
  return m;
}
__device__ bool kept(const MaskedSoftmaxShape& a, const float* mask, const RowMask& m, long long c) {
  if (a.causal && c > m.t) return false;
  return !a.has_mask || mask[m.offset + c * a.mask_strides[a.rank - 1]] > 0.5f;
}

__global__ void masked_softmax_k(MaskedSoftmaxShape a, const float* x, const float* mask, float* y, long long rows) {
  const long long cols = a.dims[a.rank - 1];
  const int lane = threadIdx.x & 31;
  for (long long r = (static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5)); r < rows;
       r += static_cast<long long>(gridDim.x) * kWarpsPerBlock) {
    const RowMask m = row_mask(a, r);
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float mx = -INFINITY;
    for (long long c = lane; c < cols; c += 32) mx = fmaxf(mx, kept(a, mask, m, c) ? xr[c] : a.masked_value);
    mx = warp_max(mx);
    float s = 0.f;
    for (long long c = lane; c < cols; c += 32) s += expf((kept(a, mask, m, c) ? xr[c] : a.masked_value) - mx);
    const float inv = 1.f / warp_sum(s);
    for (long long c = lane; c < cols; c += 32) {
      const bool k = kept(a, mask, m, c);
      yr[c] = a.zero_masked && !k ? 0.f : expf((k ? xr[c] : a.masked_value) - mx) * inv;
    }
  }
}

__global__ void masked_softmax_grad_k(MaskedSoftmaxShape a, const float* dy, const float* y, const float* mask,
                                      float* dx, long long rows) {
  const long long cols = a.dims[a.rank - 1];
  const int lane = threadIdx.x & 31;
  for (long long r = (static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5)); r < rows;
       r += static_cast<long long>(gridDim.x) * kWarpsPerBlock) {
    const RowMask m = row_mask(a, r);
    const float* yr = y + r * cols;
    const float* gr = dy + r * cols;
    float dot = 0.f;
    for (long long c = lane; c < cols; c += 32) dot += gr[c] * yr[c];
    dot = warp_sum(dot);
    for (long long c = lane; c < cols; c += 32) dx[r * cols + c] = kept(a, mask, m, c) ? yr[c] * (gr[c] - dot) : 0.f;
  }
}

}  // namespace

void launch_masked_softmax(const MaskedSoftmaxShape& a, const float* x, const float* mask, float* y, int64_t rows,
                           cudaStream_t s) {
  if (rows == 0 || a.dims[a.rank - 1] == 0) return;
  masked_softmax_k<<<blocks_for_rows(rows), kThreads, 0, s>>>(a, x, mask, y, rows);
}

void launch_masked_softmax_grad(const MaskedSoftmaxShape& a, const float* dy, const float* y, const float* mask,
                                float* dx, int64_t rows, cudaStream_t s) {
  if (rows == 0 || a.dims[a.rank - 1] == 0) return;
  masked_softmax_grad_k<<<blocks_for_rows(rows), kThreads, 0, s>>>(a, dy, y, mask, dx, rows);
}

}  // namespace osprey::cuda
