// Tensor operations. Every op runs through one dispatch point (placement, cross-device copies, placement log)
// and is differentiable under a GradientTape where that makes sense.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "osprey/tensor.h"

namespace osprey::ops {

/// Keras's activations. Names as Keras spells them ("relu", "gelu", "swish" is an alias of "silu").
enum class Activation { linear, relu, sigmoid, tanh, softmax, gelu, elu, selu, softplus, softsign, silu, leaky_relu,
                        exponential };
/// Resolves a Keras activation name (case-sensitive; "" and "linear" are linear). Throws ValueError otherwise.
Activation activation_from_name(const std::string& name);
/// The name Keras serialises ("silu" for swish).
std::string activation_name(Activation activation);

Tensor cast(const Tensor& x, DType dtype);
/// Matrix product of 2-D tensors, optionally transposing either side; of 3-D tensors (batch, rows, cols) with one
/// batch size, a product per batch entry (tf.linalg.matmul's batched form; the transposes apply to the last two
/// axes).
/// The product is float32, or of the operands' dtype for float16/bfloat16 ones (float32 accumulation; bfloat16
/// through oneDNN on the CPU).
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);
/// activation(x @ kernel + bias) as one fused op (and one tape node). `bias` may be undefined.
Tensor dense(const Tensor& x, const Tensor& kernel, const Tensor& bias, Activation activation);
/// An activation applied element-wise (softmax over the last axis).
Tensor activation(const Tensor& x, Activation activation);
inline Tensor relu(const Tensor& x) { return activation(x, Activation::relu); }
inline Tensor sigmoid(const Tensor& x) { return activation(x, Activation::sigmoid); }
inline Tensor tanh(const Tensor& x) { return activation(x, Activation::tanh); }
inline Tensor softmax(const Tensor& x) { return activation(x, Activation::softmax); }

/// How masked_softmax() treats the positions it leaves out.
struct MaskedSoftmaxOptions {
  /// Also leave out column s of row t (t the index along the second-to-last axis) where s > t (Keras's
  /// use_causal_mask: a lower-triangular band, the diagonal kept).
  bool causal = false;
  /// What a left-out logit becomes before the softmax (Keras's Softmax layer: -1e9; its TensorFlow
  /// dot_product_attention: -0.7 * 3.38953e38).
  float masked_value = -1e9f;
  /// Whether left-out positions output 0 afterwards (Keras's Softmax layer: yes, so a row masked entirely gives
  /// zeros; dot_product_attention: no, such a row is uniform).
  bool zero_masked = true;
};
/// Softmax over the last axis of x with positions left out where `mask` (float32 1 kept / 0 left out; compared with
/// 0.5) is 0: `mask` undefined, or of x's rank with every dimension 1 (broadcast) or x's. Left-out positions get no
/// gradient. InvalidArgumentError for a mask that does not broadcast.
Tensor masked_softmax(const Tensor& x, const Tensor& mask, const MaskedSoftmaxOptions& options = {});

/// Layer normalization of each row of a 2-D x (rows, d): (x − mean) / sqrt(var + epsilon) · gamma + beta, the
/// row's mean and (biased) variance, gamma and beta of shape (d,) or undefined (1 and 0). One op forward and one
/// backward (Keras's LayerNormalization over the last axis).
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon);

/// One LSTM step's gates as one op each way (Keras's LSTMCell with its default activations): from the gate inputs
/// z (batch, 4·units) in Keras's order i, f, c, o (the inputs' and the recurrent products, biases added) and the
/// previous carry c_prev (batch, units): c = σ(f)·c_prev + σ(i)·tanh(c̃), h = σ(o)·tanh(c). Returns {h, c}.
std::vector<Tensor> lstm_cell(const Tensor& z, const Tensor& c_prev);
/// A whole LSTM sequence as one op each way (Keras's LSTM with its default activations, no mask, no dropout; on
/// the CPU oneDNN's LSTM primitive): x (batch, steps, features), initial states h0 and c0 (batch, units), Keras's
/// kernel (features, 4·units), recurrent_kernel (units, 4·units) and bias (4·units), gates in Keras's order i, f,
/// c, o. Returns {every step's h (batch, steps, units), the last h, the last c}. InvalidArgumentError for shapes or
/// dtypes that do not fit; NotFoundError where no device has its kernel (see rnn_sequence_runs_here).
/// Mixed bfloat16 (every sequence op): x and h0 in bfloat16 give every h in bfloat16, computed with the weights
/// rounded to bfloat16 and products accumulated in float32 (oneDNN's bfloat16 RNNs on a CPU with AVX-512, float32
/// between casts elsewhere); c0, the weights and the bias stay float32, so do the last c and the weights' gradients.
std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& kernel,
                                  const Tensor& recurrent_kernel, const Tensor& bias);
/// A whole GRU sequence as one op each way (Keras's GRU with its default activations; on the CPU oneDNN's
/// linear-before-reset GRU for reset_after, its GRU for reset_after=False): x (batch, steps, features), h0 (batch,
/// units), Keras's kernel (features, 3·units), recurrent_kernel (units, 3·units) and bias: (2, 3·units) or
/// (6·units) (the inputs' and the recurrent biases) with reset_after, (3·units) without; gates in Keras's order z,
/// r, h. Returns {every step's h (batch, steps, units), the last h}.
std::vector<Tensor> gru_sequence(const Tensor& x, const Tensor& h0, const Tensor& kernel,
                                 const Tensor& recurrent_kernel, const Tensor& bias, bool reset_after = true);
/// A whole simple RNN sequence as one op each way (Keras's SimpleRNN; on the CPU oneDNN's vanilla RNN primitive):
/// h_t = activation(x_t · kernel + h_{t-1} · recurrent_kernel + bias), activation tanh, relu or sigmoid; x (batch,
/// steps, features), h0 (batch, units), kernel (features, units), recurrent_kernel (units, units), bias (units).
/// Returns {every step's h (batch, steps, units), the last h}. InvalidArgumentError for other activations, shapes
/// or dtypes.
std::vector<Tensor> simple_rnn_sequence(const Tensor& x, const Tensor& h0, const Tensor& kernel,
                                        const Tensor& recurrent_kernel, const Tensor& bias, Activation activation);
/// The cell a sequence op computes: lstm_sequence, gru_sequence (reset_after, or not) or simple_rnn_sequence with
/// one of its activations.
enum class SequenceCell { lstm, gru, gru_reset_before, simple_tanh, simple_relu, simple_sigmoid };
/// Whether the sequence op of `cell` has kernels (forward and backward) that compute it where it would run for these
/// inputs (the device scope's type, else every input's device): layers take the step-by-step ops where it has not
/// (the CUDA plug-in, on cuDNN's RNNs, computes neither the GRU with reset_after=False nor the sigmoid RNN).
bool rnn_sequence_runs_here(std::span<const Tensor> inputs, SequenceCell cell);
/// One GRU step's gates as one op each way (Keras's GRUCell with reset_after and its default activations): from
/// the inputs' part x (batch, 3·units) and the recurrent part r (batch, 3·units), both in Keras's order z, r, h and
/// with their biases, and the previous h_prev (batch, units): z = σ(x_z + r_z), ρ = σ(x_r + r_r),
/// h̃ = tanh(x_h + ρ·r_h), h = z·h_prev + (1 − z)·h̃. Returns h.
Tensor gru_cell(const Tensor& x, const Tensor& r, const Tensor& h_prev);

/// Element-wise arithmetic with NumPy broadcasting (shapes aligned at the last axis; each pair of dimensions equal
/// or one of them 1); one dtype on both sides (bool refused: use the logical comparisons). InvalidArgumentError
/// naming both shapes when they do not broadcast.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
/// 1 where a >= b, else 0 (same dtype; no gradient).
Tensor greater_equal(const Tensor& a, const Tensor& b);
/// The same values in another shape (a view), recorded on gradient tapes (Tensor::reshape is not).
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor abs(const Tensor& x);
/// Trigonometric and hyperbolic functions and their inverses, floor, ceil, round (halves to even, as TensorFlow's
/// Round), log(1 + x) and exp(x) - 1, of float tensors, element-wise and differentiable (floor, ceil and round with
/// zero gradients). Outside a function's domain the result is NaN (asin(2)) or infinite (atanh(1)), as in NumPy.
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
/// The error function (its gradient 2/√π·exp(-x²)).
Tensor erf(const Tensor& x);

/// Sum / mean of all elements (a scalar).
Tensor reduce_sum(const Tensor& x);
Tensor reduce_mean(const Tensor& x);
/// Sum / mean over one axis of a 2-D tensor (0 or 1; -1 is the last).
Tensor reduce_sum(const Tensor& x, int axis);
Tensor reduce_mean(const Tensor& x, int axis);

/// The tensors joined along `axis` (negative counts from the end); every other dimension and the dtype must agree
/// (tf.concat).
Tensor concat(const std::vector<Tensor>& xs, int axis = -1);
/// Elements [begin, begin + size) of x along `axis`, every other dimension whole (a copy).
Tensor slice_axis(const Tensor& x, int axis, int64_t begin, int64_t size);
/// x cut along `axis` into consecutive pieces of `sizes` (which add up to that axis), as tf.split; one gradient
/// for all of them (their gradients concatenated), where slice_axis per piece would fill one of x's size each.
std::vector<Tensor> split(const Tensor& x, int axis, const std::vector<int64_t>& sizes);
/// x with its axes permuted: output axis i is x's axis perm[i] (tf.transpose); a copy.
Tensor transpose(const Tensor& x, const std::vector<int>& perm);
/// Copies src's values into dst's buffer in place (same shape and dtype; src is copied to dst's device first), by a
/// kernel: a recorded training step repeats it (a layer's running statistics). Not recorded on tapes.
void assign(const Tensor& dst, const Tensor& src);
/// min(a, b) element-wise (ties give the gradient to a).
Tensor minimum(const Tensor& a, const Tensor& b);
/// a to the power b element-wise (floating point; the gradient in b is 0 where a <= 0, as TensorFlow's).
Tensor pow(const Tensor& a, const Tensor& b);
/// The next representable value after a in the direction of b, element-wise (float32 or float64). Its gradient is
/// TensorFlow's: a's passes through unchanged, b gets zero.
Tensor nextafter(const Tensor& a, const Tensor& b);

/// The shape two shapes broadcast to (NumPy's rules); InvalidArgumentError naming both when they do not.
Shape broadcast_shapes(const Shape& a, const Shape& b);
/// x repeated along its broadcast axes to `shape` (a copy); its gradient sums back down to x's shape.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

/// Element-wise comparisons and logical operations with broadcasting, giving bool tensors (no gradient). The
/// logical kinds read their operands as bool (nonzero is true).
enum class CompareKind { equal, not_equal, less, less_equal, greater, greater_equal, logical_and, logical_or,
                         logical_xor };
Tensor compare(const Tensor& a, const Tensor& b, CompareKind kind);
/// Element-wise integer ops on int32 or int64 tensors of one dtype, broadcast together (TensorFlow's): the bitwise
/// and/or/xor, shifts by amounts clamped to [0, bits - 1] (right shifts arithmetic), and the non-negative gcd and lcm
/// (gcd(0, 0) = 0; lcm with a zero is 0). No gradient. InvalidArgumentError for other dtypes.
enum class IntegerKind { bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift, gcd, lcm };
Tensor integer_binary(const Tensor& a, const Tensor& b, IntegerKind kind);
/// x where `condition` (bool) is true, else y; the three broadcast together; x and y of one dtype. Differentiable
/// in x and y.
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);

/// Reductions over a set of axes (negative count from the end; empty: all axes), keeping them as 1s with
/// `keepdims`. sum/prod/max/min keep the dtype (bool is summed as int32); argmax/argmin take one axis and give
/// int32 (the first index of a tie); any/all give bool. sum, prod, max and min are differentiable (max/min share
/// the gradient between ties, as TensorFlow). InvalidArgumentError for an axis out of range or repeated.
enum class ReduceOp { sum, prod, max, min, argmax, argmin, any, all };
Tensor reduce_axes(const Tensor& x, ReduceOp op, const std::vector<int>& axes, bool keepdims = false);
/// The running sum (product) along `axis`: `exclusive` leaves out the element itself, `reverse` runs from the end.
/// Differentiable.
Tensor cumulative(const Tensor& x, int axis, bool prod, bool exclusive = false, bool reverse = false);
/// The k largest (largest = false: smallest) entries along the last axis, in order, ties by lower index first, and
/// their int32 indices: {values, indices}. Differentiable in float32 values.
std::vector<Tensor> top_k(const Tensor& x, int64_t k, bool largest = true);

/// Frames of `length` values every `step` along the last axis (tf.signal.frame without padding): (..., frames,
/// length), frames = 1 + (n - length) / step. One strided copy on every backend; differentiable (the gradient adds
/// the frames back where they overlap). InvalidArgumentError unless 1 <= length <= n and step >= 1.
Tensor frames(const Tensor& x, int64_t length, int64_t step);
/// tf.signal.overlap_and_add: frames (..., count, length) added at offsets of `step` into (..., (count - 1)·step +
/// length) (frames's adjoint, and istft's last step). Differentiable. InvalidArgumentError for rank < 2 or step < 1.
Tensor overlap_add(const Tensor& frames, int64_t step);

/// Discrete Fourier transforms along the last axis of float32/float64 tensors, as tf.signal's; a complex tensor is
/// two tensors of one shape and dtype, its real and imaginary parts. O(n log n) for every length (a radix-2 FFT, and
/// Bluestein's algorithm over one for lengths that are not powers of two); every backend; differentiable.
/// InvalidArgumentError for other dtypes, a scalar, or parts of different shapes or dtypes.
/// fft: X_k = Σ_t x_t·e^(-2πi·tk/n); with `inverse` (ifft) x_t = (1/n)·Σ_k X_k·e^(2πi·tk/n). {real, imag}.
std::pair<Tensor, Tensor> fft(const Tensor& real, const Tensor& imag, bool inverse = false);
/// The bins k < n/2 + 1 of the DFT of real rows (..., n), n >= 1: {real, imag}, each (..., n/2 + 1).
std::pair<Tensor, Tensor> rfft(const Tensor& x);
/// The real rows (..., n) whose rfft is `real`, `imag` (..., n/2 + 1) (the imaginary parts of bin 0 and, for even
/// n, of bin n/2 do not count).
Tensor irfft(const Tensor& real, const Tensor& imag, int64_t n);

/// Connectionist temporal classification (tf.nn.ctc_loss with dense labels, blank_index as TensorFlow's; every
/// backend). logits (batch, frames, classes) of a floating dtype (computed in float32), labels (batch, max_length)
/// int32/int64 (the first label_length of each row count; they must be classes other than the blank), label_length
/// and logit_length (batch,) int32/int64. The loss per sequence (batch,) float32, −log p(labels | logits) under
/// the softmax of each frame, differentiable in the logits. Shapes and dtypes: InvalidArgumentError; lengths or
/// labels out of range: InvalidArgumentError from the kernel (on every backend, naming the sequence and value).
Tensor ctc_loss(const Tensor& labels, const Tensor& logits, const Tensor& label_length, const Tensor& logit_length,
                int64_t blank_index = 0);
/// TensorFlow's greedy CTC decoder: per sequence (its first `lengths[b]` frames) the first largest logit of each
/// frame, repeated classes merged (merge_repeated) and blanks dropped. {decoded (batch, frames) int32, -1 after the
/// end; scores (batch, 1) float32, −Σ of the frames' largest logits}.
std::pair<Tensor, Tensor> ctc_greedy_decode(const Tensor& logits, const Tensor& lengths, bool merge_repeated = true,
                                            int64_t blank_index = 0);
/// TensorFlow's CTC beam search decoder (tf.nn.ctc_beam_search_decoder's algorithm, the blank at `blank_index`; CPU
/// only, as TensorFlow's): {decoded (top_paths, batch, frames) int32, -1 after the end; log-probabilities
/// (batch, top_paths) float32}, best first. InvalidArgumentError unless 1 <= top_paths <= beam_width, or when a
/// sequence leaves fewer prefixes than top_paths.
std::pair<Tensor, Tensor> ctc_beam_search_decode(const Tensor& logits, const Tensor& lengths, int64_t beam_width,
                                                 int64_t top_paths, int64_t blank_index = 0);

/// Linear algebra on float32 matrices (..., M, N), the batch axes first (tf.linalg's ops); every backend. Errors
/// are InvalidArgumentError (a rank below 2, another dtype, non-square input where a square one is needed).
/// LU with partial pivoting: {lu (..., N, N): L's multipliers below the diagonal (its unit diagonal implied), U on
/// and above; perm (..., N) int32: row i of lu is row perm[i] of a}. Not differentiable.
std::vector<Tensor> lu(const Tensor& a);
/// The lower Cholesky factor of symmetric positive definite matrices (only the lower triangle is read); from the
/// first non-positive pivot on, NaN (TensorFlow's). Differentiable.
Tensor cholesky(const Tensor& a);
/// x with a·x = b (aᵀ·x = b with `adjoint`) for triangular a (..., N, N), of which only the lower (else the upper)
/// triangle is read, and b (..., N, K); the batch axes broadcast. Differentiable in both.
Tensor triangular_solve(const Tensor& a, const Tensor& b, bool lower, bool adjoint = false);
/// a⁻¹, the x of a·x = b (b (..., N, K), batch axes broadcast), det(a), and {sign, log|det(a)|}. A singular matrix
/// (an exactly zero pivot, TensorFlow's test) is an InvalidArgumentError for the inverse and the solve; its
/// determinant is 0 (log: -inf, sign 0). Differentiable (the determinants' gradients need a⁻¹).
Tensor matrix_inverse(const Tensor& a);
Tensor matrix_solve(const Tensor& a, const Tensor& b);
Tensor matrix_determinant(const Tensor& a);
std::vector<Tensor> log_matrix_determinant(const Tensor& a);
/// Eigenvalues (ascending) and eigenvectors (columns, unit length, each one's largest entry positive) of symmetric
/// matrices, of which only the lower triangle is read: {w (..., N), v (..., N, N)}. Differentiable.
std::vector<Tensor> self_adjoint_eig(const Tensor& a);
/// The singular value decomposition a = u·diag(s)·vᵀ: {s (..., P) descending, u (..., M, P), v (..., N, P)}, P =
/// min(M, N); with full_matrices u (..., M, M) and v (..., N, N). Singular vectors carry the eigenvectors' sign
/// rule (v's largest entry positive). Differentiable (with full_matrices and |M - N| > 1 the vectors' gradient is a
/// NotImplementedError, as TensorFlow's).
std::vector<Tensor> svd(const Tensor& a, bool full_matrices = false);
/// Householder QR, a = q·r: {q (..., M, P), r (..., P, N)}, P = min(M, N), or with full_matrices P = M; r's diagonal
/// carries LAPACK's signs (TensorFlow's). Differentiable (a tall matrix with full_matrices: NotImplementedError, as
/// TensorFlow's).
std::vector<Tensor> qr(const Tensor& a, bool full_matrices = false);

/// Rows of x at the given int64 indices.
Tensor gather_rows(const Tensor& x, const Tensor& indices);
/// `rows` rows of zeros (float32) with updates[i] added to row indices[i] (a gather's gradient; repeated indices
/// add up, in order, so that the result is the same on every run and backend).
Tensor scatter_add_rows(const Tensor& updates, const Tensor& indices, int64_t rows);

/// A convolution over the spatial axes of channels-last tensors (N, s1, ..., sr, C), r = 1, 2 or 3 (the
/// stride, dilation and padding lists have r entries each; padding in elements, before and after each axis).
struct ConvParams {
  std::vector<int64_t> strides, dilation, pad_before, pad_after;
  int64_t groups = 1;  ///< input and output channels split into this many independent groups
  /// Applied to conv's output in the same op, as Dense's (on the CPU relu is oneDNN's post-op: one pass over the
  /// output fewer). Only activations whose gradient needs the output alone (not gelu, softplus, softsign, silu,
  /// softmax: InvalidArgumentError); ignored by conv_backprop_input.
  Activation activation = Activation::linear;
};
/// The cross-correlation of x (N, s..., Cin) with kernel (k..., Cin / groups, Cout) plus bias (Cout; may be
/// undefined), as tf.nn.convolution with explicit padding: output (N, o..., Cout), o = (s + before + after -
/// ((k - 1)·dilation + 1)) / stride + 1. Differentiable in x, kernel and bias. InvalidArgumentError for
/// inconsistent shapes (naming them).
Tensor conv(const Tensor& x, const Tensor& kernel, const Tensor& bias, const ConvParams& params);
/// The convolution's gradient with respect to its input (a transposed convolution): dy (N, o..., Cout) and kernel
/// (k..., Cin / groups, Cout) to (N, input_spatial..., Cin). Differentiable in dy and kernel.
Tensor conv_backprop_input(const Tensor& dy, const Tensor& kernel, const std::vector<int64_t>& input_spatial,
                           const ConvParams& params);

enum class PoolKind { max, average };
/// Max or average pooling over the spatial axes of a channels-last tensor (N, s..., C); the average counts only
/// the elements inside the input (TensorFlow's "same" pooling), the maximum ignores the padding.
struct PoolParams {
  PoolKind kind = PoolKind::max;
  std::vector<int64_t> window, strides, pad_before, pad_after;
};
Tensor pool(const Tensor& x, const PoolParams& params);

/// tf.image.resize's methods (keras.ops.image.resize's `interpolation`).
enum class ResizeMethod { bilinear, nearest, bicubic, area, lanczos3, lanczos5, gaussian, mitchellcubic };
/// The method of a name ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
/// "mitchellcubic"); ValueError naming them for another.
ResizeMethod resize_method(const std::string& name);
/// Images (N, H, W, C) resized to (N, height, width, C) as tf.image.resize does: half-pixel centres; bilinear and
/// nearest by their taps, bicubic as ResizeBicubic, area as ResizeArea (pixel areas, no half-pixel offset), the
/// others as ScaleAndTranslate; `antialias` widens bilinear's and bicubic's kernels and the ScaleAndTranslate ones
/// by the downscaling factor (nearest and area ignore it, as TensorFlow). Differentiable in x (every method, area
/// included, which TensorFlow is not). InvalidArgumentError for another rank or an empty target.
Tensor resize(const Tensor& x, int64_t height, int64_t width, ResizeMethod method, bool antialias = false);

/// TensorFlow's sampling kernels (tf.raw_ops.ScaleAndTranslate's kernel_type).
enum class SamplingKernel { box, triangle, keyscubic, mitchellcubic, lanczos1, lanczos3, lanczos5, gaussian };
/// tf.raw_ops.ScaleAndTranslate: images (N, H, W, C) to (N, height, width, C), output pixel (y, x) sampling the
/// input at ((y + 0.5 - translation.first) / scale.first, (x + 0.5 - translation.second) / scale.second) with the
/// kernel (widened by 1/scale when antialiasing a downscale). Differentiable in images. InvalidArgumentError for a
/// scale that is not positive and finite.
Tensor scale_and_translate(const Tensor& images, int64_t height, int64_t width, std::pair<float, float> scale,
                           std::pair<float, float> translation, SamplingKernel kernel, bool antialias = true);

enum class FillMode { reflect, wrap, constant, nearest };
/// keras.ops.image.affine_transform (TensorFlow's ImageProjectiveTransformV3): each output pixel (x, y) of images
/// (N, H, W, C) reads the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1, with
/// transforms (N, 8) or (1, 8) = [a0, a1, a2, b0, b1, b2, c0, c1]; outside the image as `fill_mode` says. Not
/// differentiable (as in TensorFlow): no gradient flows through it.
Tensor affine_transform(const Tensor& images, const Tensor& transforms, ResizeMethod interpolation = ResizeMethod::bilinear,
                        FillMode fill_mode = FillMode::constant, double fill_value = 0.0);

/// Per-sample losses (shape (N,)), as Keras's loss functions before reduction.
Tensor binary_crossentropy(const Tensor& y_true, const Tensor& y_pred, double label_smoothing = 0.0);
Tensor categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, double label_smoothing = 0.0);
Tensor sparse_categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred);
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred);
Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred);
/// The per-sample losses above, by name.
enum class LossFunction {
  binary_crossentropy,
  categorical_crossentropy,
  sparse_categorical_crossentropy,
  mean_squared_error,
  mean_absolute_error
};
/// reduce_mean of that per-sample loss (Keras's sum_over_batch_size without weights), the same value: one op, and
/// one launch for its gradient, on devices with the fused kernels (the CPU); the two ops elsewhere.
Tensor batch_mean_loss(LossFunction f, const Tensor& y_true, const Tensor& y_pred, double label_smoothing = 0.0);

/// How predictions are compared with labels when counting correct ones.
enum class AccuracyKind { binary, categorical, sparse_categorical };
/// Number of correctly predicted samples (a float32 scalar).
Tensor accuracy_count(const Tensor& y_true, const Tensor& y_pred, AccuracyKind kind, double threshold = 0.5);

/// In-place optimizer updates (not recorded on tapes). Formulas are Keras 3's (spec/keras_api.md §3).
void apply_sgd(Tensor& var, const Tensor& grad, Tensor* momentum_buffer, double learning_rate, double momentum,
               bool nesterov);
/// `alpha` is lr·√(1-β2^t)/(1-β1^t); `vhat` is used when non-null (amsgrad).
void apply_adam(Tensor& var, Tensor& m, Tensor& v, const Tensor& grad, Tensor* vhat, double alpha, double beta_1,
                double beta_2, double epsilon);
/// One variable of apply_adam_many(): `vhat` undefined without amsgrad. With `grad2`, the gradient is
/// (grad + grad2) · 0.5 per element (the two halves of a batch).
struct AdamUpdate {
  Tensor var, m, v, grad, vhat, grad2;
};
/// apply_adam() over several variables in one kernel launch: one pass over all their elements, split between the
/// intra-op threads as one range, each element computed as apply_adam() computes it. Returns false and changes
/// nothing when the variables are not all float32 on one device whose backend has this kernel; the caller then
/// updates them one by one.
bool apply_adam_many(std::span<const AdamUpdate> updates, double alpha, double beta_1, double beta_2, double epsilon);
/// apply_adam_many() in two parts: prepare() checks and flattens the updates once, run() launches the kernel. A
/// caller that updates the same tensors every step (a recorded training step) prepares once and runs every step.
class AdamManyLaunch {
 public:
  /// False, with nothing prepared, where apply_adam_many() would refuse, or when a gradient is not on the
  /// variables' device (a prepared copy would go stale).
  bool prepare(std::span<const AdamUpdate> updates);
  bool prepared() const { return device_ != nullptr; }
  void run(double alpha, double beta_1, double beta_2, double epsilon) const;

 private:
  std::vector<Tensor> in_;
  runtime::Device* device_ = nullptr;
};
/// `mom` is used when momentum > 0, `mean_grad` when centered.
void apply_rmsprop(Tensor& var, Tensor& v, const Tensor& grad, Tensor* mom, Tensor* mean_grad, double learning_rate,
                   double rho, double momentum, double epsilon);

}  // namespace osprey::ops

namespace osprey {
inline Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
inline Tensor operator-(const Tensor& a) { return ops::neg(a); }
}  // namespace osprey
