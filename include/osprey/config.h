// tf.config and tf.debugging: device discovery, visibility, memory growth, logical devices, placement options.
// Setters store their value until the runtime initialises (the first logical-device use); afterwards a changed
// value throws RuntimeError with TensorFlow's text and an unchanged one is a no-op.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/device.h"

namespace osprey::config {

/// Physical devices of a type ("CPU", "GPU"; exact, case-sensitive), or all when empty. CPU first.
/// Does not initialise the runtime.
std::vector<PhysicalDevice> list_physical_devices(const std::string& device_type = "");
/// Logical devices of a type, in runtime order (CPU first). Initialises the runtime.
std::vector<LogicalDevice> list_logical_devices(const std::string& device_type = "");
/// Physical devices the runtime will use (all by default). Does not initialise the runtime.
std::vector<PhysicalDevice> get_visible_devices(const std::string& device_type = "");
/// Restricts the runtime to `devices`. With a type, other types keep their visibility; without, the list is exact.
void set_visible_devices(const std::vector<PhysicalDevice>& devices, const std::string& device_type = "");
void set_visible_devices(const PhysicalDevice& device, const std::string& device_type = "");
/// TensorFlow's GPUOptions.visible_device_list (the C++ session option): comma-separated platform GPU ids in the
/// order they get TF ids, e.g. "2,0" makes GPU:0 the platform's GPU 2 and GPU:1 its GPU 0; "" restores all.
/// Throws InvalidArgumentError with TensorFlow's texts for bad entries, ids out of range and duplicates.
void set_visible_device_list(const std::string& list);

/// Splits a physical device into logical devices (memory_limit in MiB required for GPUs, forbidden for CPUs).
void set_logical_device_configuration(const PhysicalDevice& device,
                                      const std::vector<LogicalDeviceConfiguration>& logical_devices);
/// The configuration set for a device, or empty when none was set.
std::optional<std::vector<LogicalDeviceConfiguration>> get_logical_device_configuration(const PhysicalDevice& device);

/// Soft placement: ops that cannot run where asked fall back to a device that can run them (default true).
void set_soft_device_placement(bool enabled);
bool get_soft_device_placement();

/// Threads used inside one op (0 = the system picks: all cores). Frozen at initialisation.
void set_intra_op_parallelism_threads(int num_threads);
int get_intra_op_parallelism_threads();
/// Threads used to run independent ops (0 = the system picks). Frozen at initialisation.
void set_inter_op_parallelism_threads(int num_threads);
int get_inter_op_parallelism_threads();

namespace experimental {
/// Grow the device's memory on demand instead of reserving it up front. GPUs only.
void set_memory_growth(const PhysicalDevice& device, bool enable);
/// The growth setting, or empty before any set.
std::optional<bool> get_memory_growth(const PhysicalDevice& device);

/// Current and peak bytes allocated on a logical device, from its allocator.
struct MemoryInfo {
  int64_t current = 0;
  int64_t peak = 0;
};
/// Memory statistics of a device given as "GPU:0", "/device:CPU:0", ... Initialises the runtime. Unlike older
/// TensorFlow versions, CPU devices report their allocator's statistics too instead of raising.
MemoryInfo get_memory_info(const std::string& device);
/// Resets the peak of a device's statistics to its current use.
void reset_memory_stats(const std::string& device);
/// Deprecated (as in TensorFlow): get_memory_info(device).current; logs a deprecation warning once.
int64_t get_memory_usage(const std::string& device);

/// Details of a physical device: {"device_name": ..., "compute_capability": "9.0"} for GPUs, empty for CPUs.
std::map<std::string, std::string> get_device_details(const PhysicalDevice& device);
/// TensorFloat-32 for float32 matmuls on GPUs that have it (inputs rounded to a 10-bit mantissa, float32
/// accumulation). On by default, as in TensorFlow; can be switched at any time. No effect on the CPU.
void enable_tensor_float_32_execution(bool enabled);
bool tensor_float_32_execution_enabled();
}  // namespace experimental

}  // namespace osprey::config

namespace osprey::debugging {
/// Log "Executing op <Op> in device <full name>" on stderr for every op. Can be toggled at any time.
void set_log_device_placement(bool enabled);
bool get_log_device_placement();
}  // namespace osprey::debugging
