// bfloat16 products on the CPU: oneDNN's matmul with bfloat16 operands and result, accumulated in float32 (the
// AVX-512 BF16 dot-product instructions where the CPU has them), as TensorFlow's bfloat16 MatMul on oneDNN.
// Transposed operands are strided views (no copies); primitives are created once per shape and thread.
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "osprey/errors.h"

namespace osprey::cpu {

namespace {

using dt = dnnl::memory::data_type;

struct Bf16Matmul {
  dnnl::matmul prim;
  dnnl::memory a, b, c;
};

// A (batch, rows, cols) operand stored row-major, read transposed or not.
dnnl::memory::desc operand(int64_t batch, int64_t rows, int64_t cols, bool transposed) {
  const dnnl::memory::dims d{batch, rows, cols};
  const dnnl::memory::dims s = transposed ? dnnl::memory::dims{rows * cols, 1, rows}
                                          : dnnl::memory::dims{rows * cols, cols, 1};
  return dnnl::memory::desc(d, dt::bf16, s);
}

Bf16Matmul& primitive(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k) {
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t>;
  thread_local std::map<Key, Bf16Matmul> cache;
  const Key key{ta, tb, batch, m, n, k};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto a = operand(batch, m, k, ta), b = operand(batch, k, n, tb), c = operand(batch, m, n, false);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), dnnl_engine());
  Bf16Matmul p{dnnl::matmul(pd), dnnl::memory(a, dnnl_engine(), nullptr), dnnl::memory(b, dnnl_engine(), nullptr),
               dnnl::memory(c, dnnl_engine(), nullptr)};
  return cache.emplace(key, std::move(p)).first->second;
}

}  // namespace

void matmul_bf16(const ops::KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const auto& attrs = ctx.attr<ops::MatMulAttrs>();
  const auto& out = y.shape();
  const int o = out.rank() - 2;
  const int64_t batch = o ? out[0] : 1, m = out[o], n = out[o + 1];
  const int64_t k = attrs.transpose_a ? a.shape()[o] : a.shape()[o + 1];
  if (m == 0 || n == 0 || batch == 0) return;
  if (k == 0) {  // oneDNN rejects empty reductions: the product is zero
    std::fill_n(static_cast<uint16_t*>(y.raw_data()), y.num_elements(), uint16_t{0});
    return;
  }
  try {
    Bf16Matmul& p = primitive(attrs.transpose_a, attrs.transpose_b, batch, m, n, k);
    p.a.set_data_handle(a.raw_data());
    p.b.set_data_handle(b.raw_data());
    p.c.set_data_handle(y.raw_data());
    p.prim.execute(dnnl_stream(), {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}});
    dnnl_stream().wait();
  } catch (const dnnl::error& e) {
    throw InternalError(fmt::format("oneDNN bfloat16 matmul {}x{}x{} (batch {}) failed: {}", m, k, n, batch, e.what()));
  }
}

}  // namespace osprey::cpu
