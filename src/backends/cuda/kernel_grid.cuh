// What the CUDA plug-in's kernel files share: the block size, the grid of a launch, grid-stride loops.
#pragma once

#include <cstdint>

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
