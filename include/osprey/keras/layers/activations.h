// Activation layers: keras.layers.Activation, LeakyReLU, ...
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// Applies an activation function (keras.layers.Activation).
class Activation : public Layer {
 public:
  explicit Activation(const std::string& activation, std::string name = "");
  OSPREY_KERAS_LAYER(Activation)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Activation"; }
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::string& activation_name() const { return name_of_activation_; }

 private:
  std::string name_of_activation_;
};

/// x where x ≥ 0, negative_slope·x elsewhere; the layer's default slope is 0.3 (the "leaky_relu" activation's is
/// 0.2), as in Keras.
class LeakyReLU : public Layer {
 public:
  explicit LeakyReLU(double negative_slope = 0.3, std::string name = "");
  OSPREY_KERAS_LAYER(LeakyReLU)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "LeakyReLU"; }
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  double negative_slope() const { return slope_; }

 private:
  double slope_;
};

}  // namespace osprey::keras::layers
