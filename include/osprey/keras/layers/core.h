// Core layers: keras.layers.Input (InputLayer), Dense, EinsumDense, Identity, Lambda, Embedding, Masking.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// The model's input: its shape without the batch dimension (keras.Input / InputLayer).
class Input : public Layer {
 public:
  explicit Input(Shape shape, std::string name = "");
  OSPREY_KERAS_LAYER(Input)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "InputLayer"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool) override { return inputs; }
  const Shape& shape() const { return shape_; }
  /// An Input is built when made and computes nothing: its policy (a file's InputLayer dtype) can be set any time.
  using Layer::set_dtype_policy;
  void set_dtype_policy(const mixed_precision::DTypePolicy& policy) override { dtype_policy_ = policy; }

 private:
  Shape shape_;
};
using InputLayer = Input;

/// Options of Dense besides units and activation (Keras's keyword arguments).
struct DenseOptions {
  bool use_bias = true;
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  std::string name{};
  std::optional<Regularizer> kernel_regularizer{}, bias_regularizer{};
  std::optional<Constraint> kernel_constraint{}, bias_constraint{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// activation(inputs @ kernel + bias) as one fused op. Kernel (in, units) with glorot_uniform, bias zeros.
class Dense : public Layer {
 public:
  /// `units` must be > 0; `activation` is a Keras name ("relu", "sigmoid", "mish", ...; "" is linear).
  explicit Dense(int units, const std::string& activation = "", DenseOptions options = {});
  OSPREY_KERAS_LAYER(Dense)
  bool recordable() const override { return true; }
  /// In half precision unless its activation is made of ops (mish, ...), which run in float32.
  bool supports_half_compute() const override { return !composite_; }
  std::string class_name() const override { return "Dense"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  int units() const { return units_; }
  /// The fused (kernel) activation; linear when the activation is a composite one (see activation_name()).
  osprey::ops::Activation activation() const { return activation_; }
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
  osprey::ops::Activation activation_ = osprey::ops::Activation::linear;
  std::string activation_name_;
  bool composite_ = false;  ///< applied with ops after the fused linear product
  DenseOptions options_;
  Variable* kernel_ = nullptr;
  Variable* bias_ = nullptr;
};

/// Options of EinsumDense besides its equation and output shape (Keras's keyword arguments).
struct EinsumDenseOptions {
  std::string activation{};  ///< a Keras activation name ("" is linear)
  std::string bias_axes{};   ///< output letters the bias spans ("" for no bias)
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer bias_initializer = "zeros";
  std::optional<Regularizer> kernel_regularizer{}, bias_regularizer{};
  std::optional<Constraint> kernel_constraint{}, bias_constraint{};
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// keras.layers.EinsumDense: ops.einsum(equation, inputs, kernel) + bias, then the activation, for the equations
/// that are one matrix product: the input's letters are the ones it keeps (a prefix, the batch first) then the
/// ones it contracts, the kernel's are the contracted ones then new ones, the output's the kept ones then the new
/// ones -- "ab,bc->ac", "abc,cd->abd", "abc,cde->abde" (MultiHeadAttention's projections), "abcd,cde->abe". The
/// bias spans trailing output letters (`bias_axes`). `output_shape` lists the output's dimensions without the batch
/// (0 for Keras's None: the input's). Other equations (ellipses, letters shared by all three, transposes) are a
/// ValueError naming the equation. The kernel is initialised as a (contracted, new) matrix: the fans Keras 3 gives
/// EinsumDense's initializers.
class EinsumDense : public Layer {
 public:
  EinsumDense(std::string equation, std::vector<int64_t> output_shape, EinsumDenseOptions options = {});
  OSPREY_KERAS_LAYER(EinsumDense)
  bool recordable() const override { return true; }
  bool supports_half_compute() const override { return !composite_; }
  std::string class_name() const override { return "EinsumDense"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Variable* kernel() { return kernel_; }
  Variable* bias() { return bias_; }
  const std::string& equation() const { return equation_; }
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;

 private:
  std::string equation_;
  std::vector<int64_t> partial_output_shape_;
  EinsumDenseOptions options_;
  int kept_ = 0;                   ///< input letters kept, the batch's included
  int64_t contracted_ = 0, new_ = 0;  ///< the product's inner size and its new columns
  int64_t bias_size_ = 0;          ///< elements of the bias (a row over the output's last bias_size_ elements)
  osprey::ops::Activation activation_ = osprey::ops::Activation::linear;
  bool composite_ = false;
  std::string activation_name_;
  Variable* kernel_ = nullptr;
  Variable* bias_ = nullptr;
};

/// The input, unchanged (keras.layers.Identity).
class Identity : public Layer {
 public:
  explicit Identity(std::string name = "") : Layer(name, "identity") {}
  OSPREY_KERAS_LAYER(Identity)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Identity"; }
  bool supports_masking() const override { return true; }
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool) override { return inputs; }
};

/// A function of the input as a layer (keras.layers.Lambda): `layers::Lambda([](const Tensor& x) { return
/// osprey::ops::square(x); })`, written with ops so that it trains through the tape. Its output shape comes from one
/// sample of zeros through the function, unless given. Saving a model with a Lambda is a ValueError (its code
/// cannot be serialised, as in Keras with safe_mode).
class Lambda : public Layer {
 public:
  using Function = std::function<Tensor(const Tensor&)>;
  explicit Lambda(Function function, std::optional<Shape> output_shape = std::nullopt, std::string name = "");
  OSPREY_KERAS_LAYER(Lambda)
  std::string class_name() const override { return "Lambda"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  Function function_;
  std::optional<Shape> declared_shape_;
};

/// Options of Embedding besides its sizes (Keras's keyword arguments).
struct EmbeddingOptions {
  initializers::Initializer embeddings_initializer = "uniform";  ///< Keras's RandomUniform(-0.05, 0.05)
  std::optional<Regularizer> embeddings_regularizer{};
  std::optional<Constraint> embeddings_constraint{};
  /// Keras's mask_zero: id 0 is padding, masked for the layers after (GlobalAveragePooling1D leaves it out).
  bool mask_zero = false;
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// Row `id` of an (input_dim, output_dim) table for every id of the input (keras.layers.Embedding): inputs of
/// any shape (batch, ...) of integer token ids, given as int32, int64 or float32 (fit casts inputs to float32:
/// exact up to 2^24), become (batch, ..., output_dim). An id outside [0, input_dim) is an InvalidArgumentError
/// naming the layer, the id and its position, on every device. The gradient adds up the rows of repeated ids.
class Embedding : public Layer {
 public:
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  OSPREY_KERAS_LAYER(Embedding)
  const EmbeddingOptions& embedding_options() const { return options_; }
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Embedding"; }
  bool supports_masking() const override { return true; }
  bool produces_mask() const override { return options_.mask_zero; }
  Tensor compute_mask(const Tensor& inputs, const Tensor& mask) override;
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Variable* embeddings() { return embeddings_; }
  int64_t input_dim() const { return input_dim_; }
  int64_t output_dim() const { return output_dim_; }
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;

 protected:
  /// A subclass's: auto-named from `default_prefix` ("reversible_embedding").
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options, const std::string& default_prefix);

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
  Variable* embeddings_ = nullptr;
};

/// keras.layers.ReversibleEmbedding's own arguments.
struct ReversibleEmbeddingOptions {
  /// The reverse projection by the embeddings' transpose (true), or by a trainable (output_dim, input_dim)
  /// `reverse_embeddings` of its own, made with the embeddings' initializer (false).
  bool tie_weights = true;
  /// The dtype the reverse projection computes in ("float32" under a mixed policy, ...); empty: the compute dtype.
  std::string reverse_dtype{};
  /// tanh(logits / cap) * cap on the reverse call's logits.
  std::optional<double> logit_soft_cap{};
};

/// An Embedding that also projects back to the vocabulary (keras.layers.ReversibleEmbedding), for language models
/// whose output layer shares the input embeddings: called plainly it is an Embedding; called with reverse=true
/// (`emb.reverse(h)`, or `call_with(h, {{"reverse", true}})`) it maps (batch, ..., output_dim) to logits
/// (batch, ..., input_dim). One layer is called both ways in one model, as in Keras; the model's config keeps
/// reverse=True on the second call.
class ReversibleEmbedding : public Embedding {
 public:
  ReversibleEmbedding(int64_t input_dim, int64_t output_dim, ReversibleEmbeddingOptions reverse = {},
                      EmbeddingOptions options = {});
  OSPREY_KERAS_LAYER(ReversibleEmbedding)
  std::string class_name() const override { return "ReversibleEmbedding"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  bool takes_call_argument(const std::string& name) const override { return name == "reverse"; }
  Shape build_with(const std::vector<Shape>& input_shapes, const CallArguments& arguments) override;
  Tensor call_with(const std::vector<Tensor>& inputs, bool training, const CallArguments& arguments) override;
  using Layer::call_with;  // the symbolic calls
  /// The reverse call: eager on a batch, or symbolic in a functional model.
  Tensor reverse(const Tensor& hidden);
  KerasTensor reverse(const KerasTensor& hidden) &;
  /// The separate reverse projection (tie_weights false; nullptr otherwise, or before build).
  Variable* reverse_embeddings() { return reverse_embeddings_; }
  const ReversibleEmbeddingOptions& reverse_options() const { return reverse_; }

 private:
  ReversibleEmbeddingOptions reverse_;
  Variable* reverse_embeddings_ = nullptr;
};

/// Masks every time step whose features all equal mask_value (keras.layers.Masking): those steps become zeros,
/// and the layers after see the mask (the last axis is the features; the mask has the other axes).
class Masking : public Layer {
 public:
  explicit Masking(double mask_value = 0.0, std::string name = "");
  OSPREY_KERAS_LAYER(Masking)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Masking"; }
  bool supports_masking() const override { return true; }
  bool produces_mask() const override { return true; }
  Tensor compute_mask(const Tensor& inputs, const Tensor& mask) override;
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  double mask_value_;
};

}  // namespace osprey::keras::layers
