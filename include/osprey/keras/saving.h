// keras.saving: the custom-object registry (register_keras_serializable) through which a .keras file or a
// model_from_json() text names layers and models of your own, and the config they are rebuilt from.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <type_traits>
#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"
#include "osprey/keras/losses.h"
#include "osprey/keras/metrics.h"

namespace osprey::keras::saving {

/// A layer's config (what its get_config() wrote, or Keras's), as from_config reads it. Getters throw ValueError
/// naming the key when it is missing or of another type.
class Config {
 public:
  explicit Config(const std::string& json_text);
  ~Config();
  Config(const Config&);
  Config& operator=(const Config&);
  bool has(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<int64_t> get_ints(const std::string& key) const;
  /// The layer's name ("" when the config has none).
  std::string name() const;
  /// The whole config as JSON text.
  std::string json() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Makes a layer (or model) of a registered class from its config.
using LayerFactory = std::function<std::shared_ptr<Layer>(const Config&)>;

/// keras.saving.register_keras_serializable(package, name): files name the class "package>name" (Keras's
/// registered_name); load_model and model_from_json rebuild its layers with `from_config`. `class_name` is what the
/// class's class_name() returns (Keras writes it as class_name; default: `name`).
void register_keras_serializable(const std::string& package, const std::string& name, LayerFactory from_config,
                                 const std::string& class_name = "");

/// A loss or metric class of your own (derived from losses::Loss or metrics::Metric, with class_name() and
/// get_config() overridden): files name it "package>name" with its config, and loading rebuilds it with
/// `from_config`.
using LossFactory = std::function<std::shared_ptr<losses::Loss>(const Config&)>;
using MetricFactory = std::function<std::shared_ptr<metrics::Metric>(const Config&)>;
void register_loss(const std::string& package, const std::string& name, LossFactory from_config,
                   const std::string& class_name = "");
void register_metric(const std::string& package, const std::string& name, MetricFactory from_config,
                     const std::string& class_name = "");

/// A loss or metric function by name (Keras's registered functions): after
/// `register_keras_serializable("my_package", "my_loss", fn)`, compile() takes `"my_loss"` (or "my_package>my_loss")
/// as a loss or a metric, and files hold it by its registered name.
using Function = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
void register_keras_serializable(const std::string& package, const std::string& name, Function fn);

/// The same for a class with `static std::shared_ptr<T> from_config(const Config&)`, a Layer (or Model), a Loss or
/// a Metric: `saving::register_keras_serializable<Scale>("my_package", "Scale");`
template <typename T>
void register_keras_serializable(const std::string& package, const std::string& name) {
  if constexpr (std::is_base_of_v<Layer, T>) {
    register_keras_serializable(package, name,
                                LayerFactory([](const Config& c) -> std::shared_ptr<Layer> { return T::from_config(c); }));
  } else if constexpr (std::is_base_of_v<losses::Loss, T>) {
    register_loss(package, name, [](const Config& c) -> std::shared_ptr<losses::Loss> { return T::from_config(c); });
  } else {
    static_assert(std::is_base_of_v<metrics::Metric, T>, "register a Layer, Model, Loss or Metric class");
    register_metric(package, name, [](const Config& c) -> std::shared_ptr<metrics::Metric> { return T::from_config(c); });
  }
}

/// Keras's custom_objects: layer (or model) classes, functions, loss and metric classes known to one load
/// (models::LoadModelOptions::custom_objects) or to a CustomObjectScope, without registering them for the whole
/// process. Layers and functions are found by the name a file gives them (the class name, or "package>Name"),
/// loss and metric classes by their registered name ("package>Name"), before the global registry.
struct CustomObjects {
  std::map<std::string, LayerFactory> layers{};
  std::map<std::string, Function> functions{};
  std::map<std::string, LossFactory> losses{};
  std::map<std::string, MetricFactory> metrics{};
};

/// keras.saving.custom_object_scope: while the scope lives, load_model and model_from_json on this thread find its
/// objects (inner scopes first). Scopes end in the reverse order of their making.
class CustomObjectScope {
 public:
  explicit CustomObjectScope(CustomObjects objects);
  ~CustomObjectScope();
  CustomObjectScope(const CustomObjectScope&) = delete;
  CustomObjectScope& operator=(const CustomObjectScope&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The registered name ("package>Name") of the layer or model class whose class_name() is `class_name`; "" when
/// not registered.
std::string get_registered_name(const std::string& class_name);

/// Internal lookups for the losses, metrics and files: nullptr / empty when nothing is registered under the name
/// ("package>name", or the bare name).
namespace detail {
Function find_function(const std::string& name, std::string* registered = nullptr);
std::shared_ptr<losses::Loss> make_loss(const std::string& registered_name, const std::string& config_json);
std::shared_ptr<metrics::Metric> make_metric(const std::string& registered_name, const std::string& config_json);
std::string registered_loss_name(const std::string& class_name);
std::string registered_metric_name(const std::string& class_name);
}  // namespace detail

}  // namespace osprey::keras::saving
