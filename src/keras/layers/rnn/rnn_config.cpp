// The recurrent layers' Keras configs both ways: the cells' (SimpleRNNCell, LSTMCell, GRUCell), RNN's (with its
// cell's nested), and SimpleRNN/LSTM/GRU's flat form (the RNN's entries and the cell's in one object).
#include <fmt/format.h>

#include "keras/layers/rnn/rnn_config.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/rnn.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using ser::json;

RecurrentOptions detail::recurrent_from(const json& c, const std::string& cls) {
  ser::refuse_set(c, {"activity_regularizer"}, cls, "the cell's arguments");
  RecurrentOptions o;
  if (c.contains("activation")) o.activation = ser::activation_from(c["activation"]);
  if (c.contains("recurrent_activation")) o.recurrent_activation = ser::activation_from(c["recurrent_activation"]);
  o.use_bias = ser::value_or(c, "use_bias", true);
  if (c.contains("kernel_initializer")) o.kernel_initializer = ser::initializer_from(c["kernel_initializer"]);
  if (c.contains("recurrent_initializer")) o.recurrent_initializer = ser::initializer_from(c["recurrent_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = ser::initializer_from(c["bias_initializer"]);
  o.unit_forget_bias = ser::value_or(c, "unit_forget_bias", true);
  o.reset_after = ser::value_or(c, "reset_after", true);
  o.kernel_regularizer = ser::regularizer_from(c.value("kernel_regularizer", json()));
  o.recurrent_regularizer = ser::regularizer_from(c.value("recurrent_regularizer", json()));
  o.bias_regularizer = ser::regularizer_from(c.value("bias_regularizer", json()));
  o.kernel_constraint = ser::constraint_from(c.value("kernel_constraint", json()));
  o.recurrent_constraint = ser::constraint_from(c.value("recurrent_constraint", json()));
  o.bias_constraint = ser::constraint_from(c.value("bias_constraint", json()));
  o.dropout = c.contains("dropout") ? ser::number(c, "dropout", 0.0, 1.0, cls) : 0.0;
  o.recurrent_dropout = c.contains("recurrent_dropout") ? ser::number(c, "recurrent_dropout", 0.0, 1.0, cls) : 0.0;
  return o;
}

namespace {

// The cell's arguments in Keras's order (the LSTM/GRU/SimpleRNN layers write the same after the RNN's entries).
void cell_entries(json& c, const RNNCell& cell, bool in_layer) {
  const RecurrentOptions& o = cell.options();
  const auto kind = cell.kind();
  c["units"] = cell.units();
  c["activation"] = o.activation;
  if (kind != RNNCell::Kind::simple) c["recurrent_activation"] = o.recurrent_activation;
  c["use_bias"] = o.use_bias;
  c["kernel_initializer"] = ser::initializer(o.kernel_initializer);
  c["recurrent_initializer"] = ser::initializer(o.recurrent_initializer);
  c["bias_initializer"] = ser::initializer(o.bias_initializer);
  if (kind == RNNCell::Kind::lstm) c["unit_forget_bias"] = o.unit_forget_bias;
  c["kernel_regularizer"] = ser::regularizer(o.kernel_regularizer);
  c["recurrent_regularizer"] = ser::regularizer(o.recurrent_regularizer);
  c["bias_regularizer"] = ser::regularizer(o.bias_regularizer);
  if (in_layer) c["activity_regularizer"] = nullptr;
  c["kernel_constraint"] = ser::constraint(o.kernel_constraint);
  c["recurrent_constraint"] = ser::constraint(o.recurrent_constraint);
  c["bias_constraint"] = ser::constraint(o.bias_constraint);
  c["dropout"] = o.dropout;
  c["recurrent_dropout"] = o.recurrent_dropout;
  if (kind == RNNCell::Kind::gru) c["reset_after"] = o.reset_after;
  c["seed"] = nullptr;
}

void rnn_entries(json& c, const RNNOptions& r) {
  c["return_sequences"] = r.return_sequences;
  c["return_state"] = r.return_state;
  c["go_backwards"] = r.go_backwards;
  c["stateful"] = r.stateful;
  c["unroll"] = r.unroll;
  c["zero_output_for_mask"] = r.zero_output_for_mask;
}


// Keras's use_cudnn argument: "auto" (or absent), true or false; not written by get_config, as in Keras.
std::optional<bool> use_cudnn_of(const json& c, const std::string& cls) {
  if (!c.contains("use_cudnn") || c.at("use_cudnn") == "auto") return std::nullopt;
  if (!c.at("use_cudnn").is_boolean()) {
    throw ValueError(fmt::format("Invalid valid received for argument `use_cudnn`. Expected one of {{'auto', True, "
                                 "False}}. Received: use_cudnn={} ({})",
                                 c.at("use_cudnn").dump(), cls));
  }
  return c.at("use_cudnn").get<bool>();
}

RNNOptions rnn_from(const json& c, const std::string& cls) {
  return {.return_sequences = ser::value_or(c, "return_sequences", false),
          .return_state = ser::value_or(c, "return_state", false),
          .go_backwards = ser::value_or(c, "go_backwards", false),
          .stateful = ser::value_or(c, "stateful", false),
          .unroll = ser::value_or(c, "unroll", false),
          .zero_output_for_mask = ser::value_or(c, "zero_output_for_mask", false),
          .use_cudnn = use_cudnn_of(c, cls),
          .name = ser::name_of(c)};
}

int64_t units_of(const json& c, const std::string& cls) { return ser::integer(c, "units", 1, int64_t{1} << 20, cls); }

}  // namespace

std::string RNNCell::get_config() const {
  json c = ser::base_config(*this);
  cell_entries(c, *this, false);
  return ser::dumps(c);
}

std::string RNN::flat_config() const {
  json c = ser::base_config(*this);
  rnn_entries(c, r_);
  cell_entries(c, *cell_, true);
  return ser::dumps(c);
}

std::string RNN::get_config() const {
  json c = ser::base_config(*this);
  rnn_entries(c, r_);
  c["cell"] = ser::object("keras.layers", cell_->class_name(), json::parse(cell_->get_config()));
  return ser::dumps(c);
}

namespace {

// A recurrent layer's class: built, its inputs after the sequence are its call's initial_state.
ser::LayerClass recurrent_class(std::function<std::shared_ptr<Layer>(const json&)> from_config) {
  ser::LayerClass cls{true, std::move(from_config)};
  cls.initial_state_inputs = true;
  cls.call_arguments = [](const Layer&) { return json{{"training", false}, {"mask", nullptr}}; };  // as Keras writes
  return cls;
}

}  // namespace

OSPREY_REGISTER_LAYERS(rnn) {
  ser::register_layer_class("SimpleRNN", recurrent_class([](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<SimpleRNN>(units_of(c, "SimpleRNN"), detail::recurrent_from(c, "SimpleRNN"), rnn_from(c, "SimpleRNN"));
  }));
  ser::register_layer_class("LSTM", recurrent_class([](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<LSTM>(units_of(c, "LSTM"), detail::recurrent_from(c, "LSTM"), rnn_from(c, "LSTM"));
  }));
  ser::register_layer_class("GRU", recurrent_class([](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<GRU>(units_of(c, "GRU"), detail::recurrent_from(c, "GRU"), rnn_from(c, "GRU"));
  }));
  for (const char* cls : {"SimpleRNNCell", "LSTMCell", "GRUCell"}) {
    ser::register_layer_class(cls, {true, [cls = std::string(cls)](const json& c) -> std::shared_ptr<Layer> {
      RecurrentOptions o = detail::recurrent_from(c, cls);
      o.name = ser::name_of(c);
      const int64_t units = units_of(c, cls);
      if (cls == "LSTMCell") return std::make_shared<LSTMCell>(units, std::move(o));
      if (cls == "GRUCell") return std::make_shared<GRUCell>(units, std::move(o));
      return std::make_shared<SimpleRNNCell>(units, std::move(o));
    }});
  }
  ser::register_layer_class("RNN", recurrent_class([](const json& c) -> std::shared_ptr<Layer> {
    if (!c.contains("cell") || !c["cell"].is_object()) throw ValueError("RNN: the config has no `cell` object");
    auto cell = std::dynamic_pointer_cast<RNNCell>(ser::layer_from_object(c["cell"]));
    if (!cell) {
      throw ValueError("RNN: the `cell` must be a SimpleRNNCell, LSTMCell, GRUCell or StackedRNNCells in Osprey "
                       "(cells of your own are not implemented yet)");
    }
    return std::make_shared<RNN>(std::move(cell), rnn_from(c, "RNN"));
  }));
}

}  // namespace osprey::keras::layers
