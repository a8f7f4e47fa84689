// "Why is my GPU not used?": the checks `osprey doctor` runs, and the device table `osprey devices` prints,
// available to programs too.
#pragma once

#include <string>
#include <vector>

namespace osprey::doctor {

enum class CheckState { pass, fail, skipped, note };

struct Check {
  std::string name;    ///< "CUDA plug-in"
  CheckState state = CheckState::note;
  std::string detail;  ///< what was found, or the cause of a failure
  std::string fix;     ///< what to do (failures only)
};

struct Report {
  std::vector<Check> checks;  ///< in order; after the first failure the rest are skipped
  bool gpu_usable = false;    ///< a GPU is visible and the test kernel ran on it correctly
};

/// Runs the checks in order: the build, the CUDA plug-in, each GPU platform (driver), CUDA_VISIBLE_DEVICES, the GPUs
/// found and visible, and a test kernel (a matmul on GPU:0 compared with the CPU). Initialises the runtime.
Report run();
/// The report as `osprey doctor` prints it: one line per check with ✓/✗, the cause and the fix, then a verdict.
std::string format(const Report& report);

/// A table of the logical devices: name, physical device, model, memory, compute capability, PCI bus id.
/// Initialises the runtime.
std::string devices_table();

}  // namespace osprey::doctor
