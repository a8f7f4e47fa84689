// The CUDA plug-in's activations, their gradients and the column sums of bias gradients, on float32, float16 and
// bfloat16 tensors (the arithmetic in float32, one rounding per result), and the fill of an empty product.
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"
#include "backends/cuda/kernel_types.cuh"

namespace osprey::cuda {

namespace {

constexpr float kSeluAlpha = 1.6732632423543772848f, kSeluScale = 1.0507009873554804934f;

// ---- activations ----

__device__ inline float act_one(Act act, float z) {
  switch (act) {
    case Act::linear: return z;
    case Act::relu: return z > 0.f ? z : 0.f;
    case Act::sigmoid: return 1.f / (1.f + expf(-z));
    case Act::tanh: return tanhf(z);
    case Act::gelu: return 0.5f * z * (1.f + erff(z * 0.70710678118654752f));
    case Act::elu: return z >= 0.f ? z : expm1f(z);
    case Act::selu: return kSeluScale * (z >= 0.f ? z : kSeluAlpha * expm1f(z));
    case Act::softplus: return fmaxf(z, 0.f) + log1pf(expf(-fabsf(z)));
    case Act::softsign: return z / (1.f + fabsf(z));
    case Act::silu: return z / (1.f + expf(-z));
    case Act::leaky_relu: return z > 0.f ? z : 0.2f * z;
    case Act::exponential: return expf(z);
    case Act::softmax: return z;  // row-wise, in softmax_k
  }
  return z;
}

// The element types of the float kernels: float32, and float16/bfloat16 read into float32 and rounded once on the
// way out (the CPU's bfloat16 kernels' values).
template <typename T>
__global__ void act_k(Act act, const T* z, T* y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = convert<T>(act_one(act, to_f32(z[i])));
}

// One thread per row; z and y may alias (each element is read before it is written in the last pass).
template <typename T>
__global__ void softmax_k(const T* z, T* y, int64_t rows, int64_t cols) {
  GRID_STRIDE(r, rows) {
    const T* zr = z + r * cols;
    T* yr = y + r * cols;
    float mx = to_f32(zr[0]);
    for (int64_t c = 1; c < cols; ++c) mx = fmaxf(mx, to_f32(zr[c]));
    float sum = 0.f;
    for (int64_t c = 0; c < cols; ++c) sum += expf(to_f32(zr[c]) - mx);
    const float inv = 1.f / sum;
    for (int64_t c = 0; c < cols; ++c) yr[c] = convert<T>(expf(to_f32(zr[c]) - mx) * inv);
  }
}

__device__ inline float act_grad_one(Act act, float g, float y, float z) {
  switch (act) {
    case Act::linear: return g;
    case Act::relu: return y > 0.f ? g : 0.f;
    case Act::sigmoid: return g * y * (1.f - y);
    case Act::tanh: return g * (1.f - y * y);
    case Act::elu: return y > 0.f ? g : g * (y + 1.f);
    case Act::selu: return g * (y > 0.f ? kSeluScale : y + kSeluScale * kSeluAlpha);
    case Act::leaky_relu: return y > 0.f ? g : 0.2f * g;
    case Act::exponential: return g * y;
    case Act::gelu: {
      const float cdf = 0.5f * (1.f + erff(z * 0.70710678118654752f));
      const float pdf = 0.39894228040143268f * expf(-0.5f * z * z);
      return g * (cdf + z * pdf);
    }
    case Act::softplus: return g / (1.f + expf(-z));
    case Act::softsign: {
      const float d = 1.f + fabsf(z);
      return g / (d * d);
    }
    case Act::silu: {
      const float sg = 1.f / (1.f + expf(-z));
      return g * sg * (1.f + z * (1.f - sg));
    }
    case Act::softmax: break;  // row-wise, in softmax_grad_k
  }
  return 0.f;
}

template <typename T>
__global__ void act_grad_k(Act act, const T* dy, const T* y, const T* z, T* dz, int64_t n) {
  GRID_STRIDE(i, n) dz[i] = convert<T>(act_grad_one(act, to_f32(dy[i]), to_f32(y[i]), z ? to_f32(z[i]) : 0.f));
}

template <typename T>
__global__ void softmax_grad_k(const T* dy, const T* y, T* dz, int64_t rows, int64_t cols) {
  GRID_STRIDE(r, rows) {
    const T* yr = y + r * cols;
    const T* gr = dy + r * cols;
    float dot = 0.f;
    for (int64_t c = 0; c < cols; ++c) dot += to_f32(gr[c]) * to_f32(yr[c]);
    for (int64_t c = 0; c < cols; ++c) dz[r * cols + c] = convert<T>(to_f32(yr[c]) * (to_f32(gr[c]) - dot));
  }
}

// ---- reductions ----

// y[c] = Σ_r x[r, c] (bias gradients), deterministic: blocks of 32 × 32 threads, each block 32 columns of one
// chunk of rows (a warp reads 32 adjacent columns: coalesced; each thread every 32nd row of the chunk), its 32
// partial sums per column added in a fixed order. With several chunks, each writes its column sums to scratch and
// a second kernel adds the chunks in order. (One block per 32 columns, every row in it, took 200 µs for a conv bias
// gradient of 262144 × 32 on an H200: one multiprocessor busy.)
constexpr int kColumnTile = 32;
template <typename T, typename O>
__global__ void sum_axis0_k(const T* x, O* y, float* chunk_sums, int64_t rows, int64_t cols, int64_t chunk_rows) {
  __shared__ float partial[kColumnTile][kColumnTile + 1];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
  float s = 0.f;
  if (c < cols) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kColumnTile) s += to_f32(x[r * cols + c]);
  }
  partial[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = 0.f;
    for (int i = 0; i < kColumnTile; ++i) total += partial[i][threadIdx.x];
    if (chunk_sums) {
      chunk_sums[blockIdx.y * cols + c] = total;
    } else {
      y[c] = convert<O>(total);
    }
  }
}

template <typename O>
__global__ void sum_chunks_k(const float* chunk_sums, O* y, int64_t chunks, int64_t cols) {
  GRID_STRIDE(c, cols) {
    float total = 0.f;
    for (int64_t k = 0; k < chunks; ++k) total += chunk_sums[k * cols + c];
    y[c] = convert<O>(total);
  }
}

// About two blocks per multiprocessor of an H100/H200 (132), with at least 256 rows a chunk.
int64_t sum_axis0_chunks(int64_t rows, int64_t cols) {
  const int64_t column_blocks = (cols + kColumnTile - 1) / kColumnTile;
  const int64_t by_blocks = 256 / column_blocks, by_rows = rows / 256;
  const int64_t chunks = by_blocks < by_rows ? by_blocks : by_rows;
  return chunks < 1 ? 1 : chunks;
}

template <typename T>
__global__ void fill_rows_k(T* z, const T* bias, int64_t rows, int64_t cols) {
  GRID_STRIDE(i, rows * cols) z[i] = bias ? bias[i % cols] : convert<T>(0.f);
}

}  // namespace

void launch_activation(Act act, Dt dt, const void* z, void* y, int64_t n, int64_t cols, cudaStream_t s) {
  if (n == 0) return;
  by_float_type(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* zt = static_cast<const T*>(z);
    T* yt = static_cast<T*>(y);
    if (act == Act::softmax) {
      const int64_t rows = n / cols;
      softmax_k<<<blocks_for(rows), kThreads, 0, s>>>(zt, yt, rows, cols);
    } else {
      act_k<<<blocks_for(n), kThreads, 0, s>>>(act, zt, yt, n);
    }
  });
}

void launch_activation_grad(Act act, Dt dt, const void* dy, const void* y, const void* z, void* dz, int64_t n,
                            int64_t cols, cudaStream_t s) {
  if (n == 0) return;
  by_float_type(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (act == Act::softmax) {
      const int64_t rows = n / cols;
      softmax_grad_k<<<blocks_for(rows), kThreads, 0, s>>>(static_cast<const T*>(dy), static_cast<const T*>(y),
                                                           static_cast<T*>(dz), rows, cols);
    } else {
      act_grad_k<<<blocks_for(n), kThreads, 0, s>>>(act, static_cast<const T*>(dy), static_cast<const T*>(y),
                                                    static_cast<const T*>(z), static_cast<T*>(dz), n);
    }
  });
}

int64_t sum_axis0_scratch_floats(int64_t rows, int64_t cols) {
  const int64_t chunks = sum_axis0_chunks(rows, cols);
  return chunks > 1 ? chunks * cols : 0;
}

void launch_sum_axis0(Dt dt, Dt out_dt, const void* x, void* y, int64_t rows, int64_t cols, float* scratch,
                      cudaStream_t s) {
  if (cols == 0) return;
  const int64_t chunks = scratch ? sum_axis0_chunks(rows, cols) : 1;
  const int64_t chunk_rows = (rows + chunks - 1) / chunks;
  const dim3 block(kColumnTile, kColumnTile);
  const dim3 grid(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile), static_cast<unsigned>(chunks));
  by_float_type(dt, [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    by_float_type(out_dt, [&](auto out_tag) {
      using O = typename decltype(out_tag)::type;
      sum_axis0_k<<<grid, block, 0, s>>>(static_cast<const T*>(x), static_cast<O*>(y), chunks > 1 ? scratch : nullptr,
                                         rows, cols, chunk_rows > 0 ? chunk_rows : 1);
      if (chunks > 1) sum_chunks_k<<<blocks_for(cols), kThreads, 0, s>>>(scratch, static_cast<O*>(y), chunks, cols);
    });
  });
}

void launch_fill_rows(Dt dt, void* z, const void* bias, int64_t rows, int64_t cols, cudaStream_t s) {
  if (rows * cols == 0) return;
  by_float_type(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_rows_k<<<blocks_for(rows * cols), kThreads, 0, s>>>(static_cast<T*>(z), static_cast<const T*>(bias), rows,
                                                             cols);
  });
}

}  // namespace osprey::cuda
