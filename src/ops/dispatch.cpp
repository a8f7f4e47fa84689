#include <fmt/format.h>

#include "core/logging.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "runtime/device_scope_state.h"
#include "runtime/kernel_table.h"
#include "runtime/placement.h"
#include "tensor/tensor_impl.h"

namespace osprey::ops {

void register_kernel(OpId op, runtime::DeviceType type, KernelFn kernel) {
  runtime::set_kernel(static_cast<int>(op), type, reinterpret_cast<runtime::ErasedKernel>(kernel));
}

static KernelFn lookup(OpId op, runtime::DeviceType type) {
  return reinterpret_cast<KernelFn>(runtime::get_kernel(static_cast<int>(op), type));
}

runtime::Device& place(OpId op, const char* op_name, std::span<Tensor> inputs, bool pinned) {
  auto& dm = runtime::DeviceManager::get();
  dm.ensure_initialized();
  runtime::Device* preferred = nullptr;
  for (const auto& t : inputs) {
    if (t.defined()) {
      preferred = &t.device_ref();
      break;
    }
  }
  const auto& spec = runtime::current_device_spec();
  runtime::Device* device;
  if (pinned) {
    if (!lookup(op, preferred->type())) {
      throw NotFoundError(fmt::format("Op {} has no kernel for {}, where its variable lives ({}).", op_name,
                                      runtime::device_type_name(preferred->type()), preferred->name()));
    }
    device = preferred;
  } else if (!spec && preferred && lookup(op, preferred->type())) {
    device = preferred;  // fast path: stay where the data is
  } else {
    auto supported = [op](runtime::DeviceType t) { return lookup(op, t) != nullptr; };
    device = &runtime::select_device(spec, preferred, supported, op_name);
  }
  for (auto& t : inputs) {
    if (t.defined() && &t.device_ref() != device) t = t.to(*device);  // silent device policy
  }
  if (dm.log_placement.load(std::memory_order_relaxed)) {
    log::info(fmt::format("Executing op {} in device {}", op_name, device->full_name()));
  }
  return *device;
}

void run(OpId op, runtime::Device& device, std::span<const Tensor> inputs, std::span<Tensor> outputs,
         const void* attrs) {
  KernelFn fn = lookup(op, device.type());
  if (!fn) throw InternalError("run(): no kernel for the device place() chose");
  fn(KernelContext{inputs, outputs, attrs, &device});
}

}  // namespace osprey::ops
