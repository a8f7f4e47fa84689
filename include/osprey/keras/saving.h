// keras.saving: the custom-object registry (register_keras_serializable) through which a .keras file or a
// model_from_json() text names layers and models of your own, and the config they are rebuilt from.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"

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

/// The same for a class with `static std::shared_ptr<L> from_config(const Config&)`:
/// `saving::register_keras_serializable<Scale>("my_package", "Scale");`
template <typename L>
void register_keras_serializable(const std::string& package, const std::string& name) {
  register_keras_serializable(package, name, [](const Config& c) -> std::shared_ptr<Layer> { return L::from_config(c); });
}

/// The registered name ("package>Name") of the class whose class_name() is `class_name`; "" when not registered.
std::string get_registered_name(const std::string& class_name);

}  // namespace osprey::keras::saving
