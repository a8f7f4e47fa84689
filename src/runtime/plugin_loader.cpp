// Finds and loads the CUDA plug-in with dlopen (and tells where plug-ins live, for the HDF5 one too). The core library never links CUDA: one build runs everywhere,
// and every way the plug-in can be missing is recorded for `osprey doctor`.
#include <dlfcn.h>

#include <filesystem>

#include <fmt/format.h>

#include "core/env.h"
#include "runtime/device_manager.h"
#include "runtime/plugin_paths.h"

#ifndef OSPREY_WITH_CUDA_PLUGIN
#define OSPREY_WITH_CUDA_PLUGIN 0
#endif
#ifndef OSPREY_PLUGIN_DIR
#define OSPREY_PLUGIN_DIR ""
#endif

namespace osprey::runtime {

namespace {
constexpr const char* kPluginFile = "libosprey_cuda.so";
constexpr const char* kEntryPoint = "osprey_create_cuda_platform";
using CreatePlatformFn = Platform* (*)(int abi_version);

// The directory libosprey.so was loaded from.
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_cuda_plugin), &info) == 0 || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

// The paths tried for a plug-in, in order (see find_plugin).
std::vector<std::string> plugin_candidates(const std::string& file, const char* env_var) {
  if (auto explicit_path = env::get(env_var); explicit_path && !explicit_path->empty()) return {*explicit_path};
  std::vector<std::string> candidates;
  if (auto dir = own_directory(); !dir.empty()) candidates.push_back(dir + "/" + file);
  if (std::string(OSPREY_PLUGIN_DIR).size()) candidates.push_back(std::string(OSPREY_PLUGIN_DIR) + "/" + file);
  return candidates;
}
}  // namespace

std::string find_plugin(const std::string& file, const char* env_var, std::string& error) {
  const std::vector<std::string> candidates = plugin_candidates(file, env_var);
  std::error_code ec;
  for (const auto& c : candidates) {
    if (std::filesystem::exists(c, ec)) return c;
  }
  std::string places;
  for (const auto& c : candidates) places += (places.empty() ? "" : ", ") + c;
  error = fmt::format("{} not found (looked in: {})", file, places);
  return {};
}

std::unique_ptr<Platform> load_cuda_plugin(PluginStatus& status) {
  status = {};
  status.built = OSPREY_WITH_CUDA_PLUGIN != 0;
  status.tried = true;
  if (auto v = env::get("OSPREY_CUDA_PLUGIN"); v && *v == "off") {  // no GPU, without asking the driver
    status.error = kCudaPluginSwitchedOff;
    return nullptr;
  }
  status.path = find_plugin(kPluginFile, "OSPREY_CUDA_PLUGIN", status.error);
  if (status.path.empty()) return nullptr;
  void* handle = dlopen(status.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    status.error = err ? err : "dlopen failed";
    return nullptr;
  }
  auto create = reinterpret_cast<CreatePlatformFn>(dlsym(handle, kEntryPoint));
  if (!create) {
    status.error = fmt::format("{} has no entry point {}: not an Osprey plug-in", status.path, kEntryPoint);
    return nullptr;
  }
  std::unique_ptr<Platform> platform(create(kPluginAbiVersion));
  if (!platform) {
    status.error = fmt::format("{} was built for another version of Osprey (plug-in ABI {} expected); rebuild it",
                               status.path, kPluginAbiVersion);
    return nullptr;
  }
  status.loaded = true;  // the handle stays open for the life of the process: kernels point into it
  return platform;
}

}  // namespace osprey::runtime
