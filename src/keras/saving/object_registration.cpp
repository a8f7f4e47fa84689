// keras.saving.register_keras_serializable: user classes in the layer registry (serialization.h) under Keras's
// registered name "package>Name", and the Config their from_config reads.
#include <algorithm>
#include <functional>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/saving.h"

namespace osprey::keras::saving {

namespace ser = serialization;

struct Config::Impl {
  ser::json j;
};

Config::Config(const std::string& json_text) : impl_(std::make_unique<Impl>()) {
  impl_->j = ser::parse(json_text, "a layer config");
  if (!impl_->j.is_object()) throw ValueError("saving::Config: a layer config must be a JSON object");
}
Config::~Config() = default;
Config::Config(const Config& o) : impl_(std::make_unique<Impl>(*o.impl_)) {}
Config& Config::operator=(const Config& o) {
  impl_ = std::make_unique<Impl>(*o.impl_);
  return *this;
}

bool Config::has(const std::string& key) const { return impl_->j.contains(key) && !impl_->j[key].is_null(); }

namespace {
[[noreturn]] void wrong(const ser::json& j, const std::string& key, const char* type) {
  throw ValueError(fmt::format("layer config of '{}': \"{}\" must be {}, got {}", ser::name_of(j), key, type,
                               j.contains(key) ? j[key].dump().substr(0, 100) : "nothing (missing)"));
}
}  // namespace

int64_t Config::get_int(const std::string& key) const {
  const auto& j = impl_->j;
  if (!j.contains(key) || !(j[key].is_number_integer() || j[key].is_number_unsigned())) wrong(j, key, "an integer");
  return j[key].get<int64_t>();
}
double Config::get_double(const std::string& key) const {
  const auto& j = impl_->j;
  if (!j.contains(key) || !j[key].is_number()) wrong(j, key, "a number");
  return j[key].get<double>();
}
bool Config::get_bool(const std::string& key) const {
  const auto& j = impl_->j;
  if (!j.contains(key) || !j[key].is_boolean()) wrong(j, key, "true or false");
  return j[key].get<bool>();
}
std::string Config::get_string(const std::string& key) const {
  const auto& j = impl_->j;
  if (!j.contains(key) || !j[key].is_string()) wrong(j, key, "a string");
  return j[key].get<std::string>();
}
std::vector<int64_t> Config::get_ints(const std::string& key) const {
  const auto& j = impl_->j;
  if (!j.contains(key) || !j[key].is_array()) wrong(j, key, "a list of integers");
  std::vector<int64_t> out;
  for (const auto& v : j[key]) {
    if (!v.is_number_integer()) wrong(j, key, "a list of integers");
    out.push_back(v.get<int64_t>());
  }
  return out;
}
std::string Config::name() const { return ser::name_of(impl_->j); }
std::string Config::json() const { return ser::dumps(impl_->j); }

namespace {
struct Names {
  std::mutex mu;
  std::map<std::string, std::string> registered_by_class;  // class_name() -> "package>Name"
  std::map<std::string, std::pair<std::string, Function>> functions;  // name and "package>name" -> (registered, fn)
  std::map<std::string, LossFactory> losses;                          // "package>Name" -> factory
  std::map<std::string, MetricFactory> metrics;
  std::map<std::string, std::string> loss_by_class, metric_by_class;  // class_name() -> "package>Name"
};
Names& names() {
  static Names n;
  return n;
}
}  // namespace

static void check_names(const std::string& package, const std::string& name) {
  if (package.empty() || name.empty() || package.find('>') != std::string::npos) {
    throw ValueError(fmt::format("register_keras_serializable: package ('{}') and name ('{}') must be non-empty, and "
                                 "the package must not contain '>'",
                                 package, name));
  }
}

// A user's layer class as the registry holds it: from_config through a Config, an empty result refused.
static ser::LayerClass layer_entry(LayerFactory from_config, const std::string& name) {
  return {true, [f = std::move(from_config), name](const ser::json& c) -> std::shared_ptr<Layer> {
            auto layer = f(Config(ser::dumps(c)));
            if (!layer) throw ValueError(fmt::format("from_config of '{}' returned no layer", name));
            return layer;
          }};
}

void register_keras_serializable(const std::string& package, const std::string& name, LayerFactory from_config,
                                 const std::string& class_name) {
  check_names(package, name);
  if (!from_config) throw ValueError("register_keras_serializable: from_config is empty");
  const std::string registered = package + ">" + name;
  const std::string cls = class_name.empty() ? name : class_name;
  const ser::LayerClass entry = layer_entry(std::move(from_config), registered);
  ser::register_layer_class(registered, entry);
  // Files that name the class without the package (custom_objects in Keras) find it too, unless a built-in
  // layer has that class name.
  if (!ser::find_layer_class(cls)) ser::register_layer_class(cls, entry);
  std::lock_guard lock(names().mu);
  names().registered_by_class[cls] = registered;
}

std::string get_registered_name(const std::string& class_name) {
  std::lock_guard lock(names().mu);
  auto it = names().registered_by_class.find(class_name);
  return it == names().registered_by_class.end() ? "" : it->second;
}

void register_loss(const std::string& package, const std::string& name, LossFactory from_config,
                   const std::string& class_name) {
  check_names(package, name);
  if (!from_config) throw ValueError("register_loss: from_config is empty");
  const std::string registered = package + ">" + name;
  std::lock_guard lock(names().mu);
  names().losses[registered] = std::move(from_config);
  names().loss_by_class[class_name.empty() ? name : class_name] = registered;
}

void register_metric(const std::string& package, const std::string& name, MetricFactory from_config,
                     const std::string& class_name) {
  check_names(package, name);
  if (!from_config) throw ValueError("register_metric: from_config is empty");
  const std::string registered = package + ">" + name;
  std::lock_guard lock(names().mu);
  names().metrics[registered] = std::move(from_config);
  names().metric_by_class[class_name.empty() ? name : class_name] = registered;
}

void register_keras_serializable(const std::string& package, const std::string& name, Function fn) {
  check_names(package, name);
  if (!fn) throw ValueError("register_keras_serializable: the function is empty");
  const std::string registered = package + ">" + name;
  std::lock_guard lock(names().mu);
  names().functions[registered] = {registered, fn};
  names().functions[name] = {registered, fn};
}

// ---- custom-object scopes ----

namespace {
struct Scope {
  CustomObjects objects;
  std::map<std::string, ser::LayerClass> layers;
};
thread_local std::vector<const Scope*> t_scopes;  // innermost last

// What the innermost scope whose map `map_of(scope)` holds `name` has there; nullptr when none does.
template <typename MapOf>
auto scoped(MapOf map_of, const std::string& name) -> decltype(&map_of(*t_scopes.front()).begin()->second) {
  for (auto it = t_scopes.rbegin(); it != t_scopes.rend(); ++it) {
    const auto& m = map_of(**it);
    if (auto found = m.find(name); found != m.end()) return &found->second;
  }
  return nullptr;
}
}  // namespace

struct CustomObjectScope::Impl {
  Scope scope;
};

CustomObjectScope::CustomObjectScope(CustomObjects objects) : impl_(std::make_unique<Impl>()) {
  auto check = [](const std::string& name, bool set, const char* what) {
    if (name.empty() || !set) {
      throw ValueError(fmt::format("CustomObjectScope: the {} '{}' needs a non-empty name and a non-empty factory or "
                                   "function",
                                   what, name));
    }
  };
  for (const auto& [name, f] : objects.layers) check(name, static_cast<bool>(f), "layer");
  for (const auto& [name, f] : objects.functions) check(name, static_cast<bool>(f), "function");
  for (const auto& [name, f] : objects.losses) check(name, static_cast<bool>(f), "loss");
  for (const auto& [name, f] : objects.metrics) check(name, static_cast<bool>(f), "metric");
  for (const auto& [name, f] : objects.layers) impl_->scope.layers.emplace(name, layer_entry(f, name));
  impl_->scope.objects = std::move(objects);
  t_scopes.push_back(&impl_->scope);
}

CustomObjectScope::~CustomObjectScope() {
  auto it = std::find(t_scopes.begin(), t_scopes.end(), &impl_->scope);
  if (it != t_scopes.end()) t_scopes.erase(it);
}

}  // namespace osprey::keras::saving

namespace osprey::keras::serialization {
const LayerClass* scoped_layer_class(const std::string& name) {
  return saving::scoped([](const saving::Scope& s) -> const auto& { return s.layers; }, name);
}
}  // namespace osprey::keras::serialization

namespace osprey::keras::saving {

namespace detail {

Function find_function(const std::string& name, std::string* registered) {
  if (const Function* f = scoped([](const Scope& s) -> const auto& { return s.objects.functions; }, name)) {
    if (registered) *registered = name;
    return *f;
  }
  std::lock_guard lock(names().mu);
  auto it = names().functions.find(name);
  if (it == names().functions.end()) return nullptr;
  if (registered) *registered = it->second.first;
  return it->second.second;
}

namespace {
// The object registered under `registered_name` in `factories`, made from its config; nullptr when none is.
template <typename T>
std::shared_ptr<T> make_registered(const std::map<std::string, std::function<std::shared_ptr<T>(const Config&)>>& factories,
                                   const std::string& registered_name, const std::string& config_json,
                                   const char* what) {
  std::function<std::shared_ptr<T>(const Config&)> f;
  {
    std::lock_guard lock(names().mu);
    auto it = factories.find(registered_name);
    if (it == factories.end()) return nullptr;
    f = it->second;
  }
  auto made = f(Config(config_json));
  if (!made) throw ValueError(fmt::format("from_config of {} '{}' returned nothing", what, registered_name));
  return made;
}

std::string lookup(const std::map<std::string, std::string>& by_class, const std::string& class_name) {
  std::lock_guard lock(names().mu);
  auto it = by_class.find(class_name);
  return it == by_class.end() ? "" : it->second;
}
}  // namespace

std::shared_ptr<losses::Loss> make_loss(const std::string& registered_name, const std::string& config_json) {
  if (const LossFactory* f = scoped([](const Scope& s) -> const auto& { return s.objects.losses; }, registered_name)) {
    if (auto made = (*f)(Config(config_json))) return made;
    throw ValueError(fmt::format("from_config of loss '{}' returned nothing", registered_name));
  }
  return make_registered(names().losses, registered_name, config_json, "loss");
}
std::shared_ptr<metrics::Metric> make_metric(const std::string& registered_name, const std::string& config_json) {
  if (const MetricFactory* f = scoped([](const Scope& s) -> const auto& { return s.objects.metrics; }, registered_name)) {
    if (auto made = (*f)(Config(config_json))) return made;
    throw ValueError(fmt::format("from_config of metric '{}' returned nothing", registered_name));
  }
  return make_registered(names().metrics, registered_name, config_json, "metric");
}
std::string registered_loss_name(const std::string& class_name) { return lookup(names().loss_by_class, class_name); }
std::string registered_metric_name(const std::string& class_name) { return lookup(names().metric_by_class, class_name); }

}  // namespace detail

}  // namespace osprey::keras::saving
