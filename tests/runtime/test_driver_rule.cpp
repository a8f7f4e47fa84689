// The CUDA plug-in's rule for a driver too old for its runtime (backends/cuda/driver_rule.h): CUDA's minor-version
// compatibility runs a newer minor runtime on an older driver of the same major version.
#include <gtest/gtest.h>

#include "backends/cuda/driver_rule.h"

using osprey::cuda::driver_too_old;

TEST(DriverRule, OnlyTheRuntimesVerdictOrAnOlderMajorVersionIsFatal) {
  EXPECT_FALSE(driver_too_old(false, 13000, 13010));  // a 13.1 toolkit on a 13.0 driver: minor compatibility
  EXPECT_FALSE(driver_too_old(false, 13020, 13000));
  EXPECT_FALSE(driver_too_old(false, 13000, 13000));
  EXPECT_TRUE(driver_too_old(false, 12090, 13000));   // an older major version
  EXPECT_TRUE(driver_too_old(true, 13000, 13000));    // cudaErrorInsufficientDriver
  EXPECT_FALSE(driver_too_old(false, 0, 13000));      // unknown driver version: the runtime's verdict decides
}
