// keras.layers.Input (InputLayer) and keras.layers.Dense.
#include <fmt/format.h>

#include "keras/activations/activations.h"
#include "keras/initializers/initializers.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/core.h"
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

}  // namespace osprey::keras::layers
