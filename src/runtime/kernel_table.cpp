#include "runtime/kernel_table.h"

#include <array>

#include "osprey/errors.h"

namespace osprey::runtime {

static std::array<std::array<ErasedKernel, kNumDeviceTypes>, kMaxOps>& table() {
  static std::array<std::array<ErasedKernel, kNumDeviceTypes>, kMaxOps> t{};
  return t;
}

void set_kernel(int op, DeviceType type, ErasedKernel kernel) {
  if (op < 0 || op >= kMaxOps) throw InternalError("kernel table: op id out of range");
  table()[op][static_cast<int>(type)] = kernel;
}

ErasedKernel get_kernel(int op, DeviceType type) { return table()[op][static_cast<int>(type)]; }

void clear_kernels() { table() = {}; }

}  // namespace osprey::runtime
