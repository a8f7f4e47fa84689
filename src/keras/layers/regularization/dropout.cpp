// Regularization layers (keras.layers.Dropout).
#include <cmath>

#include <fmt/format.h>

#include "osprey/distribute.h"
#include "keras/layers/config_with.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/regularization.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::keras::layers {

static Tensor scalar(double v) { return Tensor::scalar(v); }

// ---- Dropout ----

Dropout::Dropout(double rate, std::string name) : Dropout(rate, std::move(name), "dropout") {}
Dropout::Dropout(double rate, std::string name, const std::string& prefix) : Layer(name, prefix), rate_(rate) {
  if (!(rate >= 0.0 && rate < 1.0)) {
    throw ValueError(fmt::format("Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                                 "Received: rate={}",
                                 rate));
  }
}
Shape Dropout::build(const Shape& input_shape) {
  return finish_build(input_shape);
}
Tensor Dropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0.0) return x;
  // keep = uniform >= rate (probability 1 − rate), a constant for the tape; kept values scaled by 1/(1 − rate).
  Tensor keep = keep_mask(x.shape(), x.device_ref());
  if (keep.dtype() != x.dtype()) keep = osprey::ops::cast(keep, x.dtype());  // a half-precision input (mixed policy)
  return osprey::ops::mul(osprey::ops::mul(x, keep), Tensor::scalar(1.0 / (1.0 - rate_), x.dtype()));
}

// The uniforms come from this layer's generator on the device (a new stream of the global seed).
Tensor Dropout::keep_mask(const Shape& shape, runtime::Device& device) {
  Tensor state;
  {
    std::lock_guard lock(generators_->mu);
    Tensor& s = generators_->by_device[&device];
    if (!s.defined()) s = random::new_state(&device);
    state = s;
  }
  return osprey::ops::greater_equal(random::uniform_from_state(shape, state), scalar(rate_));
}


ActivityRegularization::ActivityRegularization(double l1, double l2, std::string name)
    : Layer(name, "activity_regularization"), l1_(l1), l2_(l2) {
  if (l1 < 0 || l2 < 0) throw ValueError(fmt::format("ActivityRegularization: l1={} and l2={} must be >= 0", l1, l2));
}

// Keras 3 adds the activity penalty of each call divided by the batch size.
Tensor ActivityRegularization::call(const Tensor& x, bool) {
  Tensor penalty = Regularizer{l1_, l2_}(x);
  penalty = osprey::ops::div(penalty, scalar(static_cast<double>(std::max<int64_t>(x.shape()[0], 1))));
  std::lock_guard lock(collected_->mu);
  auto& [pass, losses] = collected_->by_replica[std::max(current_replica_id(), 0)];
  if (pass != keras::detail::forward_pass()) {  // a new forward pass: the previous one's penalties are done with
    pass = keras::detail::forward_pass();
    losses.clear();
  }
  losses.push_back(penalty);
  return x;
}

std::vector<Tensor> ActivityRegularization::regularization_losses() {
  std::lock_guard lock(collected_->mu);
  auto it = collected_->by_replica.find(std::max(current_replica_id(), 0));
  return it == collected_->by_replica.end() ? std::vector<Tensor>{} : it->second.second;
}

GaussianNoise::GaussianNoise(double stddev, std::string name) : Layer(name, "gaussian_noise"), stddev_(stddev) {
  if (stddev < 0) throw ValueError(fmt::format("GaussianNoise: stddev={} must be >= 0", stddev));
}

Tensor GaussianNoise::call(const Tensor& x, bool training) {
  if (!training || stddev_ == 0.0) return x;
  return osprey::ops::add(x, random::normal(x.shape(), 0.0, stddev_));
}

static void check_rate(const char* layer, double rate) {
  if (!(rate >= 0.0 && rate < 1.0)) {
    throw ValueError(fmt::format("Invalid value received for argument `rate` of {}: expected a float value between "
                                 "0 and 1 (1 excluded). Received: rate={}",
                                 layer, rate));
  }
}

GaussianDropout::GaussianDropout(double rate, std::string name) : Layer(name, "gaussian_dropout"), rate_(rate) {
  check_rate("GaussianDropout", rate);
}

Tensor GaussianDropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0.0) return x;
  const double stddev = std::sqrt(rate_ / (1.0 - rate_));
  return osprey::ops::mul(x, random::normal(x.shape(), 1.0, stddev));
}

AlphaDropout::AlphaDropout(double rate, std::string name) : Layer(name, "alpha_dropout"), rate_(rate) {
  check_rate("AlphaDropout", rate);
}

// Keras's formula: dropped values become alpha' = −λα (SELU's limit), then a·x + b restores mean and variance.
Tensor AlphaDropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0.0) return x;
  constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
  constexpr double kAlphaP = -kAlpha * kScale;
  const double a = std::pow((1.0 - rate_) * (1.0 + rate_ * kAlphaP * kAlphaP), -0.5);
  const double b = -a * kAlphaP * rate_;
  const Tensor kept = osprey::ops::greater_equal(random::uniform(x.shape()), scalar(rate_));
  const Tensor dropped_value = osprey::ops::mul(osprey::ops::sub(scalar(1.0), kept), scalar(kAlphaP));
  return osprey::ops::add(osprey::ops::mul(osprey::ops::add(osprey::ops::mul(x, kept), dropped_value), scalar(a)), scalar(b));
}

// ---- Keras configs (layer.get_config()) and from_config ----

namespace ser = serialization;
using ser::json;



std::string Dropout::get_config() const { return with(*this, {{"rate", rate_}, {"seed", nullptr}, {"noise_shape", nullptr}}); }
std::string ActivityRegularization::get_config() const { return with(*this, {{"l1", l1_}, {"l2", l2_}}); }
std::string GaussianNoise::get_config() const { return with(*this, {{"stddev", stddev_}, {"seed", nullptr}}); }
std::string GaussianDropout::get_config() const { return with(*this, {{"rate", rate_}, {"seed", nullptr}}); }
std::string AlphaDropout::get_config() const {
  return with(*this, {{"rate", rate_}, {"seed", nullptr}, {"noise_shape", nullptr}});
}

// Osprey's random layers draw from the global generator; a config's seed would not give Keras's numbers anyway
// (different generators), so it is accepted and not used.
template <typename L>
static ser::LayerClass rate_class(const char* key) {
  return {false, [key](const json& c) -> std::shared_ptr<Layer> {
    ser::refuse_set(c, {"noise_shape"}, c.value("name", std::string("layer")), key);
    return std::make_shared<L>(ser::number(c, key, 0.0, 1e30, "a random layer's"), ser::name_of(c));
  }};
}

OSPREY_REGISTER_LAYERS(regularization) {
  ser::register_layer_class("Dropout", rate_class<Dropout>("rate"));
  ser::register_layer_class("GaussianNoise", rate_class<GaussianNoise>("stddev"));
  ser::register_layer_class("GaussianDropout", rate_class<GaussianDropout>("rate"));
  ser::register_layer_class("AlphaDropout", rate_class<AlphaDropout>("rate"));
  ser::register_layer_class("ActivityRegularization", {false, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<ActivityRegularization>(ser::value_or(c, "l1", 0.0), ser::value_or(c, "l2", 0.0),
                                                    ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
