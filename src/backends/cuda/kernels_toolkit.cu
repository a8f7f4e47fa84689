// Device kernels of the ops behind keras::ops: broadcast_to, comparisons, select, reductions over a block of axes,
// cumulative sums and products, top_k. Each gives the CPU kernel's results (sums in another order: within float
// rounding).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"

namespace osprey::cuda {

namespace {

template <typename E>
__global__ void broadcast_to_k(Strided g, const E* x, E* y, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t off[1];
    strided_offsets<1>(g, i, off);
    y[i] = x[off[0]];
  }
}

template <typename E>
__global__ void select_k(Strided g, const bool* c, const E* x, const E* z, E* y, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t off[3];
    strided_offsets<3>(g, i, off);
    y[i] = c[off[0]] ? x[off[1]] : z[off[2]];
  }
}

template <typename T>
__global__ void compare_k(CmpOp op, Strided g, const T* a, const T* b, bool* y, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t off[2];
    strided_offsets<2>(g, i, off);
    const T u = a[off[0]], v = b[off[1]];
    bool r = false;
    switch (op) {
      case CmpOp::eq: r = u == v; break;
      case CmpOp::ne: r = u != v; break;
      case CmpOp::lt: r = u < v; break;
      case CmpOp::le: r = u <= v; break;
      case CmpOp::gt: r = u > v; break;
      case CmpOp::ge: r = u >= v; break;
      case CmpOp::logical_and: r = u && v; break;
      case CmpOp::logical_or: r = u || v; break;
      case CmpOp::logical_xor: r = static_cast<bool>(u) != static_cast<bool>(v); break;
    }
    y[i] = r;
  }
}

template <typename T>
__device__ inline T integer_op(IntOp op, T a, T b) {
  using U = typename std::make_unsigned<T>::type;
  constexpr T bits = static_cast<T>(sizeof(T) * 8 - 1);
  const T shift = b < 0 ? T{0} : b > bits ? bits : b;
  const U ma = a < 0 ? U{0} - static_cast<U>(a) : static_cast<U>(a), mb = b < 0 ? U{0} - static_cast<U>(b) : static_cast<U>(b);
  U x = ma, y = mb;
  if (op == IntOp::gcd || op == IntOp::lcm) {
    while (y) {
      const U r = x % y;
      x = y;
      y = r;
    }
  }
  switch (op) {
    case IntOp::bit_and: return a & b;
    case IntOp::bit_or: return a | b;
    case IntOp::bit_xor: return a ^ b;
    case IntOp::left_shift: return static_cast<T>(static_cast<U>(a) << shift);
    case IntOp::right_shift: return a >> shift;
    case IntOp::gcd: return static_cast<T>(x);
    case IntOp::lcm: return x == 0 ? T{0} : static_cast<T>(ma / x * mb);
  }
  return T{0};
}

template <typename T>
__global__ void integer_binary_k(IntOp op, Strided g, const T* a, const T* b, T* y, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t off[2];
    strided_offsets<2>(g, i, off);
    y[i] = integer_op(op, a[off[0]], b[off[1]]);
  }
}

// Accumulator of a reduction: float sums and products in double (as the CPU), others in their own type.
template <typename T> struct Acc { using type = T; };
template <> struct Acc<float> { using type = double; };

template <typename T>
__device__ inline bool is_nan(T v) { return v != v; }

// The identity of an empty max (low) or min: -inf/+inf for floats, the type's lowest/highest for integers (as the
// CPU kernel).
template <typename T>
__device__ inline T extreme(bool low) {
  if constexpr (std::is_floating_point_v<T>) {
    return low ? static_cast<T>(-INFINITY) : static_cast<T>(INFINITY);
  } else if constexpr (sizeof(T) == 8) {
    return low ? static_cast<T>(INT64_MIN) : static_cast<T>(INT64_MAX);
  } else if constexpr (sizeof(T) == 4) {
    return low ? static_cast<T>(INT32_MIN) : static_cast<T>(INT32_MAX);
  } else {
    return low ? T(0) : T(1);
  }
}

// (value, index) of an argmax/argmin: whether (v1, i1) comes before (v2, i2): a NaN first, then the extreme, then
// the lower index.
template <typename T>
__device__ inline bool arg_before(bool largest, T v1, int64_t i1, T v2, int64_t i2) {
  const bool n1 = is_nan(v1), n2 = is_nan(v2);
  if (n1 || n2) return n1 && n2 ? i1 < i2 : n1;
  if (v1 != v2) return largest ? v1 > v2 : v1 < v2;
  return i1 < i2;
}

// One warp per output (o, i): lanes take k = lane, lane + 32, ...; their partial results meet by shuffles.
template <typename T>
__global__ void reduce_axis_k(RedOp op, const T* x, void* y, int64_t outer, int64_t r, int64_t inner) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32; o < outer * inner;
       o += warps) {
    const T* p = x + (o / inner) * r * inner + o % inner;
    switch (op) {
      case RedOp::sum:
      case RedOp::prod: {
        using A = typename Acc<T>::type;
        const bool sum = op == RedOp::sum;
        A a = sum ? A(0) : A(1);
        for (int64_t k = lane; k < r; k += 32) a = sum ? a + A(p[k * inner]) : a * A(p[k * inner]);
        for (int s = 16; s > 0; s >>= 1) {
          const A b = __shfl_xor_sync(0xffffffffu, a, s);
          a = sum ? a + b : a * b;
        }
        if (lane == 0) static_cast<T*>(y)[o] = static_cast<T>(a);
        break;
      }
      case RedOp::max:
      case RedOp::min:
      case RedOp::argmax:
      case RedOp::argmin: {
        const bool largest = op == RedOp::max || op == RedOp::argmax;
        T v = T(0);
        int64_t idx = -1;  // none yet
        for (int64_t k = lane; k < r; k += 32) {
          const T u = p[k * inner];
          if (idx < 0 || arg_before(largest, u, k, v, idx)) v = u, idx = k;
        }
        for (int s = 16; s > 0; s >>= 1) {
          const T v2 = __shfl_xor_sync(0xffffffffu, v, s);
          const long long i2 = __shfl_xor_sync(0xffffffffu, static_cast<long long>(idx), s);
          if (i2 >= 0 && (idx < 0 || arg_before(largest, v2, i2, v, idx))) v = v2, idx = i2;
        }
        if (lane == 0) {
          if (op == RedOp::argmax || op == RedOp::argmin) {
            static_cast<int32_t*>(y)[o] = static_cast<int32_t>(idx < 0 ? 0 : idx);
          } else if (idx < 0) {  // an empty reduction: the identity (the lowest or highest value)
            static_cast<T*>(y)[o] = extreme<T>(largest);
          } else {
            static_cast<T*>(y)[o] = v;
          }
        }
        break;
      }
      case RedOp::any:
      case RedOp::all: {
        const bool any = op == RedOp::any;
        int hit = 0;
        for (int64_t k = lane; k < r; k += 32) hit |= any ? (p[k * inner] != T(0)) : (p[k * inner] == T(0));
        hit = __any_sync(0xffffffffu, hit);
        if (lane == 0) static_cast<bool*>(y)[o] = any ? hit != 0 : hit == 0;
        break;
      }
    }
  }
}

template <typename T>
__global__ void cumulative_k(bool prod, bool exclusive, bool reverse, const T* x, T* y, int64_t outer, int64_t r,
                             int64_t inner) {
  GRID_STRIDE(o, outer * inner) {
    const int64_t base = (o / inner) * r * inner + o % inner;
    T acc = prod ? T(1) : T(0);
    for (int64_t step = 0; step < r; ++step) {
      const int64_t k = reverse ? r - 1 - step : step;
      const T v = x[base + k * inner];
      if (!exclusive) acc = prod ? acc * v : acc + v;
      y[base + k * inner] = acc;
      if (exclusive) acc = prod ? acc * v : acc + v;
    }
  }
}

// Whether element (a, i) comes before (b, j) in top_k's order: NaN above everything, then by value, then index.
template <typename T>
__device__ inline bool top_before(bool largest, T a, int64_t i, T b, int64_t j) {
  const bool na = is_nan(a), nb = is_nan(b);
  if (na || nb) return na && !nb ? largest : (!na && nb ? !largest : i < j);
  if (a != b) return largest ? a > b : a < b;
  return i < j;
}

template <typename T>
__global__ void top_k_k(const T* x, T* values, int32_t* indices, int64_t rows, int64_t r, int64_t k, bool largest) {
  GRID_STRIDE(row, rows) {
    const T* p = x + row * r;
    T* vals = values + row * k;
    int32_t* idx = indices + row * k;
    int64_t held = 0;
    for (int64_t j = 0; j < r; ++j) {
      const T v = p[j];
      if (held == k && !top_before(largest, v, j, vals[k - 1], idx[k - 1])) continue;
      int64_t at = held < k ? held : k - 1;  // insert at the end, then move up past the ones it comes before
      while (at > 0 && top_before(largest, v, j, vals[at - 1], idx[at - 1])) {
        vals[at] = vals[at - 1];
        idx[at] = idx[at - 1];
        --at;
      }
      vals[at] = v;
      idx[at] = static_cast<int32_t>(j);
      if (held < k) ++held;
    }
  }
}

template <typename F>
void by_elem_bytes(int elem_bytes, F&& f) {
  if (elem_bytes == 1) f(uint8_t{});
  else if (elem_bytes == 2) f(uint16_t{});
  else if (elem_bytes == 4) f(uint32_t{});
  else f(uint64_t{});
}

template <typename F>
void by_dtype(Dt dt, F&& f) {
  switch (dt) {
    case Dt::f32: return f(float{});
    case Dt::f64: return f(double{});
    case Dt::i32: return f(int32_t{});
    case Dt::i64: return f(int64_t{});
    case Dt::b8: return f(uint8_t{});
    case Dt::f16:
    case Dt::bf16: return;  // computed in float32 (dispatch)
  }
}

int warp_blocks(int64_t outputs) { return blocks_for_rows(outputs); }

}  // namespace

void launch_broadcast_to(const Strided& g, int elem_bytes, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  by_elem_bytes(elem_bytes, [&](auto e) {
    using E = decltype(e);
    broadcast_to_k<<<blocks_for(n), kThreads, 0, s>>>(g, static_cast<const E*>(x), static_cast<E*>(y), n);
  });
}

void launch_select(const Strided& g, int elem_bytes, const bool* c, const void* x, const void* z, void* y, int64_t n,
                   cudaStream_t s) {
  if (n == 0) return;
  by_elem_bytes(elem_bytes, [&](auto e) {
    using E = decltype(e);
    select_k<<<blocks_for(n), kThreads, 0, s>>>(g, c, static_cast<const E*>(x), static_cast<const E*>(z),
                                                static_cast<E*>(y), n);
  });
}

void launch_compare(CmpOp op, Dt dt, const Strided& g, const void* a, const void* b, bool* y, int64_t n,
                    cudaStream_t s) {
  if (n == 0) return;
  by_dtype(dt, [&](auto t) {
    using T = decltype(t);
    compare_k<<<blocks_for(n), kThreads, 0, s>>>(op, g, static_cast<const T*>(a), static_cast<const T*>(b), y, n);
  });
}

void launch_integer_binary(IntOp op, Dt dt, const Strided& g, const void* a, const void* b, void* y, int64_t n,
                           cudaStream_t s) {
  if (n == 0) return;
  if (dt == Dt::i32) {
    integer_binary_k<<<blocks_for(n), kThreads, 0, s>>>(op, g, static_cast<const int32_t*>(a),
                                                        static_cast<const int32_t*>(b), static_cast<int32_t*>(y), n);
  } else if (dt == Dt::i64) {
    integer_binary_k<<<blocks_for(n), kThreads, 0, s>>>(op, g, static_cast<const int64_t*>(a),
                                                        static_cast<const int64_t*>(b), static_cast<int64_t*>(y), n);
  }
}

void launch_reduce_axis(RedOp op, Dt dt, const void* x, void* y, int64_t outer, int64_t r, int64_t inner,
                        cudaStream_t s) {
  if (outer * inner == 0) return;
  by_dtype(dt, [&](auto t) {
    using T = decltype(t);
    reduce_axis_k<<<warp_blocks(outer * inner), kThreads, 0, s>>>(op, static_cast<const T*>(x), y, outer, r, inner);
  });
}

void launch_cumulative(Dt dt, bool prod, bool exclusive, bool reverse, const void* x, void* y, int64_t outer,
                       int64_t r, int64_t inner, cudaStream_t s) {
  if (outer * inner == 0 || r == 0) return;
  by_dtype(dt, [&](auto t) {
    using T = decltype(t);
    cumulative_k<<<blocks_for(outer * inner), kThreads, 0, s>>>(prod, exclusive, reverse, static_cast<const T*>(x),
                                                                static_cast<T*>(y), outer, r, inner);
  });
}

void launch_top_k(Dt dt, const void* x, void* values, int32_t* indices, int64_t rows, int64_t r, int64_t k,
                  bool largest, cudaStream_t s) {
  if (rows == 0 || k == 0) return;
  by_dtype(dt, [&](auto t) {
    using T = decltype(t);
    top_k_k<<<blocks_for(rows), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(values), indices, rows,
                                                  r, k, largest);
  });
}

}  // namespace osprey::cuda
