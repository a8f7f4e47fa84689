#include "osprey/device.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>

#include "core/logging.h"
#include "osprey/errors.h"
#include "runtime/device_manager.h"
#include "runtime/device_scope_state.h"

namespace osprey {

std::string repr(const PhysicalDevice& d) {
  return "PhysicalDevice(name='" + d.name + "', device_type='" + d.device_type + "')";
}
std::string repr(const LogicalDevice& d) {
  return "LogicalDevice(name='" + d.name + "', device_type='" + d.device_type + "')";
}
std::ostream& operator<<(std::ostream& os, const PhysicalDevice& d) { return os << repr(d); }
std::ostream& operator<<(std::ostream& os, const LogicalDevice& d) { return os << repr(d); }

static std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
static std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Python's int(): optional sign and surrounding whitespace; anything else is the ValueError Python raises.
static int parse_int(const std::string& s) {
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(s, &used);
  } catch (...) {
    used = std::string::npos;
  }
  if (used != s.size() || s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) {
    throw ValueError("invalid literal for int() with base 10: '" + s + "'");
  }
  return v;
}

static bool is_device_type(const std::string& s) {
  static const std::vector<std::string> types = {"CPU", "GPU", "TPU", "CUSTOM", "EPU"};
  return std::find(types.begin(), types.end(), upper(s)) != types.end();
}

DeviceSpec DeviceSpec::from_string(const std::string& spec) {
  DeviceSpec out;
  auto set_device = [&](const std::string& type, const std::optional<std::string>& index) {
    if (out.device_type && *out.device_type != upper(type)) {
      throw ValueError("Cannot specify multiple device types: " + spec);
    }
    out.device_type = upper(type);
    out.device_index = (!index || *index == "*") ? std::nullopt : std::optional<int>(parse_int(*index));
  };
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find('/', start);
    if (end == std::string::npos) end = spec.size();
    std::string part = spec.substr(start, end - start);
    start = end + 1;
    if (part.empty()) continue;
    std::vector<std::string> y;
    size_t s = 0;
    while (true) {
      size_t e = part.find(':', s);
      y.push_back(part.substr(s, e == std::string::npos ? std::string::npos : e - s));
      if (e == std::string::npos) break;
      s = e + 1;
    }
    const size_t ly = y.size();
    if (ly == 2 && lower(y[0]) == "job") {
      out.job = y[1];
    } else if (ly == 2 && lower(y[0]) == "replica") {
      out.replica = parse_int(y[1]);
    } else if (ly == 2 && lower(y[0]) == "task") {
      out.task = parse_int(y[1]);
    } else if ((ly == 1 || ly == 2) && is_device_type(y[0])) {
      set_device(y[0], ly == 2 ? std::optional<std::string>(y[1]) : std::nullopt);
    } else if (ly == 3 && lower(y[0]) == "device") {
      set_device(y[1], y[2]);
    } else {
      throw ValueError("Unknown attribute: '" + part + "' in '" + spec + "'");
    }
  }
  return out;
}

std::string DeviceSpec::to_string() const {
  std::string s;
  if (job) s += "/job:" + *job;
  if (replica) s += "/replica:" + std::to_string(*replica);
  if (task) s += "/task:" + std::to_string(*task);
  if (device_type) s += "/device:" + *device_type + ":" + (device_index ? std::to_string(*device_index) : "*");
  return s;
}

DeviceSpec DeviceSpec::merged_with(const DeviceSpec& inner) const {
  DeviceSpec out = *this;
  if (inner.job) out.job = inner.job;
  if (inner.replica) out.replica = inner.replica;
  if (inner.task) out.task = inner.task;
  if (inner.device_type) {
    out.device_type = inner.device_type;
    out.device_index = inner.device_index;
  }
  return out;
}

namespace runtime {
thread_local std::optional<DeviceSpec> t_current_spec;
thread_local int t_scope_depth = 0;
const std::optional<DeviceSpec>& current_device_spec() { return t_current_spec; }
}  // namespace runtime

DeviceScope::DeviceScope(const std::string& spec) {
  DeviceSpec parsed = DeviceSpec::from_string(spec);
  if (parsed.device_index && *parsed.device_index < 0) {  // no device has one: an error now, not a silent fallback
    throw InvalidArgumentError(fmt::format("Device index {} in \"{}\" is negative; devices are numbered from 0 "
                                          "(list them with osprey::config::list_logical_devices())",
                                          *parsed.device_index, spec));
  }
  runtime::DeviceManager::get().ensure_initialized();
  previous_ = runtime::t_current_spec;
  DeviceSpec base = previous_ ? *previous_ : DeviceSpec{"localhost", 0, 0, std::nullopt, std::nullopt};
  runtime::t_current_spec = base.merged_with(parsed);
  depth_ = ++runtime::t_scope_depth;
}

DeviceScope::DeviceScope(std::nullptr_t) {
  runtime::DeviceManager::get().ensure_initialized();
  previous_ = runtime::t_current_spec;
  runtime::t_current_spec.reset();
  depth_ = ++runtime::t_scope_depth;
}

DeviceScope::~DeviceScope() {
  // RAII gives LIFO order on one thread. Scopes held in optionals or on the heap can be ended out of order: that
  // is TensorFlow's RuntimeError, but a destructor cannot throw, so it is logged and the device is left as is.
  // A scope destroyed on another thread leaves that thread untouched.
  if (runtime::t_scope_depth == depth_) {
    runtime::t_current_spec = previous_;
    --runtime::t_scope_depth;
  } else if (runtime::t_scope_depth > depth_) {
    log::error("Exiting device scope without proper scope nesting");
  }
}

std::string current_device_name() {
  return runtime::t_current_spec ? runtime::t_current_spec->to_string() : std::string();
}

}  // namespace osprey
