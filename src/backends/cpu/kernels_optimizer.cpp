// CPU kernels for optimizer updates: one pass over each variable (formulas: spec/keras_api.md §3).
#include <cmath>

#include "backends/cpu/kernels.h"

namespace osprey::cpu {

using ops::KernelContext;
using runtime::DeviceType;

static void sgd_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::SgdAttrs>();
  float* var = ctx.inputs[0].data<float>();
  const float* g = ctx.inputs[1].data<float>();
  const int64_t n = ctx.inputs[0].num_elements();
  if (!ctx.inputs[2].defined() || at.momentum == 0.f) {
    for (int64_t i = 0; i < n; ++i) var[i] -= at.learning_rate * g[i];
    return;
  }
  float* m = ctx.inputs[2].data<float>();
  for (int64_t i = 0; i < n; ++i) {
    m[i] = at.momentum * m[i] - at.learning_rate * g[i];
    var[i] += at.nesterov ? at.momentum * m[i] - at.learning_rate * g[i] : m[i];
  }
}

__attribute__((target_clones("avx2", "default"))) static void adam_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::AdamAttrs>();
  float* __restrict var = ctx.inputs[0].data<float>();
  float* __restrict m = ctx.inputs[1].data<float>();
  float* __restrict v = ctx.inputs[2].data<float>();
  const float* __restrict g = ctx.inputs[3].data<float>();
  float* __restrict vhat = ctx.inputs[4].defined() ? ctx.inputs[4].data<float>() : nullptr;
  const int64_t n = ctx.inputs[0].num_elements();
  const float c1 = 1.f - at.beta_1, c2 = 1.f - at.beta_2, alpha = at.alpha, eps = at.epsilon;
  // Loads into locals first and two loops instead of a branch inside one: GCC vectorises both forms (the
  // aliasing version checks cost a tenth of the seed model's step).
  if (!vhat) {
    for (int64_t i = 0; i < n; ++i) {
      const float gi = g[i];
      const float mi = m[i] + (gi - m[i]) * c1;
      const float vi = v[i] + (gi * gi - v[i]) * c2;
      m[i] = mi;
      v[i] = vi;
      var[i] -= (mi * alpha) / (std::sqrt(vi) + eps);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] + (gi - m[i]) * c1;
    const float vi = v[i] + (gi * gi - v[i]) * c2;
    const float vh = std::max(vhat[i], vi);
    m[i] = mi;
    v[i] = vi;
    vhat[i] = vh;
    var[i] -= (mi * alpha) / (std::sqrt(vh) + eps);
  }
}

static void rmsprop_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::RmspropAttrs>();
  float* var = ctx.inputs[0].data<float>();
  float* v = ctx.inputs[1].data<float>();
  const float* g = ctx.inputs[2].data<float>();
  float* mom = ctx.inputs[3].defined() ? ctx.inputs[3].data<float>() : nullptr;
  float* mg = ctx.inputs[4].defined() ? ctx.inputs[4].data<float>() : nullptr;
  const int64_t n = ctx.inputs[0].num_elements();
  for (int64_t i = 0; i < n; ++i) {
    v[i] = at.rho * v[i] + (1.f - at.rho) * g[i] * g[i];
    float denom = v[i];
    if (mg) {
      mg[i] = at.rho * mg[i] + (1.f - at.rho) * g[i];
      denom -= mg[i] * mg[i];
    }
    const float inc = at.learning_rate * g[i] / std::sqrt(denom + at.epsilon);
    if (mom && at.momentum > 0.f) {
      mom[i] = at.momentum * mom[i] + inc;
      var[i] -= mom[i];
    } else {
      var[i] -= inc;
    }
  }
}

void register_optimizer_kernels() {
  ops::register_kernel(ops::OpId::ApplySgd, DeviceType::CPU, sgd_kernel);
  ops::register_kernel(ops::OpId::ApplyAdam, DeviceType::CPU, adam_kernel);
  ops::register_kernel(ops::OpId::ApplyRmsprop, DeviceType::CPU, rmsprop_kernel);
}

}  // namespace osprey::cpu
