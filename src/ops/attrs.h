// Attribute structs passed from op wrappers to kernels.
#pragma once

#include "osprey/ops.h"

namespace osprey::ops {

struct CastAttrs { DType to; };
struct MatMulAttrs { bool transpose_a, transpose_b; };
struct DenseAttrs { Activation activation; bool has_bias; bool keep_preactivation; };
struct DenseGradAttrs { Activation activation; bool need_dx; bool has_bias; };
struct ActivationAttrs { Activation activation; };
/// round: halves to even (TensorFlow's Round, NumPy's).
enum class UnaryKind { neg, exp, log, sqrt, square, abs, sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, floor, ceil, round, log1p, expm1, erf };
struct UnaryAttrs { UnaryKind kind; };
enum class BinaryKind { add, sub, mul, div, maximum, greater_equal /* 1.0 where a >= b, else 0.0 */, minimum, pow,
                        nextafter /* the next representable value after a towards b */ };
/// How the operands of an element-wise op map onto its output: the fast patterns, or `general` (NumPy
/// broadcasting through a StridedGeometry).
enum class Broadcast { same, scalar_b, row_b, scalar_a, general };
/// Up to three operands read through one output's index space: the output's dims (adjacent axes merged where every
/// operand allows it) and each operand's element stride per axis (0 where it is broadcast).
inline constexpr int kMaxBroadcastRank = 8;
struct StridedGeometry {
  int rank;
  int64_t dims[kMaxBroadcastRank];
  int64_t strides[3][kMaxBroadcastRank];
};
struct BinaryAttrs { BinaryKind kind; Broadcast broadcast; StridedGeometry geometry; };
/// Compare: bool output; the logical kinds read their operands as bool (nonzero is true).
struct CompareAttrs { CompareKind kind; StridedGeometry geometry; };
/// IntegerBinary: int32/int64 operands of one dtype, the output in it.
struct IntegerBinaryAttrs { IntegerKind kind; StridedGeometry geometry; };
/// The linear-algebra kernels on float32 batches of matrices: `batch` matrices of m x n (square ones: m = n), and
/// for TriangularSolve right-hand sides of n x k. TriangularSolve reads only the `lower` (else upper) triangle of
/// a, solves with its transpose when `adjoint`, and takes its diagonal as ones when `unit_diagonal`. Cholesky reads
/// only the lower triangle; SelfAdjointEig too (the matrix it decomposes is that triangle mirrored).
struct LinalgAttrs { int64_t batch, m, n, k; bool lower, adjoint, unit_diagonal; };
/// ReduceAxis over the middle axis of (outer, r, inner) to (outer, inner).
struct ReduceAxisAttrs { ReduceOp op; int64_t outer, r, inner; };
/// Cumulative sum or product along the middle axis of (outer, r, inner).
struct CumulativeAttrs { bool prod, exclusive, reverse; int64_t outer, r, inner; };
/// TopK over the last axis of (rows, r): the k largest (or smallest) values in order, ties by lower index first,
/// and their int32 indices.
struct TopKAttrs { int64_t rows, r, k; bool largest; };
/// Discrete Fourier transforms of the rows of (rows, n) complex values, each a real and an imaginary tensor:
/// forward X_k = Σ_t x_t·e^(-2πi·tk/n); inverse x_t = (1/n)·Σ_k X_k·e^(2πi·tk/n); real_forward takes real rows
/// (rows, n) and gives the bins k < n/2 + 1; real_inverse takes those bins (rows, n/2 + 1) and gives the real rows
/// (rows, n) of the Hermitian spectrum they start (the imaginary parts of the zero and, for even n, the n/2 bins
/// ignored), as tf.signal's fft, ifft, rfft and irfft.
enum class FftKind : int32_t { forward, inverse, real_forward, real_inverse };
struct FftAttrs { FftKind kind; int64_t rows, n; };
/// CtcLoss on (batch, frames, classes) logits and (batch, max_label) int32 labels; the blank class in [0, classes);
/// with_grad: the second output, d loss / d logits, is computed (a tape is watching).
struct CtcLossAttrs { int64_t batch, frames, classes, max_label, blank; bool with_grad; };
/// CtcGreedyDecode / CtcBeamSearch on (batch, frames, classes) logits.
struct CtcDecodeAttrs { int64_t batch, frames, classes, blank; bool merge_repeated; int64_t beam_width, top_paths; };
enum class ReduceKind { sum_all, mean_all, sum_axis0, sum_axis1 };
struct ReduceAttrs { ReduceKind kind; };
enum class LossKind { binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy,
                      mean_squared_error, mean_absolute_error };
struct LossAttrs { LossKind kind; double label_smoothing; };
struct AccuracyAttrs { AccuracyKind kind; double threshold; };
struct SgdAttrs { float learning_rate, momentum; bool nesterov; };
struct AdamAttrs { float alpha, beta_1, beta_2, epsilon; };
/// An axis seen as blocks: `outer` blocks (the product of the dimensions before it), each of `inner` elements per
/// index along it (the product of the dimensions after it). Slice reads indices [begin, begin + output's size).
struct AxisBlocks { int64_t outer, inner, begin; };
/// Output axis i is input axis perm[i]; `in_dims` the input's shape (rank <= kMaxTransposeRank).
inline constexpr int kMaxTransposeRank = 8;
struct TransposeAttrs { int rank; int64_t in_dims[kMaxTransposeRank]; int perm[kMaxTransposeRank]; };
/// A convolution or pooling over up to kMaxConvRank spatial axes of channels-last tensors.
inline constexpr int kMaxConvRank = 3;
struct ConvAttrs {
  int rank;
  int64_t strides[kMaxConvRank], dilation[kMaxConvRank], pad_before[kMaxConvRank], pad_after[kMaxConvRank];
  int64_t groups;
  bool has_bias;
  /// Conv only: applied to the output in the same kernel (one whose gradient needs only the output; linear in the
  /// backprop ops).
  Activation activation;
};
struct PoolAttrs {
  int rank;
  PoolKind kind;
  int64_t window[kMaxConvRank], strides[kMaxConvRank], pad_before[kMaxConvRank], pad_after[kMaxConvRank];
};
/// MaskedSoftmax(Grad): x's dims and the mask's stride along each (0 where it broadcasts; unused without a mask).
inline constexpr int kMaxMaskRank = 8;
struct MaskedSoftmaxAttrs {
  int rank;
  int64_t dims[kMaxMaskRank], mask_strides[kMaxMaskRank];
  bool has_mask, causal, zero_masked;
  float masked_value;
};
struct LayerNormAttrs { float epsilon; bool has_gamma, has_beta; };
struct ResizeAttrs { ResizeMethod method; };
/// Resample along one axis (ops/resample_tables.h): the axis and the table's span.
struct ResampleAttrs { int axis; int64_t span; };
struct TransformAttrs { ResizeMethod interpolation; FillMode fill_mode; float fill_value; };
struct RmspropAttrs { float learning_rate, rho, momentum, epsilon; bool centered; };
/// An LSTM, a GRU or a simple RNN (by its activation) over a whole sequence: batch, steps, input features, units.
struct RnnSequenceAttrs {
  static constexpr int64_t kLstm = 0, kGru = 1, kSimpleTanh = 2, kSimpleRelu = 3, kSimpleSigmoid = 4,
                           kGruResetBefore = 5;  ///< kGru: Keras's reset_after GRU; kGruResetBefore: reset_after=False
  int64_t batch, steps, features, units, kind;
  /// 1: x, y, h0 and hT in bfloat16 (the computation's products in bfloat16, accumulated in float32); an LSTM's
  /// carry, the weights, the bias and every gradient stay float32.
  int64_t bfloat16 = 0;
};

/// True when the activation's gradient needs the pre-activation value (it cannot be derived from the output).
inline bool grad_needs_preactivation(Activation a) {
  switch (a) {
    case Activation::gelu:
    case Activation::softplus:
    case Activation::softsign:
    case Activation::silu:
      return true;
    default:
      return false;
  }
}

/// True when an op can apply the activation to its own output and still differentiate it (from that output alone):
/// not softmax (rows), not those that need the pre-activation.
inline bool fusable_after_op(Activation a) { return a != Activation::softmax && !grad_needs_preactivation(a); }

/// The gradient of an activation fused into an op (Dense's, a convolution's): dz from dy, the op's output y and,
/// where grad_needs_preactivation, its input z (undefined otherwise). dy itself for linear.
Tensor activation_grad(const Tensor& dy, const Tensor& y, const Tensor& z, Activation act);

}  // namespace osprey::ops
