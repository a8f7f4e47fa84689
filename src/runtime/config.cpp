#include "osprey/config.h"

#include <mutex>

#include <fmt/format.h>

#include "core/logging.h"
#include "osprey/errors.h"
#include "runtime/device_manager.h"

namespace osprey::config {

using runtime::DeviceManager;

std::vector<PhysicalDevice> list_physical_devices(const std::string& device_type) {
  auto& dm = DeviceManager::get();
  std::vector<PhysicalDevice> out;
  for (const auto& info : dm.physical_devices()) {
    auto d = dm.to_public(info);
    if (device_type.empty() || d.device_type == device_type) out.push_back(d);
  }
  return out;
}

std::vector<LogicalDevice> list_logical_devices(const std::string& device_type) {
  std::vector<LogicalDevice> out;
  for (const auto* d : DeviceManager::get().devices()) {
    LogicalDevice ld{d->name(), runtime::device_type_name(d->type())};
    if (device_type.empty() || ld.device_type == device_type) out.push_back(ld);
  }
  return out;
}

std::vector<PhysicalDevice> get_visible_devices(const std::string& device_type) {
  auto& dm = DeviceManager::get();
  const auto& phys = dm.physical_devices();
  auto vis = dm.visible();
  std::vector<PhysicalDevice> out;
  for (size_t i = 0; i < phys.size(); ++i) {
    auto d = dm.to_public(phys[i]);
    if (vis[i] && (device_type.empty() || d.device_type == device_type)) out.push_back(d);
  }
  return out;
}

void set_visible_devices(const std::vector<PhysicalDevice>& devices, const std::string& device_type) {
  auto& dm = DeviceManager::get();
  const auto& phys = dm.physical_devices();
  std::vector<bool> vis = dm.visible();
  std::vector<int> chosen;
  for (const auto& d : devices) {
    int idx = dm.physical_index(d);  // throws "Unrecognized device" for unknown ones
    if (!device_type.empty() && d.device_type != device_type) throw ValueError("Unrecognized device: " + repr(d));
    chosen.push_back(idx);
  }
  for (size_t i = 0; i < phys.size(); ++i) {
    if (device_type.empty() || runtime::device_type_name(phys[i].type) == device_type) vis[i] = false;
  }
  for (int idx : chosen) vis[idx] = true;
  dm.set_visible(vis);
}

void set_visible_device_list(const std::string& list) { DeviceManager::get().set_visible_device_list(list); }

void set_visible_devices(const PhysicalDevice& device, const std::string& device_type) {
  set_visible_devices(std::vector<PhysicalDevice>{device}, device_type);
}

void set_logical_device_configuration(const PhysicalDevice& device,
                                      const std::vector<LogicalDeviceConfiguration>& logical_devices) {
  auto& dm = DeviceManager::get();
  dm.set_logical_configuration(dm.physical_index(device), logical_devices);
}

std::optional<std::vector<LogicalDeviceConfiguration>> get_logical_device_configuration(const PhysicalDevice& device) {
  auto& dm = DeviceManager::get();
  return dm.logical_configuration(dm.physical_index(device));
}

void set_soft_device_placement(bool enabled) { DeviceManager::get().soft_placement = enabled; }
bool get_soft_device_placement() { return DeviceManager::get().soft_placement; }

void set_intra_op_parallelism_threads(int n) { DeviceManager::get().set_intra_op_threads(n); }
int get_intra_op_parallelism_threads() { return DeviceManager::get().intra_op_threads(); }
void set_inter_op_parallelism_threads(int n) { DeviceManager::get().set_inter_op_threads(n); }
int get_inter_op_parallelism_threads() { return DeviceManager::get().inter_op_threads(); }

namespace experimental {

void set_memory_growth(const PhysicalDevice& device, bool enable) {
  auto& dm = DeviceManager::get();
  dm.set_memory_growth(dm.physical_index(device), enable);
}

std::optional<bool> get_memory_growth(const PhysicalDevice& device) {
  auto& dm = DeviceManager::get();
  return dm.memory_growth(dm.physical_index(device));
}

static runtime::Device& device_for_stats(const std::string& name) {
  DeviceSpec spec = DeviceSpec::from_string(name);
  if (!spec.device_type || !spec.device_index) {
    throw ValueError("Failed parsing device name: '" + name +
                     "'. Note a valid device string should at least contain a device type and a device index, like "
                     "\"GPU:0\".");
  }
  auto* d = DeviceManager::get().find(*spec.device_type, spec.device_index);
  if (!d) throw ValueError("No matching devices found for '" + name + "'");
  return *d;
}

MemoryInfo get_memory_info(const std::string& device) {
  auto s = device_for_stats(device).allocator().stats();
  return {s.current, s.peak};
}

void reset_memory_stats(const std::string& device) { device_for_stats(device).allocator().reset_peak(); }

int64_t get_memory_usage(const std::string& device) {
  static std::once_flag warned;
  std::call_once(warned, [] {
    log::warning("get_memory_usage (from osprey::config::experimental) is deprecated. Instructions for updating: Use "
                 "osprey::config::experimental::get_memory_info(device).current instead.");
  });
  return get_memory_info(device).current;
}

std::map<std::string, std::string> get_device_details(const PhysicalDevice& device) {
  auto& dm = DeviceManager::get();
  int idx = -1;
  try {
    idx = dm.physical_index(device);
  } catch (const ValueError&) {
    throw ValueError("The PhysicalDevice must be one obtained from calling `tf.config.list_physical_devices`, but got: " +
                     repr(device));
  }
  const auto& info = dm.physical_devices()[idx];
  if (info.type != runtime::DeviceType::GPU) return {};
  return {{"device_name", info.model_name}, {"compute_capability", fmt::format("{}.{}", info.cc_major, info.cc_minor)}};
}

void enable_tensor_float_32_execution(bool enabled) { DeviceManager::get().tensor_float_32 = enabled; }
bool tensor_float_32_execution_enabled() { return DeviceManager::get().tensor_float_32; }

}  // namespace experimental
}  // namespace osprey::config

namespace osprey::debugging {
void set_log_device_placement(bool enabled) { runtime::DeviceManager::get().log_placement = enabled; }
bool get_log_device_placement() { return runtime::DeviceManager::get().log_placement; }
}  // namespace osprey::debugging
