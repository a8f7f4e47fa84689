// keras.layers.ConvLSTM1D/2D/3D (keras/src/layers/rnn/conv_lstm.py): the cell's weights, the steps as ops
// (convolutions through keras::ops::conv, so oneDNN's on the CPU and cuDNN's on a GPU, and their gradients), the
// configs both ways. Inside, the images are channels-last; channels_first inputs, states and outputs are
// transposed at the edges. Without input dropout every step's input convolution is one convolution over
// (batch·time) images; the recurrent convolution runs per step.
#include "osprey/keras/ops.h"

#include <fmt/format.h>

#include <numeric>

#include "keras/activations/activations.h"
#include "keras/layers/convolutional/conv_config.h"
#include "keras/layers/rnn/rnn_config.h"
#include "keras/layers/weight_rules.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/conv_lstm.h"
#include "osprey/keras/layers/regularization.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using ser::json;

namespace {

// The permutation moving axis `from` to `to` for a tensor of rank `nd`.
std::vector<int> move_axis(int nd, int from, int to) {
  std::vector<int> p(static_cast<std::size_t>(nd));
  std::iota(p.begin(), p.end(), 0);
  p.erase(p.begin() + from);
  p.insert(p.begin() + to, from);
  return p;
}

}  // namespace

// ---- ConvLSTMCell ----

ConvLSTMCell::ConvLSTMCell(int rank, int64_t filters, std::vector<int64_t> kernel_size, const ConvLSTMOptions& options)
    : Layer("conv_lstm_cell", "", options.dtype), rank_(rank), filters_(filters), kernel_size_(std::move(kernel_size)),
      o_(options) {}

Shape ConvLSTMCell::build(const Shape& input_shape) {
  const int64_t channels = input_shape[0];
  std::vector<int64_t> k = kernel_size_, r = kernel_size_;
  k.push_back(channels), k.push_back(4 * filters_);
  r.push_back(filters_), r.push_back(4 * filters_);
  if (built_) {
    if (kernel_->shape() != Shape(k)) {
      throw ValueError(fmt::format("ConvLSTMCell '{}' was built for {} input channels; received {}", name_,
                                   kernel_->shape()[rank_], channels));
    }
    return finish_build(Shape({filters_}));
  }
  kernel_ = &add_weight("kernel", initialize(o_.kernel_initializer, Shape(k)));
  recurrent_ = &add_weight("recurrent_kernel", initialize(o_.recurrent_initializer, Shape(r)));
  if (o_.use_bias) {
    const int64_t f = filters_;
    bias_ = &add_weight("bias", o_.unit_forget_bias
                                    ? osprey::ops::concat({initialize(o_.bias_initializer, Shape({f})), Tensor::ones(Shape({f})),
                                                   initialize(o_.bias_initializer, Shape({2 * f}))},
                                                  0)
                                    : initialize(o_.bias_initializer, Shape({4 * f})));
  }
  return finish_build(Shape({filters_}));
}

Tensor ConvLSTMCell::call(const Tensor&, bool) {
  throw ValueError(fmt::format("ConvLSTMCell '{}' runs inside its ConvLSTM layer; call the layer", name_));
}

#define OSPREY_CONV_LSTM_RULES                                                          \
  {{kernel_, o_.kernel_regularizer, o_.kernel_constraint},                             \
   {recurrent_, o_.recurrent_regularizer, o_.recurrent_constraint},                    \
   {bias_, o_.bias_regularizer, o_.bias_constraint}}
bool ConvLSTMCell::has_regularization() const { return detail::any_penalty(OSPREY_CONV_LSTM_RULES); }
std::vector<Tensor> ConvLSTMCell::regularization_losses() { return detail::penalties(OSPREY_CONV_LSTM_RULES); }
void ConvLSTMCell::apply_constraints() { detail::constrain(OSPREY_CONV_LSTM_RULES); }
#undef OSPREY_CONV_LSTM_RULES

// ---- ConvLSTM ----

ConvLSTM::ConvLSTM(int rank, int64_t filters, const Ints& kernel_size, ConvLSTMOptions options)
    : Layer(options.name, "conv_lstm" + std::to_string(rank) + "d", options.dtype), rank_(rank), filters_(filters),
      o_(std::move(options)) {
  const std::string cls = "ConvLSTM" + std::to_string(rank) + "D";
  if (rank < 1 || rank > 3) throw ValueError(fmt::format("Rank {} convolutions are not currently implemented.", rank));
  if (filters < 1) throw ValueError(fmt::format("{}: `filters` must be a positive integer; received {}", cls, filters));
  kernel_size_ = detail::per_axis(kernel_size, rank, 1, cls, "kernel_size");
  strides_ = detail::per_axis(o_.strides, rank, 1, cls, "strides");
  dilation_ = detail::per_axis(o_.dilation_rate, rank, 1, cls, "dilation_rate");
  if (*std::max_element(strides_.begin(), strides_.end()) > 1 &&
      *std::max_element(dilation_.begin(), dilation_.end()) > 1) {
    throw ValueError(fmt::format("Specifying `strides > 1` is not compatible with `dilation_rate > 1`. Please provide "
                                 "`strides=1` or `dilation_rate=1`. Received: strides=({}) and dilation_rate=({})",
                                 fmt::join(strides_, ", "), fmt::join(dilation_, ", ")));
  }
  if (o_.padding != "valid" && o_.padding != "same") {
    throw ValueError(fmt::format("{}: `padding` must be 'valid' or 'same'; received '{}'", cls, o_.padding));
  }
  detail::check_data_format(o_.data_format, cls);
  (void)ActivationFn::get(o_.activation);  // ValueError for unknown names
  (void)ActivationFn::get(o_.recurrent_activation);
  o_.dropout = std::min(1.0, std::max(0.0, o_.dropout));
  o_.recurrent_dropout = std::min(1.0, std::max(0.0, o_.recurrent_dropout));
  if (o_.dropout > 0.0 && o_.dropout < 1.0) input_dropout_ = std::make_shared<Dropout>(o_.dropout, name_ + "_dropout");
  if (o_.recurrent_dropout > 0.0 && o_.recurrent_dropout < 1.0) {
    recurrent_dropout_ = std::make_shared<Dropout>(o_.recurrent_dropout, name_ + "_recurrent_dropout");
  }
  cell_ = std::make_shared<ConvLSTMCell>(rank, filters, kernel_size_, o_);
}

Shape ConvLSTM::state_shape() const {
  const bool first = o_.data_format == "channels_first";
  std::vector<int64_t> d;
  for (int a = 0; a < rank_; ++a) {
    const int64_t len = step_shape_[first ? a + 1 : a];
    const auto ua = static_cast<std::size_t>(a);
    const int64_t out = o_.padding == "same" ? (len + strides_[ua] - 1) / strides_[ua]
                                             : (len - dilation_[ua] * (kernel_size_[ua] - 1) - 1) / strides_[ua] + 1;
    d.push_back(out);
  }
  if (first) d.insert(d.begin(), filters_);
  else d.push_back(filters_);
  return Shape(d);
}

Shape ConvLSTM::build(const Shape& input_shape) {
  const std::string cls = class_name();
  if (input_shape.rank() != rank_ + 2) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected ndim={}, found "
                                 "ndim={}. Full shape received: {}",
                                 name_, rank_ + 3, input_shape.rank() + 1, detail::with_batch(input_shape)));
  }
  const auto d = input_shape.dims();
  step_shape_ = Shape(std::vector<int64_t>(d.begin() + 1, d.end()));
  const int64_t channels = o_.data_format == "channels_first" ? step_shape_[0] : step_shape_[rank_];
  for (int64_t v : step_shape_.dims()) {
    if (v < 1) {
      throw ValueError(fmt::format("ConvLSTM layers only support static input shapes for the spatial dimension. "
                                   "Received invalid input shape: input_shape={} (layer '{}')",
                                   detail::with_batch(input_shape), name_));
    }
  }
  const Shape s = state_shape();
  for (int64_t v : s.dims()) {
    if (v < 1) {
      throw ValueError(fmt::format("Layer '{}' ({}): the kernel {} does not fit the inputs {} with padding '{}'", name_,
                                   cls, fmt::join(kernel_size_, "x"), detail::with_batch(input_shape), o_.padding));
    }
  }
  const bool first = !cell_->built();
  cell_->build(Shape({channels}));
  if (first) {  // Keras's paths: "conv_lstm2d/conv_lstm_cell/kernel"
    for (auto* v : cell_->variables()) v->set_path(name_ + "/" + v->path());
  }
  std::vector<int64_t> out(s.dims().begin(), s.dims().end());
  if (o_.return_sequences) out.insert(out.begin(), input_shape[0]);
  return finish_build(Shape(out));
}

Shape ConvLSTM::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.empty()) throw ValueError(fmt::format("Layer '{}' was called on no inputs", name_));
  const Shape out = build(input_shapes[0]);
  if (input_shapes.size() == 1) return out;
  if (input_shapes.size() != 3 || input_shapes[1] != state_shape() || input_shapes[2] != state_shape()) {
    std::vector<std::string> got;
    for (std::size_t i = 1; i < input_shapes.size(); ++i) got.push_back(detail::with_batch(input_shapes[i]));
    throw ValueError(fmt::format("Layer '{}' ({}) takes 2 initial states (h and c) of shape {}; received [{}]", name_,
                                 class_name(), detail::with_batch(state_shape()), fmt::join(got, ", ")));
  }
  return out;
}

std::vector<Shape> ConvLSTM::output_shapes() const {
  std::vector<Shape> out{output_shape_};
  if (o_.return_state) out.insert(out.end(), 2, state_shape());
  return out;
}

void ConvLSTM::append_trainable_variables(std::vector<Variable*>& out) {
  if (trainable && cell_->trainable) cell_->append_trainable_variables(out);
}

void ConvLSTM::reset_states() {
  for (auto& s : states_) {
    Tensor z = Tensor::zeros(s.shape());
    s = &z.device_ref() == &s.device_ref() ? z : z.to(s.device_ref());
  }
}

Tensor ConvLSTM::call(const Tensor& inputs, bool training) { return call_outputs({inputs}, training)[0]; }
Tensor ConvLSTM::call(const std::vector<Tensor>& inputs, bool training) { return call_outputs(inputs, training)[0]; }

std::vector<Tensor> ConvLSTM::call_outputs(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.empty() || (inputs.size() != 1 && inputs.size() != 3)) {
    throw ValueError(fmt::format("Layer '{}' ({}) takes the sequence and optionally its initial h and c; received {} "
                                 "inputs",
                                 name_, class_name(), inputs.size()));
  }
  const Tensor& x = inputs[0];
  const auto d = x.shape().dims();
  if (d.size() != static_cast<std::size_t>(rank_ + 3)) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected ndim={}, found "
                                 "ndim={}. Full shape received: {}",
                                 name_, rank_ + 3, d.size(), x.shape().to_string()));
  }
  const Shape step(std::vector<int64_t>(d.begin() + 2, d.end()));
  if (!built_ || step != step_shape_) build(Shape(std::vector<int64_t>(d.begin() + 1, d.end())));
  if (d[1] == 0) throw ValueError(fmt::format("Layer '{}' needs at least one time step; received {}", name_, x.shape().to_string()));
  const int64_t n = d[0];
  std::vector<int64_t> sd{n};
  const Shape state = state_shape();
  for (int64_t v : state.dims()) sd.push_back(v);
  std::vector<Tensor> states;
  if (inputs.size() == 3) {
    for (std::size_t i = 1; i < 3; ++i) {
      if (inputs[i].shape() != Shape(sd)) {
        throw ValueError(fmt::format("Layer '{}': initial state {} has shape {}; the inputs {} need {}", name_, i - 1,
                                     inputs[i].shape().to_string(), x.shape().to_string(), Shape(sd).to_string()));
      }
      states.push_back(inputs[i].dtype() == DType::float32 ? inputs[i] : inputs[i].cast(DType::float32));
    }
  } else if (o_.stateful && !states_.empty()) {
    if (states_[0].shape()[0] != n) {
      throw ValueError(fmt::format("If an RNN is stateful, the batch size of the input sequences must be the same as "
                                   "the batch size of the initial state (layer '{}').\n- Expected batch size: {}\n- "
                                   "Received batch size: {}",
                                   name_, states_[0].shape()[0], n));
    }
    states = states_;
  }
  auto out = run(x, training, std::move(states));
  if (o_.stateful) states_.assign(out.begin() + 1, out.end());
  // Under a mixed policy the outputs and states in the compute dtype, as Keras gives them (the steps ran in float32;
  // stateful states are kept in float32).
  if (const DType cd = dtype_policy().compute_dtype(); cd == DType::bfloat16 || cd == DType::float16) {
    for (auto& t : out) {
      if (t.defined() && t.dtype() != cd) t = osprey::ops::cast(t, cd);
    }
  }
  if (!o_.return_state) out.resize(1);
  return out;
}

std::vector<Tensor> ConvLSTM::run(const Tensor& input, bool training, std::vector<Tensor> states) {
  const bool first = o_.data_format == "channels_first";
  const int nd = rank_ + 3;  // (batch, time, spatial..., channels)
  Tensor x = input.dtype() == DType::float32 ? input : input.cast(DType::float32);
  if (first) x = osprey::ops::transpose(x, move_axis(nd, 2, nd - 1));
  for (auto& s : states) {
    if (first) s = osprey::ops::transpose(s, move_axis(nd - 1, 1, nd - 2));
  }
  const auto d = x.shape().dims();
  const int64_t n = d[0], t = d[1], f = filters_;
  std::vector<int64_t> state_dims{n};
  const Shape ss = state_shape();
  for (int a = 0; a < rank_; ++a) state_dims.push_back(ss[first ? a + 1 : a]);
  state_dims.push_back(f);
  if (states.empty()) states = {Tensor::zeros(Shape(state_dims)), Tensor::zeros(Shape(state_dims))};
  Tensor h = states[0], carry = states[1];

  const Tensor kernel = cell_->kernel()->value(), recurrent = cell_->recurrent_kernel()->value();
  const Tensor bias = cell_->bias() ? cell_->bias()->value() : Tensor();
  const int gate_axis = rank_ + 1;
  const std::vector<int64_t> four(4, f);
  std::vector<Tensor> in_masks, rec_masks;
  if (training && input_dropout_) {
    std::vector<int64_t> md{n};
    md.insert(md.end(), d.begin() + 2, d.end());
    for (int g = 0; g < 4; ++g) in_masks.push_back((*input_dropout_)(Tensor::ones(Shape(md)), true));
  }
  if (training && recurrent_dropout_) {
    for (int g = 0; g < 4; ++g) rec_masks.push_back((*recurrent_dropout_)(Tensor::ones(Shape(state_dims)), true));
  }
  const auto kernels = in_masks.empty() ? std::vector<Tensor>{} : osprey::ops::split(kernel, gate_axis, four);
  const auto recurrents = rec_masks.empty() ? std::vector<Tensor>{} : osprey::ops::split(recurrent, gate_axis, four);
  auto conv_in = [&](const Tensor& v, const Tensor& k) {
    return keras::ops::conv(v, k, strides_, o_.padding, "channels_last", dilation_);
  };
  auto conv_rec = [&](const Tensor& v, const Tensor& k) {
    return keras::ops::conv(v, k, std::vector<int64_t>{1}, "same", "channels_last", std::vector<int64_t>{1});
  };

  // Every step's input convolution at once: (batch·time, spatial..., channels) -> (batch, time, out..., 4f).
  Tensor zx_all;
  if (in_masks.empty()) {
    std::vector<int64_t> flat{n * t};
    flat.insert(flat.end(), d.begin() + 2, d.end());
    zx_all = conv_in(osprey::ops::reshape(x, Shape(flat)), kernel);
    if (bias.defined()) zx_all = osprey::ops::add(zx_all, bias);
    std::vector<int64_t> back{n, t};
    const Shape conv_shape = zx_all.shape();
    back.insert(back.end(), conv_shape.dims().begin() + 1, conv_shape.dims().end());
    zx_all = osprey::ops::reshape(zx_all, Shape(back));
  }
  std::vector<int64_t> zdims = state_dims;
  zdims.back() = 4 * f;
  std::vector<int64_t> step_in{n};
  step_in.insert(step_in.end(), d.begin() + 2, d.end());
  const auto bias_parts = bias.defined() && !in_masks.empty() ? osprey::ops::split(bias, 0, four) : std::vector<Tensor>{};

  const ActivationFn act = ActivationFn::get(o_.activation), rec = ActivationFn::get(o_.recurrent_activation);
  std::vector<Tensor> outputs;
  std::vector<int64_t> one_step = state_dims;
  one_step.insert(one_step.begin() + 1, 1);
  for (int64_t k = 0; k < t; ++k) {
    const int64_t s = o_.go_backwards ? t - 1 - k : k;
    Tensor zx;
    if (in_masks.empty()) {
      zx = osprey::ops::reshape(osprey::ops::slice_axis(zx_all, 1, s, 1), Shape(zdims));
    } else {  // one convolution per gate of the inputs under that gate's mask
      const Tensor xs = osprey::ops::reshape(osprey::ops::slice_axis(x, 1, s, 1), Shape(step_in));
      std::vector<Tensor> parts;
      for (std::size_t g = 0; g < 4; ++g) {
        Tensor p = conv_in(osprey::ops::mul(xs, in_masks[g]), kernels[g]);
        if (!bias_parts.empty()) p = osprey::ops::add(p, bias_parts[g]);
        parts.push_back(p);
      }
      zx = osprey::ops::concat(parts, gate_axis);
    }
    Tensor zh;
    if (rec_masks.empty()) {
      zh = conv_rec(h, recurrent);
    } else {
      std::vector<Tensor> parts;
      for (std::size_t g = 0; g < 4; ++g) parts.push_back(conv_rec(osprey::ops::mul(h, rec_masks[g]), recurrents[g]));
      zh = osprey::ops::concat(parts, gate_axis);
    }
    const auto z = osprey::ops::split(osprey::ops::add(zx, zh), gate_axis, four);
    const Tensor i = rec(z[0]), fg = rec(z[1]), o = rec(z[3]);
    carry = osprey::ops::add(osprey::ops::mul(fg, carry), osprey::ops::mul(i, act(z[2])));
    h = osprey::ops::mul(o, act(carry));
    if (o_.return_sequences) outputs.push_back(osprey::ops::reshape(h, Shape(one_step)));
  }
  Tensor y = o_.return_sequences ? osprey::ops::concat(outputs, 1) : h;
  if (first) {  // back to (batch, [time,] filters, spatial...)
    const int ynd = static_cast<int>(y.shape().rank());
    y = osprey::ops::transpose(y, move_axis(ynd, ynd - 1, o_.return_sequences ? 2 : 1));
    h = osprey::ops::transpose(h, move_axis(nd - 1, nd - 2, 1));
    carry = osprey::ops::transpose(carry, move_axis(nd - 1, nd - 2, 1));
  }
  return {y, h, carry};
}

std::string ConvLSTM::get_config() const {
  json c = ser::base_config(*this);
  c["return_sequences"] = o_.return_sequences;
  c["return_state"] = o_.return_state;
  c["go_backwards"] = o_.go_backwards;
  c["stateful"] = o_.stateful;
  c["unroll"] = false;
  c["zero_output_for_mask"] = false;
  c["filters"] = filters_;
  c["kernel_size"] = kernel_size_;
  c["strides"] = strides_;
  c["padding"] = o_.padding;
  c["data_format"] = o_.data_format;
  c["dilation_rate"] = dilation_;
  c["activation"] = o_.activation;
  c["recurrent_activation"] = o_.recurrent_activation;
  c["use_bias"] = o_.use_bias;
  c["kernel_initializer"] = ser::initializer(o_.kernel_initializer);
  c["recurrent_initializer"] = ser::initializer(o_.recurrent_initializer);
  c["bias_initializer"] = ser::initializer(o_.bias_initializer);
  c["unit_forget_bias"] = o_.unit_forget_bias;
  c["kernel_regularizer"] = ser::regularizer(o_.kernel_regularizer);
  c["recurrent_regularizer"] = ser::regularizer(o_.recurrent_regularizer);
  c["bias_regularizer"] = ser::regularizer(o_.bias_regularizer);
  c["activity_regularizer"] = nullptr;
  c["kernel_constraint"] = ser::constraint(o_.kernel_constraint);
  c["recurrent_constraint"] = ser::constraint(o_.recurrent_constraint);
  c["bias_constraint"] = ser::constraint(o_.bias_constraint);
  c["dropout"] = o_.dropout;
  c["recurrent_dropout"] = o_.recurrent_dropout;
  c["seed"] = nullptr;
  return ser::dumps(c);
}

namespace {

std::shared_ptr<Layer> conv_lstm_from(int rank, const json& c) {
  const std::string cls = "ConvLSTM" + std::to_string(rank) + "D";
  const std::string what = cls + " " + ser::name_of(c);
  if (ser::value_or(c, "unroll", false)) ser::unsupported(cls + " unroll", "true", "false (the steps are ops either way)");
  ConvLSTMOptions o;
  o.name = ser::name_of(c);
  o.strides = detail::conv_ints_from(c, "strides", rank, 1, what);
  o.padding = ser::value_or<std::string>(c, "padding", "valid");
  o.data_format = ser::value_or<std::string>(c, "data_format", "channels_last");
  o.dilation_rate = detail::conv_ints_from(c, "dilation_rate", rank, 1, what);
  // The cell's arguments as every recurrent layer reads them.
  const RecurrentOptions r = detail::recurrent_from(c, cls);
  o.activation = r.activation, o.recurrent_activation = r.recurrent_activation, o.use_bias = r.use_bias;
  o.kernel_initializer = r.kernel_initializer, o.recurrent_initializer = r.recurrent_initializer;
  o.bias_initializer = r.bias_initializer, o.unit_forget_bias = r.unit_forget_bias;
  o.kernel_regularizer = r.kernel_regularizer, o.recurrent_regularizer = r.recurrent_regularizer;
  o.bias_regularizer = r.bias_regularizer, o.kernel_constraint = r.kernel_constraint;
  o.recurrent_constraint = r.recurrent_constraint, o.bias_constraint = r.bias_constraint;
  o.dropout = r.dropout, o.recurrent_dropout = r.recurrent_dropout;
  o.return_sequences = ser::value_or(c, "return_sequences", false);
  o.return_state = ser::value_or(c, "return_state", false);
  o.go_backwards = ser::value_or(c, "go_backwards", false);
  o.stateful = ser::value_or(c, "stateful", false);
  const int64_t filters = ser::integer(c, "filters", 1, int64_t{1} << 24, what);
  const Ints kernel = detail::conv_ints_from(c, "kernel_size", rank, 1, what);
  if (rank == 1) return std::make_shared<ConvLSTM1D>(filters, kernel, std::move(o));
  if (rank == 2) return std::make_shared<ConvLSTM2D>(filters, kernel, std::move(o));
  return std::make_shared<ConvLSTM3D>(filters, kernel, std::move(o));
}

}  // namespace

OSPREY_REGISTER_LAYERS(conv_lstm) {
  for (int rank = 1; rank <= 3; ++rank) {
    ser::LayerClass cls{true, [rank](const json& c) { return conv_lstm_from(rank, c); }};
    cls.initial_state_inputs = true;
    cls.call_arguments = [](const Layer&) { return json{{"training", false}, {"mask", nullptr}}; };
    ser::register_layer_class("ConvLSTM" + std::to_string(rank) + "D", std::move(cls));
  }
}

}  // namespace osprey::keras::layers
