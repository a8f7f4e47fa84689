// CPU kernels for optimizer updates: one pass over each variable (formulas: spec/keras_api.md §3), split between
// the intra-op threads for large variables (element-wise, so the result does not depend on the split).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/kernels.h"

namespace osprey::cpu {

using ops::KernelContext;
using runtime::DeviceType;

// The loops load into locals before storing, and restrict-qualified pointers let GCC vectorise them (AVX2 clones:
// OSPREY_VECTOR_CLONES in kernels.h).

OSPREY_VECTOR_CLONES static void sgd_range(float* __restrict var, const float* __restrict g, float* __restrict m,
                                           int64_t n, float lr, float momentum, bool nesterov) {
  if (!m || momentum == 0.f) {
    for (int64_t i = 0; i < n; ++i) var[i] -= lr * g[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float mi = momentum * m[i] - lr * g[i];
    m[i] = mi;
    var[i] += nesterov ? momentum * mi - lr * g[i] : mi;
  }
}

static void sgd_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::SgdAttrs>();
  float* var = ctx.inputs[0].data<float>();
  const float* g = ctx.inputs[1].data<float>();
  float* m = ctx.inputs[2].defined() ? ctx.inputs[2].data<float>() : nullptr;
  parallel_chunks(ctx.inputs[0].num_elements(), [&](int64_t b, int64_t e) {
    sgd_range(var + b, g + b, m ? m + b : nullptr, e - b, at.learning_rate, at.momentum, at.nesterov);
  });
}

// One Adam pass; with kHalves the gradient is (g + g2) · 0.5 (the two halves of a batch, averaged in this pass).
// Restrict-qualified parameters of its own let GCC vectorise each instantiation (through a lambda capturing the
// pointers it kept only one of four variants vectorised).
template <bool kHalves, bool kAmsgrad>
__attribute__((always_inline)) inline void adam_loop(float* __restrict var, float* __restrict m, float* __restrict v,
                                                     const float* __restrict g, const float* __restrict g2,
                                                     float* __restrict vhat, int64_t n, float alpha, float c1,
                                                     float c2, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = kHalves ? (g[i] + g2[i]) * 0.5f : g[i];
    const float mi = m[i] + (gi - m[i]) * c1;
    const float vi = v[i] + (gi * gi - v[i]) * c2;
    m[i] = mi;
    v[i] = vi;
    float denom = vi;
    if constexpr (kAmsgrad) {
      denom = std::max(vhat[i], vi);
      vhat[i] = denom;
    }
    var[i] -= (mi * alpha) / (std::sqrt(denom) + eps);
  }
}

OSPREY_VECTOR_CLONES static void adam_range(float* __restrict var, float* __restrict m, float* __restrict v,
                                            const float* __restrict g, float* __restrict vhat, int64_t n, float alpha,
                                            float beta_1, float beta_2, float eps, const float* __restrict g2 = nullptr) {
  const float c1 = 1.f - beta_1, c2 = 1.f - beta_2;
  if (!vhat && !g2) return adam_loop<false, false>(var, m, v, g, g2, vhat, n, alpha, c1, c2, eps);
  if (!vhat) return adam_loop<true, false>(var, m, v, g, g2, vhat, n, alpha, c1, c2, eps);
  if (!g2) return adam_loop<false, true>(var, m, v, g, g2, vhat, n, alpha, c1, c2, eps);
  adam_loop<true, true>(var, m, v, g, g2, vhat, n, alpha, c1, c2, eps);
}

static void adam_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::AdamAttrs>();
  float* var = ctx.inputs[0].data<float>();
  float* m = ctx.inputs[1].data<float>();
  float* v = ctx.inputs[2].data<float>();
  const float* g = ctx.inputs[3].data<float>();
  float* vhat = ctx.inputs[4].defined() ? ctx.inputs[4].data<float>() : nullptr;
  parallel_chunks(ctx.inputs[0].num_elements(), [&](int64_t b, int64_t e) {
    adam_range(var + b, m + b, v + b, g + b, vhat ? vhat + b : nullptr, e - b, at.alpha, at.beta_1, at.beta_2,
               at.epsilon);
  });
}

// ApplyAdamMany: the variables' elements as one range [0, Σn), split like one variable's.
static void adam_many_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::AdamAttrs>();
  const std::size_t count = ctx.inputs.size() / 6;
  // starts[i]: where variable i begins in the range. The calling thread's buffer: the other threads read it
  // through this reference (a thread_local named inside the lambda would be their own, empty one).
  thread_local std::vector<int64_t> buffer;
  std::vector<int64_t>& starts = buffer;
  starts.assign(count + 1, 0);
  for (std::size_t i = 0; i < count; ++i) starts[i + 1] = starts[i] + ctx.inputs[6 * i].num_elements();
  parallel_chunks(starts[count], [&](int64_t b, int64_t e) {
    std::size_t i = static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), b) - starts.begin()) - 1;
    for (; i < count && starts[i] < e; ++i) {
      const Tensor* t = &ctx.inputs[6 * i];
      const int64_t lo = std::max(b, starts[i]) - starts[i], hi = std::min(e, starts[i + 1]) - starts[i];
      if (hi <= lo) continue;
      float* vhat = t[4].defined() ? t[4].data<float>() + lo : nullptr;
      const float* g2 = t[5].defined() ? t[5].data<float>() + lo : nullptr;
      adam_range(t[0].data<float>() + lo, t[1].data<float>() + lo, t[2].data<float>() + lo, t[3].data<float>() + lo,
                 vhat, hi - lo, at.alpha, at.beta_1, at.beta_2, at.epsilon, g2);
    }
  });
}

OSPREY_VECTOR_CLONES static void rmsprop_range(float* __restrict var, float* __restrict v, const float* __restrict g,
                                               float* __restrict mom, float* __restrict mg, int64_t n, float lr,
                                               float rho, float momentum, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float vi = rho * v[i] + (1.f - rho) * gi * gi;
    v[i] = vi;
    float denom = vi;
    if (mg) {
      const float mgi = rho * mg[i] + (1.f - rho) * gi;
      mg[i] = mgi;
      denom -= mgi * mgi;
    }
    const float inc = lr * gi / std::sqrt(denom + eps);
    if (mom && momentum > 0.f) {
      const float mo = momentum * mom[i] + inc;
      mom[i] = mo;
      var[i] -= mo;
    } else {
      var[i] -= inc;
    }
  }
}

static void rmsprop_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::RmspropAttrs>();
  float* var = ctx.inputs[0].data<float>();
  float* v = ctx.inputs[1].data<float>();
  const float* g = ctx.inputs[2].data<float>();
  float* mom = ctx.inputs[3].defined() ? ctx.inputs[3].data<float>() : nullptr;
  float* mg = ctx.inputs[4].defined() ? ctx.inputs[4].data<float>() : nullptr;
  parallel_chunks(ctx.inputs[0].num_elements(), [&](int64_t b, int64_t e) {
    rmsprop_range(var + b, v + b, g + b, mom ? mom + b : nullptr, mg ? mg + b : nullptr, e - b, at.learning_rate,
                  at.rho, at.momentum, at.epsilon);
  });
}

void register_optimizer_kernels() {
  ops::register_kernel(ops::OpId::ApplySgd, DeviceType::CPU, sgd_kernel);
  ops::register_kernel(ops::OpId::ApplyAdam, DeviceType::CPU, adam_kernel);
  ops::register_kernel(ops::OpId::ApplyAdamMany, DeviceType::CPU, adam_many_kernel);
  ops::register_kernel(ops::OpId::ApplyRmsprop, DeviceType::CPU, rmsprop_kernel);
}

}  // namespace osprey::cpu
