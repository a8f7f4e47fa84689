// The kinds of device the kernel table is indexed by.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace osprey::runtime {

enum class DeviceType : uint8_t { CPU = 0, GPU = 1 };
inline constexpr int kNumDeviceTypes = 2;

/// "CPU" or "GPU".
const char* device_type_name(DeviceType type);
/// Exact, upper-case names only ("CPU", "GPU"); empty otherwise.
std::optional<DeviceType> device_type_from_name(const std::string& name);

}  // namespace osprey::runtime
