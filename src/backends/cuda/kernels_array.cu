// The CUDA plug-in's array kernels: transposes and counter-based random numbers (the CPU's Philox stream).
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"

namespace osprey::cuda {

namespace {

// One Philox-4x32-10 block: counter (block, stream), key (seed); Random123's constants, as random.cpp's next4().
__device__ inline void philox_block(unsigned long long block, unsigned long long stream, unsigned long long seed,
                                    unsigned int out[4]) {
  unsigned int c[4] = {static_cast<unsigned int>(block), static_cast<unsigned int>(block >> 32),
                       static_cast<unsigned int>(stream), static_cast<unsigned int>(stream >> 32)};
  unsigned int k0 = static_cast<unsigned int>(seed), k1 = static_cast<unsigned int>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const unsigned int hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
    const unsigned int hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int i = 0; i < 4; ++i) out[i] = c[i];
}

__global__ void random_uniform_state_k(const long long* state, float* y, int64_t n) {
  const int64_t blocks = (n + 3) / 4;
  GRID_STRIDE(b, blocks) {
    unsigned int w[4];
    philox_block(static_cast<unsigned long long>(state[2]) + static_cast<unsigned long long>(b),
                 static_cast<unsigned long long>(state[1]), static_cast<unsigned long long>(state[0]), w);
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
  } else {
    transpose_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const int*>(x), static_cast<int*>(y), t, n);
  }
}

}  // namespace osprey::cuda
