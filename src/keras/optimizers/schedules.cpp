// Learning-rate schedules (keras.optimizers.schedules).
#include "osprey/keras/optimizers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/ops.h"
#include "runtime/device_manager.h"
#include "tensor/tensor_impl.h"

namespace osprey::keras::optimizers {

namespace schedules {

ExponentialDecay::ExponentialDecay(Options o) : o_(o) {
  if (o.decay_steps <= 0) throw ValueError(fmt::format("ExponentialDecay: decay_steps must be > 0, got {}", o.decay_steps));
}
double ExponentialDecay::operator()(int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(o_.decay_steps);
  if (o_.staircase) p = std::floor(p);
  return o_.initial_learning_rate * std::pow(o_.decay_rate, p);
}

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  if (values_.size() != boundaries_.size() + 1) {
    throw ValueError(fmt::format("The length of boundaries should be 1 less than the length of values. Received: "
                                 "boundaries={} values",
                                 boundaries_.size(), values_.size()));
  }
}
double PiecewiseConstantDecay::operator()(int64_t step) const {
  for (size_t i = 0; i < boundaries_.size(); ++i) {
    if (step <= boundaries_[i]) return values_[i];
  }
  return values_.back();
}

InverseTimeDecay::InverseTimeDecay(Options o) : o_(o) {
  if (o.decay_steps <= 0) throw ValueError(fmt::format("InverseTimeDecay: decay_steps must be > 0, got {}", o.decay_steps));
}
double InverseTimeDecay::operator()(int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(o_.decay_steps);
  if (o_.staircase) p = std::floor(p);
  return o_.initial_learning_rate / (1.0 + o_.decay_rate * p);
}

CosineDecay::CosineDecay(Options o) : o_(o) {
  if (o.decay_steps <= 0) throw ValueError(fmt::format("CosineDecay: decay_steps must be > 0, got {}", o.decay_steps));
  if (o.warmup_steps < 0) {  // step - warmup_steps must not overflow
    throw ValueError(fmt::format("CosineDecay: warmup_steps must be >= 0, got {}", o.warmup_steps));
  }
}
double CosineDecay::operator()(int64_t step) const {
  const double pi = 3.14159265358979323846;
  double start = o_.initial_learning_rate;
  int64_t s = step;
  if (o_.warmup_target) {
    if (step < o_.warmup_steps) {  // linear warm-up from the initial rate to the target
      return start + (*o_.warmup_target - start) * static_cast<double>(step) / static_cast<double>(o_.warmup_steps);
    }
    start = *o_.warmup_target;
    s = step - o_.warmup_steps;
  }
  const double t = static_cast<double>(std::min<int64_t>(s, o_.decay_steps)) / static_cast<double>(o_.decay_steps);
  return start * ((1.0 - o_.alpha) * 0.5 * (1.0 + std::cos(pi * t)) + o_.alpha);
}

}  // namespace schedules

}  // namespace osprey::keras::optimizers
