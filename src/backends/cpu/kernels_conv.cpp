// CPU kernels for convolutions and pooling: oneDNN's convolution (forward, backward data, backward weights) and
// pooling primitives on channels-last activations (nwc / nhwc / ndhwc) and Keras's kernel layout ((d)(h)wio, or
// (d)(h)wigo with groups). The weights go into the layout the primitive prefers (a reorder per call; they are small
// next to the activations); primitives are created once per shape and thread and kept.
#include <cstring>
#include <map>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>
#include <fmt/format.h>
#include <omp.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "osprey/errors.h"

namespace osprey::cpu {

using ops::KernelContext;
using runtime::DeviceType;
using dims = dnnl::memory::dims;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

tag activation_tag(int rank) { return rank == 1 ? tag::nwc : rank == 2 ? tag::nhwc : tag::ndhwc; }
tag weight_tag(int rank, bool grouped) {
  if (grouped) return rank == 1 ? tag::wigo : rank == 2 ? tag::hwigo : tag::dhwigo;
  return rank == 1 ? tag::wio : rank == 2 ? tag::hwio : tag::dhwio;
}

// oneDNN's logical dims of a channels-last tensor (N, s..., C): {N, C, s...}.
dims logical(const Shape& s) {
  dims d{s[0], s[-1]};
  for (int i = 1; i + 1 < s.rank(); ++i) d.push_back(s[i]);
  return d;
}

// Keras's kernel (k..., I/G, O) as oneDNN's weights: {O, I, k...}, or {G, O/G, I/G, k...} with groups.
dims weight_dims(const Shape& k, int64_t groups) {
  dims d;
  if (groups > 1) d = {groups, k[-1] / groups, k[-2]};
  else d = {k[-1], k[-2]};
  for (int i = 0; i + 2 < k.rank(); ++i) d.push_back(k[i]);
  return d;
}

struct Geometry {
  dims strides, dilates, pad_l, pad_r;
};
Geometry geometry(const ops::ConvAttrs& a) {
  Geometry g;
  for (int i = 0; i < a.rank; ++i) {
    g.strides.push_back(a.strides[i]);
    g.dilates.push_back(a.dilation[i] - 1);  // oneDNN counts the gaps: 0 is no dilation
    g.pad_l.push_back(a.pad_before[i]);
    g.pad_r.push_back(a.pad_after[i]);
  }
  return g;
}

// The cache key of a primitive: what it is, the shapes, the attributes and the thread count it was made for.
std::vector<int64_t> key_of(int what, std::initializer_list<const Shape*> shapes, const void* attrs, std::size_t size) {
  std::vector<int64_t> key{what, omp_get_max_threads()};
  for (const Shape* s : shapes) {
    key.push_back(s->rank());
    for (int64_t d : s->dims()) key.push_back(d);
  }
  std::vector<int64_t> raw((size + sizeof(int64_t) - 1) / sizeof(int64_t), 0);
  std::memcpy(raw.data(), attrs, size);
  key.insert(key.end(), raw.begin(), raw.end());
  return key;
}

// A primitive, its arguments' memory objects (re-pointed per call), and the weights in the primitive's layout when
// that is not Keras's (with the reorder between the two).
struct ConvPrimitive {
  dnnl::primitive prim;
  dnnl::memory a, b, bias, c;          // the primitive's plain-layout arguments (see the kernels)
  dnnl::memory plain_weights, weights;  // weights == plain_weights when no reorder is needed
  dnnl::reorder to_primitive, to_plain;
  bool reorder = false;
};

void bind_weights(ConvPrimitive& p, const dnnl::memory::desc& chosen, const dnnl::memory::desc& plain,
                  bool from_plain) {
  p.plain_weights = dnnl::memory(plain, dnnl_engine(), nullptr);
  p.reorder = chosen != plain;
  if (!p.reorder) {
    p.weights = p.plain_weights;
    return;
  }
  p.weights = dnnl::memory(chosen, dnnl_engine());
  if (from_plain) p.to_primitive = dnnl::reorder(p.plain_weights, p.weights);
  else p.to_plain = dnnl::reorder(p.weights, p.plain_weights);
}

enum Which { kForward, kBackwardData, kBackwardWeights, kPool, kPoolGrad };

struct ConvDescs {
  dnnl::memory::desc src, wei_plain, wei_any, bias, dst;
  Geometry g;
};
// The descriptors in float32, or with `bf16` the activations, weights and bias in bfloat16 — except with
// `f32_params` (the weight gradient's primitive), where the weights and bias (their gradients) stay float32.
ConvDescs descs(const Shape& x, const Shape& k, const Shape& y, const ops::ConvAttrs& a, bool bf16 = false,
                bool f32_params = false) {
  const tag act = activation_tag(a.rank);
  const dims wd = weight_dims(k, a.groups);
  const dt t = bf16 ? dt::bf16 : dt::f32, pt = bf16 && !f32_params ? dt::bf16 : dt::f32;
  return {dnnl::memory::desc(logical(x), t, act), dnnl::memory::desc(wd, pt, weight_tag(a.rank, a.groups > 1)),
          dnnl::memory::desc(wd, pt, tag::any), dnnl::memory::desc({k[-1]}, pt, tag::a),
          dnnl::memory::desc(logical(y), t, act), geometry(a)};
}
bool is_bf16(const Tensor& t) { return t.dtype() == DType::bfloat16; }

dnnl::convolution_forward::primitive_desc forward_pd(const ConvDescs& d, bool bias, dnnl::prop_kind kind,
                                                     const dnnl::primitive_attr& attr = dnnl::primitive_attr()) {
  const auto desc = dnnl::convolution_forward::desc(kind, dnnl::algorithm::convolution_direct, d.src, d.wei_any,
                                                    bias ? d.bias : dnnl::memory::desc(), d.dst, d.g.strides,
                                                    d.g.dilates, d.g.pad_l, d.g.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, attr, dnnl_engine());
}

// One cached primitive per (which, shapes, attributes, threads) and thread, made by `make` on first use.
template <typename Make>
ConvPrimitive& cached(std::vector<int64_t> key, Make&& make) {
  thread_local std::map<std::vector<int64_t>, ConvPrimitive> cache;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(std::move(key), make()).first;
  return it->second;
}

int64_t work_of(const Shape& y, const Shape& k) { return y.num_elements() * (k.num_elements() / k[-1]); }

void execute(ConvPrimitive& p, std::unordered_map<int, dnnl::memory> args) {
  p.prim.execute(dnnl_stream(), args);
  dnnl_stream().wait();
}

void rethrow(const dnnl::error& e, const char* op, const Shape& x, const Shape& k) {
  throw InternalError(fmt::format("oneDNN {} failed for input {} and kernel {}: {} (status {})", op, x.to_string(),
                                  k.to_string(), e.what(), static_cast<int>(e.status)));
}

void conv_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<ops::ConvAttrs>();
  const Tensor& x = ctx.inputs[0];
  const Tensor& w = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  if (y.num_elements() == 0) return;
  GemmThreadLimit limit(work_of(y.shape(), w.shape()), 1, 1);
  // The activation as oneDNN's post-op where it has it (relu: no second pass over the output), else after.
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f;
  const bool post_op = a.activation != ops::Activation::linear && post_op_for(a.activation, alg, alpha);
  try {
    auto& p = cached(key_of(kForward + 8 * is_bf16(x), {&x.shape(), &w.shape()}, &a, sizeof a), [&] {
      const ConvDescs d = descs(x.shape(), w.shape(), y.shape(), a, is_bf16(x));
      dnnl::primitive_attr attr;
      if (post_op) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.f, alg, alpha, 0.f);
        attr.set_post_ops(ops);
      }
      const auto pd = forward_pd(d, a.has_bias, dnnl::prop_kind::forward_inference, attr);
      ConvPrimitive cp;
      cp.prim = dnnl::convolution_forward(pd);
      cp.a = dnnl::memory(d.src, dnnl_engine(), nullptr);
      cp.bias = dnnl::memory(d.bias, dnnl_engine(), nullptr);
      cp.c = dnnl::memory(d.dst, dnnl_engine(), nullptr);
      bind_weights(cp, pd.weights_desc(), d.wei_plain, true);
      return cp;
    });
    p.a.set_data_handle(x.raw_data());
    p.plain_weights.set_data_handle(w.raw_data());
    p.c.set_data_handle(y.raw_data());
    if (p.reorder) p.to_primitive.execute(dnnl_stream(), p.plain_weights, p.weights);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, p.c}};
    if (a.has_bias) {
      p.bias.set_data_handle(ctx.inputs[2].raw_data());
      args.emplace(DNNL_ARG_BIAS, p.bias);
    }
    execute(p, std::move(args));
  } catch (const dnnl::error& e) {
    rethrow(e, "convolution", x.shape(), w.shape());
  }
  if (!post_op && a.activation != ops::Activation::linear) activation_values(a.activation, y, y);
}

void conv_backprop_input_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<ops::ConvAttrs>();
  const Tensor& dy = ctx.inputs[0];
  const Tensor& w = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  if (dx.num_elements() == 0) return;
  if (dy.num_elements() == 0) {
    std::memset(dx.raw_data(), 0, dx.nbytes());
    return;
  }
  GemmThreadLimit limit(work_of(dy.shape(), w.shape()), 1, 1);
  try {
    auto& p = cached(key_of(kBackwardData + 8 * is_bf16(dy), {&dx.shape(), &w.shape()}, &a, sizeof a), [&] {
      const ConvDescs d = descs(dx.shape(), w.shape(), dy.shape(), a, is_bf16(dy));
      const auto hint = forward_pd(d, false, dnnl::prop_kind::forward_training);
      const auto desc = dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, d.src, d.wei_any,
                                                              d.dst, d.g.strides, d.g.dilates, d.g.pad_l, d.g.pad_r);
      const dnnl::convolution_backward_data::primitive_desc pd(desc, dnnl_engine(), hint);
      ConvPrimitive cp;
      cp.prim = dnnl::convolution_backward_data(pd);
      cp.a = dnnl::memory(d.dst, dnnl_engine(), nullptr);
      cp.c = dnnl::memory(d.src, dnnl_engine(), nullptr);
      bind_weights(cp, pd.weights_desc(), d.wei_plain, true);
      return cp;
    });
    p.a.set_data_handle(dy.raw_data());
    p.plain_weights.set_data_handle(w.raw_data());
    p.c.set_data_handle(dx.raw_data());
    if (p.reorder) p.to_primitive.execute(dnnl_stream(), p.plain_weights, p.weights);
    execute(p, {{DNNL_ARG_DIFF_DST, p.a}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DIFF_SRC, p.c}});
  } catch (const dnnl::error& e) {
    rethrow(e, "convolution backward data", dx.shape(), w.shape());
  }
}

void conv_backprop_filter_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<ops::ConvAttrs>();
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dw = ctx.outputs[0];
  if (dy.num_elements() == 0) {  // an empty batch: no contribution
    std::memset(dw.raw_data(), 0, dw.nbytes());
    if (a.has_bias) std::memset(ctx.outputs[1].raw_data(), 0, ctx.outputs[1].nbytes());
    return;
  }
  GemmThreadLimit limit(work_of(dy.shape(), dw.shape()), 1, 1);
  try {
    auto& p = cached(key_of(kBackwardWeights + 8 * is_bf16(x), {&x.shape(), &dw.shape()}, &a, sizeof a), [&] {
      // bfloat16 activations give float32 weight and bias gradients (the variables' dtype), unrounded.
      const ConvDescs d = descs(x.shape(), dw.shape(), dy.shape(), a, is_bf16(x), true);
      const auto hint = forward_pd(is_bf16(x) ? descs(x.shape(), dw.shape(), dy.shape(), a, true) : d, a.has_bias,
                                   dnnl::prop_kind::forward_training);
      const auto desc = a.has_bias
                            ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, d.src,
                                                                       d.wei_any, d.bias, d.dst, d.g.strides,
                                                                       d.g.dilates, d.g.pad_l, d.g.pad_r)
                            : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, d.src,
                                                                       d.wei_any, d.dst, d.g.strides, d.g.dilates,
                                                                       d.g.pad_l, d.g.pad_r);
      const dnnl::convolution_backward_weights::primitive_desc pd(desc, dnnl_engine(), hint);
      ConvPrimitive cp;
      cp.prim = dnnl::convolution_backward_weights(pd);
      cp.a = dnnl::memory(d.src, dnnl_engine(), nullptr);
      cp.b = dnnl::memory(d.dst, dnnl_engine(), nullptr);
      cp.bias = dnnl::memory(d.bias, dnnl_engine(), nullptr);
      bind_weights(cp, pd.diff_weights_desc(), d.wei_plain, false);
      return cp;
    });
    p.a.set_data_handle(x.raw_data());
    p.b.set_data_handle(dy.raw_data());
    p.plain_weights.set_data_handle(dw.raw_data());
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, p.a}, {DNNL_ARG_DIFF_DST, p.b},
                                               {DNNL_ARG_DIFF_WEIGHTS, p.weights}};
    if (a.has_bias) {
      p.bias.set_data_handle(ctx.outputs[1].raw_data());
      args.emplace(DNNL_ARG_DIFF_BIAS, p.bias);
    }
    execute(p, std::move(args));
    if (p.reorder) {
      p.to_plain.execute(dnnl_stream(), p.weights, p.plain_weights);
      dnnl_stream().wait();
    }
  } catch (const dnnl::error& e) {
    rethrow(e, "convolution backward weights", x.shape(), dw.shape());
  }
}

// ---- pooling ----

struct PoolDescs {
  dnnl::memory::desc src, dst;
  dims strides, window, pad_l, pad_r;
  dnnl::algorithm alg;
};
PoolDescs pool_descs(const Shape& x, const Shape& y, const ops::PoolAttrs& a, bool bf16) {
  const dt t = bf16 ? dt::bf16 : dt::f32;
  PoolDescs d{dnnl::memory::desc(logical(x), t, activation_tag(a.rank)),
              dnnl::memory::desc(logical(y), t, activation_tag(a.rank)),
              {}, {}, {}, {},
              a.kind == ops::PoolKind::max ? dnnl::algorithm::pooling_max
                                           : dnnl::algorithm::pooling_avg_exclude_padding};
  for (int i = 0; i < a.rank; ++i) {
    d.strides.push_back(a.strides[i]);
    d.window.push_back(a.window[i]);
    d.pad_l.push_back(a.pad_before[i]);
    d.pad_r.push_back(a.pad_after[i]);
  }
  return d;
}
dnnl::pooling_forward::primitive_desc pool_pd(const PoolDescs& d, dnnl::prop_kind kind) {
  return dnnl::pooling_forward::primitive_desc(
      dnnl::pooling_forward::desc(kind, d.alg, d.src, d.dst, d.strides, d.window, d.pad_l, d.pad_r), dnnl_engine());
}

struct PoolPrimitive {
  dnnl::primitive forward;  // inference (Pool), or training with a workspace (PoolGrad of a max pool)
  dnnl::primitive backward;
  dnnl::memory src, dst, diff_dst, diff_src, workspace;
  bool max = false;
};

template <typename Make>
PoolPrimitive& cached_pool(std::vector<int64_t> key, Make&& make) {
  thread_local std::map<std::vector<int64_t>, PoolPrimitive> cache;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(std::move(key), make()).first;
  return it->second;
}

void pool_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<ops::PoolAttrs>();
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  if (y.num_elements() == 0) return;
  GemmThreadLimit limit(y.num_elements(), 1, 1);
  try {
    auto& p = cached_pool(key_of(kPool + 8 * is_bf16(x), {&x.shape()}, &a, sizeof a), [&] {
      const PoolDescs d = pool_descs(x.shape(), y.shape(), a, is_bf16(x));
      PoolPrimitive pp;
      pp.forward = dnnl::pooling_forward(pool_pd(d, dnnl::prop_kind::forward_inference));
      pp.src = dnnl::memory(d.src, dnnl_engine(), nullptr);
      pp.dst = dnnl::memory(d.dst, dnnl_engine(), nullptr);
      return pp;
    });
    p.src.set_data_handle(x.raw_data());
    p.dst.set_data_handle(y.raw_data());
    p.forward.execute(dnnl_stream(), {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_DST, p.dst}});
    dnnl_stream().wait();
  } catch (const dnnl::error& e) {
    rethrow(e, "pooling", x.shape(), y.shape());
  }
}

// A max pool's gradient needs the forward's workspace (where each maximum was): the forward runs again in training
// mode into the primitive's own buffers, then the backward.
void pool_grad_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<ops::PoolAttrs>();
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  if (dx.num_elements() == 0) return;
  if (dy.num_elements() == 0) {
    std::memset(dx.raw_data(), 0, dx.nbytes());
    return;
  }
  GemmThreadLimit limit(x.num_elements(), 1, 1);
  try {
    auto& p = cached_pool(key_of(kPoolGrad + 8 * is_bf16(x), {&x.shape(), &dy.shape()}, &a, sizeof a), [&] {
      const PoolDescs d = pool_descs(x.shape(), dy.shape(), a, is_bf16(x));
      const auto fwd = pool_pd(d, dnnl::prop_kind::forward_training);
      const dnnl::pooling_backward::primitive_desc bwd(
          dnnl::pooling_backward::desc(d.alg, d.src, d.dst, d.strides, d.window, d.pad_l, d.pad_r), dnnl_engine(), fwd);
      PoolPrimitive pp;
      pp.forward = dnnl::pooling_forward(fwd);
      pp.backward = dnnl::pooling_backward(bwd);
      pp.src = dnnl::memory(d.src, dnnl_engine(), nullptr);
      pp.diff_dst = dnnl::memory(d.dst, dnnl_engine(), nullptr);
      pp.diff_src = dnnl::memory(d.src, dnnl_engine(), nullptr);
      pp.max = a.kind == ops::PoolKind::max;
      if (pp.max) {
        pp.dst = dnnl::memory(d.dst, dnnl_engine());
        pp.workspace = dnnl::memory(fwd.workspace_desc(), dnnl_engine());
      }
      return pp;
    });
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_DIFF_DST, p.diff_dst}, {DNNL_ARG_DIFF_SRC, p.diff_src}};
    p.diff_dst.set_data_handle(dy.raw_data());
    p.diff_src.set_data_handle(dx.raw_data());
    if (p.max) {
      p.src.set_data_handle(x.raw_data());
      p.forward.execute(dnnl_stream(), {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_DST, p.dst}, {DNNL_ARG_WORKSPACE, p.workspace}});
      args.emplace(DNNL_ARG_WORKSPACE, p.workspace);
    }
    p.backward.execute(dnnl_stream(), args);
    dnnl_stream().wait();
  } catch (const dnnl::error& e) {
    rethrow(e, "pooling backward", x.shape(), dy.shape());
  }
}

}  // namespace

void register_conv_kernels() {
  ops::register_kernel(ops::OpId::Conv, DeviceType::CPU, conv_kernel, ops::kBFloat16);
  ops::register_kernel(ops::OpId::ConvBackpropInput, DeviceType::CPU, conv_backprop_input_kernel, ops::kBFloat16);
  ops::register_kernel(ops::OpId::ConvBackpropFilter, DeviceType::CPU, conv_backprop_filter_kernel, ops::kBFloat16);
  ops::register_kernel(ops::OpId::Pool, DeviceType::CPU, pool_kernel, ops::kBFloat16);
  ops::register_kernel(ops::OpId::PoolGrad, DeviceType::CPU, pool_grad_kernel, ops::kBFloat16);
}

}  // namespace osprey::cpu
