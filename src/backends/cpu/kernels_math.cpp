// CPU kernels for casts, element-wise arithmetic, reductions and gathers.
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <dnnl.h>
#include <omp.h>

#include <fmt/format.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/strided.h"
#include "core/half.h"
#include "core/row_copy.h"
#include "runtime/pair_runner.h"
#include "osprey/errors.h"

namespace osprey::cpu {

using ops::KernelContext;
using runtime::DeviceType;

template <typename From, typename To>
static void convert(const void* src, void* dst, int64_t n) {
  const From* s = static_cast<const From*>(src);
  To* d = static_cast<To*>(dst);
  if constexpr (std::is_same_v<To, bool>) {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i] != From(0);  // NaN is true, as in NumPy
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<To>(s[i]);
  }
}

template <typename From>
static void convert_from(DType to, const void* src, void* dst, int64_t n) {
  switch (to) {
    case DType::float32: return convert<From, float>(src, dst, n);
    case DType::float64: return convert<From, double>(src, dst, n);
    case DType::int32: return convert<From, int32_t>(src, dst, n);
    case DType::int64: return convert<From, int64_t>(src, dst, n);
    case DType::bool_: return convert<From, bool>(src, dst, n);
    case DType::float16:
    case DType::bfloat16: return;  // cast_half
  }
}

// Casts from or to float16/bfloat16 go through float (rounding to nearest even into the half types).
static float half_bits_to_float(bool bf, uint16_t v) { return bf ? bf16_to_float(v) : half_to_float(v); }

template <typename To>
static void from_half(bool bf, const uint16_t* s, To* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float f = half_bits_to_float(bf, s[i]);
    if constexpr (std::is_same_v<To, bool>) d[i] = f != 0.f;
    else d[i] = static_cast<To>(f);
  }
}

template <typename From>
static void to_half(bool bf, const From* s, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(s[i]);
    d[i] = bf ? float_to_bf16(f) : float_to_half(f);
  }
}

// float32 <-> bfloat16, the casts of every mixed-precision step (its weights in, its gradients out): branch-free
// loops the compiler vectorises (AVX2 clone), split between the intra-op threads. The same bits as float_to_bf16.
OSPREY_VECTOR_CLONES void floats_to_bf16(const float* s, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, s + i, 4);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet = (u >> 16) | 0x40u;
    d[i] = static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
  }
}

OSPREY_VECTOR_CLONES void bf16_to_floats(const uint16_t* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(s[i]) << 16;
    std::memcpy(d + i, &u, 4);
  }
}

static void cast_half(DType from, DType to, const void* src, void* dst, int64_t n) {
  if (from == DType::float32 && to == DType::bfloat16) {
    return parallel_chunks(n, [&](int64_t b, int64_t e) {
      floats_to_bf16(static_cast<const float*>(src) + b, static_cast<uint16_t*>(dst) + b, e - b);
    });
  }
  if (from == DType::bfloat16 && to == DType::float32) {
    return parallel_chunks(n, [&](int64_t b, int64_t e) {
      bf16_to_floats(static_cast<const uint16_t*>(src) + b, static_cast<float*>(dst) + b, e - b);
    });
  }
  if (is_half(from)) {
    const bool bf = from == DType::bfloat16;
    const auto* s = static_cast<const uint16_t*>(src);
    switch (to) {
      case DType::float32: return from_half(bf, s, static_cast<float*>(dst), n);
      case DType::float64: return from_half(bf, s, static_cast<double*>(dst), n);
      case DType::int32: return from_half(bf, s, static_cast<int32_t*>(dst), n);
      case DType::int64: return from_half(bf, s, static_cast<int64_t*>(dst), n);
      case DType::bool_: return from_half(bf, s, static_cast<bool*>(dst), n);
      case DType::float16:
      case DType::bfloat16: {
        auto* d = static_cast<uint16_t*>(dst);
        for (int64_t i = 0; i < n; ++i) {
          const float f = half_bits_to_float(bf, s[i]);
          d[i] = to == DType::bfloat16 ? float_to_bf16(f) : float_to_half(f);
        }
        return;
      }
    }
  }
  const bool bf = to == DType::bfloat16;
  auto* d = static_cast<uint16_t*>(dst);
  switch (from) {
    case DType::float32: return to_half(bf, static_cast<const float*>(src), d, n);
    case DType::float64: return to_half(bf, static_cast<const double*>(src), d, n);
    case DType::int32: return to_half(bf, static_cast<const int32_t*>(src), d, n);
    case DType::int64: return to_half(bf, static_cast<const int64_t*>(src), d, n);
    case DType::bool_: return to_half(bf, static_cast<const bool*>(src), d, n);
    case DType::float16:
    case DType::bfloat16: return;  // handled above
  }
}

static void cast_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const DType to = ctx.attr<ops::CastAttrs>().to;
  const int64_t n = x.num_elements();
  void* dst = ctx.outputs[0].raw_data();
  if (is_half(x.dtype()) || is_half(to)) return cast_half(x.dtype(), to, x.raw_data(), dst, n);
  switch (x.dtype()) {
    case DType::float32: return convert_from<float>(to, x.raw_data(), dst, n);
    case DType::float64: return convert_from<double>(to, x.raw_data(), dst, n);
    case DType::int32: return convert_from<int32_t>(to, x.raw_data(), dst, n);
    case DType::int64: return convert_from<int64_t>(to, x.raw_data(), dst, n);
    case DType::bool_: return convert_from<bool>(to, x.raw_data(), dst, n);
    case DType::float16:
    case DType::bfloat16: return;  // cast_half
  }
}

static void matmul_kernel(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype() == DType::bfloat16) return matmul_bf16(ctx);
  const auto& a = ctx.inputs[0];
  const auto& b = ctx.inputs[1];
  const auto& attrs = ctx.attr<ops::MatMulAttrs>();
  const auto& out = ctx.outputs[0].shape();
  const int o = out.rank() - 2;  // 1 for a batched product
  const int64_t batch = o ? out[0] : 1, m = out[o], n = out[o + 1];
  const int64_t k = attrs.transpose_a ? a.shape()[o] : a.shape()[o + 1];
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* pc = ctx.outputs[0].data<float>();
  const int threads = batch > 1 && !runtime::in_pair_half() ? omp_get_max_threads() : 1;
  if (threads > 1 && batch >= 2 * threads && m > 0 && n > 0 && k > 0) {
    // Many products (attention's, one per batch row and head): the threads share out whole products, each on one
    // thread (Osprey's kernel for the small ones, else oneDNN's sgemm, sequential inside a parallel region), in
    // one OpenMP region instead of one region and a split of every product. The Transformer benchmark's step:
    // 132-134 ms against 139-143 ms splitting each product (three interleaved rounds; Osprey's AVX2 kernel on
    // each thread was no faster than the split).
    std::atomic<int> failed{dnnl_success};  // no exception may leave the parallel region
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < batch; ++i) {
      const float *ai = pa + i * m * k, *bi = pb + i * k * n;
      float* ci = pc + i * m * n;
      if (small_gemm_applies(m, n, k)) {
        small_gemm_on_this_thread(attrs.transpose_a, attrs.transpose_b, m, n, k, ai, bi, ci);
        continue;
      }
      const auto status = dnnl_sgemm(attrs.transpose_a ? 'T' : 'N', attrs.transpose_b ? 'T' : 'N', m, n, k, 1.0f, ai,
                                     attrs.transpose_a ? m : k, bi, attrs.transpose_b ? k : n, 0.0f, ci, n);
      if (status != dnnl_success) failed = static_cast<int>(status);
    }
    if (failed != dnnl_success) throw InternalError(fmt::format("oneDNN sgemm failed with status {}", failed.load()));
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    gemm(attrs.transpose_a, attrs.transpose_b, m, n, k, pa + i * m * k, pb + i * k * n, pc + i * m * n);
  }
}

template <typename T>
static void unary_typed(ops::UnaryKind kind, const T* x, T* y, int64_t n) {
  switch (kind) {
    case ops::UnaryKind::neg: for (int64_t i = 0; i < n; ++i) y[i] = -x[i]; break;
    case ops::UnaryKind::exp: for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]); break;
    case ops::UnaryKind::log: for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]); break;
    case ops::UnaryKind::sqrt: for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]); break;
    case ops::UnaryKind::square: for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i]; break;
    case ops::UnaryKind::abs: for (int64_t i = 0; i < n; ++i) y[i] = std::abs(x[i]); break;
    case ops::UnaryKind::sin: for (int64_t i = 0; i < n; ++i) y[i] = std::sin(x[i]); break;
    case ops::UnaryKind::cos: for (int64_t i = 0; i < n; ++i) y[i] = std::cos(x[i]); break;
    case ops::UnaryKind::tan: for (int64_t i = 0; i < n; ++i) y[i] = std::tan(x[i]); break;
    case ops::UnaryKind::asin: for (int64_t i = 0; i < n; ++i) y[i] = std::asin(x[i]); break;
    case ops::UnaryKind::acos: for (int64_t i = 0; i < n; ++i) y[i] = std::acos(x[i]); break;
    case ops::UnaryKind::atan: for (int64_t i = 0; i < n; ++i) y[i] = std::atan(x[i]); break;
    case ops::UnaryKind::sinh: for (int64_t i = 0; i < n; ++i) y[i] = std::sinh(x[i]); break;
    case ops::UnaryKind::cosh: for (int64_t i = 0; i < n; ++i) y[i] = std::cosh(x[i]); break;
    case ops::UnaryKind::asinh: for (int64_t i = 0; i < n; ++i) y[i] = std::asinh(x[i]); break;
    case ops::UnaryKind::acosh: for (int64_t i = 0; i < n; ++i) y[i] = std::acosh(x[i]); break;
    case ops::UnaryKind::atanh: for (int64_t i = 0; i < n; ++i) y[i] = std::atanh(x[i]); break;
    case ops::UnaryKind::floor: for (int64_t i = 0; i < n; ++i) y[i] = std::floor(x[i]); break;
    case ops::UnaryKind::ceil: for (int64_t i = 0; i < n; ++i) y[i] = std::ceil(x[i]); break;
    case ops::UnaryKind::round: for (int64_t i = 0; i < n; ++i) y[i] = std::nearbyint(x[i]); break;  // the default rounding mode: halves to even
    case ops::UnaryKind::log1p: for (int64_t i = 0; i < n; ++i) y[i] = std::log1p(x[i]); break;
    case ops::UnaryKind::expm1: for (int64_t i = 0; i < n; ++i) y[i] = std::expm1(x[i]); break;
    case ops::UnaryKind::erf: for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]); break;
  }
}

static void unary_kernel(const KernelContext& ctx) {
  const auto& x = ctx.inputs[0];
  const auto kind = ctx.attr<ops::UnaryAttrs>().kind;
  if (x.dtype() == DType::float64) {
    return unary_typed(kind, x.data<double>(), ctx.outputs[0].data<double>(), x.num_elements());
  }
  unary_typed(kind, x.data<float>(), ctx.outputs[0].data<float>(), x.num_elements());
}

template <typename T>
static inline T binary_op(ops::BinaryKind k, T a, T b) {
  switch (k) {
    case ops::BinaryKind::add: return a + b;
    case ops::BinaryKind::sub: return a - b;
    case ops::BinaryKind::mul: return a * b;
    case ops::BinaryKind::div: return a / b;
    case ops::BinaryKind::maximum: return a > b ? a : b;
    case ops::BinaryKind::greater_equal: return a >= b ? T(1) : T(0);
    case ops::BinaryKind::minimum: return a < b ? a : b;
    case ops::BinaryKind::pow: return static_cast<T>(std::pow(a, b));
    case ops::BinaryKind::nextafter:
      if constexpr (std::is_floating_point_v<T>) return std::nextafter(a, b);
      return a;  // (integers are refused before the kernel)
  }
  return T(0);
}

// NumPy broadcasting: the innermost rows of the geometry, split between threads; the common inner strides (1 and
// 0) as their own loops so that they vectorise.
template <typename T, ops::BinaryKind K>
static void binary_general(const ops::StridedGeometry& g, const T* a, const T* b, T* y) {
  const int64_t rows = strided_rows(g), inner = g.dims[g.rank - 1];
  const int64_t sa = g.strides[0][g.rank - 1], sb = g.strides[1][g.rank - 1];
  parallel_chunks(rows, [&](int64_t begin, int64_t end) {
    for_strided_rows<2>(g, begin, end, [&](int64_t row, const int64_t* off) {
      const T* pa = a + off[0];
      const T* pb = b + off[1];
      T* py = y + row * inner;
      if (sa == 1 && sb == 1) {
        for (int64_t j = 0; j < inner; ++j) py[j] = binary_op(K, pa[j], pb[j]);
      } else if (sa == 1 && sb == 0) {
        const T v = pb[0];
        for (int64_t j = 0; j < inner; ++j) py[j] = binary_op(K, pa[j], v);
      } else if (sa == 0 && sb == 1) {
        const T v = pa[0];
        for (int64_t j = 0; j < inner; ++j) py[j] = binary_op(K, v, pb[j]);
      } else {
        for (int64_t j = 0; j < inner; ++j) py[j] = binary_op(K, pa[j * sa], pb[j * sb]);
      }
    });
  }, std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(inner, 1)));
}

template <typename T, ops::BinaryKind K>
static void binary_loop(const ops::BinaryAttrs& at, const T* a, const T* b, T* y, int64_t n, int64_t cols) {
  switch (at.broadcast) {
    case ops::Broadcast::general: return binary_general<T, K>(at.geometry, a, b, y);
    case ops::Broadcast::same: for (int64_t i = 0; i < n; ++i) y[i] = binary_op(K, a[i], b[i]); break;
    case ops::Broadcast::scalar_b: {
      const T s = b[0];
      for (int64_t i = 0; i < n; ++i) y[i] = binary_op(K, a[i], s);
      break;
    }
    case ops::Broadcast::scalar_a: {
      const T s = a[0];
      for (int64_t i = 0; i < n; ++i) y[i] = binary_op(K, s, b[i]);
      break;
    }
    case ops::Broadcast::row_b:
      for (int64_t r = 0; r < n / cols; ++r) {
        for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = binary_op(K, a[r * cols + c], b[c]);
      }
      break;
  }
}

template <typename T>
static void binary_typed(const ops::BinaryAttrs& at, const T* a, const T* b, T* y, int64_t n, int64_t cols) {
  switch (at.kind) {
    case ops::BinaryKind::add: return binary_loop<T, ops::BinaryKind::add>(at, a, b, y, n, cols);
    case ops::BinaryKind::sub: return binary_loop<T, ops::BinaryKind::sub>(at, a, b, y, n, cols);
    case ops::BinaryKind::mul: return binary_loop<T, ops::BinaryKind::mul>(at, a, b, y, n, cols);
    case ops::BinaryKind::div: return binary_loop<T, ops::BinaryKind::div>(at, a, b, y, n, cols);
    case ops::BinaryKind::maximum: return binary_loop<T, ops::BinaryKind::maximum>(at, a, b, y, n, cols);
    case ops::BinaryKind::greater_equal:
      return binary_loop<T, ops::BinaryKind::greater_equal>(at, a, b, y, n, cols);
    case ops::BinaryKind::minimum: return binary_loop<T, ops::BinaryKind::minimum>(at, a, b, y, n, cols);
    case ops::BinaryKind::pow: return binary_loop<T, ops::BinaryKind::pow>(at, a, b, y, n, cols);
    case ops::BinaryKind::nextafter: return binary_loop<T, ops::BinaryKind::nextafter>(at, a, b, y, n, cols);
  }
}

static void binary_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::BinaryAttrs>();
  const auto& a = ctx.inputs[0];
  const auto& b = ctx.inputs[1];
  auto& y = ctx.outputs[0];
  const int64_t n = y.num_elements();
  const int64_t cols = y.shape().rank() ? y.shape()[-1] : 1;
  switch (y.dtype()) {
    case DType::float32: return binary_typed(at, a.data<float>(), b.data<float>(), y.data<float>(), n, cols);
    case DType::float64: return binary_typed(at, a.data<double>(), b.data<double>(), y.data<double>(), n, cols);
    case DType::int32: return binary_typed(at, a.data<int32_t>(), b.data<int32_t>(), y.data<int32_t>(), n, cols);
    case DType::int64: return binary_typed(at, a.data<int64_t>(), b.data<int64_t>(), y.data<int64_t>(), n, cols);
    case DType::bool_:
    case DType::float16:
    case DType::bfloat16: throw InternalError("Binary kernel on bool or half tensors (refused, or computed in float32 by dispatch)");
  }
}

static void reduce_kernel(const KernelContext& ctx) {
  const auto& x = ctx.inputs[0];
  Tensor xf = x.dtype() == DType::float32 ? x : x.cast(DType::float32);
  const float* p = xf.data<float>();
  float* y = ctx.outputs[0].data<float>();
  const int64_t n = x.num_elements();
  switch (ctx.attr<ops::ReduceAttrs>().kind) {
    case ops::ReduceKind::sum_all:
    case ops::ReduceKind::mean_all: {
      double s = 0;  // accumulate in double: epoch-long sums stay exact to float precision
      for (int64_t i = 0; i < n; ++i) s += p[i];
      if (ctx.attr<ops::ReduceAttrs>().kind == ops::ReduceKind::mean_all && n > 0) s /= static_cast<double>(n);
      y[0] = static_cast<float>(s);
      break;
    }
    case ops::ReduceKind::sum_axis0: {
      const int64_t rows = x.shape()[0], cols = x.shape()[1];
      std::memset(y, 0, sizeof(float) * cols);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) y[c] += p[r * cols + c];
      }
      break;
    }
    case ops::ReduceKind::sum_axis1: {
      const int64_t rows = x.shape()[0], cols = x.shape()[1];
      for (int64_t r = 0; r < rows; ++r) {
        float s = 0;
        for (int64_t c = 0; c < cols; ++c) s += p[r * cols + c];
        y[r] = s;
      }
      break;
    }
  }
}

static void gather_rows_kernel(const KernelContext& ctx) {
  const auto& x = ctx.inputs[0];
  const auto& idx = ctx.inputs[1];
  const int64_t rows = x.shape()[0];
  const std::size_t row_bytes = static_cast<std::size_t>(rows ? x.nbytes() / rows : 0);
  const int64_t* ip = idx.data<int64_t>();
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(ctx.outputs[0].raw_data());
  const int64_t n = idx.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    if (ip[i] < 0 || ip[i] >= rows) throw ops::index_out_of_range(i, ip[i], rows);
  }
  gather_host_rows(dst, src, ip, n, row_bytes);
}

// Row indices[i] += updates[i], in order (deterministic); rows not named stay zero.
static void scatter_add_rows_kernel(const KernelContext& ctx) {
  const auto& upd = ctx.inputs[0];
  const auto& idx = ctx.inputs[1];
  Tensor& out = ctx.outputs[0];
  const int64_t rows = out.shape()[0], n = idx.num_elements();
  const int64_t cols = n ? upd.num_elements() / n : 0;
  const int64_t* ip = idx.data<int64_t>();
  const float* u = upd.data<float>();
  float* y = out.data<float>();
  std::fill(y, y + out.num_elements(), 0.f);
  for (int64_t i = 0; i < n; ++i) {
    if (ip[i] < 0 || ip[i] >= rows) throw ops::index_out_of_range(i, ip[i], rows);
    float* dst = y + ip[i] * cols;
    const float* src = u + i * cols;
    for (int64_t c = 0; c < cols; ++c) dst[c] += src[c];
  }
}

void register_math_kernels() {
  ops::register_kernel(ops::OpId::Cast, DeviceType::CPU, cast_kernel, ops::kAnyHalf);
  ops::register_kernel(ops::OpId::MatMul, DeviceType::CPU, matmul_kernel, ops::kBFloat16);
  ops::register_kernel(ops::OpId::Unary, DeviceType::CPU, unary_kernel);
  ops::register_kernel(ops::OpId::Binary, DeviceType::CPU, binary_kernel);
  ops::register_kernel(ops::OpId::Reduce, DeviceType::CPU, reduce_kernel);
  ops::register_kernel(ops::OpId::GatherRows, DeviceType::CPU, gather_rows_kernel, ops::kAnyHalf);
  ops::register_kernel(ops::OpId::ScatterAddRows, DeviceType::CPU, scatter_add_rows_kernel);
}

}  // namespace osprey::cpu
