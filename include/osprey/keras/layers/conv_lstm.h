// Convolutional LSTMs: keras.layers.ConvLSTM1D/2D/3D (an LSTM whose input and recurrent transformations are
// convolutions), over sequences of 1-, 2- or 3-D images.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// Keras's ConvLSTM arguments (the cell's and the RNN's).
struct ConvLSTMOptions {
  Ints strides = 1;               ///< of the input convolution (the recurrent one has strides 1)
  std::string padding = "valid";  ///< of the input convolution, "valid" or "same" (the recurrent one is "same")
  std::string data_format = "channels_last";  ///< inputs (batch, time, spatial..., channels), or channels_first
  Ints dilation_rate = 1;
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";
  bool use_bias = true;
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer recurrent_initializer = "orthogonal";
  initializers::Initializer bias_initializer = "zeros";
  bool unit_forget_bias = true;  ///< the forget gate's bias starts at 1
  std::optional<Regularizer> kernel_regularizer{}, recurrent_regularizer{}, bias_regularizer{};
  std::optional<Constraint> kernel_constraint{}, recurrent_constraint{}, bias_constraint{};
  /// In training, one mask per gate over the inputs (dropout) and over the previous h (recurrent_dropout), the same
  /// at every step (Osprey's draws, not Keras's).
  double dropout = 0.0, recurrent_dropout = 0.0;
  bool return_sequences = false;  ///< every step's h (batch, time, out spatial..., filters), else the last
  bool return_state = false;      ///< call_all() gives {output, h, c}
  bool go_backwards = false;
  /// Each batch starts from the states the previous batch ended with (reset_states() zeros them).
  bool stateful = false;
  std::string name{};
  std::string dtype{};
};

/// The ConvLSTM's weights (Keras's ConvLSTMCell, named "conv_lstm_cell"): kernel (window..., channels, 4·filters),
/// recurrent_kernel (window..., filters, 4·filters), bias (4·filters), gates in Keras's order i, f, c, o.
class ConvLSTMCell : public Layer {
 public:
  ConvLSTMCell(int rank, int64_t filters, std::vector<int64_t> kernel_size, const ConvLSTMOptions& options);
  std::string class_name() const override { return "ConvLSTMCell"; }
  /// Builds the weights for `channels` input channels.
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override;
  void apply_constraints() override;
  Variable* kernel() const { return kernel_; }
  Variable* recurrent_kernel() const { return recurrent_; }
  Variable* bias() const { return bias_; }

 private:
  int rank_;
  int64_t filters_;
  std::vector<int64_t> kernel_size_;
  ConvLSTMOptions o_;
  Variable *kernel_ = nullptr, *recurrent_ = nullptr, *bias_ = nullptr;
};

/// keras.layers.ConvLSTM1D/2D/3D(filters, kernel_size, ...): at each step i, f, c̃, o from conv(x_t, kernel) +
/// bias + conv(h, recurrent_kernel, "same"); c = f·c + i·act(c̃), h = o·act(c) (act: activation, the gates:
/// recurrent_activation). Initial states as more inputs: `layer.call_all({x, h0, c0})`. Masked inputs (which
/// Keras's RNN base takes) are a ValueError: not implemented yet.
class ConvLSTM : public Layer {
 public:
  ConvLSTM(int rank, int64_t filters, const Ints& kernel_size, ConvLSTMOptions options = {});
  std::string class_name() const override { return "ConvLSTM" + std::to_string(rank_) + "D"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  int num_outputs() const override { return o_.return_state ? 3 : 1; }
  std::vector<Shape> output_shapes() const override;
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, bool training) override;
  std::vector<std::pair<std::string, Layer*>> sublayers() override { return {{"cell", cell_.get()}}; }
  std::vector<Variable*> variables() override { return cell_->variables(); }
  void append_trainable_variables(std::vector<Variable*>& out) override;
  int64_t count_params() const override { return cell_->count_params(); }
  std::vector<Tensor> regularization_losses() override { return cell_->regularization_losses(); }
  bool has_regularization() const override { return cell_->has_regularization(); }
  void apply_constraints() override { cell_->apply_constraints(); }
  /// A stateful layer's states back to zeros.
  void reset_states();
  ConvLSTMCell& cell() { return *cell_; }
  const ConvLSTMOptions& options() const { return o_; }

 private:
  std::vector<Tensor> run(const Tensor& x, bool training, std::vector<Tensor> states);
  Shape state_shape() const;  ///< h's and c's shape without the batch

  int rank_;
  int64_t filters_;
  std::vector<int64_t> kernel_size_, strides_, dilation_;
  ConvLSTMOptions o_;
  std::shared_ptr<ConvLSTMCell> cell_;
  std::shared_ptr<Layer> input_dropout_, recurrent_dropout_;
  Shape step_shape_;            ///< one step's input (spatial..., channels) in the data format's order
  std::vector<Tensor> states_;  ///< a stateful layer's
};

/// keras.layers.ConvLSTM1D: inputs (batch, time, steps, channels).
class ConvLSTM1D : public ConvLSTM {
 public:
  ConvLSTM1D(int64_t filters, const Ints& kernel_size, ConvLSTMOptions options = {})
      : ConvLSTM(1, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(ConvLSTM1D)
};
/// keras.layers.ConvLSTM2D: inputs (batch, time, rows, cols, channels), as in Keras's next-frame prediction example.
class ConvLSTM2D : public ConvLSTM {
 public:
  ConvLSTM2D(int64_t filters, const Ints& kernel_size, ConvLSTMOptions options = {})
      : ConvLSTM(2, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(ConvLSTM2D)
};
/// keras.layers.ConvLSTM3D: inputs (batch, time, depth, rows, cols, channels).
class ConvLSTM3D : public ConvLSTM {
 public:
  ConvLSTM3D(int64_t filters, const Ints& kernel_size, ConvLSTMOptions options = {})
      : ConvLSTM(3, filters, kernel_size, std::move(options)) {}
  OSPREY_KERAS_LAYER(ConvLSTM3D)
};

}  // namespace osprey::keras::layers
