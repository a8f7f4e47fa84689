// Reshaping layers: keras.layers.Flatten, Reshape, ...
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// (batch, d1, d2, ...) → (batch, d1·d2·...) (keras.layers.Flatten).
class Flatten : public Layer {
 public:
  explicit Flatten(std::string name = "");
  OSPREY_KERAS_LAYER(Flatten)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Flatten"; }
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
};

/// (batch, ...) → (batch, target_shape...); one dimension may be −1 (keras.layers.Reshape).
class Reshape : public Layer {
 public:
  explicit Reshape(std::vector<int64_t> target_shape, std::string name = "");
  OSPREY_KERAS_LAYER(Reshape)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Reshape"; }
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::vector<int64_t>& target_shape() const { return target_; }

 private:
  std::vector<int64_t> target_;
};

}  // namespace osprey::keras::layers
