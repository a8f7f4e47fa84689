// Keras layers: Input and Dense (keras.layers).
#pragma once

#include <concepts>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/ops.h"
#include "osprey/tensor.h"
#include "osprey/variable.h"

namespace osprey::keras {

class KerasTensor;

/// Base class of every layer. A layer owns its variables and creates them in build(), on the current device.
///
/// A layer is called on real tensors (eager: `layer(x)`) or on symbolic ones (`layer(keras::Input({20}))`), which
/// records it in a graph that keras::Model turns into a model. A layer called on symbolic tensors must be owned by
/// a std::shared_ptr (std::make_shared, or a temporary such as `layers::Dense(8)(x)`, which is moved into one), so
/// that the model keeps it alive; calling one layer at several places shares its weights.
class Layer : public std::enable_shared_from_this<Layer> {
 public:
  /// `name`, or when empty the next auto-name for `default_prefix` (none when that is empty too).
  explicit Layer(const std::string& name, const std::string& default_prefix);
  virtual ~Layer() = default;
  Layer(const Layer&) = default;
  Layer(Layer&&) = default;
  Layer& operator=(const Layer&) = default;
  Layer& operator=(Layer&&) = default;

  /// The layer's name: given, or auto-generated from the class ("dense", "dense_1", ...).
  const std::string& name() const { return name_; }
  /// Keras's class name ("Dense").
  virtual std::string class_name() const = 0;
  /// Creates the variables for inputs of `input_shape` (batch dimension excluded); returns the output shape.
  /// Throws ValueError when the input is incompatible.
  virtual Shape build(const Shape& input_shape) = 0;
  /// Applies the layer to a batch.
  virtual Tensor call(const Tensor& inputs, bool training) = 0;
  /// A layer of several inputs (Add, Concatenate, ...) overrides these two; the defaults take exactly one.
  virtual Shape build(const std::vector<Shape>& input_shapes);
  virtual Tensor call(const std::vector<Tensor>& inputs, bool training);
  /// How many inputs call() takes: 1, or 0 for "a list of any length" (merging layers).
  virtual int num_inputs() const { return 1; }
  /// Whether a training step through this layer can be recorded and replayed: its call runs the same kernels on
  /// every batch of one shape (ops only: no random numbers, no host-side decisions, no variable assignments).
  virtual bool recordable() const { return false; }
  bool built() const { return built_; }
  /// Output shape without the batch dimension (after build).
  const Shape& output_shape() const { return output_shape_; }

  /// Eager call on a batch (builds the layer on first use).
  Tensor operator()(const Tensor& inputs, bool training = false);
  Tensor operator()(const std::vector<Tensor>& inputs, bool training = false);
  /// Symbolic call: records this layer in the graph and returns its output (ValueError for incompatible shapes,
  /// naming the layer and the shapes).
  KerasTensor operator()(const KerasTensor& input) &;
  KerasTensor operator()(const std::vector<KerasTensor>& inputs) &;
  KerasTensor operator()(const KerasTensor& input) &&;
  KerasTensor operator()(const std::vector<KerasTensor>& inputs) &&;

  /// Keras's layer.trainable: false freezes the layer's weights (they leave trainable_variables(); summary() counts
  /// them as non-trainable) and makes BatchNormalization run in inference mode, as in Keras.
  bool trainable = true;

  virtual std::vector<Variable*> variables();
  std::vector<Variable*> trainable_variables();
  /// Appends the trainable variables to `out` (a training step's list, without a vector per layer).
  virtual void append_trainable_variables(std::vector<Variable*>& out);
  virtual int64_t count_params() const;
  /// The layer's weight penalties (kernel_regularizer, ...), added to the training loss.
  virtual std::vector<Tensor> regularization_losses() { return {}; }
  /// Whether regularization_losses() has any (without computing them).
  virtual bool has_regularization() const { return false; }
  /// Projects the weights back after an optimizer update (kernel_constraint, ...).
  virtual void apply_constraints() {}

  /// The layer moved into a new shared_ptr of its own class (a temporary called on symbolic tensors). Layers
  /// declare it with OSPREY_KERAS_LAYER(Class); nullptr where a layer cannot be moved.
  virtual std::shared_ptr<Layer> move_to_shared() { return nullptr; }

 protected:
  /// Adds a variable whose path is "<layer name>/<name>".
  Variable& add_weight(const std::string& name, const Tensor& initial_value, bool trainable = true);
  Variable& add_weight(const std::string& name, const Tensor& initial_value, VariableOptions options);
  /// Ends build(): records the output shape, marks the layer built and returns the shape.
  Shape finish_build(Shape output_shape) {
    output_shape_ = std::move(output_shape);
    built_ = true;
    return output_shape_;
  }

  std::string name_;
  bool built_ = false;
  Shape output_shape_;
  std::deque<Variable> weights_;  // deque: pointers stay valid as weights are added

 private:
  KerasTensor call_symbolic(std::shared_ptr<Layer> self, const std::vector<KerasTensor>& inputs);
  std::shared_ptr<Layer> owner(bool temporary);
};

/// In a layer class: lets a temporary of it be called on symbolic tensors (`layers::Dense(8)(x)`).
#define OSPREY_KERAS_LAYER(Class) \
  std::shared_ptr<::osprey::keras::Layer> move_to_shared() override { return std::make_shared<Class>(std::move(*this)); }

/// A layer passed by value or by pointer: `Sequential({layers::Input({20}), layers::Dense(64, "relu")})`.
class LayerRef {
 public:
  template <typename L>
    requires std::derived_from<std::decay_t<L>, Layer>
  LayerRef(L&& layer) : ptr_(std::make_shared<std::decay_t<L>>(std::forward<L>(layer))) {}
  template <typename L>
    requires std::derived_from<L, Layer>
  LayerRef(std::shared_ptr<L> layer) : ptr_(std::move(layer)) {}
  const std::shared_ptr<Layer>& get() const { return ptr_; }

 private:
  std::shared_ptr<Layer> ptr_;
};

/// Resets the auto-naming counters (keras.backend.clear_session()).
void clear_session();

namespace layers {

/// The model's input: its shape without the batch dimension (keras.Input / InputLayer).
class Input : public Layer {
 public:
  explicit Input(Shape shape, std::string name = "");
  OSPREY_KERAS_LAYER(Input)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "InputLayer"; }
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool) override { return inputs; }
  const Shape& shape() const { return shape_; }

 private:
  Shape shape_;
};
using InputLayer = Input;

/// A weight penalty: l1·Σ|w| + l2·Σw² (keras.regularizers.L1, L2, L1L2).
struct Regularizer {
  double l1 = 0.0, l2 = 0.0;
  Tensor operator()(const Tensor& w) const;
};
/// keras.regularizers.L1(0.01), L2(0.01), L1L2(l1, l2).
inline Regularizer L1(double l1 = 0.01) { return {l1, 0.0}; }
inline Regularizer L2(double l2 = 0.01) { return {0.0, l2}; }
inline Regularizer L1L2(double l1 = 0.0, double l2 = 0.0) { return {l1, l2}; }

/// A projection applied to a weight after every update (keras.constraints).
struct Constraint {
  enum class Kind { max_norm, non_neg } kind = Kind::non_neg;
  double max_value = 2.0;  ///< MaxNorm: the largest L2 norm of a column (axis 0)
  Tensor operator()(const Tensor& w) const;
};
inline Constraint MaxNorm(double max_value = 2.0) { return {Constraint::Kind::max_norm, max_value}; }
inline Constraint NonNeg() { return {Constraint::Kind::non_neg, 0.0}; }

/// Options of Dense besides units and activation (Keras's keyword arguments).
struct DenseOptions {
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  std::string name{};
  std::optional<Regularizer> kernel_regularizer{}, bias_regularizer{};
  std::optional<Constraint> kernel_constraint{}, bias_constraint{};
};

/// activation(inputs @ kernel + bias) as one fused op. Kernel (in, units) with glorot_uniform, bias zeros.
class Dense : public Layer {
 public:
  /// `units` must be > 0; `activation` is a Keras name ("relu", "sigmoid", "mish", ...; "" is linear).
  explicit Dense(int units, const std::string& activation = "", DenseOptions options = {});
  OSPREY_KERAS_LAYER(Dense)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Dense"; }
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  int units() const { return units_; }
  /// The fused (kernel) activation; linear when the activation is a composite one (see activation_name()).
  ops::Activation activation() const { return activation_; }
  /// Keras's name of the activation ("relu", "mish", ...).
  const std::string& activation_name() const { return activation_name_; }
  Variable* kernel() { return kernel_; }
  Variable* bias() { return bias_; }
  const DenseOptions& options() const { return options_; }
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;

 private:
  int units_;
  ops::Activation activation_ = ops::Activation::linear;
  std::string activation_name_;
  bool composite_ = false;  ///< applied with ops after the fused linear product
  DenseOptions options_;
  Variable* kernel_ = nullptr;
  Variable* bias_ = nullptr;
};

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

struct BatchNormalizationOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  ///< a trainable offset beta (zeros)
  bool scale = true;   ///< a trainable factor gamma (ones)
  std::string name{};
};
/// Normalises each feature (the last axis) with the batch's mean and variance in training, updating moving
/// averages (moving = moving·momentum + batch·(1 − momentum)); with the moving averages in evaluate/predict.
/// Variables in Keras's order: gamma, beta, moving_mean, moving_variance (the last two not trainable).
class BatchNormalization : public Layer {
 public:
  explicit BatchNormalization(BatchNormalizationOptions options = {});
  OSPREY_KERAS_LAYER(BatchNormalization)
  std::string class_name() const override { return "BatchNormalization"; }
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Variable* moving_mean() { return moving_mean_; }
  const BatchNormalizationOptions& options() const { return o_; }
  Variable* moving_variance() { return moving_variance_; }

 private:
  BatchNormalizationOptions o_;
  Variable *gamma_ = nullptr, *beta_ = nullptr, *moving_mean_ = nullptr, *moving_variance_ = nullptr;
};

struct LayerNormalizationOptions {
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  std::string name{};
};
/// Normalises each sample over its last axis, then gamma·x + beta per feature (keras.layers.LayerNormalization).
class LayerNormalization : public Layer {
 public:
  explicit LayerNormalization(LayerNormalizationOptions options = {});
  OSPREY_KERAS_LAYER(LayerNormalization)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "LayerNormalization"; }
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const LayerNormalizationOptions& options() const { return o_; }

 private:
  LayerNormalizationOptions o_;
  Variable *gamma_ = nullptr, *beta_ = nullptr;
};

}  // namespace layers

/// Initial values by Keras initializer name: glorot_uniform, glorot_normal, he_uniform, he_normal,
/// lecun_uniform, lecun_normal, zeros, ones, random_normal, random_uniform, truncated_normal.
Tensor initialize(const std::string& initializer, const Shape& shape);

/// keras.regularizers, keras.constraints and keras.initializers under Keras's module names (the layers:: spellings
/// stay).
namespace regularizers {
using layers::L1;
using layers::L1L2;
using layers::L2;
using layers::Regularizer;
}  // namespace regularizers
namespace constraints {
using layers::Constraint;
using layers::MaxNorm;
using layers::NonNeg;
}  // namespace constraints
namespace initializers {
/// Initial values by Keras initializer name (keras.initializers.get(name)(shape)).
inline Tensor get(const std::string& initializer, const Shape& shape) { return initialize(initializer, shape); }
}  // namespace initializers

}  // namespace osprey::keras
