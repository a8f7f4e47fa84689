// keras::ops: Keras 3's backend-neutral ops (keras.ops), with NumPy's broadcasting, dtype promotion and axis
// conventions. Each runs through Osprey's dispatch (CPU or GPU, placement log) and is differentiable under a
// GradientTape where Keras's is.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/tensor.h"

namespace osprey::keras::ops {

/// A tensor, or a plain number that takes the other operand's dtype (Keras's weak Python scalars: x + 1 stays
/// int32 for an int32 x; x + 0.5 makes an integer x float32).
class TensorLike {
 public:
  TensorLike(const Tensor& t) : tensor_(t) {}  // NOLINT: implicit, as Python passes either
  TensorLike(double v) : scalar_(v) {}         // NOLINT
  TensorLike(int v) : scalar_(v), integral_(true) {}  // NOLINT
  TensorLike(int64_t v) : scalar_(static_cast<double>(v)), integral_(true) {}  // NOLINT
  TensorLike(bool v) : scalar_(v ? 1.0 : 0.0), integral_(true), boolean_(true) {}  // NOLINT

  bool is_tensor() const { return tensor_.defined(); }
  const Tensor& tensor() const { return tensor_; }
  double scalar() const { return scalar_; }
  bool integral() const { return integral_; }
  bool boolean() const { return boolean_; }
  /// The tensor, or the number as a 0-d tensor of `dtype`.
  Tensor as_tensor(DType dtype) const;

 private:
  Tensor tensor_;
  double scalar_ = 0;
  bool integral_ = false, boolean_ = false;
};

/// An `axis` argument: one axis, several, or none given (every axis, Keras's axis=None).
class Axes {
 public:
  Axes() = default;                                                // NOLINT: axis=None
  Axes(int axis) : axes_{axis}, all_(false) {}                     // NOLINT
  Axes(std::initializer_list<int> axes) : axes_(axes), all_(false) {}  // NOLINT
  Axes(std::vector<int> axes) : axes_(std::move(axes)), all_(false) {}  // NOLINT
  bool all() const { return all_; }
  const std::vector<int>& axes() const { return axes_; }

 private:
  std::vector<int> axes_;
  bool all_ = true;
};

/// The dtype two operands promote to (keras.ops.result_type): bool < int32 < int64 < float16, bfloat16 < float32 <
/// float64 (float16 with bfloat16: float32), numbers weak.
DType result_type(const TensorLike& a, const TensorLike& b);
Tensor convert_to_tensor(const TensorLike& x, std::optional<DType> dtype = std::nullopt);
Tensor cast(const Tensor& x, DType dtype);
/// x, with no gradient flowing back through it.
Tensor stop_gradient(const Tensor& x);

// ---- element-wise (NumPy broadcasting) ----
Tensor add(const TensorLike& a, const TensorLike& b);
Tensor subtract(const TensorLike& a, const TensorLike& b);
Tensor multiply(const TensorLike& a, const TensorLike& b);
/// True division: integers give float32 (as Keras).
Tensor divide(const TensorLike& a, const TensorLike& b);
Tensor true_divide(const TensorLike& a, const TensorLike& b);
Tensor power(const TensorLike& a, const TensorLike& b);
Tensor maximum(const TensorLike& a, const TensorLike& b);
Tensor minimum(const TensorLike& a, const TensorLike& b);
Tensor negative(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor absolute(const Tensor& x);
Tensor square(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sign(const Tensor& x);
/// The trigonometric and hyperbolic functions, their inverses, floor and ceil, log1p, expm1, log2, log10,
/// reciprocal: integers and bools computed as float32 (Keras's dtypes); differentiable (floor, ceil, round with zero
/// gradients).
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor arcsin(const Tensor& x);
Tensor arccos(const Tensor& x);
Tensor arctan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor arcsinh(const Tensor& x);
Tensor arccosh(const Tensor& x);
Tensor arctanh(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor reciprocal(const Tensor& x);
/// The angle of (x2, x1) in (-π, π] (NumPy's arctan2(y, x)) and sqrt(x1² + x2²), with broadcasting; integers as
/// float32. Differentiable (arctan2 where x2 != 0).
Tensor arctan2(const TensorLike& x1, const TensorLike& x2);
Tensor hypot(const TensorLike& x1, const TensorLike& x2);
/// keras.ops.round: halves to even, `decimals` digits after the point (negative: before it); an integer tensor
/// stays itself unless decimals < 0.
Tensor round(const Tensor& x, int decimals = 0);
/// x limited to [x_min, x_max] (the gradient passes where x is inside, bounds included).
Tensor clip(const Tensor& x, const TensorLike& x_min, const TensorLike& x_max);
/// x1 where condition, else x2 (all three broadcast together).
Tensor where(const TensorLike& condition, const TensorLike& x1, const TensorLike& x2);

// ---- comparisons and logic (bool results) ----
Tensor equal(const TensorLike& a, const TensorLike& b);
Tensor not_equal(const TensorLike& a, const TensorLike& b);
Tensor less(const TensorLike& a, const TensorLike& b);
Tensor less_equal(const TensorLike& a, const TensorLike& b);
Tensor greater(const TensorLike& a, const TensorLike& b);
Tensor greater_equal(const TensorLike& a, const TensorLike& b);
Tensor logical_and(const TensorLike& a, const TensorLike& b);
Tensor logical_or(const TensorLike& a, const TensorLike& b);
Tensor logical_xor(const TensorLike& a, const TensorLike& b);
Tensor logical_not(const Tensor& x);

// ---- reductions (axis=None: all axes) ----
Tensor sum(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
/// Integers give float32 means (as Keras).
Tensor mean(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor max(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor min(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor prod(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor any(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor all(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
/// log(sum(exp(x))) computed stably (the maximum taken out first).
Tensor logsumexp(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
/// Population variance and standard deviation (NumPy's ddof = 0).
Tensor var(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor std(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
/// int32 index of the first maximum (minimum); axis=None: into the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int> axis = std::nullopt, bool keepdims = false);
Tensor argmin(const Tensor& x, std::optional<int> axis = std::nullopt, bool keepdims = false);
/// Running sum (product) along axis; axis=None: over the flattened tensor.
Tensor cumsum(const Tensor& x, std::optional<int> axis = std::nullopt);
Tensor cumprod(const Tensor& x, std::optional<int> axis = std::nullopt);

// ---- shapes and indexing ----
/// new_shape may hold one -1 (inferred).
Tensor reshape(const Tensor& x, const std::vector<int64_t>& new_shape);
/// axes=None reverses the axes.
Tensor transpose(const Tensor& x, std::optional<std::vector<int>> axes = std::nullopt);
Tensor expand_dims(const Tensor& x, int axis);
/// axis=None drops every axis of size 1; a given axis must be of size 1.
Tensor squeeze(const Tensor& x, std::optional<int> axis = std::nullopt);
Tensor broadcast_to(const Tensor& x, const std::vector<int64_t>& shape);
/// Tensors of several dtypes are joined in their result type (result_type), as Keras's.
Tensor concatenate(const std::vector<Tensor>& xs, int axis = 0);
Tensor stack(const std::vector<Tensor>& xs, int axis = 0);
/// Into `sections` equal pieces along axis (InvalidArgumentError when it does not divide).
std::vector<Tensor> split(const Tensor& x, int64_t sections, int axis = 0);
/// At the given indices along axis (NumPy's np.split with a list).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& indices, int axis = 0);
/// Elements of x at integer `indices` (any shape; negative count from the end) along axis; axis=None: of the
/// flattened x. Output shape: x.shape[:axis] + indices.shape + x.shape[axis+1:]. Differentiable in x.
Tensor take(const Tensor& x, const Tensor& indices, std::optional<int> axis = std::nullopt);
/// NumPy's take_along_axis: indices of x's rank (broadcast on the other axes) picking along axis.
Tensor take_along_axis(const Tensor& x, const Tensor& indices, int axis);
/// keras.ops.slice: the block of `shape` starting at `start_indices` (one per axis).
Tensor slice(const Tensor& x, const std::vector<int64_t>& start_indices, const std::vector<int64_t>& shape);
/// x[i] along the first axis (negative from the end): the axis removed.
Tensor get_item(const Tensor& x, int64_t i);
/// keras.ops.pad: `pad_width` one (before, after) pair per axis, or one pair for every axis; every mode of Keras's
/// JAX and NumPy backends (np.pad's): "constant" (with `constant_values`), "edge", "wrap" ("circular" too, Keras's
/// torch spelling), "reflect" (the edge not repeated), "symmetric" (the edge repeated) — these three wider than the
/// axis too, repeating, where TensorFlow's backend refuses —, "maximum", "minimum", "mean", "median" (of the whole
/// axis as padded so far; integers' means and medians rounded half to even), "linear_ramp" (from 0 to the edge;
/// floored for integers) and "empty" (zeros, as JAX's). Differentiable in x.
Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width,
           const std::string& mode = "constant", double constant_values = 0);
/// keras.ops.tile: x repeated `repeats[i]` times along axis i (a shorter list applies to the last axes; a longer
/// one adds leading axes). Differentiable in x.
Tensor tile(const Tensor& x, const std::vector<int64_t>& repeats);
/// keras.ops.repeat: each element repeated `repeats` times along axis (axis=None: of the flattened x), or
/// repeats[i] times for element i. Differentiable in x.
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats, std::optional<int> axis = std::nullopt);
Tensor repeat(const Tensor& x, int64_t repeats, std::optional<int> axis = std::nullopt);
/// One-hot vectors of `num_classes` along a new axis (default last); indices outside [0, num_classes) give zeros.
Tensor one_hot(const Tensor& x, int64_t num_classes, int axis = -1, DType dtype = DType::float32);
Tensor arange(double start, std::optional<double> stop = std::nullopt, double step = 1.0,
              std::optional<DType> dtype = std::nullopt);
Tensor zeros(const std::vector<int64_t>& shape, DType dtype = DType::float32);
Tensor ones(const std::vector<int64_t>& shape, DType dtype = DType::float32);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);

// ---- neural-network functions (keras.ops.relu ...; nn_ops.cpp) ----
/// Activations element-wise (softmax and log_softmax along `axis`): integers as float32, float64 computed in
/// float32 by the activation kernels (the composite ones stay float64). Differentiable.
Tensor relu(const Tensor& x);
Tensor relu6(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor softplus(const Tensor& x);
Tensor softsign(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor swish(const Tensor& x);
Tensor selu(const Tensor& x);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.2);
/// relu6(x + 3) / 6, and x times it (Keras 3's hard_sigmoid and hard_silu).
Tensor hard_sigmoid(const Tensor& x);
Tensor hard_silu(const Tensor& x);
/// keras.ops.gelu: the tanh approximation by default (as Keras's ops), the erf form with approximate = false.
Tensor gelu(const Tensor& x, bool approximate = true);
Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);
/// keras.ops's cross-entropies, not reduced: binary per element, categorical per row along `axis`, sparse per label
/// (integer labels, a trailing axis of 1 allowed; only axis -1, as Keras). Probabilities are clipped to
/// [1e-7, 1 - 1e-7] (categorical ones first scaled to add up to 1), logits go through a stable log-sigmoid or
/// log-softmax. Differentiable in the output (and in float targets; from logits the exact gradient, which is
/// TensorFlow's softmax - labels where the labels add up to 1). ValueError for shapes that do not match,
/// InvalidArgumentError for a sparse label outside [0, classes).
Tensor binary_crossentropy(const Tensor& target, const Tensor& output, bool from_logits = false);
Tensor categorical_crossentropy(const Tensor& target, const Tensor& output, bool from_logits = false, int axis = -1);
Tensor sparse_categorical_crossentropy(const Tensor& target, const Tensor& output, bool from_logits = false,
                                       int axis = -1);
/// keras.ops.ctc_loss: the CTC loss per sequence (batch,) of logits `output` (batch, max_length, classes) for the
/// integer labels `target` (batch, max_label) and the lengths (batch,), with TensorFlow's dense CTC loss (the labels'
/// first target_length entries count; the blank at mask_index). In float32 (float64 as float32 and back, as Keras on
/// TensorFlow); differentiable in `output`. InvalidArgumentError for shapes, lengths or labels out of range.
Tensor ctc_loss(const Tensor& target, const Tensor& output, const Tensor& target_length, const Tensor& output_length,
                int64_t mask_index = 0);
/// keras.ops.ctc_decode: {decoded (top_paths, batch, max_length) int32 with -1 after each sequence (greedy: one
/// path), scores (batch, top_paths)}: "greedy" (the negative sum of each frame's largest logit; repeats merged
/// with merge_repeated) or "beam_search" (TensorFlow's beam search, log-probabilities; CPU only, as TensorFlow's).
/// mask_index unset: the last class. ValueError for another strategy.
std::pair<Tensor, Tensor> ctc_decode(const Tensor& inputs, const Tensor& sequence_lengths,
                                     const std::string& strategy = "greedy", int64_t beam_width = 100,
                                     int64_t top_paths = 1, bool merge_repeated = true,
                                     std::optional<int64_t> mask_index = 0);
/// {mean, variance} over `axes` (keras.ops.moments).
std::vector<Tensor> moments(const Tensor& x, const Axes& axes, bool keepdims = false);
/// x divided by its `order`-norm along axis, the norm at least epsilon (keras.ops.normalize; order 2 as
/// x·min(1/√Σx², 1/ε)). ValueError for order < 1.
Tensor normalize(const Tensor& x, int axis = -1, int order = 2, double epsilon = 1e-7);
/// keras.ops.norm: over one axis a vector norm (ord unset or 2: Euclidean; ±inf: max/min |x|; 0: the count of
/// nonzeros; p: (Σ|x|^p)^(1/p)); over two axes (or every axis of a matrix) a matrix norm (unset: Frobenius; 1, -1:
/// max/min column sum of |x|; ±inf: max/min row sum; 2, -2: the largest/smallest singular value); more axes are a
/// ValueError, as Keras. The string form takes the matrix norms "fro" (Frobenius) and "nuc" (the sum of the
/// singular values); a string ord over one axis is a ValueError.
Tensor norm(const Tensor& x, std::optional<double> ord = std::nullopt, const Axes& axis = {}, bool keepdims = false);
Tensor norm(const Tensor& x, const std::string& ord, const Axes& axis = {}, bool keepdims = false);

// ---- linear algebra (keras.ops.linalg; linalg.cpp) ----
// On matrices (..., M, N), the batch axes first; computed in float32 (float64 and half inputs are cast there and
// back, integers give float32). A rank below 2, or a non-square matrix where one is needed, is Keras's ValueError.
// Differentiable, as Keras's TensorFlow backend, except lu_factor and matrix_rank.

/// The lower (upper: its transpose) Cholesky factor; ValueError when x is not positive definite.
Tensor cholesky(const Tensor& x, bool upper = false);
/// The inverse of the matrix whose Cholesky factor (lower, or upper) is x.
Tensor cholesky_inverse(const Tensor& x, bool upper = false);
/// det(x) (..., ); inv(x); {sign, log|det x|} (NumPy's slogdet). InvalidArgumentError for a singular matrix's inverse.
Tensor det(const Tensor& x);
Tensor inv(const Tensor& x);
std::vector<Tensor> slogdet(const Tensor& x);
/// LU with partial pivoting: {lu, pivots (..., M) int32} with row i of x being row pivots[i] of L·U (Keras's
/// TensorFlow backend: tf.linalg.lu's permutation inverted).
std::vector<Tensor> lu_factor(const Tensor& x);
/// x with a·x = b, b (..., M) or (..., M, K) (the result has b's shape); for triangular a (only its lower or upper
/// triangle read). InvalidArgumentError for a singular a in solve.
Tensor solve(const Tensor& a, const Tensor& b);
Tensor solve_triangular(const Tensor& a, const Tensor& b, bool lower = false);
/// Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices (the lower triangle is read).
std::vector<Tensor> eigh(const Tensor& x);
/// {u, s, vh} with x = u·diag(s)·vh (full_matrices: u (..., M, M), vh (..., N, N)); {s} alone without compute_uv.
/// Singular and eigenvectors are unique up to sign; Osprey makes each v column's largest entry positive.
std::vector<Tensor> svd(const Tensor& x, bool full_matrices = true, bool compute_uv = true);
/// {q, r} with x = q·r: mode "reduced" (q (..., M, K), r (..., K, N), K = min(M, N)) or "complete" (q (..., M, M));
/// another mode is a ValueError. r's diagonal has LAPACK's (TensorFlow's) signs.
std::vector<Tensor> qr(const Tensor& x, const std::string& mode = "reduced");
/// The Moore-Penrose pseudoinverse (..., N, M) by the SVD, singular values <= rcond · the largest left out (unset:
/// 10·max(M, N)·ε, tf.linalg.pinv's).
Tensor pinv(const Tensor& x, std::optional<double> rcond = std::nullopt);
/// The least-squares solution of a·x = b for a 2-D a (M, N) and b (M) or (M, K) (Keras's TensorFlow backend: the
/// SVD, singular values below rcond · the largest left out; unset ε·max(M, N)).
Tensor lstsq(const Tensor& a, const Tensor& b, std::optional<double> rcond = std::nullopt);
/// How many singular values exceed tol (unset: the largest · max(M, N) · ε), int32 (..., ).
Tensor matrix_rank(const Tensor& x, std::optional<double> tol = std::nullopt);
/// x to the integer power n (0: the identity; negative: of the inverse), by repeated squaring.
Tensor matrix_power(const Tensor& x, int64_t n);

// ---- convolution and pooling (keras.ops.conv ...; conv_ops.cpp) ----
/// Inputs (batch, spatial..., channels) of 1 to 3 spatial axes ("channels_first": (batch, channels, spatial...));
/// strides, dilation_rate, pool_size: one value for every axis or one per axis; padding "valid" or "same"
/// (TensorFlow's split, the extra element after). conv's kernel is (window..., in_channels / groups,
/// out_channels), groups read from the channels; depthwise_conv's (window..., in_channels, multiplier). Integers
/// as float32. Differentiable in the inputs and the kernel. ValueError for bad arguments, InvalidArgumentError for
/// shapes that do not fit.
Tensor conv(const Tensor& inputs, const Tensor& kernel, const std::vector<int64_t>& strides = {1},
            const std::string& padding = "valid", const std::string& data_format = "channels_last",
            const std::vector<int64_t>& dilation_rate = {1});
Tensor depthwise_conv(const Tensor& inputs, const Tensor& kernel, const std::vector<int64_t>& strides = {1},
                      const std::string& padding = "valid", const std::string& data_format = "channels_last",
                      const std::vector<int64_t>& dilation_rate = {1});
/// depthwise_conv with `depthwise_kernel`, then a 1×1 conv with `pointwise_kernel` (window of ones, in·multiplier,
/// out), as keras.ops.separable_conv.
Tensor separable_conv(const Tensor& inputs, const Tensor& depthwise_kernel, const Tensor& pointwise_kernel,
                      const std::vector<int64_t>& strides = {1}, const std::string& padding = "valid",
                      const std::string& data_format = "channels_last", const std::vector<int64_t>& dilation_rate = {1});
/// The transposed convolution (the gradient of conv with respect to its input): kernel (window..., out_channels,
/// in_channels); output extents as Keras's deconv_output_length (output_padding unset: in·stride, plus the window's
/// overhang with "valid"). Differentiable in the inputs and the kernel.
Tensor conv_transpose(const Tensor& inputs, const Tensor& kernel, const std::vector<int64_t>& strides = {1},
                      const std::string& padding = "valid",
                      const std::optional<std::vector<int64_t>>& output_padding = std::nullopt,
                      const std::string& data_format = "channels_last", const std::vector<int64_t>& dilation_rate = {1});
/// Pooling windows; strides unset: the pool size (Keras's default). Average pooling counts only the elements
/// inside the input (TensorFlow's "same").
Tensor max_pool(const Tensor& inputs, const std::vector<int64_t>& pool_size,
                const std::optional<std::vector<int64_t>>& strides = std::nullopt, const std::string& padding = "valid",
                const std::string& data_format = "channels_last");
Tensor average_pool(const Tensor& inputs, const std::vector<int64_t>& pool_size,
                    const std::optional<std::vector<int64_t>>& strides = std::nullopt,
                    const std::string& padding = "valid", const std::string& data_format = "channels_last");
/// Adaptive pooling to a fixed output size (keras.ops.adaptive_average_pool / adaptive_max_pool; PyTorch's
/// AdaptiveAvgPool/AdaptiveMaxPool): output i of a spatial axis of length L pools elements [floor(i·L/O),
/// ceil((i+1)·L/O)). output_size: one value for every spatial axis or one per axis; inputs of 1 to 3 spatial axes.
Tensor adaptive_average_pool(const Tensor& inputs, const std::vector<int64_t>& output_size,
                             const std::string& data_format = "channels_last");
Tensor adaptive_max_pool(const Tensor& inputs, const std::vector<int64_t>& output_size,
                         const std::string& data_format = "channels_last");

// ---- constructors, rearrangements, NaN tests, contractions (array_ops.cpp) ----
/// The n×m matrix with ones on diagonal k (eye), or n×n (identity).
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType dtype = DType::float32);
Tensor identity(int64_t n, DType dtype = DType::float32);
/// A tensor of `shape` filled with fill_value: dtype unset, float32 (Keras's floatx(), integers too); full_like:
/// x's shape and, unset, its dtype.
Tensor full(const std::vector<int64_t>& shape, const TensorLike& fill_value, std::optional<DType> dtype = std::nullopt);
Tensor full_like(const Tensor& x, const TensorLike& fill_value, std::optional<DType> dtype = std::nullopt);
/// num evenly spaced values from start to stop (stop itself left out without endpoint).
Tensor linspace(double start, double stop, int64_t num = 50, bool endpoint = true, DType dtype = DType::float32);
/// x with the elements above (tril) or below (triu) diagonal k of its last two axes set to zero.
Tensor tril(const Tensor& x, int64_t k = 0);
Tensor triu(const Tensor& x, int64_t k = 0);
/// x reversed along the axes (unset: every axis); x rolled by shift along axis (unset: flattened, then reshaped).
Tensor flip(const Tensor& x, const Axes& axis = {});
Tensor roll(const Tensor& x, int64_t shift, std::optional<int> axis = std::nullopt);
Tensor swapaxes(const Tensor& x, int axis1, int axis2);
/// Axes moved to new positions, the others keeping their order.
Tensor moveaxis(const Tensor& x, const std::vector<int>& source, const std::vector<int>& destination);
Tensor moveaxis(const Tensor& x, int source, int destination);
/// Element-wise tests (bool; integers are never NaN or infinite) and NaN/±inf replaced (unset: the dtype's largest
/// finite values).
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
/// Sums of products over pairs of axes (tensordot), NumPy's dot (a's last axis with b's second-to-last, or b's
/// only one), inner (the last axes), outer (of the flattened operands); products as matmul's.
Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b);
Tensor tensordot(const Tensor& a, const Tensor& b, int axes = 2);
Tensor dot(const Tensor& a, const Tensor& b);
Tensor inner(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);
/// The diagonal `offset` of the matrices over axis1 and axis2 (as a last axis), its sum (trace), and diag: a 1-D
/// x made the k-th diagonal of a square matrix, or a 2-D x's k-th diagonal.
Tensor diagonal(const Tensor& x, int64_t offset = 0, int axis1 = 0, int axis2 = 1);
Tensor trace(const Tensor& x, int64_t offset = 0, int axis1 = 0, int axis2 = 1);
Tensor diag(const Tensor& x, int64_t k = 0);
/// The number of nonzero elements over axis (int32).
Tensor count_nonzero(const Tensor& x, const Axes& axis = {});
/// 1 / √x (integers as float32).
Tensor rsqrt(const Tensor& x);
/// x flattened (keras.ops.ravel).
Tensor ravel(const Tensor& x);
/// log(exp(a) + exp(b)), computed stably.
Tensor logaddexp(const TensorLike& a, const TensorLike& b);
/// The mean over axis weighted by `weights` (x's shape, or 1-D along the one axis); unset: the mean.
Tensor average(const Tensor& x, const Axes& axis = {}, const std::optional<Tensor>& weights = std::nullopt);
/// Coordinate grids of 1-D tensors: "xy" (the first varies along columns) or "ij" indexing.
std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing = "xy");
/// The q-th quantiles over axis (unset: all), NumPy's methods "linear", "lower", "higher", "midpoint", "nearest";
/// several q: a leading axis of them. median is quantile 0.5, "linear". Differentiable in x.
Tensor quantile(const Tensor& x, const std::vector<double>& q, const Axes& axis = {},
                const std::string& method = "linear", bool keepdims = false);
Tensor quantile(const Tensor& x, double q, const Axes& axis = {}, const std::string& method = "linear",
                bool keepdims = false);
Tensor median(const Tensor& x, const Axes& axis = {}, bool keepdims = false);

// ---- linear algebra, sorting ----
/// NumPy's matmul: 1-D operands promoted and the added axis removed, batch axes broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
/// Einstein summation for one or two operands ("ij,jk->ik", "bhqd,bhkd->bhqk", "ij->ji"); "->" optional (NumPy's
/// implicit output: the ellipsis axes, then the labels seen once, alphabetically). An ellipsis ("...ij,...jk->...ik")
/// names the axes the labels leave, broadcast between the operands as TensorFlow's (right-aligned, 1 stretches);
/// a label repeated within an operand takes its diagonal ("ii" is the trace, "iij->ij"). Runs as diagonals,
/// transposes, reshapes and one batched matmul. InvalidArgumentError for subscripts that do not fit the operands.
Tensor einsum(const std::string& subscripts, const std::vector<Tensor>& operands);
/// {values, indices} of the k largest along the last axis (indices int32; ties by lower index).
std::vector<Tensor> top_k(const Tensor& x, int64_t k, bool sorted = true);
/// Sorted ascending along axis; argsort: the int32 indices that sort it (stable).
Tensor sort(const Tensor& x, int axis = -1);
Tensor argsort(const Tensor& x, int axis = -1);

// ---- more element-wise functions and activations (math_more.cpp) ----
/// Integers as float32 where Keras computes in floats (cbrt, exp2, sinc, erfc, the angle conversions, fabs,
/// divide_no_nan, logaddexp2, heaviside); differentiable where Keras's are.
Tensor cbrt(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor deg2rad(const Tensor& x);
Tensor rad2deg(const Tensor& x);
Tensor fabs(const Tensor& x);
/// Towards zero (an integer tensor stays itself).
Tensor trunc(const Tensor& x);
/// NumPy's floor division and its remainder (the divisor's sign; mod is Python's %), fmod (the dividend's sign):
/// integers stay integers.
Tensor floor_divide(const TensorLike& x1, const TensorLike& x2);
Tensor mod(const TensorLike& x1, const TensorLike& x2);
Tensor fmod(const TensorLike& x1, const TensorLike& x2);
/// x1 / x2, 0 where x2 is 0.
Tensor divide_no_nan(const TensorLike& x1, const TensorLike& x2);
/// 0 where x1 < 0, 1 where x1 > 0, x2 where x1 == 0.
Tensor heaviside(const TensorLike& x1, const TensorLike& x2);
/// Whether the sign bit is set (-0.0 too); bool.
Tensor signbit(const Tensor& x);
/// sin(πx)/(πx), 1 at 0.
Tensor sinc(const Tensor& x);
/// log2(2^x1 + 2^x2), computed stably.
Tensor logaddexp2(const TensorLike& x1, const TensorLike& x2);
/// 1 - erf(x).
Tensor erfc(const Tensor& x);
/// The inverse error function (keras.ops.erfinv): ±inf at ±1, NaN beyond; float16/bfloat16 computed in float32.
/// Differentiable (√π/2·exp(erfinv(x)²)).
Tensor erfinv(const Tensor& x);
/// |x1 - x2| <= atol + rtol·|x2| (floats; integers: equal), NaNs equal with equal_nan; allclose: all of it.
Tensor isclose(const TensorLike& x1, const TensorLike& x2, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
Tensor allclose(const TensorLike& x1, const TensorLike& x2, double rtol = 1e-5, double atol = 1e-8,
                bool equal_nan = false);
Tensor isneginf(const Tensor& x);
Tensor isposinf(const Tensor& x);
/// max(0, x) + min(0, α·(exp(x/α) - 1)).
Tensor celu(const Tensor& x, double alpha = 1.0);
/// The first half of x along axis times the sigmoid of the second (gated linear unit); ValueError for an odd axis.
Tensor glu(const Tensor& x, int axis = -1);
/// x where |x| > threshold, else 0; x ∓ threshold beyond ±threshold, else 0; x - tanh(x).
Tensor hard_shrink(const Tensor& x, double threshold = 0.5);
Tensor soft_shrink(const Tensor& x, double threshold = 0.5);
Tensor tanh_shrink(const Tensor& x);
/// x where x > threshold, else default_value.
Tensor threshold(const Tensor& x, double threshold, double default_value);
/// x clipped to [-1, 1]; hard_swish is hard_silu.
Tensor hard_tanh(const Tensor& x);
Tensor hard_swish(const Tensor& x);
/// log(sigmoid(x)), computed stably.
Tensor log_sigmoid(const Tensor& x);
/// 0 below -1, x above 1, (x + 1)²/4 between.
Tensor sparse_plus(const Tensor& x);
/// (x + √(x² + b)) / 2.
Tensor squareplus(const Tensor& x, double b = 4.0);
/// x / √(mean(x²) + ε) over axis, times scale (keras.ops.rms_normalization; ε unset: 1e-7, Keras's epsilon()).
Tensor rms_normalization(const Tensor& x, const std::optional<Tensor>& scale = std::nullopt, int axis = -1,
                         std::optional<double> epsilon = std::nullopt);
/// (x - mean) / √(var + ε) over axis, times gamma plus beta (keras.ops.layer_normalization; ε unset: 1e-7).
Tensor layer_normalization(const Tensor& x, const std::optional<Tensor>& gamma = std::nullopt,
                           const std::optional<Tensor>& beta = std::nullopt, int axis = -1,
                           std::optional<double> epsilon = std::nullopt);
/// Peak signal-to-noise ratio: 20·log10(max_val) - 10·log10(mean((x1 - x2)²)).
Tensor psnr(const Tensor& x1, const Tensor& x2, double max_val);

// ---- more reductions (reduce_more.cpp) ----
/// max, min (NumPy's names) and max - min.
Tensor amax(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor amin(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor ptp(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
/// The reductions with NaNs left out (sum 0, prod 1 of none; mean, max, min, var, std NaN where every element is
/// NaN).
Tensor nansum(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor nanprod(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor nanmean(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor nanmax(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor nanmin(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor nanvar(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor nanstd(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
/// quantile of q/100.
Tensor percentile(const Tensor& x, double q, const Axes& axis = {}, const std::string& method = "linear",
                  bool keepdims = false);
/// The n-th differences along axis.
Tensor diff(const Tensor& a, int n = 1, int axis = -1);
/// The trapezoidal rule along axis, spacing dx, or the sample points x.
Tensor trapezoid(const Tensor& y, const std::optional<Tensor>& x = std::nullopt, double dx = 1.0, int axis = -1);

// ---- windows, NaN-aware scans and arg-reductions, sparse activations (numpy_extra.cpp) ----
/// NumPy's symmetric windows of m points (float32; one point: [1]): triangular, Hamming, Hann, Blackman, and
/// Kaiser with shape beta.
Tensor bartlett(int64_t m);
Tensor hamming(int64_t m);
Tensor hanning(int64_t m);
Tensor blackman(int64_t m);
Tensor kaiser(int64_t m, double beta);
/// Element-wise maximum / minimum where a NaN loses to a number (NaN only where both are).
Tensor fmax(const TensorLike& x1, const TensorLike& x2);
Tensor fmin(const TensorLike& x1, const TensorLike& x2);
/// cumsum / cumprod with NaNs as 0 / 1 (and infinities as the dtype's extremes: nan_to_num first, as Keras).
Tensor nancumsum(const Tensor& x, std::optional<int> axis = std::nullopt);
Tensor nancumprod(const Tensor& x, std::optional<int> axis = std::nullopt);
/// argmax / argmin with NaNs left out; -1 where every element is NaN.
Tensor nanargmax(const Tensor& x, std::optional<int> axis = std::nullopt, bool keepdims = false);
Tensor nanargmin(const Tensor& x, std::optional<int> axis = std::nullopt, bool keepdims = false);
/// num points spaced evenly on a log scale from start to stop (non-zero, of one sign).
Tensor geomspace(double start, double stop, int64_t num = 50, bool endpoint = true, DType dtype = DType::float32);
/// 0 below -1, 1 above 1, (x + 1) / 2 between.
Tensor sparse_sigmoid(const Tensor& x);
/// The Euclidean projection of x onto the probability simplex along axis (sparse probabilities).
Tensor sparsemax(const Tensor& x, int axis = -1);
/// Channels to b×b blocks of pixels and back (4-D images; TensorFlow's channel order).
Tensor depth_to_space(const Tensor& x, int64_t block_size, const std::string& data_format = "channels_last");
Tensor space_to_depth(const Tensor& x, int64_t block_size, const std::string& data_format = "channels_last");
// keras.ops.image (rgb_to_grayscale, resize, ...): osprey/keras/image_ops.h, included below.
/// Pearson correlation coefficients of the rows (variables) over the last axis (observations), clipped to [-1, 1].
Tensor corrcoef(const Tensor& x);
/// Euclidean distances between the rows of x (..., M, D) and of y (..., N, D): (..., M, N).
Tensor cdist(const Tensor& x, const Tensor& y);
/// x1 · 2^x2 (x2 integers).
Tensor ldexp(const Tensor& x1, const Tensor& x2);
/// keras.ops.nextafter: the next float64 after x1 towards x2, in the operands' float type (result_type with float:
/// float32 operands mostly give x1 back, as Keras on TensorFlow). The gradient passes to x1 (TensorFlow's).
Tensor nextafter(const TensorLike& x1, const TensorLike& x2);
/// {counts, bin_edges}: the values of a 1-D x in `range` (unset: [min, max]) counted into `bins` equal bins.
std::vector<Tensor> histogram(const Tensor& x, int64_t bins = 10,
                              std::optional<std::pair<double, double>> range = std::nullopt);
/// The coordinates of flat indices into `shape`, one tensor per axis (NumPy's order for any rank of indices).
std::vector<Tensor> unravel_index(const Tensor& indices, const std::vector<int64_t>& shape);
/// Frames of sequence_length along the last axis, one every sequence_stride: (..., frames, sequence_length).
Tensor extract_sequences(const Tensor& x, int64_t sequence_length, int64_t sequence_stride);

// ---- Fourier transforms (keras.ops.fft, fft2, ifft2, rfft, irfft, stft, istft; signal_ops.cpp) ----
/// A complex tensor as Keras passes it: {real, imag}, two float tensors of one shape.
using ComplexParts = std::pair<Tensor, Tensor>;
/// keras.ops.fft: the DFT along the last axis of {real, imag} (rank >= 1; float32 or float64). ops::fft's
/// O(n log n) transform for every length, on the inputs' device; differentiable. ValueError for parts of different
/// shapes, integer parts or a scalar (Keras's messages); InvalidArgumentError for half floats (Keras: TypeError).
ComplexParts fft(const ComplexParts& x);
/// keras.ops.fft2 / ifft2: the two-dimensional DFT (ifft2: its inverse, over h·w) over the last two axes (rank >= 2).
ComplexParts fft2(const ComplexParts& x);
ComplexParts ifft2(const ComplexParts& x);
/// keras.ops.rfft: the bins k < fft_length / 2 + 1 of the DFT of a real signal along the last axis, cropped or
/// zero-padded to fft_length samples first (unset: the last axis's length). Integer signals compute in float32.
ComplexParts rfft(const Tensor& x, std::optional<int64_t> fft_length = std::nullopt);
/// keras.ops.irfft: the real signal of fft_length samples (unset: 2·(bins - 1)) whose rfft starts with the bins of
/// {real, imag} (cropped or zero-padded to fft_length / 2 + 1 bins first).
Tensor irfft(const ComplexParts& x, std::optional<int64_t> fft_length = std::nullopt);

// ---- short-time Fourier transforms (keras.ops.stft / istft; signal_ops.cpp) ----
/// The window of stft/istft: a name ("hann" or "hamming", TensorFlow's periodic windows), explicit values of
/// sequence_length (a 1-D tensor), or none (`nullptr`: no window).
class StftWindow {
 public:
  StftWindow(const char* name) : name_(name) {}         // NOLINT: implicit, as Python passes either
  StftWindow(std::string name) : name_(std::move(name)) {}  // NOLINT
  StftWindow(Tensor values) : values_(std::move(values)) {}  // NOLINT
  StftWindow(std::nullptr_t) : none_(true) {}            // NOLINT
  bool none() const { return none_; }
  const std::string& name() const { return name_; }
  const Tensor& values() const { return values_; }

 private:
  std::string name_;
  Tensor values_;
  bool none_ = false;
};
/// keras.ops.stft of real float32/float64 signals (..., samples): {real, imag}, each (..., frames, fft_length / 2
/// + 1), as Keras's TensorFlow backend computes it (center: the signal reflect-padded by fft_length / 2 on both
/// sides; the window of sequence_length centred in fft_length), each frame through rfft (fft_length at most
/// 2^24 in Osprey). Differentiable. InvalidArgumentError for other dtypes
/// (Keras: TypeError), ValueError for bad lengths.
std::pair<Tensor, Tensor> stft(const Tensor& x, int64_t sequence_length, int64_t sequence_stride, int64_t fft_length,
                               const StftWindow& window = "hann", bool center = true);
/// keras.ops.istft: the signal whose stft {real, imag} (..., frames, fft_length / 2 + 1) is (TensorFlow's
/// inverse_stft: the inverse DFT of each frame, the window divided by the overlapped sum of its squares,
/// overlap-add), cut to `length` samples when given. Differentiable.
Tensor istft(const std::pair<Tensor, Tensor>& x, int64_t sequence_length, int64_t sequence_stride, int64_t fft_length,
             std::optional<int64_t> length = std::nullopt, const StftWindow& window = "hann", bool center = true);

// ---- integers, Bessel's I0, NaN-ignoring quantiles, correlation, partitions (numpy_bits.cpp) ----
/// Bitwise ops of int32/int64 tensors (broadcast; one dtype after Keras's promotion): InvalidArgumentError for
/// floats and bool, as Keras's TensorFlow backend. Shifts clamp their amounts to [0, bits - 1]; right shifts are
/// arithmetic. bitwise_not and bitwise_invert are one op (~x); left_shift/right_shift are the bitwise_ ones.
Tensor bitwise_and(const TensorLike& x, const TensorLike& y);
Tensor bitwise_or(const TensorLike& x, const TensorLike& y);
Tensor bitwise_xor(const TensorLike& x, const TensorLike& y);
Tensor bitwise_invert(const Tensor& x);
Tensor bitwise_not(const Tensor& x);
Tensor bitwise_left_shift(const TensorLike& x, const TensorLike& y);
Tensor left_shift(const TensorLike& x, const TensorLike& y);
Tensor bitwise_right_shift(const TensorLike& x, const TensorLike& y);
Tensor right_shift(const TensorLike& x, const TensorLike& y);
/// Greatest common divisor and least common multiple of integers, non-negative (gcd(0, 0) = 0, lcm(x, 0) = 0).
Tensor gcd(const TensorLike& x1, const TensorLike& x2);
Tensor lcm(const TensorLike& x1, const TensorLike& x2);
/// The modified Bessel function of the first kind, order 0 (float; integers as float32), within 2e-7 relative.
Tensor i0(const Tensor& x);
/// quantile / median / percentile with the NaNs left out of each slice; NaN where a slice has only NaNs.
Tensor nanquantile(const Tensor& x, const std::vector<double>& q, const Axes& axis = {},
                   const std::string& method = "linear", bool keepdims = false);
Tensor nanquantile(const Tensor& x, double q, const Axes& axis = {}, const std::string& method = "linear",
                   bool keepdims = false);
Tensor nanmedian(const Tensor& x, const Axes& axis = {}, bool keepdims = false);
Tensor nanpercentile(const Tensor& x, double q, const Axes& axis = {}, const std::string& method = "linear",
                     bool keepdims = false);
/// The cross-correlation of two 1-D sequences, mode "valid" (x2 no longer than x1), "same" or "full"; int64
/// inputs in float64, other non-floats in float32 (Keras's TensorFlow backend).
Tensor correlate(const Tensor& x1, const Tensor& x2, const std::string& mode = "valid");
/// int32 indices that partition x along axis: the kth + 1 smallest first (ascending, ties by lower index), then
/// the others (descending). kth is clipped to the axis.
Tensor argpartition(const Tensor& x, int64_t kth, int axis = -1);
/// Osprey's tensors are real: real and conj give x, imag zeros, angle pi where x < 0 (else 0; float32 for
/// integers), isreal true everywhere.
Tensor real(const Tensor& x);
Tensor imag(const Tensor& x);
Tensor conj(const Tensor& x);
Tensor conjugate(const Tensor& x);
Tensor angle(const Tensor& x);
Tensor isreal(const Tensor& x);

// ---- more arrays: stacking, splitting, constructors, searching, counting (array_more.cpp) ----
/// x2 after x1 along axis (unset: both flattened).
Tensor append(const Tensor& x1, const Tensor& x2, std::optional<int> axis = std::nullopt);
/// Along the second axis (1-D: the first), the first, the third (dstack: inputs of lower rank given axes of 1 as
/// NumPy's atleast_3d; vstack of 1-D inputs is 1-D, as Keras's).
Tensor hstack(const std::vector<Tensor>& xs);
Tensor vstack(const std::vector<Tensor>& xs);
Tensor dstack(const std::vector<Tensor>& xs);
/// Into `sections` pieces, the first (n mod sections) one element longer (NumPy's array_split).
std::vector<Tensor> array_split(const Tensor& x, int64_t sections, int axis = 0);
/// split() along the second (1-D: first), the first, the third axis.
std::vector<Tensor> hsplit(const Tensor& x, int64_t sections);
std::vector<Tensor> vsplit(const Tensor& x, int64_t sections);
std::vector<Tensor> dsplit(const Tensor& x, int64_t sections);
/// The slices along axis, the axis removed.
std::vector<Tensor> unstack(const Tensor& x, int axis = 0);
/// flip along the second (fliplr) or first (flipud) axis; rot90: k quarter turns in the plane of `axes`, as
/// NumPy's (Keras 3.15's TensorFlow backend turns k = 2 wrongly: it transposes the plane instead).
Tensor fliplr(const Tensor& x);
Tensor flipud(const Tensor& x);
Tensor rot90(const Tensor& x, int k = 1, std::pair<int, int> axes = {0, 1});
/// Ones at and below diagonal k of an N×M matrix (float32 unless given).
Tensor tri(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType dtype = DType::float32);
/// Columns of powers of x: x^(N-1) ... x^0 (increasing: x^0 ... x^(N-1)); N unset: len(x).
Tensor vander(const Tensor& x, std::optional<int64_t> n = std::nullopt, bool increasing = false);
/// The Kronecker product (operands of lower rank given leading axes of 1).
Tensor kron(const Tensor& x1, const Tensor& x2);
/// Cross products of vectors of 3 (or 2: the z component) along axis.
Tensor cross(const Tensor& x1, const Tensor& x2, int axis = -1);
/// Σ x1·x2 over the flattened operands.
Tensor vdot(const Tensor& x1, const Tensor& x2);
/// base^linspace(start, stop).
Tensor logspace(double start, double stop, int64_t num = 50, bool endpoint = true, double base = 10.0,
                DType dtype = DType::float32);
/// diag() of the flattened x.
Tensor diagflat(const Tensor& x, int64_t k = 0);
/// From the first true condition's choice, element-wise; `default_value` where none is.
Tensor select(const std::vector<Tensor>& condlist, const std::vector<Tensor>& choicelist,
              const TensorLike& default_value = 0);
/// The index of the bin (increasing 1-D bins) each element falls in (int32); searchsorted: the insertion points
/// of values into a sorted 1-D sequence ("left": before equal elements, "right": after).
Tensor digitize(const Tensor& x, const Tensor& bins);
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, const std::string& side = "left");
/// Counts of each non-negative integer of a 1-D x (2-D: per row), summed weights where given; length
/// max(x) + 1 or minlength. int32 counts (weights: their dtype). InvalidArgumentError for negative values.
Tensor bincount(const Tensor& x, const std::optional<Tensor>& weights = std::nullopt, int64_t minlength = 0);
/// Whether each row's target class is among its k largest predictions (ties count as in, as TensorFlow's).
Tensor in_top_k(const Tensor& targets, const Tensor& predictions, int64_t k);
/// Rows of class indices (batch, n) as (batch, num_classes) vectors with a 1 at each.
Tensor multi_hot(const Tensor& inputs, int64_t num_classes, DType dtype = DType::float32);
/// Whether each element of x1 is in x2 (invert: not in).
Tensor isin(const Tensor& x1, const Tensor& x2, bool invert = false);
/// A copy of x (its own buffer).
Tensor copy(const Tensor& x);

// ---- segments, scatters, slice updates and the value-dependent shapes (scatter_ops.cpp) ----
/// The rows of data (N, ...) combined per segment id (N,): sums (ids >= num_segments: InvalidArgumentError,
/// negative ids dropped, as TensorFlow's), maxima and minima (an empty segment: the dtype's lowest/highest value).
/// num_segments unset: max(id) + 1, read on the host. Differentiable in data.
Tensor segment_sum(const Tensor& data, const Tensor& segment_ids, std::optional<int64_t> num_segments = std::nullopt);
Tensor segment_max(const Tensor& data, const Tensor& segment_ids, std::optional<int64_t> num_segments = std::nullopt);
Tensor segment_min(const Tensor& data, const Tensor& segment_ids, std::optional<int64_t> num_segments = std::nullopt);
/// The product of each segment's rows (an empty segment: 1, as TensorFlow's unsorted_segment_prod).
Tensor segment_prod(const Tensor& data, const Tensor& segment_ids, std::optional<int64_t> num_segments = std::nullopt);
/// Zeros of `shape` with values (N, shape[k:]...) added at the N index rows (N, k) (repeated indices add up, as
/// TensorFlow's scatter_nd); an index outside its axis is an InvalidArgumentError (indices read on the host).
Tensor scatter(const Tensor& indices, const Tensor& values, const std::vector<int64_t>& shape);
/// inputs with the slices at `indices` replaced by updates (reduction "add": added to them; "max", "min": the
/// largest/smallest of the slice and its updates; "mul": the slice times its updates). Repeated indices add their
/// updates up when replacing (TensorFlow leaves which one wins unspecified). Differentiable in inputs and updates.
Tensor scatter_update(const Tensor& inputs, const Tensor& indices, const Tensor& updates,
                      const std::optional<std::string>& reduction = std::nullopt);
/// inputs with the block starting at start_indices replaced by updates. Differentiable in both.
Tensor slice_update(const Tensor& inputs, const std::vector<int64_t>& start_indices, const Tensor& updates);
/// The int32 coordinates of x's nonzero elements, one tensor per axis (read on the host).
std::vector<Tensor> nonzero(const Tensor& x);
/// keras.ops.unique's arguments (Keras 3.15).
struct UniqueOptions {
  bool sorted = true;           ///< ascending (slices lexicographically); else in the order they first occur
  bool return_index = false;    ///< also the int32 position of each value's first occurrence
  bool return_inverse = false;  ///< also the int32 index of each element's value (x's shape; (n,) with an axis)
  bool return_counts = false;   ///< also the int32 count of each value
  std::optional<int> axis = std::nullopt;    ///< the slices along this axis are the elements; unset: x flattened
  std::optional<int64_t> size = std::nullopt;  ///< exactly this many values: truncated, or padded with fill_value
  double fill_value = 0;        ///< the values' padding (the first indices are padded with 1, the counts with 0)
};
/// keras.ops.unique: the distinct values of the flattened x, or the distinct slices along `axis`, with what
/// UniqueOptions asks, in Keras's order: values, index, inverse, counts. An element or slice holding a NaN equals
/// nothing (Keras's TensorFlow backend keeps each apart); sorted, NaNs follow the numbers (NumPy's order; TensorFlow's
/// sort leaves NaNs where its insertion sort stops, which may put numbers after them). Read on the host.
std::vector<Tensor> unique(const Tensor& x, const UniqueOptions& options);
/// The sorted distinct values of the flattened x; then, as asked, the inverse and the counts.
std::vector<Tensor> unique(const Tensor& x, bool return_inverse = false, bool return_counts = false);

}  // namespace osprey::keras::ops

#include "osprey/keras/image_ops.h"  // IWYU pragma: export
