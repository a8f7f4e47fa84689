// The internals of a Tensor, shared by every layer of the library.
#pragma once

#include <memory>

#include "osprey/tensor.h"
#include "runtime/device_manager.h"

namespace osprey {

/// A device buffer; freed through its device's allocator when the last tensor that uses it goes.
struct Storage {
  Storage(runtime::Device& d, std::size_t n) : device(&d), bytes(n), data(d.allocator().allocate(n)) {}
  ~Storage() { device->allocator().deallocate(data, bytes); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  runtime::Device* device;
  std::size_t bytes;
  void* data;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  std::size_t offset = 0;  ///< bytes into storage
  Shape shape;
  DType dtype = float32;
  bool trainable_variable = false;  ///< watched by every GradientTape automatically

  void* data() const { return static_cast<char*>(storage->data) + offset; }
  runtime::Device& device() const { return *storage->device; }
};

namespace runtime {
/// The device new tensors go to: the innermost DeviceScope's (resolved), else the default device.
Device& current_device();
}  // namespace runtime

/// Cross-device/buffer copies (Tensor::to and friends) made on this thread so far. A recorded step plan checks
/// it: a copy inside the recorded region would be frozen at recording time, so such steps stay eager.
uint64_t tensor_copies_on_this_thread();

}  // namespace osprey
