// Keras's serialized objects both ways, and the layer-class registry (serialization.h).
#include "keras/saving/serialization.h"

#include <cmath>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "osprey/errors.h"
#include "osprey/keras/model.h"
#include "osprey/keras/saving.h"

namespace osprey::keras::serialization {

namespace {

std::string py_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void dump(const json& j, std::string& out) {
  switch (j.type()) {
    case json::value_t::null: out += "null"; break;
    case json::value_t::boolean: out += j.get<bool>() ? "true" : "false"; break;
    case json::value_t::number_integer: out += std::to_string(j.get<int64_t>()); break;
    case json::value_t::number_unsigned: out += std::to_string(j.get<uint64_t>()); break;
    case json::value_t::number_float: out += py_float(j.get<double>()); break;
    case json::value_t::string: out += json(j.get<std::string>()).dump(-1, ' ', true); break;  // ensure_ascii
    case json::value_t::array: {
      out += "[";
      bool first = true;
      for (const auto& v : j) {
        if (!first) out += ", ";
        first = false;
        dump(v, out);
      }
      out += "]";
      break;
    }
    case json::value_t::object: {
      out += "{";
      bool first = true;
      for (const auto& [k, v] : j.items()) {
        if (!first) out += ", ";
        first = false;
        out += json(k).dump(-1, ' ', true) + ": ";
        dump(v, out);
      }
      out += "}";
      break;
    }
    default: out += "null"; break;
  }
}

// Keras's configs nest a few levels per model (a model in a model in a layer list); deeper is a crafted file.
constexpr int kMaxJsonDepth = 64;

struct Registry {
  std::mutex mu;
  std::map<std::string, LayerClass> classes;
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::string dumps(const json& j) {
  std::string out;
  dump(j, out);
  return out;
}

json parse(const std::string& text, const std::string& what) {
  const json::parser_callback_t depth_guard = [&](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) {
      throw ValueError(fmt::format("{} nests deeper than {} levels; a Keras config never does (a damaged or "
                                   "crafted file)",
                                   what, kMaxJsonDepth));
    }
    return true;
  };
  try {
    return json::parse(text, depth_guard);
  } catch (const json::exception& e) {
    throw ValueError(fmt::format("{} is not valid JSON: {}", what, e.what()));
  }
}

// ---- writing ----

json object(const std::string& module, const std::string& class_name, json config) {
  json o;
  o["module"] = module;
  o["class_name"] = class_name;
  o["config"] = std::move(config);
  o["registered_name"] = nullptr;
  return o;
}

json dtype_policy(const std::string& name) { return object("keras", "DTypePolicy", json{{"name", name}}); }

std::string dtype_policy_name(const json& d) {
  if (d.is_null()) return "float32";
  if (d.is_string()) return d.get<std::string>();
  if (d.is_object()) {
    const json name = d.value("config", json::object()).value("name", json("float32"));
    if (name.is_string()) return name.get<std::string>();
  }
  throw ValueError(fmt::format("A layer's \"dtype\" is {}; expected a DTypePolicy config or a dtype name", d.dump()));
}

json base_config(const Layer& l) {
  return json{{"name", l.name()}, {"trainable", l.trainable}, {"dtype", dtype_policy(l.dtype_policy().name())}};
}

std::string config_text(const Layer& l, std::initializer_list<std::pair<const char*, json>> entries) {
  json cfg = base_config(l);
  for (const auto& [k, v] : entries) cfg[k] = v;
  return dumps(cfg);
}

json shape_with_batch(const Shape& s) {
  json a = json::array({nullptr});
  for (int64_t d : s.dims()) a.push_back(d);
  return a;
}

json initializer(const initializers::Initializer& init) {
  return object("keras.initializers", init.class_name, parse(init.config, "initializer " + init.class_name));
}

json regularizer(const std::optional<layers::Regularizer>& r) {
  if (!r) return nullptr;
  if (r->kind == layers::Regularizer::Kind::orthogonal) {  // Keras keeps the factor as float32
    return object("keras.regularizers", "OrthogonalRegularizer",
                  json{{"factor", static_cast<double>(static_cast<float>(r->factor))},
                       {"mode", r->rows ? "rows" : "columns"}});
  }
  if (r->l2 == 0.0 && r->l1 != 0.0) {  // Keras's L1 keeps its factor as float32
    return object("keras.regularizers", "L1", json{{"l1", static_cast<double>(static_cast<float>(r->l1))}});
  }
  if (r->l1 == 0.0) return object("keras.regularizers", "L2", json{{"l2", r->l2}});
  return object("keras.regularizers", "L1L2", json{{"l1", r->l1}, {"l2", r->l2}});
}

json constraint(const std::optional<layers::Constraint>& c) {
  using K = layers::Constraint::Kind;
  if (!c) return nullptr;
  switch (c->kind) {
    case K::non_neg: return object("keras.constraints", "NonNeg", json::object());
    case K::unit_norm: return object("keras.constraints", "UnitNorm", json{{"axis", 0}});
    case K::min_max_norm:
      return object("keras.constraints", "MinMaxNorm",
                    json{{"min_value", c->min_value}, {"max_value", c->max_value}, {"rate", c->rate}, {"axis", 0}});
    case K::max_norm: break;
  }
  return object("keras.constraints", "MaxNorm", json{{"max_value", c->max_value}, {"axis", 0}});
}

json layer_object(const Layer& l, const std::vector<Shape>& call_shapes) {
  if (auto* model = dynamic_cast<const Model*>(&l)) return model_object(*model);
  const std::string cls = l.class_name();
  json out = object("keras.layers", cls, parse(l.get_config(), "layer '" + l.name() + "''s get_config()"));
  const std::string registered = saving::get_registered_name(cls);
  const LayerClass* builtin = registered.empty() ? find_layer_class(cls) : nullptr;
  // A layer of the user's: no Keras module, its registered name ("package>Name"); Keras records the build of
  // such layers (they have a build()).
  if (!builtin) {
    out["module"] = nullptr;
    out["registered_name"] = registered.empty() ? cls : registered;
  }
  const bool build_config = builtin ? builtin->build_config : true;
  std::vector<Shape> input_shapes = call_shapes;
  if (builtin && builtin->last_input_keyword && !builtin->last_input_keyword(l).empty() && !input_shapes.empty()) {
    input_shapes.pop_back();  // a call argument, not an input of build()
  }
  if (build_config && l.built() && !input_shapes.empty()) {
    if (builtin && builtin->initial_state_inputs && input_shapes.size() > 1) {  // build(sequences, initial_state)
      json states = json::array();
      for (std::size_t i = 1; i < input_shapes.size(); ++i) states.push_back(shape_with_batch(input_shapes[i]));
      out["build_config"] = json{
          {"shapes_dict", json{{"sequences_shape", shape_with_batch(input_shapes[0])}, {"initial_state_shape", states}}}};
    } else if (builtin && !builtin->build_shape_names.empty()) {  // Keras's build(query_shape=..., value_shape=...)
      json named = json::object();
      for (std::size_t i = 0; i < input_shapes.size() && i < builtin->build_shape_names.size(); ++i) {
        named[builtin->build_shape_names[i]] = shape_with_batch(input_shapes[i]);
      }
      out["build_config"] = json{{"shapes_dict", named}};
    } else {
      json shapes = json::array();
      for (const auto& s : input_shapes) shapes.push_back(shape_with_batch(s));
      out["build_config"] = json{{"input_shape", shapes.size() == 1 ? shapes[0] : shapes}};
    }
  }
  return out;
}

// ---- reading ----

void unsupported(const std::string& what, const std::string& value, const std::string& supported) {
  throw ValueError(fmt::format("model_from_json: {} '{}' is not supported by Osprey (supported: {})", what, value,
                               supported));
}

const json& config_of(const json& object, const std::string& what) {
  if (!object.is_object() || !object.contains("config") || !object["config"].is_object()) {
    throw ValueError(fmt::format("model_from_json: {} is not a serialized Keras object (no \"config\"): {}", what,
                                 object.dump().substr(0, 200)));
  }
  return object["config"];
}

std::optional<double> optional_number(const json& cfg, const char* key) {
  return cfg.contains(key) && !cfg[key].is_null() ? std::optional<double>(cfg[key].get<double>()) : std::nullopt;
}

int64_t integer(const json& c, const char* key, int64_t lo, int64_t hi, const std::string& what) {
  const json& v = c.at(key);
  const bool is_int = v.is_number_integer() || v.is_number_unsigned();
  if (!is_int || (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) ||
      v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    throw ValueError(fmt::format("model_from_json: {} \"{}\" must be an integer in [{}, {}], got {}", what, key, lo,
                                 hi, v.dump()));
  }
  return v.get<int64_t>();
}

std::vector<int64_t> integers(const json& c, const char* key, int64_t lo, int64_t hi, const std::string& what,
                              std::size_t max_items) {
  const json& v = c.at(key);
  if (!v.is_array() || v.size() > max_items) {
    throw ValueError(fmt::format("model_from_json: {} \"{}\" must be a list of at most {} integers, got {}", what, key,
                                 max_items, v.dump().substr(0, 200)));
  }
  std::vector<int64_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    json one{{"item", v[i]}};
    out.push_back(integer(one, "item", lo, hi, fmt::format("{} \"{}\"[{}]:", what, key, i)));
  }
  return out;
}

double number(const json& c, const char* key, double lo, double hi, const std::string& what) {
  const json& v = c.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi) {
    throw ValueError(fmt::format("model_from_json: {} \"{}\" must be a number in [{}, {}], got {}", what, key, lo, hi,
                                 v.dump()));
  }
  return v.get<double>();
}

initializers::Initializer initializer_from(const json& j) {
  if (j.is_string()) return initializers::Initializer(j.get<std::string>());
  if (!j.is_object() || !j.contains("class_name") || !j["class_name"].is_string()) {
    throw ValueError(fmt::format("model_from_json: an initializer must be a name or a serialized Keras object, got {}",
                                 j.dump().substr(0, 200)));
  }
  const json cfg = j.contains("config") && j["config"].is_object() ? j["config"] : json::object();
  return initializers::Initializer::from_config(j["class_name"].get<std::string>(), dumps(cfg));
}

std::optional<layers::Regularizer> regularizer_from(const json& j) {
  if (j.is_null()) return std::nullopt;
  if (j.is_string()) {  // Keras's names: "l1", "l2", "l1l2", "orthogonal_regularizer"
    const std::string n = j.get<std::string>();
    if (n == "l1") return layers::L1();
    if (n == "l2") return layers::L2();
    if (n == "l1_l2" || n == "l1l2") return layers::L1L2(0.01, 0.01);
    if (n == "orthogonal_regularizer") return layers::OrthogonalRegularizer();
    unsupported("regularizer", n, "l1, l2, l1_l2, orthogonal_regularizer");
  }
  const std::string cls = j.value("class_name", "");
  const json& c = config_of(j, "a regularizer");
  if (cls == "L1") return layers::L1(c.value("l1", 0.01));
  if (cls == "L2") return layers::L2(c.value("l2", 0.01));
  if (cls == "L1L2") return layers::L1L2(c.value("l1", 0.0), c.value("l2", 0.0));
  if (cls == "OrthogonalRegularizer") {
    return layers::OrthogonalRegularizer(value_or(c, "factor", 0.01), value_or(c, "mode", std::string("rows")));
  }
  unsupported("regularizer", cls, "L1, L2, L1L2, OrthogonalRegularizer");
}

std::optional<layers::Constraint> constraint_from(const json& j) {
  if (j.is_null()) return std::nullopt;
  const std::string cls = j.is_string() ? j.get<std::string>() : j.value("class_name", "");
  const json c = j.is_object() ? config_of(j, "a constraint") : json::object();
  const json axis = c.value("axis", json(0));
  if (!(axis == json(0) || axis == json::array({0}))) {
    unsupported(cls + " axis", axis.dump(), "0 (a Dense kernel's columns, Keras's default)");
  }
  if (cls == "NonNeg" || cls == "non_neg") return layers::NonNeg();
  if (cls == "MaxNorm" || cls == "max_norm") return layers::MaxNorm(value_or(c, "max_value", 2.0));
  if (cls == "UnitNorm" || cls == "unit_norm") return layers::UnitNorm();
  if (cls == "MinMaxNorm" || cls == "min_max_norm") {
    return layers::MinMaxNorm(value_or(c, "min_value", 0.0), value_or(c, "max_value", 1.0), value_or(c, "rate", 1.0));
  }
  unsupported("constraint", cls, "MaxNorm, MinMaxNorm, NonNeg, UnitNorm");
}

std::string activation_from(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "linear";
  unsupported("activation", j.dump().substr(0, 100), "activations given by name");
}

void refuse_set(const json& c, std::initializer_list<const char*> keys, const std::string& layer_class,
                const std::string& supported) {
  for (const char* key : keys) {
    if (c.contains(key) && !c[key].is_null() && c[key] != json(false)) {
      unsupported(layer_class + " option", key, supported);
    }
  }
}

Shape shape_without_batch(const json& batch_shape, const std::string& what) {
  if (!batch_shape.is_array() || batch_shape.empty() || batch_shape.size() > 33) {
    throw ValueError(fmt::format("model_from_json: {} is not a shape with a batch dimension: {}", what,
                                 batch_shape.dump().substr(0, 200)));
  }
  std::vector<int64_t> dims;
  for (std::size_t i = 1; i < batch_shape.size(); ++i) {
    if (!batch_shape[i].is_number_integer() || batch_shape[i].get<int64_t>() < 1) {
      throw ValueError(fmt::format("model_from_json: {} has an unknown dimension ({}); Osprey needs fixed feature "
                                   "dimensions",
                                   what, batch_shape.dump()));
    }
    dims.push_back(batch_shape[i].get<int64_t>());
  }
  return Shape(dims);  // Shape checks the element count
}

bool is_keras_tensor(const json& j) {
  return j.is_object() && j.contains("class_name") && j["class_name"] == "__keras_tensor__";
}

std::string name_of(const json& config) {
  const json n = config.value("name", json());
  if (n.is_null()) return "";
  if (!n.is_string()) throw ValueError(fmt::format("model_from_json: a layer's \"name\" must be a string, got {}",
                                                   n.dump().substr(0, 100)));
  return n.get<std::string>();
}

// ---- the registry ----

void register_layer_class(const std::string& class_name, LayerClass cls) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.classes[class_name] = std::move(cls);
}

const LayerClass* find_layer_class(const std::string& class_name) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.classes.find(class_name);
  return it == r.classes.end() ? nullptr : &it->second;  // entries are never removed: the pointer stays valid
}

std::vector<std::string> registered_layer_classes() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, cls] : r.classes) {
    if (name.find('>') == std::string::npos) out.push_back(name);
  }
  return out;
}

std::shared_ptr<Layer> layer_from_object(const json& j) {
  if (!j.is_object()) {
    throw ValueError(fmt::format("model_from_json: a layer must be a serialized Keras object, got {}",
                                 j.dump().substr(0, 200)));
  }
  const std::string cls = j.value("class_name", "");
  const json& c = config_of(j, "layer '" + cls + "'");
  // A class registered by the user is found under its registered name ("package>Name"), then its class name.
  const json registered = j.value("registered_name", json());
  const LayerClass* found = nullptr;
  if (registered.is_string()) found = scoped_layer_class(registered.get<std::string>());
  if (!found) found = scoped_layer_class(cls);
  if (!found && registered.is_string()) found = find_layer_class(registered.get<std::string>());
  if (!found) found = find_layer_class(cls);
  if (!found || !found->from_config) {
    throw ValueError(fmt::format(
        "model_from_json: unknown layer class '{}' (layer '{}'{}). Osprey has: {}. A layer of your own must be "
        "registered first: keras::saving::register_keras_serializable<YourLayer>(\"package\", \"{}\").",
        cls, c.value("name", json("")).is_string() ? c.value("name", std::string()) : std::string(),
        registered.is_string() ? ", registered as '" + registered.get<std::string>() + "'" : std::string(),
        fmt::join(registered_layer_classes(), ", "), cls));
  }
  auto layer = found->from_config(c);
  if (c.contains("trainable") && c["trainable"].is_boolean()) layer->trainable = c["trainable"].get<bool>();
  if (c.contains("dtype")) {
    const std::string policy = dtype_policy_name(c["dtype"]);
    const bool ids = cls == "InputLayer" && (policy == "int32" || policy == "int64");  // token ids
    if (!ids) layer->set_dtype_policy(mixed_precision::DTypePolicy(policy));  // ValueError for unknown policies
  }
  return layer;
}

}  // namespace osprey::keras::serialization

namespace osprey::keras {

std::string Layer::get_config() const { return serialization::dumps(serialization::base_config(*this)); }

std::string config_with(const std::string& base_config, std::initializer_list<ConfigEntry> entries) {
  serialization::json cfg = serialization::parse(base_config, "config_with: the base config");
  for (const auto& [key, value] : entries) {
    std::visit([&, k = key](const auto& v) { cfg[k] = v; }, value);
  }
  return serialization::dumps(cfg);
}

}  // namespace osprey::keras
