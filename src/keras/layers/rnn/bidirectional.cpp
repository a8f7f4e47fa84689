// keras.layers.Bidirectional: two RNNs made from the given one's config (as Keras's wrapper makes them), the
// backward one's outputs flipped back into time order, merged.
#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/rnn.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using ser::json;

namespace {

std::string without_prefix(const std::string& s, const std::string& prefix) {
  return s.starts_with(prefix) ? s.substr(prefix.size()) : s;
}

// A new RNN from `layer`'s config with the given name and direction; zero_output_for_mask as Keras forces it.
std::shared_ptr<RNN> copy_of(const RNN& layer, const std::string& name, std::optional<bool> go_backwards) {
  json c = json::parse(layer.get_config());
  c["name"] = name;
  if (go_backwards) c["go_backwards"] = *go_backwards;
  c["zero_output_for_mask"] = layer.rnn_options().return_sequences;
  if (const auto use = layer.rnn_options().use_cudnn) c["use_cudnn"] = *use;  // not in configs, but the copies keep it
  auto made = std::dynamic_pointer_cast<RNN>(ser::layer_from_object(ser::object("keras.layers", layer.class_name(), c)));
  if (!made) throw ValueError(fmt::format("Bidirectional: could not copy layer '{}'", layer.name()));
  return made;
}

// x (batch, steps, features) with its steps in reverse order (ops.flip(x, axis=1)).
Tensor flip_steps(const Tensor& x) {
  const int64_t t = x.shape()[1];
  auto steps = osprey::ops::split(x, 1, std::vector<int64_t>(static_cast<std::size_t>(t), 1));
  std::reverse(steps.begin(), steps.end());
  return osprey::ops::concat(steps, 1);
}

}  // namespace

Bidirectional::Bidirectional(const std::shared_ptr<RNN>& layer, std::string merge_mode,
                             std::shared_ptr<RNN> backward_layer, std::string name)
    : Layer(name, "bidirectional"), merge_mode_(std::move(merge_mode)) {
  if (!layer) throw ValueError("Please initialize `Bidirectional` layer with a `keras.layers.Layer` instance (an RNN)");
  if (merge_mode_ != "concat" && merge_mode_ != "sum" && merge_mode_ != "mul" && merge_mode_ != "ave" &&
      !merge_mode_.empty()) {
    throw ValueError(fmt::format("Invalid merge mode. Received: {}. Merge mode should be one of {{\"sum\", \"mul\", "
                                 "\"ave\", \"concat\", None (\"\" in Osprey)}}",
                                 merge_mode_));
  }
  forward_ = copy_of(*layer, "forward_" + without_prefix(layer->name(), "forward_"), std::nullopt);
  backward_ = backward_layer ? copy_of(*backward_layer, backward_layer->name(), std::nullopt)
                             : copy_of(*layer, "backward_" + without_prefix(layer->name(), "backward_"), true);
  const auto &f = forward_->rnn_options(), &b = backward_->rnn_options();
  if (f.go_backwards == b.go_backwards) {
    throw ValueError(fmt::format("Forward layer and backward layer should have different `go_backwards` value. "
                                 "Received: forward_layer.go_backwards {}, backward_layer.go_backwards={}",
                                 f.go_backwards, b.go_backwards));
  }
  if (f.return_sequences != b.return_sequences) {
    throw ValueError(fmt::format("Forward layer and backward layer are expected to have the same value for attribute "
                                 "\"return_sequences\", got \"{}\" for forward layer and \"{}\" for backward layer",
                                 f.return_sequences, b.return_sequences));
  }
}

Shape Bidirectional::build(const Shape& input_shape) { return build(std::vector<Shape>{input_shape}); }

Shape Bidirectional::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.empty()) throw ValueError(fmt::format("Layer '{}' was called on no inputs", name_));
  const bool first = !forward_->built();
  const std::size_t half = (input_shapes.size() - 1) / 2;
  if ((input_shapes.size() - 1) % 2 != 0) {
    throw ValueError(fmt::format("Bidirectional '{}': the initial states must be the forward layer's and the "
                                 "backward layer's, as many each; received {}",
                                 name_, input_shapes.size() - 1));
  }
  std::vector<Shape> f_in{input_shapes[0]}, b_in{input_shapes[0]};
  for (std::size_t i = 0; i < half; ++i) {
    f_in.push_back(input_shapes[1 + i]);
    b_in.push_back(input_shapes[1 + half + i]);
  }
  const Shape fs = forward_->build(f_in), bs = backward_->build(b_in);
  if (first) {  // Keras's paths: "bidirectional/forward_lstm/lstm_cell/kernel"
    for (auto* v : variables()) v->set_path(name_ + "/" + v->path());
  }
  if (merge_mode_ != "concat" && !merge_mode_.empty() && fs != bs) {
    throw ValueError(fmt::format("Bidirectional '{}': merge_mode \"{}\" needs outputs of one shape; the layers give "
                                 "{} and {}",
                                 name_, merge_mode_, fs.to_string(), bs.to_string()));
  }
  output_shapes_.clear();
  if (merge_mode_.empty()) {
    output_shapes_ = {fs, bs};
  } else {
    output_shapes_ = {merge_mode_ == "concat" ? fs.with_dim(fs.rank() - 1, fs[-1] + bs[-1]) : fs};
  }
  if (forward_->rnn_options().return_state) {
    for (const RNN* l : {forward_.get(), backward_.get()}) {
      const auto shapes = l->output_shapes();
      output_shapes_.insert(output_shapes_.end(), shapes.begin() + 1, shapes.end());
    }
  }
  return finish_build(output_shapes_[0]);
}

int Bidirectional::num_outputs() const {
  const int states = forward_->rnn_options().return_state ? forward_->num_outputs() - 1 + backward_->num_outputs() - 1 : 0;
  return (merge_mode_.empty() ? 2 : 1) + states;
}

std::vector<Shape> Bidirectional::output_shapes() const { return output_shapes_; }

std::vector<Tensor> Bidirectional::run(const std::vector<Tensor>& inputs, bool training, const Tensor& mask) {
  if (!built_) {
    std::vector<Shape> shapes;
    for (const auto& t : inputs) {
      const auto d = t.shape().dims();
      shapes.push_back(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
    }
    build(shapes);
  }
  const std::size_t half = inputs.size() / 2;  // inputs: the sequence, then both layers' initial states
  const std::vector<Tensor> f_states(inputs.begin() + 1, inputs.begin() + 1 + static_cast<std::ptrdiff_t>(half));
  const std::vector<Tensor> b_states(inputs.begin() + 1 + static_cast<std::ptrdiff_t>(half), inputs.end());
  const bool states_used = forward_->rnn_options().return_state;
  const auto y = forward_->run(inputs[0], training, mask, f_states, states_used);
  const auto y_back = backward_->run(inputs[0], training, mask, b_states, states_used);
  Tensor y_rev = y_back[0];
  if (forward_->rnn_options().return_sequences) y_rev = flip_steps(y_rev);
  std::vector<Tensor> out;
  if (merge_mode_ == "concat") {
    out.push_back(osprey::ops::concat({y[0], y_rev}, -1));
  } else if (merge_mode_ == "sum") {
    out.push_back(osprey::ops::add(y[0], y_rev));
  } else if (merge_mode_ == "mul") {
    out.push_back(osprey::ops::mul(y[0], y_rev));
  } else if (merge_mode_ == "ave") {
    out.push_back(osprey::ops::div(osprey::ops::add(y[0], y_rev), Tensor::scalar(2.0)));
  } else {
    out = {y[0], y_rev};
  }
  if (forward_->rnn_options().return_state) {
    out.insert(out.end(), y.begin() + 1, y.end());
    out.insert(out.end(), y_back.begin() + 1, y_back.end());
  }
  return out;
}

Tensor Bidirectional::call_masked(const Tensor& inputs, bool training, const Tensor& mask) {
  return run({inputs}, training, mask)[0];
}
Tensor Bidirectional::call(const std::vector<Tensor>& inputs, bool training) { return run(inputs, training, Tensor())[0]; }
Tensor Bidirectional::call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>& masks) {
  return run(inputs, training, masks.empty() ? Tensor() : masks[0])[0];
}
std::vector<Tensor> Bidirectional::call_outputs(const std::vector<Tensor>& inputs, bool training) {
  return run(inputs, training, Tensor());
}
std::vector<Tensor> Bidirectional::call_outputs_masked(const std::vector<Tensor>& inputs, bool training,
                                                       const std::vector<Tensor>& masks,
                                                       std::vector<Tensor>& output_masks) {
  const Tensor mask = masks.empty() ? Tensor() : masks[0];
  auto out = run(inputs, training, mask);
  output_masks.assign(out.size(), Tensor());
  const Tensor m = compute_mask(inputs[0], mask);
  output_masks[0] = m;
  if (merge_mode_.empty()) output_masks[1] = m;
  return out;
}

Tensor Bidirectional::compute_mask(const Tensor&, const Tensor& mask) {
  return forward_->rnn_options().return_sequences ? mask : Tensor();
}
Tensor Bidirectional::compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks) {
  return compute_mask(inputs.at(0), masks.empty() ? Tensor() : masks[0]);
}

std::vector<Variable*> Bidirectional::variables() {
  auto out = forward_->variables();
  for (auto* v : backward_->variables()) out.push_back(v);
  return out;
}

void Bidirectional::append_trainable_variables(std::vector<Variable*>& out) {
  if (!trainable) return;
  forward_->append_trainable_variables(out);
  backward_->append_trainable_variables(out);
}

std::vector<Tensor> Bidirectional::regularization_losses() {
  auto out = forward_->regularization_losses();
  for (auto& p : backward_->regularization_losses()) out.push_back(p);
  return out;
}

void Bidirectional::apply_constraints() {
  forward_->apply_constraints();
  backward_->apply_constraints();
}

std::string Bidirectional::get_config() const {
  json c = ser::base_config(*this);
  c["merge_mode"] = merge_mode_.empty() ? json() : json(merge_mode_);
  c["layer"] = ser::object("keras.layers", forward_->class_name(), json::parse(forward_->get_config()));
  c["backward_layer"] = ser::object("keras.layers", backward_->class_name(), json::parse(backward_->get_config()));
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(bidirectional) {
  ser::LayerClass cls{true, [](const json& c) -> std::shared_ptr<Layer> {
    if (!c.contains("layer") || !c["layer"].is_object()) throw ValueError("Bidirectional: the config has no `layer`");
    auto layer = std::dynamic_pointer_cast<RNN>(ser::layer_from_object(c["layer"]));
    if (!layer) throw ValueError("Bidirectional: `layer` must be an RNN (SimpleRNN, LSTM, GRU, RNN) in Osprey");
    std::shared_ptr<RNN> backward;
    if (c.contains("backward_layer") && c["backward_layer"].is_object()) {
      backward = std::dynamic_pointer_cast<RNN>(ser::layer_from_object(c["backward_layer"]));
      if (!backward) throw ValueError("Bidirectional: `backward_layer` must be an RNN in Osprey");
    }
    const json mode = c.value("merge_mode", json("concat"));
    if (!mode.is_string() && !mode.is_null()) {
      ser::unsupported("Bidirectional merge_mode", mode.dump(), "concat, sum, mul, ave, null");
    }
    return std::make_shared<Bidirectional>(layer, mode.is_null() ? "" : mode.get<std::string>(), backward,
                                           ser::name_of(c));
  }};
  cls.initial_state_inputs = true;  // its inputs after the sequence are its call's initial_state, as an RNN's
  cls.call_arguments = [](const Layer&) { return json{{"mask", nullptr}}; };  // as Keras writes its nodes
  ser::register_layer_class("Bidirectional", std::move(cls));
}

}  // namespace osprey::keras::layers
