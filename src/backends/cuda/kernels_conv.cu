// The CUDA plug-in's pooling kernels (forward and a deterministic gather for the gradient) and the region copy
// that pads a convolution's input explicitly where its padding is asymmetric (cuDNN pads both sides alike).
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"
#include "backends/cuda/kernel_types.cuh"

namespace osprey::cuda {

namespace {

// The pooling geometry in the index type of the kernels: 32-bit where every index fits (64-bit divisions and
// remainders made the max-pooling gradient of a 256 × 32 × 32 × 32 batch take 330 µs on an H200).
template <typename I>
struct Geo {
  I n, c, in[3], out[3], window[3], stride[3], pad[3];
  int max;
};
template <typename I>
Geo<I> geo_of(const PoolGeometry& p) {
  Geo<I> g{};
  g.n = static_cast<I>(p.n);
  g.c = static_cast<I>(p.c);
  for (int a = 0; a < 3; ++a) {
    g.in[a] = static_cast<I>(p.in[a]);
    g.out[a] = static_cast<I>(p.out[a]);
    g.window[a] = static_cast<I>(p.window[a]);
    g.stride[a] = static_cast<I>(p.stride[a]);
    g.pad[a] = static_cast<I>(p.pad[a]);
  }
  g.max = p.max;
  return g;
}

// The window of output position o along one axis: [o·stride − pad, +window) clipped to the input.
template <typename I>
__device__ inline void window_of(const Geo<I>& g, int a, I o, I& lo, I& hi) {
  lo = o * g.stride[a] - g.pad[a];
  hi = lo + g.window[a];
  if (lo < 0) lo = 0;
  if (hi > g.in[a]) hi = g.in[a];
}

// The input offset (within one sample and channel plane) of the first maximum of output window (o0, o1, o2), and
// the window's mean when averaging (float16/bfloat16 inputs read as float32).
template <typename I, typename T>
__device__ inline I pool_window(const Geo<I>& g, const T* x, I base, const I o[3], float& value) {
  I lo[3], hi[3];
  for (int a = 0; a < 3; ++a) window_of(g, a, o[a], lo[a], hi[a]);
  float best = 0.f, sum = 0.f;
  I arg = -1, count = 0;
  for (I i0 = lo[0]; i0 < hi[0]; ++i0) {
    for (I i1 = lo[1]; i1 < hi[1]; ++i1) {
      for (I i2 = lo[2]; i2 < hi[2]; ++i2) {
        const I at = base + ((i0 * g.in[1] + i1) * g.in[2] + i2) * g.c;
        const float v = to_f32(x[at]);
        if (arg < 0 || v > best) {
          best = v;
          arg = at;
        }
        sum += v;
        ++count;
      }
    }
  }
  value = g.max ? best : (count ? sum / static_cast<float>(count) : 0.f);
  return arg;
}

template <typename I, typename T>
__global__ void pool_k(Geo<I> g, const T* x, T* y, I total) {
  GRID_STRIDE(k, total) {
    I rest = static_cast<I>(k);
    const I c = rest % g.c;
    rest /= g.c;
    I o[3];
    for (int a = 2; a >= 0; --a) {
      o[a] = rest % g.out[a];
      rest /= g.out[a];
    }
    const I base = rest * g.in[0] * g.in[1] * g.in[2] * g.c + c;
    float v;
    pool_window(g, x, base, o, v);
    y[k] = convert<T>(v);
  }
}

// Output windows along one axis that contain input position i: o·stride − pad <= i < o·stride − pad + window.
template <typename I>
__device__ inline void outputs_of(const Geo<I>& g, int a, I i, I& lo, I& hi) {
  const I top = i + g.pad[a];  // o·stride <= top, o·stride > top − window
  lo = top - g.window[a] + 1 <= 0 ? 0 : (top - g.window[a] + g.stride[a]) / g.stride[a];
  hi = top / g.stride[a] + 1;
  if (hi > g.out[a]) hi = g.out[a];
}

template <typename I, typename T>
__global__ void pool_grad_k(Geo<I> g, const T* x, const T* dy, T* dx, I total) {
  GRID_STRIDE(k, total) {
    I rest = static_cast<I>(k);
    const I c = rest % g.c;
    rest /= g.c;
    I i[3];
    for (int a = 2; a >= 0; --a) {
      i[a] = rest % g.in[a];
      rest /= g.in[a];
    }
    const I sample = rest;
    const I base = sample * g.in[0] * g.in[1] * g.in[2] * g.c + c;
    I lo[3], hi[3];
    for (int a = 0; a < 3; ++a) outputs_of(g, a, i[a], lo[a], hi[a]);
    float sum = 0.f;
    for (I o0 = lo[0]; o0 < hi[0]; ++o0) {
      for (I o1 = lo[1]; o1 < hi[1]; ++o1) {
        for (I o2 = lo[2]; o2 < hi[2]; ++o2) {
          const I o[3] = {o0, o1, o2};
          const I out_at = (((sample * g.out[0] + o0) * g.out[1] + o1) * g.out[2] + o2) * g.c + c;
          if (g.max) {
            float v;
            if (pool_window(g, x, base, o, v) == static_cast<I>(k)) sum += to_f32(dy[out_at]);
          } else {
            I wl, wh, count = 1;
            for (int a = 0; a < 3; ++a) {
              window_of(g, a, o[a], wl, wh);
              count *= wh - wl;
            }
            sum += to_f32(dy[out_at]) / static_cast<float>(count);
          }
        }
      }
    }
    dx[k] = convert<T>(sum);
  }
}

template <typename T>
__global__ void region_copy_k(RegionGeometry g, T* small, T* big, bool into_big, int64_t total) {
  GRID_STRIDE(k, total) {
    long long rest = k, at = 0, stride = 1;
    for (int a = g.rank - 1; a >= 0; --a) {
      at += (rest % g.small[a] + g.offset[a]) * stride;
      rest /= g.small[a];
      stride *= g.big[a];
    }
    if (into_big) big[at] = small[k];
    else small[k] = big[at];
  }
}

// Whether every index of the input and output (and the padded window positions) fits a 32-bit int.
bool fits_int(const PoolGeometry& g) {
  const long long limit = 1LL << 30;
  long long in = g.n * g.c, out = g.n * g.c;
  for (int a = 0; a < 3; ++a) {
    in *= g.in[a] + g.pad[a] + g.window[a];
    out *= g.out[a];
  }
  return in < limit && out < limit;
}

}  // namespace

void launch_pool(const PoolGeometry& g, Dt dt, const void* x, void* y, cudaStream_t s) {
  const int64_t total = g.n * g.out[0] * g.out[1] * g.out[2] * g.c;
  if (total == 0) return;
  const bool narrow = fits_int(g);
  by_float_type(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (narrow) {
      pool_k<<<blocks_for(total), kThreads, 0, s>>>(geo_of<int>(g), static_cast<const T*>(x), static_cast<T*>(y),
                                                    static_cast<int>(total));
    } else {
      pool_k<<<blocks_for(total), kThreads, 0, s>>>(geo_of<long long>(g), static_cast<const T*>(x),
                                                    static_cast<T*>(y), static_cast<long long>(total));
    }
  });
}

void launch_pool_grad(const PoolGeometry& g, Dt dt, const void* x, const void* dy, void* dx, cudaStream_t s) {
  const int64_t total = g.n * g.in[0] * g.in[1] * g.in[2] * g.c;
  if (total == 0) return;
  by_float_type(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (fits_int(g)) {
      pool_grad_k<<<blocks_for(total), kThreads, 0, s>>>(geo_of<int>(g), static_cast<const T*>(x),
                                                         static_cast<const T*>(dy), static_cast<T*>(dx),
                                                         static_cast<int>(total));
    } else {
      pool_grad_k<<<blocks_for(total), kThreads, 0, s>>>(geo_of<long long>(g), static_cast<const T*>(x),
                                                         static_cast<const T*>(dy), static_cast<T*>(dx),
                                                         static_cast<long long>(total));
    }
  });
}

void launch_region_copy(const RegionGeometry& g, void* small, void* big, int elem_bytes, bool into_big, cudaStream_t s) {
  int64_t total = 1;
  for (int a = 0; a < g.rank; ++a) total *= g.small[a];
  if (total == 0) return;
  if (elem_bytes == 2) {
    region_copy_k<<<blocks_for(total), kThreads, 0, s>>>(g, static_cast<uint16_t*>(small), static_cast<uint16_t*>(big),
                                                         into_big, total);
  } else {
    region_copy_k<<<blocks_for(total), kThreads, 0, s>>>(g, static_cast<float*>(small), static_cast<float*>(big),
                                                         into_big, total);
  }
}

}  // namespace osprey::cuda
