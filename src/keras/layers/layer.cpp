// The Layer base: names (Keras's auto-naming), weights, and what every layer has.
#include "osprey/keras/layers/layer.h"

#include <cmath>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "keras/utils/naming.h"

namespace osprey::keras {

namespace {
std::mutex g_names_mu;
std::map<std::string, int>& name_counts() {
  static std::map<std::string, int> counts;
  return counts;
}
}  // namespace

// Keras's auto_name: "dense", then "dense_1", "dense_2", ...
std::string auto_name(const std::string& prefix) {
  std::lock_guard lock(g_names_mu);
  int n = name_counts()[prefix]++;
  return n == 0 ? prefix : fmt::format("{}_{}", prefix, n);
}

namespace detail {
static thread_local uint64_t t_forward_pass = 0;
uint64_t forward_pass() { return t_forward_pass; }
void begin_forward_pass() { ++t_forward_pass; }
}  // namespace detail

void clear_session() {
  std::lock_guard lock(g_names_mu);
  name_counts().clear();
}

Layer::Layer(const std::string& name, const std::string& default_prefix, const std::string& dtype)
    : name_(name.empty() && !default_prefix.empty() ? auto_name(default_prefix) : name) {
  if (!dtype.empty()) dtype_policy_ = mixed_precision::DTypePolicy(dtype);  // ValueError for unknown names
}

void Layer::set_dtype_policy(const mixed_precision::DTypePolicy& policy) {
  if (built_ && !(policy == dtype_policy_)) {
    throw ValueError(fmt::format("Layer '{}' is already built with the dtype policy '{}'; it cannot change to '{}'. "
                                 "Give the layer its policy when it is made (Keras's dtype argument: "
                                 "`.dtype = \"{}\"` in its options or `.with_dtype(\"{}\")`), before its first call.",
                                 name_, dtype_policy_.name(), policy.name(), policy.name(), policy.name()));
  }
  dtype_policy_ = policy;
  if (!passes_dtype_policy_on()) return;
  for (auto& [key, sub] : sublayers()) {
    if (sub) sub->set_dtype_policy(policy);
  }
}

DType Layer::compute_dtype() const {
  const DType c = dtype_policy_.compute_dtype();
  return !is_floating(c) || (is_half(c) && !supports_half_compute()) ? DType::float32 : c;
}

Tensor Layer::autocast_input(const Tensor& x) const {
  if (!x.defined() || !is_floating(x.dtype())) return x;
  const DType c = compute_dtype();
  if (x.dtype() == c || !(is_half(c) || is_half(x.dtype()))) return x;  // float32 policies leave float64 alone
  return osprey::ops::cast(x, c);
}

Tensor Layer::autocast_variable(const Variable& v) const {
  const Tensor& value = v.value();
  const DType c = compute_dtype();
  return is_half(c) && is_floating(value.dtype()) && value.dtype() != c ? osprey::ops::cast(value, c) : value;
}

Variable& Layer::add_weight(const std::string& name, const Tensor& initial_value, bool trainable) {
  weights_.emplace_back(initial_value, name, trainable);
  weights_.back().set_path(name_ + "/" + name);
  return weights_.back();
}

Variable& Layer::add_weight(const std::string& name, const Tensor& initial_value, VariableOptions options) {
  weights_.emplace_back(initial_value, name, options);
  weights_.back().set_path(name_ + "/" + name);
  return weights_.back();
}

std::vector<Variable*> Layer::variables() {
  std::vector<Variable*> out;
  for (auto& w : weights_) out.push_back(&w);
  return out;
}

std::vector<Variable*> Layer::trainable_variables() {
  std::vector<Variable*> out;
  append_trainable_variables(out);
  return out;
}

void Layer::append_trainable_variables(std::vector<Variable*>& out) {
  for (auto& w : weights_) {
    if (w.trainable()) out.push_back(&w);
  }
}

int64_t Layer::count_params() const {
  int64_t n = 0;
  for (const auto& w : weights_) n += w.num_elements();
  return n;
}

}  // namespace osprey::keras
