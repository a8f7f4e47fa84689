#include "osprey/keras/optimizers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/ops.h"
#include "tensor/tensor_impl.h"

namespace osprey::keras::optimizers {

Optimizer::Optimizer(std::string name, double learning_rate, BaseOptions base)
    : name_(std::move(name)), learning_rate_(static_cast<float>(learning_rate)), base_(base) {
  const int clips = base.clipnorm.has_value() + base.clipvalue.has_value() + base.global_clipnorm.has_value();
  if (clips > 1) {
    throw ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: clipnorm=" +
                     (base.clipnorm ? fmt::format("{}", *base.clipnorm) : std::string("None")) +
                     ", clipvalue=" + (base.clipvalue ? fmt::format("{}", *base.clipvalue) : std::string("None")) +
                     ", global_clipnorm=" +
                     (base.global_clipnorm ? fmt::format("{}", *base.global_clipnorm) : std::string("None")));
  }
  if (!(learning_rate > 0.0) || !std::isfinite(learning_rate)) {
    throw ValueError(fmt::format("learning_rate must be a positive finite number, got {}", learning_rate));
  }
}

void Optimizer::set_learning_rate(double lr) { learning_rate_ = static_cast<float>(lr); }

int64_t Optimizer::count_params() const { return built_ ? 2 + slot_elements_ : 0; }

Variable Optimizer::make_slot(const Variable& var) const {
  const Tensor& v0 = var.component(0);
  Variable slot(Tensor::zeros(var.shape()).to(v0.device_ref()), var.name() + "_slot", false, v0.device_ref());
  if (var.num_components() > 1) {
    std::vector<runtime::Device*> devices;
    for (int c = 0; c < var.num_components(); ++c) devices.push_back(&var.component(c).device_ref());
    slot.mirror(devices);
  }
  return slot;
}

void Optimizer::build_slots(const std::vector<Variable*>& variables) {
  if (!built_) {
    build(variables);
    built_ = true;
  }
}

void Optimizer::apply_replica_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables) {
  if (!built_) throw FailedPreconditionError("apply_replica_gradients: call build_slots() first (cross-replica)");
  update_all(gradients, variables);
}

static double l2_norm(const Tensor& g) { return std::sqrt(ops::reduce_sum(ops::square(g)).item()); }

void Optimizer::apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables) {
  if (gradients.size() != variables.size()) {
    throw InvalidArgumentError(fmt::format("apply_gradients: {} gradients for {} variables", gradients.size(),
                                           variables.size()));
  }
  build_slots(variables);
  update_all(gradients, variables);
  ++iterations_;
}

void Optimizer::update_all(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables) {
  if (gradients.size() != variables.size()) {
    throw InvalidArgumentError(fmt::format("apply_gradients: {} gradients for {} variables", gradients.size(),
                                           variables.size()));
  }
  std::vector<Tensor> grads = gradients;
  if (base_.clipnorm) {
    for (auto& g : grads) {
      if (!g.defined()) continue;
      const double n = l2_norm(g);
      if (n > *base_.clipnorm) g = ops::mul(g, Tensor::scalar(*base_.clipnorm / n));
    }
  } else if (base_.clipvalue) {
    const Tensor lo = Tensor::scalar(-*base_.clipvalue), hi = Tensor::scalar(*base_.clipvalue);
    for (auto& g : grads) {
      if (g.defined()) g = ops::neg(ops::maximum(ops::neg(ops::maximum(g, lo)), ops::neg(hi)));  // min(max(g,lo),hi)
    }
  } else if (base_.global_clipnorm) {
    double sq = 0;
    for (auto& g : grads) {
      if (g.defined()) sq += ops::reduce_sum(ops::square(g)).item();
    }
    const double norm = std::sqrt(sq);
    if (norm > *base_.global_clipnorm) {
      for (auto& g : grads) {
        if (g.defined()) g = ops::mul(g, Tensor::scalar(*base_.global_clipnorm / norm));
      }
    }
  }
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (grads[i].defined()) update_step(grads[i], *variables[i], i);
  }
}

void Optimizer::update_step(const Tensor& g, Variable& v, std::size_t i) {
  std::vector<Tensor*> slots;
  for (Variable* slot : slots_of(i)) slots.push_back(slot ? &slot->value() : nullptr);
  update_tensors(g, v.value(), slots);
}

std::pair<int64_t, int64_t> shard_range(int64_t n, int shard, int num_shards) {
  const int64_t b = (n * shard / num_shards) & ~int64_t{15};
  const int64_t e = shard + 1 == num_shards ? n : (n * (shard + 1) / num_shards) & ~int64_t{15};
  return {std::min(b, n), std::min(e, n)};
}

void Optimizer::apply_sharded_gradients(const std::vector<Tensor>& summed, const std::vector<Variable*>& variables,
                                        int shard, int num_shards) {
  if (!built_) throw FailedPreconditionError("apply_sharded_gradients: call build_slots() first (cross-replica)");
  if (clips()) throw FailedPreconditionError("apply_sharded_gradients: clipping needs whole gradients");
  for (std::size_t j = 0; j < variables.size(); ++j) {
    if (!summed[j].defined()) continue;
    Variable& var = *variables[j];
    const int64_t n = var.num_elements();
    const auto [b, e] = shard_range(n, shard, num_shards);
    if (b >= e) continue;
    auto slice = [&](const Tensor& t) { return t.reshape(Shape({n})).slice_rows(b, e); };
    std::vector<Variable*> slot_vars = slots_of(j);
    std::vector<Tensor> slot_views;
    for (Variable* sv : slot_vars) slot_views.push_back(sv ? slice(sv->component(shard)) : Tensor());
    std::vector<Tensor*> slot_ptrs;
    for (size_t k = 0; k < slot_vars.size(); ++k) slot_ptrs.push_back(slot_vars[k] ? &slot_views[k] : nullptr);
    Tensor var_view = slice(var.component(shard));
    update_tensors(slice(summed[j]), var_view, slot_ptrs);
    // The other replicas' components get the same values (host memory: plain copies of the slice).
    const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(e - b);
    auto copy_out = [&](const Variable& v) {
      const float* src = v.component(shard).data<float>() + b;
      for (int q = 0; q < v.num_components(); ++q) {
        if (q != shard) std::memcpy(const_cast<float*>(v.component(q).data<float>()) + b, src, bytes);
      }
    };
    copy_out(var);
    for (Variable* sv : slot_vars) {
      if (sv) copy_out(*sv);
    }
  }
}

SGD::SGD(SGDOptions o) : Optimizer("SGD", o.learning_rate, o.base), opt_(o) {
  if (o.momentum < 0.0 || o.momentum > 1.0) {
    throw ValueError(fmt::format("`momentum` must be a float between [0, 1]. Received: momentum={}", o.momentum));
  }
}

void SGD::build(const std::vector<Variable*>& vars) {
  if (opt_.momentum == 0.0) return;
  for (auto* v : vars) {
    momentums_.push_back(make_slot(*v));
    slot_elements_ += v->num_elements();
  }
}

std::vector<Variable*> SGD::slots_of(std::size_t i) { return {momentums_.empty() ? nullptr : &momentums_[i]}; }

void SGD::update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) {
  ops::apply_sgd(var, g, slots[0], learning_rate_, opt_.momentum, opt_.nesterov);
}

Adam::Adam(AdamOptions o) : Optimizer("adam", o.learning_rate, o.base), opt_(o) {}

void Adam::build(const std::vector<Variable*>& vars) {
  for (auto* v : vars) {
    m_.push_back(make_slot(*v));
    v_.push_back(make_slot(*v));
    slot_elements_ += 2 * v->num_elements();
    if (opt_.amsgrad) {
      vhat_.push_back(make_slot(*v));
      slot_elements_ += v->num_elements();
    }
  }
}

std::vector<Variable*> Adam::slots_of(std::size_t i) {
  return {&m_[i], &v_[i], opt_.amsgrad ? &vhat_[i] : nullptr};
}

void Adam::update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) {
  // float32 arithmetic, as Keras computes α in the variable's dtype.
  const float t = static_cast<float>(iterations_ + 1);
  const float b1p = std::pow(static_cast<float>(opt_.beta_1), t), b2p = std::pow(static_cast<float>(opt_.beta_2), t);
  const float alpha = learning_rate_ * std::sqrt(1.f - b2p) / (1.f - b1p);
  ops::apply_adam(var, *slots[0], *slots[1], g, slots[2], alpha, opt_.beta_1, opt_.beta_2, opt_.epsilon);
}

RMSprop::RMSprop(RMSpropOptions o) : Optimizer("rmsprop", o.learning_rate, o.base), opt_(o) {}

void RMSprop::build(const std::vector<Variable*>& vars) {
  for (auto* v : vars) {
    v_.push_back(make_slot(*v));
    slot_elements_ += v->num_elements();
    if (opt_.momentum > 0) {
      mom_.push_back(make_slot(*v));
      slot_elements_ += v->num_elements();
    }
    if (opt_.centered) {
      mg_.push_back(make_slot(*v));
      slot_elements_ += v->num_elements();
    }
  }
}

std::vector<Variable*> RMSprop::slots_of(std::size_t i) {
  return {&v_[i], mom_.empty() ? nullptr : &mom_[i], mg_.empty() ? nullptr : &mg_[i]};
}

void RMSprop::update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) {
  ops::apply_rmsprop(var, *slots[0], g, slots[1], slots[2], learning_rate_, opt_.rho, opt_.momentum, opt_.epsilon);
}

std::shared_ptr<Optimizer> get(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  if (n == "adam") return std::make_shared<Adam>();
  if (n == "sgd") return std::make_shared<SGD>();
  if (n == "rmsprop") return std::make_shared<RMSprop>();
  throw ValueError("Could not interpret optimizer identifier: '" + name +
                   "'. Known optimizers: 'adam', 'sgd', 'rmsprop' (case-insensitive), or an optimizer object such as "
                   "optimizers::Adam({.learning_rate = 1e-3}).");
}

}  // namespace osprey::keras::optimizers
