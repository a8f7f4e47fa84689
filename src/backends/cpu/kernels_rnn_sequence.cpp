// The CPU kernels of ops::lstm_sequence, ops::gru_sequence and ops::simple_rnn_sequence: oneDNN's LSTM,
// linear-before-reset GRU, GRU and vanilla RNN primitives, forward (training, its workspace kept in the op's last
// output) and backward, over the whole sequence.
// Keras's layouts map onto oneDNN's plain ones without a copy: the time-major x and y (steps, batch, ·) are "tnc"
// (oneDNN 2.6's reference LSTM takes 12 % longer on batch-major "ntc"), the states (batch, units) "ldnc", the
// kernel (features, gates·units) and recurrent kernel (units, gates·units) "ldigo" with Keras's gate orders (an
// LSTM's i, f, c, o and a GRU's z, r, h are oneDNN's; a simple RNN has one gate), the bias "ldgo". The weights are
// reordered into the layouts the primitives choose (and the weight gradients back) on every call.
// With attrs.bfloat16 (a layer under mixed_bfloat16) x, y and the h states are bfloat16 and the weights are
// rounded to bfloat16 by those reorders: oneDNN's bfloat16 RNNs (brgemm products accumulating in float32); the
// LSTM's carry, the bias and every gradient stay float32, the weight gradients unrounded.
#include <omp.h>

#include <cstring>
#include <type_traits>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backends/cpu/dnnl_common.h"
#include "backends/cpu/kernels.h"
#include "ops/attrs.h"
#include "ops/kernel.h"
#include "osprey/errors.h"

namespace osprey::cpu {

namespace {

using runtime::DeviceType;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// One shape's primitives and the weights in their layouts (kept per thread: the memories are reused per call).
struct SequencePrimitives {
  dnnl::primitive fwd, bwd;
  dnnl::memory::desc x, y, state, w, r, b, workspace;  // Keras's plain layouts, and the workspace's
  dnnl::memory::desc state32, dx, dy;  // float32 always: (batch, units) for the LSTM's c and the states' gradients
  dnnl::memory w_fwd, r_fwd, w_bwd, r_bwd, dw_bwd, dr_bwd;
  dnnl::reorder to_w_fwd{}, to_r_fwd{}, to_w_bwd{}, to_r_bwd{}, from_dw{}, from_dr{};
};

void reorder(const dnnl::reorder& r, const dnnl::memory& from, const dnnl::memory& to) {
  r.execute(dnnl_stream(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

const char* kind_name(int64_t kind) {
  switch (kind) {
    case ops::RnnSequenceAttrs::kLstm: return "LstmSequence";
    case ops::RnnSequenceAttrs::kGru:
    case ops::RnnSequenceAttrs::kGruResetBefore: return "GruSequence";
    default: return "RnnSequence";
  }
}

// The primitives of an LSTM (gates i, f, c, o), a linear-before-reset GRU (gates u, r, o; Keras's reset_after
// GRU, its bias (4, units): u, r, o and the recurrent candidate's), a GRU (Keras's reset_after=False: the reset
// gate on h before its product, one bias (3, units)) or a vanilla RNN (one gate, its activation
// from the kind).
SequencePrimitives& primitives(const ops::RnnSequenceAttrs& a) {
  thread_local std::map<std::vector<int64_t>, SequencePrimitives> cache;
  std::vector<int64_t> key{a.kind, a.batch, a.steps, a.features, a.units, a.bfloat16, omp_get_max_threads()};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto& eng = dnnl_engine();
  const bool gru = a.kind == ops::RnnSequenceAttrs::kGru, lstm = a.kind == ops::RnnSequenceAttrs::kLstm;
  const bool gru_before = a.kind == ops::RnnSequenceAttrs::kGruResetBefore;
  const dnnl::memory::dim n = a.batch, t = a.steps, f = a.features, u = a.units;
  const dnnl::memory::dim g = lstm ? 4 : gru || gru_before ? 3 : 1;
  const dt data = a.bfloat16 ? dt::bf16 : dt::f32;
  auto md = [](dnnl::memory::dims d, tag tg, dt type = dt::f32) { return dnnl::memory::desc(d, type, tg); };
  const auto x = md({t, n, f}, tag::tnc, data), y = md({t, n, u}, tag::tnc, data);
  const auto state = md({1, 1, n, u}, tag::ldnc, data), state32 = md({1, 1, n, u}, tag::ldnc);
  const auto dx = md({t, n, f}, tag::tnc), dy = md({t, n, u}, tag::tnc);
  const auto w = md({1, 1, f, g, u}, tag::ldigo), r = md({1, 1, u, g, u}, tag::ldigo);
  const auto b = md({1, 1, lstm || gru ? 4 : g, u}, tag::ldgo);
  const auto w_any = md({1, 1, f, g, u}, tag::any, data), r_any = md({1, 1, u, g, u}, tag::any, data);
  const auto dw_any = md({1, 1, f, g, u}, tag::any), dr_any = md({1, 1, u, g, u}, tag::any);
  const auto dir = dnnl::rnn_direction::unidirectional_left2right;
  const auto fwd_kind = dnnl::prop_kind::forward_training;
  try {
    SequencePrimitives p;
    dnnl::memory::desc fw, fr, bw, br, dw, dr;
    // The same for any cell once its forward and backward primitive descriptors are made.
    auto take = [&](const auto& fpd, const auto& bpd, auto fwd, auto bwd) {
      p.fwd = fwd, p.bwd = bwd, p.workspace = fpd.workspace_desc();
      fw = fpd.weights_layer_desc(), fr = fpd.weights_iter_desc(), bw = bpd.weights_layer_desc();
      br = bpd.weights_iter_desc(), dw = bpd.diff_weights_layer_desc(), dr = bpd.diff_weights_iter_desc();
    };
    // A cell with one state (either GRU, the vanilla RNN): its primitives of types Fwd and Bwd, their descriptors
    // taking `lead` (the vanilla RNN's activation) before the direction.
    auto one_state = [&](auto fwd_type, auto bwd_type, auto... lead) {
      using Fwd = typename decltype(fwd_type)::type;
      using Bwd = typename decltype(bwd_type)::type;
      typename Fwd::primitive_desc fpd(typename Fwd::desc(fwd_kind, lead..., dir, x, state, w_any, r_any, b, y, state),
                                       eng);
      typename Bwd::primitive_desc bpd(typename Bwd::desc(dnnl::prop_kind::backward, lead..., dir, x, state, w_any,
                                                          r_any, b, y, state, dx, state32, dw_any, dr_any, b, dy,
                                                          state32),
                                       eng, fpd);
      take(fpd, bpd, Fwd(fpd), Bwd(bpd));
    };
    using std::type_identity;
    if (gru) {
      one_state(type_identity<dnnl::lbr_gru_forward>{}, type_identity<dnnl::lbr_gru_backward>{});
    } else if (gru_before) {
      one_state(type_identity<dnnl::gru_forward>{}, type_identity<dnnl::gru_backward>{});
    } else if (lstm) {
      dnnl::lstm_forward::primitive_desc fpd(
          dnnl::lstm_forward::desc(fwd_kind, dir, x, state, state32, w_any, r_any, b, y, state, state32), eng);
      dnnl::lstm_backward::primitive_desc bpd(
          dnnl::lstm_backward::desc(dnnl::prop_kind::backward, dir, x, state, state32, w_any, r_any, b, y, state, state32,
                                    dx, state32, state32, dw_any, dr_any, b, dy, state32, state32),
          eng, fpd);
      take(fpd, bpd, dnnl::lstm_forward(fpd), dnnl::lstm_backward(bpd));
    } else {
      const auto act = a.kind == ops::RnnSequenceAttrs::kSimpleRelu      ? dnnl::algorithm::eltwise_relu
                       : a.kind == ops::RnnSequenceAttrs::kSimpleSigmoid ? dnnl::algorithm::eltwise_logistic
                                                                         : dnnl::algorithm::eltwise_tanh;
      one_state(type_identity<dnnl::vanilla_rnn_forward>{}, type_identity<dnnl::vanilla_rnn_backward>{}, act);
    }
    p.x = x, p.y = y, p.state = state, p.w = w, p.r = r, p.b = b;
    p.state32 = state32, p.dx = dx, p.dy = dy;
    p.w_fwd = dnnl::memory(fw, eng), p.r_fwd = dnnl::memory(fr, eng), p.w_bwd = dnnl::memory(bw, eng);
    p.r_bwd = dnnl::memory(br, eng), p.dw_bwd = dnnl::memory(dw, eng), p.dr_bwd = dnnl::memory(dr, eng);
    p.to_w_fwd = dnnl::reorder(dnnl::reorder::primitive_desc(eng, w, eng, fw));
    p.to_r_fwd = dnnl::reorder(dnnl::reorder::primitive_desc(eng, r, eng, fr));
    p.to_w_bwd = dnnl::reorder(dnnl::reorder::primitive_desc(eng, w, eng, bw));
    p.to_r_bwd = dnnl::reorder(dnnl::reorder::primitive_desc(eng, r, eng, br));
    p.from_dw = dnnl::reorder(dnnl::reorder::primitive_desc(eng, dw, eng, w));
    p.from_dr = dnnl::reorder(dnnl::reorder::primitive_desc(eng, dr, eng, r));
    return cache.emplace(std::move(key), std::move(p)).first->second;
  } catch (const dnnl::error& e) {
    throw InternalError(fmt::format("{}: oneDNN has no {} primitive for batch {}, {} steps, {} features, {} units: {}",
                                    kind_name(a.kind), a.bfloat16 ? "bfloat16" : "float32", n, t, f, u, e.what()));
  }
}

int64_t workspace(const void* attrs, runtime::Device&) {
  return static_cast<int64_t>(primitives(*static_cast<const ops::RnnSequenceAttrs*>(attrs)).workspace.get_size());
}

dnnl::memory wrap(const dnnl::memory::desc& d, const Tensor& t) { return dnnl::memory(d, dnnl_engine(), t.raw_data()); }

// LSTM inputs: x, h0, c0, kernel, recurrent, bias; outputs: y, hT, cT, workspace. GRU and simple RNN: the same
// without c0 and cT.
void sequence_kernel(const ops::KernelContext& ctx) {
  const auto& a = ctx.attr<ops::RnnSequenceAttrs>();
  const bool lstm = a.kind == ops::RnnSequenceAttrs::kLstm;
  auto& p = primitives(a);
  const auto& in = ctx.inputs;
  const auto& out = ctx.outputs;
  const std::size_t k = lstm ? 1 : 0;  // the weights' and outputs' shift
  reorder(p.to_w_fwd, wrap(p.w, in[2 + k]), p.w_fwd);
  reorder(p.to_r_fwd, wrap(p.r, in[3 + k]), p.r_fwd);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC_LAYER, wrap(p.x, in[0])},
                                             {DNNL_ARG_SRC_ITER, wrap(p.state, in[1])},
                                             {DNNL_ARG_WEIGHTS_LAYER, p.w_fwd},
                                             {DNNL_ARG_WEIGHTS_ITER, p.r_fwd},
                                             {DNNL_ARG_BIAS, wrap(p.b, in[4 + k])},
                                             {DNNL_ARG_DST_LAYER, wrap(p.y, out[0])},
                                             {DNNL_ARG_DST_ITER, wrap(p.state, out[1])},
                                             {DNNL_ARG_WORKSPACE, wrap(p.workspace, out[2 + k])}};
  if (lstm) {
    args[DNNL_ARG_SRC_ITER_C] = wrap(p.state32, in[2]);
    args[DNNL_ARG_DST_ITER_C] = wrap(p.state32, out[2]);
  }
  p.fwd.execute(dnnl_stream(), args);
  dnnl_stream().wait();
}

// LSTM inputs: dy, dhT, dcT, x, h0, c0, kernel, recurrent, bias, y, hT, cT, workspace; outputs: dx, dh0, dc0,
// dkernel, drecurrent, dbias. GRU and simple RNN: the same without dcT, c0, cT and dc0.
void sequence_grad_kernel(const ops::KernelContext& ctx) {
  const auto& a = ctx.attr<ops::RnnSequenceAttrs>();
  const bool lstm = a.kind == ops::RnnSequenceAttrs::kLstm;
  auto& p = primitives(a);
  const auto& in = ctx.inputs;
  const auto& out = ctx.outputs;
  // Input positions: dy, dh, [dc], x, h0, [c0], kernel, recurrent, bias, y, hT, [cT], workspace.
  const std::size_t x = lstm ? 3 : 2, w = lstm ? 6 : 4, y = w + 3, ws = lstm ? 12 : 9, dw = lstm ? 3 : 2;
  reorder(p.to_w_bwd, wrap(p.w, in[w]), p.w_bwd);
  reorder(p.to_r_bwd, wrap(p.r, in[w + 1]), p.r_bwd);
  // oneDNN adds the weight gradients to what the memories hold.
  for (dnnl::memory* m : {&p.dw_bwd, &p.dr_bwd}) std::memset(m->get_data_handle(), 0, m->get_desc().get_size());
  std::memset(out[dw + 2].data<float>(), 0, static_cast<std::size_t>(out[dw + 2].num_elements()) * sizeof(float));
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC_LAYER, wrap(p.x, in[x])},
                                             {DNNL_ARG_SRC_ITER, wrap(p.state, in[x + 1])},
                                             {DNNL_ARG_WEIGHTS_LAYER, p.w_bwd},
                                             {DNNL_ARG_WEIGHTS_ITER, p.r_bwd},
                                             {DNNL_ARG_BIAS, wrap(p.b, in[w + 2])},
                                             {DNNL_ARG_DST_LAYER, wrap(p.y, in[y])},
                                             {DNNL_ARG_DST_ITER, wrap(p.state, in[y + 1])},
                                             {DNNL_ARG_WORKSPACE, wrap(p.workspace, in[ws])},
                                             {DNNL_ARG_DIFF_DST_LAYER, wrap(p.dy, in[0])},
                                             {DNNL_ARG_DIFF_DST_ITER, wrap(p.state32, in[1])},
                                             {DNNL_ARG_DIFF_SRC_LAYER, wrap(p.dx, out[0])},
                                             {DNNL_ARG_DIFF_SRC_ITER, wrap(p.state32, out[1])},
                                             {DNNL_ARG_DIFF_WEIGHTS_LAYER, p.dw_bwd},
                                             {DNNL_ARG_DIFF_WEIGHTS_ITER, p.dr_bwd},
                                             {DNNL_ARG_DIFF_BIAS, wrap(p.b, out[dw + 2])}};
  if (lstm) {
    args[DNNL_ARG_SRC_ITER_C] = wrap(p.state32, in[5]);
    args[DNNL_ARG_DST_ITER_C] = wrap(p.state32, in[11]);
    args[DNNL_ARG_DIFF_DST_ITER_C] = wrap(p.state32, in[2]);
    args[DNNL_ARG_DIFF_SRC_ITER_C] = wrap(p.state32, out[2]);
  }
  p.bwd.execute(dnnl_stream(), args);
  reorder(p.from_dw, p.dw_bwd, wrap(p.w, out[dw]));
  reorder(p.from_dr, p.dr_bwd, wrap(p.r, out[dw + 1]));
  dnnl_stream().wait();
}

// oneDNN's bfloat16 RNNs need AVX-512 (natively with AVX512_BF16, emulated without); elsewhere bfloat16 sequences
// run the float32 primitives on float32 copies (the dispatcher's fallback).
bool bfloat16_rnns() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx: return true;
    default: return false;
  }
}

}  // namespace

void register_rnn_sequence_kernels() {
  const ops::HalfTypes half = bfloat16_rnns() ? ops::kBFloat16 : ops::kNoHalf;
  for (auto [op, grad] : {std::pair{ops::OpId::LstmSequence, ops::OpId::LstmSequenceGrad},
                          std::pair{ops::OpId::GruSequence, ops::OpId::GruSequenceGrad},
                          std::pair{ops::OpId::RnnSequence, ops::OpId::RnnSequenceGrad}}) {
    ops::register_kernel(op, DeviceType::CPU, sequence_kernel, half);
    ops::register_kernel(grad, DeviceType::CPU, sequence_grad_kernel, half);
    ops::register_workspace(op, DeviceType::CPU, workspace);
  }
}

}  // namespace osprey::cpu
