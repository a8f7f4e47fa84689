// Recurrent layers (keras.layers.SimpleRNN, LSTM, GRU and their cells), as Keras 3 builds them: a cell holds the
// weights and computes one time step; RNN runs a cell over a sequence (masks, go_backwards, return_sequences).
// The steps are ops (the inputs' projection for every step in one product, then one small product and the gates
// per step, an LSTM's gates one fused op), so they run on every device and train through the tape; oneDNN's and
// cuDNN's RNN primitives are not used yet. StackedRNNCells stacks cells; layers with states give several outputs
// (Layer::call_all).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// What the recurrent cells take besides their units (Keras's keyword arguments).
struct RecurrentOptions {
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";  ///< LSTM's and GRU's gates
  bool use_bias = true;
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer recurrent_initializer = "orthogonal";
  initializers::Initializer bias_initializer = "zeros";
  bool unit_forget_bias = true;  ///< LSTM: the forget gate's bias starts at 1
  bool reset_after = true;       ///< GRU: the reset gate after the recurrent product (Keras's and cuDNN's default)
  std::optional<Regularizer> kernel_regularizer{}, recurrent_regularizer{}, bias_regularizer{};
  std::optional<Constraint> kernel_constraint{}, recurrent_constraint{}, bias_constraint{};
  /// Keras's dropout (of the inputs) and recurrent_dropout (of the previous output), in training: one mask per
  /// sequence, the same at every step, as Keras draws them. With recurrent_dropout, LSTM and GRU draw one mask per
  /// gate (Keras's implementation 1); with dropout alone, one input mask. Rates of 0 or 1 drop nothing, as Keras.
  double dropout = 0.0, recurrent_dropout = 0.0;
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// A recurrent cell (Keras's SimpleRNNCell, LSTMCell, GRUCell): its weights and one time step.
class RNNCell : public Layer {
 public:
  enum class Kind { simple, lstm, gru };
  RNNCell(Kind kind, int64_t units, RecurrentOptions options);
  std::string class_name() const override;
  std::string get_config() const override;
  /// Builds the weights for `input_shape` (features,); returns (units,).
  Shape build(const Shape& input_shape) override;
  /// One step on a batch (batch, features) from zero states; the layers call the step functions below.
  Tensor call(const Tensor& inputs, bool training) override;

  /// The output's size (a stack's: its last cell's).
  int64_t units() const { return units_; }
  Kind kind() const { return kind_; }
  const RecurrentOptions& options() const { return o_; }
  /// How many state tensors the cell carries (h; LSTM: h and c; a stack: its cells' in order).
  virtual int num_states() const { return kind_ == Kind::lstm ? 2 : 1; }
  /// Each state's size: (batch, size) tensors (a single cell's are all `units`).
  virtual std::vector<int64_t> state_sizes() const;
  /// Which of step()'s new states is the step's output (0; a stack's: its last cell's h).
  virtual int output_index() const { return 0; }
  /// The inputs' part of every step at once: (rows, features) -> (rows, gates · units), input bias included.
  virtual Tensor project(const Tensor& inputs) const;
  /// The same from one input per gate (the inputs under each gate's dropout mask).
  virtual Tensor project(const std::vector<Tensor>& per_gate) const;
  /// One step from a row block of project()'s result and the states: the new states (the output among them at
  /// output_index()). `recurrent_masks`: none, or recurrent dropout's (one per gate; SimpleRNN: one), each
  /// (batch, units).
  virtual std::vector<Tensor> step(const Tensor& projected, const std::vector<Tensor>& states,
                                   const std::vector<Tensor>& recurrent_masks = {}) const;
  /// Whether run_sequence computes what step() over the steps would in this call: a cell of Keras's (SimpleRNN
  /// with tanh, relu or sigmoid; LSTM and GRU (reset_after either way) with their default activations), no recurrent
  /// dropout in training, on a device with the sequence kernels (oneDNN's RNN primitives on the CPU). Input
  /// dropout is the layer's to apply to the sequence first.
  virtual bool runs_as_sequence(const Tensor& x, const std::vector<Tensor>& states, bool training) const;
  /// The whole sequence (batch, steps, features) from `states` as one op (where runs_as_sequence): {every step's
  /// output (batch, steps, units), the last states}. `padded` (an LSTM's, optional): (batch, steps, 1), 1 at the
  /// steps after each row's end, where the carry must stay what it was (its forget gate held at 1, its input gate
  /// at 0), so that the last carry is each row's own.
  virtual std::vector<Tensor> run_sequence(const Tensor& x, const std::vector<Tensor>& states,
                                           const Tensor& padded = Tensor()) const;
  /// Training's dropout masks for a sequence of `batch` rows, on the current device: the inputs' (none, one, or
  /// one per gate; each (batch, features), kept values 1/(1 - rate)) and the previous output's (each (batch, units)).
  virtual std::vector<Tensor> input_dropout_masks(int64_t batch, int64_t features);
  virtual std::vector<Tensor> recurrent_dropout_masks(int64_t batch);
  /// How many masks input_dropout_masks (or recurrent_dropout_masks) gives in training: 0 without that dropout.
  int dropout_mask_count(bool recurrent) const;

  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;

 protected:
  /// A cell made of other cells (StackedRNNCells): no weights of its own.
  RNNCell(const std::string& name, const std::string& default_prefix, int64_t units);

 private:
  Kind kind_;
  int64_t units_;
  RecurrentOptions o_;
  Variable *kernel_ = nullptr, *recurrent_ = nullptr, *bias_ = nullptr;
  std::shared_ptr<Layer> input_dropout_, recurrent_dropout_;  // Dropout layers drawing the masks (or none)
  int mask_count() const;  // masks per draw: one per gate with recurrent dropout (LSTM, GRU), else one
};

/// Keras's SimpleRNNCell(units), LSTMCell(units), GRUCell(units).
class SimpleRNNCell : public RNNCell {
 public:
  explicit SimpleRNNCell(int64_t units, RecurrentOptions options = {}) : RNNCell(Kind::simple, units, std::move(options)) {}
  OSPREY_KERAS_LAYER(SimpleRNNCell)
};
class LSTMCell : public RNNCell {
 public:
  explicit LSTMCell(int64_t units, RecurrentOptions options = {}) : RNNCell(Kind::lstm, units, std::move(options)) {}
  OSPREY_KERAS_LAYER(LSTMCell)
};
class GRUCell : public RNNCell {
 public:
  explicit GRUCell(int64_t units, RecurrentOptions options = {}) : RNNCell(Kind::gru, units, std::move(options)) {}
  OSPREY_KERAS_LAYER(GRUCell)
};

/// keras.layers.StackedRNNCells(cells) (what keras.layers.RNN([cell, cell, ...]) makes): the cells one on top of
/// the other at every step, each one's output the next one's input; the states are every cell's in order, the
/// output the last cell's. Each cell's dropout and recurrent_dropout apply in training as in its own layer: one set
/// of masks per sequence, the cells above the first masking the output of the cell below them.
class StackedRNNCells : public RNNCell {
 public:
  explicit StackedRNNCells(std::vector<std::shared_ptr<RNNCell>> cells, std::string name = "");
  OSPREY_KERAS_LAYER(StackedRNNCells)
  std::string class_name() const override { return "StackedRNNCells"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  int num_states() const override;
  std::vector<int64_t> state_sizes() const override;
  int output_index() const override;
  Tensor project(const Tensor& inputs) const override;
  Tensor project(const std::vector<Tensor>& per_gate) const override;
  std::vector<Tensor> step(const Tensor& projected, const std::vector<Tensor>& states,
                           const std::vector<Tensor>& recurrent_masks = {}) const override;
  bool runs_as_sequence(const Tensor&, const std::vector<Tensor>&, bool) const override { return false; }
  /// The first cell's input masks.
  std::vector<Tensor> input_dropout_masks(int64_t batch, int64_t features) override;
  /// Every cell's recurrent masks and, above the first, its input masks, cell by cell (what step() takes).
  std::vector<Tensor> recurrent_dropout_masks(int64_t batch) override;
  /// Keras's weights files key the cells as a list: "cells/lstm_cell", "cells/gru_cell", "cells/lstm_cell_1".
  std::vector<std::pair<std::string, Layer*>> sublayers() override;
  std::vector<Variable*> variables() override;
  void append_trainable_variables(std::vector<Variable*>& out) override;
  int64_t count_params() const override;
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;
  const std::vector<std::shared_ptr<RNNCell>>& cells() const { return cells_; }

 private:
  std::vector<std::shared_ptr<RNNCell>> cells_;

 protected:
  /// The wrapped layers keep their own dtype policies (Keras).
  bool passes_dtype_policy_on() const override { return false; }
};

/// How an RNN runs its cell over a sequence.
struct RNNOptions {
  bool return_sequences = false;  ///< every step's output (batch, steps, units), else the last (batch, units)
  /// The last states too: call_all() gives {output, h} (LSTM: {output, h, c}), each state (batch, units).
  bool return_state = false;
  bool go_backwards = false;      ///< the steps last to first (the outputs stay in that order, as in Keras)
  /// Each batch starts from the states the previous batch ended with (sample i from sample i), as Keras's
  /// stateful RNNs: batches of one fixed size; reset_states() sets them back to zeros. The states are not
  /// weights (not saved), as in Keras.
  bool stateful = false;
  bool unroll = false;            ///< Keras's unroll: accepted; the steps are the same ops either way
  bool zero_output_for_mask = false;  ///< masked steps output zeros instead of the previous output
  /// Keras's use_cudnn: unset ("auto") runs the whole sequence as one op each way where that computes what the
  /// steps would (oneDNN's RNN primitives on the CPU: a lone cell of Keras's, LSTM and GRU with their default
  /// activations, SimpleRNN with tanh, relu or sigmoid; no recurrent dropout; masks with one run of unmasked steps
  /// per row: right- or left-padded),
  /// true requires that (a ValueError where it cannot), false runs the steps
  /// one by one. Not saved, as in Keras.
  std::optional<bool> use_cudnn{};
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// keras.layers.RNN(cell): the cell over the steps of (batch, steps, features) inputs. A masked step (Embedding
/// with mask_zero, Masking) keeps the states and repeats the previous output, as Keras's backend does; the mask
/// passes on with return_sequences. Initial states (Keras's `initial_state=[h, c]`) are the inputs after the
/// sequence: `decoder({x, h, c})`; with return_state, call_all() gives the output and the last states.
class RNN : public Layer {
 public:
  RNN(std::shared_ptr<RNNCell> cell, RNNOptions options = {});
  /// keras.layers.RNN([cell, cell, ...]): the cells stacked (StackedRNNCells).
  RNN(std::vector<std::shared_ptr<RNNCell>> cells, RNNOptions options = {});
  OSPREY_KERAS_LAYER(RNN)
  std::string class_name() const override { return "RNN"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  /// The sequence's shape and the initial states' ((units,) each, as many as the cell has states).
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override { return call_masked(inputs, training, Tensor()); }
  /// {sequence, initial states...}: the output.
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  bool supports_masking() const override { return true; }
  Tensor call_masked(const Tensor& inputs, bool training, const Tensor& mask) override;
  Tensor compute_mask(const Tensor& inputs, const Tensor& mask) override;
  Tensor call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks) override;
  Tensor compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks) override;
  int num_outputs() const override { return r_.return_state ? 1 + cell_->num_states() : 1; }
  /// A stateful RNN's rows carry over to the next batch's same rows: its batches are never split.
  bool mixes_samples() const override { return r_.stateful; }
  std::vector<Shape> output_shapes() const override;
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, bool training) override;
  std::vector<Tensor> call_outputs_masked(const std::vector<Tensor>& inputs, bool training,
                                          const std::vector<Tensor>& masks, std::vector<Tensor>& output_masks) override;
  /// The output and the last states for `inputs` from `initial_states` (zeros, or a stateful layer's states, when
  /// empty), with the steps' mask (undefined: none). `states_used` false: the caller takes the output only (an
  /// LSTM's last carry may then be left undefined).
  std::vector<Tensor> run(const Tensor& inputs, bool training, const Tensor& mask,
                          const std::vector<Tensor>& initial_states, bool states_used = true);
  /// A stateful RNN's states back to zeros (Keras's reset_states / reset_state); nothing for another.
  void reset_states();
  /// A stateful RNN's current states (empty before its first batch).
  const std::vector<Tensor>& states() const { return states_; }
  std::vector<std::pair<std::string, Layer*>> sublayers() override { return {{"cell", cell_.get()}}; }

  std::vector<Variable*> variables() override { return cell_->variables(); }
  void append_trainable_variables(std::vector<Variable*>& out) override;
  int64_t count_params() const override { return cell_->count_params(); }
  std::vector<Tensor> regularization_losses() override { return cell_->regularization_losses(); }
  bool has_regularization() const override { return cell_->has_regularization(); }
  void apply_constraints() override { cell_->apply_constraints(); }

  RNNCell& cell() { return *cell_; }
  const RNNOptions& rnn_options() const { return r_; }

 protected:
  RNN(std::shared_ptr<RNNCell> cell, RNNOptions options, const std::string& default_prefix);
  /// The config entries of the RNN (return_sequences, ...) merged with the cell's (the LSTM/GRU/SimpleRNN form).
  std::string flat_config() const;
  /// LSTM, GRU and SimpleRNN make their cell and pass their dtype policy on to it; RNN(cell) keeps the cell's.
  bool passes_dtype_policy_on() const override { return owns_cell_; }
  bool owns_cell_ = false;

 private:
  std::shared_ptr<RNNCell> cell_;
  RNNOptions r_;
  std::vector<Tensor> states_;  ///< a stateful RNN's states between batches
  /// run() with the cell's sequence op (rnn_sequence.cpp): {output, last states}, or empty where the steps must
  /// run one by one.
  std::vector<Tensor> run_as_sequence(const Tensor& x, bool training, const Tensor& mask,
                                      const std::vector<Tensor>& states, bool states_used);
};

/// keras.layers.SimpleRNN(units), LSTM(units), GRU(units): RNN over their cell, with the cell's arguments and the
/// RNN's in one list, as Keras's configs write them: `layers::LSTM(64, {}, {.return_sequences = true})`.
class SimpleRNN : public RNN {
 public:
  explicit SimpleRNN(int64_t units, RecurrentOptions options = {}, RNNOptions rnn = {});
  OSPREY_KERAS_LAYER(SimpleRNN)
  std::string class_name() const override { return "SimpleRNN"; }
  std::string get_config() const override { return flat_config(); }
};
class LSTM : public RNN {
 public:
  explicit LSTM(int64_t units, RecurrentOptions options = {}, RNNOptions rnn = {});
  OSPREY_KERAS_LAYER(LSTM)
  std::string class_name() const override { return "LSTM"; }
  std::string get_config() const override { return flat_config(); }
};
class GRU : public RNN {
 public:
  explicit GRU(int64_t units, RecurrentOptions options = {}, RNNOptions rnn = {});
  OSPREY_KERAS_LAYER(GRU)
  std::string class_name() const override { return "GRU"; }
  std::string get_config() const override { return flat_config(); }
};

}  // namespace osprey::keras::layers

namespace osprey::keras::layers {

/// keras.layers.Bidirectional(layer, merge_mode): a copy of the RNN named "forward_<name>" and one over the
/// steps backwards named "backward_<name>" (or `backward_layer`), their outputs merged by "concat" (the default),
/// "sum", "mul" or "ave", or both given apart ("" for Keras's None: two outputs); with return_sequences the
/// backward outputs are turned back into time order and masked steps output zeros, as Keras forces. Both see the
/// mask. With the layer's return_state, call_all() gives the output(s), then the forward and the backward
/// states; initial states (inputs after the sequence) are the forward layer's first half, the backward's second.
class Bidirectional : public Layer {
 public:
  explicit Bidirectional(const std::shared_ptr<RNN>& layer, std::string merge_mode = "concat",
                         std::shared_ptr<RNN> backward_layer = nullptr, std::string name = "");
  OSPREY_KERAS_LAYER(Bidirectional)
  std::string class_name() const override { return "Bidirectional"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override { return call_masked(inputs, training, Tensor()); }
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  bool supports_masking() const override { return true; }
  Tensor call_masked(const Tensor& inputs, bool training, const Tensor& mask) override;
  Tensor compute_mask(const Tensor& inputs, const Tensor& mask) override;
  Tensor call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks) override;
  Tensor compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks) override;
  int num_outputs() const override;
  std::vector<Shape> output_shapes() const override;
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, bool training) override;
  std::vector<Tensor> call_outputs_masked(const std::vector<Tensor>& inputs, bool training,
                                          const std::vector<Tensor>& masks, std::vector<Tensor>& output_masks) override;
  std::vector<std::pair<std::string, Layer*>> sublayers() override {
    return {{"backward_layer", backward_.get()}, {"forward_layer", forward_.get()}};
  }
  std::vector<Variable*> variables() override;
  void append_trainable_variables(std::vector<Variable*>& out) override;
  int64_t count_params() const override { return forward_->count_params() + backward_->count_params(); }
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override { return forward_->has_regularization() || backward_->has_regularization(); }
  void apply_constraints() override;
  RNN& forward_layer() { return *forward_; }
  RNN& backward_layer() { return *backward_; }

 private:
  std::shared_ptr<RNN> forward_, backward_;
  std::string merge_mode_;
  std::vector<Shape> output_shapes_;
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, bool training, const Tensor& mask);

 protected:
  /// The wrapped layers keep their own dtype policies (Keras).
  bool passes_dtype_policy_on() const override { return false; }
};

}  // namespace osprey::keras::layers

namespace osprey::keras::layers {

/// keras.layers.TimeDistributed(layer): the layer applied to every time step of (batch, steps, ...) inputs, with one
/// set of weights (Keras's "layer" in the files). Steps run as one batch of batch · steps samples, except for a
/// layer whose training output mixes samples (BatchNormalization), which sees each step's batch apart as in Keras.
/// The mask passes on.
class TimeDistributed : public Layer {
 public:
  explicit TimeDistributed(std::shared_ptr<Layer> layer, std::string name = "");
  OSPREY_KERAS_LAYER(TimeDistributed)
  std::string class_name() const override { return "TimeDistributed"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  bool supports_masking() const override { return true; }
  bool mixes_samples() const override { return layer_->mixes_samples(); }
  std::vector<std::pair<std::string, Layer*>> sublayers() override { return {{"layer", layer_.get()}}; }
  std::vector<Variable*> variables() override { return layer_->variables(); }
  void append_trainable_variables(std::vector<Variable*>& out) override;
  int64_t count_params() const override { return layer_->count_params(); }
  std::vector<Tensor> regularization_losses() override { return layer_->regularization_losses(); }
  bool has_regularization() const override { return layer_->has_regularization(); }
  void apply_constraints() override { layer_->apply_constraints(); }
  Layer& layer() { return *layer_; }

 private:
  std::shared_ptr<Layer> layer_;
  Shape step_shape_;  ///< the inner layer's input shape (a step's, without the batch)

 protected:
  /// The wrapped layers keep their own dtype policies (Keras).
  bool passes_dtype_policy_on() const override { return false; }
};

}  // namespace osprey::keras::layers
