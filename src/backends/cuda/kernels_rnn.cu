// The CUDA plug-in's LSTM step gates (ops::lstm_cell) and their gradient: one thread per (row, unit), the CPU
// kernels' formulas (kernels_rnn.cpp).
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"

namespace osprey::cuda {

namespace {

__device__ inline float sigmoid_f(float x) { return 1.f / (1.f + expf(-x)); }

__global__ void lstm_cell_k(const float* z, const float* cp, float* h, float* c, long long rows, long long u) {
  const long long n = rows * u;
  for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = e / u, k = e % u;
    const float* zr = z + r * 4 * u;
    const float i = sigmoid_f(zr[k]), f = sigmoid_f(zr[u + k]), g = tanhf(zr[2 * u + k]), o = sigmoid_f(zr[3 * u + k]);
    const float ce = f * cp[e] + i * g;
    c[e] = ce;
    h[e] = o * tanhf(ce);
  }
}

__global__ void lstm_cell_grad_k(const float* dh, const float* dc, const float* z, const float* cp, const float* c,
                                 float* dz, float* dcp, long long rows, long long u) {
  const long long n = rows * u;
  for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = e / u, k = e % u;
    const float* zr = z + r * 4 * u;
    const float i = sigmoid_f(zr[k]), f = sigmoid_f(zr[u + k]), g = tanhf(zr[2 * u + k]), o = sigmoid_f(zr[3 * u + k]);
    const float t = tanhf(c[e]);
    const float total = dc[e] + dh[e] * o * (1.f - t * t);
    float* d = dz + r * 4 * u;
    d[k] = total * g * i * (1.f - i);
    d[u + k] = total * cp[e] * f * (1.f - f);
    d[2 * u + k] = total * i * (1.f - g * g);
    d[3 * u + k] = dh[e] * t * o * (1.f - o);
    dcp[e] = total * f;
  }
}

}  // namespace

void launch_lstm_cell(const float* z, const float* c_prev, float* h, float* c, int64_t rows, int64_t units,
                      cudaStream_t s) {
  if (rows == 0 || units == 0) return;
  lstm_cell_k<<<blocks_for(rows * units), kThreads, 0, s>>>(z, c_prev, h, c, rows, units);
}

void launch_lstm_cell_grad(const float* dh, const float* dc, const float* z, const float* c_prev, const float* c,
                           float* dz, float* dc_prev, int64_t rows, int64_t units, cudaStream_t s) {
  if (rows == 0 || units == 0) return;
  lstm_cell_grad_k<<<blocks_for(rows * units), kThreads, 0, s>>>(dh, dc, z, c_prev, c, dz, dc_prev, rows, units);
}

}  // namespace osprey::cuda
