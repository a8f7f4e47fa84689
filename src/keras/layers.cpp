#include "osprey/keras/layers.h"

#include <cmath>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/random.h"
#include "keras/activations.h"
#include "keras/naming.h"

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

void clear_session() {
  std::lock_guard lock(g_names_mu);
  name_counts().clear();
}

Layer::Layer(const std::string& name, const std::string& default_prefix)
    : name_(name.empty() && !default_prefix.empty() ? auto_name(default_prefix) : name) {}

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

static const char* const kInitializers[] = {"glorot_uniform", "glorot_normal", "he_uniform",  "he_normal",
                                           "lecun_uniform",  "lecun_normal",  "zeros",       "ones",
                                           "random_normal",  "random_uniform", "truncated_normal"};

static void check_initializer(const std::string& init) {
  for (const char* known : kInitializers) {
    if (init == known) return;
  }
  throw ValueError("Could not interpret initializer identifier: '" + init +
                   "'. Known: glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_uniform, lecun_normal, "
                   "zeros, ones, random_normal, random_uniform, truncated_normal.");
}

Tensor initialize(const std::string& init, const Shape& shape) {
  check_initializer(init);
  // Fans as Keras's compute_fans: 2-D (in, out); 1-D (n, n); scalars 1.
  double fan_in = 1, fan_out = 1;
  if (shape.rank() == 1) {
    fan_in = fan_out = static_cast<double>(shape[0]);
  } else if (shape.rank() >= 2) {
    double receptive = 1;
    for (int i = 0; i < shape.rank() - 2; ++i) receptive *= static_cast<double>(shape[i]);
    fan_in = static_cast<double>(shape[-2]) * receptive;
    fan_out = static_cast<double>(shape[-1]) * receptive;
  }
  auto variance_scaling = [&](double scale, double fan, bool uniform) {
    const double s = scale / std::max(1.0, fan);
    if (uniform) {
      const double limit = std::sqrt(3.0 * s);
      return random::uniform(shape, -limit, limit);
    }
    return random::truncated_normal(shape, 0.0, std::sqrt(s) / 0.87962566103423978);
  };
  if (init == "glorot_uniform") return variance_scaling(1.0, (fan_in + fan_out) / 2, true);
  if (init == "glorot_normal") return variance_scaling(1.0, (fan_in + fan_out) / 2, false);
  if (init == "he_uniform") return variance_scaling(2.0, fan_in, true);
  if (init == "he_normal") return variance_scaling(2.0, fan_in, false);
  if (init == "lecun_uniform") return variance_scaling(1.0, fan_in, true);
  if (init == "lecun_normal") return variance_scaling(1.0, fan_in, false);
  if (init == "zeros") return Tensor::zeros(shape);
  if (init == "ones") return Tensor::ones(shape);
  if (init == "random_normal") return random::normal(shape, 0.0, 0.05);
  if (init == "random_uniform") return random::uniform(shape, -0.05, 0.05);
  return random::truncated_normal(shape, 0.0, 0.05);
}

namespace layers {

Input::Input(Shape shape, std::string name) : Layer(name, "input_layer"), shape_(std::move(shape)) {
  output_shape_ = shape_;
  built_ = true;
}

Shape Input::build(const Shape& input_shape) {
  if (input_shape != shape_) {
    throw ValueError(fmt::format("Input '{}' expects shape {}, got {}", name_, shape_.to_keras_string(),
                                 input_shape.to_keras_string()));
  }
  return shape_;
}

Dense::Dense(int units, const std::string& activation, DenseOptions options)
    : Layer(options.name, "dense"), units_(units), options_(std::move(options)) {
  const ActivationFn fn = ActivationFn::get(activation);  // ValueError for unknown names
  activation_ = fn.kernel;
  activation_name_ = fn.name;
  composite_ = fn.composite;
  if (units <= 0) {
    throw ValueError(fmt::format("Received an invalid value for `units`, expected a positive integer. Received: "
                                 "units={}",
                                 units));
  }
  check_initializer(options_.kernel_initializer);  // fail at construction, not at build time
  check_initializer(options_.bias_initializer);
}

// "(None, 4, 6)": a per-sample shape with Keras's batch dimension.
static std::string with_batch(const Shape& sample) {
  std::vector<int64_t> dims{0};
  for (auto d : sample.dims()) dims.push_back(d);
  return Shape(dims).to_keras_string();
}

// Dense applies to the last axis of inputs of any rank >= 2 (batch included), as in Keras.
Shape Dense::build(const Shape& input_shape) {
  if (input_shape.rank() < 1) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected min_ndim=2, found "
                                 "ndim=1. Full shape received: (None,)",
                                 name_));
  }
  const int64_t in = input_shape[-1];
  if (built_) {
    if (kernel_->shape()[0] != in) {
      throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected axis -1 of input "
                                   "shape to have value {}, but received input with shape {}",
                                   name_, kernel_->shape()[0], with_batch(input_shape)));
    }
    return input_shape.with_dim(input_shape.rank() - 1, units_);
  }
  kernel_ = &add_weight("kernel", initialize(options_.kernel_initializer, {in, units_}));
  if (options_.use_bias) bias_ = &add_weight("bias", initialize(options_.bias_initializer, {units_}));
  return finish_build(input_shape.with_dim(input_shape.rank() - 1, units_));
}

Tensor Dense::call(const Tensor& inputs, bool) {
  const auto& s = inputs.shape();
  if (!built_) {
    const auto dims = s.dims();
    build(Shape(std::vector<int64_t>(dims.begin() + (s.rank() > 1 ? 1 : 0), dims.end())));
  }
  if (s.rank() < 2 || s[-1] != kernel_->shape()[0]) {
    throw InvalidArgumentError(fmt::format("Dense '{}' expects input with last dimension {}, got shape {}", name_,
                                           kernel_->shape()[0], s.to_string()));
  }
  // Rank > 2: the leading axes are rows of one product (a view), and the result takes their shape back.
  const Tensor x = s.rank() == 2 ? inputs : ops::reshape(inputs, Shape({s.num_elements() / s[-1], s[-1]}));
  Tensor y = ops::dense(x, kernel_->value(), bias_ ? bias_->value() : Tensor(), activation_);
  if (composite_) y = ActivationFn::get(activation_name_)(y);
  return s.rank() == 2 ? y : ops::reshape(y, s.with_dim(s.rank() - 1, units_));
}

bool Dense::has_regularization() const {
  return (options_.kernel_regularizer && kernel_) || (options_.bias_regularizer && bias_);
}

std::vector<Tensor> Dense::regularization_losses() {
  std::vector<Tensor> out;
  if (options_.kernel_regularizer && kernel_) out.push_back((*options_.kernel_regularizer)(kernel_->value()));
  if (options_.bias_regularizer && bias_) out.push_back((*options_.bias_regularizer)(bias_->value()));
  return out;
}

void Dense::apply_constraints() {
  if (options_.kernel_constraint && kernel_) kernel_->assign((*options_.kernel_constraint)(kernel_->value()));
  if (options_.bias_constraint && bias_) bias_->assign((*options_.bias_constraint)(bias_->value()));
}

Tensor Regularizer::operator()(const Tensor& w) const {
  Tensor total = Tensor::scalar(0.0);
  if (l1 != 0.0) total = ops::add(total, ops::mul(ops::reduce_sum(ops::abs(w)), Tensor::scalar(l1)));
  if (l2 != 0.0) total = ops::add(total, ops::mul(ops::reduce_sum(ops::square(w)), Tensor::scalar(l2)));
  return total;
}

Tensor Constraint::operator()(const Tensor& w) const {
  if (kind == Kind::non_neg) return ops::mul(w, ops::greater_equal(w, Tensor::scalar(0.0)));
  // MaxNorm (axis 0): w · clip(norms, 0, max) / (1e-7 + norms), norms per column.
  Tensor w2 = w.shape().rank() == 2 ? w : w.reshape(Shape({w.num_elements(), 1}));
  const Tensor norms = ops::sqrt(ops::reduce_sum(ops::square(w2), 0));
  const Tensor desired = ops::neg(ops::maximum(ops::neg(norms), Tensor::scalar(-max_value)));  // min(norms, max)
  const Tensor scaled = ops::mul(w2, ops::div(desired, ops::add(norms, Tensor::scalar(1e-7))));
  return w.shape().rank() == 2 ? scaled : scaled.reshape(w.shape());
}

}  // namespace layers
}  // namespace osprey::keras
