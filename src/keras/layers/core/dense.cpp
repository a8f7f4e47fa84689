// keras.layers.Input (InputLayer) and keras.layers.Dense.
#include <limits>

#include <fmt/format.h>

#include "keras/activations/activations.h"
#include "keras/initializers/initializers.h"
#include "keras/layers/weight_rules.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"  // detail::with_batch
#include "osprey/keras/layers/core.h"
#include "keras/saving/serialization.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

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
    : Layer(options.name, "dense", options.dtype), units_(units), options_(std::move(options)) {
  const ActivationFn fn = ActivationFn::get(activation);  // ValueError for unknown names
  activation_ = fn.kernel;
  activation_name_ = fn.name;
  composite_ = fn.composite;
  if (units <= 0) {
    throw ValueError(fmt::format("Received an invalid value for `units`, expected a positive integer. Received: "
                                 "units={}",
                                 units));
  }
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
                                   name_, kernel_->shape()[0], detail::with_batch(input_shape)));
    }
    return input_shape.with_dim(input_shape.rank() - 1, units_);
  }
  kernel_ = &add_weight("kernel", initialize(options_.kernel_initializer, {in, units_}));
  if (options_.use_bias) bias_ = &add_weight("bias", initialize(options_.bias_initializer, {units_}));
  return finish_build(input_shape.with_dim(input_shape.rank() - 1, units_));
}

Tensor Dense::call(const Tensor& ids_or_values, bool) {
  // Integer or boolean inputs (a lookup's counts) promote to the compute dtype, as Keras's matmul promotes them.
  const Tensor inputs = is_floating(ids_or_values.dtype()) ? ids_or_values : osprey::ops::cast(ids_or_values, compute_dtype());
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
  const Tensor x = s.rank() == 2 ? inputs : osprey::ops::reshape(inputs, Shape({s.num_elements() / s[-1], s[-1]}));
  Tensor y = osprey::ops::dense(x, autocast_variable(*kernel_), bias_ ? autocast_variable(*bias_) : Tensor(), activation_);
  if (composite_) y = ActivationFn::get(activation_name_)(y);
  return s.rank() == 2 ? y : osprey::ops::reshape(y, s.with_dim(s.rank() - 1, units_));
}

#define OSPREY_DENSE_RULES                                                 \
  {{kernel_, options_.kernel_regularizer, options_.kernel_constraint},    \
   {bias_, options_.bias_regularizer, options_.bias_constraint}}
bool Dense::has_regularization() const { return detail::any_penalty(OSPREY_DENSE_RULES); }
std::vector<Tensor> Dense::regularization_losses() { return detail::penalties(OSPREY_DENSE_RULES); }
void Dense::apply_constraints() { detail::constrain(OSPREY_DENSE_RULES); }
#undef OSPREY_DENSE_RULES


Lambda::Lambda(Function function, std::optional<Shape> output_shape, std::string name)
    : Layer(name, "lambda"), function_(std::move(function)), declared_shape_(std::move(output_shape)) {
  if (!function_) throw ValueError("Lambda: the function is empty (a default-constructed std::function)");
}

// The output shape: as declared, or one sample of zeros through the function.
Shape Lambda::build(const Shape& input_shape) {
  if (declared_shape_) return finish_build(*declared_shape_);
  std::vector<int64_t> dims{1};
  for (auto d : input_shape.dims()) dims.push_back(d);
  const Tensor out = function_(Tensor::zeros(Shape(dims)));
  if (!out.defined() || out.shape().rank() < 1 || out.shape()[0] != 1) {
    throw ValueError(fmt::format("Lambda '{}': the function must keep the batch axis first; for one sample of shape "
                                 "{} it returned {}",
                                 name_, Shape(dims).to_string(), out.defined() ? out.shape().to_string() : "nothing"));
  }
  const auto od = out.shape().dims();
  return finish_build(Shape(std::vector<int64_t>(od.begin() + 1, od.end())));
}

Tensor Lambda::call(const Tensor& inputs, bool) { return function_(inputs); }

// ---- Keras configs (layer.get_config()) and from_config ----

namespace ser = serialization;

std::string Input::get_config() const {
  return ser::dumps(ser::json{{"batch_shape", ser::shape_with_batch(shape_)},
                              {"dtype", "float32"},
                              {"sparse", false},
                              {"ragged", false},
                              {"name", name_},
                              {"optional", false}});
}

std::string Dense::get_config() const {
  ser::json cfg = ser::base_config(*this);
  const auto& o = options_;
  cfg["units"] = units_;
  cfg["activation"] = activation_name_;
  cfg["use_bias"] = o.use_bias;
  cfg["kernel_initializer"] = ser::initializer(o.kernel_initializer);
  cfg["bias_initializer"] = ser::initializer(o.bias_initializer);
  cfg["kernel_regularizer"] = ser::regularizer(o.kernel_regularizer);
  cfg["bias_regularizer"] = ser::regularizer(o.bias_regularizer);
  cfg["kernel_constraint"] = ser::constraint(o.kernel_constraint);
  cfg["bias_constraint"] = ser::constraint(o.bias_constraint);
  cfg["quantization_config"] = nullptr;
  return ser::dumps(cfg);
}

std::string Lambda::get_config() const {
  throw ValueError(fmt::format("Layer '{}' is a Lambda: its C++ function cannot be written into a model's config "
                               "(Keras too refuses to load a Lambda's code unless safe_mode is off). Rebuild the "
                               "model in code and keep its weights with save_weights().",
                               name_));
}

OSPREY_REGISTER_LAYERS(core) {
  using ser::json;
  ser::register_layer_class("InputLayer", {false, [](const json& c) -> std::shared_ptr<Layer> {
    const json& shape = c.contains("batch_shape") ? c["batch_shape"] : c.value("batch_input_shape", json());
    ser::refuse_set(c, {"sparse", "ragged", "optional"}, "InputLayer", "batch_shape, dtype, name");
    const json dtype = c.value("dtype", json("float32"));
    if (!(dtype.is_null() || dtype == json("float32") || dtype == json("int32") || dtype == json("int64"))) {
      ser::unsupported("InputLayer dtype", dtype.dump(), "float32, int32, int64 (token ids)");
    }
    return std::make_shared<Input>(ser::shape_without_batch(shape, "InputLayer batch_shape"), ser::name_of(c));
  }});
  ser::register_layer_class("Dense", {true, [](const json& c) -> std::shared_ptr<Layer> {
    DenseOptions o;
    o.use_bias = ser::value_or(c, "use_bias", true);
    if (c.contains("kernel_initializer")) o.kernel_initializer = ser::initializer_from(c["kernel_initializer"]);
    if (c.contains("bias_initializer")) o.bias_initializer = ser::initializer_from(c["bias_initializer"]);
    o.name = ser::name_of(c);
    o.kernel_regularizer = ser::regularizer_from(c.value("kernel_regularizer", json()));
    o.bias_regularizer = ser::regularizer_from(c.value("bias_regularizer", json()));
    o.kernel_constraint = ser::constraint_from(c.value("kernel_constraint", json()));
    o.bias_constraint = ser::constraint_from(c.value("bias_constraint", json()));
    ser::refuse_set(c, {"activity_regularizer", "lora_rank", "quantization_config"}, "Dense",
                    "kernel/bias regularizers and constraints");
    const auto units = static_cast<int>(
        ser::integer(c, "units", 1, std::numeric_limits<int>::max(), "Dense " + o.name));
    return std::make_shared<Dense>(units, ser::activation_from(c.value("activation", json("linear"))), o);
  }});
  ser::register_layer_class("Identity", {false, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<Identity>(ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
