// Reshaping layers (keras.layers.Flatten, Reshape).
#include <fmt/format.h>

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
  return ops::reshape(x, Shape({n, n ? x.num_elements() / n : output_shape_[0]}));
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
    } else {
      known *= dims[i];
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
  return ops::reshape(x, Shape(dims));
}

}  // namespace osprey::keras::layers
