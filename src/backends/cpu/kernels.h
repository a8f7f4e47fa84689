// CPU kernels: registration and the helpers shared between kernel files.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "runtime/pair_runner.h"
#include "backends/cpu/small_gemm.h"
#include "ops/attrs.h"
#include "ops/kernel.h"

// An AVX2 clone of a hot loop next to the baseline (x86-64) one, chosen at load time where the CPU has AVX2. The
// same operations per element in the same order (no FMA contraction), so both clones give the same results.
// Sanitizer builds define it empty (-DOSPREY_VECTOR_CLONES=): the clones' ifunc resolvers run before the
// sanitizer's runtime is set up.
#ifndef OSPREY_VECTOR_CLONES
#define OSPREY_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#endif

namespace osprey::cpu {

/// Runs f(begin, end) over [0, n) split between the intra-op (OpenMP) threads when n is large enough to pay for
/// the fork/join, else once on the calling thread. For element-wise loops: every element is computed the same way
/// whatever the split, so results do not depend on the thread count. Chunks start at multiples of 16 elements.
/// Mid-sized loops (from kPairSplit elements) go to two threads through the spinning helper (pair_runner.h), split
/// at the middle rounded to 16 elements: the same rows a small GEMM of the step gives each thread.
template <typename F>
void parallel_chunks(int64_t n, F&& f, int64_t grain = int64_t{1} << 14) {
  constexpr int64_t kPairSplit = 2048;
  const int threads = runtime::in_pair_half() ? 1 : omp_get_max_threads();
  if (threads <= 1 || n < 2 * grain) {
    runtime::split_in_two(n, threads > 1 && n >= kPairSplit, 16, f);
    return;
  }
  const int use = static_cast<int>(std::min<int64_t>(threads, n / grain));
  const runtime::Device* device = runtime::executing_device();  // the team's threads run parts of this kernel
#pragma omp parallel num_threads(use)
  {
    runtime::ExecutingDevice on(device);
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t b = std::min(n, (n * t / nt) & ~int64_t{15}), e = t + 1 == nt ? n : std::min(n, (n * (t + 1) / nt) & ~int64_t{15});
    if (e > b) f(b, e);
  }
}

/// Puts every CPU kernel into the op table.
void register_cpu_kernels();

void register_math_kernels();
void register_nn_kernels();
void register_loss_kernels();
void register_optimizer_kernels();
void register_array_kernels();
void register_conv_kernels();
void register_image_kernels();
void register_attention_kernels();
void register_norm_kernels();
void register_rnn_kernels();
void register_rnn_sequence_kernels();
void register_toolkit_kernels();
void register_linalg_kernels();
void register_fft_kernels();
void register_ctc_kernels();

/// MatMul of bfloat16 operands through oneDNN (kernels_bf16.cpp).
void matmul_bf16(const ops::KernelContext& ctx);
/// Row-major C[m,n] = op(A)·op(B) of bfloat16 operands, C in bfloat16 (float32 accumulation).
void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c);
/// FusedMatMul and DenseGrad (a Dense layer's forward and backward) of bfloat16 tensors: the product with the bias
/// and the activation applied to its float32 result before the one rounding to bfloat16 (kernels_bf16.cpp).
void dense_bf16(const ops::KernelContext& ctx);
void dense_grad_bf16(const ops::KernelContext& ctx);
/// The float32 kernel of ActivationGrad (kernels_nn.cpp).
void activation_grad_kernel(const ops::KernelContext& ctx);
/// float32 <-> bfloat16 conversion of n values (round to nearest even; NaN stays NaN), vectorised.
void floats_to_bf16(const float* s, uint16_t* d, int64_t n);
void bf16_to_floats(const uint16_t* s, float* d, int64_t n);

/// y = act(z) over n values; softmax works on rows of length `cols`. z and y may alias.
void apply_activation(ops::Activation act, const float* z, float* y, int64_t n, int64_t cols);
/// y = act(x) element by element (not softmax) for float32 or bfloat16 tensors of one size, split between the
/// intra-op threads; y may be x.
void activation_values(ops::Activation act, const Tensor& x, Tensor& y);
/// Row-major C[m,n] = op(A)·op(B) (+ beta·C): Osprey's own kernel where own_gemm() takes the product (small
/// products, and the mid-sized ones it runs faster than oneDNN; AVX2 and FMA), oneDNN's sgemm otherwise.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
          float beta = 0.0f);

/// While alive, oneDNN GEMMs run on the calling thread alone when m·n·k is below `kSmallGemmMaxWork` (OpenMP's
/// fork/join costs more than such a product; with AVX2 Osprey's own kernel takes them anyway) or when the thread
/// runs half of a pair (the other core has the other half). Wrap both primitive creation and execution: oneDNN
/// fixes a matmul's thread split at creation. Above the limit both threads pay: the wide MLP's 128x512 by 512x10
/// layer took 31 us on one thread, 14 us on two.
class GemmThreadLimit {
 public:
  GemmThreadLimit(int64_t m, int64_t n, int64_t k);
  ~GemmThreadLimit();
  GemmThreadLimit(const GemmThreadLimit&) = delete;
  GemmThreadLimit& operator=(const GemmThreadLimit&) = delete;

 private:
  int saved_ = 0;  // the thread count to restore; 0 when nothing was changed
};

}  // namespace osprey::cpu
