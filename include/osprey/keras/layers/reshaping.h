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
  std::string get_config() const override;
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
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::vector<int64_t>& target_shape() const { return target_; }

 private:
  std::vector<int64_t> target_;
};

/// (batch, d) → (batch, n, d): the input repeated n times (keras.layers.RepeatVector).
class RepeatVector : public Layer {
 public:
  explicit RepeatVector(int n, std::string name = "");
  OSPREY_KERAS_LAYER(RepeatVector)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "RepeatVector"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  int n() const { return n_; }

 private:
  int n_;
};

/// Permutes a sample's axes: dims is a permutation of 1..rank (the batch axis stays first), as keras.layers.Permute.
class Permute : public Layer {
 public:
  explicit Permute(std::vector<int> dims, std::string name = "");
  OSPREY_KERAS_LAYER(Permute)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Permute"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::vector<int>& dims() const { return dims_; }

 private:
  std::vector<int> dims_;
};

}  // namespace osprey::keras::layers
