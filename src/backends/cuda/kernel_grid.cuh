// What the CUDA plug-in's kernel files share: the block size, the grid of a launch, grid-stride loops.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernels.h"

namespace osprey::cuda {

inline constexpr int kThreads = 256;

inline int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 4096 ? 4096 : b));
}

/// Kernels that give each row a warp: kWarpsPerBlock rows per block, at most 4096 blocks (grid-stride over rows).
inline constexpr int kWarpsPerBlock = kThreads / 32;
inline int blocks_for_rows(int64_t rows) {
  const int64_t b = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<int>(b < 1 ? 1 : (b > 4096 ? 4096 : b));
}

/// The sum (max) of `v` over the 32 lanes of a warp, in every lane.
__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Blocks for a two-pass reduction: one partial sum per block, at most kMaxBlocks (the scratch's partials).
inline int partial_blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

// Block-wide sum of one double per thread, in a fixed order; thread 0 gets the result.
__device__ inline double block_sum(double v) {
  __shared__ double buf[kThreads];
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) buf[threadIdx.x] += buf[threadIdx.x + stride];
    __syncthreads();
  }
  return buf[0];
}

/// Records the first failure of a kernel in the scratch's error words (launchers raise it on the host).
__device__ inline void set_error(long long* error, long long a, long long b) {
  if (atomicCAS(reinterpret_cast<unsigned long long*>(error), 0ull, 1ull) == 0ull) {
    error[1] = a;
    error[2] = b;
  }
}

/// y[0] = (sum of `blocks` partials) / divisor, one thread, in a fixed order (kernels.cu).
void launch_finish_sum(const double* partials, int blocks, float* out, double divisor, cudaStream_t s);

/// Operand offsets of output element i of a Strided geometry (the first `n_ops` operands).
template <int N, typename G>
__device__ inline void strided_offsets(const G& g, int64_t i, int64_t* off) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    const int64_t q = i % g.dims[d];
    i /= g.dims[d];
    for (int k = 0; k < N; ++k) off[k] += q * g.strides[k][d];
  }
}

}  // namespace osprey::cuda

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)
