// Where each layer's variables go in a Keras weights file (weights_h5.h layer_groups): Keras 3's walk over a
// model's layers and attributes (keras/src/saving/saving_lib.py _save_state, _walk_saveable, _save_container_state).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "keras/models/model_state.h"
#include "keras/saving/weights_h5.h"

namespace osprey::keras::detail {

namespace {

/// A layer's variables in the order Keras saves them: trainable ones, then the others.
std::vector<Variable*> saved_variables(Layer& layer) {
  std::vector<Variable*> out;
  for (auto* v : layer.variables()) {
    if (v->trainable()) out.push_back(v);
  }
  for (auto* v : layer.variables()) {
    if (!v->trainable()) out.push_back(v);
  }
  return out;
}

/// The Python class a Keras class name is exported from, where they differ (Keras keys containers by the Python
/// class: keras.layers.GroupQueryAttention is class GroupedQueryAttention).
std::string python_class(const std::string& class_name) {
  return class_name == "GroupQueryAttention" ? "GroupedQueryAttention" : class_name;
}

/// Keras's container keys: snake_case class names, numbered on repeats (visited layers count too).
std::vector<std::string> container_keys(const std::vector<std::shared_ptr<Layer>>& layers) {
  std::map<std::string, int> used;
  std::vector<std::string> keys;
  for (const auto& l : layers) {
    const std::string base = to_snake_case(python_class(l->class_name()));
    const int n = used[base]++;
    keys.push_back(n == 0 ? base : fmt::format("{}_{}", base, n));
  }
  return keys;
}

struct Walk {
  std::set<const Layer*> visited;
  std::vector<LayerGroup> out;

  void layer(Layer& l, const std::string& path) {
    if (!visited.insert(&l).second) return;
    if (auto* sub = dynamic_cast<Model*>(&l)) {
      out.push_back(group(path, sub->name(), {}, nullptr));
      model(*sub, path + "/");
    } else if (const auto parts = l.sublayers(); !parts.empty()) {  // an RNN: its cell under "cell"
      out.push_back(group(path, l.name(), l.own_saved_variables(), &l));
      for (const auto& [attribute, part] : parts) layer(*part, path + "/" + attribute);
    } else {
      out.push_back(group(path, l.name(), saved_variables(l), &l));
    }
  }

  /// The group of a layer's variables, saved as "0", "1", ..., then those it saves under keys of its own.
  static LayerGroup group(const std::string& path, const std::string& name, std::vector<Variable*> vars, Layer* l) {
    LayerGroup g{path + "/vars", name, std::move(vars), {}, l};
    for (std::size_t i = 0; i < g.vars.size(); ++i) g.keys.push_back(std::to_string(i));
    if (l) {
      for (const auto& [key, v] : l->named_saved_variables()) g.vars.push_back(v), g.keys.push_back(key);
    }
    return g;
  }

  void container(const std::vector<std::shared_ptr<Layer>>& layers, const std::string& path) {
    const auto keys = container_keys(layers);
    for (std::size_t i = 0; i < layers.size(); ++i) layer(*layers[i], path + "/" + keys[i]);
  }

  void model(const Model& m, const std::string& prefix) {
    const auto& s = m.state();
    if (!s.subclassed) {
      container(m.layers(), prefix + "layers");
      return;
    }
    // A subclass: its attributes in sorted order (names starting with "_" last), "layers" among them.
    std::vector<std::pair<std::string, int>> items{{"layers", -1}};
    for (std::size_t i = 0; i < s.layers.size() && i < s.attributes.size(); ++i) {
      if (!s.attributes[i].empty()) items.emplace_back(s.attributes[i], static_cast<int>(i));
    }
    auto key = [](const std::string& name) { return name.starts_with("_") ? "~" + name : name; };
    std::stable_sort(items.begin(), items.end(), [&](auto& a, auto& b) { return key(a.first) < key(b.first); });
    for (const auto& [name, index] : items) {
      if (index < 0) {
        container(s.layers, prefix + "layers");
      } else {
        layer(*s.layers[static_cast<std::size_t>(index)], prefix + name);
      }
    }
  }
};

}  // namespace

std::vector<LayerGroup> layer_groups(const Model& model) {
  Walk w;
  w.visited.insert(&model);
  w.model(model, "");
  return std::move(w.out);
}

}  // namespace osprey::keras::detail
