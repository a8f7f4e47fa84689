// Normalization layers: keras.layers.BatchNormalization, LayerNormalization, ...
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

struct BatchNormalizationOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  ///< a trainable offset beta (zeros)
  bool scale = true;   ///< a trainable factor gamma (ones)
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};
/// Normalises each feature (the last axis) with the batch's mean and variance in training, updating moving
/// averages (moving = moving·momentum + batch·(1 − momentum)); with the moving averages in evaluate/predict.
/// Variables in Keras's order: gamma, beta, moving_mean, moving_variance (the last two not trainable).
class BatchNormalization : public Layer {
 public:
  explicit BatchNormalization(BatchNormalizationOptions options = {});
  OSPREY_KERAS_LAYER(BatchNormalization)
  bool recordable() const override { return true; }  // its statistics are updated by a kernel (ops::assign)
  bool mixes_samples() const override { return true; }
  std::string class_name() const override { return "BatchNormalization"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// With a mask (one axis fewer than the inputs, else Keras's ValueError) the batch statistics come from the kept
  /// positions only, as Keras's; every position is normalized with them.
  Tensor call_masked(const Tensor& inputs, bool training, const Tensor& mask) override;
  Variable* moving_mean() { return moving_mean_; }
  const BatchNormalizationOptions& options() const { return o_; }
  Variable* moving_variance() { return moving_variance_; }

 private:
  Tensor normalize(const Tensor& inputs, bool training, const Tensor& mask);
  BatchNormalizationOptions o_;
  Variable *gamma_ = nullptr, *beta_ = nullptr, *moving_mean_ = nullptr, *moving_variance_ = nullptr;
};

struct LayerNormalizationOptions {
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};
/// Normalises each sample over its last axis, then gamma·x + beta per feature (keras.layers.LayerNormalization).
class LayerNormalization : public Layer {
 public:
  explicit LayerNormalization(LayerNormalizationOptions options = {});
  OSPREY_KERAS_LAYER(LayerNormalization)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "LayerNormalization"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const LayerNormalizationOptions& options() const { return o_; }

 private:
  LayerNormalizationOptions o_;
  Variable *gamma_ = nullptr, *beta_ = nullptr;
};

/// Scales each sample to unit L2 norm over its last axis, or over the given axes (keras.layers.UnitNormalization).
class UnitNormalization : public Layer {
 public:
  explicit UnitNormalization(int axis = -1, std::string name = "");
  /// Over several axes at once (Keras's axis=[1, 2]): each sample's elements along them as one vector.
  explicit UnitNormalization(std::vector<int> axes, std::string name = "");
  OSPREY_KERAS_LAYER(UnitNormalization)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "UnitNormalization"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;
  const std::vector<int>& axes() const { return axes_; }

 private:
  std::vector<int> axes_{-1};
};

struct GroupNormalizationOptions {
  int groups = 32;
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};
/// Normalises each sample over groups of channels (the last axis split in `groups`, with the other non-batch axes),
/// then gamma·x + beta per channel (keras.layers.GroupNormalization).
class GroupNormalization : public Layer {
 public:
  explicit GroupNormalization(GroupNormalizationOptions options = {});
  OSPREY_KERAS_LAYER(GroupNormalization)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "GroupNormalization"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const GroupNormalizationOptions& options() const { return o_; }

 private:
  GroupNormalizationOptions o_;
  Variable *gamma_ = nullptr, *beta_ = nullptr;
};

/// x / sqrt(mean(x²) + epsilon) over the last axis, times a learned scale (keras.layers.RMSNormalization).
class RMSNormalization : public Layer {
 public:
  explicit RMSNormalization(double epsilon = 1e-6, std::string name = "");
  OSPREY_KERAS_LAYER(RMSNormalization)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "RMSNormalization"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  double epsilon() const { return epsilon_; }

 private:
  double epsilon_;
  Variable* scale_ = nullptr;
};

/// keras.layers.SpectralNormalization(layer, power_iterations=1): in training, before each call of the wrapped
/// layer, `power_iterations` steps of the power method on its kernel (or an Embedding's embeddings) reshaped to
/// (-1, last axis) estimate its largest singular value sigma, and the kernel is divided by sigma in place (a step
/// that no gradient flows through), the estimate's vector kept in the non-trainable `vector_u` (1, last axis). A
/// kernel of zeros is left as it is. In inference the wrapped layer runs on the kernel as it is. Variables in
/// Keras's order: the kernel, vector_u, then the wrapped layer's others. Around an Embedding the output is the
/// embedding vectors (Keras 3.15 casts it to the ids' integer dtype, which leaves zeros).
class SpectralNormalization : public Layer {
 public:
  explicit SpectralNormalization(std::shared_ptr<Layer> layer, int64_t power_iterations = 1, std::string name = "");
  OSPREY_KERAS_LAYER(SpectralNormalization)
  bool recordable() const override { return layer_->recordable(); }  // its updates are kernels (ops::assign)
  std::string class_name() const override { return "SpectralNormalization"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  std::vector<std::pair<std::string, Layer*>> sublayers() override { return {{"layer", layer_.get()}}; }
  std::vector<Variable*> variables() override;
  std::vector<Variable*> own_saved_variables() override;
  void append_trainable_variables(std::vector<Variable*>& out) override;
  int64_t count_params() const override;
  std::vector<Tensor> regularization_losses() override { return layer_->regularization_losses(); }
  bool has_regularization() const override { return layer_->has_regularization(); }
  void apply_constraints() override { layer_->apply_constraints(); }
  Layer& layer() { return *layer_; }
  int64_t power_iterations() const { return power_iterations_; }

 protected:
  bool passes_dtype_policy_on() const override { return false; }

 private:
  std::shared_ptr<Layer> layer_;
  int64_t power_iterations_;
  Variable* kernel_ = nullptr;    // the wrapped layer's
  Variable* vector_u_ = nullptr;  // this layer's
  Shape input_shape_;
};

}  // namespace osprey::keras::layers
