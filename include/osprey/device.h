// Device identity as TensorFlow presents it: physical and logical devices, device specs and scopes.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace osprey {

/// A physical device found by a platform, e.g. {"/physical_device:GPU:0", "GPU"} (tf.config.PhysicalDevice).
struct PhysicalDevice {
  std::string name;
  std::string device_type;
  bool operator==(const PhysicalDevice&) const = default;
};
/// A device the runtime created, e.g. {"/device:GPU:0", "GPU"} (tf.config.LogicalDevice).
struct LogicalDevice {
  std::string name;
  std::string device_type;
  bool operator==(const LogicalDevice&) const = default;
};
/// Configuration of one logical device carved out of a physical one (tf.config.LogicalDeviceConfiguration).
/// memory_limit is in MiB; it is required for GPUs and not supported for CPUs, as in TensorFlow.
struct LogicalDeviceConfiguration {
  std::optional<int64_t> memory_limit{};
  int experimental_priority = 0;
  int experimental_device_ordinal = 0;
  bool operator==(const LogicalDeviceConfiguration&) const = default;
};

std::ostream& operator<<(std::ostream& os, const PhysicalDevice& d);  ///< PhysicalDevice(name='...', device_type='GPU')
std::ostream& operator<<(std::ostream& os, const LogicalDevice& d);   ///< LogicalDevice(name='...', device_type='GPU')
std::string repr(const PhysicalDevice& d);
std::string repr(const LogicalDevice& d);

/// A parsed device specification (tf.DeviceSpec): every field optional; index -1 with a type means "any".
/// Accepts "/GPU:0", "GPU:0", "gpu:0", "/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:0", "/GPU:*", "GPU".
struct DeviceSpec {
  std::optional<std::string> job;
  std::optional<int> replica;
  std::optional<int> task;
  std::optional<std::string> device_type;  ///< upper case: "CPU", "GPU"
  std::optional<int> device_index;         ///< empty: any index

  /// Parses a spec; throws ValueError with TensorFlow's messages on bad input.
  static DeviceSpec from_string(const std::string& spec);
  /// Canonical form "/job:<j>/replica:<r>/task:<t>/device:<TYPE>:<i|*>", missing parts omitted.
  std::string to_string() const;
  /// Fields set in `inner` override this spec's (nested tf.device semantics).
  DeviceSpec merged_with(const DeviceSpec& inner) const;
  bool operator==(const DeviceSpec&) const = default;
};

/// Places every op created on this thread inside it on the given device (`with tf.device(spec):`).
/// Entering a scope initialises the runtime. Scopes nest; an inner spec overrides only the fields it names,
/// and the previous device is always restored on exit. Not copyable or movable.
class DeviceScope {
 public:
  explicit DeviceScope(const std::string& spec);
  explicit DeviceScope(const char* spec) : DeviceScope(std::string(spec)) {}
  explicit DeviceScope(const LogicalDevice& device) : DeviceScope(device.name) {}
  /// `tf.device(None)`: automatic placement inside this scope.
  explicit DeviceScope(std::nullptr_t);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  std::optional<DeviceSpec> previous_;
  int depth_;
};

/// The device spec of the innermost DeviceScope on this thread, fully qualified as TensorFlow's eager context
/// reports it ("/job:localhost/replica:0/task:0/device:GPU:1"); empty when no scope is active.
std::string current_device_name();

}  // namespace osprey
