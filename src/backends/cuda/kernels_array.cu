// The CUDA plug-in's array kernels: transposes and counter-based random numbers (the CPU's Philox stream).
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"
#include "tensor/philox_block.h"

namespace osprey::cuda {

namespace {

__global__ void random_uniform_state_k(const long long* state, float* y, int64_t n) {
  const int64_t blocks = (n + 3) / 4;
  GRID_STRIDE(b, blocks) {
    unsigned int w[4];
    const uint64_t seed = static_cast<uint64_t>(state[0]);
    osprey::random::detail::philox4x32_10(static_cast<uint64_t>(state[2]) + static_cast<uint64_t>(b),
                                          static_cast<uint64_t>(state[1]), static_cast<uint32_t>(seed),
                                          static_cast<uint32_t>(seed >> 32), w);
    for (int i = 0; i < 4 && 4 * b + i < n; ++i) y[4 * b + i] = static_cast<float>(w[i] >> 8) * (1.0f / 16777216.0f);
  }
}

__global__ void advance_state_k(long long* state, long long blocks) { state[2] += blocks; }

struct TransposeShape {
  int rank;
  long long out_dims[8], in_strides[8];  // per output axis: its size and the input stride it walks
};

template <typename T>
__global__ void transpose_k(const T* x, T* y, TransposeShape t, int64_t n) {
  GRID_STRIDE(k, n) {
    int64_t rest = k, offset = 0;
    for (int i = t.rank - 1; i >= 0; --i) {
      offset += (rest % t.out_dims[i]) * t.in_strides[i];
      rest /= t.out_dims[i];
    }
    y[k] = x[offset];
  }
}

}  // namespace

void launch_random_uniform_state(long long* state, float* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  random_uniform_state_k<<<blocks_for((n + 3) / 4), kThreads, 0, s>>>(state, y, n);
  advance_state_k<<<1, 1, 0, s>>>(state, (n + 3) / 4);
}

void launch_transpose(const void* x, void* y, int rank, const int64_t* in_dims, const int* perm, int64_t n,
                      int elem_bytes, cudaStream_t s) {
  if (n == 0) return;
  TransposeShape t{rank, {}, {}};
  long long in_strides[8], stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    in_strides[i] = stride;
    stride *= in_dims[i];
  }
  for (int i = 0; i < rank; ++i) {
    t.out_dims[i] = in_dims[perm[i]];
    t.in_strides[i] = in_strides[perm[i]];
  }
  if (elem_bytes == 8) {
    transpose_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const long long*>(x), static_cast<long long*>(y), t, n);
  } else if (elem_bytes == 1) {  // bool
    transpose_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const unsigned char*>(x), static_cast<unsigned char*>(y), t, n);
  } else if (elem_bytes == 2) {  // float16, bfloat16
    transpose_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const unsigned short*>(x), static_cast<unsigned short*>(y), t, n);
  } else {
    transpose_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const int*>(x), static_cast<int*>(y), t, n);
  }
}

}  // namespace osprey::cuda
