// exp, log and the logistic sigmoid over arrays of floats, eight at a time in AVX2 + FMA registers (Cephes's
// single-precision polynomials: within 2 ulp of the correctly rounded value over the ranges below), and one value
// at a time through <cmath> on CPUs without AVX2 + FMA. The seed model's sigmoid output and its crossentropy took
// ~15 ns per row through glibc's scalar expf and logf plus the per-row loop around them.
#pragma once

#include <cstdint>

namespace osprey::cpu {

/// y[i] = exp(x[i]); results below 2^-126 are subnormal, and x below -88.38 gives exp(-88.38) ≈ 4e-39 rather than
/// 0; above 88.72 +inf; NaN stays NaN.
void exp_values(const float* x, float* y, int64_t n);
/// y[i] = log(x[i]) for x > 0 (subnormal x as 2^-126's log); 0 gives -inf, negatives and NaN give NaN, +inf +inf.
void log_values(const float* x, float* y, int64_t n);
/// y[i] = 1 / (1 + exp(-x[i])); NaN stays NaN. x and y may alias.
void sigmoid_values(const float* x, float* y, int64_t n);
/// y = tanh(x) (Cephes's tanhf, within 2 ulp).
void tanh_values(const float* x, float* y, int64_t n);

}  // namespace osprey::cpu
