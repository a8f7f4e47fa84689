// CPU kernels for the fused Dense op (oneDNN matmul + bias + eltwise post-op, primitives cached per shape),
// activations and their gradients.
#include <cmath>
#include <cstring>
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include <dnnl.hpp>
#include <omp.h>
#include <fmt/format.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vector_math.h"
#include "osprey/errors.h"

namespace osprey::cpu {

using ops::Activation;
using ops::KernelContext;
using runtime::DeviceType;

GemmThreadLimit::GemmThreadLimit(int64_t m, int64_t n, int64_t k) {
  if ((m * n * k < kSmallGemmMaxWork || runtime::in_pair_half()) && omp_get_max_threads() > 1) {
    saved_ = omp_get_max_threads();
    omp_set_num_threads(1);
  }
}
GemmThreadLimit::~GemmThreadLimit() {
  if (saved_ > 0) omp_set_num_threads(saved_);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c, float beta) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (beta == 0.0f) std::memset(c, 0, sizeof(float) * m * n);
    return;
  }
  if ((beta == 0.0f || beta == 1.0f) && own_gemm(ta, tb, m, n, k, a, b, c, nullptr, beta == 1.0f)) return;
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  GemmThreadLimit limit(m, n, k);
  auto status = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, n);
  if (status != dnnl_success) throw InternalError(fmt::format("oneDNN sgemm failed with status {}", int(status)));
}

static constexpr float kSeluAlpha = 1.6732632423543772848f, kSeluScale = 1.0507009873554804934f;

void apply_activation(Activation act, const float* z, float* y, int64_t n, int64_t cols) {
  switch (act) {
    case Activation::linear: if (y != z) std::memcpy(y, z, sizeof(float) * n); break;
    case Activation::relu: for (int64_t i = 0; i < n; ++i) y[i] = std::max(z[i], 0.f); break;
    case Activation::sigmoid: sigmoid_values(z, y, n); break;
    case Activation::tanh: tanh_values(z, y, n); break;
    case Activation::gelu:
      for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * z[i] * (1.f + std::erf(z[i] * 0.70710678118654752f));
      break;
    case Activation::elu: for (int64_t i = 0; i < n; ++i) y[i] = z[i] >= 0.f ? z[i] : std::expm1(z[i]); break;
    case Activation::selu:
      for (int64_t i = 0; i < n; ++i) y[i] = kSeluScale * (z[i] >= 0.f ? z[i] : kSeluAlpha * std::expm1(z[i]));
      break;
    case Activation::softplus:
      for (int64_t i = 0; i < n; ++i) y[i] = std::max(z[i], 0.f) + std::log1p(std::exp(-std::abs(z[i])));
      break;
    case Activation::softsign: for (int64_t i = 0; i < n; ++i) y[i] = z[i] / (1.f + std::abs(z[i])); break;
    case Activation::silu: for (int64_t i = 0; i < n; ++i) y[i] = z[i] / (1.f + std::exp(-z[i])); break;
    case Activation::leaky_relu: for (int64_t i = 0; i < n; ++i) y[i] = z[i] > 0.f ? z[i] : 0.2f * z[i]; break;
    case Activation::exponential: exp_values(z, y, n); break;
    case Activation::softmax:
      for (int64_t r = 0; r < n / cols; ++r) {
        const float* zr = z + r * cols;
        float* yr = y + r * cols;
        float mx = zr[0];
        for (int64_t c = 1; c < cols; ++c) mx = std::max(mx, zr[c]);
        float s = 0.f;
        for (int64_t c = 0; c < cols; ++c) s += (yr[c] = std::exp(zr[c] - mx));
        const float inv = 1.f / s;
        for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
      }
      break;
  }
}

// The oneDNN post-op for activations it implements exactly as Keras defines them; others run after the matmul.
bool post_op_for(Activation act, dnnl::algorithm& alg, float& alpha) {
  alpha = 0.f;
  switch (act) {
    case Activation::relu: alg = dnnl::algorithm::eltwise_relu; return true;
    case Activation::sigmoid: alg = dnnl::algorithm::eltwise_logistic; return true;
    case Activation::tanh: alg = dnnl::algorithm::eltwise_tanh; return true;
    case Activation::elu: alg = dnnl::algorithm::eltwise_elu; alpha = 1.f; return true;
    case Activation::exponential: alg = dnnl::algorithm::eltwise_exp; return true;
    default: return false;
  }
}

// One cached matmul primitive per (shape, bias, post-op), per thread (memory objects are re-pointed per call).
struct DensePrimitive {
  dnnl::matmul prim;
  dnnl::memory src, wei, bias, dst;
};

static DensePrimitive& dense_primitive(int64_t m, int64_t k, int64_t n, bool has_bias, bool fused, dnnl::algorithm alg,
                                       float alpha) {
  using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, int, float>;
  thread_local std::map<Key, DensePrimitive> cache;
  Key key{m, k, n, has_bias, fused, fused ? static_cast<int>(alg) : 0, alpha};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::memory::desc src_md({m, k}, dt::f32, tag::ab), wei_md({k, n}, dt::f32, tag::ab),
      bias_md({1, n}, dt::f32, tag::ab), dst_md({m, n}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  if (fused) {
    dnnl::post_ops po;
    po.append_eltwise(1.f, alg, alpha, 0.f);
    attr.set_post_ops(po);
  }
  auto desc = has_bias ? dnnl::matmul::desc(src_md, wei_md, bias_md, dst_md) : dnnl::matmul::desc(src_md, wei_md, dst_md);
  dnnl::matmul::primitive_desc pd(desc, attr, dnnl_engine());
  DensePrimitive p{dnnl::matmul(pd), dnnl::memory(src_md, dnnl_engine(), nullptr), dnnl::memory(wei_md, dnnl_engine(), nullptr),
                   dnnl::memory(bias_md, dnnl_engine(), nullptr), dnnl::memory(dst_md, dnnl_engine(), nullptr)};
  return cache.emplace(key, std::move(p)).first->second;
}

static void fused_matmul_kernel(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype() == DType::bfloat16) return dense_bf16(ctx);
  const auto& at = ctx.attr<ops::DenseAttrs>();
  const auto& x = ctx.inputs[0];
  const auto& w = ctx.inputs[1];
  auto& y = ctx.outputs[0];
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[1];
  if (m == 0 || n == 0) return;
  dnnl::algorithm alg{};
  float alpha = 0.f;
  const bool fused = !at.keep_preactivation && post_op_for(at.activation, alg, alpha);
  // With a kept pre-activation, the matmul writes z and the activation reads it.
  float* z = at.keep_preactivation ? ctx.outputs[1].data<float>() : y.data<float>();
  if (k == 0) {
    // oneDNN rejects empty reductions: the product is zero, plus the bias.
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) z[r * n + c] = at.has_bias ? ctx.inputs[2].data<float>()[c] : 0.f;
    }
  } else if (const bool relu = fused && at.activation == Activation::relu;  // in the kernel's registers
             own_gemm(false, false, m, n, k, x.data<float>(), w.data<float>(), z,
                      at.has_bias ? ctx.inputs[2].data<float>() : nullptr, false, relu)) {
    if (fused && !relu) apply_activation(at.activation, z, z, m * n, n);
  } else {
    GemmThreadLimit limit(m, n, k);
    auto& p = dense_primitive(m, k, n, at.has_bias, fused, alg, alpha);
    p.src.set_data_handle(x.raw_data());
    p.wei.set_data_handle(w.raw_data());
    p.dst.set_data_handle(z);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, p.src}, {DNNL_ARG_WEIGHTS, p.wei}, {DNNL_ARG_DST, p.dst}};
    if (at.has_bias) {
      p.bias.set_data_handle(ctx.inputs[2].raw_data());
      args.emplace(DNNL_ARG_BIAS, p.bias);
    }
    p.prim.execute(dnnl_stream(), args);
    dnnl_stream().wait();
  }
  if (!fused && at.activation != Activation::linear) apply_activation(at.activation, z, y.data<float>(), m * n, n);
  if (k == 0 && fused) apply_activation(at.activation, z, z, m * n, n);
}

static void float_activation_kernel(const KernelContext& ctx) {
  const auto& x = ctx.inputs[0];
  const Tensor xf = x.dtype() == DType::float32 ? x : x.cast(DType::float32);
  const int64_t cols = std::max<int64_t>(x.shape().rank() ? x.shape()[-1] : 1, 1);
  const Activation act = ctx.attr<ops::ActivationAttrs>().activation;
  if (act == Activation::softmax) {  // whole rows
    return apply_activation(act, xf.data<float>(), ctx.outputs[0].data<float>(), x.num_elements(), cols);
  }
  activation_values(act, xf, ctx.outputs[0]);
}

// dz = act'(dy) over n values (softmax: rows of `cols`), from the output y and, where needed, the input z.
OSPREY_VECTOR_CLONES static void activation_grad_values(Activation act, const float* __restrict dy,
                                                        const float* __restrict y, const float* __restrict z,
                                                        float* __restrict dz, int64_t n, int64_t cols) {
  // Loads first, then a select: GCC vectorises that form (a conditional load, or a multiply by a bool, stays
  // a branch per element, which mispredicts on random signs: it was a fifth of the seed model's step).
  switch (act) {
    case Activation::linear: std::memcpy(dz, dy, sizeof(float) * n); break;
    case Activation::relu:
      for (int64_t i = 0; i < n; ++i) {
        const float g = dy[i];
        dz[i] = y[i] > 0.f ? g : 0.f;
      }
      break;
    case Activation::sigmoid: for (int64_t i = 0; i < n; ++i) dz[i] = dy[i] * y[i] * (1.f - y[i]); break;
    case Activation::tanh: for (int64_t i = 0; i < n; ++i) dz[i] = dy[i] * (1.f - y[i] * y[i]); break;
    case Activation::elu:
      for (int64_t i = 0; i < n; ++i) {
        const float g = dy[i], v = y[i];
        dz[i] = v > 0.f ? g : g * (v + 1.f);
      }
      break;
    case Activation::selu:
      for (int64_t i = 0; i < n; ++i) dz[i] = dy[i] * (y[i] > 0.f ? kSeluScale : y[i] + kSeluScale * kSeluAlpha);
      break;
    case Activation::leaky_relu:
      for (int64_t i = 0; i < n; ++i) {
        const float g = dy[i];
        dz[i] = y[i] > 0.f ? g : 0.2f * g;
      }
      break;
    case Activation::exponential: for (int64_t i = 0; i < n; ++i) dz[i] = dy[i] * y[i]; break;
    case Activation::gelu:
      for (int64_t i = 0; i < n; ++i) {
        const float cdf = 0.5f * (1.f + std::erf(z[i] * 0.70710678118654752f));
        const float pdf = 0.39894228040143268f * std::exp(-0.5f * z[i] * z[i]);
        dz[i] = dy[i] * (cdf + z[i] * pdf);
      }
      break;
    case Activation::softplus: for (int64_t i = 0; i < n; ++i) dz[i] = dy[i] / (1.f + std::exp(-z[i])); break;
    case Activation::softsign:
      for (int64_t i = 0; i < n; ++i) {
        const float d = 1.f + std::abs(z[i]);
        dz[i] = dy[i] / (d * d);
      }
      break;
    case Activation::silu:
      for (int64_t i = 0; i < n; ++i) {
        const float s = 1.f / (1.f + std::exp(-z[i]));
        dz[i] = dy[i] * s * (1.f + z[i] * (1.f - s));
      }
      break;
    case Activation::softmax: {
      for (int64_t r = 0; r < n / cols; ++r) {
        const float* yr = y + r * cols;
        const float* gr = dy + r * cols;
        float dot = 0.f;
        for (int64_t c = 0; c < cols; ++c) dot += gr[c] * yr[c];
        for (int64_t c = 0; c < cols; ++c) dz[r * cols + c] = yr[c] * (gr[c] - dot);
      }
      break;
    }
  }
}

static void activation_grad_range(const KernelContext& ctx, int64_t begin, int64_t end) {
  const float* z = ctx.inputs[2].defined() ? ctx.inputs[2].data<float>() + begin : nullptr;
  activation_grad_values(ctx.attr<ops::ActivationAttrs>().activation, ctx.inputs[0].data<float>() + begin,
                         ctx.inputs[1].data<float>() + begin, z, ctx.outputs[0].data<float>() + begin, end - begin,
                         ctx.outputs[0].shape()[-1]);
}

// bfloat16 tensors through the float32 code a block at a time (converted in and out within the cache): no float32
// copies of the tensors. Softmax needs whole rows: the kernels below convert its whole tensor instead.
constexpr int64_t kHalfBlock = 2048;
template <typename F>
void bf16_blocks(int64_t n, F&& f) {
  parallel_chunks(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i += kHalfBlock) f(i, std::min(kHalfBlock, e - i));
  });
}

static const uint16_t* bits(const Tensor& t) { return static_cast<const uint16_t*>(t.raw_data()); }

void activation_values(Activation act, const Tensor& x, Tensor& y) {
  if (x.dtype() == DType::bfloat16) {
    const uint16_t* in = bits(x);  // once, not per block
    auto* out = static_cast<uint16_t*>(y.raw_data());
    return bf16_blocks(x.num_elements(), [&](int64_t i, int64_t len) {
      float v[kHalfBlock];
      bf16_to_floats(in + i, v, len);
      apply_activation(act, v, v, len, len);
      floats_to_bf16(v, out + i, len);
    });
  }
  // Split between the threads (a convolution's relu is millions of values).
  const float* in = x.data<float>();
  float* out = y.data<float>();
  parallel_chunks(x.num_elements(), [&](int64_t b, int64_t e) { apply_activation(act, in + b, out + b, e - b, e - b); });
}

// Element-wise (softmax: whole rows), split between the intra-op threads for large tensors.
void activation_grad_kernel(const KernelContext& ctx) {
  const int64_t n = ctx.outputs[0].num_elements();
  const Activation act = ctx.attr<ops::ActivationAttrs>().activation;
  if (ctx.inputs[0].dtype() == DType::bfloat16 && act == Activation::softmax) {  // whole rows: float32 copies
    const int64_t cols = ctx.outputs[0].shape()[-1];
    std::vector<float> dy(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
    bf16_to_floats(bits(ctx.inputs[0]), dy.data(), n);
    bf16_to_floats(bits(ctx.inputs[1]), y.data(), n);
    std::vector<float> dz(static_cast<std::size_t>(n));
    activation_grad_values(act, dy.data(), y.data(), nullptr, dz.data(), n, cols);
    return floats_to_bf16(dz.data(), static_cast<uint16_t*>(ctx.outputs[0].raw_data()), n);
  }
  if (ctx.inputs[0].dtype() == DType::bfloat16) {
    // The pointers taken once, not per block.
    const uint16_t* dy_bits = bits(ctx.inputs[0]);
    const uint16_t* y_bits = bits(ctx.inputs[1]);
    const uint16_t* z_bits = ctx.inputs[2].defined() ? bits(ctx.inputs[2]) : nullptr;
    const bool with_z = z_bits != nullptr;
    auto* dz = static_cast<uint16_t*>(ctx.outputs[0].raw_data());
    return bf16_blocks(n, [&](int64_t i, int64_t len) {
      float dy[kHalfBlock], y[kHalfBlock], z[kHalfBlock], out[kHalfBlock];
      bf16_to_floats(dy_bits + i, dy, len);
      bf16_to_floats(y_bits + i, y, len);
      if (with_z) bf16_to_floats(z_bits + i, z, len);
      activation_grad_values(act, dy, y, with_z ? z : nullptr, out, len, len);
      floats_to_bf16(out, dz + i, len);
    });
  }
  if (act == Activation::softmax) return activation_grad_range(ctx, 0, n);
  parallel_chunks(n, [&](int64_t b, int64_t e) { activation_grad_range(ctx, b, e); });
}

static void activation_kernel(const KernelContext& ctx) {
  const Activation act = ctx.attr<ops::ActivationAttrs>().activation;
  if (ctx.inputs[0].dtype() != DType::bfloat16) return float_activation_kernel(ctx);
  auto* y = static_cast<uint16_t*>(ctx.outputs[0].raw_data());
  if (act == Activation::softmax) {  // whole rows: a float32 copy
    const auto& shape = ctx.inputs[0].shape();
    const int64_t n = ctx.inputs[0].num_elements(), cols = std::max<int64_t>(shape.rank() ? shape[-1] : 1, 1);
    std::vector<float> v(static_cast<std::size_t>(n));
    bf16_to_floats(bits(ctx.inputs[0]), v.data(), n);
    apply_activation(act, v.data(), v.data(), n, cols);
    return floats_to_bf16(v.data(), y, n);
  }
  activation_values(act, ctx.inputs[0], ctx.outputs[0]);
}

// out[c] = Σ_r m[r, cb + c] for c < w, summed over the rows in order.
OSPREY_VECTOR_CLONES static void column_sums(const float* __restrict m, int64_t rows, int64_t cols, int64_t cb, int64_t w,
                                             float* __restrict out) {
  std::memset(out, 0, sizeof(float) * w);
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict row = m + r * cols + cb;
    for (int64_t c = 0; c < w; ++c) out[c] += row[c];
  }
}

static void bias_add_grad_kernel(const KernelContext& ctx) {
  const auto& dz = ctx.inputs[0];
  const int64_t rows = dz.shape()[0], cols = dz.shape()[1];
  const float* p = dz.data<float>();
  float* db = ctx.outputs[0].data<float>();
  // Column blocks per thread when large; each column is summed over the rows in order either way.
  const int64_t grain = std::max<int64_t>(16, (int64_t{1} << 14) / std::max<int64_t>(rows, 1));
  parallel_chunks(cols, [&](int64_t cb, int64_t ce) { column_sums(p, rows, cols, cb, ce - cb, db + cb); }, grain);
}

// A Dense layer's backward in one launch: dz = act'(dy) (into outputs[3]; dy itself when linear), db = Σ_rows dz,
// dW = xᵀ·dz, dx = dz·wᵀ — the ActivationGrad, BiasAddGrad and MatMul kernels, called in turn.
static void dense_grad_kernel(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype() == DType::bfloat16) return dense_grad_bf16(ctx);
  const auto& at = ctx.attr<ops::DenseGradAttrs>();
  const Tensor& dy = ctx.inputs[0];
  const Tensor& x = ctx.inputs[3];
  const Tensor& w = ctx.inputs[4];
  Tensor dz = dy;
  if (at.activation != Activation::linear) {
    dz = ctx.outputs[3];
    const ops::ActivationAttrs act{at.activation};
    activation_grad_kernel(KernelContext{ctx.inputs.subspan(0, 3), ctx.outputs.subspan(3, 1), &act, ctx.device});
  }
  if (at.has_bias) {
    bias_add_grad_kernel(KernelContext{std::span<const Tensor>(&dz, 1), ctx.outputs.subspan(2, 1), nullptr, ctx.device});
  }
  const int64_t rows = x.shape()[0], in = w.shape()[0], out = w.shape()[1];
  gemm(true, false, in, out, rows, x.data<float>(), dz.data<float>(), ctx.outputs[1].data<float>());
  if (at.need_dx) gemm(false, true, rows, in, out, dz.data<float>(), w.data<float>(), ctx.outputs[0].data<float>());
}

void register_nn_kernels() {
  ops::register_kernel(ops::OpId::FusedMatMul, DeviceType::CPU, fused_matmul_kernel, ops::kBFloat16);
  ops::register_kernel(ops::OpId::Activation, DeviceType::CPU, activation_kernel, ops::kBFloat16);
  ops::register_kernel(ops::OpId::ActivationGrad, DeviceType::CPU, activation_grad_kernel, ops::kBFloat16);
  ops::register_kernel(ops::OpId::BiasAddGrad, DeviceType::CPU, bias_add_grad_kernel);
  ops::register_kernel(ops::OpId::DenseGrad, DeviceType::CPU, dense_grad_kernel, ops::kBFloat16);
}

}  // namespace osprey::cpu
