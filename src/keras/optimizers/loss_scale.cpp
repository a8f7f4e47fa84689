// Dynamic loss scaling, as Keras's LossScaleOptimizer does it (keras/src/optimizers/loss_scale_optimizer.py): the
// loss is multiplied by the scale before the gradients are taken; a step whose gradients hold an inf or NaN is
// skipped and halves the scale; a finite one is divided by the scale and applied, and dynamic_growth_steps finite
// steps in a row double the scale.
#include <cmath>
#include <mutex>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/keras/optimizers.h"
#include "osprey/ops.h"

namespace osprey::keras::optimizers {

static void check_scale(const std::string& name, double scale, const char* what) {
  if (!(scale > 0.0) || !std::isfinite(scale) || scale > 3.4e38) {
    throw ValueError(fmt::format("Optimizer '{}': the loss scale ({}) must be a positive finite float32 number, got {}",
                                 name, what, scale));
  }
}

void Optimizer::enable_loss_scaling(const LossScaleOptions& options, bool requested) {
  if (loss_scale_) {
    throw ValueError(fmt::format("Optimizer '{}' already scales the loss (a LossScaleOptimizer around a "
                                 "LossScaleOptimizer): wrap the inner optimizer once.",
                                 name_));
  }
  check_scale(name_, options.initial_scale, "initial_scale");
  if (options.dynamic_growth_steps < 1) {
    throw ValueError(fmt::format("LossScaleOptimizer: dynamic_growth_steps must be at least 1, got {}",
                                 options.dynamic_growth_steps));
  }
  LossScaleState st;
  st.options = options;
  st.dynamic_scale = static_cast<float>(options.initial_scale);
  st.requested = requested;
  loss_scale_ = st;
}

void Optimizer::set_loss_scale_state(double dynamic_scale, int64_t step_counter) {
  if (!loss_scale_) throw FailedPreconditionError(fmt::format("Optimizer '{}' does not scale the loss", name_));
  check_scale(name_, dynamic_scale, "dynamic_scale");
  if (step_counter < 0) {
    throw ValueError(fmt::format("Optimizer '{}': the loss scale's step_counter must be ≥ 0, got {} (a damaged file?)",
                                 name_, step_counter));
  }
  loss_scale_->dynamic_scale = static_cast<float>(dynamic_scale);
  loss_scale_->step_counter = step_counter;
  for (auto& t : scale_tensors_) write_into(t, Tensor::scalar(loss_scale_->dynamic_scale, t.dtype()));
}

Tensor Optimizer::scale_tensor(runtime::Device& device, DType dtype) {
  // Replicas of a strategy ask at once, each for its own device.
  static std::mutex mu;
  std::lock_guard lock(mu);
  for (const auto& t : scale_tensors_) {
    if (&t.device_ref() == &device && t.dtype() == dtype) return t;
  }
  scale_tensors_.push_back(Tensor::scalar(loss_scale_->dynamic_scale, dtype).to(device));
  return scale_tensors_.back();
}

Tensor Optimizer::scale_loss(const Tensor& loss) {
  if (!loss_scale_) return loss;
  return osprey::ops::mul(loss, scale_tensor(loss.device_ref(), loss.dtype()));
}

bool Optimizer::unscale_gradients(const std::vector<Tensor>& scaled, std::vector<Tensor>& out) {
  if (!loss_scale_) {
    out = scaled;
    return true;
  }
  // Σ g·0 over every element is 0 exactly when none is inf or NaN (inf·0 and NaN·0 are NaN): one read for all.
  Tensor flag;
  for (const auto& g : scaled) {
    if (!g.defined()) continue;
    Tensor s = osprey::ops::reduce_sum(osprey::ops::mul(g, Tensor::scalar(0.0, g.dtype()).to(g.device_ref())));
    if (flag.defined() && &flag.device_ref() != &s.device_ref()) s = s.to(flag.device_ref());
    flag = flag.defined() ? osprey::ops::add(flag, s) : s;
  }
  const bool finite = !flag.defined() || flag.item() == 0.0;
  out.assign(scaled.size(), Tensor());
  if (!finite) return false;
  for (std::size_t i = 0; i < scaled.size(); ++i) {
    if (scaled[i].defined()) out[i] = osprey::ops::div(scaled[i], scale_tensor(scaled[i].device_ref(), scaled[i].dtype()));
  }
  return true;
}

void Optimizer::update_loss_scale(bool finite) {
  if (!loss_scale_) return;
  auto& st = *loss_scale_;
  const float before = st.dynamic_scale;
  if (!finite) {
    st.step_counter = 0;
    st.dynamic_scale = st.dynamic_scale * 0.5f;
  } else if (st.step_counter == st.options.dynamic_growth_steps - 1) {
    st.step_counter = 0;
    st.dynamic_scale = st.dynamic_scale * 2.0f;
  } else {
    ++st.step_counter;
  }
  if (st.dynamic_scale == before) return;
  for (auto& t : scale_tensors_) write_into(t, Tensor::scalar(st.dynamic_scale, t.dtype()));
}

LossScaleOptimizer::LossScaleOptimizer(OptimizerRef inner, LossScaleOptions options) : inner_(inner.get()) {
  if (!inner_) throw ValueError("LossScaleOptimizer: inner_optimizer is null");
  inner_->enable_loss_scaling(options, true);
}

}  // namespace osprey::keras::optimizers
