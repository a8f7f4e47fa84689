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

}  // namespace osprey::cpu
