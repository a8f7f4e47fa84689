// keras.saving.register_keras_serializable: user classes in the layer registry (serialization.h) under Keras's
// registered name "package>Name", and the Config their from_config reads.
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

void register_keras_serializable(const std::string& package, const std::string& name, LayerFactory from_config,
                                 const std::string& class_name) {
  check_names(package, name);
  if (!from_config) throw ValueError("register_keras_serializable: from_config is empty");
  const std::string registered = package + ">" + name;
  const std::string cls = class_name.empty() ? name : class_name;
  ser::LayerClass entry{true, [f = std::move(from_config), registered](const ser::json& c) -> std::shared_ptr<Layer> {
                          auto layer = f(Config(ser::dumps(c)));
                          if (!layer) {
                            throw ValueError(fmt::format("from_config of '{}' returned no layer", registered));
                          }
                          return layer;
                        }};
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

namespace detail {

Function find_function(const std::string& name, std::string* registered) {
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
  return make_registered(names().losses, registered_name, config_json, "loss");
}
std::shared_ptr<metrics::Metric> make_metric(const std::string& registered_name, const std::string& config_json) {
  return make_registered(names().metrics, registered_name, config_json, "metric");
}
std::string registered_loss_name(const std::string& class_name) { return lookup(names().loss_by_class, class_name); }
std::string registered_metric_name(const std::string& class_name) { return lookup(names().metric_by_class, class_name); }

}  // namespace detail

}  // namespace osprey::keras::saving
