// Activation layers (keras.layers.Activation, LeakyReLU).
#include <fmt/format.h>

#include "keras/activations/activations.h"
#include "keras/layers/trailing_axes.h"
#include "keras/layers/config_with.h"
#include "keras/saving/serialization.h"
#include "osprey/keras/layers/layer.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/activations.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

static Tensor scalar(double v) { return Tensor::scalar(v); }

// ---- Activation ----

Activation::Activation(const std::string& activation, std::string name)
    : Layer(name, "activation"), name_of_activation_(ActivationFn::get(activation).name) {
  try {
    (void)osprey::ops::activation_from_name(name_of_activation_);
    kernel_activation_ = true;
  } catch (const ValueError&) {
    kernel_activation_ = false;
  }
}
Shape Activation::build(const Shape& input_shape) {
  return finish_build(input_shape);
}
Tensor Activation::call(const Tensor& x, bool) { return ActivationFn::get(name_of_activation_)(x); }

// ---- LeakyReLU ----

LeakyReLU::LeakyReLU(double negative_slope, std::string name) : Layer(name, "leaky_re_lu"), slope_(negative_slope) {
  if (!(negative_slope >= 0.0)) {
    throw ValueError(fmt::format("The negative_slope value of a Leaky ReLU layer cannot be None or negative value. "
                                 "Expected a float. Received: negative_slope={}",
                                 negative_slope));
  }
}
Shape LeakyReLU::build(const Shape& input_shape) {
  return finish_build(input_shape);
}
Tensor LeakyReLU::call(const Tensor& x, bool) {
  // max(x, slope·x) for slopes up to 1; the general form otherwise: x·[x ≥ 0] + slope·x·[x < 0].
  if (slope_ <= 1.0) return osprey::ops::maximum(x, osprey::ops::mul(x, scalar(slope_)));
  const Tensor pos = osprey::ops::greater_equal(x, scalar(0.0));
  return osprey::ops::add(osprey::ops::mul(x, pos), osprey::ops::mul(osprey::ops::mul(x, scalar(slope_)), osprey::ops::sub(scalar(1.0), pos)));
}


ReLU::ReLU(ReLUOptions options) : Layer(options.name, "re_lu", options.dtype), o_(std::move(options)) {
  if (o_.max_value && *o_.max_value < 0) {
    throw ValueError(fmt::format("max_value of a ReLU layer cannot be a negative value. Received: max_value={}",
                                 *o_.max_value));
  }
  if (o_.negative_slope < 0) {
    throw ValueError(fmt::format("negative_slope of a ReLU layer cannot be a negative value. Received: "
                                 "negative_slope={}",
                                 o_.negative_slope));
  }
  if (o_.threshold < 0) {
    throw ValueError(fmt::format("threshold of a ReLU layer cannot be None or a negative value. Received: "
                                 "threshold={}",
                                 o_.threshold));
  }
}

// Keras's activations.relu with its options, in its order: the part below the threshold, x above it, the clip.
Tensor ReLU::call(const Tensor& x, bool) {
  if (!o_.max_value && o_.negative_slope == 0.0 && o_.threshold == 0.0) return osprey::ops::relu(x);
  Tensor negative_part;
  if (o_.negative_slope != 0.0) negative_part = osprey::ops::relu(osprey::ops::sub(scalar(o_.threshold), x));
  Tensor y = o_.threshold != 0.0
                 ? osprey::ops::mul(x, osprey::ops::sub(scalar(1.0), osprey::ops::greater_equal(scalar(o_.threshold), x)))  // x > threshold
                 : osprey::ops::relu(x);
  if (o_.max_value) y = osprey::ops::minimum(osprey::ops::maximum(y, scalar(0.0)), scalar(*o_.max_value));
  if (negative_part.defined()) y = osprey::ops::sub(y, osprey::ops::mul(negative_part, scalar(o_.negative_slope)));
  return y;
}

ELU::ELU(double alpha, std::string name) : Layer(name, "elu"), alpha_(alpha) {}

Tensor ELU::call(const Tensor& x, bool) {
  if (alpha_ == 1.0) return osprey::ops::activation(x, osprey::ops::Activation::elu);
  // x > 0: x; else alpha·(exp(x) − 1), as relu(x) + alpha·(exp(min(x, 0)) − 1).
  const Tensor negative = osprey::ops::sub(osprey::ops::exp(osprey::ops::minimum(x, scalar(0.0))), scalar(1.0));
  return osprey::ops::add(osprey::ops::relu(x), osprey::ops::mul(negative, scalar(alpha_)));
}

Softmax::Softmax(int axis, std::string name) : Softmax(std::vector<int>{axis}, std::move(name)) {}

Softmax::Softmax(std::vector<int> axes, std::string name) : Layer(name, "softmax"), axes_(std::move(axes)) {
  if (axes_.empty()) throw ValueError("Softmax: axis must name at least one axis");
  for (int a : axes_) {
    if (a == 0) throw ValueError("Softmax: axis=0 is the batch axis; give a feature axis (1, ..., or -1)");
  }
}

// Keras 3: the mask aligned with the inputs' trailing axes, each of its dimensions 1 or the input's; masked logits
// become -1e9 and masked outputs 0.
Tensor Softmax::call_masked(const Tensor& inputs, bool training, const Tensor& mask) {
  if (!mask.defined()) return call(inputs, training);
  const auto& is = inputs.shape();
  const auto& ms = mask.shape();
  bool ok = ms.rank() <= is.rank();
  std::vector<int64_t> dims(static_cast<std::size_t>(is.rank()), 1);
  for (int i = 1; ok && i <= ms.rank(); ++i) {
    ok = ms[-i] == 1 || ms[-i] == is[-i];
    dims[static_cast<std::size_t>(is.rank() - i)] = ms[-i];
  }
  if (!ok) {
    throw ValueError(fmt::format("Layer '{}' (Softmax): The `mask` must be broadcastable to `inputs`. Each mask "
                                 "dimension must be 1 or match the corresponding input dimension. Received: "
                                 "inputs.shape={}, mask.shape={}",
                                 name_, is.to_string(), ms.to_string()));
  }
  const Tensor m = osprey::ops::reshape(mask.dtype() == DType::float32 ? mask : osprey::ops::cast(mask, DType::float32), Shape(dims));
  const auto axes = detail::feature_axes(name_, "Softmax", axes_, is.rank());
  if (axes == std::vector<int>{is.rank() - 1}) return osprey::ops::masked_softmax(inputs, m);
  const detail::TrailingAxes t(is, axes);
  return t.back(osprey::ops::masked_softmax(t.rows(inputs), t.rows(osprey::ops::broadcast_to(m, is))));
}

Tensor Softmax::call(const Tensor& x, bool) {
  const auto& s = x.shape();
  const auto axes = detail::feature_axes(name_, "Softmax", axes_, s.rank());
  if (axes == std::vector<int>{s.rank() - 1} && s.rank() == 2) return osprey::ops::softmax(x);
  const detail::TrailingAxes t(s, axes);
  return t.back(osprey::ops::softmax(t.rows(x)));
}

PReLU::PReLU(initializers::Initializer alpha_initializer, std::string name)
    : Layer(name, "p_re_lu"), initializer_(std::move(alpha_initializer)) {
}

Shape PReLU::build(const Shape& input_shape) {
  if (built_) {
    if (alpha_->shape() != input_shape) {
      throw ValueError(fmt::format("PReLU '{}' was built for inputs of shape {}, got {}", name_,
                                   alpha_->shape().to_string(), input_shape.to_string()));
    }
    return output_shape_;
  }
  alpha_ = &add_weight("alpha", initialize(initializer_, input_shape));
  return finish_build(input_shape);
}

// relu(x) − alpha·relu(−x), alpha per element of a sample (rows of the flattened batch).
Tensor PReLU::call(const Tensor& x, bool) {
  const int64_t n = x.shape()[0], per_sample = x.num_elements() / std::max<int64_t>(n, 1);
  const Tensor flat = osprey::ops::reshape(x, Shape({n, per_sample}));
  const Tensor alpha = osprey::ops::reshape(alpha_->value(), Shape({per_sample}));
  const Tensor y = osprey::ops::sub(osprey::ops::relu(flat), osprey::ops::mul(osprey::ops::relu(osprey::ops::neg(flat)), alpha));
  return osprey::ops::reshape(y, x.shape());
}

// ---- Keras configs (layer.get_config()) and from_config ----

namespace ser = serialization;
using ser::json;



std::string Activation::get_config() const { return with(*this, {{"activation", name_of_activation_}}); }
std::string LeakyReLU::get_config() const { return with(*this, {{"negative_slope", slope_}}); }
std::string ReLU::get_config() const {
  return with(*this, {{"max_value", o_.max_value ? json(*o_.max_value) : json(nullptr)},
                      {"negative_slope", o_.negative_slope},
                      {"threshold", o_.threshold}});
}
std::string ELU::get_config() const {  // Keras puts alpha before trainable
  return ser::dumps(json{{"name", name_}, {"alpha", alpha_}, {"trainable", trainable}, {"dtype", ser::dtype_policy(dtype_policy().name())}});
}
std::string Softmax::get_config() const { return with(*this, {{"axis", axes_.size() == 1 ? json(axes_[0]) : json(axes_)}}); }
std::string PReLU::get_config() const {
  return with(*this, {{"alpha_initializer", ser::initializer(initializer_)},
                      {"alpha_regularizer", nullptr},
                      {"alpha_constraint", nullptr},
                      {"shared_axes", nullptr}});
}

OSPREY_REGISTER_LAYERS(activations) {
  ser::register_layer_class("Activation", {false, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<Activation>(ser::activation_from(c.at("activation")), ser::name_of(c));
  }});
  ser::register_layer_class("LeakyReLU", {false, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<LeakyReLU>(ser::value_or(c, "negative_slope", 0.3), ser::name_of(c));
  }});
  ser::register_layer_class("ReLU", {false, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<ReLU>(ReLUOptions{.max_value = ser::optional_number(c, "max_value"),
                                              .negative_slope = ser::value_or(c, "negative_slope", 0.0),
                                              .threshold = ser::value_or(c, "threshold", 0.0),
                                              .name = ser::name_of(c)});
  }});
  ser::register_layer_class("ELU", {false, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<ELU>(ser::value_or(c, "alpha", 1.0), ser::name_of(c));
  }});
  ser::register_layer_class("Softmax", {false, [](const json& c) -> std::shared_ptr<Layer> {
    const json axis = c.value("axis", json(-1));
    if (axis.is_number_integer()) return std::make_shared<Softmax>(axis.get<int>(), ser::name_of(c));
    const auto axes = ser::integers(c, "axis", -64, 64, "Softmax " + ser::name_of(c), 16);
    return std::make_shared<Softmax>(std::vector<int>(axes.begin(), axes.end()), ser::name_of(c));
  }});
  ser::register_layer_class("PReLU", {true, [](const json& c) -> std::shared_ptr<Layer> {
    ser::refuse_set(c, {"alpha_regularizer", "alpha_constraint", "shared_axes"}, "PReLU", "alpha_initializer");
    return std::make_shared<PReLU>(ser::initializer_from(c.value("alpha_initializer", json("zeros"))),
                                   ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
