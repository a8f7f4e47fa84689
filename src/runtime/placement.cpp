#include "runtime/placement.h"

#include <fmt/format.h>

#include "osprey/errors.h"
#include "runtime/device_scope_state.h"

namespace osprey::runtime {

static bool matches(const DeviceSpec& spec, const Device& d) {
  if (spec.job && *spec.job != "localhost") return false;
  if (spec.replica && *spec.replica != 0) return false;
  if (spec.task && *spec.task != 0) return false;
  if (spec.device_type && *spec.device_type != device_type_name(d.type())) return false;
  if (spec.device_index && *spec.device_index != d.index()) return false;
  return true;
}

Device& select_device(const std::optional<DeviceSpec>& spec, Device* preferred,
                      const std::function<bool(DeviceType)>& supported, const char* op_name) {
  auto& dm = DeviceManager::get();
  const auto& devices = dm.devices();
  auto first_supported = [&](const DeviceSpec* s) -> Device* {
    for (DeviceType t : {DeviceType::GPU, DeviceType::CPU}) {
      if (!supported(t)) continue;
      for (Device* d : devices) {
        if (d->type() == t && (!s || matches(*s, *d))) return d;
      }
    }
    return nullptr;
  };
  if (!spec) {
    if (preferred && supported(preferred->type())) return *preferred;
    if (Device* d = first_supported(nullptr)) return *d;
  } else {
    if (Device* d = first_supported(&*spec)) return *d;
    if (dm.soft_placement) {
      if (Device* d = first_supported(nullptr)) return *d;
    }
  }
  std::string types, all;
  for (DeviceType t : {DeviceType::GPU, DeviceType::CPU}) {
    if (supported(t)) types += std::string(types.empty() ? "" : ", ") + device_type_name(t);
  }
  for (Device* d : devices) all += (all.empty() ? "" : ", ") + d->full_name();
  if (!spec || (!spec->device_type && !spec->device_index)) {
    throw InvalidArgumentError(fmt::format(
        "No supported device found in available devices [{}]. enable_soft_placement={}. Supported devices types [{}]. "
        "[Op:{}]",
        all, dm.soft_placement ? 1 : 0, types, op_name));
  }
  throw InvalidArgumentError(fmt::format(
      "Could not satisfy device specification '{}'. enable_soft_placement={}. Supported device types [{}]. All "
      "available devices [{}]. [Op:{}]",
      spec->to_string(), dm.soft_placement ? 1 : 0, types, all, op_name));
}

}  // namespace osprey::runtime
