// Where Osprey's run-time plug-ins (libosprey_cuda.so, libosprey_hdf5.so) are looked for.
#pragma once

#include <string>

namespace osprey::runtime {
/// Where plug-in `file` is: the environment variable `env_var` when set (a full path, and then nothing else), else
/// next to libosprey.so, then the install's plug-in directory. The first that exists, or "" with `error` set to
/// "<file> not found (looked in: ...)".
std::string find_plugin(const std::string& file, const char* env_var, std::string& error);

/// The CUDA plug-in's load error when OSPREY_CUDA_PLUGIN=off leaves it unloaded (the CPU test suites do).
inline constexpr const char* kCudaPluginSwitchedOff = "it is switched off (OSPREY_CUDA_PLUGIN=off)";
}  // namespace osprey::runtime
