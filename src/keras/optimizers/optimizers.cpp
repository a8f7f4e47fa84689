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

void Optimizer::set_iterations(int64_t iterations) {
  if (iterations < 0 || iterations > (int64_t{1} << 62)) {
    throw ValueError(fmt::format("Optimizer '{}': iterations must be in [0, 2^62], got {} (a damaged file?)", name_,
                                 iterations));
  }
  iterations_ = iterations;
}

Optimizer::Optimizer(std::string name, LearningRate lr, BaseOptions base)
    : name_(std::move(name)), learning_rate_(static_cast<float>(lr.value())), schedule_(lr.schedule()), base_(base) {
  const double learning_rate = lr.value();
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

void Optimizer::set_learning_rate(double lr) {
  if (schedule_) {
    throw ValueError("This optimizer was created with a `LearningRateSchedule` object as its `learning_rate` "
                     "constructor argument, hence its learning rate is not settable.");
  }
  learning_rate_ = static_cast<float>(lr);
}

void Optimizer::begin_step() {
  if (schedule_) learning_rate_ = static_cast<float>((*schedule_)(iterations_));
  advance_step_state();
}

void Optimizer::write_into(Tensor& dst, const Tensor& src) {
  Tensor s = src.to(dst.device_ref());
  if (s.dtype() != dst.dtype()) s = osprey::ops::cast(s, dst.dtype());
  auto& d = dst.device_ref();
  if (d.host_memory()) {
    std::memcpy(dst.raw_data(), s.raw_data(), static_cast<std::size_t>(dst.nbytes()));
  } else {
    d.platform().copy(d, dst.impl()->data(), true, s.impl()->data(), true, static_cast<std::size_t>(dst.nbytes()));
  }
}

// Keras's optimizer.variables: iterations, learning_rate (not with a schedule), the slots, per-step state.
// With loss scaling, also LossScaleOptimizer's own: iterations, learning_rate, step_counter and dynamic_scale.
int64_t Optimizer::count_params() const {
  return built_ ? (schedule_ ? 1 : 2) + slot_elements_ + step_state_params() + (loss_scale_ ? 4 : 0) : 0;
}

Variable Optimizer::make_slot(const Variable& var, double value) const {
  const Tensor& v0 = var.component(0);
  Variable slot(Tensor::full(var.shape(), value).to(v0.device_ref()), var.name() + "_slot", false, v0.device_ref());
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
    num_tracked_ = variables.size();
  }
}

void Optimizer::unbuild_slots() {
  clear_slots();
  built_ = false;
  num_tracked_ = 0;
  slot_elements_ = 0;
  stale_slot_shards_ = 0;
}

void Optimizer::apply_replica_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables) {
  if (!built_) throw FailedPreconditionError("apply_replica_gradients: call build_slots() first (cross-replica)");
  update_all(gradients, variables);
}

static double l2_norm(const Tensor& g) { return std::sqrt(osprey::ops::reduce_sum(osprey::ops::square(g)).item()); }

void Optimizer::apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable*>& variables) {
  if (gradients.size() != variables.size()) {
    throw InvalidArgumentError(fmt::format("apply_gradients: {} gradients for {} variables", gradients.size(),
                                           variables.size()));
  }
  if (variables.empty()) {
    throw ValueError("apply_gradients: no variables to update. A model's layers create their variables when first "
                     "called: list trainable_variables() after the forward pass (or build the model first).");
  }
  build_slots(variables);
  std::vector<Tensor> unscaled;
  // With loss scaling: skipped when a gradient is not finite, else the unscaled gradients.
  const bool finite = !loss_scale_ || unscale_gradients(gradients, unscaled);
  if (finite) {
    sync_slots();
    begin_step();
    update_all(loss_scale_ ? unscaled : gradients, variables);
    ++iterations_;
  }
  update_loss_scale(finite);
}

// out[i] = (a[i] + b[i]) · 0.5 per element, in float32 (host memory); allocates `out`'s tensors on first use.
static void average_halves(std::vector<Tensor>& out, const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  out.resize(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].defined() || !b[i].defined()) {
      out[i] = a[i].defined() ? a[i] : b[i];
      continue;
    }
    if (!out[i].defined() || out[i].shape() != a[i].shape()) {
      out[i] = Tensor::empty(a[i].shape(), DType::float32, &a[i].device_ref());
    }
    const float* __restrict pa = a[i].data<float>();
    const float* __restrict pb = b[i].data<float>();
    float* __restrict po = out[i].data<float>();
    const int64_t n = a[i].num_elements();
    for (int64_t j = 0; j < n; ++j) po[j] = (pa[j] + pb[j]) * 0.5f;
  }
}

void Optimizer::apply_gradient_halves(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                                      const std::vector<Variable*>& variables, std::vector<Tensor>& scratch) {
  if (a.size() != variables.size() || b.size() != variables.size()) {
    throw InvalidArgumentError(fmt::format("apply_gradient_halves: {} and {} gradients for {} variables", a.size(),
                                           b.size(), variables.size()));
  }
  build_slots(variables);
  if (loss_scale_) {  // both halves finite, or the step is skipped; then the halves of the unscaled gradients
    std::vector<Tensor> ua, ub;
    const bool finite = unscale_gradients(a, ua) && unscale_gradients(b, ub);
    if (finite) apply_halves(ua, ub, variables, scratch);
    update_loss_scale(finite);
    return;
  }
  apply_halves(a, b, variables, scratch);
}

void Optimizer::apply_halves(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                             const std::vector<Variable*>& variables, std::vector<Tensor>& scratch) {
  sync_slots();
  begin_step();
  // Clipping and weight decay need the whole averaged gradient first (shardable() says neither is set).
  if (!shardable() || !update_fused(a, variables, &b)) {
    average_halves(scratch, a, b);
    update_all(scratch, variables);
  }
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
      if (n > *base_.clipnorm) g = osprey::ops::mul(g, Tensor::scalar(*base_.clipnorm / n));
    }
  } else if (base_.clipvalue) {
    const Tensor lo = Tensor::scalar(-*base_.clipvalue), hi = Tensor::scalar(*base_.clipvalue);
    for (auto& g : grads) {
      if (g.defined()) g = osprey::ops::minimum(osprey::ops::maximum(g, lo), hi);
    }
  } else if (base_.global_clipnorm) {
    double sq = 0;
    for (auto& g : grads) {
      if (g.defined()) sq += osprey::ops::reduce_sum(osprey::ops::square(g)).item();
    }
    const double norm = std::sqrt(sq);
    if (norm > *base_.global_clipnorm) {
      for (auto& g : grads) {
        if (g.defined()) g = osprey::ops::mul(g, Tensor::scalar(*base_.global_clipnorm / norm));
      }
    }
  }
  if (base_.weight_decay && *base_.weight_decay != 0.0) {  // decoupled: var −= var·wd·lr, before the update
    const Tensor factor = Tensor::scalar(1.0 - *base_.weight_decay * static_cast<double>(learning_rate_));
    for (std::size_t i = 0; i < variables.size(); ++i) {
      if (!grads[i].defined()) continue;
      Tensor& v = variables[i]->value();
      write_into(v, osprey::ops::mul(v, factor));
    }
  }
  if (update_fused(grads, variables, nullptr)) return;
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (grads[i].defined()) update_step(grads[i], *variables[i], i);
  }
}

void Optimizer::update_step(const Tensor& g, Variable& v, std::size_t i) {
  std::vector<Tensor*> slots;
  for (Variable* slot : slot_variables(i)) slots.push_back(slot ? &slot->value() : nullptr);
  update_tensors(g, v.value(), slots);
}

std::pair<int64_t, int64_t> shard_range(int64_t n, int shard, int num_shards) {
  const int64_t b = (n * shard / num_shards) & ~int64_t{15};
  const int64_t e = shard + 1 == num_shards ? n : (n * (shard + 1) / num_shards) & ~int64_t{15};
  return {std::min(b, n), std::min(e, n)};
}

// Elements [b, e) of `v`'s component `shard` copied into its other components (host memory).
static void copy_slice_to_other_components(const Variable& v, int shard, int64_t b, int64_t e) {
  const float* src = v.component(shard).data<float>() + b;
  const auto bytes = sizeof(float) * static_cast<std::size_t>(e - b);
  for (int q = 0; q < v.num_components(); ++q) {
    if (q != shard) std::memcpy(const_cast<float*>(v.component(q).data<float>()) + b, src, bytes);
  }
}

void Optimizer::apply_sharded_gradients(const std::vector<Tensor>& summed, const std::vector<Variable*>& variables,
                                        int shard, int num_shards) {
  if (!built_) throw FailedPreconditionError("apply_sharded_gradients: call build_slots() first (cross-replica)");
  if (!shardable()) {
    throw FailedPreconditionError("apply_sharded_gradients: clipping and weight decay need whole variables");
  }
  for (std::size_t j = 0; j < variables.size(); ++j) {
    if (!summed[j].defined()) continue;
    Variable& var = *variables[j];
    const int64_t n = var.num_elements();
    const auto [b, e] = shard_range(n, shard, num_shards);
    if (b >= e) continue;
    auto slice = [&](const Tensor& t) { return t.reshape(Shape({n})).slice_rows(b, e); };
    std::vector<Variable*> slot_vars = slot_variables(j);
    std::vector<Tensor> slot_views;
    for (Variable* sv : slot_vars) slot_views.push_back(sv ? slice(sv->component(shard)) : Tensor());
    std::vector<Tensor*> slot_ptrs;
    for (size_t k = 0; k < slot_vars.size(); ++k) slot_ptrs.push_back(slot_vars[k] ? &slot_views[k] : nullptr);
    Tensor var_view = slice(var.component(shard));
    update_tensors(slice(summed[j]), var_view, slot_ptrs);
    // The other replicas' components of the variable get the same values; those of the slots wait for sync_slots().
    copy_slice_to_other_components(var, shard, b, e);
  }
}

void Optimizer::sync_slots() {
  const int num_shards = stale_slot_shards_;
  if (num_shards == 0) return;
  for (std::size_t j = 0; j < num_tracked_; ++j) {
    for (Variable* sv : slot_variables(j)) {
      if (!sv || sv->num_components() < 2) continue;
      const int64_t n = sv->num_elements();
      for (int shard = 0; shard < num_shards && shard < sv->num_components(); ++shard) {
        const auto [b, e] = shard_range(n, shard, num_shards);
        if (b < e) copy_slice_to_other_components(*sv, shard, b, e);
      }
    }
  }
  stale_slot_shards_ = 0;
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

std::vector<Variable*> SGD::slot_variables(std::size_t i) { return {momentums_.empty() ? nullptr : &momentums_[i]}; }

void SGD::update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) {
  osprey::ops::apply_sgd(var, g, slots[0], learning_rate_, opt_.momentum, opt_.nesterov);
}

Adam::Adam(AdamOptions o) : Optimizer("adam", o.learning_rate, o.base), opt_(o) {}
Adam::Adam(std::string name, AdamOptions o) : Optimizer(std::move(name), o.learning_rate, o.base), opt_(o) {}

static AdamOptions adam_options_of(const AdamWOptions& o) {
  if (!(o.weight_decay >= 0.0)) throw ValueError(fmt::format("AdamW: weight_decay must be >= 0, got {}", o.weight_decay));
  BaseOptions base = o.base;
  base.weight_decay = o.weight_decay;
  return AdamOptions{o.learning_rate, o.beta_1, o.beta_2, o.epsilon, o.amsgrad, base};
}
AdamW::AdamW(AdamWOptions o) : Adam("adamw", adam_options_of(o)) {}

// ---- Adagrad, Adamax, Nadam: composite ops (every device), written back into the variables and slots ----

Adagrad::Adagrad(AdagradOptions o) : Optimizer("adagrad", o.learning_rate, o.base), opt_(o) {}
void Adagrad::build(const std::vector<Variable*>& vars) {
  for (auto* v : vars) {
    accumulators_.push_back(make_slot(*v, opt_.initial_accumulator_value));
    slot_elements_ += v->num_elements();
  }
}
std::vector<Variable*> Adagrad::slot_variables(std::size_t i) { return {&accumulators_[i]}; }
void Adagrad::update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) {
  Tensor& acc = *slots[0];
  write_into(acc, osprey::ops::add(acc, osprey::ops::square(g)));
  const Tensor step = osprey::ops::div(osprey::ops::mul(g, Tensor::scalar(learning_rate_)),
                               osprey::ops::sqrt(osprey::ops::add(acc, Tensor::scalar(opt_.epsilon))));
  write_into(var, osprey::ops::sub(var, step));
}

Adamax::Adamax(AdamaxOptions o) : Optimizer("adamax", o.learning_rate, o.base), opt_(o) {}
void Adamax::build(const std::vector<Variable*>& vars) {
  for (auto* v : vars) {
    m_.push_back(make_slot(*v));
    u_.push_back(make_slot(*v));
    slot_elements_ += 2 * v->num_elements();
  }
}
std::vector<Variable*> Adamax::slot_variables(std::size_t i) { return {&m_[i], &u_[i]}; }
void Adamax::update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) {
  Tensor& m = *slots[0];
  Tensor& u = *slots[1];
  const float t = static_cast<float>(iterations_ + 1);
  const float b1p = std::pow(static_cast<float>(opt_.beta_1), t);
  write_into(m, osprey::ops::add(m, osprey::ops::mul(osprey::ops::sub(g, m), Tensor::scalar(1.0 - opt_.beta_1))));
  write_into(u, osprey::ops::maximum(osprey::ops::mul(u, Tensor::scalar(opt_.beta_2)), osprey::ops::abs(g)));
  const Tensor denom = osprey::ops::mul(osprey::ops::add(u, Tensor::scalar(opt_.epsilon)), Tensor::scalar(1.0 - b1p));
  write_into(var, osprey::ops::sub(var, osprey::ops::div(osprey::ops::mul(m, Tensor::scalar(learning_rate_)), denom)));
}

Nadam::Nadam(NadamOptions o) : Optimizer("nadam", o.learning_rate, o.base), opt_(o) {}
void Nadam::build(const std::vector<Variable*>& vars) {
  for (auto* v : vars) {
    m_.push_back(make_slot(*v));
    v_.push_back(make_slot(*v));
    slot_elements_ += 2 * v->num_elements();
  }
}
std::vector<Variable*> Nadam::slot_variables(std::size_t i) { return {&m_[i], &v_[i]}; }
void Nadam::advance_step_state() {
  // Keras: u_product *= β1·(1 − 0.5·0.96^(t)), once per update, before the variables.
  u_product_ *= opt_.beta_1 * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(iterations_ + 1)));
}
void Nadam::update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) {
  Tensor& m = *slots[0];
  Tensor& v = *slots[1];
  const double t = static_cast<double>(iterations_ + 1), b1 = opt_.beta_1, b2 = opt_.beta_2;
  const double u_t = b1 * (1.0 - 0.5 * std::pow(0.96, t));
  const double u_t1 = b1 * (1.0 - 0.5 * std::pow(0.96, t + 1.0));
  const double u_product_t1 = u_product_ * u_t1;
  const double b2p = std::pow(b2, t);
  write_into(m, osprey::ops::add(m, osprey::ops::mul(osprey::ops::sub(g, m), Tensor::scalar(1.0 - b1))));
  write_into(v, osprey::ops::add(v, osprey::ops::mul(osprey::ops::sub(osprey::ops::square(g), v), Tensor::scalar(1.0 - b2))));
  const Tensor m_hat = osprey::ops::add(osprey::ops::mul(m, Tensor::scalar(u_t1 / (1.0 - u_product_t1))),
                                osprey::ops::mul(g, Tensor::scalar((1.0 - u_t) / (1.0 - u_product_))));
  const Tensor v_hat = osprey::ops::div(v, Tensor::scalar(1.0 - b2p));
  const Tensor step = osprey::ops::div(osprey::ops::mul(m_hat, Tensor::scalar(learning_rate_)),
                               osprey::ops::add(osprey::ops::sqrt(v_hat), Tensor::scalar(opt_.epsilon)));
  write_into(var, osprey::ops::sub(var, step));
}

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

std::vector<Variable*> Adam::slot_variables(std::size_t i) {
  return {&m_[i], &v_[i], opt_.amsgrad ? &vhat_[i] : nullptr};
}

float Adam::alpha() const {
  // float32 arithmetic, as Keras computes α in the variable's dtype.
  const float t = static_cast<float>(iterations_ + 1);
  const float b1p = std::pow(static_cast<float>(opt_.beta_1), t), b2p = std::pow(static_cast<float>(opt_.beta_2), t);
  return learning_rate_ * std::sqrt(1.f - b2p) / (1.f - b1p);
}

void Adam::update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) {
  osprey::ops::apply_adam(var, *slots[0], *slots[1], g, slots[2], alpha(), opt_.beta_1, opt_.beta_2, opt_.epsilon);
}

// The whole model's variables in one kernel (the seed model's six variables were six launches, each with its
// dispatch and its own short loop).
bool Adam::update_fused(const std::vector<Tensor>& grads, const std::vector<Variable*>& vars,
                        const std::vector<Tensor>* second_half) {
  // A recorded step updates the same tensors every step: the launch prepared for them runs again, found by the
  // identity of every tensor it updates (no reference counting on the way; ~1 µs of a small model's step). Per
  // thread: replicas of a strategy may update at once. Only small models are kept: the cache holds references to
  // the tensors until the thread's next Adam step.
  constexpr int64_t kMaxCachedElements = int64_t{1} << 20;
  struct Cached {
    const Adam* owner = nullptr;
    std::vector<const void*> key;
    osprey::ops::AdamManyLaunch launch;
  };
  thread_local Cached cached;
  thread_local std::vector<const void*> key;
  key.clear();
  int64_t elements = 0;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    key.insert(key.end(), {vars[i]->value().impl(), m_[i].value().impl(), v_[i].value().impl(), grads[i].impl(),
                           opt_.amsgrad ? vhat_[i].value().impl() : nullptr,
                           second_half ? (*second_half)[i].impl() : nullptr});
    elements += vars[i]->num_elements();
  }
  if (cached.owner == this && cached.key == key && cached.launch.prepared()) {
    cached.launch.run(alpha(), opt_.beta_1, opt_.beta_2, opt_.epsilon);
    return true;
  }
  thread_local std::vector<osprey::ops::AdamUpdate> updates;
  updates.clear();
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const Tensor& other = second_half ? (*second_half)[i] : grads[i];
    if (!grads[i].defined() || !other.defined()) {
      if (grads[i].defined() != other.defined()) return false;  // one half without a gradient: averaged first
      continue;
    }
    updates.push_back({vars[i]->value(), m_[i].value(), v_[i].value(), grads[i],
                       opt_.amsgrad ? vhat_[i].value() : Tensor(), second_half ? other : Tensor()});
  }
  bool done;
  if (elements <= kMaxCachedElements && cached.launch.prepare(updates)) {
    cached.owner = this;
    cached.key = key;
    cached.launch.run(alpha(), opt_.beta_1, opt_.beta_2, opt_.epsilon);
    done = true;
  } else {
    cached = Cached{};
    done = osprey::ops::apply_adam_many(updates, alpha(), opt_.beta_1, opt_.beta_2, opt_.epsilon);
  }
  updates.clear();
  return done;
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

std::vector<Variable*> RMSprop::slot_variables(std::size_t i) {
  return {&v_[i], mom_.empty() ? nullptr : &mom_[i], mg_.empty() ? nullptr : &mg_[i]};
}

void RMSprop::update_tensors(const Tensor& g, Tensor& var, const std::vector<Tensor*>& slots) {
  osprey::ops::apply_rmsprop(var, *slots[0], g, slots[1], slots[2], learning_rate_, opt_.rho, opt_.momentum, opt_.epsilon);
}

std::shared_ptr<Optimizer> get(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  if (n == "adam") return std::make_shared<Adam>();
  if (n == "sgd") return std::make_shared<SGD>();
  if (n == "rmsprop") return std::make_shared<RMSprop>();
  if (n == "adamw") return std::make_shared<AdamW>();
  if (n == "adagrad") return std::make_shared<Adagrad>();
  if (n == "adamax") return std::make_shared<Adamax>();
  if (n == "nadam") return std::make_shared<Nadam>();
  throw ValueError("Could not interpret optimizer identifier: '" + name +
                   "'. Known optimizers: 'adam', 'sgd', 'rmsprop', 'adamw', 'adagrad', 'adamax', 'nadam' (case-insensitive), or an optimizer object such as "
                   "optimizers::Adam({.learning_rate = 1e-3}).");
}

}  // namespace osprey::keras::optimizers

