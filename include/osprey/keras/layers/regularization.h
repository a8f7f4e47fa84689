// Regularization layers: keras.layers.Dropout, ...
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// Sets inputs to 0 with probability `rate` during training and scales the rest by 1/(1 − rate); the identity in
/// evaluate() and predict() (keras.layers.Dropout).
class Dropout : public Layer {
 public:
  explicit Dropout(double rate, std::string name = "");
  OSPREY_KERAS_LAYER(Dropout)
  std::string class_name() const override { return "Dropout"; }
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  double rate() const { return rate_; }

 private:
  double rate_;
};

}  // namespace osprey::keras::layers
