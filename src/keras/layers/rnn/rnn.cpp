// keras.layers.SimpleRNNCell, LSTMCell, GRUCell and RNN over them (SimpleRNN, LSTM, GRU), as Keras 3 computes
// them (keras/src/layers/rnn/*.py; the masked steps as its TensorFlow backend's rnn()): the inputs' projection of
// every step in one product, then per step one recurrent product and the gates.
#include <map>

#include <fmt/format.h>

#include "keras/activations/activations.h"
#include "keras/layers/weight_rules.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/regularization.h"
#include "osprey/keras/layers/rnn.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace {

const char* cell_class(RNNCell::Kind k) {
  switch (k) {
    case RNNCell::Kind::simple: return "SimpleRNNCell";
    case RNNCell::Kind::lstm: return "LSTMCell";
    case RNNCell::Kind::gru: return "GRUCell";
  }
  return "RNNCell";
}
const char* cell_prefix(RNNCell::Kind k) {
  switch (k) {
    case RNNCell::Kind::simple: return "simple_rnn_cell";
    case RNNCell::Kind::lstm: return "lstm_cell";
    case RNNCell::Kind::gru: return "gru_cell";
  }
  return "rnn_cell";
}
int gates(RNNCell::Kind k) { return k == RNNCell::Kind::lstm ? 4 : k == RNNCell::Kind::gru ? 3 : 1; }

// The gate blocks of (batch, n · units) as n tensors (one split: one gradient for all of them).
std::vector<Tensor> gate_blocks(const Tensor& z, int n, int64_t units) {
  return osprey::ops::split(z, 1, std::vector<int64_t>(static_cast<std::size_t>(n), units));
}
// 1 - x.
Tensor one_minus(const Tensor& x) { return osprey::ops::neg(osprey::ops::sub(x, Tensor::scalar(1.0))); }

}  // namespace

RNNCell::RNNCell(Kind kind, int64_t units, RecurrentOptions options)
    : Layer(options.name, cell_prefix(kind), options.dtype), kind_(kind), units_(units), o_(std::move(options)) {
  const std::string cls = cell_class(kind);
  if (units <= 0 || units > (int64_t{1} << 20)) {
    throw ValueError(fmt::format("Received an invalid value for argument `units`, expected a positive integer, got "
                                 "{}.",
                                 units));
  }
  (void)ActivationFn::get(o_.activation);  // ValueError for unknown names
  (void)ActivationFn::get(o_.recurrent_activation);
  for (double rate : {o_.dropout, o_.recurrent_dropout}) {
    if (!(rate >= 0.0 && rate <= 1.0)) {
      throw ValueError(fmt::format("{}: dropout and recurrent_dropout must be in [0, 1]; got dropout={}, "
                                   "recurrent_dropout={}",
                                   cls, o_.dropout, o_.recurrent_dropout));
    }
  }
  // Keras applies a rate r only where 0 < r < 1; each mask is Keras's random.dropout of ones (1/(1 - r) or 0).
  if (o_.dropout > 0.0 && o_.dropout < 1.0) input_dropout_ = std::make_shared<Dropout>(o_.dropout, name_ + "_dropout");
  if (o_.recurrent_dropout > 0.0 && o_.recurrent_dropout < 1.0) {
    recurrent_dropout_ = std::make_shared<Dropout>(o_.recurrent_dropout, name_ + "_recurrent_dropout");
  }
}

RNNCell::RNNCell(const std::string& name, const std::string& default_prefix, int64_t units)
    : Layer(name, default_prefix), kind_(Kind::simple), units_(units) {}

std::vector<int64_t> RNNCell::state_sizes() const {
  return std::vector<int64_t>(static_cast<std::size_t>(num_states()), units_);
}

int RNNCell::mask_count() const { return kind_ != Kind::simple && recurrent_dropout_ ? gates(kind_) : 1; }

namespace {
// `count` masks of Keras's random.dropout(ones(shape)), on the current device.
std::vector<Tensor> draw(Layer* dropout, int count, const Shape& shape) {
  std::vector<Tensor> out;
  if (!dropout) return out;
  for (int i = 0; i < count; ++i) out.push_back((*dropout)(Tensor::ones(shape), true));
  return out;
}
}  // namespace

std::vector<Tensor> RNNCell::input_dropout_masks(int64_t batch, int64_t features) {
  return draw(input_dropout_.get(), mask_count(), Shape({batch, features}));
}

std::vector<Tensor> RNNCell::recurrent_dropout_masks(int64_t batch) {
  return draw(recurrent_dropout_.get(), mask_count(), Shape({batch, units_}));
}

int RNNCell::dropout_mask_count(bool recurrent) const {
  return (recurrent ? recurrent_dropout_ : input_dropout_) ? mask_count() : 0;
}

std::string RNNCell::class_name() const { return cell_class(kind_); }

Shape RNNCell::build(const Shape& input_shape) {
  if (input_shape.rank() != 1) {
    throw ValueError(fmt::format("{} '{}' takes inputs (batch, features); received {}", class_name(), name_,
                                 detail::with_batch(input_shape)));
  }
  const int64_t f = input_shape[0], g = gates(kind_) * units_;
  if (built_) {
    if (kernel_->shape()[0] != f) {
      throw ValueError(fmt::format("{} '{}' was built for {} input features; received {}", class_name(), name_,
                                   kernel_->shape()[0], f));
    }
    return finish_build(Shape({units_}));
  }
  kernel_ = &add_weight("kernel", initialize(o_.kernel_initializer, {f, g}));
  recurrent_ = &add_weight("recurrent_kernel", initialize(o_.recurrent_initializer, {units_, g}));
  if (o_.use_bias) {
    Tensor b;
    if (kind_ == Kind::lstm && o_.unit_forget_bias) {  // Keras: [init(units), ones(units), init(2 units)]
      b = osprey::ops::concat({initialize(o_.bias_initializer, {units_}), Tensor::ones(Shape({units_})),
                       initialize(o_.bias_initializer, {2 * units_})},
                      0);
    } else if (kind_ == Kind::gru && o_.reset_after) {  // an input and a recurrent bias
      b = initialize(o_.bias_initializer, {2, g});
    } else {
      b = initialize(o_.bias_initializer, {g});
    }
    bias_ = &add_weight("bias", b);
  }
  return finish_build(Shape({units_}));
}

Tensor RNNCell::project(const Tensor& x) const {
  Tensor b;
  if (bias_) {
    b = kind_ == Kind::gru && o_.reset_after
            ? osprey::ops::reshape(osprey::ops::slice_axis(bias_->value(), 0, 0, 1), Shape({gates(kind_) * units_}))
            : bias_->value();
  }
  return osprey::ops::dense(x, kernel_->value(), b, osprey::ops::Activation::linear);
}

Tensor RNNCell::project(const std::vector<Tensor>& xs) const {
  if (xs.size() == 1) return project(xs[0]);
  const int n = gates(kind_);
  const auto k = gate_blocks(kernel_->value(), n, units_);
  std::vector<Tensor> b;
  if (bias_) {
    const Tensor input_bias = kind_ == Kind::gru && o_.reset_after
                                  ? osprey::ops::reshape(osprey::ops::slice_axis(bias_->value(), 0, 0, 1), Shape({n * units_}))
                                  : bias_->value();
    b = osprey::ops::split(input_bias, 0, std::vector<int64_t>(static_cast<std::size_t>(n), units_));
  }
  std::vector<Tensor> parts;
  for (int g = 0; g < n; ++g) {
    parts.push_back(osprey::ops::dense(xs[static_cast<std::size_t>(g)], k[static_cast<std::size_t>(g)],
                               bias_ ? b[static_cast<std::size_t>(g)] : Tensor(), osprey::ops::Activation::linear));
  }
  return osprey::ops::concat(parts, 1);
}

namespace {
// h · w for the gate blocks of w from `first` on, h under each gate's recurrent dropout mask (Keras's
// implementation 1), or one product without masks.
Tensor recurrent_product(const Tensor& h, const Tensor& w, const std::vector<Tensor>& masks, int first, int64_t u) {
  if (masks.empty()) return osprey::ops::matmul(h, w);
  if (masks.size() == 1) return osprey::ops::matmul(osprey::ops::mul(h, masks[0]), w);
  const int n = static_cast<int>(w.shape()[1] / u);
  const auto blocks = gate_blocks(w, n, u);
  std::vector<Tensor> parts;
  for (int g = 0; g < n; ++g) {
    parts.push_back(osprey::ops::matmul(osprey::ops::mul(h, masks[static_cast<std::size_t>(first + g)]), blocks[static_cast<std::size_t>(g)]));
  }
  return n == 1 ? parts[0] : osprey::ops::concat(parts, 1);
}
}  // namespace

bool RNNCell::runs_as_sequence(const Tensor& x, const std::vector<Tensor>& states, bool training) const {
  if (!kernel_) return false;
  const bool simple = kind_ == Kind::simple &&
                      (o_.activation == "tanh" || o_.activation == "relu" || o_.activation == "sigmoid");
  const bool gated = (kind_ == Kind::lstm || kind_ == Kind::gru) && o_.activation == "tanh" &&
                     o_.recurrent_activation == "sigmoid";
  if (!(simple || gated) || (training && recurrent_dropout_)) return false;
  const Tensor in[] = {x, states[0], kernel_->value(), recurrent_->value(), bias_ ? bias_->value() : Tensor(),
                       states.size() > 1 ? states[1] : Tensor()};
  osprey::ops::SequenceCell cell = osprey::ops::SequenceCell::lstm;
  if (kind_ == Kind::gru) cell = o_.reset_after ? osprey::ops::SequenceCell::gru : osprey::ops::SequenceCell::gru_reset_before;
  if (kind_ == Kind::simple) {
    cell = o_.activation == "tanh"   ? osprey::ops::SequenceCell::simple_tanh
           : o_.activation == "relu" ? osprey::ops::SequenceCell::simple_relu
                                     : osprey::ops::SequenceCell::simple_sigmoid;
  }
  return osprey::ops::rnn_sequence_runs_here(in, cell);
}

std::vector<Tensor> RNNCell::run_sequence(const Tensor& x, const std::vector<Tensor>& states,
                                          const Tensor& padded) const {
  const int64_t u = units_;
  switch (kind_) {
    case Kind::simple:
      return osprey::ops::simple_rnn_sequence(x, states[0], kernel_->value(), recurrent_->value(),
                                      bias_ ? bias_->value() : Tensor::zeros(Shape({u})),
                                      osprey::ops::activation_from_name(o_.activation));
    case Kind::gru:
      if (!o_.reset_after) {
        return osprey::ops::gru_sequence(x, states[0], kernel_->value(), recurrent_->value(),
                                 bias_ ? bias_->value() : Tensor::zeros(Shape({3 * u})), false);
      }
      return osprey::ops::gru_sequence(x, states[0], kernel_->value(), recurrent_->value(),
                               bias_ ? bias_->value() : Tensor::zeros(Shape({2, 3 * u})));
    case Kind::lstm:
      break;
  }
  const Tensor bias = bias_ ? bias_->value() : Tensor::zeros(Shape({4 * u}));
  if (!padded.defined()) return osprey::ops::lstm_sequence(x, states[0], states[1], kernel_->value(), recurrent_->value(), bias);
  // The padding as one more input feature whose kernel row adds -kHold to the input gate's and +kHold to the forget
  // gate's pre-activations: at padded steps σ gives exactly 0 and 1 in float32, c = 1·c + 0·g stays (and so do its
  // gradients: σ' is 0 there); at the others the row adds 0.
  constexpr float kHold = 1e4f;
  std::vector<float> row(static_cast<std::size_t>(4 * u), 0.0f);
  for (int64_t j = 0; j < u; ++j) row[static_cast<std::size_t>(j)] = -kHold, row[static_cast<std::size_t>(u + j)] = kHold;
  Tensor hold = Tensor::from_vector(row, Shape({1, 4 * u}));
  if (&hold.device_ref() != &x.device_ref()) hold = hold.to(x.device_ref());
  return osprey::ops::lstm_sequence(osprey::ops::concat({x, padded.dtype() == x.dtype() ? padded : osprey::ops::cast(padded, x.dtype())}, 2),
                            states[0], states[1],
                            osprey::ops::concat({kernel_->value(), hold}, 0), recurrent_->value(), bias);
}

std::vector<Tensor> RNNCell::step(const Tensor& xp, const std::vector<Tensor>& states,
                                  const std::vector<Tensor>& rm) const {
  const ActivationFn act = ActivationFn::get(o_.activation), rec = ActivationFn::get(o_.recurrent_activation);
  const Tensor& h = states[0];
  const int64_t u = units_;
  switch (kind_) {
    case Kind::simple:
      return {act(osprey::ops::add(xp, recurrent_product(h, recurrent_->value(), rm, 0, u)))};
    case Kind::lstm: {
      const Tensor gates_in = osprey::ops::add(xp, recurrent_product(h, recurrent_->value(), rm, 0, u));
      // Keras's default activations: the gates as one op each way.
      if (o_.activation == "tanh" && o_.recurrent_activation == "sigmoid") return osprey::ops::lstm_cell(gates_in, states[1]);
      const auto z = gate_blocks(gates_in, 4, u);
      const Tensor i = rec(z[0]), f = rec(z[1]);
      const Tensor c = osprey::ops::add(osprey::ops::mul(f, states[1]), osprey::ops::mul(i, act(z[2])));
      const Tensor o = rec(z[3]);
      return {osprey::ops::mul(o, act(c)), c};
    }
    case Kind::gru: {
      const Tensor& w = recurrent_->value();
      Tensor rz;
      if (o_.reset_after) {
        rz = recurrent_product(h, w, rm, 0, u);
        if (bias_) rz = osprey::ops::add(rz, osprey::ops::reshape(osprey::ops::slice_axis(bias_->value(), 0, 1, 1), Shape({3 * u})));
        // Keras's default activations: the gates as one op each way.
        if (o_.activation == "tanh" && o_.recurrent_activation == "sigmoid") return {osprey::ops::gru_cell(xp, rz, h)};
      }
      const auto x3 = gate_blocks(xp, 3, u);
      Tensor z, r, hh;
      if (o_.reset_after) {
        const auto r3 = gate_blocks(rz, 3, u);
        z = rec(osprey::ops::add(x3[0], r3[0]));
        r = rec(osprey::ops::add(x3[1], r3[1]));
        hh = act(osprey::ops::add(x3[2], osprey::ops::mul(r, r3[2])));
      } else {
        const auto w2 = osprey::ops::split(w, 1, {2 * u, u});
        const auto r2 = gate_blocks(recurrent_product(h, w2[0], rm, 0, u), 2, u);
        z = rec(osprey::ops::add(x3[0], r2[0]));
        r = rec(osprey::ops::add(x3[1], r2[1]));
        const Tensor h_h = rm.empty() ? h : osprey::ops::mul(h, rm[2]);
        hh = act(osprey::ops::add(x3[2], osprey::ops::matmul(osprey::ops::mul(r, h_h), w2[1])));
      }
      return {osprey::ops::add(osprey::ops::mul(z, h), osprey::ops::mul(one_minus(z), hh))};
    }
  }
  return {};
}

Tensor RNNCell::call(const Tensor& inputs, bool) {
  const auto d = inputs.shape().dims();
  if (!built_) build(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  std::vector<Tensor> zeros(static_cast<std::size_t>(num_states()), Tensor::zeros(Shape({inputs.shape()[0], units_})));
  return step(project(inputs), zeros)[0];
}

#define OSPREY_CELL_RULES                                                        \
  {{kernel_, o_.kernel_regularizer, o_.kernel_constraint},                      \
   {recurrent_, o_.recurrent_regularizer, o_.recurrent_constraint},             \
   {bias_, o_.bias_regularizer, o_.bias_constraint}}
bool RNNCell::has_regularization() const { return detail::any_penalty(OSPREY_CELL_RULES); }
std::vector<Tensor> RNNCell::regularization_losses() { return detail::penalties(OSPREY_CELL_RULES); }
void RNNCell::apply_constraints() { detail::constrain(OSPREY_CELL_RULES); }
#undef OSPREY_CELL_RULES

// ---- RNN ----

RNN::RNN(std::shared_ptr<RNNCell> cell, RNNOptions options) : RNN(std::move(cell), std::move(options), "rnn") {}
RNN::RNN(std::vector<std::shared_ptr<RNNCell>> cells, RNNOptions options)
    : RNN(std::make_shared<StackedRNNCells>(std::move(cells)), std::move(options), "rnn") {}

RNN::RNN(std::shared_ptr<RNNCell> cell, RNNOptions options, const std::string& default_prefix)
    : Layer(options.name, default_prefix, options.dtype), cell_(std::move(cell)), r_(std::move(options)) {
  if (!cell_) throw ValueError("RNN: the cell is empty (a null pointer)");
}

Shape RNN::build(const Shape& input_shape) {
  if (input_shape.rank() != 2) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected ndim=3, found "
                                 "ndim={}. Full shape received: {}",
                                 name_, input_shape.rank() + 1, detail::with_batch(input_shape)));
  }
  const bool first = !cell_->built();
  cell_->build(Shape({input_shape[1]}));
  if (first) {  // Keras's paths: "lstm/lstm_cell/kernel"
    for (auto* v : cell_->variables()) v->set_path(name_ + "/" + v->path());
  }
  const int64_t u = cell_->units();
  return finish_build(r_.return_sequences ? Shape({input_shape[0], u}) : Shape({u}));
}

Shape RNN::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.empty()) throw ValueError(fmt::format("Layer '{}' was called on no inputs", name_));
  const Shape out = build(input_shapes[0]);
  if (input_shapes.size() == 1) return out;
  const auto sizes = cell_->state_sizes();
  bool fits = input_shapes.size() - 1 == sizes.size();
  for (std::size_t i = 1; fits && i < input_shapes.size(); ++i) fits = input_shapes[i] == Shape({sizes[i - 1]});
  if (!fits) {
    std::vector<std::string> got, want;
    for (std::size_t i = 1; i < input_shapes.size(); ++i) got.push_back(detail::with_batch(input_shapes[i]));
    for (auto size : sizes) want.push_back(fmt::format("(None, {})", size));
    throw ValueError(fmt::format("An `initial_state` was passed that is not compatible with `cell.state_size` of "
                                 "layer '{}' ({}): it takes {} state(s) of shapes [{}]; received [{}]",
                                 name_, class_name(), sizes.size(), fmt::join(want, ", "), fmt::join(got, ", ")));
  }
  return out;
}

std::vector<Shape> RNN::output_shapes() const {
  std::vector<Shape> out{output_shape_};
  if (r_.return_state) {
    for (auto size : cell_->state_sizes()) out.push_back(Shape({size}));
  }
  return out;
}

void RNN::append_trainable_variables(std::vector<Variable*>& out) {
  if (trainable && cell_->trainable) cell_->append_trainable_variables(out);
}

Tensor RNN::compute_mask(const Tensor&, const Tensor& mask) { return r_.return_sequences ? mask : Tensor(); }
Tensor RNN::compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks) {
  return compute_mask(inputs.at(0), masks.empty() ? Tensor() : masks[0]);
}

static std::vector<Tensor> states_of(const std::vector<Tensor>& inputs) {
  return std::vector<Tensor>(inputs.begin() + (inputs.empty() ? 0 : 1), inputs.end());
}

Tensor RNN::call_masked(const Tensor& inputs, bool training, const Tensor& mask) {
  return run(inputs, training, mask, {}, false)[0];
}
Tensor RNN::call(const std::vector<Tensor>& inputs, bool training) {
  return run(inputs.at(0), training, Tensor(), states_of(inputs), false)[0];
}
Tensor RNN::call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks) {
  return run(inputs.at(0), training, masks.empty() ? Tensor() : masks[0], states_of(inputs), false)[0];
}
std::vector<Tensor> RNN::call_outputs(const std::vector<Tensor>& inputs, bool training) {
  auto out = run(inputs.at(0), training, Tensor(), states_of(inputs), r_.return_state);
  if (!r_.return_state) out.resize(1);
  return out;
}
std::vector<Tensor> RNN::call_outputs_masked(const std::vector<Tensor>& inputs, bool training,
                                             const std::vector<Tensor>& masks, std::vector<Tensor>& output_masks) {
  const Tensor mask = masks.empty() ? Tensor() : masks[0];
  auto out = run(inputs.at(0), training, mask, states_of(inputs), r_.return_state);
  if (!r_.return_state) out.resize(1);
  output_masks.assign(out.size(), Tensor());
  output_masks[0] = compute_mask(inputs[0], mask);
  return out;
}

void RNN::reset_states() {
  for (auto& s : states_) {  // zeros where the states are (the device of the batches)
    Tensor z = Tensor::zeros(s.shape());
    s = &z.device_ref() == &s.device_ref() ? z : z.to(s.device_ref());
  }
}

std::vector<Tensor> RNN::run(const Tensor& inputs, bool training, const Tensor& mask,
                             const std::vector<Tensor>& initial_states, bool states_used) {
  const auto d = inputs.shape().dims();
  if (d.size() != 3) build(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  if (!built_) build(Shape({d[1], d[2]}));
  const int64_t n = d[0], t = d[1], f = d[2], u = cell_->units();
  if (t == 0) throw ValueError(fmt::format("Layer '{}' needs at least one time step; received {}", name_, inputs.shape().to_string()));
  if (mask.defined() && mask.shape() != Shape({n, t})) {
    throw ValueError(fmt::format("Layer '{}': the mask has shape {}, but the inputs {} need ({}, {})", name_,
                                 mask.shape().to_string(), inputs.shape().to_string(), n, t));
  }
  const auto sizes = cell_->state_sizes();
  const auto num_states = sizes.size();
  std::vector<Tensor> states;
  if (!initial_states.empty()) {
    if (initial_states.size() != num_states) {
      throw ValueError(fmt::format("Layer '{}' ({}) takes {} initial state(s); received {}", name_, class_name(),
                                   num_states, initial_states.size()));
    }
    for (std::size_t i = 0; i < num_states; ++i) {
      const Tensor& s = initial_states[i];
      if (s.shape() != Shape({n, sizes[i]})) {
        throw ValueError(fmt::format("Layer '{}': initial state {} has shape {}; the inputs {} need ({}, {})", name_,
                                     i, s.shape().to_string(), inputs.shape().to_string(), n, sizes[i]));
      }
      states.push_back(s.dtype() == DType::float32 ? s : s.cast(DType::float32));
    }
  } else if (r_.stateful && !states_.empty()) {
    if (states_[0].shape()[0] != n) {
      throw ValueError(fmt::format("If an RNN is stateful, the batch size of the input sequences must be the same as "
                                   "the batch size of the initial state (layer '{}').\n- Expected batch size: {}\n- "
                                   "Received batch size: {}",
                                   name_, states_[0].shape()[0], n));
    }
    states = states_;
  } else {
    for (auto size : sizes) states.push_back(Tensor::zeros(Shape({n, size})));
  }
  if (r_.stateful && current_replica_id() > 0) {
    throw ValueError(fmt::format("Layer '{}': a stateful RNN keeps one batch's states; it cannot run on several "
                                 "replicas (MirroredStrategy) in Osprey",
                                 name_));
  }
  Tensor x = inputs.dtype() == DType::float32 ? inputs : inputs.cast(DType::float32);
  // The sequence as one op where the cell can (oneDNN's RNN primitives on the CPU); under mixed_bfloat16 in
  // bfloat16, as Keras computes it, its outputs and states bfloat16 (the stateful states kept in float32).
  if (n > 0 && r_.use_cudnn != false) {
    const bool bf16 = dtype_policy().compute_dtype() == DType::bfloat16;
    std::vector<Tensor> seq_states = states;
    if (bf16) seq_states[0] = osprey::ops::cast(states[0], DType::bfloat16);
    const Tensor seq_x = bf16 ? osprey::ops::cast(inputs, DType::bfloat16) : x;
    if (auto fused = run_as_sequence(seq_x, training, mask, seq_states, states_used || r_.stateful); !fused.empty()) {
      if (r_.stateful) {
        states_.clear();
        for (auto it = fused.begin() + 1; it != fused.end(); ++it) {
          states_.push_back(it->defined() && it->dtype() != DType::float32 ? it->cast(DType::float32) : *it);
        }
      }
      for (auto& t : fused) {
        if (bf16 && t.defined() && t.dtype() != DType::bfloat16) t = osprey::ops::cast(t, DType::bfloat16);
      }
      return fused;
    }
    if (r_.use_cudnn == true) {
      throw ValueError(fmt::format(
          "use_cudnn=True was specified, but cuDNN is not supported for this layer configuration with this backend "
          "(layer '{}': Osprey's fused sequence kernels take Keras's LSTM and GRU cells with their default "
          "activations and tanh/relu/sigmoid SimpleRNN cells without recurrent dropout, masks whose rows each hold one "
          "run of unmasked steps (right- or left-padded); on the "
          "CPU all of them, on the GPU (cuDNN) not the GRU with reset_after=False nor the sigmoid SimpleRNN). Pass use_cudnn='auto' "
          "(leave it unset) to fallback to a non-cuDNN implementation.",
          name_));
    }
  }
  const std::vector<Tensor> rec_masks = training ? cell_->recurrent_dropout_masks(n) : std::vector<Tensor>{};
  Tensor xp;
  if (auto in_masks = training ? cell_->input_dropout_masks(n, f) : std::vector<Tensor>{}; !in_masks.empty()) {
    // Each (batch, features) mask over every step: time-major rows of batch · features times a row vector.
    const Tensor xt = osprey::ops::reshape(osprey::ops::transpose(x, {1, 0, 2}), Shape({t, n * f}));
    std::vector<Tensor> per_gate;
    for (const auto& m : in_masks) {
      const Tensor masked = osprey::ops::reshape(osprey::ops::mul(xt, osprey::ops::reshape(m, Shape({n * f}))), Shape({t, n, f}));
      per_gate.push_back(osprey::ops::reshape(osprey::ops::transpose(masked, {1, 0, 2}), Shape({n * t, f})));
    }
    xp = cell_->project(per_gate);
  } else {
    xp = cell_->project(osprey::ops::reshape(x, Shape({n * t, f})));  // every step's inputs at once
  }
  const int64_t g = xp.shape()[1];
  // Each step's block, time-major so that a step's rows are contiguous: one split, one gradient.
  const auto steps = osprey::ops::split(osprey::ops::transpose(osprey::ops::reshape(xp, Shape({n, t, g})), {1, 0, 2}), 0,
                                std::vector<int64_t>(static_cast<std::size_t>(t), 1));
  const Tensor m = mask.defined() ? (mask.dtype() == DType::float32 ? mask : mask.cast(DType::float32)) : Tensor();
  const auto mask_steps = m.defined() ? osprey::ops::split(m, 1, std::vector<int64_t>(static_cast<std::size_t>(t), 1))
                                      : std::vector<Tensor>{};
  const int out_at = cell_->output_index();
  Tensor output = Tensor::zeros(Shape({n, u}));
  std::vector<Tensor> outputs;
  if (r_.return_sequences) outputs.reserve(static_cast<std::size_t>(t));
  for (int64_t k = 0; k < t; ++k) {
    const int64_t s = r_.go_backwards ? t - 1 - k : k;
    auto next = cell_->step(osprey::ops::reshape(steps[static_cast<std::size_t>(s)], Shape({n, g})), states, rec_masks);
    Tensor out = next[static_cast<std::size_t>(out_at)];
    if (m.defined()) {  // masked rows keep their states and repeat the last output (or output zeros)
      std::map<int64_t, std::pair<Tensor, Tensor>> keep_of;  // width -> (n, width) of 1 and 0, and 1 - that
      auto keep = [&](int64_t width) -> const std::pair<Tensor, Tensor>& {
        auto it = keep_of.find(width);
        if (it == keep_of.end()) {
          const Tensor k = osprey::ops::matmul(mask_steps[static_cast<std::size_t>(s)], Tensor::ones(Shape({1, width})));
          it = keep_of.emplace(width, std::make_pair(k, one_minus(k))).first;
        }
        return it->second;
      };
      for (std::size_t i = 0; i < states.size(); ++i) {
        const auto& [k, drop] = keep(sizes[i]);
        next[i] = osprey::ops::add(osprey::ops::mul(next[i], k), osprey::ops::mul(states[i], drop));
      }
      const auto& [k, drop] = keep(u);
      out = r_.zero_output_for_mask ? osprey::ops::mul(out, k) : osprey::ops::add(osprey::ops::mul(out, k), osprey::ops::mul(output, drop));
    }
    states = std::move(next);
    output = out;
    if (r_.return_sequences) outputs.push_back(osprey::ops::reshape(out, Shape({n, 1, u})));
  }
  if (r_.stateful) states_ = states;
  std::vector<Tensor> result{r_.return_sequences ? osprey::ops::concat(outputs, 1) : output};
  result.insert(result.end(), states.begin(), states.end());
  // Under a mixed policy the outputs and states are in the compute dtype, as Keras's and the sequence op's are: the
  // steps ran in float32 and are rounded once here (they were float32 before: use_cudnn=false, or on a GPU the
  // cells cuDNN refuses, gave another dtype than the same layer on the sequence op).
  if (const DType cd = dtype_policy().compute_dtype(); cd == DType::bfloat16 || cd == DType::float16) {
    for (auto& r : result) {
      if (r.defined() && r.dtype() != cd) r = osprey::ops::cast(r, cd);
    }
  }
  return result;
}

namespace {
// The layer's name from either options struct; its cell is named after its class ("lstm_cell" in every LSTM), as
// Keras names it.
// LSTM(units, RecurrentOptions, RNNOptions): a name or dtype in either applies to the layer; its cell takes the
// layer's dtype policy, as Keras's LSTM makes its cell with dtype=self.dtype_policy.
RNNOptions named(RNNOptions rnn, const RecurrentOptions& o) {
  if (rnn.name.empty()) rnn.name = o.name;
  if (rnn.dtype.empty()) rnn.dtype = o.dtype;
  return rnn;
}
RecurrentOptions cell_named(RecurrentOptions o, const RNNOptions& rnn, const char* name) {
  o.name = name;
  if (o.dtype.empty()) o.dtype = rnn.dtype;
  return o;
}
}  // namespace

SimpleRNN::SimpleRNN(int64_t units, RecurrentOptions options, RNNOptions rnn)
    : RNN(std::make_shared<SimpleRNNCell>(units, cell_named(options, rnn, "simple_rnn_cell")), named(rnn, options), "simple_rnn") {
  owns_cell_ = true;
}
LSTM::LSTM(int64_t units, RecurrentOptions options, RNNOptions rnn)
    : RNN(std::make_shared<LSTMCell>(units, cell_named(options, rnn, "lstm_cell")), named(rnn, options), "lstm") {
  owns_cell_ = true;
}
GRU::GRU(int64_t units, RecurrentOptions options, RNNOptions rnn)
    : RNN(std::make_shared<GRUCell>(units, cell_named(options, rnn, "gru_cell")), named(rnn, options), "gru") {
  owns_cell_ = true;
}

}  // namespace osprey::keras::layers
