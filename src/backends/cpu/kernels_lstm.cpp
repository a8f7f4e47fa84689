// The CPU kernels of ops::lstm_sequence: oneDNN's LSTM primitive, forward (training, its workspace kept in the op's
// fourth output) and backward, over the whole sequence. Keras's layouts map onto oneDNN's plain ones without a
// copy: the time-major x and y (steps, batch, ·) are "tnc" (oneDNN 2.6's reference LSTM takes 12 % longer on
// batch-major "ntc"), the states (batch, units) "ldnc", the kernel (features, 4·units) and recurrent kernel
// (units, 4·units) "ldigo" with Keras's gate order i, f, c, o (oneDNN's), the bias "ldgo". The weights are
// reordered into the layouts the primitives choose (and the weight gradients back) on every call.
#include <omp.h>

#include <cstring>
#include <map>
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
struct LstmPrimitives {
  dnnl::lstm_forward::primitive_desc fpd;
  dnnl::lstm_backward::primitive_desc bpd;
  dnnl::lstm_forward fwd;
  dnnl::lstm_backward bwd;
  dnnl::memory::desc x, y, state, w, r, b;  // Keras's plain layouts
  dnnl::memory w_fwd, r_fwd, w_bwd, r_bwd, dw_bwd, dr_bwd;
  dnnl::reorder to_w_fwd{}, to_r_fwd{}, to_w_bwd{}, to_r_bwd{}, from_dw{}, from_dr{};
};

void reorder(const dnnl::reorder& r, const dnnl::memory& from, const dnnl::memory& to) {
  r.execute(dnnl_stream(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

LstmPrimitives& primitives(const ops::LstmSequenceAttrs& a) {
  thread_local std::map<std::vector<int64_t>, LstmPrimitives> cache;
  std::vector<int64_t> key{a.batch, a.steps, a.features, a.units, omp_get_max_threads()};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto& eng = dnnl_engine();
  const dnnl::memory::dim n = a.batch, t = a.steps, f = a.features, u = a.units;
  auto md = [](dnnl::memory::dims d, tag tg) { return dnnl::memory::desc(d, dt::f32, tg); };
  const auto x = md({t, n, f}, tag::tnc), y = md({t, n, u}, tag::tnc), state = md({1, 1, n, u}, tag::ldnc);
  const auto w = md({1, 1, f, 4, u}, tag::ldigo), r = md({1, 1, u, 4, u}, tag::ldigo), b = md({1, 1, 4, u}, tag::ldgo);
  const auto w_any = md({1, 1, f, 4, u}, tag::any), r_any = md({1, 1, u, 4, u}, tag::any);
  const auto dir = dnnl::rnn_direction::unidirectional_left2right;
  try {
    dnnl::lstm_forward::primitive_desc fpd(dnnl::lstm_forward::desc(dnnl::prop_kind::forward_training, dir, x, state,
                                                                    state, w_any, r_any, b, y, state, state),
                                           eng);
    dnnl::lstm_backward::primitive_desc bpd(
        dnnl::lstm_backward::desc(dnnl::prop_kind::backward, dir, x, state, state, w_any, r_any, b, y, state, state, x,
                                  state, state, w_any, r_any, b, y, state, state),
        eng, fpd);
    LstmPrimitives p{fpd,
                     bpd,
                     dnnl::lstm_forward(fpd),
                     dnnl::lstm_backward(bpd),
                     x,
                     y,
                     state,
                     w,
                     r,
                     b,
                     dnnl::memory(fpd.weights_layer_desc(), eng),
                     dnnl::memory(fpd.weights_iter_desc(), eng),
                     dnnl::memory(bpd.weights_layer_desc(), eng),
                     dnnl::memory(bpd.weights_iter_desc(), eng),
                     dnnl::memory(bpd.diff_weights_layer_desc(), eng),
                     dnnl::memory(bpd.diff_weights_iter_desc(), eng)};
    p.to_w_fwd = dnnl::reorder(dnnl::reorder::primitive_desc(eng, w, eng, fpd.weights_layer_desc()));
    p.to_r_fwd = dnnl::reorder(dnnl::reorder::primitive_desc(eng, r, eng, fpd.weights_iter_desc()));
    p.to_w_bwd = dnnl::reorder(dnnl::reorder::primitive_desc(eng, w, eng, bpd.weights_layer_desc()));
    p.to_r_bwd = dnnl::reorder(dnnl::reorder::primitive_desc(eng, r, eng, bpd.weights_iter_desc()));
    p.from_dw = dnnl::reorder(dnnl::reorder::primitive_desc(eng, bpd.diff_weights_layer_desc(), eng, w));
    p.from_dr = dnnl::reorder(dnnl::reorder::primitive_desc(eng, bpd.diff_weights_iter_desc(), eng, r));
    return cache.emplace(std::move(key), std::move(p)).first->second;
  } catch (const dnnl::error& e) {
    throw InternalError(fmt::format("LstmSequence: oneDNN has no LSTM primitive for batch {}, {} steps, {} features, "
                                    "{} units: {}",
                                    n, t, f, u, e.what()));
  }
}

int64_t lstm_workspace(const void* attrs) {
  return static_cast<int64_t>(primitives(*static_cast<const ops::LstmSequenceAttrs*>(attrs)).fpd.workspace_desc().get_size());
}

dnnl::memory wrap(const dnnl::memory::desc& d, const Tensor& t) {
  return dnnl::memory(d, dnnl_engine(), t.data<float>());
}

void lstm_sequence_kernel(const ops::KernelContext& ctx) {
  const auto& a = ctx.attr<ops::LstmSequenceAttrs>();
  auto& p = primitives(a);
  auto& s = dnnl_stream();
  const auto& in = ctx.inputs;
  reorder(p.to_w_fwd, wrap(p.w, in[3]), p.w_fwd);
  reorder(p.to_r_fwd, wrap(p.r, in[4]), p.r_fwd);
  p.fwd.execute(s, {{DNNL_ARG_SRC_LAYER, wrap(p.x, in[0])},
                    {DNNL_ARG_SRC_ITER, wrap(p.state, in[1])},
                    {DNNL_ARG_SRC_ITER_C, wrap(p.state, in[2])},
                    {DNNL_ARG_WEIGHTS_LAYER, p.w_fwd},
                    {DNNL_ARG_WEIGHTS_ITER, p.r_fwd},
                    {DNNL_ARG_BIAS, wrap(p.b, in[5])},
                    {DNNL_ARG_DST_LAYER, wrap(p.y, ctx.outputs[0])},
                    {DNNL_ARG_DST_ITER, wrap(p.state, ctx.outputs[1])},
                    {DNNL_ARG_DST_ITER_C, wrap(p.state, ctx.outputs[2])},
                    {DNNL_ARG_WORKSPACE, dnnl::memory(p.fpd.workspace_desc(), dnnl_engine(),
                                                      ctx.outputs[3].data<float>())}});
  s.wait();
}

// Inputs: dy, dhT, dcT, x, h0, c0, kernel, recurrent, bias, y, hT, cT, workspace; outputs: dx, dh0, dc0, dkernel,
// drecurrent, dbias.
void lstm_sequence_grad_kernel(const ops::KernelContext& ctx) {
  const auto& a = ctx.attr<ops::LstmSequenceAttrs>();
  auto& p = primitives(a);
  auto& s = dnnl_stream();
  const auto& in = ctx.inputs;
  auto& out = ctx.outputs;
  reorder(p.to_w_bwd, wrap(p.w, in[6]), p.w_bwd);
  reorder(p.to_r_bwd, wrap(p.r, in[7]), p.r_bwd);
  // oneDNN adds the weight gradients to what the memories hold.
  for (dnnl::memory* m : {&p.dw_bwd, &p.dr_bwd}) std::memset(m->get_data_handle(), 0, m->get_desc().get_size());
  std::memset(out[5].data<float>(), 0, static_cast<std::size_t>(out[5].num_elements()) * sizeof(float));
  p.bwd.execute(s, {{DNNL_ARG_SRC_LAYER, wrap(p.x, in[3])},
                    {DNNL_ARG_SRC_ITER, wrap(p.state, in[4])},
                    {DNNL_ARG_SRC_ITER_C, wrap(p.state, in[5])},
                    {DNNL_ARG_WEIGHTS_LAYER, p.w_bwd},
                    {DNNL_ARG_WEIGHTS_ITER, p.r_bwd},
                    {DNNL_ARG_BIAS, wrap(p.b, in[8])},
                    {DNNL_ARG_DST_LAYER, wrap(p.y, in[9])},
                    {DNNL_ARG_DST_ITER, wrap(p.state, in[10])},
                    {DNNL_ARG_DST_ITER_C, wrap(p.state, in[11])},
                    {DNNL_ARG_WORKSPACE, dnnl::memory(p.fpd.workspace_desc(), dnnl_engine(),
                                                      in[12].data<float>())},
                    {DNNL_ARG_DIFF_DST_LAYER, wrap(p.y, in[0])},
                    {DNNL_ARG_DIFF_DST_ITER, wrap(p.state, in[1])},
                    {DNNL_ARG_DIFF_DST_ITER_C, wrap(p.state, in[2])},
                    {DNNL_ARG_DIFF_SRC_LAYER, wrap(p.x, out[0])},
                    {DNNL_ARG_DIFF_SRC_ITER, wrap(p.state, out[1])},
                    {DNNL_ARG_DIFF_SRC_ITER_C, wrap(p.state, out[2])},
                    {DNNL_ARG_DIFF_WEIGHTS_LAYER, p.dw_bwd},
                    {DNNL_ARG_DIFF_WEIGHTS_ITER, p.dr_bwd},
                    {DNNL_ARG_DIFF_BIAS, wrap(p.b, out[5])}});
  reorder(p.from_dw, p.dw_bwd, wrap(p.w, out[3]));
  reorder(p.from_dr, p.dr_bwd, wrap(p.r, out[4]));
  s.wait();
}

}  // namespace

void register_lstm_kernels() {
  ops::register_kernel(ops::OpId::LstmSequence, DeviceType::CPU, lstm_sequence_kernel);
  ops::register_kernel(ops::OpId::LstmSequenceGrad, DeviceType::CPU, lstm_sequence_grad_kernel);
  ops::register_workspace(ops::OpId::LstmSequence, DeviceType::CPU, lstm_workspace);
}

}  // namespace osprey::cpu
