// The table of kernels indexed by (op, device type). Kernels are stored type-erased here; the ops layer owns
// their signature (ops/kernel.h) and is the only code that reads the table.
#pragma once

#include "runtime/device_type.h"

namespace osprey::runtime {

using ErasedKernel = void (*)();
inline constexpr int kMaxOps = 128;

/// Stores `kernel` for (op, type), replacing any earlier one.
void set_kernel(int op, DeviceType type, ErasedKernel kernel);
/// The kernel for (op, type), or nullptr.
ErasedKernel get_kernel(int op, DeviceType type);
/// Forgets every kernel (test reset).
void clear_kernels();

}  // namespace osprey::runtime
