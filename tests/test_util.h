// Helpers shared by the tests.
#pragma once

#include "runtime/device_manager.h"

namespace osprey::testing {
/// A fresh runtime, as a new process would see it (the test-only reset hook).
inline void reset_runtime() { runtime::DeviceManager::get().reset_for_testing(); }
}  // namespace osprey::testing
