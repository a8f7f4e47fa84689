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
  /// The activations with a kernel of their own compute in half precision; the ones made of ops in float32.
  bool supports_half_compute() const override { return kernel_activation_; }
  std::string class_name() const override { return "Activation"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::string& activation_name() const { return name_of_activation_; }

 private:
  std::string name_of_activation_;
  bool kernel_activation_ = false;
};

/// x where x ≥ 0, negative_slope·x elsewhere; the layer's default slope is 0.3 (the "leaky_relu" activation's is
/// 0.2), as in Keras.
class LeakyReLU : public Layer {
 public:
  explicit LeakyReLU(double negative_slope = 0.3, std::string name = "");
  OSPREY_KERAS_LAYER(LeakyReLU)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "LeakyReLU"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  double negative_slope() const { return slope_; }

 private:
  double slope_;
};

struct ReLUOptions {
  std::optional<double> max_value{};  ///< clip the output at this value
  double negative_slope = 0.0;        ///< slope below the threshold
  double threshold = 0.0;             ///< values below it are 0 (or follow negative_slope)
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};
/// keras.layers.ReLU: max(x, 0), or with Keras's options x for x > threshold, negative_slope·(x − threshold)
/// below, clipped at max_value.
class ReLU : public Layer {
 public:
  explicit ReLU(ReLUOptions options = {});
  OSPREY_KERAS_LAYER(ReLU)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "ReLU"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;
  const ReLUOptions& options() const { return o_; }

 private:
  ReLUOptions o_;
};

/// keras.layers.ELU: x for x > 0, alpha·(exp(x) − 1) elsewhere.
class ELU : public Layer {
 public:
  explicit ELU(double alpha = 1.0, std::string name = "");
  OSPREY_KERAS_LAYER(ELU)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "ELU"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;
  double alpha() const { return alpha_; }

 private:
  double alpha_;
};

/// keras.layers.Softmax over the last axis.
class Softmax : public Layer {
 public:
  explicit Softmax(int axis = -1, std::string name = "");
  /// Over several axes at once (Keras's axis=(1, 2)): one softmax over all their elements.
  explicit Softmax(std::vector<int> axes, std::string name = "");
  OSPREY_KERAS_LAYER(Softmax)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Softmax"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;
  /// Masked positions left out of the softmax (their outputs 0), the mask aligned with the inputs' trailing axes
  /// (each of its dimensions 1 or the input's, else a ValueError), as Keras 3.
  Tensor call_masked(const Tensor& inputs, bool training, const Tensor& mask) override;
  const std::vector<int>& axes() const { return axes_; }

 private:
  std::vector<int> axes_{-1};  ///< any axes but the batch axis (negative: from the end); other axes than the last
                               ///< are transposed to the end and back
};

/// keras.layers.PReLU: max(x, 0) − alpha·max(−x, 0) with a learned alpha per input element (alpha_initializer
/// "zeros" by default, as in Keras).
class PReLU : public Layer {
 public:
  explicit PReLU(initializers::Initializer alpha_initializer = "zeros", std::string name = "");
  OSPREY_KERAS_LAYER(PReLU)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "PReLU"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Variable* alpha() { return alpha_; }

 private:
  initializers::Initializer initializer_;
  Variable* alpha_ = nullptr;
};

}  // namespace osprey::keras::layers
