#include "runtime/executing_device.h"

namespace osprey::runtime {

static thread_local const Device* current = nullptr;

const Device* executing_device() { return current; }

ExecutingDevice::ExecutingDevice(const Device* device) : previous_(current) { current = device; }
ExecutingDevice::~ExecutingDevice() { current = previous_; }

}  // namespace osprey::runtime
