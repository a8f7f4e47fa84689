// Reshaping layers (keras.layers.Flatten, Reshape).
#include <fmt/format.h>

#include <algorithm>
#include "keras/layers/config_with.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/reshaping.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

// ---- Flatten / Reshape ----

Flatten::Flatten(std::string name) : Layer(name, "flatten") {}
Shape Flatten::build(const Shape& input_shape) {
  return finish_build(Shape({input_shape.num_elements()}));
}
Tensor Flatten::call(const Tensor& x, bool) {
  const int64_t n = x.shape()[0];
  return osprey::ops::reshape(x, Shape({n, n ? x.num_elements() / n : output_shape_[0]}));
}

Reshape::Reshape(std::vector<int64_t> target_shape, std::string name)
    : Layer(name, "reshape"), target_(std::move(target_shape)) {}

static std::string dims_string(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}
Shape Reshape::build(const Shape& input_shape) {
  std::vector<int64_t> dims = target_;
  int64_t known = 1, unknown = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (unknown >= 0) throw ValueError("Reshape: there can only be one unknown dimension (-1) in target_shape");
      unknown = static_cast<int64_t>(i);
    } else if (dims[i] < 0 || __builtin_mul_overflow(known, dims[i], &known)) {
      throw ValueError(fmt::format("Reshape: target_shape {} has a negative dimension or more elements than a tensor "
                                   "can hold",
                                   dims_string(target_)));
    }
  }
  const int64_t total = input_shape.num_elements();
  if (unknown >= 0) {
    if (known == 0 || total % known) {
      throw ValueError(fmt::format("Reshape: input shape {} cannot be reshaped to {}", input_shape.to_string(),
                                   dims_string(target_)));
    }
    dims[unknown] = total / known;
  } else if (known != total) {
    throw ValueError(fmt::format("Reshape: total size of the new array must be unchanged, input_shape = {}, "
                                 "output_shape = {}",
                                 input_shape.to_string(), dims_string(target_)));
  }
  return finish_build(Shape(dims));
}
Tensor Reshape::call(const Tensor& x, bool) {
  std::vector<int64_t> dims{x.shape()[0]};
  for (int64_t d : output_shape_.dims()) dims.push_back(d);
  return osprey::ops::reshape(x, Shape(dims));
}


RepeatVector::RepeatVector(int n, std::string name) : Layer(name, "repeat_vector"), n_(n) {
  if (n < 1) throw ValueError(fmt::format("RepeatVector: n={} must be >= 1", n));
}

Shape RepeatVector::build(const Shape& input_shape) {
  if (input_shape.rank() != 1) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected ndim=2, found "
                                 "ndim={}. Full shape received: (None, {})",
                                 name_, input_shape.rank() + 1, fmt::join(input_shape.dims(), ", ")));
  }
  return finish_build(Shape({n_, input_shape[0]}));
}

Tensor RepeatVector::call(const Tensor& x, bool) {
  const Tensor one = osprey::ops::reshape(x, Shape({x.shape()[0], 1, x.shape()[1]}));
  return n_ == 1 ? one : osprey::ops::concat(std::vector<Tensor>(static_cast<std::size_t>(n_), one), 1);
}

Permute::Permute(std::vector<int> dims, std::string name) : Layer(name, "permute"), dims_(std::move(dims)) {
  std::vector<int> sorted(dims_);
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int>(i) + 1) {
      throw ValueError(fmt::format("Invalid permutation argument `dims` for Permute Layer. The set of indices in "
                                   "`dims` must be consecutive and start from 1. Received dims=({})",
                                   fmt::join(dims_, ", ")));
    }
  }
}

Shape Permute::build(const Shape& input_shape) {
  if (static_cast<int>(dims_.size()) != input_shape.rank()) {
    throw ValueError(fmt::format("Permute '{}': dims ({}) permute {} axes, but the input has {} (shape {})", name_,
                                 fmt::join(dims_, ", "), dims_.size(), input_shape.rank(),
                                 input_shape.to_keras_string()));
  }
  std::vector<int64_t> out;
  for (int d : dims_) out.push_back(input_shape[d - 1]);
  return finish_build(Shape(out));
}

Tensor Permute::call(const Tensor& x, bool) {
  std::vector<int> perm{0};
  perm.insert(perm.end(), dims_.begin(), dims_.end());
  return osprey::ops::transpose(x, perm);
}

// ---- Keras configs (layer.get_config()) and from_config ----

namespace ser = serialization;
using ser::json;



std::string Flatten::get_config() const { return with(*this, {{"data_format", "channels_last"}}); }
std::string Reshape::get_config() const { return with(*this, {{"target_shape", target_}}); }
std::string RepeatVector::get_config() const { return with(*this, {{"n", n_}}); }
std::string Permute::get_config() const { return with(*this, {{"dims", dims_}}); }

OSPREY_REGISTER_LAYERS(reshaping) {
  ser::register_layer_class("Flatten", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const json format = c.value("data_format", json("channels_last"));
    if (!(format.is_null() || format == json("channels_last"))) {
      ser::unsupported("Flatten data_format", format.dump(), "channels_last");
    }
    return std::make_shared<Flatten>(ser::name_of(c));
  }});
  ser::register_layer_class("Reshape", {false, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<Reshape>(ser::integers(c, "target_shape", -1, int64_t{1} << 40, "Reshape", 32),
                                     ser::name_of(c));
  }});
  ser::register_layer_class("RepeatVector", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<RepeatVector>(static_cast<int>(ser::integer(c, "n", 1, 1 << 30, "RepeatVector")),
                                          ser::name_of(c));
  }});
  ser::register_layer_class("Permute", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const auto dims = ser::integers(c, "dims", 1, 32, "Permute", 32);
    return std::make_shared<Permute>(std::vector<int>(dims.begin(), dims.end()), ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
