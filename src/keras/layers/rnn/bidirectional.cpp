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
  auto made = std::dynamic_pointer_cast<RNN>(ser::layer_from_object(ser::object("keras.layers", layer.class_name(), c)));
  if (!made) throw ValueError(fmt::format("Bidirectional: could not copy layer '{}'", layer.name()));
  return made;
}

// x (batch, steps, features) with its steps in reverse order (ops.flip(x, axis=1)).
Tensor flip_steps(const Tensor& x) {
  const int64_t t = x.shape()[1];
  auto steps = ops::split(x, 1, std::vector<int64_t>(static_cast<std::size_t>(t), 1));
  std::reverse(steps.begin(), steps.end());
  return ops::concat(steps, 1);
}

}  // namespace

Bidirectional::Bidirectional(const std::shared_ptr<RNN>& layer, std::string merge_mode,
                             std::shared_ptr<RNN> backward_layer, std::string name)
    : Layer(name, "bidirectional"), merge_mode_(std::move(merge_mode)) {
  if (!layer) throw ValueError("Please initialize `Bidirectional` layer with a `keras.layers.Layer` instance (an RNN)");
  if (merge_mode_ != "concat" && merge_mode_ != "sum" && merge_mode_ != "mul" && merge_mode_ != "ave") {
    throw ValueError(fmt::format("Invalid merge mode. Received: {}. Merge mode should be one of {{\"sum\", \"mul\", "
                                 "\"ave\", \"concat\"}} in Osprey (None, the two outputs as a list, is not "
                                 "implemented)",
                                 merge_mode_.empty() ? "None" : merge_mode_));
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

Shape Bidirectional::build(const Shape& input_shape) {
  const bool first = !forward_->built();
  const Shape fs = forward_->build(input_shape), bs = backward_->build(input_shape);
  if (first) {  // Keras's paths: "bidirectional/forward_lstm/lstm_cell/kernel"
    for (auto* v : variables()) v->set_path(name_ + "/" + v->path());
  }
  if (merge_mode_ != "concat" && fs != bs) {
    throw ValueError(fmt::format("Bidirectional '{}': merge_mode \"{}\" needs outputs of one shape; the layers give "
                                 "{} and {}",
                                 name_, merge_mode_, fs.to_string(), bs.to_string()));
  }
  return finish_build(merge_mode_ == "concat" ? fs.with_dim(fs.rank() - 1, fs[-1] + bs[-1]) : fs);
}

Tensor Bidirectional::call_masked(const Tensor& inputs, bool training, const Tensor& mask) {
  if (!built_) {
    const auto d = inputs.shape().dims();
    build(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  }
  const Tensor y = forward_->call_masked(inputs, training, mask);
  Tensor y_rev = backward_->call_masked(inputs, training, mask);
  if (forward_->rnn_options().return_sequences) y_rev = flip_steps(y_rev);
  if (merge_mode_ == "concat") return ops::concat({y, y_rev}, -1);
  if (merge_mode_ == "sum") return ops::add(y, y_rev);
  if (merge_mode_ == "mul") return ops::mul(y, y_rev);
  return ops::div(ops::add(y, y_rev), Tensor::scalar(2.0));
}

Tensor Bidirectional::compute_mask(const Tensor&, const Tensor& mask) {
  return forward_->rnn_options().return_sequences ? mask : Tensor();
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
  c["merge_mode"] = merge_mode_;
  c["layer"] = ser::object("keras.layers", forward_->class_name(), json::parse(forward_->get_config()));
  c["backward_layer"] = ser::object("keras.layers", backward_->class_name(), json::parse(backward_->get_config()));
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(bidirectional) {
  ser::register_layer_class("Bidirectional", {true, [](const json& c) -> std::shared_ptr<Layer> {
    if (!c.contains("layer") || !c["layer"].is_object()) throw ValueError("Bidirectional: the config has no `layer`");
    auto layer = std::dynamic_pointer_cast<RNN>(ser::layer_from_object(c["layer"]));
    if (!layer) throw ValueError("Bidirectional: `layer` must be an RNN (SimpleRNN, LSTM, GRU, RNN) in Osprey");
    std::shared_ptr<RNN> backward;
    if (c.contains("backward_layer") && c["backward_layer"].is_object()) {
      backward = std::dynamic_pointer_cast<RNN>(ser::layer_from_object(c["backward_layer"]));
      if (!backward) throw ValueError("Bidirectional: `backward_layer` must be an RNN in Osprey");
    }
    const json mode = c.value("merge_mode", json("concat"));
    if (!mode.is_string()) ser::unsupported("Bidirectional merge_mode", mode.dump(), "concat, sum, mul, ave");
    return std::make_shared<Bidirectional>(layer, mode.get<std::string>(), backward, ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
