// A model's config both ways, in Keras 3's layout (keras/src/models/functional.py get_config and
// functional_from_config, sequential.py): a functional model's layers with their inbound nodes, input_layers and
// output_layers; a Sequential's layer list. Sequential and Functional are registered layer classes, so models nest.
#include <deque>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "keras/models/model_state.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/saving.h"

namespace osprey::keras {

namespace ser = serialization;
using ser::json;

namespace {

json batch_shape(const Shape& s, std::optional<int64_t> batch_size) {
  json a = ser::shape_with_batch(s);
  if (batch_size) a[0] = *batch_size;
  return a;
}

json input_layer_object(const Node& n) {
  json o = ser::object("keras.layers", "InputLayer",
                       json{{"batch_shape", batch_shape(n.shapes.at(0), n.batch_size)},
                            {"dtype", dtype_name(n.dtype)},
                            {"sparse", false},
                            {"ragged", false},
                            {"name", n.name},
                            {"optional", false}});
  o["name"] = n.name;
  o["inbound_nodes"] = json::array();
  return o;
}

/// [layer name, node index, tensor index]: where a tensor of the graph comes from.
json history(const KerasTensor& t, const std::map<const Node*, int>& node_index) {
  return json::array({t.node()->layer->name(), node_index.at(t.node().get()), t.index()});
}

json tensor_ref(const KerasTensor& t, const std::map<const Node*, int>& node_index) {
  return json{{"class_name", "__keras_tensor__"},
              {"config",
               json{{"shape", batch_shape(t.shape(), t.node()->batch_size)},
                    {"dtype", dtype_name(t.dtype())},
                    {"keras_history", history(t, node_index)}}}};
}

json structure(const std::vector<KerasTensor>& ts, const std::vector<std::string>& names, bool named, bool single,
               const std::map<const Node*, int>& node_index) {
  if (single && ts.size() == 1) return history(ts[0], node_index);
  if (named) {
    json d = json::object();
    for (std::size_t i = 0; i < ts.size(); ++i) d[names[i]] = history(ts[i], node_index);
    return d;
  }
  json a = json::array();
  for (const auto& t : ts) a.push_back(history(t, node_index));
  return a;
}

json functional_config(const Model& m) {
  const Graph& g = *m.state().graph;
  // Each call of a layer within this model is one of its nodes, numbered in the graph's order.
  std::map<const Node*, int> node_index;
  std::map<const Layer*, std::vector<const Node*>> nodes_of;
  for (const auto& step : g.steps) {
    auto& list = nodes_of[step.node->layer.get()];
    node_index[step.node] = static_cast<int>(list.size());
    list.push_back(step.node);
  }
  json layers = json::array();
  for (const auto& layer : m.layers()) {
    const auto& nodes = nodes_of.at(layer.get());
    if (nodes.front()->is_input()) {
      layers.push_back(input_layer_object(*nodes.front()));
      continue;
    }
    std::vector<Shape> shapes;
    for (const auto& t : nodes.front()->inputs) shapes.push_back(t.shape());
    json o = ser::layer_object(*layer, shapes);
    o["name"] = layer->name();
    json inbound = json::array();
    const bool is_model = dynamic_cast<const Model*>(layer.get()) != nullptr;
    const ser::LayerClass* cls = is_model ? nullptr : ser::find_layer_class(layer->class_name());
    const std::string keyword = cls && cls->last_input_keyword ? cls->last_input_keyword(*layer) : "";
    for (const Node* n : nodes) {
      json args = json::array();
      json kwargs = is_model ? json{{"mask", nullptr}}
                    : cls && cls->call_arguments ? cls->call_arguments(*layer) : json::object();
      if (!keyword.empty() && n->inputs.size() > 1) {  // mha(q, v, attention_mask=m): the last input by name
        for (std::size_t k = 0; k + 1 < n->inputs.size(); ++k) args.push_back(tensor_ref(n->inputs[k], node_index));
        kwargs[keyword] = tensor_ref(n->inputs.back(), node_index);
      } else if (cls && cls->initial_state_inputs && n->inputs.size() > 1) {  // rnn(x, initial_state=[h, c])
        args.push_back(tensor_ref(n->inputs[0], node_index));
        json states = json::array();
        for (std::size_t k = 1; k < n->inputs.size(); ++k) states.push_back(tensor_ref(n->inputs[k], node_index));
        kwargs = json{{"initial_state", states}};  // Keras records no mask or training argument then
      } else if (cls && cls->positional_inputs) {
        for (const auto& t : n->inputs) args.push_back(tensor_ref(t, node_index));
      } else if (n->inputs.size() == 1 && layer->num_inputs() == 1) {
        args.push_back(tensor_ref(n->inputs[0], node_index));
      } else {
        json list = json::array();
        for (const auto& t : n->inputs) list.push_back(tensor_ref(t, node_index));
        args.push_back(list);
      }
      for (const auto& [key, value] : n->arguments) kwargs[key] = value;  // reverse=True
      inbound.push_back(json{{"args", args}, {"kwargs", kwargs}});
    }
    o["inbound_nodes"] = inbound;
    layers.push_back(o);
  }
  return json{{"name", m.name()},
              {"trainable", m.trainable},
              {"layers", layers},
              {"input_layers", structure(g.inputs, g.input_names, g.inputs_named, g.inputs_single, node_index)},
              {"output_layers", structure(g.outputs, g.output_names, g.outputs_named, g.outputs_single, node_index)}};
}

json sequential_config(const Sequential& m) {
  json layers = json::array();
  const auto in = m.input_shape();
  if (in) {
    layers.push_back(ser::object("keras.layers", "InputLayer",
                                 json{{"batch_shape", ser::shape_with_batch(*in)},
                                      {"dtype", "float32"},
                                      {"sparse", false},
                                      {"ragged", false},
                                      {"name", m.state().input ? m.state().input->name() : "input_layer"},
                                      {"optional", false}}));
  }
  Shape shape = in.value_or(Shape{});
  for (const auto& l : m.layers()) {
    layers.push_back(ser::layer_object(*l, {shape}));
    if (l->built()) shape = l->output_shape();
  }
  json cfg{{"name", m.name()}, {"trainable", m.trainable}, {"dtype", ser::dtype_policy(m.dtype_policy().name())},
           {"layers", layers}};
  if (in) cfg["build_input_shape"] = ser::shape_with_batch(*in);
  return cfg;
}

// ---- from a config ----

/// Layer name -> the outputs of each of its nodes, in order.
using MadeNodes = std::map<std::string, std::vector<std::vector<KerasTensor>>>;

/// The tensor that [layer name, node index, tensor index] names, once that node was made.
const KerasTensor* find_tensor(const json& ref, const MadeNodes& made, const std::string& model) {
  if (!ref.is_array() || ref.size() != 3 || !ref[0].is_string() || !ref[1].is_number_integer() ||
      !ref[2].is_number_integer()) {
    throw ValueError(fmt::format("model_from_json: model '{}': a tensor reference must be [layer name, node index, "
                                 "tensor index], got {}",
                                 model, ref.dump().substr(0, 200)));
  }
  auto it = made.find(ref[0].get<std::string>());
  if (it == made.end()) return nullptr;
  const int64_t node = ref[1].get<int64_t>(), index = ref[2].get<int64_t>();
  if (node < 0 || node >= static_cast<int64_t>(it->second.size())) return nullptr;
  const auto& outputs = it->second[static_cast<std::size_t>(node)];
  if (index < 0 || index >= static_cast<int64_t>(outputs.size())) {
    throw ValueError(fmt::format("model_from_json: model '{}': tensor {} is output {} of its layer's call, which has "
                                 "{} output(s)",
                                 model, ref.dump(), index, outputs.size()));
  }
  return &outputs[static_cast<std::size_t>(index)];
}

/// The keras_history of an inbound node's argument (a __keras_tensor__).
const json& history_of(const json& arg, const std::string& layer) {
  if (!arg.is_object() || arg.value("class_name", "") != "__keras_tensor__" || !arg.contains("config") ||
      !arg["config"].is_object() || !arg["config"].contains("keras_history")) {
    throw ValueError(fmt::format("model_from_json: layer '{}' is called on {}, which is not a tensor of the model "
                                 "(Osprey reads calls on tensors and lists of tensors)",
                                 layer, arg.dump().substr(0, 200)));
  }
  return arg["config"]["keras_history"];
}

std::shared_ptr<Layer> functional_from_config(const json& c) {
  const std::string name = ser::name_of(c);
  for (const char* key : {"layers", "input_layers", "output_layers"}) {
    if (!c.contains(key)) {
      throw ValueError(fmt::format("model_from_json: the functional model '{}' has no \"{}\" in its config (not a "
                                   "Keras functional config)",
                                   name, key));
    }
  }
  const json& list = c.at("layers");
  if (!list.is_array()) throw ValueError("model_from_json: a functional config's \"layers\" must be a list");
  MadeNodes made;
  struct Pending {
    std::shared_ptr<Layer> layer;
    std::deque<const json*> nodes;
  };
  std::vector<Pending> pending;
  // Keras records the mask of an Embedding(mask_zero=True) as a NotEqual(ids, 0) operation node, and a Masking
  // layer's as Any(NotEqual(x, mask_value), axis=-1), passed to the layers whose call takes a mask (RNNs,
  // GlobalAveragePooling1D) as their `mask` argument. Osprey propagates those same masks by itself: such nodes and
  // arguments are checked, then left out.
  std::map<std::string, json> not_equal;      // mask node name -> the history of the tensor it was computed from
  std::map<std::string, std::pair<json, json>> compared;  // NotEqual node -> (its input's history, the value)
  std::set<std::string> mask_zero_inputs;     // the histories (dumped) of the tensors mask_zero Embeddings take
  std::set<std::pair<std::string, double>> masking_inputs;  // the histories (dumped) Masking layers take, their value
  // A string field of an object, or "" (a crafted config may put anything anywhere).
  auto text_of = [](const json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  for (const auto& lj : list) {
    if (!lj.is_object()) continue;
    const std::string cls = text_of(lj, "class_name");
    const json nodes = lj.contains("inbound_nodes") ? lj["inbound_nodes"] : json::array();
    const json cfg = lj.contains("config") ? lj["config"] : json::object();
    if (cls == "NotEqual") {
      const std::string op = text_of(cfg, "name");
      if (!nodes.is_array() || nodes.size() != 1 || !nodes[0].is_object() || !nodes[0].value("args", json()).is_array() ||
          nodes[0]["args"].size() != 2 || !nodes[0]["args"][1].is_number()) {
        ser::unsupported("operation", "NotEqual other than an Embedding's or a Masking layer's mask", "Keras layers");
      }
      compared[op] = {history_of(nodes[0]["args"][0], op), nodes[0]["args"][1]};
    } else if (cls == "Masking" && nodes.is_array()) {
      const json value = cfg.is_object() ? cfg.value("mask_value", json(0.0)) : json(0.0);
      for (const auto& n : nodes) {
        const json args = n.is_object() ? n.value("args", json()) : n;
        if (args.is_array() && args.size() == 1 && value.is_number()) {
          masking_inputs.insert({history_of(args[0], "Masking").dump(), value.get<double>()});
        }
      }
    } else if ((cls == "Embedding" || cls == "ReversibleEmbedding") && cfg.is_object() && cfg.contains("mask_zero") &&
               cfg["mask_zero"] == json(true) && nodes.is_array()) {
      for (const auto& n : nodes) {
        const json args = n.is_object() ? n.value("args", json()) : n;
        const bool reverse = n.is_object() && n.contains("kwargs") && n["kwargs"].is_object() &&
                             n["kwargs"].value("reverse", json(false)) == json(true);  // a projection: no mask
        if (args.is_array() && args.size() == 1 && !reverse) {
          mask_zero_inputs.insert(history_of(args[0], "Embedding").dump());
        }
      }
    }
  }
  // An Embedding's mask is the NotEqual itself; a Masking layer's, the Any over the NotEqual of its input.
  std::set<std::string> masking_compares;
  for (const auto& [op, c] : compared) {
    if (c.second == json(0) && mask_zero_inputs.count(c.first.dump())) {
      not_equal[op] = c.first;
    } else if (masking_inputs.count({c.first.dump(), c.second.get<double>()})) {
      masking_compares.insert(op);
    } else {
      ser::unsupported("operation", "NotEqual '" + op + "' (not the mask of an Embedding with mask_zero or of a Masking "
                       "layer)", "Keras layers");
    }
  }
  // The operation node of class `cls` that takes one tensor: the name of the node that made that tensor, or "".
  auto single_input_of = [&](const json& lj, const char* cls) {
    const json nodes = lj.contains("inbound_nodes") ? lj["inbound_nodes"] : json::array();
    const json args = nodes.is_array() && nodes.size() == 1 && nodes[0].is_object() ? nodes[0].value("args", json()) : json();
    const json h = args.is_array() && args.size() == 1 ? history_of(args[0], cls) : json();
    return h.is_array() && !h.empty() && h[0].is_string() ? h[0].get<std::string>() : std::string();
  };
  for (const auto& lj : list) {
    if (text_of(lj, "class_name") != "Any") continue;
    const json cfg = lj.contains("config") ? lj["config"] : json::object();
    const std::string from = single_input_of(lj, "Any");
    if (!(masking_compares.count(from) && cfg.is_object() && cfg.value("axis", json()) == json(-1) &&
          cfg.value("keepdims", json(false)) == json(false))) {
      ser::unsupported("operation", "Any other than a Masking layer's mask (any(x != mask_value, axis=-1))",
                       "Keras layers");
    }
    not_equal[text_of(cfg, "name")] = compared.at(from).first;
  }
  // Keras's Attention layers pass the query's mask on through ops.convert_to_tensor: ConvertToTensor nodes of such a
  // mask are the same mask (in the file's order, which is the graph's).
  for (const auto& lj : list) {
    if (text_of(lj, "class_name") != "ConvertToTensor") continue;
    const std::string from = single_input_of(lj, "ConvertToTensor");
    if (!not_equal.count(from)) {
      ser::unsupported("operation", "ConvertToTensor other than of an Embedding's or a Masking layer's mask",
                       "Keras layers");
    }
    not_equal[text_of(lj.contains("config") ? lj["config"] : json::object(), "name")] = not_equal.at(from);
  }
  for (const auto& lj : list) {
    const std::string op_class = text_of(lj, "class_name");
    if (op_class == "NotEqual" || op_class == "ConvertToTensor" || op_class == "Any") continue;
    const json& cfg = ser::config_of(lj, "a layer of model '" + name + "'");
    if (lj.value("class_name", "") == "InputLayer") {
      const json& shape = cfg.contains("batch_shape") ? cfg["batch_shape"] : cfg.value("batch_input_shape", json());
      ser::layer_from_object(lj);  // checks the InputLayer's options
      InputOptions options{.name = ser::name_of(cfg)};
      if (cfg.value("dtype", json("float32")) == json("int32")) options.dtype = DType::int32;
      if (cfg.value("dtype", json("float32")) == json("int64")) options.dtype = DType::int64;
      if (shape.is_array() && !shape.empty() && shape[0].is_number_integer()) {
        options.batch_size = shape[0].get<int64_t>();
      }
      const std::string key = lj.contains("name") && lj["name"].is_string() ? lj["name"].get<std::string>()
                                                                            : options.name;
      made[key].push_back({Input(ser::shape_without_batch(shape, "InputLayer batch_shape"), options)});
      continue;
    }
    Pending p{ser::layer_from_object(lj), {}};
    if (lj.contains("inbound_nodes")) {
      if (!lj["inbound_nodes"].is_array()) throw ValueError("model_from_json: \"inbound_nodes\" must be a list");
      for (const auto& n : lj["inbound_nodes"]) p.nodes.push_back(&n);
    }
    pending.push_back(std::move(p));
  }
  // Keras's order: a layer's nodes one after another; a node whose inputs are not made yet waits for the next pass
  // (with the nodes after it). Each pass makes at least one node, or the config is inconsistent.
  for (;;) {
    bool progress = false, left = false;
    for (auto& p : pending) {
      while (!p.nodes.empty()) {
        const json& node = *p.nodes.front();
        const json args = node.is_object() ? node.value("args", json()) : node;
        if (!args.is_array() || args.empty() || (args.size() > 1 && args[0].is_array()) || args.size() > 8) {
          throw ValueError(fmt::format("model_from_json: layer '{}': an inbound node's arguments must be a tensor, a "
                                       "list of tensors, or up to 8 tensors; got {}",
                                       p.layer->name(), node.dump().substr(0, 200)));
        }
        const json kwargs = node.is_object() ? node.value("kwargs", json::object()) : json::object();
        const ser::LayerClass* cls = ser::find_layer_class(p.layer->class_name());
        const json* initial_state = nullptr;
        const json* keyword_tensor = nullptr;  // the last input, given by name (attention_mask=m)
        Layer::CallArguments arguments;        // the node's own keyword arguments (reverse=True)
        for (const auto& [k, v] : kwargs.items()) {
          if (v.is_boolean() && p.layer->takes_call_argument(k)) {
            if (v.get<bool>()) arguments.emplace(k, true);
            continue;
          }
          if (cls && cls->read_call_argument && cls->read_call_argument(*p.layer, k, v)) {
            if (cls->last_input_keyword && cls->last_input_keyword(*p.layer) == k && ser::is_keras_tensor(v)) {
              keyword_tensor = &v;
            }
            continue;
          }
          if (k == "initial_state" && cls && cls->initial_state_inputs &&
              ((v.is_array() && !v.empty() && v.size() <= 8) || text_of(v, "class_name") == "__keras_tensor__")) {
            initial_state = &v;  // a list of tensors, or one (a single-state RNN's initial_state=h)
            continue;
          }
          bool derived_mask = false;
          if (k == "mask" && text_of(v, "class_name") == "__keras_tensor__") {
            const json& h = history_of(v, p.layer->name());
            derived_mask = h.is_array() && !h.empty() && h[0].is_string() && not_equal.count(h[0].get<std::string>());
          }
          if (!v.is_null() && !(k == "training" && v.is_boolean()) && !derived_mask) {
            ser::unsupported("layer call argument", k, "the inputs (mask: null)");
          }
        }
        std::vector<KerasTensor> inputs;
        bool ready = true;
        const bool is_list = args[0].is_array() || args.size() > 1;
        for (const auto& arg : args[0].is_array() ? args[0] : args) {
          const KerasTensor* t = find_tensor(history_of(arg, p.layer->name()), made, name);
          if (!t) {
            ready = false;
            break;
          }
          inputs.push_back(*t);
        }
        const json states = !initial_state ? json::array()
                            : initial_state->is_array() ? *initial_state : json::array({*initial_state});
        for (std::size_t k = 0; ready && k < states.size(); ++k) {
          const KerasTensor* t = find_tensor(history_of(states[k], p.layer->name()), made, name);
          if (!t) ready = false;
          if (t) inputs.push_back(*t);
        }
        if (ready && keyword_tensor) {
          const KerasTensor* t = find_tensor(history_of(*keyword_tensor, p.layer->name()), made, name);
          if (!t) ready = false;
          if (t) inputs.push_back(*t);
        }
        if (!ready) break;
        if (!arguments.empty()) {
          made[p.layer->name()].push_back({p.layer->call_with(inputs, arguments)});
        } else {
          made[p.layer->name()].push_back(is_list || initial_state || keyword_tensor ? p.layer->call_all(inputs)
                                                                                     : p.layer->call_all(inputs[0]));
        }
        p.nodes.pop_front();
        progress = true;
      }
      left = left || !p.nodes.empty();
    }
    if (!left) break;
    if (!progress) {
      for (const auto& p : pending) {
        if (!p.nodes.empty()) {
          throw ValueError(fmt::format("model_from_json: model '{}': layer '{}' is called on a tensor that no layer "
                                       "of the config makes ({})",
                                       name, p.layer->name(), p.nodes.front()->dump().substr(0, 300)));
        }
      }
    }
  }
  auto tensors = [&](const json& s, const char* what) {
    auto one = [&](const json& ref) {
      const KerasTensor* t = find_tensor(ref, made, name);
      if (!t) {
        throw ValueError(fmt::format("model_from_json: model '{}': {} names {}, which no layer makes", name, what,
                                     ref.dump().substr(0, 200)));
      }
      return *t;
    };
    if (s.is_object()) {
      std::map<std::string, KerasTensor> named;
      for (const auto& [k, v] : s.items()) named.emplace(k, one(v));
      return KerasTensors(named);
    }
    if (s.is_array() && !s.empty() && s[0].is_string()) return KerasTensors(one(s));  // one tensor, unwrapped
    if (!s.is_array()) throw ValueError(fmt::format("model_from_json: model '{}': {} must be a list", name, what));
    std::vector<KerasTensor> ts;
    for (const auto& ref : s) ts.push_back(one(ref));
    return KerasTensors(ts);
  };
  return std::make_shared<Model>(tensors(c.at("input_layers"), "input_layers"),
                                 tensors(c.at("output_layers"), "output_layers"), name);
}

std::shared_ptr<Layer> sequential_from_config(const json& c) {
  std::vector<LayerRef> layers;
  const json list = c.value("layers", json::array());
  if (!list.is_array()) throw ValueError("model_from_json: a Sequential config's \"layers\" must be a list");
  bool has_input = false;
  for (const auto& l : list) has_input = has_input || (l.is_object() && l.value("class_name", "") == "InputLayer");
  // A model saved without an InputLayer but built on a known shape (Keras's build_input_shape).
  if (!has_input && c.contains("build_input_shape") && !c["build_input_shape"].is_null()) {
    layers.push_back(layers::Input(ser::shape_without_batch(c["build_input_shape"], "build_input_shape")));
  }
  for (const auto& l : list) layers.push_back(ser::layer_from_object(l));
  return std::make_shared<Sequential>(std::move(layers), ser::name_of(c));
}

}  // namespace

namespace serialization {

json model_object(const Model& m) {
  const auto& s = m.state();
  json o;
  if (s.sequential) {
    o = object("keras", "Sequential", sequential_config(static_cast<const Sequential&>(m)));
    if (const auto in = m.input_shape()) o["build_config"] = json{{"input_shape", shape_with_batch(*in)}};
  } else if (s.graph) {
    o = object("keras.src.models.functional", "Functional", functional_config(m));
    o["registered_name"] = "Functional";
    o["build_config"] = json{{"input_shape", nullptr}};
  } else {  // a subclass: its own get_config(), loadable where its class is registered
    o = object("", m.class_name(), parse(m.get_config(), "model '" + m.name() + "''s get_config()"));
    o["module"] = nullptr;
    const std::string registered = saving::get_registered_name(m.class_name());
    o["registered_name"] = registered.empty() ? m.class_name() : registered;
    if (!s.subclass_input_shapes.empty()) {  // what Keras's build_from_config builds it with when loading
      json shapes = json::array();
      for (const auto& sh : s.subclass_input_shapes) shapes.push_back(shape_with_batch(sh));
      o["build_config"] = json{{"input_shape", shapes.size() == 1 ? shapes[0] : shapes}};
    }
  }
  o["compile_config"] = compile_config(m);
  return o;
}

}  // namespace serialization

std::string Model::get_config() const {
  const auto& s = state();
  if (s.graph && !s.sequential) return ser::dumps(functional_config(*this));
  throw NotImplementedError(fmt::format("Model '{}' is a Model subclass: override get_config() (and register the "
                                        "class with keras::saving::register_keras_serializable) to save it, as in "
                                        "Keras",
                                        name()));
}

std::string Model::to_json() const { return ser::dumps(ser::model_object(*this)); }

std::string Sequential::get_config() const { return ser::dumps(sequential_config(*this)); }
std::string Sequential::to_json() const { return Model::to_json(); }

OSPREY_REGISTER_LAYERS(models) {
  ser::register_layer_class("Sequential", {false, sequential_from_config});
  ser::register_layer_class("Functional", {false, functional_from_config});
  ser::register_layer_class("Model", {false, functional_from_config});  // Keras 2's name for a functional model
}

namespace models {

std::shared_ptr<Model> model_from_json(const std::string& json_text) {
  return ser::model_from_object(ser::parse(json_text, "model_from_json: the text"));
}

}  // namespace models

namespace serialization {

std::shared_ptr<Model> model_from_object(const json& j) {
  try {
    const std::string cls = j.is_object() ? j.value("class_name", "") : "";
    auto layer = ser::layer_from_object(j);
    auto model = std::dynamic_pointer_cast<Model>(layer);
    if (!model) {
      throw ValueError(fmt::format("model_from_json: the text describes a {} layer, not a model (Sequential or "
                                   "Functional)",
                                   cls));
    }
    // A subclass is built as Keras's build_from_config does: one call on inputs of the recorded shapes.
    const auto& s = model->state();
    const json bc = j.value("build_config", json());
    if (s.subclassed && bc.is_object() && bc.contains("input_shape") && !bc["input_shape"].is_null()) {
      const json& shape = bc["input_shape"];
      std::vector<Shape> shapes;
      if (shape.is_array() && !shape.empty() && shape[0].is_array()) {
        for (const auto& one : shape) shapes.push_back(ser::shape_without_batch(one, "build_config input_shape"));
      } else {
        shapes.push_back(ser::shape_without_batch(shape, "build_config input_shape"));
      }
      model->build(shapes);
    }
    return model;
  } catch (const json::exception& e) {
    throw ValueError(fmt::format("model_from_json: a field has the wrong type or is missing: {}", e.what()));
  }
}

}  // namespace serialization

}  // namespace osprey::keras
