#include "runtime/device_manager.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/env.h"
#include "core/logging.h"
#include "osprey/errors.h"
#include "runtime/kernel_table.h"
#include "runtime/memory_policy.h"
#include "runtime/plugin_paths.h"
#include "runtime/visible_devices.h"

namespace osprey::runtime {

const char* device_type_name(DeviceType type) { return type == DeviceType::CPU ? "CPU" : "GPU"; }

std::optional<DeviceType> device_type_from_name(const std::string& name) {
  if (name == "CPU") return DeviceType::CPU;
  if (name == "GPU") return DeviceType::GPU;
  return std::nullopt;
}

Device::Device(DeviceType type, int index, const PhysicalDeviceInfo& physical, std::unique_ptr<Allocator> allocator)
    : type_(type), index_(index), physical_(physical), allocator_(std::move(allocator)) {
  name_ = fmt::format("/device:{}:{}", device_type_name(type), index);
  full_name_ = "/job:localhost/replica:0/task:0" + name_;
}

DeviceManager& DeviceManager::get() {
  static DeviceManager* manager = new DeviceManager();  // never destroyed: tensors may outlive static teardown
  return *manager;
}

namespace {
// TF32 is on by default, as in TensorFlow; NVIDIA_TF32_OVERRIDE=0, which makes cuBLAS and cuDNN (and so TensorFlow)
// compute in full float32, turns it off here too.
bool tensor_float_32_default() {
  const auto v = env::get("NVIDIA_TF32_OVERRIDE");
  return !(v && *v == "0");
}
}  // namespace

DeviceManager::DeviceManager() {
  tensor_float_32 = tensor_float_32_default();
  register_builtin_platforms(*this);
}

void DeviceManager::add_platform(std::unique_ptr<Platform> platform) {
  std::lock_guard lock(mu_);
  if (discovered_) {
    throw RuntimeError("Platform " + platform->name() + " registered after devices were discovered; register it first");
  }
  platform->register_kernels();
  platforms_.push_back(std::move(platform));
}

void DeviceManager::discover_locked() {
  if (discovered_) return;
  if (load_plugins_ && !plugin_status_.tried) {
    if (auto cuda = load_cuda_plugin(plugin_status_)) {
      cuda->register_kernels();
      platforms_.push_back(std::move(cuda));
    }
  }
  // CPU platforms first: "CPU first. A CPU device is required."
  std::stable_sort(platforms_.begin(), platforms_.end(),
                   [](const auto& a, const auto& b) { return a->type() < b->type(); });
  for (auto& p : platforms_) {
    const auto [min_major, min_minor] = p->min_compute_capability();
    for (auto& info : p->discover()) {
      info.platform = p.get();
      if (info.type == DeviceType::GPU && std::pair(info.cc_major, info.cc_minor) < std::pair(min_major, min_minor)) {
        // Dropped like TensorFlow does; its platform id stays unused, so names can have gaps.
        std::string msg = fmt::format("Ignoring visible gpu device (device: {}, name: {}, pci bus id: {}, compute "
                                      "capability: {}.{}) with Cuda compute capability {}.{}. The minimum required "
                                      "Cuda capability is {}.{}.",
                                      info.platform_id, info.model_name, info.pci_bus_id, info.cc_major, info.cc_minor,
                                      info.cc_major, info.cc_minor, min_major, min_minor);
        log::info(msg);
        ignored_gpus_.push_back(msg);
        continue;
      }
      physical_.push_back(info);
    }
  }
  visible_.assign(physical_.size(), true);
  gpu_order_.clear();
  for (size_t i = 0; i < physical_.size(); ++i) {
    if (physical_[i].type == DeviceType::GPU) gpu_order_.push_back(static_cast<int>(i));
  }
  discovered_ = true;
}

const std::vector<PhysicalDeviceInfo>& DeviceManager::physical_devices() {
  std::lock_guard lock(mu_);
  discover_locked();
  return physical_;
}

PhysicalDevice DeviceManager::to_public(const PhysicalDeviceInfo& info) const {
  return {fmt::format("/physical_device:{}:{}", device_type_name(info.type), info.platform_id),
          device_type_name(info.type)};
}

int DeviceManager::physical_index(const PhysicalDevice& device) {
  std::lock_guard lock(mu_);
  discover_locked();
  for (size_t i = 0; i < physical_.size(); ++i) {
    if (to_public(physical_[i]) == device) return static_cast<int>(i);
  }
  throw ValueError("Unrecognized device: " + repr(device));
}

void DeviceManager::check_mutable_locked(const char* what) {
  if (initialized()) throw RuntimeError(what);
}

std::vector<bool> DeviceManager::visible() {
  std::lock_guard lock(mu_);
  discover_locked();
  return visible_;
}

void DeviceManager::set_visible(const std::vector<bool>& visible) {
  std::lock_guard lock(mu_);
  discover_locked();
  std::vector<int> order;
  for (size_t i = 0; i < physical_.size(); ++i) {
    if (physical_[i].type == DeviceType::GPU) order.push_back(static_cast<int>(i));
  }
  if (visible == visible_ && order == gpu_order_) return;
  check_mutable_locked("Visible devices cannot be modified after being initialized");
  visible_ = visible;
  gpu_order_ = order;
}

void DeviceManager::set_visible_device_list(const std::string& list) {
  std::lock_guard lock(mu_);
  discover_locked();
  std::vector<int> gpus;  // physical indices of the GPUs, by platform order
  for (size_t i = 0; i < physical_.size(); ++i) {
    if (physical_[i].type == DeviceType::GPU) gpus.push_back(static_cast<int>(i));
  }
  std::vector<int> order;
  for (int id : parse_visible_device_list(list, static_cast<int>(gpus.size()))) order.push_back(gpus[id]);
  std::vector<bool> visible = visible_;
  for (int g : gpus) visible[g] = std::find(order.begin(), order.end(), g) != order.end();
  if (visible == visible_ && order == gpu_order_) return;
  check_mutable_locked("Visible devices cannot be modified after being initialized");
  visible_ = visible;
  // Listed GPUs first, in list order; the hidden ones after them (never used while hidden).
  for (int g : gpus) {
    if (std::find(order.begin(), order.end(), g) == order.end()) order.push_back(g);
  }
  gpu_order_ = order;
}

std::optional<bool> DeviceManager::memory_growth(int index) {
  std::lock_guard lock(mu_);
  auto it = growth_.find(index);
  if (it == growth_.end()) return std::nullopt;
  return it->second;
}

void DeviceManager::set_memory_growth(int index, bool enable) {
  std::lock_guard lock(mu_);
  discover_locked();
  if (physical_[index].type != DeviceType::GPU) {
    throw ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices");
  }
  if (logical_configs_.count(index)) {
    throw ValueError("Cannot set memory growth on device when virtual devices configured");
  }
  auto it = growth_.find(index);
  if (it != growth_.end() && it->second == enable) return;
  check_mutable_locked("Physical devices cannot be modified after being initialized");
  growth_[index] = enable;
}

std::optional<std::vector<LogicalDeviceConfiguration>> DeviceManager::logical_configuration(int index) {
  std::lock_guard lock(mu_);
  auto it = logical_configs_.find(index);
  if (it == logical_configs_.end()) return std::nullopt;
  return it->second;
}

void DeviceManager::set_logical_configuration(int index, const std::vector<LogicalDeviceConfiguration>& configs) {
  std::lock_guard lock(mu_);
  discover_locked();
  const bool gpu = physical_[index].type == DeviceType::GPU;
  for (const auto& c : configs) {
    if (!gpu && c.memory_limit) {
      throw ValueError("Setting memory limit on CPU virtual devices is currently not supported");
    }
    if (gpu && !c.memory_limit) throw ValueError("Setting memory limit is required for GPU virtual devices");
    if (c.memory_limit && *c.memory_limit <= 0) {
      throw ValueError(fmt::format("memory_limit must be a positive number of MiB, got {}", *c.memory_limit));
    }
  }
  auto it = logical_configs_.find(index);
  if (it != logical_configs_.end() && it->second == configs) return;
  check_mutable_locked("Virtual devices cannot be modified after being initialized");
  logical_configs_[index] = configs;
}

void DeviceManager::set_intra_op_threads(int n) {
  std::lock_guard lock(mu_);
  if (n == intra_op_threads_) return;
  check_mutable_locked("Intra op parallelism cannot be modified after initialization.");
  if (n < 0) throw ValueError(fmt::format("num_threads must be >= 0, got {}", n));
  intra_op_threads_ = n;
}

void DeviceManager::set_inter_op_threads(int n) {
  std::lock_guard lock(mu_);
  if (n == inter_op_threads_) return;
  check_mutable_locked("Inter op parallelism cannot be modified after initialization.");
  if (n < 0) throw ValueError(fmt::format("num_threads must be >= 0, got {}", n));
  inter_op_threads_ = n;
}

// TF_FORCE_GPU_ALLOW_GROWTH, read when each GPU allocator is built: "true"/"false" exactly override the configured
// value (with a warning); anything else is an error that keeps it.
static bool apply_forced_allow_growth(bool configured) {
  const char* name = "OSPREY_FORCE_GPU_ALLOW_GROWTH";
  auto v = env::get(name);
  if (!v) {
    name = "TF_FORCE_GPU_ALLOW_GROWTH";
    v = env::get(name);
  }
  if (!v) return configured;
  if (*v == "true" || *v == "false") {
    log::warning(fmt::format("Overriding orig_value setting because the {} environment variable is set. Original "
                             "config value was {}.",
                             name, configured ? 1 : 0));
    return *v == "true";
  }
  log::error(fmt::format("The {} environment variable is set but could not be parsed: \"{}\". Valid values are "
                         "\"true\" or \"false\". Using original config value of {}.",
                         name, *v, configured ? 1 : 0));
  return configured;
}

void DeviceManager::ensure_initialized() {
  if (initialized()) return;
  std::lock_guard lock(mu_);
  if (initialized()) return;
  discover_locked();

  // TensorFlow's _compute_gpu_options: once a GPU has logical devices, growth is dropped silently; otherwise every
  // visible GPU must have the same growth value, "not set" counting as a value of its own.
  bool gpu_virtual_devices = false;
  for (const auto& [index, configs] : logical_configs_) {
    gpu_virtual_devices |= physical_[index].type == DeviceType::GPU && !configs.empty();
  }
  bool allow_growth = false;
  if (!gpu_virtual_devices) {
    std::set<std::optional<bool>> growths;
    for (size_t i = 0; i < physical_.size(); ++i) {
      if (!visible_[i] || physical_[i].type != DeviceType::GPU) continue;
      auto it = growth_.find(static_cast<int>(i));
      growths.insert(it == growth_.end() ? std::nullopt : std::optional<bool>(it->second));
    }
    if (growths.size() > 1) throw ValueError("Memory growth cannot differ between GPU devices");
    allow_growth = !growths.empty() && growths.begin()->value_or(false);
  }

  // Creation order: CPUs in physical order, then GPUs in TF id order (visible_device_list), each GPU's logical
  // devices sorted by experimental_device_ordinal (stable: declaration order within an ordinal).
  std::vector<int> order;
  for (size_t i = 0; i < physical_.size(); ++i) {
    if (physical_[i].type != DeviceType::GPU) order.push_back(static_cast<int>(i));
  }
  order.insert(order.end(), gpu_order_.begin(), gpu_order_.end());

  std::vector<std::unique_ptr<Device>> created;
  int next_index[kNumDeviceTypes] = {0, 0};
  for (int i : order) {
    if (!visible_[i]) continue;
    const auto& info = physical_[i];
    std::vector<LogicalDeviceConfiguration> configs{LogicalDeviceConfiguration{}};
    if (auto it = logical_configs_.find(i); it != logical_configs_.end() && !it->second.empty()) {
      configs = it->second;
      std::stable_sort(configs.begin(), configs.end(), [](auto& a, auto& b) {
        return a.experimental_device_ordinal < b.experimental_device_ordinal;
      });
    }
    for (const auto& c : configs) {
      AllocatorOptions opts;
      opts.allow_growth = info.type == DeviceType::GPU ? apply_forced_allow_growth(allow_growth) : false;
      if (c.memory_limit) opts.memory_limit = *c.memory_limit * kMiB;
      int& idx = next_index[static_cast<int>(info.type)];
      opts.logical_index = idx;
      std::unique_ptr<Allocator> allocator;
      try {
        allocator = info.platform->create_allocator(info, opts);
      } catch (const std::exception& e) {
        if (info.type != DeviceType::GPU) throw;
        // A GPU whose device cannot be set up (a library missing, a stream refused) is left out, so that everything
        // else still runs; why is kept for osprey doctor.
        const std::string why = fmt::format("GPU {} ({}) could not be set up and is not used: {}", info.platform_id,
                                            info.model_name, e.what());
        log::error(why);
        ignored_gpus_.push_back(why);
        failed_gpus_ = true;
        break;  // none of its logical devices
      }
      auto device = std::make_unique<Device>(info.type, idx, info, std::move(allocator));
      ++idx;
      if (info.type == DeviceType::GPU) {
        int64_t mb = device->allocator().limit().value_or(info.total_memory) >> 20;
        log::info(fmt::format("Created device {} with {} MB memory:  -> device: {}, name: {}, pci bus id: {}, compute "
                              "capability: {}.{}",
                              device->full_name(), mb, info.platform_id, info.model_name, info.pci_bus_id,
                              info.cc_major, info.cc_minor));
      }
      created.push_back(std::move(device));
    }
  }
  if (next_index[static_cast<int>(DeviceType::CPU)] == 0) {
    throw NotFoundError("No CPU devices are available in this process");
  }
  owned_ = std::move(created);
  devices_.clear();
  for (auto& d : owned_) devices_.push_back(d.get());
  host_device_ = devices_.front();
  default_device_ = host_device_;
  for (auto* d : devices_) {
    if (d->type() == DeviceType::GPU) {
      default_device_ = d;
      break;
    }
  }
  omp_set_num_threads(threads_for_intra_op());
  initialized_.store(true, std::memory_order_release);
}

int allowed_cpus() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0) return CPU_COUNT(&allowed);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::optional<std::pair<std::string, int>> intra_op_threads_from_environment() {
  // TensorFlow's own variable, then OpenMP's (its first level, "4,2" -> 4): what users set to keep several
  // processes on one machine from each taking every core. A value that is not a positive integer is ignored, as
  // TensorFlow does, with a warning (once per variable) saying so.
  for (const char* name : {"TF_NUM_INTRAOP_THREADS", "OMP_NUM_THREADS"}) {
    const auto value = env::get(name);
    if (!value) continue;
    const std::string first = value->substr(0, value->find(','));
    char* end = nullptr;
    const long n = std::strtol(first.c_str(), &end, 10);
    if (!first.empty() && end && *end == '\0' && n > 0 && n <= 4096) return std::pair{std::string(name), int(n)};
    static std::set<std::string> warned;
    static std::mutex warned_mu;
    std::lock_guard lock(warned_mu);
    if (warned.insert(name).second) {
      log::warning(fmt::format("{}={} is not a positive thread count; it is ignored", name, *value));
    }
  }
  return std::nullopt;
}

int DeviceManager::threads_for_intra_op() const {
  if (intra_op_threads_ > 0) return intra_op_threads_;
  if (const auto from_env = intra_op_threads_from_environment()) return from_env->second;
  return allowed_cpus();
}

const std::vector<Device*>& DeviceManager::devices() {
  ensure_initialized();
  return devices_;
}

Device& DeviceManager::default_device() {
  ensure_initialized();
  return *default_device_;
}

Device& DeviceManager::host_device() {
  ensure_initialized();
  return *host_device_;
}

Device* DeviceManager::find(const std::string& device_type, std::optional<int> index) {
  for (Device* d : devices()) {
    if (device_type_name(d->type()) == device_type && (!index || *index == d->index())) return d;
  }
  return nullptr;
}

GpuAvailability DeviceManager::gpu_availability() {
  std::lock_guard lock(mu_);
  discover_locked();
  bool any_gpu = false, any_visible_gpu = false;
  for (size_t i = 0; i < physical_.size(); ++i) {
    any_gpu |= physical_[i].type == DeviceType::GPU;
    any_visible_gpu |= physical_[i].type == DeviceType::GPU && visible_[i];
  }
  const bool any_gpu_device = std::any_of(owned_.begin(), owned_.end(), [](auto& d) { return d->type() == DeviceType::GPU; });
  if (failed_gpus_ && !any_gpu_device && !ignored_gpus_.empty()) {
    return {ignored_gpus_.back(), "Check the CUDA installation (osprey doctor lists each GPU's error); the libraries "
                                  "the plug-in opens must be on the library path."};
  }
  if (any_visible_gpu) return {};
  if (any_gpu) {
    return {"Every GPU was hidden with set_visible_devices().",
            "Pass the GPU to osprey::config::set_visible_devices(), or do not call it."};
  }
  if (!ignored_gpus_.empty()) {
    return {ignored_gpus_.front(), "Use a GPU with a supported compute capability, or build Osprey's CUDA plug-in "
                                   "for it (CMAKE_CUDA_ARCHITECTURES)."};
  }
  for (const auto& p : platforms_) {
    if (p->type() != DeviceType::GPU) continue;
    auto st = p->status();
    if (!st.reason.empty()) return {st.reason, st.fix};
    return {p->name() + " found no GPU.", "Check that the GPU is installed and that nvidia-smi lists it."};
  }
  if (!plugin_status_.built) {
    return {"This build of Osprey has no GPU support: the CUDA plug-in (libosprey_cuda.so) was not built.",
            "Rebuild Osprey on a machine with the CUDA toolkit (nvcc on PATH or at /usr/local/cuda) so that the "
            "plug-in is built."};
  }
  if (!plugin_status_.loaded && plugin_status_.error == kCudaPluginSwitchedOff) {
    return {"The CUDA plug-in was not loaded: " + plugin_status_.error, "Unset OSPREY_CUDA_PLUGIN to use the GPUs."};
  }
  if (!plugin_status_.loaded) {
    return {"The CUDA plug-in could not be loaded: " + plugin_status_.error,
            "Install libosprey_cuda.so next to libosprey.so (cmake --install does), or point OSPREY_CUDA_PLUGIN at "
            "it; a missing CUDA library in the message means the CUDA toolkit's libraries are not on the loader's "
            "path."};
  }
  return {"No GPU platform is registered.", "Load the CUDA plug-in (see osprey doctor)."};
}

PluginStatus DeviceManager::plugin_status() {
  std::lock_guard lock(mu_);
  discover_locked();
  return plugin_status_;
}

std::vector<std::pair<std::string, PlatformStatus>> DeviceManager::platform_statuses() {
  std::lock_guard lock(mu_);
  discover_locked();
  std::vector<std::pair<std::string, PlatformStatus>> out;
  for (const auto& p : platforms_) out.emplace_back(p->name(), p->status());
  return out;
}

std::vector<std::string> DeviceManager::ignored_gpus() {
  std::lock_guard lock(mu_);
  discover_locked();
  return ignored_gpus_;
}

void DeviceManager::reset_for_testing(bool load_plugins) {
  std::lock_guard lock(mu_);
  // Retired devices stay alive (tensors of earlier tests may still point at them) but give their pools back: on a
  // real GPU a pool reserved up front would otherwise leave the next test almost nothing.
  for (auto& d : owned_) {
    d->allocator().release_reserved();
    retired_.push_back(std::move(d));
  }
  owned_.clear();
  devices_.clear();
  default_device_ = host_device_ = nullptr;
  platforms_.clear();
  clear_kernels();
  physical_.clear();
  visible_.clear();
  growth_.clear();
  logical_configs_.clear();
  intra_op_threads_ = inter_op_threads_ = 0;
  gpu_order_.clear();
  discovered_ = false;
  load_plugins_ = load_plugins;
  plugin_status_ = {};
  ignored_gpus_.clear();
  failed_gpus_ = false;
  soft_placement = true;
  log_placement = false;
  tensor_float_32 = tensor_float_32_default();
  initialized_.store(false);
  register_builtin_platforms(*this);
}

}  // namespace osprey::runtime
