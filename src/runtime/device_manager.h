// The DeviceManager turns the platforms' physical devices into logical devices according to the configuration
// (visibility, memory growth, logical splits), and freezes that configuration when the runtime initialises.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/device.h"
#include "runtime/allocator.h"
#include "runtime/platform.h"

namespace osprey::runtime {

/// A logical device: what tensors live on and ops run on. Lives as long as the process.
class Device {
 public:
  Device(DeviceType type, int index, const PhysicalDeviceInfo& physical, std::unique_ptr<Allocator> allocator);

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  /// "/device:GPU:0"
  const std::string& name() const { return name_; }
  /// "/job:localhost/replica:0/task:0/device:GPU:0"
  const std::string& full_name() const { return full_name_; }
  const PhysicalDeviceInfo& physical() const { return physical_; }
  Platform& platform() const { return *physical_.platform; }
  Allocator& allocator() const { return *allocator_; }
  /// True when tensors on this device live in ordinary host memory that CPU code may read.
  bool host_memory() const { return type_ == DeviceType::CPU; }

 private:
  DeviceType type_;
  int index_;
  PhysicalDeviceInfo physical_;
  std::unique_ptr<Allocator> allocator_;
  std::string name_, full_name_;
};

/// Why no GPU is visible, recorded during discovery for `osprey doctor`.
struct GpuAvailability {
  std::string reason;  ///< empty when at least one GPU is visible
  std::string fix;     ///< what the user can do
};

/// What happened to the CUDA plug-in (libosprey_cuda.so) when the runtime looked for it.
struct PluginStatus {
  bool built = false;   ///< this build of Osprey includes the plug-in
  bool tried = false;   ///< the runtime looked for it (it does so at the first device discovery)
  std::string path;     ///< the file it loaded, or tried to
  bool loaded = false;
  std::string error;    ///< why it is not loaded: not found (with the places looked in), the loader's message, ...
};

/// How many CPUs this thread may run on (its affinity mask: a container's cpuset or `taskset` can leave fewer than
/// the machine has); the machine's count when the mask cannot be read.
int allowed_cpus();
/// The intra-op thread count the environment asks for, and the variable that asked: TF_NUM_INTRAOP_THREADS, else
/// OMP_NUM_THREADS (its first level); nothing when neither holds a positive integer.
std::optional<std::pair<std::string, int>> intra_op_threads_from_environment();

class DeviceManager {
 public:
  static DeviceManager& get();

  /// Physical devices of every platform, CPU first. Discovers on first call; never initialises.
  const std::vector<PhysicalDeviceInfo>& physical_devices();
  /// Index into physical_devices() of a user's PhysicalDevice; throws ValueError("Unrecognized device: ...").
  int physical_index(const PhysicalDevice& device);
  PhysicalDevice to_public(const PhysicalDeviceInfo& info) const;

  // Configuration (stored until initialisation).
  std::vector<bool> visible();
  /// Sets which physical devices are used; GPUs get TF ids in platform order.
  void set_visible(const std::vector<bool>& visible);
  /// TensorFlow's GPUOptions.visible_device_list: platform GPU ids in TF id order ("2,0": GPU:0 is platform GPU 2).
  void set_visible_device_list(const std::string& list);
  std::optional<bool> memory_growth(int physical_index);
  void set_memory_growth(int physical_index, bool enable);
  std::optional<std::vector<LogicalDeviceConfiguration>> logical_configuration(int physical_index);
  void set_logical_configuration(int physical_index, const std::vector<LogicalDeviceConfiguration>& configs);
  /// The configured intra-op thread count (0: the system's choice, threads_for_intra_op()).
  int intra_op_threads() const { return intra_op_threads_; }
  /// The intra-op threads in use: the configured count, else the environment's (TF_NUM_INTRAOP_THREADS or
  /// OMP_NUM_THREADS), else one per CPU this process may run on (its affinity mask, as TensorFlow's default: a
  /// container or `taskset` limited to fewer CPUs than the machine has).
  int threads_for_intra_op() const;
  void set_intra_op_threads(int n);
  int inter_op_threads() const { return inter_op_threads_; }
  void set_inter_op_threads(int n);

  std::atomic<bool> soft_placement{true};
  std::atomic<bool> log_placement{false};
  std::atomic<bool> tensor_float_32{true};

  /// Creates the logical devices; afterwards the configuration is frozen. Idempotent and thread-safe.
  void ensure_initialized();
  bool initialized() const { return initialized_.load(std::memory_order_acquire); }
  /// Logical devices in runtime order (CPU first). Initialises.
  const std::vector<Device*>& devices();
  /// The default device for ops: the first logical GPU, else CPU:0. Initialises.
  Device& default_device();
  /// CPU:0, where host data lives. Initialises.
  Device& host_device();
  /// The first device matching the spec's type and index, or nullptr. Initialises.
  Device* find(const std::string& device_type, std::optional<int> index);

  GpuAvailability gpu_availability();
  PluginStatus plugin_status();
  /// Each registered platform's name and status (after discovery).
  std::vector<std::pair<std::string, PlatformStatus>> platform_statuses();
  /// GPUs a platform reported but the runtime ignored (compute capability below the minimum, or a device that
  /// could not be set up), with why.
  std::vector<std::string> ignored_gpus();

  /// Registers an extra platform before discovery (tests, plug-ins).
  void add_platform(std::unique_ptr<Platform> platform);
  /// Test-only: forget all configuration and devices, as a fresh process would (old devices stay allocated so
  /// that stray tensors never dangle). Without `load_plugins` the CUDA plug-in is not looked for (tests that
  /// install the test platform).
  void reset_for_testing(bool load_plugins = true);

 private:
  DeviceManager();
  void discover_locked();
  /// Throws RuntimeError(what) once initialised; callers return early when the value is unchanged.
  void check_mutable_locked(const char* what);

  std::recursive_mutex mu_;
  std::vector<std::unique_ptr<Platform>> platforms_;
  bool discovered_ = false;
  std::vector<PhysicalDeviceInfo> physical_;
  std::vector<bool> visible_;
  std::vector<int> gpu_order_;  ///< physical indices of GPUs in TF id order (visible ones are used)
  std::map<int, bool> growth_;
  std::map<int, std::vector<LogicalDeviceConfiguration>> logical_configs_;
  int intra_op_threads_ = 0, inter_op_threads_ = 0;
  std::atomic<bool> initialized_{false};
  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<std::unique_ptr<Device>> retired_;
  std::vector<Device*> devices_;
  Device* default_device_ = nullptr;
  Device* host_device_ = nullptr;
  bool load_plugins_ = true;
  PluginStatus plugin_status_;
  std::vector<std::string> ignored_gpus_;
  bool failed_gpus_ = false;  // a GPU's device could not be created (its error is in ignored_gpus_)
};

/// Looks for the CUDA plug-in (OSPREY_CUDA_PLUGIN, else next to libosprey.so, else the install's plug-in
/// directory) and creates its platform. Never throws: failures are in the status.
std::unique_ptr<Platform> load_cuda_plugin(PluginStatus& status);

/// Registers the built-in platforms (CPU always) with a manager. Called by the DeviceManager itself.
void register_builtin_platforms(DeviceManager& manager);

}  // namespace osprey::runtime
