// For the tests that specify what happens on a machine of CPUs only (MirroredStrategy's default devices, NCCL's
// refusal without GPUs): a fresh runtime with any GPU hidden, as tf.config.set_visible_devices([], "GPU") hides
// it, so that they say the same on a machine with a GPU (scripts/gpu-check.sh runs the suites there too).
#pragma once

#include <vector>

#include "osprey/config.h"
#include "test_util.h"

namespace osprey::testing {

inline void reset_runtime_cpu_only() {
  reset_runtime();
  config::set_visible_devices(std::vector<PhysicalDevice>{}, "GPU");
}

}  // namespace osprey::testing
