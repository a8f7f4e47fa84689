// The CUDA plug-in's kernels of ops::lstm_sequence, ops::gru_sequence and ops::simple_rnn_sequence: cuDNN's RNNs
// (the v8 API, opened with the rest of cuDNN on first use), forward in training mode and both backward calls, over
// the whole sequence -- what Keras's LSTM and GRU run on a GPU.
//
// Layouts. x and y are time-major (steps, batch, ·) as the op gives them: cuDNN's sequence-major unpacked layout
// with every row the whole sequence. The states are (1, batch, units). Keras's kernel (features, gates·units) and
// recurrent kernel (units, gates·units) hold one column block per gate; cuDNN's weight space holds each gate's
// matrix as (units, inputs) row-major at an address cudnnGetRNNWeightParams reports (checked against those shapes),
// so each kernel is transposed to (gates, units, inputs) and its blocks copied there; the gradients come back the
// same way. Gate orders: an LSTM's i, f, c, o are cuDNN's matrices 0-3 (inputs) and 4-7 (recurrent); a GRU's z, r, h
// are cuDNN's 1, 0, 2 and 4, 3, 5; a simple RNN has 0 and 1. Biases: cuDNN's double-bias cells; Keras's bias goes
// into the inputs' biases and the recurrent ones stay zero, except the GRU's recurrent candidate bias (the 4th
// block of the op's GRU bias: cuDNN applies it inside the reset gate's product, as Keras's reset_after).
//
// The op's workspace output holds cuDNN's reserve space (written forward, read backward) and the packed weights
// (read by the backward-data call). cuDNN has no GRU with the reset gate before its product (Keras's
// reset_after=False) and no sigmoid RNN: the kernels refuse those (register_accepts), and layers run their steps.
#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/cuda_platform.h"
#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/kernel_launch.h"
#include "ops/attrs.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "runtime/device_manager.h"

#if __has_include(<cudnn.h>)
#include <cudnn.h>
// The RNN declarations in cudnn_api.h against the real header, where the toolkit has it.
static_assert(CUDNN_RNN_ALGO_STANDARD == osprey::cuda::cudnn::kRnnAlgoStandard);
static_assert(CUDNN_RNN_RELU == osprey::cuda::cudnn::kRnnRelu && CUDNN_RNN_TANH == osprey::cuda::cudnn::kRnnTanh &&
              CUDNN_LSTM == osprey::cuda::cudnn::kLstm && CUDNN_GRU == osprey::cuda::cudnn::kGru);
static_assert(CUDNN_RNN_DOUBLE_BIAS == osprey::cuda::cudnn::kRnnDoubleBias);
static_assert(CUDNN_UNIDIRECTIONAL == osprey::cuda::cudnn::kUnidirectional &&
              CUDNN_LINEAR_INPUT == osprey::cuda::cudnn::kLinearInput);
static_assert(CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED == osprey::cuda::cudnn::kSeqMajorUnpacked);
static_assert(CUDNN_RNN_PADDED_IO_ENABLED == osprey::cuda::cudnn::kPaddedIoEnabled);
static_assert(CUDNN_FWD_MODE_TRAINING == osprey::cuda::cudnn::kFwdModeTraining &&
              CUDNN_WGRAD_MODE_ADD == osprey::cuda::cudnn::kWgradModeAdd);
#endif

namespace osprey::cuda {

namespace {

using ops::KernelContext;
using ops::RnnSequenceAttrs;
using runtime::DeviceType;

bool accepted(int64_t kind) {
  return kind == RnnSequenceAttrs::kLstm || kind == RnnSequenceAttrs::kGru || kind == RnnSequenceAttrs::kSimpleTanh ||
         kind == RnnSequenceAttrs::kSimpleRelu;
}
bool accepts(const void* attrs) { return accepted(static_cast<const RnnSequenceAttrs*>(attrs)->kind); }

int gates_of(int64_t kind) { return kind == RnnSequenceAttrs::kLstm ? 4 : kind == RnnSequenceAttrs::kGru ? 3 : 1; }

// cuDNN's matrix (and bias) id of Keras's gate g: the inputs' matrix, and the recurrent one at + gates.
int cudnn_gate(int64_t kind, int g) {
  if (kind == RnnSequenceAttrs::kGru) return g == 0 ? 1 : g == 1 ? 0 : 2;  // Keras z, r, h; cuDNN r, z, h
  return g;
}

std::size_t align_up(std::size_t v) { return (v + 255) / 256 * 256; }

// One shape's descriptors and sizes (per thread, device, kind, shape and TF32 setting), and where each gate's
// matrices and biases lie in a weight space (offsets in bytes, found on first use).
struct RnnPlan {
  cudnn::RnnDesc rnn = nullptr;
  cudnn::RnnDataDesc xd = nullptr, yd = nullptr;
  cudnn::TensorDesc hd = nullptr;
  cudnn::DropoutDesc dropout = nullptr;
  std::size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0;
  int32_t* dev_seq_lengths = nullptr;  // batch entries of `steps` on the device (cuDNN reads them asynchronously)
  std::vector<std::ptrdiff_t> w_at, r_at, wb_at, rb_at;  // per Keras gate: input/recurrent matrix and bias offsets
  bool located = false;
};

RnnPlan& plan_for(CudaDevice& dev, const RnnSequenceAttrs& a) {
  if (!accepted(a.kind)) {
    throw InvalidArgumentError("cuDNN computes neither a GRU with reset_after=False nor a sigmoid RNN; run the layer "
                               "on the CPU or let it run its steps");
  }
  const bool tf32 = runtime::DeviceManager::get().tensor_float_32.load(std::memory_order_relaxed);
  std::vector<int64_t> key{dev.ordinal(), a.kind, a.batch, a.steps, a.features, a.units, tf32};
  thread_local std::map<std::vector<int64_t>, RnnPlan> plans;
  auto it = plans.find(key);
  if (it != plans.end()) return it->second;
  for (int64_t v : {a.batch, a.steps, a.features, a.units}) {
    if (v > (int64_t{1} << 30)) {
      throw InvalidArgumentError(fmt::format("cuDNN RNN: batch {}, steps {}, features {}, units {}: too large",
                                             a.batch, a.steps, a.features, a.units));
    }
  }
  dev.activate();
  const auto& api = cudnn::api();
  cudnn::Handle h = cudnn::handle_for(dev);
  RnnPlan p;
  const int n = static_cast<int>(a.batch), t = static_cast<int>(a.steps), f = static_cast<int>(a.features),
            u = static_cast<int>(a.units);
  const int mode = a.kind == RnnSequenceAttrs::kLstm         ? cudnn::kLstm
                   : a.kind == RnnSequenceAttrs::kGru        ? cudnn::kGru
                   : a.kind == RnnSequenceAttrs::kSimpleRelu ? cudnn::kRnnRelu
                                                             : cudnn::kRnnTanh;
  cudnn::check(api.create_dropout(&p.dropout), "cudnnCreateDropoutDescriptor");
  cudnn::check(api.set_dropout(p.dropout, h, 0.0f, nullptr, 0, 0), "cudnnSetDropoutDescriptor");
  cudnn::check(api.create_rnn(&p.rnn), "cudnnCreateRNNDescriptor");
  cudnn::check(api.set_rnn(p.rnn, cudnn::kRnnAlgoStandard, mode, cudnn::kRnnDoubleBias, cudnn::kUnidirectional,
                           cudnn::kLinearInput, cudnn::kDataFloat, cudnn::kDataFloat,
                           tf32 ? cudnn::kDefaultMath : cudnn::kFmaMath, f, u, u, 1, p.dropout,
                           cudnn::kPaddedIoEnabled),
               "cudnnSetRNNDescriptor_v8");
  const std::vector<int> lengths(static_cast<std::size_t>(n), t);
  float fill = 0.0f;
  cudnn::check(api.create_rnn_data(&p.xd), "cudnnCreateRNNDataDescriptor");
  cudnn::check(api.create_rnn_data(&p.yd), "cudnnCreateRNNDataDescriptor");
  cudnn::check(api.set_rnn_data(p.xd, cudnn::kDataFloat, cudnn::kSeqMajorUnpacked, t, n, f, lengths.data(), &fill),
               "cudnnSetRNNDataDescriptor (x)");
  cudnn::check(api.set_rnn_data(p.yd, cudnn::kDataFloat, cudnn::kSeqMajorUnpacked, t, n, u, lengths.data(), &fill),
               "cudnnSetRNNDataDescriptor (y)");
  cudnn::check(api.create_tensor(&p.hd), "cudnnCreateTensorDescriptor");
  const int hdims[3] = {1, n, u}, hstrides[3] = {n * u, u, 1};
  cudnn::check(api.set_tensor(p.hd, cudnn::kDataFloat, 3, hdims, hstrides), "cudnnSetTensorNdDescriptor (states)");
  cudnn::check(api.rnn_weight_space_size(h, p.rnn, &p.weight_bytes), "cudnnGetRNNWeightSpaceSize");
  cudnn::check(api.rnn_temp_space_sizes(h, p.rnn, cudnn::kFwdModeTraining, p.xd, &p.work_bytes, &p.reserve_bytes),
               "cudnnGetRNNTempSpaceSizes");
  check(cudaMalloc(reinterpret_cast<void**>(&p.dev_seq_lengths), lengths.size() * sizeof(int32_t)),
        "cudaMalloc (RNN sequence lengths)");
  check(cudaMemcpy(p.dev_seq_lengths, lengths.data(), lengths.size() * sizeof(int32_t), cudaMemcpyHostToDevice),
        "cudaMemcpy (RNN sequence lengths)");
  return plans.emplace(std::move(key), std::move(p)).first->second;
}

// Where each gate's matrices and biases lie in a weight space starting at `base` (once per plan), each matrix
// checked to be (units, inputs) and each bias (units).
void locate(CudaDevice& dev, RnnPlan& p, const RnnSequenceAttrs& a, void* base) {
  if (p.located) return;
  const auto& api = cudnn::api();
  cudnn::Handle h = cudnn::handle_for(dev);
  cudnn::TensorDesc md = nullptr, bd = nullptr;
  cudnn::check(api.create_tensor(&md), "cudnnCreateTensorDescriptor");
  cudnn::check(api.create_tensor(&bd), "cudnnCreateTensorDescriptor");
  const int g = gates_of(a.kind);
  auto find = [&](int id, int64_t cols, std::ptrdiff_t* m_at, std::ptrdiff_t* b_at) {
    void* m = nullptr;
    void* b = nullptr;
    cudnn::check(api.rnn_weight_params(h, p.rnn, 0, p.weight_bytes, base, id, md, &m, bd, &b),
                 "cudnnGetRNNWeightParams");
    int type = 0, nd = 0, dims[8] = {}, strides[8] = {};
    cudnn::check(api.get_tensor(md, 8, &type, &nd, dims, strides), "cudnnGetTensorNdDescriptor (matrix)");
    const bool matrix_ok = m && nd == 3 && dims[0] == 1 && dims[1] == a.units && dims[2] == cols && strides[2] == 1 &&
                           strides[1] == cols;
    int btype = 0, bnd = 0, bdims[8] = {}, bstrides[8] = {};
    cudnn::check(api.get_tensor(bd, 8, &btype, &bnd, bdims, bstrides), "cudnnGetTensorNdDescriptor (bias)");
    const int64_t bias_elems = bnd > 0 ? int64_t{bdims[0]} * bdims[1] * (bnd > 2 ? bdims[2] : 1) : 0;
    if (!matrix_ok || !b || bias_elems != a.units) {
      throw InternalError(fmt::format(
          "cuDNN's RNN weight space is not laid out as expected: matrix {} is {}-d ({}, {}, {}) with strides ({}, {}), "
          "its bias has {} elements; expected (1, {}, {}) row-major and {} (please report this with the cuDNN version)",
          id, nd, dims[0], dims[1], dims[2], strides[1], strides[2], bias_elems, a.units, cols, a.units));
    }
    *m_at = static_cast<char*>(m) - static_cast<char*>(base);
    *b_at = static_cast<char*>(b) - static_cast<char*>(base);
  };
  p.w_at.assign(static_cast<std::size_t>(g), 0), p.r_at = p.w_at, p.wb_at = p.w_at, p.rb_at = p.w_at;
  for (int k = 0; k < g; ++k) {
    const int id = cudnn_gate(a.kind, k);
    const auto i = static_cast<std::size_t>(k);
    find(id, a.features, &p.w_at[i], &p.wb_at[i]);
    find(g + id, a.units, &p.r_at[i], &p.rb_at[i]);
  }
  p.located = true;
}

char* at(void* base, std::ptrdiff_t offset) { return static_cast<char*>(base) + offset; }

// Keras's (rows, gates·units) kernel to (gates, units, rows): each gate's matrix as cuDNN holds it.
Tensor gate_matrices(const Launch& l, const Tensor& w, int g, int64_t u, runtime::Device* device) {
  const int64_t rows = w.shape()[0];
  const int64_t in_dims[3] = {rows, g, u};
  const int perm[3] = {1, 2, 0};
  Tensor t = Tensor::empty(Shape({g, u, rows}), DType::float32, device);
  launch_transpose(w.raw_data(), t.raw_data(), 3, in_dims, perm, w.num_elements(), 4, l.s());
  return t;
}

// The op's weights into the weight space at `ws` (zeroed first: the recurrent biases other than the GRU's candidate's
// stay zero). LSTM and simple RNN bias: (gates·units); GRU: (4·units) as the op packs it (z and r summed, the
// inputs' candidate, the recurrent candidate).
void pack_weights(const Launch& l, const RnnPlan& p, const RnnSequenceAttrs& a, const Tensor& kernel,
                  const Tensor& recurrent, const Tensor& bias, void* ws, runtime::Device* device) {
  const int g = gates_of(a.kind);
  const int64_t u = a.units;
  check(cudaMemsetAsync(ws, 0, p.weight_bytes, l.s()), "cudaMemsetAsync (RNN weights)");
  const Tensor wt = gate_matrices(l, kernel, g, u, device), rt = gate_matrices(l, recurrent, g, u, device);
  const std::size_t wm = static_cast<std::size_t>(u * a.features) * 4, rm = static_cast<std::size_t>(u * u) * 4,
                    ub = static_cast<std::size_t>(u) * 4;
  for (int k = 0; k < g; ++k) {
    const auto i = static_cast<std::size_t>(k);
    check(cudaMemcpyAsync(at(ws, p.w_at[i]), static_cast<const char*>(wt.raw_data()) + i * wm, wm,
                          cudaMemcpyDeviceToDevice, l.s()), "cudaMemcpyAsync (RNN kernel)");
    check(cudaMemcpyAsync(at(ws, p.r_at[i]), static_cast<const char*>(rt.raw_data()) + i * rm, rm,
                          cudaMemcpyDeviceToDevice, l.s()), "cudaMemcpyAsync (RNN recurrent kernel)");
    check(cudaMemcpyAsync(at(ws, p.wb_at[i]), static_cast<const char*>(bias.raw_data()) + i * ub, ub,
                          cudaMemcpyDeviceToDevice, l.s()), "cudaMemcpyAsync (RNN bias)");
  }
  if (a.kind == RnnSequenceAttrs::kGru) {
    check(cudaMemcpyAsync(at(ws, p.rb_at[2]), static_cast<const char*>(bias.raw_data()) + 3 * ub, ub,
                          cudaMemcpyDeviceToDevice, l.s()), "cudaMemcpyAsync (GRU recurrent bias)");
  }
  l.done("RNN weight packing");
}

// The weight gradients in the weight space at `dws` back into Keras's layouts.
void unpack_gradients(const Launch& l, const RnnPlan& p, const RnnSequenceAttrs& a, void* dws, Tensor& dkernel,
                      Tensor& drecurrent, Tensor& dbias, runtime::Device* device) {
  const int g = gates_of(a.kind);
  const int64_t u = a.units;
  const std::size_t wm = static_cast<std::size_t>(u * a.features) * 4, rm = static_cast<std::size_t>(u * u) * 4,
                    ub = static_cast<std::size_t>(u) * 4;
  Tensor wt = Tensor::empty(Shape({g, u, a.features}), DType::float32, device);
  Tensor rt = Tensor::empty(Shape({g, u, u}), DType::float32, device);
  for (int k = 0; k < g; ++k) {
    const auto i = static_cast<std::size_t>(k);
    check(cudaMemcpyAsync(static_cast<char*>(wt.raw_data()) + i * wm, at(dws, p.w_at[i]), wm,
                          cudaMemcpyDeviceToDevice, l.s()), "cudaMemcpyAsync (RNN kernel gradient)");
    check(cudaMemcpyAsync(static_cast<char*>(rt.raw_data()) + i * rm, at(dws, p.r_at[i]), rm,
                          cudaMemcpyDeviceToDevice, l.s()), "cudaMemcpyAsync (RNN recurrent kernel gradient)");
    check(cudaMemcpyAsync(static_cast<char*>(dbias.raw_data()) + i * ub, at(dws, p.wb_at[i]), ub,
                          cudaMemcpyDeviceToDevice, l.s()), "cudaMemcpyAsync (RNN bias gradient)");
  }
  if (a.kind == RnnSequenceAttrs::kGru) {
    check(cudaMemcpyAsync(static_cast<char*>(dbias.raw_data()) + 3 * ub, at(dws, p.rb_at[2]), ub,
                          cudaMemcpyDeviceToDevice, l.s()), "cudaMemcpyAsync (GRU recurrent bias gradient)");
  }
  const int perm[3] = {2, 0, 1};  // (gates, units, rows) to (rows, gates, units)
  const int64_t w_dims[3] = {g, u, a.features}, r_dims[3] = {g, u, u};
  launch_transpose(wt.raw_data(), dkernel.raw_data(), 3, w_dims, perm, wt.num_elements(), 4, l.s());
  launch_transpose(rt.raw_data(), drecurrent.raw_data(), 3, r_dims, perm, rt.num_elements(), 4, l.s());
  l.done("RNN weight gradients");
}

// The op's workspace: cuDNN's reserve space, then the packed weights.
int64_t workspace(const void* attrs, runtime::Device& device) {
  const RnnPlan& p = plan_for(cuda_device(device), *static_cast<const RnnSequenceAttrs*>(attrs));
  return static_cast<int64_t>(align_up(p.reserve_bytes) + p.weight_bytes);
}

// What both kernels start with: the device, the attributes and their plan, and the op's workspace tensor (input
// or output `workspace`) as cuDNN's reserve space and the packed weights after it (located in the plan), with
// cuDNN's scratch for the call.
struct RnnCall {
  Launch l;
  const RnnSequenceAttrs& a;
  bool lstm;
  RnnPlan& p;
  void* reserve;
  void* weights;
  Tensor work;
  RnnCall(const KernelContext& ctx, const Tensor& workspace)
      : l(ctx), a(ctx.attr<RnnSequenceAttrs>()), lstm(a.kind == RnnSequenceAttrs::kLstm), p(plan_for(l.dev, a)),
        reserve(workspace.raw_data()), weights(static_cast<char*>(reserve) + align_up(p.reserve_bytes)) {
    locate(l.dev, p, a, weights);
    work = Tensor::empty(Shape({static_cast<int64_t>(std::max<std::size_t>(p.work_bytes, 4) / 4)}), DType::float32,
                         ctx.device);
  }
};

// LSTM inputs: x, h0, c0, kernel, recurrent, bias; outputs: y, hT, cT, workspace. GRU and simple RNN: the same
// without c0 and cT.
void sequence_kernel(const KernelContext& ctx) {
  const bool lstm = ctx.attr<RnnSequenceAttrs>().kind == RnnSequenceAttrs::kLstm;
  const std::size_t k = lstm ? 1 : 0;
  RnnCall c(ctx, ctx.outputs[2 + k]);
  const auto& in = ctx.inputs;
  const auto& out = ctx.outputs;
  pack_weights(c.l, c.p, c.a, in[2 + k], in[3 + k], in[4 + k], c.weights, ctx.device);
  cudnn::check(cudnn::api().rnn_forward(cudnn::handle_for(c.l.dev), c.p.rnn, cudnn::kFwdModeTraining,
                                        c.p.dev_seq_lengths, c.p.xd, in[0].raw_data(), c.p.yd, out[0].raw_data(),
                                        c.p.hd, in[1].raw_data(), out[1].raw_data(), c.p.hd,
                                        lstm ? in[2].raw_data() : nullptr, lstm ? out[2].raw_data() : nullptr,
                                        c.p.weight_bytes, c.weights, c.p.work_bytes, c.work.raw_data(),
                                        c.p.reserve_bytes, c.reserve),
               "cudnnRNNForward");
  c.l.done("cudnnRNNForward");
}

// LSTM inputs: dy, dhT, dcT, x, h0, c0, kernel, recurrent, bias, y, hT, cT, workspace; outputs: dx, dh0, dc0,
// dkernel, drecurrent, dbias. GRU and simple RNN: the same without dcT, c0, cT and dc0.
void sequence_grad_kernel(const KernelContext& ctx) {
  const bool lstm = ctx.attr<RnnSequenceAttrs>().kind == RnnSequenceAttrs::kLstm;
  const std::size_t x = lstm ? 3 : 2, w = lstm ? 6 : 4, y = w + 3, wsi = lstm ? 12 : 9, dw = lstm ? 3 : 2;
  RnnCall c(ctx, ctx.inputs[wsi]);
  const auto& in = ctx.inputs;
  const auto& out = ctx.outputs;
  const auto& l = c.l;
  const auto& a = c.a;
  const auto& p = c.p;
  const auto& api = cudnn::api();
  cudnn::Handle h = cudnn::handle_for(l.dev);
  // cuDNN's backward-data call writes the reserve space (what the weights' call then reads), but the reserve space
  // is the forward op's output: a second gradient of the same forward (a persistent tape) must find it as the
  // forward left it. So both calls work on a copy. (On the first GPU, the initial states' gradients taken after
  // the weights' from one persistent tape came out wrong.)
  Tensor reserve;
  if (p.reserve_bytes) {
    reserve = Tensor::empty(Shape({static_cast<int64_t>((p.reserve_bytes + 3) / 4)}), DType::float32, ctx.device);
    l.dev.copy_on_device(reserve.raw_data(), c.reserve, p.reserve_bytes);
  }
  void* const reserve_space = p.reserve_bytes ? reserve.raw_data() : c.reserve;
  // cuDNN's backward-data call first (it leaves in the reserve space what the weights' call reads).
  cudnn::check(api.rnn_backward_data(h, p.rnn, p.dev_seq_lengths, p.yd, in[y].raw_data(), in[0].raw_data(), p.xd,
                                     out[0].raw_data(), p.hd, in[x + 1].raw_data(), in[1].raw_data(),
                                     out[1].raw_data(), p.hd, lstm ? in[5].raw_data() : nullptr,
                                     lstm ? in[2].raw_data() : nullptr, lstm ? out[2].raw_data() : nullptr,
                                     p.weight_bytes, c.weights, p.work_bytes, c.work.raw_data(), p.reserve_bytes,
                                     reserve_space),
               "cudnnRNNBackwardData_v8");
  Tensor dws = Tensor::empty(Shape({static_cast<int64_t>((p.weight_bytes + 3) / 4)}), DType::float32, ctx.device);
  check(cudaMemsetAsync(dws.raw_data(), 0, p.weight_bytes, l.s()), "cudaMemsetAsync (RNN weight gradients)");
  cudnn::check(api.rnn_backward_weights(h, p.rnn, cudnn::kWgradModeAdd, p.dev_seq_lengths, p.xd, in[x].raw_data(),
                                        p.hd, in[x + 1].raw_data(), p.yd, in[y].raw_data(), p.weight_bytes,
                                        dws.raw_data(), p.work_bytes, c.work.raw_data(), p.reserve_bytes,
                                        reserve_space),
               "cudnnRNNBackwardWeights_v8");
  unpack_gradients(l, p, a, dws.raw_data(), out[dw], out[dw + 1], out[dw + 2], ctx.device);
}

}  // namespace

void register_cuda_rnn_kernels() {
  using ops::OpId;
  for (auto [op, grad] : {std::pair{OpId::LstmSequence, OpId::LstmSequenceGrad},
                          std::pair{OpId::GruSequence, OpId::GruSequenceGrad},
                          std::pair{OpId::RnnSequence, OpId::RnnSequenceGrad}}) {
    ops::register_kernel(op, DeviceType::GPU, sequence_kernel);
    ops::register_kernel(grad, DeviceType::GPU, sequence_grad_kernel);
    ops::register_workspace(op, DeviceType::GPU, workspace);
    ops::register_accepts(op, DeviceType::GPU, accepts);
    ops::register_accepts(grad, DeviceType::GPU, accepts);
  }
}

}  // namespace osprey::cuda
