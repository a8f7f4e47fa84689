// What the CUDA plug-in's kernel files share: the block size, the grid of a launch, grid-stride loops.
#pragma once

#include <cstdint>

namespace osprey::cuda {

inline constexpr int kThreads = 256;

inline int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 4096 ? 4096 : b));
}

}  // namespace osprey::cuda

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)
