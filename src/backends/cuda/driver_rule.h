// When the NVIDIA driver is too old for the CUDA runtime the plug-in was built with. CUDA's minor-version
// compatibility lets a driver of the same major version run a newer minor runtime (a 13.1 toolkit on a 13.0
// driver), so only the runtime's own verdict (cudaErrorInsufficientDriver) or an older major version is fatal.
// Plain integers (CUDA's 1000·major + 10·minor), so that the rule is tested without a GPU.
#pragma once

namespace osprey::cuda {

inline bool driver_too_old(bool runtime_says_insufficient, int driver_version, int runtime_version) {
  if (runtime_says_insufficient) return true;
  return driver_version > 0 && driver_version / 1000 < runtime_version / 1000;
}

}  // namespace osprey::cuda
