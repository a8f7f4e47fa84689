// Normalization layers (keras.layers.BatchNormalization, LayerNormalization), written with differentiable ops so
// that the tape, every device and MirroredStrategy work for them unchanged.
#include <cmath>

#include <fmt/format.h>

#include "keras/layers/trailing_axes.h"
#include "keras/layers/config_with.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/normalization.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

static Tensor scalar(double v) { return Tensor::scalar(v); }

// ---- BatchNormalization ----

// epsilon keeps the division away from zero: it must be positive (and finite).
static void check_epsilon(const char* layer, double epsilon) {
  if (!(epsilon > 0.0) || !std::isfinite(epsilon)) {
    throw ValueError(fmt::format("{}: epsilon must be a positive number, got {}", layer, epsilon));
  }
}

BatchNormalization::BatchNormalization(BatchNormalizationOptions o) : Layer(o.name, "batch_normalization", o.dtype), o_(o) {
  check_epsilon("BatchNormalization", o.epsilon);
}

// Sequential builds every layer again when a layer is added: the weights are created once.
static void check_rebuild(const std::string& layer, const Shape& built_for, const Shape& input_shape) {
  if (built_for[-1] != input_shape[-1]) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected axis -1 of input "
                                 "shape to have value {}, but received input with shape {}",
                                 layer, built_for[-1], input_shape.to_keras_string()));
  }
}

Shape BatchNormalization::build(const Shape& input_shape) {
  if (built_) {
    check_rebuild(name_, output_shape_, input_shape);
    return output_shape_;
  }
  const int64_t d = input_shape[-1];
  if (o_.scale) gamma_ = &add_weight("gamma", Tensor::ones({d}));
  if (o_.center) beta_ = &add_weight("beta", Tensor::zeros({d}));
  // Replica-local under a strategy, averaged when read (Keras: ON_READ, MEAN).
  const VariableOptions stats{.trainable = false, .synchronization = VariableSynchronization::ON_READ,
                              .aggregation = VariableAggregation::MEAN};
  moving_mean_ = &add_weight("moving_mean", Tensor::zeros({d}), stats);
  moving_variance_ = &add_weight("moving_variance", Tensor::ones({d}), stats);
  return finish_build(input_shape);
}

// A mask (one axis fewer than the inputs: Keras's rule) restricts the batch statistics to the kept positions, as
// Keras's _moments: sums over them divided by (their count + 1e-7); every position is normalized with those.
// Inference reads the moving statistics: the mask changes nothing there.
Tensor BatchNormalization::call_masked(const Tensor& inputs, bool training, const Tensor& mask) {
  if (mask.defined() && mask.shape().rank() != inputs.shape().rank() - 1) {
    throw ValueError(fmt::format("The mask provided should be one dimension less than the inputs. Received: "
                                 "mask.shape={}, inputs.shape={} (layer '{}')",
                                 mask.shape().to_keras_string(), inputs.shape().to_keras_string(), name_));
  }
  return normalize(inputs, training, mask);
}

Tensor BatchNormalization::call(const Tensor& inputs, bool training) { return normalize(inputs, training, Tensor()); }

Tensor BatchNormalization::normalize(const Tensor& inputs, bool training, const Tensor& mask) {
  const int64_t d = inputs.shape()[-1];
  const int64_t rows = d ? inputs.num_elements() / d : 0;
  const Tensor x = inputs.shape().rank() == 2 ? inputs : osprey::ops::reshape(inputs, Shape({rows, d}));
  Tensor y;
  if (training && trainable) {  // a frozen BatchNormalization runs in inference mode, as in Keras
    Tensor mean, centered, var;
    if (!mask.defined()) {
      mean = osprey::ops::reduce_mean(x, 0);
      centered = osprey::ops::sub(x, mean);
      var = osprey::ops::reduce_mean(osprey::ops::square(centered), 0);
    } else {
      const Tensor flat = osprey::ops::reshape(mask, Shape({rows, 1}));
      const Tensor kept = flat.dtype() == DType::bool_ ? flat : osprey::ops::compare(flat, scalar(0.0).cast(flat.dtype()),
                                                                            osprey::ops::CompareKind::not_equal);
      const Tensor zero = scalar(0.0).cast(x.dtype());
      const Tensor count = osprey::ops::add(osprey::ops::reduce_sum(kept.cast(x.dtype())), scalar(1e-7).cast(x.dtype()));
      mean = osprey::ops::div(osprey::ops::reduce_sum(osprey::ops::where(kept, x, zero), 0), count);
      centered = osprey::ops::sub(x, mean);
      var = osprey::ops::div(osprey::ops::reduce_sum(osprey::ops::square(osprey::ops::where(kept, centered, zero)), 0), count);
    }
    y = osprey::ops::mul(centered, osprey::ops::div(scalar(1.0), osprey::ops::sqrt(osprey::ops::add(var, scalar(o_.epsilon)))));
    const Tensor m = scalar(o_.momentum), one_minus = scalar(1.0 - o_.momentum);
    const Tensor new_mean = osprey::ops::add(osprey::ops::mul(moving_mean_->value(), m), osprey::ops::mul(mean, one_minus));
    const Tensor new_var = osprey::ops::add(osprey::ops::mul(moving_variance_->value(), m), osprey::ops::mul(var, one_minus));
    if (moving_mean_->num_components() == 1) {  // in place, by a kernel: a recorded step repeats the update
      osprey::ops::assign(moving_mean_->value(), new_mean);
      osprey::ops::assign(moving_variance_->value(), new_var);
    } else {  // one component per replica (a strategy): the variable's own replica rules
      moving_mean_->assign(new_mean);
      moving_variance_->assign(new_var);
    }
  } else {
    const Tensor inv = osprey::ops::div(scalar(1.0), osprey::ops::sqrt(osprey::ops::add(moving_variance_->value(), scalar(o_.epsilon))));
    y = osprey::ops::mul(osprey::ops::sub(x, moving_mean_->value()), inv);
  }
  if (gamma_) y = osprey::ops::mul(y, gamma_->value());
  if (beta_) y = osprey::ops::add(y, beta_->value());
  return inputs.shape().rank() == 2 ? y : osprey::ops::reshape(y, inputs.shape());
}

// ---- LayerNormalization ----

LayerNormalization::LayerNormalization(LayerNormalizationOptions o) : Layer(o.name, "layer_normalization", o.dtype), o_(o) {
  check_epsilon("LayerNormalization", o.epsilon);
}

Shape LayerNormalization::build(const Shape& input_shape) {
  if (built_) {
    check_rebuild(name_, output_shape_, input_shape);
    return output_shape_;
  }
  const int64_t d = input_shape[-1];
  if (o_.scale) gamma_ = &add_weight("gamma", Tensor::ones({d}));
  if (o_.center) beta_ = &add_weight("beta", Tensor::zeros({d}));
  return finish_build(input_shape);
}

Tensor LayerNormalization::call(const Tensor& inputs, bool) {
  const int64_t d = inputs.shape()[-1];
  const int64_t rows = d ? inputs.num_elements() / d : 0;
  const Tensor x = inputs.shape().rank() == 2 ? inputs : osprey::ops::reshape(inputs, Shape({rows, d}));
  const Tensor y = osprey::ops::layer_norm(x, gamma_ ? gamma_->value() : Tensor(), beta_ ? beta_->value() : Tensor(), o_.epsilon);
  return inputs.shape().rank() == 2 ? y : osprey::ops::reshape(y, inputs.shape());
}

// ---- UnitNormalization, GroupNormalization, RMSNormalization ----

// (rows, d) ⊙ v[row] for v of shape (rows,): v broadcast along each row (a one-deep product, exact).
static Tensor times_rows(const Tensor& x2d, const Tensor& v) {
  const Tensor column = osprey::ops::reshape(v, Shape({x2d.shape()[0], 1}));
  return osprey::ops::mul(x2d, osprey::ops::matmul(column, Tensor::ones({1, x2d.shape()[1]})));
}
// x as (rows, last axis).
static Tensor rows_of_last_axis(const Tensor& x) {
  return osprey::ops::reshape(x, Shape({x.num_elements() / std::max<int64_t>(x.shape()[-1], 1), x.shape()[-1]}));
}

UnitNormalization::UnitNormalization(int axis, std::string name)
    : UnitNormalization(std::vector<int>{axis}, std::move(name)) {}

UnitNormalization::UnitNormalization(std::vector<int> axes, std::string name)
    : Layer(name, "unit_normalization"), axes_(std::move(axes)) {
  if (axes_.empty()) throw ValueError("UnitNormalization: axis must name at least one axis");
  for (int a : axes_) {
    if (a == 0) throw ValueError("UnitNormalization: axis=0 is the batch axis; give feature axes (1, ..., or -1)");
  }
}

// Keras: x · min(1/sqrt(Σx²), 1/ε) with ε = 1e-12, the sum over the axes.
Tensor UnitNormalization::call(const Tensor& x, bool) {
  const detail::TrailingAxes t(x.shape(), detail::feature_axes(name_, "UnitNormalization", axes_, x.shape().rank()));
  const Tensor rows = t.rows(x);
  const Tensor inv = osprey::ops::minimum(osprey::ops::div(scalar(1.0), osprey::ops::sqrt(osprey::ops::reduce_sum(osprey::ops::square(rows), 1))), scalar(1e12));
  return t.back(times_rows(rows, inv));
}

GroupNormalization::GroupNormalization(GroupNormalizationOptions o) : Layer(o.name, "group_normalization", o.dtype), o_(o) {
  if (o.groups < 1) throw ValueError(fmt::format("GroupNormalization: groups={} must be >= 1", o.groups));
  check_epsilon("GroupNormalization", o.epsilon);
}

Shape GroupNormalization::build(const Shape& input_shape) {
  const int64_t channels = input_shape.rank() ? input_shape[-1] : 0;
  if (channels < o_.groups || channels % o_.groups != 0) {
    throw ValueError(fmt::format("Number of groups ({}) must be a multiple of the number of channels ({}) and not "
                                 "more than it: layer '{}', input shape {}",
                                 o_.groups, channels, name_, input_shape.to_keras_string()));
  }
  if (built_) {
    check_rebuild(name_, output_shape_, input_shape);
    return output_shape_;
  }
  if (o_.scale) gamma_ = &add_weight("gamma", Tensor::ones({channels}));
  if (o_.center) beta_ = &add_weight("beta", Tensor::zeros({channels}));
  return finish_build(input_shape);
}

// Each sample's group (its spatial positions × the group's channels) normalised with its mean and variance.
Tensor GroupNormalization::call(const Tensor& x, bool) {
  const auto& s = x.shape();
  const int64_t n = s[0], c = s[-1], g = o_.groups, per = c / g;
  const int64_t spatial = x.num_elements() / std::max<int64_t>(n * c, 1);
  // (n, spatial, g, per) → (n, g, spatial, per) → rows of one group each.
  Tensor grouped = osprey::ops::reshape(x, Shape({n, spatial, g, per}));
  if (spatial > 1) grouped = osprey::ops::transpose(grouped, {0, 2, 1, 3});
  const Tensor rows = osprey::ops::reshape(grouped, Shape({n * g, spatial * per}));
  const Tensor mean = osprey::ops::reduce_mean(rows, 1);
  const Tensor centered = osprey::ops::sub(rows, times_rows(Tensor::ones(rows.shape()), mean));
  const Tensor var = osprey::ops::reduce_mean(osprey::ops::square(centered), 1);
  Tensor y = times_rows(centered, osprey::ops::div(scalar(1.0), osprey::ops::sqrt(osprey::ops::add(var, scalar(o_.epsilon)))));
  y = osprey::ops::reshape(y, Shape({n, g, spatial, per}));
  if (spatial > 1) y = osprey::ops::transpose(y, {0, 2, 1, 3});
  y = osprey::ops::reshape(y, Shape({n * spatial, c}));
  if (gamma_) y = osprey::ops::mul(y, gamma_->value());
  if (beta_) y = osprey::ops::add(y, beta_->value());
  return osprey::ops::reshape(y, s);
}

RMSNormalization::RMSNormalization(double epsilon, std::string name)
    : Layer(name, "rms_normalization"), epsilon_(epsilon) {
  check_epsilon("RMSNormalization", epsilon);
}

Shape RMSNormalization::build(const Shape& input_shape) {
  if (built_) {
    check_rebuild(name_, output_shape_, input_shape);
    return output_shape_;
  }
  scale_ = &add_weight("scale", Tensor::ones({input_shape[-1]}));
  return finish_build(input_shape);
}

Tensor RMSNormalization::call(const Tensor& x, bool) {
  const Tensor rows = rows_of_last_axis(x);
  const Tensor inv = osprey::ops::div(scalar(1.0), osprey::ops::sqrt(osprey::ops::add(osprey::ops::reduce_mean(osprey::ops::square(rows), 1), scalar(epsilon_))));
  return osprey::ops::reshape(osprey::ops::mul(times_rows(rows, inv), scale_->value()), x.shape());
}

// ---- Keras configs (layer.get_config()) and from_config ----

namespace ser = serialization;
using ser::json;



std::string BatchNormalization::get_config() const {
  return with(*this, {{"axis", -1},
                      {"momentum", o_.momentum},
                      {"epsilon", o_.epsilon},
                      {"center", o_.center},
                      {"scale", o_.scale},
                      {"beta_initializer", ser::initializer("zeros")},
                      {"gamma_initializer", ser::initializer("ones")},
                      {"moving_mean_initializer", ser::initializer("zeros")},
                      {"moving_variance_initializer", ser::initializer("ones")},
                      {"beta_regularizer", nullptr},
                      {"gamma_regularizer", nullptr},
                      {"beta_constraint", nullptr},
                      {"gamma_constraint", nullptr},
                      {"synchronized", false},
                      {"renorm", false},
                      {"renorm_clipping", nullptr},
                      {"renorm_momentum", 0.99}});
}
std::string LayerNormalization::get_config() const {
  return with(*this, {{"axis", built_ ? json::array({-1}) : json(-1)},  // Keras stores the axis as a list once built
                      {"epsilon", o_.epsilon},
                      {"center", o_.center},
                      {"scale", o_.scale},
                      {"rms_scaling", false},
                      {"beta_initializer", ser::initializer("zeros")},
                      {"gamma_initializer", ser::initializer("ones")},
                      {"beta_regularizer", nullptr},
                      {"gamma_regularizer", nullptr},
                      {"beta_constraint", nullptr},
                      {"gamma_constraint", nullptr}});
}
std::string UnitNormalization::get_config() const {
  return with(*this, {{"axis", axes_.size() == 1 ? json(axes_[0]) : json(axes_)}});
}
std::string GroupNormalization::get_config() const {
  return with(*this, {{"groups", o_.groups},
                      {"axis", -1},
                      {"epsilon", o_.epsilon},
                      {"center", o_.center},
                      {"scale", o_.scale},
                      {"beta_initializer", ser::initializer("zeros")},
                      {"gamma_initializer", ser::initializer("ones")},
                      {"beta_regularizer", nullptr},
                      {"gamma_regularizer", nullptr},
                      {"beta_constraint", nullptr},
                      {"gamma_constraint", nullptr}});
}
std::string RMSNormalization::get_config() const {
  return with(*this, {{"axis", json::array({-1})}, {"epsilon", epsilon_}});
}

// The last axis only: -1 or [-1].
static void last_axis_only(const json& c, const std::string& cls) {
  const json axis = c.value("axis", json(-1));
  if (!(axis == json(-1) || axis == json::array({-1}))) ser::unsupported(cls + " axis", axis.dump(), "-1");
}
// Keras's default initializers for beta (zeros) and gamma (ones); others are refused, not silently replaced.
static void default_initializers(const json& c, const std::string& cls) {
  for (const auto& [key, name] : {std::pair{"beta_initializer", "zeros"}, {"gamma_initializer", "ones"},
                                  {"moving_mean_initializer", "zeros"}, {"moving_variance_initializer", "ones"}}) {
    if (c.contains(key) && ser::initializer_from(c[key]).class_name != initializers::Initializer(name).class_name) {
      ser::unsupported(cls + " " + key, c[key].dump().substr(0, 100), name);
    }
  }
  ser::refuse_set(c, {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}, cls,
                  "epsilon, center, scale");
}

OSPREY_REGISTER_LAYERS(normalization) {
  ser::register_layer_class("BatchNormalization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    last_axis_only(c, "BatchNormalization");
    default_initializers(c, "BatchNormalization");
    ser::refuse_set(c, {"renorm", "synchronized"}, "BatchNormalization", "momentum, epsilon, center, scale");
    return std::make_shared<BatchNormalization>(BatchNormalizationOptions{.momentum = ser::value_or(c, "momentum", 0.99),
                                                                          .epsilon = ser::value_or(c, "epsilon", 1e-3),
                                                                          .center = ser::value_or(c, "center", true),
                                                                          .scale = ser::value_or(c, "scale", true),
                                                                          .name = ser::name_of(c)});
  }});
  ser::register_layer_class("LayerNormalization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    last_axis_only(c, "LayerNormalization");
    default_initializers(c, "LayerNormalization");
    ser::refuse_set(c, {"rms_scaling"}, "LayerNormalization", "epsilon, center, scale");
    return std::make_shared<LayerNormalization>(LayerNormalizationOptions{.epsilon = ser::value_or(c, "epsilon", 1e-3),
                                                                          .center = ser::value_or(c, "center", true),
                                                                          .scale = ser::value_or(c, "scale", true),
                                                                          .name = ser::name_of(c)});
  }});
  ser::register_layer_class("UnitNormalization", {false, [](const json& c) -> std::shared_ptr<Layer> {
    const json axis = c.value("axis", json(-1));
    if (axis.is_number_integer()) return std::make_shared<UnitNormalization>(axis.get<int>(), ser::name_of(c));
    const auto axes = ser::integers(c, "axis", -64, 64, "UnitNormalization " + ser::name_of(c), 16);
    return std::make_shared<UnitNormalization>(std::vector<int>(axes.begin(), axes.end()), ser::name_of(c));
  }});
  ser::register_layer_class("GroupNormalization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    last_axis_only(c, "GroupNormalization");
    default_initializers(c, "GroupNormalization");
    return std::make_shared<GroupNormalization>(GroupNormalizationOptions{
        .groups = static_cast<int>(ser::integer(c, "groups", 1, 1 << 30, "GroupNormalization")),
        .epsilon = ser::value_or(c, "epsilon", 1e-3),
        .center = ser::value_or(c, "center", true),
        .scale = ser::value_or(c, "scale", true),
        .name = ser::name_of(c)});
  }});
  ser::register_layer_class("RMSNormalization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    last_axis_only(c, "RMSNormalization");
    return std::make_shared<RMSNormalization>(ser::value_or(c, "epsilon", 1e-6), ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
