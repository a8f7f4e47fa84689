#include "runtime/device_manager.h"

#include <omp.h>

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "core/env.h"
#include "core/logging.h"
#include "osprey/errors.h"
#include "runtime/kernel_table.h"

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

DeviceManager::DeviceManager() { register_builtin_platforms(*this); }

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
  // CPU platforms first: "CPU first. A CPU device is required."
  std::stable_sort(platforms_.begin(), platforms_.end(),
                   [](const auto& a, const auto& b) { return a->type() < b->type(); });
  for (auto& p : platforms_) {
    for (auto& info : p->discover()) {
      info.platform = p.get();
      physical_.push_back(info);
    }
  }
  visible_.assign(physical_.size(), true);
  discovered_ = true;
  bool any_gpu = std::any_of(physical_.begin(), physical_.end(), [](auto& d) { return d.type == DeviceType::GPU; });
  if (any_gpu) {
    gpu_availability_ = {};
  } else if (gpu_availability_.reason.empty()) {
    gpu_availability_ = {"Osprey found no GPU platform: the CUDA plug-in (libosprey_cuda.so) is not part of this build.",
                         "Build Osprey on a machine with the CUDA toolkit (nvcc on PATH) so that the plug-in is built."};
  }
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
  if (visible == visible_) return;
  check_mutable_locked("Visible devices cannot be modified after being initialized");
  visible_ = visible;
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

static std::optional<bool> forced_allow_growth() {
  auto v = env::get_first({"OSPREY_FORCE_GPU_ALLOW_GROWTH", "TF_FORCE_GPU_ALLOW_GROWTH"});
  if (!v) return std::nullopt;
  if (*v == "true") return true;
  if (*v == "false") return false;
  log::error(fmt::format("The environment variable TF_FORCE_GPU_ALLOW_GROWTH could not be parsed: \"{}\". Valid values "
                         "are \"true\" or \"false\". Using original config value.",
                         *v));
  return std::nullopt;
}

void DeviceManager::ensure_initialized() {
  if (initialized()) return;
  std::lock_guard lock(mu_);
  if (initialized()) return;
  discover_locked();

  // Memory growth must agree between visible GPUs that have no virtual devices.
  bool allow_growth = false;
  bool first_gpu = true;
  for (size_t i = 0; i < physical_.size(); ++i) {
    if (!visible_[i] || physical_[i].type != DeviceType::GPU || logical_configs_.count(i)) continue;
    auto it = growth_.find(static_cast<int>(i));
    const bool g = it != growth_.end() && it->second;
    if (!first_gpu && g != allow_growth) throw ValueError("Memory growth cannot differ between GPU devices");
    allow_growth = g;
    first_gpu = false;
  }
  if (auto forced = forced_allow_growth(); forced && !first_gpu) {
    log::warning(fmt::format("Overriding orig_value setting because the TF_FORCE_GPU_ALLOW_GROWTH environment variable "
                             "is set. Original config value was {}.",
                             allow_growth ? 1 : 0));
    allow_growth = *forced;
  }

  std::vector<std::unique_ptr<Device>> created;
  int next_index[kNumDeviceTypes] = {0, 0};
  for (size_t i = 0; i < physical_.size(); ++i) {
    if (!visible_[i]) continue;
    const auto& info = physical_[i];
    std::vector<LogicalDeviceConfiguration> configs{LogicalDeviceConfiguration{}};
    if (auto it = logical_configs_.find(static_cast<int>(i)); it != logical_configs_.end() && !it->second.empty()) {
      configs = it->second;
      std::stable_sort(configs.begin(), configs.end(), [](auto& a, auto& b) {
        return a.experimental_device_ordinal < b.experimental_device_ordinal;
      });
    }
    for (const auto& c : configs) {
      AllocatorOptions opts;
      opts.allow_growth = logical_configs_.count(i) ? false : allow_growth;
      if (c.memory_limit) opts.memory_limit = *c.memory_limit * (int64_t{1} << 20);
      int& idx = next_index[static_cast<int>(info.type)];
      opts.logical_index = idx;
      auto device = std::make_unique<Device>(info.type, idx, info, info.platform->create_allocator(info, opts));
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
  int threads = intra_op_threads_ > 0 ? intra_op_threads_ : static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(std::max(1, threads));
  initialized_.store(true, std::memory_order_release);
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
  bool any_visible_gpu = false;
  for (size_t i = 0; i < physical_.size(); ++i) {
    any_visible_gpu |= physical_[i].type == DeviceType::GPU && visible_[i];
  }
  bool any_gpu = std::any_of(physical_.begin(), physical_.end(), [](auto& d) { return d.type == DeviceType::GPU; });
  if (any_gpu && !any_visible_gpu) {
    return {"Every GPU was hidden with set_visible_devices().", "Pass the GPU to osprey::config::set_visible_devices()."};
  }
  return gpu_availability_;
}

void DeviceManager::reset_for_testing() {
  std::lock_guard lock(mu_);
  for (auto& d : owned_) retired_.push_back(std::move(d));
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
  discovered_ = false;
  gpu_availability_ = {};
  soft_placement = true;
  log_placement = false;
  initialized_.store(false);
  register_builtin_platforms(*this);
}

}  // namespace osprey::runtime
