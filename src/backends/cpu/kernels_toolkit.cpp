// CPU kernels of the general ops behind keras::ops: broadcast_to, comparisons, select, reductions over a block of
// axes, cumulative sums and products, top_k.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/strided.h"
#include "osprey/errors.h"

namespace osprey::cpu {

using ops::KernelContext;
using runtime::DeviceType;

namespace {

int64_t row_grain(int64_t inner) { return std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(inner, 1)); }

// Copies of elements of E bytes (as an unsigned integer of that size) through a one-operand geometry.
template <typename E>
void broadcast_copy(const ops::StridedGeometry& g, const E* x, E* y) {
  const int64_t inner = g.dims[g.rank - 1], s = g.strides[0][g.rank - 1];
  parallel_chunks(strided_rows(g), [&](int64_t begin, int64_t end) {
    for_strided_rows<1>(g, begin, end, [&](int64_t row, const int64_t* off) {
      E* py = y + row * inner;
      const E* px = x + off[0];
      if (s == 0) std::fill(py, py + inner, px[0]);
      else for (int64_t j = 0; j < inner; ++j) py[j] = px[j * s];
    });
  }, row_grain(inner));
}

void broadcast_to_kernel(const KernelContext& ctx) {
  const auto& g = ctx.attr<ops::StridedGeometry>();
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  switch (dtype_size(x.dtype())) {
    case 1: return broadcast_copy(g, static_cast<const uint8_t*>(x.raw_data()), static_cast<uint8_t*>(y.raw_data()));
    case 2: return broadcast_copy(g, static_cast<const uint16_t*>(x.raw_data()), static_cast<uint16_t*>(y.raw_data()));
    case 4: return broadcast_copy(g, static_cast<const uint32_t*>(x.raw_data()), static_cast<uint32_t*>(y.raw_data()));
    default: return broadcast_copy(g, static_cast<const uint64_t*>(x.raw_data()), static_cast<uint64_t*>(y.raw_data()));
  }
}

template <typename T>
inline bool compare_op(ops::CompareKind k, T a, T b) {
  switch (k) {
    case ops::CompareKind::equal: return a == b;
    case ops::CompareKind::not_equal: return a != b;
    case ops::CompareKind::less: return a < b;
    case ops::CompareKind::less_equal: return a <= b;
    case ops::CompareKind::greater: return a > b;
    case ops::CompareKind::greater_equal: return a >= b;
    case ops::CompareKind::logical_and: return a && b;
    case ops::CompareKind::logical_or: return a || b;
    case ops::CompareKind::logical_xor: return static_cast<bool>(a) != static_cast<bool>(b);
  }
  return false;
}

// y = f(a, b) element-wise over a broadcast geometry of two operands, rows shared out between the threads.
template <typename T, typename R, typename F>
void strided_binary(const ops::StridedGeometry& g, const T* a, const T* b, R* y, F f) {
  const int64_t inner = g.dims[g.rank - 1], sa = g.strides[0][g.rank - 1], sb = g.strides[1][g.rank - 1];
  parallel_chunks(strided_rows(g), [&](int64_t begin, int64_t end) {
    for_strided_rows<2>(g, begin, end, [&](int64_t row, const int64_t* off) {
      const T* pa = a + off[0];
      const T* pb = b + off[1];
      R* py = y + row * inner;
      for (int64_t j = 0; j < inner; ++j) py[j] = f(pa[j * sa], pb[j * sb]);
    });
  }, row_grain(inner));
}

template <typename T>
void compare_typed(const ops::CompareAttrs& at, const T* a, const T* b, bool* y) {
  strided_binary(at.geometry, a, b, y, [k = at.kind](T u, T v) { return compare_op(k, u, v); });
}

void compare_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::CompareAttrs>();
  const Tensor &a = ctx.inputs[0], &b = ctx.inputs[1];
  bool* y = ctx.outputs[0].data<bool>();
  switch (a.dtype()) {
    case DType::float32: return compare_typed(at, a.data<float>(), b.data<float>(), y);
    case DType::float64: return compare_typed(at, a.data<double>(), b.data<double>(), y);
    case DType::int32: return compare_typed(at, a.data<int32_t>(), b.data<int32_t>(), y);
    case DType::int64: return compare_typed(at, a.data<int64_t>(), b.data<int64_t>(), y);
    case DType::bool_: return compare_typed(at, a.data<bool>(), b.data<bool>(), y);
    case DType::float16:
    case DType::bfloat16: throw InternalError("Compare kernel on half floats (dispatch computes them in float32)");
  }
}

// TensorFlow's integer ops: shifts clamped to [0, bits - 1] (computed unsigned, so no overflow is undefined),
// gcd and lcm on magnitudes (unsigned: |INT_MIN| fits).
template <typename T>
inline T integer_op(ops::IntegerKind k, T a, T b) {
  using U = std::make_unsigned_t<T>;
  constexpr T bits = static_cast<T>(sizeof(T) * 8 - 1);
  auto magnitude = [](T v) { return v < 0 ? static_cast<U>(0) - static_cast<U>(v) : static_cast<U>(v); };
  auto gcd = [&](U x, U y) {
    while (y) x = std::exchange(y, x % y);
    return x;
  };
  switch (k) {
    case ops::IntegerKind::bitwise_and: return a & b;
    case ops::IntegerKind::bitwise_or: return a | b;
    case ops::IntegerKind::bitwise_xor: return a ^ b;
    case ops::IntegerKind::left_shift: return static_cast<T>(static_cast<U>(a) << std::clamp<T>(b, 0, bits));
    case ops::IntegerKind::right_shift: return a >> std::clamp<T>(b, 0, bits);
    case ops::IntegerKind::gcd: return static_cast<T>(gcd(magnitude(a), magnitude(b)));
    case ops::IntegerKind::lcm: {
      const U g = gcd(magnitude(a), magnitude(b));
      return g == 0 ? T{0} : static_cast<T>(magnitude(a) / g * magnitude(b));
    }
  }
  return T{0};
}

template <typename T>
void integer_typed(const ops::IntegerBinaryAttrs& at, const T* a, const T* b, T* y) {
  strided_binary(at.geometry, a, b, y, [k = at.kind](T u, T v) { return integer_op(k, u, v); });
}

void integer_binary_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::IntegerBinaryAttrs>();
  const Tensor &a = ctx.inputs[0], &b = ctx.inputs[1];
  if (a.dtype() == DType::int32) return integer_typed(at, a.data<int32_t>(), b.data<int32_t>(), ctx.outputs[0].data<int32_t>());
  if (a.dtype() == DType::int64) return integer_typed(at, a.data<int64_t>(), b.data<int64_t>(), ctx.outputs[0].data<int64_t>());
  throw InvalidArgumentError(fmt::format("IntegerBinary kernel: int32 or int64 operands, got {}", dtype_name(a.dtype())));
}

template <typename E>
void select_copy(const ops::StridedGeometry& g, const bool* c, const E* x, const E* z, E* y) {
  const int64_t inner = g.dims[g.rank - 1];
  const int64_t sc = g.strides[0][g.rank - 1], sx = g.strides[1][g.rank - 1], sz = g.strides[2][g.rank - 1];
  parallel_chunks(strided_rows(g), [&](int64_t begin, int64_t end) {
    for_strided_rows<3>(g, begin, end, [&](int64_t row, const int64_t* off) {
      E* py = y + row * inner;
      for (int64_t j = 0; j < inner; ++j) py[j] = c[off[0] + j * sc] ? x[off[1] + j * sx] : z[off[2] + j * sz];
    });
  }, row_grain(inner));
}

void select_kernel(const KernelContext& ctx) {
  const auto& g = ctx.attr<ops::StridedGeometry>();
  const bool* c = ctx.inputs[0].data<bool>();
  const void *x = ctx.inputs[1].raw_data(), *z = ctx.inputs[2].raw_data();
  void* y = ctx.outputs[0].raw_data();
  switch (dtype_size(ctx.inputs[1].dtype())) {
    case 1:
      return select_copy(g, c, static_cast<const uint8_t*>(x), static_cast<const uint8_t*>(z), static_cast<uint8_t*>(y));
    case 2:
      return select_copy(g, c, static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(z), static_cast<uint16_t*>(y));
    case 4:
      return select_copy(g, c, static_cast<const uint32_t*>(x), static_cast<const uint32_t*>(z), static_cast<uint32_t*>(y));
    default:
      return select_copy(g, c, static_cast<const uint64_t*>(x), static_cast<const uint64_t*>(z), static_cast<uint64_t*>(y));
  }
}

// Sums of floats accumulate in double (as the other CPU reductions), of integers in their own type.
template <typename T> struct Acc { using type = T; };
template <> struct Acc<float> { using type = double; };

// Reduction of the middle axis of (outer, r, inner): each output walks its r elements in order (the same order on
// every run and thread count).
template <typename T>
void reduce_typed(const ops::ReduceAxisAttrs& at, const T* x, void* out) {
  const int64_t outer = at.outer, r = at.r, inner = at.inner;
  parallel_chunks(outer * inner, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* p = x + (o / inner) * r * inner + o % inner;
      switch (at.op) {
        case ops::ReduceOp::sum: {
          typename Acc<T>::type s = 0;
          for (int64_t k = 0; k < r; ++k) s += p[k * inner];
          static_cast<T*>(out)[o] = static_cast<T>(s);
          break;
        }
        case ops::ReduceOp::prod: {
          typename Acc<T>::type s = 1;
          for (int64_t k = 0; k < r; ++k) s *= p[k * inner];
          static_cast<T*>(out)[o] = static_cast<T>(s);
          break;
        }
        case ops::ReduceOp::max:
        case ops::ReduceOp::min: {
          const bool mx = at.op == ops::ReduceOp::max;
          T m = mx ? (std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest())
                   : (std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max());
          for (int64_t k = 0; k < r; ++k) {
            const T v = p[k * inner];
            if (v != v) { m = v; break; }  // NaN wins, as in NumPy
            if (mx ? v > m : v < m) m = v;
          }
          static_cast<T*>(out)[o] = m;
          break;
        }
        case ops::ReduceOp::argmax:
        case ops::ReduceOp::argmin: {
          const bool mx = at.op == ops::ReduceOp::argmax;
          int64_t best = 0;
          T m = p[0];
          for (int64_t k = 1; k < r && m == m; ++k) {
            const T v = p[k * inner];
            if (v != v || (mx ? v > m : v < m)) m = v, best = k;  // the first NaN, else the first extreme
          }
          static_cast<int32_t*>(out)[o] = static_cast<int32_t>(best);
          break;
        }
        case ops::ReduceOp::any:
        case ops::ReduceOp::all: {
          const bool any = at.op == ops::ReduceOp::any;
          bool v = !any;
          for (int64_t k = 0; k < r && v == !any; ++k) v = p[k * inner] != T(0);  // stops at the first deciding one
          static_cast<bool*>(out)[o] = v;
          break;
        }
      }
    }
  }, std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(r, 1)));
}

void reduce_axis_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::ReduceAxisAttrs>();
  const Tensor& x = ctx.inputs[0];
  void* y = ctx.outputs[0].raw_data();
  switch (x.dtype()) {
    case DType::float32: return reduce_typed(at, x.data<float>(), y);
    case DType::float64: return reduce_typed(at, x.data<double>(), y);
    case DType::int32: return reduce_typed(at, x.data<int32_t>(), y);
    case DType::int64: return reduce_typed(at, x.data<int64_t>(), y);
    case DType::bool_: return reduce_typed(at, reinterpret_cast<const uint8_t*>(x.data<bool>()), y);
    case DType::float16:
    case DType::bfloat16: throw InternalError("ReduceAxis kernel on half floats (dispatch computes them in float32)");
  }
}

template <typename T>
void cumulative_typed(const ops::CumulativeAttrs& at, const T* x, T* y) {
  const int64_t r = at.r, inner = at.inner;
  parallel_chunks(at.outer * inner, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const int64_t base = (o / inner) * r * inner + o % inner;
      T acc = at.prod ? T(1) : T(0);
      for (int64_t step = 0; step < r; ++step) {
        const int64_t k = at.reverse ? r - 1 - step : step;
        const T v = x[base + k * inner];
        if (!at.exclusive) acc = at.prod ? acc * v : acc + v;
        y[base + k * inner] = acc;
        if (at.exclusive) acc = at.prod ? acc * v : acc + v;
      }
    }
  }, std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(r, 1)));
}

void cumulative_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::CumulativeAttrs>();
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  switch (x.dtype()) {
    case DType::float32: return cumulative_typed(at, x.data<float>(), y.data<float>());
    case DType::float64: return cumulative_typed(at, x.data<double>(), y.data<double>());
    case DType::int32: return cumulative_typed(at, x.data<int32_t>(), y.data<int32_t>());
    case DType::int64: return cumulative_typed(at, x.data<int64_t>(), y.data<int64_t>());
    case DType::bool_:
    case DType::float16:
    case DType::bfloat16: throw InternalError("Cumulative kernel on bool or half floats (cast or computed in float32 first)");
  }
}

// The k first of each row in the order (value, then index): larger first (or smaller), NaN above everything (as
// TensorFlow's top_k), ties by the lower index.
template <typename T>
void top_k_typed(const ops::TopKAttrs& at, const T* x, T* values, int32_t* indices) {
  parallel_chunks(at.rows, [&](int64_t begin, int64_t end) {
    std::vector<int32_t> order(static_cast<std::size_t>(at.r));
    for (int64_t row = begin; row < end; ++row) {
      const T* p = x + row * at.r;
      std::iota(order.begin(), order.end(), 0);
      auto before = [&](int32_t i, int32_t j) {
        const T a = p[i], b = p[j];
        const bool na = a != a, nb = b != b;
        if (na || nb) return na && !nb ? at.largest : (!na && nb ? !at.largest : i < j);
        if (a != b) return at.largest ? a > b : a < b;
        return i < j;
      };
      std::partial_sort(order.begin(), order.begin() + at.k, order.end(), before);
      for (int64_t j = 0; j < at.k; ++j) {
        values[row * at.k + j] = p[order[static_cast<std::size_t>(j)]];
        indices[row * at.k + j] = order[static_cast<std::size_t>(j)];
      }
    }
  }, std::max<int64_t>(1, 4096 / std::max<int64_t>(at.r, 1)));
}

void top_k_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::TopKAttrs>();
  const Tensor& x = ctx.inputs[0];
  int32_t* idx = ctx.outputs[1].data<int32_t>();
  switch (x.dtype()) {
    case DType::float32: return top_k_typed(at, x.data<float>(), ctx.outputs[0].data<float>(), idx);
    case DType::float64: return top_k_typed(at, x.data<double>(), ctx.outputs[0].data<double>(), idx);
    case DType::int32: return top_k_typed(at, x.data<int32_t>(), ctx.outputs[0].data<int32_t>(), idx);
    case DType::int64: return top_k_typed(at, x.data<int64_t>(), ctx.outputs[0].data<int64_t>(), idx);
    case DType::bool_:
    case DType::float16:
    case DType::bfloat16: throw InternalError("TopK kernel on bool or half floats (refused or computed in float32 first)");
  }
}

}  // namespace

void register_toolkit_kernels() {
  ops::register_kernel(ops::OpId::BroadcastTo, DeviceType::CPU, broadcast_to_kernel, ops::kAnyHalf);
  ops::register_kernel(ops::OpId::Compare, DeviceType::CPU, compare_kernel);
  ops::register_kernel(ops::OpId::Select, DeviceType::CPU, select_kernel, ops::kAnyHalf);
  ops::register_kernel(ops::OpId::ReduceAxis, DeviceType::CPU, reduce_axis_kernel);
  ops::register_kernel(ops::OpId::Cumulative, DeviceType::CPU, cumulative_kernel);
  ops::register_kernel(ops::OpId::TopK, DeviceType::CPU, top_k_kernel);
  ops::register_kernel(ops::OpId::IntegerBinary, DeviceType::CPU, integer_binary_kernel);
}

}  // namespace osprey::cpu
