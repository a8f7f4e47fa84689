#include "backends/cpu/vector_math.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "backends/cpu/small_gemm.h"

namespace osprey::cpu {

namespace {

#define OSPREY_AVX2 __attribute__((target("avx2,fma")))

// Cephes expf: exp(x) = 2^n · exp(r), n = round(x / ln 2), r = x − n·ln 2 (ln 2 in two parts), exp(r) by a
// degree-5 polynomial in r plus 1 + r.
OSPREY_AVX2 inline __m256 exp8(__m256 x) {
  const __m256 input = x;
  const __m256 over = _mm256_cmp_ps(x, _mm256_set1_ps(88.72283905206835f), _CMP_GT_OQ);
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-88.3762626647949f));
  __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, z, x);
  y = _mm256_add_ps(y, _mm256_set1_ps(1.f));
  // 2^n in two factors: n reaches 128 at the top of the range, one past the largest normal exponent.
  const __m256i n = _mm256_cvttps_epi32(fx);
  const __m256i n1 = _mm256_srai_epi32(n, 1), n2 = _mm256_sub_epi32(n, n1);
  const __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
  y = _mm256_mul_ps(_mm256_mul_ps(y, p1), p2);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), over);
  return _mm256_blendv_ps(y, input, _mm256_cmp_ps(input, input, _CMP_UNORD_Q));  // min/max dropped the NaN
}

// Cephes logf: x = m · 2^e with m in [√½, √2), log(x) = e·ln 2 + log(m), log(m) = t − t²/2 + t³·P(t), t = m − 1.
OSPREY_AVX2 inline __m256 log8(__m256 x) {
  const __m256 input = x;
  x = _mm256_max_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x00800000)));  // subnormals as the smallest normal
  __m256i bits = _mm256_castps_si256(x);
  __m256 e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(126)));
  bits = _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)), _mm256_set1_epi32(0x3F000000));
  x = _mm256_castsi256_ps(bits);  // in [0.5, 1)
  const __m256 small = _mm256_cmp_ps(x, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
  e = _mm256_sub_ps(e, _mm256_and_ps(_mm256_set1_ps(1.f), small));
  x = _mm256_add_ps(_mm256_sub_ps(x, _mm256_set1_ps(1.f)), _mm256_and_ps(x, small));
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(7.0376836292e-2f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-1.1514610310e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.1676998740e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-1.2420140846e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.4249322787e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-1.6668057665e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(2.0000714765e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-2.4999993993e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(3.3333331174e-1f));
  y = _mm256_mul_ps(_mm256_mul_ps(y, x), z);
  y = _mm256_fmadd_ps(e, _mm256_set1_ps(-2.12194440e-4f), y);
  y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
  x = _mm256_add_ps(x, y);
  x = _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), x);
  // The special values: log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN stays NaN.
  x = _mm256_blendv_ps(x, _mm256_set1_ps(-INFINITY), _mm256_cmp_ps(input, _mm256_setzero_ps(), _CMP_EQ_OQ));
  x = _mm256_blendv_ps(x, _mm256_set1_ps(NAN), _mm256_cmp_ps(input, _mm256_setzero_ps(), _CMP_LT_OQ));
  x = _mm256_blendv_ps(x, input, _mm256_cmp_ps(input, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ));
  return _mm256_blendv_ps(x, input, _mm256_cmp_ps(input, input, _CMP_UNORD_Q));
}

OSPREY_AVX2 inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// Cephes tanhf: |x| < 0.625: x + x³·P(x²); else sign(x) · (1 − 2 / (exp(2|x|) + 1)) (1 beyond |x| = 44).
OSPREY_AVX2 inline __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 s = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-3.33332819422e-1f));
  const __m256 small = _mm256_or_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, s), x, x), sign);  // keeps -0
  const __m256 e = exp8(_mm256_add_ps(_mm256_min_ps(a, _mm256_set1_ps(44.f)), _mm256_min_ps(a, _mm256_set1_ps(44.f))));
  const __m256 one = _mm256_set1_ps(1.f);
  __m256 large = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(e, one)));
  large = _mm256_or_ps(large, sign);
  const __m256 y = _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays NaN
}

// f over n values: whole vectors, then the tail through a zero-padded vector (every value is computed by the same
// vector code, wherever it sits in the array).
template <__m256 (*F)(__m256)>
OSPREY_AVX2 void map8(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float tail[8] = {1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f};
    std::memcpy(tail, x + i, sizeof(float) * static_cast<std::size_t>(n - i));
    _mm256_store_ps(tail, F(_mm256_load_ps(tail)));
    std::memcpy(y + i, tail, sizeof(float) * static_cast<std::size_t>(n - i));
  }
}

}  // namespace

void exp_values(const float* x, float* y, int64_t n) {
  if (cpu_has_avx2_fma()) return map8<exp8>(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void log_values(const float* x, float* y, int64_t n) {
  if (cpu_has_avx2_fma()) return map8<log8>(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = std::log(x[i]);
}

void tanh_values(const float* x, float* y, int64_t n) {
  if (cpu_has_avx2_fma()) return map8<tanh8>(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

void sigmoid_values(const float* x, float* y, int64_t n) {
  if (cpu_has_avx2_fma()) return map8<sigmoid8>(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-x[i]));
}

}  // namespace osprey::cpu
