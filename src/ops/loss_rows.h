// The per-sample loss formulas of spec/keras_api.md §2, one row of d predictions at a time, shared by the CPU
// kernels and the CUDA plug-in's (nvcc compiles them as __host__ __device__), so that both backends compute the
// same values and the same gradients. No dependencies beyond <cmath>: the plug-in's kernels include no host headers.
//
// Each function returns the row's loss (the mean over its d values, accumulated in double) and, when `gr` is not
// null, writes d loss / d pred times `up` into gr[0, d). `want_value` false skips the value (and its logs). A
// `Label` is a callable: label(j) is the row's j-th label as a float.
#pragma once

#include <math.h>

#include <cstdint>

#if defined(__CUDACC__)
#define OSPREY_HOST_DEVICE __host__ __device__
#else
#define OSPREY_HOST_DEVICE
#endif

namespace osprey::loss_rows {

inline constexpr float kEps = 1e-7f;  // keras.config.epsilon()

OSPREY_HOST_DEVICE inline bool in_clip(float p) { return p >= kEps && p <= 1.f - kEps; }
// p clipped to [ε, 1 − ε]; NaN stays NaN.
OSPREY_HOST_DEVICE inline float clip(float p) { return p < kEps ? kEps : (p > 1.f - kEps ? 1.f - kEps : p); }

// Binary crossentropy of probabilities, element by element: the label after smoothing `ls`; the value from
// log(c) and log(1 − c), c = clip(p); the gradient times `up` for a row of d elements.
OSPREY_HOST_DEVICE inline float bce_label(float label, float ls) { return label * (1.f - ls) + 0.5f * ls; }
OSPREY_HOST_DEVICE inline float bce_value(float y, float log_c, float log_1c) {
  return -(y * log_c + (1.f - y) * log_1c);
}
OSPREY_HOST_DEVICE inline float bce_grad(float y, float p, float up, int64_t d) {
  const float c = clip(p);
  return in_clip(p) ? up * (-(y / c) + (1.f - y) / (1.f - c)) / static_cast<float>(d) : 0.f;
}

// Binary crossentropy of a row of probabilities, with label smoothing `ls`.
template <typename Label>
OSPREY_HOST_DEVICE inline float binary_crossentropy(const float* pr, int64_t d, Label label, float ls, bool want_value,
                                                    float up, float* gr) {
  double acc = 0.0;
  for (int64_t j = 0; j < d; ++j) {
    const float y = bce_label(label(j), ls);
    const float c = clip(pr[j]);
    if (want_value) {
      if (y == 0.f || y == 1.f) {
        // A log that is multiplied by an exact 0 is not computed: both logs are finite and non-zero after the
        // clip, so the term it would add is ±0 and the value is the same. The argument is selected rather than
        // branched on: the labels of a shuffled batch are a coin toss for the branch predictor.
        const float l = logf(y != 0.f ? c : 1.f - c);
        acc += bce_value(y, y != 0.f ? l : 0.f, y != 0.f ? 0.f : l);
      } else {
        acc += bce_value(y, logf(c), logf(1.f - c));
      }
    }
    if (gr) gr[j] = bce_grad(y, pr[j], up, d);
  }
  return static_cast<float>(acc / static_cast<double>(d));
}

// Categorical crossentropy of (unnormalised) probabilities: Keras divides them by their sum first. Sparse when
// `sparse_label` ≥ 0 (a valid class index, checked by the caller); else label(j) with label smoothing `ls`.
template <typename Label>
OSPREY_HOST_DEVICE inline float categorical_crossentropy(const float* pr, int64_t d, Label label, int64_t sparse_label,
                                                         float ls, bool want_value, float up, float* gr) {
  const bool sparse = sparse_label >= 0;
  double acc = 0.0;
  float s = 0.f;
  for (int64_t j = 0; j < d; ++j) s += pr[j];
  float weighted = 0.f;  // Σ_j dL/dq_j · q_j, for the normalisation's gradient
  for (int64_t j = 0; j < d; ++j) {
    const float y = sparse ? (j == sparse_label ? 1.f : 0.f) : label(j) * (1.f - ls) + ls / d;
    const float q = pr[j] / s;
    if (y != 0.f && want_value) acc += -y * logf(clip(q));
    const float dq = (y != 0.f && in_clip(q)) ? -y / q : 0.f;
    if (gr) gr[j] = dq;
    weighted += dq * q;
  }
  if (gr) {
    for (int64_t j = 0; j < d; ++j) gr[j] = up * (gr[j] - weighted) / s;
  }
  return static_cast<float>(acc);
}

template <typename Label>
OSPREY_HOST_DEVICE inline float mean_squared_error(const float* pr, int64_t d, Label label, float up, float* gr) {
  double acc = 0.0;
  for (int64_t j = 0; j < d; ++j) {
    const float e = pr[j] - label(j);
    acc += static_cast<double>(e) * e;
    if (gr) gr[j] = up * 2.f * e / static_cast<float>(d);
  }
  return static_cast<float>(acc / static_cast<double>(d));
}

template <typename Label>
OSPREY_HOST_DEVICE inline float mean_absolute_error(const float* pr, int64_t d, Label label, float up, float* gr) {
  double acc = 0.0;
  for (int64_t j = 0; j < d; ++j) {
    const float e = pr[j] - label(j);
    acc += fabsf(e);
    if (gr) gr[j] = up * static_cast<float>((e > 0.f) - (e < 0.f)) / static_cast<float>(d);
  }
  return static_cast<float>(acc / static_cast<double>(d));
}

}  // namespace osprey::loss_rows
