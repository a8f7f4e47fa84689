// The device whose kernel is running on this thread. Inside a kernel the device's own memory is addressable
// (device pointers for a GPU kernel), so Tensor::data() allows it there and nowhere else.
#pragma once

namespace osprey::runtime {

class Device;

/// The device of the kernel running on this thread, or nullptr outside kernels.
const Device* executing_device();

/// Marks a kernel's execution on `device` for its lifetime (nests: the previous device is restored).
class ExecutingDevice {
 public:
  explicit ExecutingDevice(const Device* device);
  ~ExecutingDevice();
  ExecutingDevice(const ExecutingDevice&) = delete;
  ExecutingDevice& operator=(const ExecutingDevice&) = delete;

 private:
  const Device* previous_;
};

}  // namespace osprey::runtime
