// keras.layers.SpectralNormalization (keras/src/layers/normalization/spectral_normalization.py): the power method
// on the wrapped layer's kernel before each training call, the kernel divided by its estimated largest singular
// value in place (ops::assign, so a recorded step repeats it).
#include "osprey/keras/ops.h"

#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/normalization.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::keras::layers {

namespace kops = osprey::keras::ops;

SpectralNormalization::SpectralNormalization(std::shared_ptr<Layer> layer, int64_t power_iterations, std::string name)
    : Layer(name, "spectral_normalization"), layer_(std::move(layer)), power_iterations_(power_iterations) {
  if (!layer_) throw ValueError("SpectralNormalization: the wrapped layer is null");
  if (power_iterations <= 0) {
    throw ValueError(fmt::format("`power_iterations` should be greater than zero. Received: "
                                 "`power_iterations={}`",
                                 power_iterations));
  }
  if (layer_->num_inputs() != 1) {
    throw ValueError(fmt::format("SpectralNormalization wraps a layer of one input; '{}' ({}) takes several",
                                 layer_->name(), layer_->class_name()));
  }
}

namespace {

// Keras's InputSpec(min_ndim=1, axes={-1: features}) once built.
void check_features(const std::string& layer, const Shape& built_for, const Shape& sample) {
  if (sample.rank() < 1 || sample[-1] != built_for[-1]) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected axis -1 of input "
                                 "shape to have value {}, but received input with shape {}",
                                 layer, built_for[-1], detail::with_batch(sample)));
  }
}

Shape sample_shape(const Tensor& x) {
  const auto d = x.shape().dims();
  return Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end()));
}

}  // namespace

Shape SpectralNormalization::build(const Shape& input_shape) {
  if (built_) {
    check_features(name_, input_shape_, input_shape);
    return output_shape_;
  }
  const bool first = !layer_->built();
  const Shape out = layer_->build(input_shape);
  if (first) {  // Keras's paths: "spectral_normalization/dense/kernel"
    for (auto* v : layer_->variables()) v->set_path(name_ + "/" + v->path());
  }
  for (auto* v : layer_->variables()) {
    if (!kernel_ && (v->name() == "kernel" || v->name() == "embeddings")) kernel_ = v;
  }
  if (!kernel_) {
    throw ValueError(fmt::format("{} object has no attribute 'kernel' nor 'embeddings'", layer_->class_name()));
  }
  const int64_t units = kernel_->value().shape()[-1];
  vector_u_ = &add_weight("vector_u", random::truncated_normal(Shape({1, units}), 0.0, 0.02), false);
  input_shape_ = input_shape;
  return finish_build(out);
}

Tensor SpectralNormalization::call(const Tensor& inputs, bool training) {
  if (!built_) build(sample_shape(inputs));
  check_features(name_, input_shape_, sample_shape(inputs));
  if (training) {
    const Tensor kernel = kops::stop_gradient(kernel_->value());
    const int64_t units = kernel.shape()[-1];
    const Tensor w = osprey::ops::reshape(kernel, Shape({kernel.shape().num_elements() / units, units}));
    const Tensor wt = osprey::ops::transpose(w, {1, 0});
    Tensor u = vector_u_->value(), v;
    for (int64_t i = 0; i < power_iterations_; ++i) {
      v = kops::normalize(osprey::ops::matmul(u, wt));
      u = kops::normalize(osprey::ops::matmul(v, w));
    }
    const Tensor sigma = osprey::ops::matmul(osprey::ops::matmul(v, w), osprey::ops::transpose(u, {1, 0}));
    // Keras's cond: a kernel of zeros keeps itself and vector_u.
    const Tensor zero = kops::all(kops::equal(kernel, 0.0));
    const Tensor new_kernel = kops::where(zero, kernel, kops::divide(kernel, sigma));
    const Tensor new_u = kops::where(zero, vector_u_->value(), u);
    for (auto [var, value] : {std::pair{kernel_, new_kernel}, std::pair{vector_u_, new_u}}) {
      if (var->num_components() == 1) {
        osprey::ops::assign(var->value(), value);
      } else {
        var->assign(value);
      }
    }
  }
  const Tensor y = layer_->call(inputs, training);
  return y.dtype() == inputs.dtype() || !is_floating(inputs.dtype()) ? y : y.cast(inputs.dtype());
}

std::vector<Variable*> SpectralNormalization::variables() {
  std::vector<Variable*> out;
  for (auto* v : layer_->variables()) {
    out.push_back(v);
    if (v == kernel_ && vector_u_) out.push_back(vector_u_);
  }
  return out;
}

std::vector<Variable*> SpectralNormalization::own_saved_variables() {
  if (!kernel_ || !vector_u_) return {};
  return {kernel_, vector_u_};
}

void SpectralNormalization::append_trainable_variables(std::vector<Variable*>& out) {
  if (trainable) layer_->append_trainable_variables(out);
}

int64_t SpectralNormalization::count_params() const {
  return layer_->count_params() + (vector_u_ ? vector_u_->value().num_elements() : 0);
}

namespace ser = serialization;
using ser::json;

std::string SpectralNormalization::get_config() const {
  json c = ser::base_config(*this);
  c["layer"] = ser::layer_object(*layer_, built_ ? std::vector<Shape>{input_shape_} : std::vector<Shape>{});
  c["power_iterations"] = power_iterations_;
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(spectral_normalization) {
  ser::register_layer_class("SpectralNormalization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    if (!c.contains("layer") || !c["layer"].is_object()) {
      throw ValueError("SpectralNormalization: the config has no `layer`");
    }
    const int64_t iterations =
        c.contains("power_iterations") ? ser::integer(c, "power_iterations", 1, 1 << 20, "SpectralNormalization") : 1;
    return std::make_shared<SpectralNormalization>(ser::layer_from_object(c["layer"]), iterations, ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
