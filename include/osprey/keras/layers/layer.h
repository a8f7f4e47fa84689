// The Layer base class (keras.layers.Layer), LayerRef, and what layers are configured with: regularizers,
// constraints, initializers.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "osprey/keras/mixed_precision.h"
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
  /// `name`, or when empty the next auto-name for `default_prefix` (none when that is empty too). `dtype`: the
  /// layer's dtype policy by name (Keras's `dtype` argument); empty: the global policy.
  explicit Layer(const std::string& name, const std::string& default_prefix, const std::string& dtype = "");
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
  /// Whether a sample's output in training depends on the other samples of the batch (BatchNormalization's batch
  /// statistics): such a model's batches are never split in halves.
  virtual bool mixes_samples() const { return false; }
  bool built() const { return built_; }

  // ---- Masks (Keras's supports_masking, compute_mask and call(..., mask=...)) ----
  // A mask marks the time steps of a sequence to skip: a float32 tensor of 1 (kept) and 0 (masked) of shape
  // (batch, steps), made by Embedding(mask_zero=true) or Masking, that travels with the outputs through a model.
  // A layer that supports masking gets its input's mask in call_masked() and passes compute_mask()'s result on;
  // one that does not drops the mask, with Keras's warning.
  /// Whether the layer takes masks (Keras's supports_masking); false by default, as in Keras.
  virtual bool supports_masking() const { return false; }
  /// Whether the layer makes a mask of its own from its inputs (Embedding with mask_zero, Masking).
  virtual bool produces_mask() const { return false; }
  /// call() with the input's mask (undefined when it has none); the default ignores the mask.
  virtual Tensor call_masked(const Tensor& inputs, bool training, const Tensor& mask) { (void)mask; return call(inputs, training); }
  /// The output's mask: by default the input's, unchanged.
  virtual Tensor compute_mask(const Tensor& inputs, const Tensor& mask) { (void)inputs; return mask; }
  /// The same for a layer of several inputs (merges, MultiHeadAttention): one mask per input, undefined where an
  /// input has none. The defaults of a layer that supports masking but does not override them are a ValueError.
  virtual Tensor call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks);
  virtual Tensor compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks);

  /// Output shape without the batch dimension (after build).
  const Shape& output_shape() const { return output_shape_; }

  // ---- Several outputs (an RNN with return_state: its output and states; MultiHeadAttention with
  // return_attention_scores; a nested model of several outputs) ----
  /// How many outputs the layer gives: 1 by default.
  virtual int num_outputs() const { return 1; }
  /// Each output's shape without the batch dimension, after build (the first is output_shape()).
  virtual std::vector<Shape> output_shapes() const { return {output_shape_}; }
  /// Every output for a batch; the default is {call(inputs)}.
  virtual std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, bool training);
  /// The same with the inputs' masks (undefined where an input has none); `output_masks` gets one mask per output
  /// (undefined where an output has none). The default is a ValueError for a layer that does not override it.
  virtual std::vector<Tensor> call_outputs_masked(const std::vector<Tensor>& inputs, bool training,
                                                  const std::vector<Tensor>& masks, std::vector<Tensor>& output_masks);
  /// Eager call giving every output (builds the layer on first use): `auto [y, h, c] = ...` as a vector.
  std::vector<Tensor> call_all(const std::vector<Tensor>& inputs, bool training = false);
  /// Symbolic call giving every output: `auto enc = layers::LSTM(64, {}, {.return_state = true}).call_all(x);`
  /// then enc[0] (the output), enc[1] and enc[2] (the states h and c). A layer of several outputs called with
  /// operator() is a ValueError that points here, since Keras would return the list.
  std::vector<KerasTensor> call_all(const KerasTensor& input) &;
  std::vector<KerasTensor> call_all(const std::vector<KerasTensor>& inputs) &;
  std::vector<KerasTensor> call_all(const KerasTensor& input) &&;
  std::vector<KerasTensor> call_all(const std::vector<KerasTensor>& inputs) &&;

  // ---- Call arguments: Keras's keyword arguments that change what one call of a layer computes
  // (ReversibleEmbedding's reverse=True). A functional model keeps them on the call's node, so one layer can be
  // called both ways, and saves them in the node's "kwargs". ----
  /// One call's boolean keyword arguments by name, each false by default (a false one is the plain call); empty
  /// for the plain call.
  using CallArguments = std::map<std::string, bool>;
  /// Whether the layer takes keyword argument `name` in call_with() (none by default).
  virtual bool takes_call_argument(const std::string& name) const {
    (void)name;
    return false;
  }
  /// The output shape of a call with `arguments` (building the layer on first use); build() without any.
  virtual Shape build_with(const std::vector<Shape>& input_shapes, const CallArguments& arguments);
  /// A call with `arguments` on a batch (building the layer on first use): call() without any; a layer that takes
  /// call arguments overrides it.
  virtual Tensor call_with(const std::vector<Tensor>& inputs, bool training, const CallArguments& arguments);
  /// Symbolic call with keyword arguments: `emb.call_with(h, {{"reverse", true}})`; ValueError for an argument
  /// the layer does not take.
  KerasTensor call_with(const KerasTensor& input, const CallArguments& arguments) &;
  KerasTensor call_with(const std::vector<KerasTensor>& inputs, const CallArguments& arguments) &;

  /// Eager call on a batch (builds the layer on first use).
  Tensor operator()(const Tensor& inputs, bool training = false);
  Tensor operator()(const std::vector<Tensor>& inputs, bool training = false);
  /// Symbolic call: records this layer in the graph and returns its output (ValueError for incompatible shapes,
  /// naming the layer and the shapes).
  KerasTensor operator()(const KerasTensor& input) &;
  KerasTensor operator()(const std::vector<KerasTensor>& inputs) &;
  KerasTensor operator()(const KerasTensor& input) &&;
  KerasTensor operator()(const std::vector<KerasTensor>& inputs) &&;

  // ---- Mixed precision (keras.mixed_precision) ----
  /// The layer's dtype policy: the global policy when the layer was made, or the one given by Keras's `dtype`
  /// argument (`DenseOptions{.dtype = "float32"}`, `layers::Activation("softmax").with_dtype("float32")`), set
  /// here, or read from a file's layer config.
  const mixed_precision::DTypePolicy& dtype_policy() const { return dtype_policy_; }
  /// Sets the policy before the layer is built (ValueError after, naming the layer and both policies; ValueError
  /// for an unknown name). A layer passes it on to the sublayers it makes itself (an LSTM's cell, ...), as Keras
  /// does; wrappers (Bidirectional, TimeDistributed, RNN over a given cell) leave the wrapped layers' own.
  virtual void set_dtype_policy(const mixed_precision::DTypePolicy& policy);
  void set_dtype_policy(const std::string& name) { set_dtype_policy(mixed_precision::DTypePolicy(name)); }
  /// The dtype the layer computes in: its policy's compute dtype where the layer supports half precision, else
  /// float32 (such a layer under a mixed policy takes float32 inputs and gives float32 outputs).
  DType compute_dtype() const;
  DType variable_dtype() const { return dtype_policy_.variable_dtype(); }
  /// Whether the layer computes in float16/bfloat16 when its policy says so (Dense, activations, Dropout, shape
  /// layers); false by default.
  virtual bool supports_half_compute() const { return false; }
  /// A floating input in the layer's compute dtype (Keras's autocasting of a layer's inputs), where a mixed
  /// policy or a half input makes them differ; others as they are.
  Tensor autocast_input(const Tensor& x) const;
  /// A variable's value in the compute dtype (Keras's AutocastScope for variables read in call()).
  Tensor autocast_variable(const Variable& v) const;

  /// Keras's layer.trainable: false freezes the layer's weights (they leave trainable_variables(); summary() counts
  /// them as non-trainable) and makes BatchNormalization run in inference mode, as in Keras.
  bool trainable = true;

  virtual std::vector<Variable*> variables();
  /// Layers this one is made of, by the attribute name Keras's files key them by (an RNN's "cell"); a layer with
  /// sublayers keeps its variables in them (variables() returns theirs).
  virtual std::vector<std::pair<std::string, Layer*>> sublayers() { return {}; }
  /// Keras's own "vars" of a layer with sublayers, saved beside theirs in weights files (SpectralNormalization's
  /// kernel and vector_u); none by default.
  virtual std::vector<Variable*> own_saved_variables() { return {}; }
  /// Variables Keras saves under keys of their own in weights files (save_own_variables' store["idf_weights"]),
  /// kept out of variables() as Keras keeps them out of layer.weights: IntegerLookup's idf weights; none by
  /// default.
  virtual std::vector<std::pair<std::string, Variable*>> named_saved_variables() { return {}; }
  /// Keras's save_assets/load_assets: files a .keras archive keeps under assets/<the layer's path>/ (a lookup
  /// layer's vocabulary.txt), as (file name, contents). load_assets runs for every layer after the weights are
  /// loaded, with the files found there (none: an empty list). None and nothing by default.
  virtual std::vector<std::pair<std::string, std::string>> save_assets() const { return {}; }
  virtual void load_assets(const std::vector<std::pair<std::string, std::string>>& files) { (void)files; }
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

  /// Keras's layer.get_config() as JSON text: the base entries (name, trainable, dtype); a layer of your own adds
  /// its constructor's arguments, e.g. `return config_with(Layer::get_config(), {{"units", int64_t{8}}});`.
  /// (Keras's built-in layers give their full config in a model's get_config()/to_json().)
  virtual std::string get_config() const;

  /// The layer moved into a new shared_ptr of its own class (a temporary called on symbolic tensors). Layers
  /// declare it with OSPREY_KERAS_LAYER(Class); nullptr where a layer cannot be moved.
  virtual std::shared_ptr<Layer> move_to_shared() { return nullptr; }

 protected:
  /// Whether set_dtype_policy passes the policy on to sublayers(): true for layers that make their sublayers
  /// themselves, false for wrappers of layers given to them.
  virtual bool passes_dtype_policy_on() const { return true; }
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
  mixed_precision::DTypePolicy dtype_policy_ = mixed_precision::global_policy();
  bool built_ = false;
  Shape output_shape_;
  std::deque<Variable> weights_;  // deque: pointers stay valid as weights are added

 private:
  std::vector<KerasTensor> call_symbolic(std::shared_ptr<Layer> self, const std::vector<KerasTensor>& inputs,
                                         const CallArguments& arguments = {});
  KerasTensor call_symbolic_one(std::shared_ptr<Layer> self, const std::vector<KerasTensor>& inputs);
  std::shared_ptr<Layer> owner(bool temporary);
};

/// In a layer class: lets a temporary of it be called on symbolic tensors (`layers::Dense(8)(x)`), and gives it
/// `with_dtype(policy)`, Keras's `dtype` argument for any layer: `layers::Activation("softmax").with_dtype("float32")(x)`
/// (the layer itself, with set_dtype_policy(policy) applied).
#define OSPREY_KERAS_LAYER(Class)                                                                                 \
  std::shared_ptr<::osprey::keras::Layer> move_to_shared() override { return std::make_shared<Class>(std::move(*this)); } \
  Class&& with_dtype(const std::string& policy) && {                                                             \
    set_dtype_policy(policy);                                                                                     \
    return std::move(*this);                                                                                      \
  }                                                                                                               \
  Class& with_dtype(const std::string& policy) & {                                                               \
    set_dtype_policy(policy);                                                                                     \
    return *this;                                                                                                 \
  }

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

/// A value in a layer's config.
using ConfigValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
using ConfigEntry = std::pair<std::string, ConfigValue>;
/// `base_config` (JSON text of an object) with `entries` added or replaced, as JSON text.
std::string config_with(const std::string& base_config, std::initializer_list<ConfigEntry> entries);

namespace detail {
/// A number that changes with each top-level forward pass on this thread (the trainer starts them): layers that
/// collect values per pass (ActivityRegularization's penalties) start afresh when it changed.
uint64_t forward_pass();
void begin_forward_pass();
}  // namespace detail

/// Resets the auto-naming counters (keras.backend.clear_session()).
void clear_session();

namespace layers {

/// A weight penalty: l1·Σ|w| + l2·Σw² (keras.regularizers.L1, L2, L1L2).
struct Regularizer {
  double l1 = 0.0, l2 = 0.0;
  /// keras.regularizers.OrthogonalRegularizer: factor · mean |cosine| between distinct rows (or columns) of a 2-D
  /// weight.
  enum class Kind { l1l2, orthogonal } kind = Kind::l1l2;
  double factor = 0.01;
  bool rows = true;  ///< OrthogonalRegularizer's mode: "rows" (true) or "columns"
  Tensor operator()(const Tensor& w) const;
};
/// keras.regularizers.L1(0.01), L2(0.01), L1L2(l1, l2), OrthogonalRegularizer(factor, mode).
inline Regularizer L1(double l1 = 0.01) { return {l1, 0.0}; }
inline Regularizer L2(double l2 = 0.01) { return {0.0, l2}; }
inline Regularizer L1L2(double l1 = 0.0, double l2 = 0.0) { return {l1, l2}; }
Regularizer OrthogonalRegularizer(double factor = 0.01, const std::string& mode = "rows");

/// A projection applied to a weight after every update (keras.constraints), over axis 0 (a Dense kernel's
/// columns) as Keras's default.
struct Constraint {
  enum class Kind { max_norm, non_neg, unit_norm, min_max_norm } kind = Kind::non_neg;
  double max_value = 2.0;  ///< MaxNorm, MinMaxNorm: the largest L2 norm of a column
  double min_value = 0.0;  ///< MinMaxNorm: the smallest
  double rate = 1.0;       ///< MinMaxNorm: how far to move towards [min, max] per update
  Tensor operator()(const Tensor& w) const;
};
inline Constraint MaxNorm(double max_value = 2.0) { return {Constraint::Kind::max_norm, max_value}; }
inline Constraint NonNeg() { return {Constraint::Kind::non_neg, 0.0}; }
inline Constraint UnitNorm() { return {Constraint::Kind::unit_norm, 1.0}; }
inline Constraint MinMaxNorm(double min_value = 0.0, double max_value = 1.0, double rate = 1.0) {
  return {Constraint::Kind::min_max_norm, max_value, min_value, rate};
}

}  // namespace layers

namespace initializers {

/// A Keras initializer with its options (keras.initializers): by name (`"glorot_uniform"`, `"he_normal"`, a class
/// name such as `"Orthogonal"`) or made by the functions below (`initializers::RandomNormal(0.0, 15.0)`). Its
/// Keras config is kept as given, so a model saved again writes it back unchanged (seed included; Osprey draws
/// from its own generator, so the seed does not give Keras's numbers).
struct Initializer {
  Initializer(const char* name);
  Initializer(const std::string& name);
  /// An initializer from Keras's class name and config (JSON text); ValueError for a class Keras does not have or
  /// options out of range.
  static Initializer from_config(const std::string& class_name, const std::string& config_json);
  /// Initial values of `shape` (on the current device).
  Tensor operator()(const Shape& shape) const;
  std::string class_name;  ///< Keras's class: "GlorotUniform", "RandomNormal", "VarianceScaling", ...
  std::string config;      ///< its Keras config as JSON text ("{}" for Zeros)

 private:
  Initializer() = default;
  Tensor sample(const Shape& shape) const;
};

/// keras.initializers.RandomNormal(mean, stddev), RandomUniform(minval, maxval), TruncatedNormal(mean, stddev),
/// Constant(value), VarianceScaling(scale, mode "fan_in"|"fan_out"|"fan_avg", distribution "truncated_normal"|
/// "untruncated_normal"|"uniform"), Orthogonal(gain), Identity(gain) (2-D weights).
Initializer RandomNormal(double mean = 0.0, double stddev = 0.05);
Initializer RandomUniform(double minval = -0.05, double maxval = 0.05);
Initializer TruncatedNormal(double mean = 0.0, double stddev = 0.05);
Initializer Constant(double value = 0.0);
Initializer VarianceScaling(double scale = 1.0, const std::string& mode = "fan_in",
                            const std::string& distribution = "truncated_normal");
Initializer Orthogonal(double gain = 1.0);
Initializer Identity(double gain = 1.0);
/// Initial values by Keras initializer name (keras.initializers.get(name)(shape)).
inline Tensor get(const std::string& initializer, const Shape& shape) { return Initializer(initializer)(shape); }

}  // namespace initializers

/// Initial values by Keras initializer name: glorot_uniform, glorot_normal, he_uniform, he_normal,
/// lecun_uniform, lecun_normal, zeros, ones, random_normal, random_uniform, truncated_normal, orthogonal, identity,
/// or a class name.
Tensor initialize(const initializers::Initializer& initializer, const Shape& shape);

/// keras.regularizers, keras.constraints and keras.initializers under Keras's module names (the layers:: spellings
/// stay).
namespace regularizers {
using layers::L1;
using layers::L1L2;
using layers::L2;
using layers::OrthogonalRegularizer;
using layers::Regularizer;
}  // namespace regularizers
namespace constraints {
using layers::Constraint;
using layers::MaxNorm;
using layers::MinMaxNorm;
using layers::NonNeg;
using layers::UnitNorm;
}  // namespace constraints

}  // namespace osprey::keras
