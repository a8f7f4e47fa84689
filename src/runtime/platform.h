// A platform reports the physical devices of one kind (CPU, CUDA, the test platform) and makes their allocators.
// Platforms are registered explicitly by the DeviceManager, never through static initialisers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/device_type.h"

namespace osprey::runtime {

class Platform;
class Device;

/// What a platform knows of one physical device.
struct PhysicalDeviceInfo {
  DeviceType type = DeviceType::CPU;
  int platform_id = 0;            ///< id after CUDA_VISIBLE_DEVICES; the N in /physical_device:GPU:N
  std::string model_name;         ///< "NVIDIA H200", or the CPU model
  int64_t total_memory = 0;       ///< bytes
  int64_t free_memory = 0;        ///< bytes, at discovery
  std::string pci_bus_id;         ///< "0000:61:00.0"
  std::string uuid;               ///< "GPU-8932f937-..."
  int cc_major = 0, cc_minor = 0; ///< compute capability
  Platform* platform = nullptr;
};

/// How a logical device's allocator should behave.
struct AllocatorOptions {
  bool allow_growth = false;            ///< grow on demand instead of reserving up front
  std::optional<int64_t> memory_limit;  ///< bytes; empty: the platform's default
  int logical_index = 0;                ///< the N of /device:GPU:N, for names
};

/// What a platform found when it looked for devices: a description for `osprey doctor` and, when it found none,
/// why and what to do (the runtime's "why no GPU" record).
struct PlatformStatus {
  std::string description;  ///< "driver 580.65.06 (CUDA 13.0), runtime 13.0"; "" if nothing to say
  std::string reason;       ///< empty when devices were found
  std::string fix;
};

/// Bumped whenever Platform's layout changes; a plug-in built against another version is refused.
inline constexpr int kPluginAbiVersion = 3;

/// A piece of device work captured once (Platform::capture) and launched again as a whole: a CUDA graph.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  /// Queues the captured work on its device again (the same kernels on the same buffers).
  virtual void launch() = 0;
};

class Platform {
 public:
  virtual ~Platform() = default;
  virtual DeviceType type() const = 0;
  /// Short name for messages: "CPU", "CUDA", "TestGPU".
  virtual std::string name() const = 0;
  /// The physical devices, numbered by platform id. Called once per runtime.
  virtual std::vector<PhysicalDeviceInfo> discover() = 0;
  /// An allocator for one logical device carved out of `device`.
  virtual std::unique_ptr<Allocator> create_allocator(const PhysicalDeviceInfo& device,
                                                      const AllocatorOptions& options) = 0;
  /// Copies bytes between host memory and the memory of `device`, one of this platform's logical devices (either
  /// side may be host; both on the device is a copy within it, or from another device of this platform). Returns
  /// when the data can be used: host memory written, or the copy ordered before the device's later work.
  virtual void copy(Device& device, void* dst, bool dst_on_device, const void* src, bool src_on_device,
                    std::size_t bytes) = 0;
  /// Puts this platform's kernels into the global kernel table. Called once, at registration.
  virtual void register_kernels() = 0;
  /// Waits until the work queued on `device` has finished (before another device reads its memory).
  virtual void synchronize(Device& /*device*/) {}
  /// Copies bytes from `src`'s memory to `dst`'s, two different devices of this platform: after the work queued
  /// on `src` (that wrote the source), and before any later work on either device (a free of the source on
  /// `src`'s queue must not overtake the copy). The default waits for `src`, then copies on `dst`'s queue and
  /// waits for it.
  virtual void copy_between(Device& src, Device& dst, void* dst_ptr, const void* src_ptr, std::size_t bytes) {
    synchronize(src);
    copy(dst, dst_ptr, true, src_ptr, true, bytes);
    synchronize(dst);
  }
  /// True when the platform has a collective all-reduce across its devices (NCCL for CUDA).
  virtual bool has_collective_all_reduce() const { return false; }
  /// SUM all-reduce of `count` float32 values in `buffers[i]` on `devices[i]` (each device of this platform, one
  /// call for all of them); on return every buffer holds the sum. Only when has_collective_all_reduce().
  virtual void all_reduce_sum(const std::vector<Device*>& /*devices*/, const std::vector<float*>& /*buffers*/,
                              std::size_t /*count*/) {}
  /// After discover(): what was found, or why nothing was.
  virtual PlatformStatus status() const { return {}; }
  /// GPUs below this compute capability are ignored at discovery, as TensorFlow does ({0, 0}: no minimum).
  virtual std::pair<int, int> min_compute_capability() const { return {0, 0}; }
  /// Captures the kernel launches `work` queues on `device` as one graph, without running them, or returns nullptr
  /// (the platform has no graphs, they are switched off, or `work` did something a graph cannot hold, such as
  /// waiting for the device); the device is then usable as before. A recorded training step is replayed this way.
  /// `work` may be kept and called again while the returned graph lives.
  virtual std::unique_ptr<DeviceGraph> capture(Device& /*device*/, const std::function<void()>& /*work*/) {
    return nullptr;
  }
};

}  // namespace osprey::runtime
