// The op table's contract: op ids, the kernel signature, and the single dispatch point every op goes through.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "osprey/errors.h"
#include "osprey/tensor.h"
#include "runtime/device_manager.h"

namespace osprey::ops {

enum class OpId : int {
  Cast,
  MatMul,          // attrs MatMulAttrs
  FusedMatMul,     // x, kernel, [bias] -> y, [z]: matmul + bias + activation (attrs DenseAttrs)
  BiasAddGrad,     // dz -> column sums
  Activation,      // attrs ActivationAttrs
  ActivationGrad,  // dy, y, [z] -> dz (attrs ActivationAttrs)
  Unary,           // attrs UnaryAttrs
  Binary,          // attrs BinaryAttrs; NumPy broadcasting (fast patterns: same shape, a scalar, a row of b)
  Reduce,          // attrs ReduceAttrs
  GatherRows,      // x, indices(int64) -> rows
  Loss,            // y_true, y_pred -> per-sample values (attrs LossAttrs)
  LossGrad,        // y_true, y_pred, upstream per-sample grads -> d y_pred
  AccuracyCount,   // y_true, y_pred -> scalar count of correct samples (attrs AccuracyAttrs)
  ApplySgd,        // var, grad, [momentum] updated in place
  ApplyAdam,       // var, m, v, grad, [vhat]
  ApplyRmsprop,    // var, v, grad, [mom], [mg]
  ApplyAdamMany,   // (var, m, v, grad, [vhat], [grad2]) per variable, attrs AdamAttrs
  DenseGrad,       // dy, y, [z], x, w -> [dx], dw, [db], [dz]: a Dense layer's whole backward (attrs DenseGradAttrs)
  LossMean,        // y_true, y_pred -> the mean of the per-sample values (Loss then Reduce mean_all; attrs LossAttrs)
  LossMeanGrad,    // y_true, y_pred, upstream scalar -> d y_pred of that mean (attrs LossAttrs)
  Concat,          // x0, x1, ... -> their concatenation along one axis (attrs AxisBlocks)
  Slice,           // x -> elements [begin, begin + size) along one axis (attrs AxisBlocks)
  Transpose,       // x -> its axes permuted (attrs TransposeAttrs)
  RandomUniformState,  // state (int64: seed, stream, block) -> uniform float32 in [0, 1); advances the block
  Conv,            // x, kernel, [bias] -> y (attrs ConvAttrs; channels-last, kernel (k..., Cin/g, Cout))
  ConvBackpropInput,   // dy, kernel -> dx (the output's shape says the input's)
  ConvBackpropFilter,  // x, dy -> dkernel, [dbias]
  Pool,            // x -> y (attrs PoolAttrs)
  PoolGrad,        // x, dy -> dx
  Resize,          // x (N, H, W, C) -> y (N, h, w, C) (attrs ResizeAttrs)
  ResizeGrad,      // dy -> dx (the output's shape says the input's)
  Resample,        // x, starts (int64, out), weights (float32, out * span) -> x with axis resampled (attrs
                   // ResampleAttrs; ops/resample_tables.h)
  AffineTransform, // images (N, H, W, C), transforms (N or 1, 8) -> images (attrs TransformAttrs)
  ScatterAddRows,  // updates (N, ...), indices(int64, N) -> (rows, ...): row indices[i] += updates[i] (gather's grad)
  MaskedSoftmax,   // x, [mask] -> softmax over the last axis with left-out positions (attrs MaskedSoftmaxAttrs)
  MaskedSoftmaxGrad,  // dy, y, [mask] -> dx (attrs MaskedSoftmaxAttrs)
  LayerNorm,       // x (rows, d), [gamma], [beta] -> y, mean (rows), rstd (rows) (attrs LayerNormAttrs)
  LayerNormGrad,   // dy, x, [gamma], mean, rstd -> dx, dy ⊙ x̂ (the latter's column sums are gamma's gradient)
  LstmCell,        // z (n, 4u), c_prev (n, u) -> h, c (n, u)
  LstmCellGrad,    // dh, dc, z, c_prev, c -> dz (n, 4u), dc_prev (n, u)
  LstmSequence,    // x (t, n, f), h0, c0 (n, u), kernel (f, 4u), recurrent (u, 4u), bias (4u) -> y (t, n, u), hT,
                   // cT (n, u), workspace (attrs RnnSequenceAttrs; time-major x and y; with attrs.bfloat16 x, h0, y
                   // and hT bfloat16, the gradients of each sequence op float32)
  LstmSequenceGrad,  // dy, dhT, dcT, x, h0, c0, kernel, recurrent, bias, y, hT, cT, workspace -> dx, dh0, dc0,
                     // dkernel, drecurrent, dbias
  GruSequence,     // x (t, n, f), h0 (n, u), kernel (f, 3u), recurrent (u, 3u), bias (4u: z, r, h, recurrent h;
                   // reset_after=False: 3u) -> y (t, n, u), hT (n, u), workspace (attrs RnnSequenceAttrs)
  GruSequenceGrad,  // dy, dhT, x, h0, kernel, recurrent, bias, y, hT, workspace -> dx, dh0, dkernel, drecurrent, dbias
  RnnSequence,     // x (t, n, f), h0 (n, u), kernel (f, u), recurrent (u, u), bias (u) -> y (t, n, u), hT (n, u),
                   // workspace (attrs RnnSequenceAttrs: its kind names the activation)
  RnnSequenceGrad,  // dy, dhT, x, h0, kernel, recurrent, bias, y, hT, workspace -> dx, dh0, dkernel, drecurrent, dbias
  GruCell,         // x (n, 3u), r (n, 3u), h_prev (n, u) -> h (n, u)
  GruCellGrad,     // dh, x, r, h_prev -> dx (n, 3u), dr (n, 3u), dh_prev (n, u)
  BroadcastTo,     // x -> x repeated along its broadcast axes (attrs StridedGeometry, one operand)
  Compare,         // a, b -> bool (attrs CompareAttrs)
  Select,          // condition (bool), x, y -> x where condition else y (attrs StridedGeometry, three operands)
  ReduceAxis,      // x (outer, r, inner) -> (outer, inner) (attrs ReduceAxisAttrs)
  Cumulative,      // x -> running sums or products along one axis (attrs CumulativeAttrs)
  TopK,            // x (rows, r) -> values (rows, k), int32 indices (rows, k) (attrs TopKAttrs)
  IntegerBinary,   // a, b (int32/int64) -> bitwise, shift, gcd or lcm (attrs IntegerBinaryAttrs)
  LuFactor,        // a (batch, n, n) -> lu (batch, n, n), perm (batch, n) int32 (attrs LinalgAttrs)
  Cholesky,        // a (batch, n, n) -> lower factor l (batch, n, n) (attrs LinalgAttrs)
  TriangularSolve,  // a (batch, n, n), b (batch, n, k) -> x (batch, n, k) (attrs LinalgAttrs)
  SelfAdjointEig,  // a (batch, n, n) -> eigenvalues (batch, n) ascending, eigenvectors (batch, n, n) (LinalgAttrs)
  Svd,             // a (batch, m, n) -> s (batch, p), u (batch, m, p), v (batch, n, p); p = min(m, n) (LinalgAttrs)
  Qr,              // a (batch, m, n) -> q (batch, m, p), r (batch, p, n); complete (k = 1): p = m, else min(m, n)
  Fft,             // re, [im] -> re, [im]: one-dimensional DFTs of rows (attrs FftAttrs: which inputs and outputs)
  CtcLoss,         // labels (b, L) int32, logits (b, T, C), label_length (b) int32, logit_length (b) int32 -> loss (b),
                   // [d loss / d logits (b, T, C)] (attrs CtcLossAttrs; ops/ctc_core.h)
  CtcGreedyDecode,  // logits (b, T, C), lengths (b) int32 -> decoded (b, T) int32 (-1 after the end), scores (b, 1)
  CtcBeamSearch,   // logits (b, T, C), lengths (b) int32 -> decoded (top_paths, b, T) int32, scores (b, top_paths)
  kCount
};

/// What a kernel sees: inputs already on its device, outputs allocated there, and the op's attributes.
struct KernelContext {
  std::span<const Tensor> inputs;
  std::span<Tensor> outputs;
  const void* attrs;
  runtime::Device* device;

  template <typename A>
  const A& attr() const {
    return *static_cast<const A*>(attrs);
  }
};
using KernelFn = void (*)(const KernelContext&);

/// Which half-precision dtypes a kernel takes as they are (a bit set). run() gives every other kernel float32
/// copies of float16/bfloat16 inputs and outputs (cast in, the float32 kernel, cast out: recorded steps replay the
/// three), so every op takes half tensors and computes them in float32 unless its kernel says otherwise.
enum HalfTypes : uint8_t { kNoHalf = 0, kFloat16 = 1, kBFloat16 = 2, kAnyHalf = 3 };

/// Puts a kernel into the table (called by platforms' register_kernels()).
void register_kernel(OpId op, runtime::DeviceType type, KernelFn kernel, HalfTypes half = kNoHalf);
/// The half dtypes `type`'s kernel for `op` takes as they are (what it was registered with).
HalfTypes half_types(OpId op, runtime::DeviceType type);

/// Whether `type`'s backend has a kernel for `op`.
bool has_kernel(OpId op, runtime::DeviceType type);

/// How many bytes of scratch an op's forward kernel keeps for its backward one (oneDNN's RNN workspace, cuDNN's
/// reserve space), from the op's attributes and the device it runs on: registered by a backend whose kernel needs
/// it; the op gives the kernel an output of that size.
using WorkspaceFn = int64_t (*)(const void* attrs, runtime::Device& device);
void register_workspace(OpId op, runtime::DeviceType type, WorkspaceFn fn);
/// The registered size, or 0.
int64_t workspace_bytes(OpId op, runtime::Device& device, const void* attrs);

/// Whether a backend's kernel computes an op for these attributes (cuDNN has no GRU with the reset gate before its
/// product, no sigmoid RNN): registered by a backend whose kernel takes only some; callers that can compute the op
/// another way ask first (kernel_accepts), the kernel itself still refuses the others.
using AcceptsFn = bool (*)(const void* attrs);
void register_accepts(OpId op, runtime::DeviceType type, AcceptsFn fn);
/// has_kernel, and the registered predicate (true where none is).
bool kernel_accepts(OpId op, runtime::DeviceType type, const void* attrs);

/// The dispatch point: picks the device (scope, else the inputs' device, else the default; CPU fallback under
/// soft placement when the device has no kernel), copies inputs there, and logs the placement when enabled.
/// `inputs` are replaced by their on-device copies. Returns the device; run() then executes the kernel.
/// With `pinned` the op runs where inputs[0] lives (ops that update a variable: variables stay where they were
/// created, whatever the scope says).
runtime::Device& place(OpId op, const char* op_name, std::span<Tensor> inputs, bool pinned = false);
/// Runs the op's kernel on `device` (the one place() returned). `attrs_size` lets a step recording keep a copy.
void run(OpId op, runtime::Device& device, std::span<const Tensor> inputs, std::span<Tensor> outputs,
         const void* attrs, std::size_t attrs_size);
template <typename A>
void run(OpId op, runtime::Device& device, std::span<const Tensor> inputs, std::span<Tensor> outputs,
         const A* attrs) {
  run(op, device, inputs, outputs, attrs, sizeof(A));
}
inline void run(OpId op, runtime::Device& device, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                std::nullptr_t) {
  run(op, device, inputs, outputs, nullptr, 0);
}

/// The kernel launches of a piece of work (a training step's forward and backward pass), kept with their
/// tensors and attributes so they can run again on the same buffers without dispatch, tape or allocation.
/// Only top-level launches are kept (ops a kernel runs internally are run again by that kernel).
class StepRecording {
 public:
  struct Launch {
    KernelFn fn;
    runtime::Device* device;
    std::vector<Tensor> inputs, outputs;
    std::vector<unsigned char> attrs;
  };
  StepRecording();
  ~StepRecording();
  StepRecording(StepRecording&&) noexcept;
  StepRecording& operator=(StepRecording&&) noexcept;

  /// Runs every recorded launch again, in order. When they all run on one device whose platform captures graphs
  /// (CUDA), the first replay captures them as one graph and every replay launches that graph.
  void replay();
  std::size_t size() const { return launches_.size(); }
  void clear();
  void add(Launch launch);

 private:
  static void run_launches(std::span<const Launch> launches);

  std::vector<Launch> launches_;
  std::unique_ptr<runtime::DeviceGraph> graph_;
  bool graph_tried_ = false;
};

/// While alive, kernel launches on this thread are recorded into `recording` (they still run).
class RecordingScope {
 public:
  explicit RecordingScope(StepRecording& recording);
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

 private:
  StepRecording* previous_;
};

/// Kernels run through run() on this thread so far (a replayed step runs its kernels without it; tests compare).
uint64_t kernels_dispatched_on_this_thread();

/// Errors that kernels of every backend raise with the same text (thrown by the kernel that found them).
InvalidArgumentError index_out_of_range(int64_t position, int64_t index, int64_t rows);
InvalidArgumentError sparse_label_out_of_range(float label, int64_t classes);
/// A CTC op's bad sequence: `problem` is a ctc_core::Problem (1 label_length, 2 logit_length/sequence_lengths, 3 a
/// label outside the classes, 4 a label that is the blank), for sample `sample`, label position `where`, the value.
InvalidArgumentError ctc_input_error(const char* op, int problem, int64_t sample, int64_t where, int64_t value,
                                     int64_t max_label, int64_t frames, int64_t classes);

}  // namespace osprey::ops
