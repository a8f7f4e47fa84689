// The CUDA plug-in's LSTM and GRU step gates (ops::lstm_cell, ops::gru_cell) and their gradients: one thread per (row, unit), the CPU
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

__global__ void gru_cell_k(const float* x, const float* r, const float* hp, float* h, long long rows, long long u) {
  const long long n = rows * u;
  for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = e / u, k = e % u;
    const float* xr = x + row * 3 * u;
    const float* rr = r + row * 3 * u;
    const float z = sigmoid_f(xr[k] + rr[k]), rho = sigmoid_f(xr[u + k] + rr[u + k]);
    const float hh = tanhf(xr[2 * u + k] + rho * rr[2 * u + k]);
    h[e] = z * hp[e] + (1.f - z) * hh;
  }
}

__global__ void gru_cell_grad_k(const float* dh, const float* x, const float* r, const float* hp, float* dx, float* dr,
                                float* dhp, long long rows, long long u) {
  const long long n = rows * u;
  for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = e / u, k = e % u;
    const float* xr = x + row * 3 * u;
    const float* rr = r + row * 3 * u;
    const float z = sigmoid_f(xr[k] + rr[k]), rho = sigmoid_f(xr[u + k] + rr[u + k]);
    const float hh = tanhf(xr[2 * u + k] + rho * rr[2 * u + k]);
    const float dhh = dh[e] * (1.f - z) * (1.f - hh * hh);
    const float dz = dh[e] * (hp[e] - hh) * z * (1.f - z);
    const float drho = dhh * rr[2 * u + k] * rho * (1.f - rho);
    float* dxr = dx + row * 3 * u;
    float* drr = dr + row * 3 * u;
    dxr[k] = dz;
    drr[k] = dz;
    dxr[u + k] = drho;
    drr[u + k] = drho;
    dxr[2 * u + k] = dhh;
    drr[2 * u + k] = dhh * rho;
    dhp[e] = dh[e] * z;
  }
}

}  // namespace

void launch_gru_cell(const float* x, const float* r, const float* h_prev, float* h, int64_t rows, int64_t units,
                     cudaStream_t s) {
  if (rows == 0 || units == 0) return;
  gru_cell_k<<<blocks_for(rows * units), kThreads, 0, s>>>(x, r, h_prev, h, rows, units);
}

void launch_gru_cell_grad(const float* dh, const float* x, const float* r, const float* h_prev, float* dx, float* dr,
                          float* dh_prev, int64_t rows, int64_t units, cudaStream_t s) {
  if (rows == 0 || units == 0) return;
  gru_cell_grad_k<<<blocks_for(rows * units), kThreads, 0, s>>>(dh, x, r, h_prev, dx, dr, dh_prev, rows, units);
}

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
