// The thread's innermost DeviceScope, read by placement.
#pragma once

#include <optional>

#include "osprey/device.h"

namespace osprey::runtime {
/// The merged spec of the innermost DeviceScope on this thread; empty means automatic placement.
const std::optional<DeviceSpec>& current_device_spec();
}  // namespace osprey::runtime
