// CPU kernels: registration and the helpers shared between kernel files.
#pragma once

#include <cstdint>

#include "ops/attrs.h"
#include "ops/kernel.h"

namespace osprey::cpu {

/// Puts every CPU kernel into the op table.
void register_cpu_kernels();

void register_math_kernels();
void register_nn_kernels();
void register_loss_kernels();
void register_optimizer_kernels();

/// y = act(z) over n values; softmax works on rows of length `cols`. z and y may alias.
void apply_activation(ops::Activation act, const float* z, float* y, int64_t n, int64_t cols);
/// Row-major C[m,n] = op(A)·op(B) (+ beta·C) through oneDNN's sgemm.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
          float beta = 0.0f);

/// While alive, GEMMs run on the calling thread alone when m·n·k is below `kSmallGemmWork`: OpenMP's fork/join
/// costs more than such a product (the seed model's step: 45.7 µs on one thread, 52–100 µs on two, depending on
/// the machine). Wrap both primitive creation and execution: oneDNN fixes a matmul's thread split at creation.
class GemmThreadLimit {
 public:
  static constexpr int64_t kSmallGemmWork = int64_t{1} << 20;
  GemmThreadLimit(int64_t m, int64_t n, int64_t k);
  ~GemmThreadLimit();
  GemmThreadLimit(const GemmThreadLimit&) = delete;
  GemmThreadLimit& operator=(const GemmThreadLimit&) = delete;

 private:
  int saved_ = 0;  // the thread count to restore; 0 when nothing was changed
};

}  // namespace osprey::cpu
