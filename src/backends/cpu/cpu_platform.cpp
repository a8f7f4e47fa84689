#include "backends/cpu/cpu_platform.h"

#include <cstring>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <unistd.h>

#include "backends/cpu/cpu_allocator.h"
#include "backends/cpu/kernels.h"

namespace osprey::cpu {

static std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(pos + 2);
    }
  }
  return "CPU";
}

std::vector<runtime::PhysicalDeviceInfo> CpuPlatform::discover() {
  runtime::PhysicalDeviceInfo info;
  info.type = runtime::DeviceType::CPU;
  info.platform_id = 0;
  info.model_name = cpu_model_name();
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  info.total_memory = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
  info.free_memory = info.total_memory;
  return {info};
}

std::unique_ptr<runtime::Allocator> CpuPlatform::create_allocator(const runtime::PhysicalDeviceInfo&,
                                                                  const runtime::AllocatorOptions& options) {
  return std::make_unique<CpuAllocator>(options.logical_index == 0 ? "cpu" : fmt::format("cpu_{}", options.logical_index));
}

void CpuPlatform::copy(runtime::Device&, void* dst, bool, const void* src, bool, std::size_t bytes) { std::memcpy(dst, src, bytes); }

void CpuPlatform::register_kernels() { register_cpu_kernels(); }

}  // namespace osprey::cpu

namespace osprey::runtime {
void register_builtin_platforms(DeviceManager& manager) {
  manager.add_platform(std::make_unique<cpu::CpuPlatform>());
}
}  // namespace osprey::runtime
