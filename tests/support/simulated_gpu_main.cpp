// The gtest main of scripts/simulated-gpu-suites.sh: with OSPREY_TEST_SIMULATED_GPU set, the test platform's GPU
// (CPU kernels behind a device that is not host memory, the CUDA plug-in's kernel list) is installed before the
// tests run, so that a CPU suite runs its models on "/GPU:0", the default device, as on a machine with a GPU. What
// differs from the CPU then is the framework's device path (copies, placement, recorded steps), not arithmetic.
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/test_gpu_platform.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (std::getenv("OSPREY_TEST_SIMULATED_GPU")) {
    osprey::testing::install_test_platform(
        {.gpus = osprey::testing::default_test_gpus(1), .missing_kernels = osprey::testing::ops_missing_on_cuda()});
  }
  return RUN_ALL_TESTS();
}
