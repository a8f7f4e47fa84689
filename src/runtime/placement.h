// Choosing a device for an op or a new tensor, with TensorFlow's eager rules (SelectDevice + soft placement).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "osprey/device.h"
#include "runtime/device_manager.h"

namespace osprey::runtime {

/// The device for an op named `op_name` (for messages) that has kernels for the types `supported` accepts.
/// `spec` is the requested device (a DeviceScope's), `preferred` the device of the op's inputs.
/// Without a spec: `preferred` if supported, else the first supported device in priority order (GPU, then CPU).
/// With a spec: the first supported device matching it; if none, soft placement drops type and index, and
/// without soft placement it throws TensorFlow's InvalidArgumentError.
Device& select_device(const std::optional<DeviceSpec>& spec, Device* preferred,
                      const std::function<bool(DeviceType)>& supported, const char* op_name);

}  // namespace osprey::runtime
