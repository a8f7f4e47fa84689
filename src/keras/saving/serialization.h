// Keras's serialized objects ({"module", "class_name", "config", "registered_name"}), both ways, and the registry
// of layer classes that model_from_json / load_model build layers from (keras/src/saving/serialization_lib.py).
// Private to the library; each layer family registers its classes in its own .cpp (OSPREY_REGISTER_LAYERS), so a
// new family plugs in without touching the saving code.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::serialization {

using json = nlohmann::ordered_json;

/// `j` as Python's json.dumps writes it (", " and ": " separators, floats as Python's repr, ensure_ascii).
std::string dumps(const json& j);
/// Parses Keras JSON text with a bound on nesting (a crafted file cannot recurse without end); ValueError naming
/// `what` otherwise.
json parse(const std::string& text, const std::string& what);

// ---- writing ----

/// {"module": module, "class_name": class_name, "config": config, "registered_name": null}
json object(const std::string& module, const std::string& class_name, json config);
/// The DTypePolicy config a layer config carries (Keras's {"module": "keras", "class_name": "DTypePolicy", ...}).
json dtype_policy(const std::string& name = "float32");
/// The policy named by a layer config's "dtype" (a DTypePolicy object or a plain name; null and absent: float32).
std::string dtype_policy_name(const json& dtype);
/// A layer's base entries: name, trainable, dtype.
json base_config(const Layer& layer);
/// The layer's base entries followed by `entries`, as JSON text (a built-in layer's get_config()).
std::string config_text(const Layer& layer, std::initializer_list<std::pair<const char*, json>> entries);
/// [null, d1, d2, ...]
json shape_with_batch(const Shape& s);
/// keras.initializers.<Class> with the initializer's config as kept.
json initializer(const initializers::Initializer& init);
json regularizer(const std::optional<layers::Regularizer>& r);
json constraint(const std::optional<layers::Constraint>& c);
/// A layer as it appears in a model's config: the serialized object with its build_config when built.
/// `input_shapes`: the shapes it was built for (one, or several for a layer of several inputs).
json layer_object(const Layer& layer, const std::vector<Shape>& input_shapes);

// ---- reading (errors name what was being read) ----

[[noreturn]] void unsupported(const std::string& what, const std::string& value, const std::string& supported);
/// The "config" of a serialized object; ValueError when there is none.
const json& config_of(const json& object, const std::string& what);
template <typename T>
T value_or(const json& cfg, const char* key, T fallback) {
  return cfg.contains(key) && !cfg[key].is_null() ? cfg[key].get<T>() : fallback;
}
std::optional<double> optional_number(const json& cfg, const char* key);
/// An integer field exactly as written (JSON integers only) within [lo, hi].
int64_t integer(const json& c, const char* key, int64_t lo, int64_t hi, const std::string& what);
/// A list of integers, each within [lo, hi], at most `max_items` of them.
std::vector<int64_t> integers(const json& c, const char* key, int64_t lo, int64_t hi, const std::string& what,
                              std::size_t max_items = 64);
/// A float field (a JSON number) that is finite and within [lo, hi].
double number(const json& c, const char* key, double lo, double hi, const std::string& what);
/// An initializer given by name ("glorot_uniform") or as a serialized object (its config kept as written).
initializers::Initializer initializer_from(const json& j);
std::optional<layers::Regularizer> regularizer_from(const json& j);
std::optional<layers::Constraint> constraint_from(const json& j);
std::string activation_from(const json& j);
/// Refuses keys of `c` that are set (not null, not false) and that Osprey's layer does not implement.
void refuse_set(const json& c, std::initializer_list<const char*> keys, const std::string& layer_class,
                const std::string& supported);
Shape shape_without_batch(const json& batch_shape, const std::string& what);
/// The layer's name from its config ("" when absent: auto-named).
std::string name_of(const json& config);

// ---- the layer registry ----

struct LayerClass {
  /// Whether Keras records a build_config for the class (layers with their own build(); stateless layers that
  /// Keras builds in __init__ have none).
  bool build_config = false;
  /// A new layer from its config (Keras's from_config); ValueError naming anything unsupported.
  std::function<std::shared_ptr<Layer>(const json& config)> from_config;
  /// Whether call() takes the inputs as separate positional arguments (MultiHeadAttention(query, value)) rather
  /// than one list (Add([a, b])): how a model's config writes and reads its inbound nodes.
  bool positional_inputs = false;
  /// The build_config's "shapes_dict" keys, one per input (MultiHeadAttention: query_shape, value_shape,
  /// key_shape); empty: Keras's "input_shape".
  std::vector<std::string> build_shape_names{};
  /// Call arguments of an inbound node besides the inputs (MultiHeadAttention's use_causal_mask): applies one read
  /// from a file to the layer, or returns false for an argument the class does not take.
  std::function<bool(Layer& layer, const std::string& key, const json& value)> read_call_argument{};
  /// The call arguments written into each of the layer's inbound nodes' kwargs.
  std::function<json(const Layer& layer)> call_arguments{};
  /// Whether the inputs after the first are the call's `initial_state` (RNNs, Bidirectional): written and read as
  /// kwargs {"initial_state": [...]}.
  bool initial_state_inputs = false;
  /// A call argument given as a tensor of the graph (MultiHeadAttention's attention_mask): when this names one, the
  /// layer's last input is that keyword argument of its inbound nodes, and no input of its build_config.
  std::function<std::string(const Layer& layer)> last_input_keyword{};
};
/// Whether `j` is an inbound node's tensor ({"class_name": "__keras_tensor__", ...}).
bool is_keras_tensor(const json& j);
/// Registers `class_name` (a built-in's Keras class name, or a registered name "package>Name").
void register_layer_class(const std::string& class_name, LayerClass cls);
/// The class registered under `class_name`; nullptr when none is.
const LayerClass* find_layer_class(const std::string& class_name);
/// The layer class of the innermost saving::CustomObjectScope on this thread that names `name`; nullptr when none
/// does (loading looks there before the registry).
const LayerClass* scoped_layer_class(const std::string& name);
/// The registered class names, sorted (for error messages).
std::vector<std::string> registered_layer_classes();

/// A layer from its serialized object ({"class_name", "config", "registered_name", ...}); models (Sequential,
/// Functional) included, nested to at most the JSON depth parse() allows.
std::shared_ptr<Layer> layer_from_object(const json& object);

/// Registers a family's classes once, at library load: `OSPREY_REGISTER_LAYERS(core) { register_layer_class(...); }`
#define OSPREY_REGISTER_LAYERS(family)                                                     \
  static void osprey_register_##family##_layers();                                         \
  static const bool osprey_##family##_registered = (osprey_register_##family##_layers(), true); \
  static void osprey_register_##family##_layers()

}  // namespace osprey::keras::serialization

namespace osprey::keras {
class Model;
}
namespace osprey::keras::serialization {
/// The model's compile_config ({} when not compiled): what compile() was given, as Keras writes it.
json compile_config(const Model& model);
/// Compiles `model` as `compile_config` says (nothing for an empty one).
void compile_from_config(Model& model, const json& compile_config, bool tf_logits_shortcut);
/// A model as a serialized object (module, class_name, config, registered_name, build_config, compile_config).
json model_object(const Model& model);
/// The model a serialized object describes (model_from_json of parsed text); ValueError for anything else.
std::shared_ptr<Model> model_from_object(const json& object);
}  // namespace osprey::keras::serialization
