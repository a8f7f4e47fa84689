// Launchers of the CUDA plug-in's device kernels. This header is shared by nvcc (kernels.cu) and the host compiler
// (cuda_ops.cpp), so it uses plain types only; the enums mirror Osprey's and are mapped in cuda_ops.cpp.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace osprey::cuda {

enum class Act : int { linear, relu, sigmoid, tanh, softmax, gelu, elu, selu, softplus, softsign, silu, leaky_relu,
                       exponential };
enum class Dt : int { f32, f64, i32, i64, b8, f16, bf16 };
enum class UnaryOp : int { neg, exp, log, sqrt, square, abs, sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, floor, ceil, round, log1p, expm1, erf };
enum class BinaryOp : int { add, sub, mul, div, maximum, greater_equal, minimum, pow, nextafter };
enum class Bcast : int { same, scalar_b, row_b, scalar_a, general };
enum class CmpOp : int { eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_xor };
enum class RedOp : int { sum, prod, max, min, argmax, argmin, any, all };
/// Up to three operands read through one output's index space (ops::StridedGeometry's layout): the output's dims
/// and each operand's element stride per axis (0 where broadcast).
struct Strided {
  int rank;
  long long dims[8];
  long long strides[3][8];
};
enum class LossOp : int { bce, cce, scce, mse, mae };
enum class AccOp : int { binary, categorical, sparse_categorical };

/// Device scratch a launcher may use: `partials` holds kMaxBlocks doubles, `error` 4 long longs
/// ([0] set to 1 by the first failing thread, [1] and [2] what failed).
struct Scratch {
  double* partials;
  long long* error;
};
inline constexpr int kMaxBlocks = 256;

void launch_cast(Dt from, Dt to, const void* x, void* y, int64_t n, cudaStream_t s);
void launch_unary(UnaryOp op, Dt dt, const void* x, void* y, int64_t n, cudaStream_t s);
void launch_binary(BinaryOp op, Bcast bc, Dt dt, const void* a, const void* b, void* y, int64_t n, int64_t cols,
                   cudaStream_t s);
/// NumPy broadcasting (kernels.cu): y[i] = op(a, b) through the geometry; n output elements.
void launch_binary_general(BinaryOp op, Dt dt, const Strided& g, const void* a, const void* b, void* y, int64_t n,
                           cudaStream_t s);
/// The ops behind keras::ops (kernels_toolkit.cu). broadcast_to and select copy elements of `elem_bytes` (1, 2, 4, 8).
void launch_broadcast_to(const Strided& g, int elem_bytes, const void* x, void* y, int64_t n, cudaStream_t s);
void launch_compare(CmpOp op, Dt dt, const Strided& g, const void* a, const void* b, bool* y, int64_t n,
                    cudaStream_t s);
/// ops::IntegerKind's ops on int32 (i32) or int64 (i64) operands, as the CPU kernel.
enum class IntOp : int { bit_and, bit_or, bit_xor, left_shift, right_shift, gcd, lcm };
void launch_integer_binary(IntOp op, Dt dt, const Strided& g, const void* a, const void* b, void* y, int64_t n,
                           cudaStream_t s);
void launch_select(const Strided& g, int elem_bytes, const bool* c, const void* x, const void* z, void* y, int64_t n,
                   cudaStream_t s);
/// (outer, r, inner) -> (outer, inner): a warp per output, lanes over r, combined in a fixed order.
void launch_reduce_axis(RedOp op, Dt dt, const void* x, void* y, int64_t outer, int64_t r, int64_t inner,
                        cudaStream_t s);
/// Running sums or products along the middle axis of (outer, r, inner): a thread per (outer, inner) column.
void launch_cumulative(Dt dt, bool prod, bool exclusive, bool reverse, const void* x, void* y, int64_t outer,
                       int64_t r, int64_t inner, cudaStream_t s);
/// The k first of each row of (rows, r) by (value, then index): a thread per row keeps them by insertion.
/// The linear-algebra kernels (kernels_linalg.cu; ops::LinalgAttrs's ops), one thread per matrix running
/// ops/linalg_core.h in double in `scratch` (device memory): LU (n·n doubles a matrix), Cholesky (n·n), triangular
/// solves (n per matrix and column), the symmetric eigendecomposition (2n·n + n), the SVD
/// (svd_scratch_per_matrix).
void launch_lu_factor(const float* a, float* lu, int32_t* perm, float* sign, double* scratch, int64_t batch, int64_t n,
                      cudaStream_t s);
void launch_cholesky(const float* a, float* l, double* scratch, int64_t batch, int64_t n, cudaStream_t s);
void launch_triangular_solve(const float* a, const float* rhs, const int32_t* perm, float* x, double* scratch,
                             int64_t batch, int64_t n, int64_t k, bool lower, bool adjoint, bool unit, cudaStream_t s);
void launch_self_adjoint_eig(const float* a, float* w, float* v, double* scratch, int64_t batch, int64_t n,
                             cudaStream_t s);
int64_t svd_scratch_per_matrix(int64_t m, int64_t n, bool full);
void launch_svd(const float* a, float* s_out, float* u, float* v, double* scratch, int64_t batch, int64_t m, int64_t n,
                bool full, cudaStream_t s);
/// Householder QR: q (m x qc), r (qc x n); scratch m·n + m·qc + qc·n + m·m + m doubles a matrix.
void launch_qr(const float* a, float* q, float* r, double* scratch, int64_t batch, int64_t m, int64_t n, int64_t qc,
               cudaStream_t s);
void launch_top_k(Dt dt, const void* x, void* values, int32_t* indices, int64_t rows, int64_t r, int64_t k,
                  bool largest, cudaStream_t s);
/// Fft (kernels_fft.cu; `kind` is ops::FftKind's value) of `rows` rows of length n in float32 (f32) or float64
/// (f64); `work` holds fft_work_elements(rows, n) values of that dtype; xi and yi unused where the kind has no
/// such part.
int64_t fft_work_elements(int64_t rows, int64_t n);
void launch_fft(int kind, Dt dt, const void* xr, const void* xi, void* yr, void* yi, void* work, int64_t rows, int64_t n,
                cudaStream_t s);
/// The CTC kernels (kernels_ctc.cu; ops/ctc_core.h): the loss of each sequence and, with `grad` (else null), its
/// gradient for the logits, in `scratch` (ctc_loss_scratch_doubles doubles on the device); the greedy decoder. Bad
/// lengths or labels set the error ([1] = problem + 8·sample, [2] = (position + 1)·2^32 + the value's 32 bits).
int64_t ctc_loss_scratch_doubles(int64_t batch, int64_t frames, int64_t max_label);
void launch_ctc_loss(const int32_t* labels, const float* logits, const int32_t* label_length,
                     const int32_t* logit_length, float* loss, float* grad, double* scratch, int64_t batch,
                     int64_t frames, int64_t classes, int64_t max_label, int64_t blank, long long* error,
                     cudaStream_t s);
void launch_ctc_greedy(const float* logits, const int32_t* lengths, int32_t* decoded, float* scores, int64_t batch,
                       int64_t frames, int64_t classes, int64_t blank, bool merge_repeated, long long* error,
                       cudaStream_t s);
/// Activations and their gradients on float32, float16 or bfloat16 tensors (`dt`; every operand of that type): the
/// arithmetic in float32, each result rounded once. z and y may alias; z of the gradient may be null where the
/// activation's gradient reads only y.
void launch_activation(Act act, Dt dt, const void* z, void* y, int64_t n, int64_t cols, cudaStream_t s);
void launch_activation_grad(Act act, Dt dt, const void* dy, const void* y, const void* z, void* dz, int64_t n,
                            int64_t cols, cudaStream_t s);
/// y[c] = Σ_r x[r, c] (also the bias gradient), x of type `dt` and y of `out_dt` (each float32, float16 or
/// bfloat16), summed in float32 in a fixed order. With `scratch` (sum_axis0_scratch_floats(rows, cols) floats on
/// the device; null where that is 0) the rows are split over many blocks; without it one block per 32 columns.
void launch_sum_axis0(Dt dt, Dt out_dt, const void* x, void* y, int64_t rows, int64_t cols, float* scratch,
                      cudaStream_t s);
int64_t sum_axis0_scratch_floats(int64_t rows, int64_t cols);
/// y[r] = Σ_c x[r, c].
void launch_sum_axis1(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t s);
/// y[0] = Σ x (or the mean), accumulated in double in a fixed order (deterministic).
void launch_sum_all(const float* x, float* y, int64_t n, bool mean, Scratch scratch, cudaStream_t s);
/// Copies rows idx[i] of src into dst; out-of-range indices set the error ([1] = i, [2] = idx[i]).
void launch_gather_rows(const char* src, const int64_t* idx, char* dst, int64_t count, int64_t rows,
                        int64_t row_bytes, Scratch scratch, cudaStream_t s);
/// out (rows, cols) = 0, then out[idx[i]] += upd[i] for i in order: one thread per column (deterministic); an index
/// outside [0, rows) sets the error (position, index).
void launch_scatter_add_rows(const float* upd, const int64_t* idx, float* out, int64_t count, int64_t rows,
                             int64_t cols, Scratch scratch, cudaStream_t s);
/// y = x with its axes permuted: out axis i is x's axis perm[i]; `in_dims` x's shape; elements of `elem_bytes`
/// (1, 2, 4 or 8) bytes; rank <= 8.
void launch_transpose(const void* x, void* y, int rank, const int64_t* in_dims, const int* perm, int64_t n,
                      int elem_bytes, cudaStream_t s);
/// y[i] = uniform float in [0, 1) from Philox(state[0], state[1]) starting at block state[2] (all read on the
/// device), then state[2] += blocks used: the CPU kernel's numbers.
void launch_random_uniform_state(long long* state, float* y, int64_t n, cudaStream_t s);
/// Per-sample loss into `out` (when not null) and/or d loss/d y_pred into `dp` scaled by `upstream` (when not
/// null). Sparse labels out of range set the error ([1] = sample, [2] = the label's float bits).
void launch_loss(LossOp op, Dt label_dt, const void* y_true, const float* y_pred, int64_t n, int64_t d,
                 float label_smoothing, float* out, const float* upstream, float* dp, Scratch scratch,
                 cudaStream_t s);
/// out[0] = number of correct samples (fractional per sample for multi-output binary accuracy).
void launch_accuracy(AccOp op, Dt label_dt, const void* y_true, const float* y_pred, int64_t n, int64_t d,
                     int64_t true_d, float threshold, float* out, Scratch scratch, cudaStream_t s);

void launch_sgd(float* var, const float* g, float* m, int64_t n, float lr, float momentum, bool nesterov,
                cudaStream_t s);
void launch_adam(float* var, float* m, float* v, const float* g, float* vhat, int64_t n, float alpha, float beta_1,
                 float beta_2, float epsilon, cudaStream_t s);
/// Up to kAdamGroup variables of one Adam step, updated by one launch (launch_adam_many).
inline constexpr int kAdamGroup = 16;
struct AdamGroup {
  float* var[kAdamGroup];
  float* m[kAdamGroup];
  float* v[kAdamGroup];
  const float* g[kAdamGroup];
  float* vhat[kAdamGroup];        ///< null without amsgrad
  const float* g2[kAdamGroup];    ///< with it, the gradient is (g + g2) · 0.5 (two half-batches)
  int64_t n[kAdamGroup];
  int count;
};
/// launch_adam() for every variable of `group` (passed by value as the kernel's parameter: no upload).
void launch_adam_many(const AdamGroup& group, float alpha, float beta_1, float beta_2, float epsilon, cudaStream_t s);
void launch_rmsprop(float* var, float* v, const float* g, float* mom, float* mg, int64_t n, float lr, float rho,
                    float momentum, float epsilon, cudaStream_t s);
/// z[r, c] = bias[c] (or 0): the product of an empty reduction, for k == 0 matmuls (float32, float16 or bfloat16).
void launch_fill_rows(Dt dt, void* z, const void* bias, int64_t rows, int64_t cols, cudaStream_t s);

/// A pooling window over channels-last (N, d0, d1, d2, C) tensors: up to three spatial axes, missing leading ones
/// of extent 1 (window 1, stride 1, no padding). `pad` is the padding before each axis (the one after only shortens
/// the output).
struct PoolGeometry {
  long long n, c;
  long long in[3], out[3], window[3], stride[3], pad[3];
  int max;  ///< 1: maximum (the first maximum of a window, in row-major order); 0: mean of the elements inside
};
/// Every tensor of type `dt` (float32, float16 or bfloat16; half values summed in float32, rounded once).
void launch_pool(const PoolGeometry& g, Dt dt, const void* x, void* y, cudaStream_t s);
/// dx of the pooling: each input element gathers the gradients of the windows that took it (a fixed order: no
/// atomics, the same bits every run).
void launch_pool_grad(const PoolGeometry& g, Dt dt, const void* x, const void* dy, void* dx, cudaStream_t s);
/// Copies between a tensor and a region of a larger one (both rank <= 5, row-major): `into_big` writes `small` at
/// `offset` inside `big` (whose other elements the caller zeroed); otherwise reads that region of `big` into
/// `small`. Elements of `elem_bytes` (2 or 4) bytes.
struct RegionGeometry {
  int rank;
  long long small[5], big[5], offset[5];
};
void launch_region_copy(const RegionGeometry& g, void* small, void* big, int elem_bytes, bool into_big, cudaStream_t s);

/// tf.image.resize of (n, h, w, c) images to (n, oh, ow, c): bilinear or nearest, half-pixel centres.
void launch_resize(const float* x, float* y, int64_t n, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow,
                   bool bilinear, cudaStream_t s);
/// y (outer, out, inner) = x (outer, in, inner) resampled along the middle axis by a table (ops/resample_tables.h;
/// starts and weights in device memory).
void launch_resample(const float* x, const int64_t* starts, const float* weights, float* y, int64_t outer,
                     int64_t in, int64_t out, int64_t inner, int64_t span, cudaStream_t s);
/// TensorFlow's ImageProjectiveTransformV3 (ops/transform_taps.h); `per_image`: transforms (n, 8), else (1, 8).
void launch_affine_transform(const float* x, const float* transforms, float* y, int64_t n, int64_t h, int64_t w,
                             int64_t c, bool per_image, bool bilinear, int fill_mode, float fill_value,
                             cudaStream_t s);
/// Its gradient: one thread per sample and channel scatters its output pixels in order (deterministic).
void launch_resize_grad(const float* dy, float* dx, int64_t n, int64_t h, int64_t w, int64_t c, int64_t oh,
                        int64_t ow, bool bilinear, cudaStream_t s);

/// ops::masked_softmax over rows of dims[rank - 1] (kernels_attention.cu): the mask's stride per axis (0 where it
/// broadcasts), a causal band, left-out logits set to masked_value and (zero_masked) their outputs to 0.
struct MaskedSoftmaxShape {
  int rank;
  long long dims[8], mask_strides[8];
  bool has_mask, causal, zero_masked;
  float masked_value;
};
void launch_masked_softmax(const MaskedSoftmaxShape& a, const float* x, const float* mask, float* y, int64_t rows,
                           cudaStream_t s);
void launch_masked_softmax_grad(const MaskedSoftmaxShape& a, const float* dy, const float* y, const float* mask,
                                float* dx, int64_t rows, cudaStream_t s);

/// ops::layer_norm over rows of d (kernels_norm.cu): gamma, beta may be null; mean and rstd per row kept.
void launch_layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                       int64_t rows, int64_t d, float epsilon, cudaStream_t s);
/// Its gradient: dx, and dy ⊙ x̂ (summed over rows by the caller for gamma's gradient).
void launch_layer_norm_grad(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                            float* dx, float* dyx, int64_t rows, int64_t d, cudaStream_t s);
/// ops::lstm_cell (kernels_rnn.cu): z (rows, 4·units) in Keras's gate order, c_prev (rows, units) -> h, c.
void launch_lstm_cell(const float* z, const float* c_prev, float* h, float* c, int64_t rows, int64_t units,
                      cudaStream_t s);
/// Its gradient: dh, dc, z, c_prev, c -> dz (rows, 4·units), dc_prev (rows, units).
void launch_lstm_cell_grad(const float* dh, const float* dc, const float* z, const float* c_prev, const float* c,
                           float* dz, float* dc_prev, int64_t rows, int64_t units, cudaStream_t s);
/// ops::gru_cell (kernels_rnn.cu): x, r (rows, 3·units) in Keras's gate order, h_prev (rows, units) -> h.
void launch_gru_cell(const float* x, const float* r, const float* h_prev, float* h, int64_t rows, int64_t units,
                     cudaStream_t s);
/// Its gradient: dh, x, r, h_prev -> dx, dr (rows, 3·units), dh_prev (rows, units).
void launch_gru_cell_grad(const float* dh, const float* x, const float* r, const float* h_prev, float* dx, float* dr,
                          float* dh_prev, int64_t rows, int64_t units, cudaStream_t s);

}  // namespace osprey::cuda
