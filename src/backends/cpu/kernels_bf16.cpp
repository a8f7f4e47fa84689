// bfloat16 products on the CPU: oneDNN's matmul with bfloat16 operands, accumulated in float32 (the AVX-512 BF16
// dot-product instructions where the CPU has them), as TensorFlow's bfloat16 MatMul on oneDNN. Transposed operands
// are strided views (no copies); primitives are created once per shape and thread.
// A Dense layer's forward (FusedMatMul) and backward (DenseGrad) of bfloat16 tensors run here too, without a
// float32 copy of their tensors: the bias and the activation are applied to the product's float32 result (oneDNN
// post-ops, or Osprey's float32 activations on a scratch row block) and rounded once; the backward's activation
// gradient (ActivationGrad's bfloat16 path) and input gradient are bfloat16, its kernel and bias gradients float32
// (summed in float32 and kept).
#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "osprey/errors.h"

namespace osprey::cpu {

namespace {

using dt = dnnl::memory::data_type;
using ops::Activation;

struct Bf16Matmul {
  dnnl::matmul prim;
  dnnl::memory a, b, bias, c;
};

// A (batch, rows, cols) operand stored row-major, read transposed or not.
dnnl::memory::desc operand(int64_t batch, int64_t rows, int64_t cols, bool transposed, dt type = dt::bf16) {
  const dnnl::memory::dims d{batch, rows, cols};
  const dnnl::memory::dims s = transposed ? dnnl::memory::dims{rows * cols, 1, rows}
                                          : dnnl::memory::dims{rows * cols, cols, 1};
  return dnnl::memory::desc(d, type, s);
}

// The product's primitive; with `bias` a bfloat16 row added to every row, with `alg` >= 0 that eltwise post-op,
// with `f32_out` a float32 result.
Bf16Matmul& primitive(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k, bool bias = false,
                      int alg = -1, float alpha = 0.f, bool f32_out = false) {
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, bool, int, float, bool>;
  thread_local std::map<Key, Bf16Matmul> cache;
  const Key key{ta, tb, batch, m, n, k, bias, alg, alpha, f32_out};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto a = operand(batch, m, k, ta), b = operand(batch, k, n, tb);
  const auto c = operand(batch, m, n, false, f32_out ? dt::f32 : dt::bf16), bias_md = operand(1, 1, n, false);
  dnnl::primitive_attr attr;
  if (alg >= 0) {
    dnnl::post_ops po;
    po.append_eltwise(1.f, static_cast<dnnl::algorithm>(alg), alpha, 0.f);
    attr.set_post_ops(po);
  }
  const auto desc = bias ? dnnl::matmul::desc(a, b, bias_md, c) : dnnl::matmul::desc(a, b, c);
  dnnl::matmul::primitive_desc pd(desc, attr, dnnl_engine());
  Bf16Matmul p{dnnl::matmul(pd), dnnl::memory(a, dnnl_engine(), nullptr), dnnl::memory(b, dnnl_engine(), nullptr),
               dnnl::memory(bias_md, dnnl_engine(), nullptr), dnnl::memory(c, dnnl_engine(), nullptr)};
  return cache.emplace(key, std::move(p)).first->second;
}

void execute(Bf16Matmul& p, const void* a, const void* b, const void* bias, void* c) {
  p.a.set_data_handle(const_cast<void*>(a));
  p.b.set_data_handle(const_cast<void*>(b));
  p.c.set_data_handle(c);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}};
  if (bias) {
    p.bias.set_data_handle(const_cast<void*>(bias));
    args.emplace(DNNL_ARG_BIAS, p.bias);
  }
  p.prim.execute(dnnl_stream(), args);
  dnnl_stream().wait();
}

float bf16_value(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A float32 scratch block of n values, kept per thread between steps.
float* scratch(int64_t n) {
  thread_local std::vector<float> block;
  if (block.size() < static_cast<std::size_t>(n)) block.resize(static_cast<std::size_t>(n));
  return block.data();
}

const uint16_t* bf16_of(const Tensor& t) { return static_cast<const uint16_t*>(t.raw_data()); }
uint16_t* bf16_of(Tensor& t) { return static_cast<uint16_t*>(t.raw_data()); }

void to_bf16(const float* s, uint16_t* d, int64_t n) {
  parallel_chunks(n, [&](int64_t b, int64_t e) { floats_to_bf16(s + b, d + b, e - b); });
}

}  // namespace

void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill_n(static_cast<uint16_t*>(c), m * n, uint16_t{0});
    return;
  }
  try {
    GemmThreadLimit limit(m, n, k);  // small products on one thread (fixed when the primitive is created)
    execute(primitive(ta, tb, 1, m, n, k), a, b, nullptr, c);
  } catch (const dnnl::error& e) {
    throw InternalError(fmt::format("oneDNN bfloat16 matmul {}x{}x{} failed: {}", m, k, n, e.what()));
  }
}

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
    GemmThreadLimit limit(batch * m, n, k);
    execute(primitive(attrs.transpose_a, attrs.transpose_b, batch, m, n, k), a.raw_data(), b.raw_data(), nullptr,
            y.raw_data());
  } catch (const dnnl::error& e) {
    throw InternalError(fmt::format("oneDNN bfloat16 matmul {}x{}x{} (batch {}) failed: {}", m, k, n, batch, e.what()));
  }
}

// y = act(x·w + b) (and z = x·w + b when kept): with an activation oneDNN has as a post-op, in one primitive with a
// bfloat16 result; otherwise the float32 result in a scratch block, Osprey's activation on it, then rounded.
void dense_bf16(const ops::KernelContext& ctx) {
  const auto& at = ctx.attr<ops::DenseAttrs>();
  const Tensor& x = ctx.inputs[0];
  const Tensor& w = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[1];
  if (m == 0 || n == 0) return;
  const void* bias = at.has_bias ? ctx.inputs[2].raw_data() : nullptr;
  dnnl::algorithm alg{};
  float alpha = 0.f;
  const bool linear = at.activation == Activation::linear;
  try {
    GemmThreadLimit limit(m, n, k);
    if (k > 0 && !at.keep_preactivation && (linear || post_op_for(at.activation, alg, alpha))) {
      execute(primitive(false, false, 1, m, n, k, bias != nullptr, linear ? -1 : static_cast<int>(alg), alpha),
              x.raw_data(), w.raw_data(), bias, y.raw_data());
      return;
    }
    float* z = scratch(m * n);
    if (k > 0) {
      execute(primitive(false, false, 1, m, n, k, bias != nullptr, -1, 0.f, true), x.raw_data(), w.raw_data(), bias, z);
    } else {  // oneDNN rejects empty reductions: the product is zero, plus the bias
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t c = 0; c < n; ++c) z[r * n + c] = bias ? bf16_value(static_cast<const uint16_t*>(bias)[c]) : 0.f;
      }
    }
    if (at.keep_preactivation) to_bf16(z, bf16_of(ctx.outputs[1]), m * n);
    if (!linear) apply_activation(at.activation, z, z, m * n, n);
    to_bf16(z, bf16_of(y), m * n);
  } catch (const dnnl::error& e) {
    throw InternalError(fmt::format("oneDNN bfloat16 dense {}x{}x{} failed: {}", m, k, n, e.what()));
  }
}

// dz = act'(dy) (outputs[3]) and dx = dz·wᵀ in bfloat16; db = Σ_rows dz and dW = xᵀ·dz in float32, unrounded (the
// Dense's variables are float32: the cast that read them passes a float32 gradient through).
void dense_grad_bf16(const ops::KernelContext& ctx) {
  const auto& at = ctx.attr<ops::DenseGradAttrs>();
  const Tensor& dy = ctx.inputs[0];
  const Tensor& x = ctx.inputs[3];
  const Tensor& w = ctx.inputs[4];
  const int64_t rows = x.shape()[0], in = w.shape()[0], out = w.shape()[1];
  const uint16_t* dz = bf16_of(dy);
  if (at.activation != Activation::linear) {  // ActivationGrad's own bfloat16 path, into outputs[3]
    const ops::ActivationAttrs act{at.activation};
    activation_grad_kernel(ops::KernelContext{ctx.inputs.subspan(0, 3), ctx.outputs.subspan(3, 1), &act, ctx.device});
    dz = bf16_of(ctx.outputs[3]);
  }
  if (at.has_bias) {  // column sums in float32, each column over the rows in order
    float* db = ctx.outputs[2].data<float>();
    parallel_chunks(
        out,
        [&](int64_t cb, int64_t ce) {
          std::vector<float> acc(static_cast<std::size_t>(ce - cb), 0.f);
          for (int64_t r = 0; r < rows; ++r) {
            const uint16_t* row = dz + r * out;
            for (int64_t c = cb; c < ce; ++c) acc[static_cast<std::size_t>(c - cb)] += bf16_value(row[c]);
          }
          std::copy(acc.begin(), acc.end(), db + cb);
        },
        std::max<int64_t>(16, (int64_t{1} << 14) / std::max<int64_t>(rows, 1)));
  }
  if (rows == 0) {
    std::fill_n(ctx.outputs[1].data<float>(), in * out, 0.f);
  } else if (in > 0 && out > 0) {
    try {
      GemmThreadLimit limit(in, out, rows);
      execute(primitive(true, false, 1, in, out, rows, false, -1, 0.f, true), x.raw_data(), dz, nullptr,
              ctx.outputs[1].raw_data());
    } catch (const dnnl::error& e) {
      throw InternalError(fmt::format("oneDNN bfloat16 kernel gradient {}x{}x{} failed: {}", in, rows, out, e.what()));
    }
  }
  if (at.need_dx) gemm_bf16(false, true, rows, in, out, dz, w.raw_data(), ctx.outputs[0].raw_data());
}

}  // namespace osprey::cpu
