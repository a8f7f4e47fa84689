// The CUDA plug-in's device kernels: the same formulas as the CPU kernels (src/backends/cpu), one thread per
// element (or per row/sample where the CPU loops over a row), grid-stride loops, deterministic reductions.
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"
#include "backends/cuda/kernel_types.cuh"

namespace osprey::cuda {

namespace {

// ---- casts, unary, binary ----

template <typename F, typename T>
__global__ void cast_k(const F* x, T* y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = convert<T>(x[i]);
}

template <typename F>
void cast_from(Dt to, const F* x, void* y, int64_t n, cudaStream_t s) {
  switch (to) {
    case Dt::f32: cast_k<<<blocks_for(n), kThreads, 0, s>>>(x, static_cast<float*>(y), n); break;
    case Dt::f64: cast_k<<<blocks_for(n), kThreads, 0, s>>>(x, static_cast<double*>(y), n); break;
    case Dt::i32: cast_k<<<blocks_for(n), kThreads, 0, s>>>(x, static_cast<int32_t*>(y), n); break;
    case Dt::i64: cast_k<<<blocks_for(n), kThreads, 0, s>>>(x, static_cast<int64_t*>(y), n); break;
    case Dt::b8: cast_k<<<blocks_for(n), kThreads, 0, s>>>(x, static_cast<bool*>(y), n); break;
    case Dt::f16: cast_k<<<blocks_for(n), kThreads, 0, s>>>(x, static_cast<__half*>(y), n); break;
    case Dt::bf16: cast_k<<<blocks_for(n), kThreads, 0, s>>>(x, static_cast<__nv_bfloat16*>(y), n); break;
  }
}

template <typename T>
__global__ void unary_k(UnaryOp op, const T* x, T* y, int64_t n) {
  GRID_STRIDE(i, n) {
    const T v = x[i];
    switch (op) {
      case UnaryOp::neg: y[i] = -v; break;
      case UnaryOp::exp: y[i] = exp(v); break;
      case UnaryOp::log: y[i] = log(v); break;
      case UnaryOp::sqrt: y[i] = sqrt(v); break;
      case UnaryOp::square: y[i] = v * v; break;
      case UnaryOp::abs: y[i] = v < T(0) ? -v : v; break;
      case UnaryOp::sin: y[i] = sin(v); break;
      case UnaryOp::cos: y[i] = cos(v); break;
      case UnaryOp::tan: y[i] = tan(v); break;
      case UnaryOp::asin: y[i] = asin(v); break;
      case UnaryOp::acos: y[i] = acos(v); break;
      case UnaryOp::atan: y[i] = atan(v); break;
      case UnaryOp::sinh: y[i] = sinh(v); break;
      case UnaryOp::cosh: y[i] = cosh(v); break;
      case UnaryOp::asinh: y[i] = asinh(v); break;
      case UnaryOp::acosh: y[i] = acosh(v); break;
      case UnaryOp::atanh: y[i] = atanh(v); break;
      case UnaryOp::floor: y[i] = floor(v); break;
      case UnaryOp::ceil: y[i] = ceil(v); break;
      case UnaryOp::round: y[i] = rint(v); break;  // halves to even
      case UnaryOp::log1p: y[i] = log1p(v); break;
      case UnaryOp::expm1: y[i] = expm1(v); break;
      case UnaryOp::erf: y[i] = erf(v); break;
    }
  }
}

template <typename T>
__device__ inline T binary_op(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::add: return a + b;
    case BinaryOp::sub: return a - b;
    case BinaryOp::mul: return a * b;
    case BinaryOp::div: return a / b;
    case BinaryOp::maximum: return a > b ? a : b;
    case BinaryOp::greater_equal: return a >= b ? T(1) : T(0);
    case BinaryOp::minimum: return a < b ? a : b;
    case BinaryOp::pow: return static_cast<T>(pow(static_cast<double>(a), static_cast<double>(b)));
    case BinaryOp::nextafter:
      if constexpr (std::is_floating_point_v<T>) return nextafter(a, b);
      return a;  // (integers are refused before the kernel)
  }
  return T(0);
}

template <typename T>
__global__ void binary_general_k(BinaryOp op, Strided g, const T* a, const T* b, T* y, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t off[2];
    strided_offsets<2>(g, i, off);
    y[i] = binary_op(op, a[off[0]], b[off[1]]);
  }
}

// float16/bfloat16 operands: the operation in float32, the result rounded once (the CPU's float32 fallback's values).
template <typename T>
__global__ void binary_half_k(BinaryOp op, Bcast bc, const T* a, const T* b, T* y, int64_t n, int64_t cols) {
  GRID_STRIDE(i, n) {
    const int64_t ia = bc == Bcast::scalar_a ? 0 : i;
    const int64_t ib = bc == Bcast::scalar_b ? 0 : bc == Bcast::row_b ? i % cols : i;
    y[i] = convert<T>(binary_op(op, to_f32(a[ia]), to_f32(b[ib])));
  }
}

template <typename T>
__global__ void binary_half_general_k(BinaryOp op, Strided g, const T* a, const T* b, T* y, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t off[2];
    strided_offsets<2>(g, i, off);
    y[i] = convert<T>(binary_op(op, to_f32(a[off[0]]), to_f32(b[off[1]])));
  }
}

template <typename T>
__global__ void binary_k(BinaryOp op, Bcast bc, const T* a, const T* b, T* y, int64_t n, int64_t cols) {
  GRID_STRIDE(i, n) {
    switch (bc) {
      case Bcast::same: y[i] = binary_op(op, a[i], b[i]); break;
      case Bcast::scalar_b: y[i] = binary_op(op, a[i], b[0]); break;
      case Bcast::scalar_a: y[i] = binary_op(op, a[0], b[i]); break;
      case Bcast::row_b: y[i] = binary_op(op, a[i], b[i % cols]); break;
      case Bcast::general: break;  // binary_general_k
    }
  }
}

// ---- reductions ----

__global__ void sum_axis1_k(const float* x, float* y, int64_t rows, int64_t cols) {
  GRID_STRIDE(r, rows) {
    float s = 0.f;
    for (int64_t c = 0; c < cols; ++c) s += x[r * cols + c];
    y[r] = s;
  }
}

__global__ void sum_partials_k(const float* x, int64_t n, double* partials) {
  double acc = 0.0;
  GRID_STRIDE(i, n) acc += x[i];
  const double total = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void finish_sum_k(const double* partials, int blocks, float* y, double divisor) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    double s = 0.0;
    for (int b = 0; b < blocks; ++b) s += partials[b];
    y[0] = static_cast<float>(s / divisor);
  }
}

// ---- gathers (losses and accuracy: kernels_loss.cu) ----

__global__ void gather_rows_k(const char* src, const int64_t* idx, char* dst, int64_t count, int64_t rows,
                              int64_t row_bytes, long long* error) {
  const int64_t total = count * row_bytes;
  GRID_STRIDE(t, total) {
    const int64_t i = t / row_bytes, byte = t % row_bytes;
    const int64_t r = idx[i];
    if (r < 0 || r >= rows) {
      if (byte == 0) set_error(error, i, r);
      continue;
    }
    dst[t] = src[r * row_bytes + byte];
  }
}

// ---- optimizers (spec/keras_api.md §3) ----

__global__ void sgd_k(float* var, const float* g, float* m, int64_t n, float lr, float momentum, bool nesterov) {
  GRID_STRIDE(i, n) {
    if (!m || momentum == 0.f) {
      var[i] -= lr * g[i];
    } else {
      m[i] = momentum * m[i] - lr * g[i];
      var[i] += nesterov ? momentum * m[i] - lr * g[i] : m[i];
    }
  }
}

// One element of an Adam update (the CPU kernel's formula).
__device__ __forceinline__ void adam_element(float* var, float* m, float* v, float gi, float* vhat, int64_t i,
                                             float alpha, float c1, float c2, float epsilon) {
  const float mi = m[i] + (gi - m[i]) * c1;
  const float vi = v[i] + (gi * gi - v[i]) * c2;
  m[i] = mi;
  v[i] = vi;
  float denom_v = vi;
  if (vhat) denom_v = vhat[i] = fmaxf(vhat[i], vi);
  var[i] -= (mi * alpha) / (sqrtf(denom_v) + epsilon);
}

__global__ void adam_k(float* var, float* m, float* v, const float* g, float* vhat, int64_t n, float alpha,
                       float beta_1, float beta_2, float epsilon) {
  const float c1 = 1.f - beta_1, c2 = 1.f - beta_2;
  GRID_STRIDE(i, n) adam_element(var, m, v, g[i], vhat, i, alpha, c1, c2, epsilon);
}

// blockIdx.y picks the variable; the blocks along x stride over its elements.
__global__ void adam_many_k(AdamGroup group, float alpha, float beta_1, float beta_2, float epsilon) {
  const int t = blockIdx.y;
  const float c1 = 1.f - beta_1, c2 = 1.f - beta_2;
  const float* g = group.g[t];
  const float* g2 = group.g2[t];
  const int64_t n = group.n[t];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float gi = g2 ? (g[i] + g2[i]) * 0.5f : g[i];
    adam_element(group.var[t], group.m[t], group.v[t], gi, group.vhat[t], i, alpha, c1, c2, epsilon);
  }
}

__global__ void rmsprop_k(float* var, float* v, const float* g, float* mom, float* mg, int64_t n, float lr, float rho,
                          float momentum, float epsilon) {
  GRID_STRIDE(i, n) {
    const float gi = g[i];
    v[i] = rho * v[i] + (1.f - rho) * gi * gi;
    float denom = v[i];
    if (mg) {
      mg[i] = rho * mg[i] + (1.f - rho) * gi;
      denom -= mg[i] * mg[i];
    }
    const float inc = lr * gi / sqrtf(denom + epsilon);
    if (mom && momentum > 0.f) {
      mom[i] = momentum * mom[i] + inc;
      var[i] -= mom[i];
    } else {
      var[i] -= inc;
    }
  }
}

}  // namespace

void launch_cast(Dt from, Dt to, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  switch (from) {
    case Dt::f32: return cast_from(to, static_cast<const float*>(x), y, n, s);
    case Dt::f64: return cast_from(to, static_cast<const double*>(x), y, n, s);
    case Dt::i32: return cast_from(to, static_cast<const int32_t*>(x), y, n, s);
    case Dt::i64: return cast_from(to, static_cast<const int64_t*>(x), y, n, s);
    case Dt::b8: return cast_from(to, static_cast<const bool*>(x), y, n, s);
    case Dt::f16: return cast_from(to, static_cast<const __half*>(x), y, n, s);
    case Dt::bf16: return cast_from(to, static_cast<const __nv_bfloat16*>(x), y, n, s);
  }
}

void launch_unary(UnaryOp op, Dt dt, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  if (dt == Dt::f64) {
    unary_k<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const double*>(x), static_cast<double*>(y), n);
  } else {
    unary_k<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const float*>(x), static_cast<float*>(y), n);
  }
}

void launch_binary(BinaryOp op, Bcast bc, Dt dt, const void* a, const void* b, void* y, int64_t n, int64_t cols,
                   cudaStream_t s) {
  if (n == 0) return;
  const int g = blocks_for(n);
  switch (dt) {
    case Dt::f32:
      binary_k<<<g, kThreads, 0, s>>>(op, bc, static_cast<const float*>(a), static_cast<const float*>(b),
                                      static_cast<float*>(y), n, cols);
      break;
    case Dt::f64:
      binary_k<<<g, kThreads, 0, s>>>(op, bc, static_cast<const double*>(a), static_cast<const double*>(b),
                                      static_cast<double*>(y), n, cols);
      break;
    case Dt::i32:
      binary_k<<<g, kThreads, 0, s>>>(op, bc, static_cast<const int32_t*>(a), static_cast<const int32_t*>(b),
                                      static_cast<int32_t*>(y), n, cols);
      break;
    case Dt::i64:
      binary_k<<<g, kThreads, 0, s>>>(op, bc, static_cast<const int64_t*>(a), static_cast<const int64_t*>(b),
                                      static_cast<int64_t*>(y), n, cols);
      break;
    case Dt::f16:
    case Dt::bf16:
      by_float_type(dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        binary_half_k<<<g, kThreads, 0, s>>>(op, bc, static_cast<const T*>(a), static_cast<const T*>(b),
                                             static_cast<T*>(y), n, cols);
      });
      break;
    case Dt::b8: break;  // the op wrapper refuses arithmetic on bool tensors
  }
}

void launch_binary_general(BinaryOp op, Dt dt, const Strided& g, const void* a, const void* b, void* y, int64_t n,
                           cudaStream_t s) {
  if (n == 0) return;
  const int blocks = blocks_for(n);
  switch (dt) {
    case Dt::f32:
      binary_general_k<<<blocks, kThreads, 0, s>>>(op, g, static_cast<const float*>(a), static_cast<const float*>(b),
                                                   static_cast<float*>(y), n);
      break;
    case Dt::f64:
      binary_general_k<<<blocks, kThreads, 0, s>>>(op, g, static_cast<const double*>(a), static_cast<const double*>(b),
                                                   static_cast<double*>(y), n);
      break;
    case Dt::i32:
      binary_general_k<<<blocks, kThreads, 0, s>>>(op, g, static_cast<const int32_t*>(a),
                                                   static_cast<const int32_t*>(b), static_cast<int32_t*>(y), n);
      break;
    case Dt::i64:
      binary_general_k<<<blocks, kThreads, 0, s>>>(op, g, static_cast<const int64_t*>(a),
                                                   static_cast<const int64_t*>(b), static_cast<int64_t*>(y), n);
      break;
    case Dt::f16:
    case Dt::bf16:
      by_float_type(dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        binary_half_general_k<<<blocks, kThreads, 0, s>>>(op, g, static_cast<const T*>(a), static_cast<const T*>(b),
                                                          static_cast<T*>(y), n);
      });
      break;
    case Dt::b8: break;  // refused by the op wrapper
  }
}

void launch_finish_sum(const double* partials, int blocks, float* out, double divisor, cudaStream_t s) {
  finish_sum_k<<<1, 1, 0, s>>>(partials, blocks, out, divisor);
}

void launch_sum_axis1(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t s) {
  if (rows == 0) return;
  sum_axis1_k<<<blocks_for(rows), kThreads, 0, s>>>(x, y, rows, cols);
}

void launch_sum_all(const float* x, float* y, int64_t n, bool mean, Scratch scratch, cudaStream_t s) {
  const int blocks = partial_blocks(n);
  sum_partials_k<<<blocks, kThreads, 0, s>>>(x, n, scratch.partials);
  finish_sum_k<<<1, 1, 0, s>>>(scratch.partials, blocks, y, mean && n > 0 ? static_cast<double>(n) : 1.0);
}

void launch_gather_rows(const char* src, const int64_t* idx, char* dst, int64_t count, int64_t rows,
                        int64_t row_bytes, Scratch scratch, cudaStream_t s) {
  if (count == 0 || row_bytes == 0) return;
  gather_rows_k<<<blocks_for(count * row_bytes), kThreads, 0, s>>>(src, idx, dst, count, rows, row_bytes,
                                                                   scratch.error);
}

__global__ void scatter_add_rows_k(const float* upd, const int64_t* idx, float* out, int64_t count, int64_t rows,
                                   int64_t cols, long long* error) {
  GRID_STRIDE(c, cols) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t r = idx[i];
      if (r < 0 || r >= rows) {
        if (c == 0) set_error(error, i, r);
        continue;
      }
      out[r * cols + c] += upd[i * cols + c];
    }
  }
}

void launch_scatter_add_rows(const float* upd, const int64_t* idx, float* out, int64_t count, int64_t rows,
                             int64_t cols, Scratch scratch, cudaStream_t s) {
  if (rows * cols > 0) cudaMemsetAsync(out, 0, static_cast<size_t>(rows * cols) * sizeof(float), s);
  if (count == 0 || cols == 0) return;
  scatter_add_rows_k<<<blocks_for(cols), kThreads, 0, s>>>(upd, idx, out, count, rows, cols, scratch.error);
}

void launch_sgd(float* var, const float* g, float* m, int64_t n, float lr, float momentum, bool nesterov,
                cudaStream_t s) {
  if (n == 0) return;
  sgd_k<<<blocks_for(n), kThreads, 0, s>>>(var, g, m, n, lr, momentum, nesterov);
}

void launch_adam(float* var, float* m, float* v, const float* g, float* vhat, int64_t n, float alpha, float beta_1,
                 float beta_2, float epsilon, cudaStream_t s) {
  if (n == 0) return;
  adam_k<<<blocks_for(n), kThreads, 0, s>>>(var, m, v, g, vhat, n, alpha, beta_1, beta_2, epsilon);
}

void launch_adam_many(const AdamGroup& group, float alpha, float beta_1, float beta_2, float epsilon, cudaStream_t s) {
  int64_t largest = 0;
  for (int t = 0; t < group.count; ++t) largest = group.n[t] > largest ? group.n[t] : largest;
  if (group.count == 0 || largest == 0) return;
  const dim3 grid(static_cast<unsigned>(blocks_for(largest)), static_cast<unsigned>(group.count));
  adam_many_k<<<grid, kThreads, 0, s>>>(group, alpha, beta_1, beta_2, epsilon);
}

void launch_rmsprop(float* var, float* v, const float* g, float* mom, float* mg, int64_t n, float lr, float rho,
                    float momentum, float epsilon, cudaStream_t s) {
  if (n == 0) return;
  rmsprop_k<<<blocks_for(n), kThreads, 0, s>>>(var, v, g, mom, mg, n, lr, rho, momentum, epsilon);
}

}  // namespace osprey::cuda
