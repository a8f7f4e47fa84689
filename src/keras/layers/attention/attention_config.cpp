// The attention layers' Keras configs, both ways, and their registration (MultiHeadAttention's inbound nodes take
// query and value as positional arguments, its build_config names their shapes, use_causal_mask is a call argument).
#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/attention.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using ser::json;

namespace {

json optional_int(const std::optional<int64_t>& v) { return v ? json(*v) : json(); }

// The entries MultiHeadAttention's and GroupedQueryAttention's configs end with, in Keras's order.
void weight_entries(json& c, const MultiHeadAttentionOptions& o) {
  c["kernel_initializer"] = ser::initializer(o.kernel_initializer);
  c["bias_initializer"] = ser::initializer(o.bias_initializer);
  c["kernel_regularizer"] = ser::regularizer(o.kernel_regularizer);
  c["bias_regularizer"] = ser::regularizer(o.bias_regularizer);
  c["activity_regularizer"] = nullptr;
  c["kernel_constraint"] = ser::constraint(o.kernel_constraint);
  c["bias_constraint"] = ser::constraint(o.bias_constraint);
  c["seed"] = optional_int(o.seed);
}

}  // namespace

std::string MultiHeadAttention::get_config() const {
  json c = ser::base_config(*this);
  c["num_heads"] = num_heads_;
  c["key_dim"] = key_dim_;
  c["value_dim"] = value_dim_;
  c["dropout"] = o_.dropout;
  c["use_bias"] = o_.use_bias;
  c["use_gate"] = o_.use_gate;
  c["output_shape"] = o_.output_shape.empty() ? json() : json(o_.output_shape);
  const auto axes = attention_axes();
  c["attention_axes"] = axes.empty() ? json() : json(axes);
  c["sliding_window"] = optional_int(o_.sliding_window);
  weight_entries(c, o_);
  return ser::dumps(c);
}

std::string GroupedQueryAttention::get_config() const {
  const auto& o = options();
  json c = ser::base_config(*this);
  c["head_dim"] = key_dim();
  c["num_query_heads"] = num_heads();
  c["num_key_value_heads"] = kv_heads_;
  c["use_bias"] = o.use_bias;
  c["use_gate"] = o.use_gate;
  c["sliding_window"] = optional_int(o.sliding_window);
  c["dropout"] = o.dropout;
  weight_entries(c, o);
  return ser::dumps(c);
}

std::string Attention::get_config() const {
  json c = ser::base_config(*this);
  c["use_scale"] = o_.use_scale;
  if (class_name() == "Attention") c["score_mode"] = o_.score_mode;
  c["dropout"] = o_.dropout;
  c["seed"] = optional_int(o_.seed);
  return ser::dumps(c);
}

namespace {

// Keras's call arguments of Attention/AdditiveAttention nodes: use_causal_mask (one value for every call).
bool read_attention_argument(Layer& layer, const std::string& key, const json& v) {
  auto& a = static_cast<Attention&>(layer);
  if (key == "use_causal_mask" && v.is_boolean()) {
    if (a.built() && a.options().use_causal_mask != v.get<bool>()) {
      ser::unsupported(a.class_name() + " call argument", "use_causal_mask differing between the calls of '" + a.name() + "'",
                       "one value for every call of a layer");
    }
    a.set_use_causal_mask(v.get<bool>());
    return true;
  }
  return key == "return_attention_scores" && v.is_boolean() && !v.get<bool>();
}

json attention_arguments(const Layer& layer) {
  return static_cast<const Attention&>(layer).options().use_causal_mask ? json{{"use_causal_mask", true}} : json::object();
}

}  // namespace

namespace {

// The options MultiHeadAttention and GroupedQueryAttention share, from a config.
MultiHeadAttentionOptions shared_options(const json& c, const std::string& what) {
  MultiHeadAttentionOptions o;
  o.name = ser::name_of(c);
  if (c.contains("dropout") && !c["dropout"].is_null()) o.dropout = ser::number(c, "dropout", 0.0, 0.999999, what);
  o.use_bias = ser::value_or(c, "use_bias", true);
  o.use_gate = ser::value_or(c, "use_gate", false);
  if (c.contains("sliding_window") && !c["sliding_window"].is_null()) {
    o.sliding_window = ser::integer(c, "sliding_window", 1, int64_t{1} << 31, what);
  }
  if (c.contains("kernel_initializer")) o.kernel_initializer = ser::initializer_from(c["kernel_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = ser::initializer_from(c["bias_initializer"]);
  o.kernel_regularizer = ser::regularizer_from(c.value("kernel_regularizer", json()));
  o.bias_regularizer = ser::regularizer_from(c.value("bias_regularizer", json()));
  o.kernel_constraint = ser::constraint_from(c.value("kernel_constraint", json()));
  o.bias_constraint = ser::constraint_from(c.value("bias_constraint", json()));
  if (c.contains("seed") && !c["seed"].is_null()) o.seed = ser::integer(c, "seed", 0, int64_t{1} << 62, what);
  return o;
}

}  // namespace

OSPREY_REGISTER_LAYERS(attention) {
  for (const char* cls : {"Attention", "AdditiveAttention"}) {
    const bool additive = std::string(cls) == "AdditiveAttention";
    ser::LayerClass a{true, [additive](const json& c) -> std::shared_ptr<Layer> {
      const std::string name = ser::name_of(c);
      const double dropout = c.contains("dropout") && !c["dropout"].is_null()
                                 ? ser::number(c, "dropout", 0.0, 0.999999, "Attention " + name)
                                 : 0.0;
      if (additive) return std::make_shared<AdditiveAttention>(ser::value_or(c, "use_scale", true), dropout, name);
      Attention::Options o;
      o.name = name;
      o.use_scale = ser::value_or(c, "use_scale", false);
      o.dropout = dropout;
      o.score_mode = ser::value_or(c, "score_mode", std::string("dot"));
      if (c.contains("seed") && !c["seed"].is_null()) o.seed = ser::integer(c, "seed", 0, int64_t{1} << 62, "Attention " + name);
      return std::make_shared<Attention>(o);
    }};
    a.read_call_argument = read_attention_argument;
    a.call_arguments = attention_arguments;
    ser::register_layer_class(cls, a);
  }

  ser::LayerClass mha{true, [](const json& c) -> std::shared_ptr<Layer> {
    const std::string what = "MultiHeadAttention " + ser::name_of(c);
    ser::refuse_set(c, {"activity_regularizer", "flash_attention"}, "MultiHeadAttention",
                    "kernel/bias regularizers and constraints");
    MultiHeadAttentionOptions o = shared_options(c, what);
    if (c.contains("value_dim") && !c["value_dim"].is_null()) o.value_dim = ser::integer(c, "value_dim", 1, 1 << 20, what);
    if (c.contains("output_shape") && !c["output_shape"].is_null()) {
      o.output_shape = c["output_shape"].is_number_integer()
                           ? std::vector<int64_t>{ser::integer(c, "output_shape", 1, 1 << 20, what)}
                           : ser::integers(c, "output_shape", 1, 1 << 20, what, 4);
    }
    if (c.contains("attention_axes") && !c["attention_axes"].is_null()) {
      o.attention_axes = c["attention_axes"].is_number_integer()
                             ? std::vector<int64_t>{ser::integer(c, "attention_axes", -64, 64, what)}
                             : ser::integers(c, "attention_axes", -64, 64, what, 8);
    }
    return std::make_shared<MultiHeadAttention>(ser::integer(c, "num_heads", 1, 1 << 16, what),
                                                ser::integer(c, "key_dim", 1, 1 << 20, what), o);
  }};
  mha.positional_inputs = true;
  mha.build_shape_names = {"query_shape", "value_shape", "key_shape"};
  mha.read_call_argument = [](Layer& layer, const std::string& key, const json& v) {
    auto& m = static_cast<MultiHeadAttention&>(layer);
    if (key == "use_causal_mask" && v.is_boolean()) {
      if (m.built() && m.options().use_causal_mask != v.get<bool>()) {
        ser::unsupported("MultiHeadAttention call argument", "use_causal_mask differing between the calls of '" +
                         m.name() + "'", "one value for every call of a layer");
      }
      m.set_use_causal_mask(v.get<bool>());
      return true;
    }
    if (key == "attention_mask" && (v.is_null() || ser::is_keras_tensor(v))) {  // a tensor of the graph: the last input
      if (m.built() && m.options().attention_mask_input != !v.is_null()) {
        ser::unsupported("MultiHeadAttention call argument", "attention_mask given in some calls of '" + m.name() +
                         "' and not in others", "an attention mask in every call of a layer, or in none");
      }
      m.set_attention_mask_input(!v.is_null());
      return true;
    }
    if (key == "return_attention_scores" && v.is_boolean()) {
      if (m.built() && m.options().return_attention_scores != v.get<bool>()) {
        ser::unsupported("MultiHeadAttention call argument", "return_attention_scores differing between the calls "
                         "of '" + m.name() + "'", "one value for every call of a layer");
      }
      m.set_return_attention_scores(v.get<bool>());
      return true;
    }
    return false;
  };
  mha.call_arguments = [](const Layer& layer) {
    const auto& m = static_cast<const MultiHeadAttention&>(layer);
    json args = json::object();
    if (m.options().use_causal_mask) args["use_causal_mask"] = true;
    if (m.options().return_attention_scores) args["return_attention_scores"] = true;
    return args;
  };
  mha.last_input_keyword = [](const Layer& layer) {
    return static_cast<const MultiHeadAttention&>(layer).options().attention_mask_input ? "attention_mask" : "";
  };
  ser::register_layer_class("MultiHeadAttention", mha);
  ser::LayerClass gqa = mha;
  gqa.from_config = [](const json& c) -> std::shared_ptr<Layer> {
    const std::string what = "GroupedQueryAttention " + ser::name_of(c);
    ser::refuse_set(c, {"activity_regularizer", "flash_attention"}, "GroupedQueryAttention",
                    "kernel/bias regularizers and constraints");
    return std::make_shared<GroupedQueryAttention>(ser::integer(c, "head_dim", 1, 1 << 20, what),
                                                   ser::integer(c, "num_query_heads", 1, 1 << 16, what),
                                                   ser::integer(c, "num_key_value_heads", 1, 1 << 16, what),
                                                   shared_options(c, what));
  };
  ser::register_layer_class("GroupQueryAttention", gqa);
}

}  // namespace osprey::keras::layers
