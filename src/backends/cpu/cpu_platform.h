// The CPU platform: one physical CPU device (/physical_device:CPU:0), splittable into logical CPUs.
#pragma once

#include "runtime/device_manager.h"
#include "runtime/platform.h"

namespace osprey::cpu {

class CpuPlatform : public runtime::Platform {
 public:
  runtime::DeviceType type() const override { return runtime::DeviceType::CPU; }
  std::string name() const override { return "CPU"; }
  std::vector<runtime::PhysicalDeviceInfo> discover() override;
  std::unique_ptr<runtime::Allocator> create_allocator(const runtime::PhysicalDeviceInfo& device,
                                                       const runtime::AllocatorOptions& options) override;
  void copy(runtime::Device& device, void* dst, bool dst_on_device, const void* src, bool src_on_device, std::size_t bytes) override;
  void register_kernels() override;
};

}  // namespace osprey::cpu
