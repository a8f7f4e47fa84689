#include <gtest/gtest.h>

#include "osprey/device.h"
#include "osprey/errors.h"

using namespace osprey;

TEST(DeviceSpec, ShortAndLongFormsSelectTheSameDevice) {
  for (const char* s : {"/GPU:0", "GPU:0", "gpu:0", "/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:0"}) {
    auto spec = DeviceSpec::from_string(s);
    EXPECT_EQ(spec.device_type, "GPU") << s;
    EXPECT_EQ(spec.device_index, 0) << s;
  }
  EXPECT_EQ(DeviceSpec::from_string("/job:localhost/replica:0/task:0/device:GPU:1").to_string(),
            "/job:localhost/replica:0/task:0/device:GPU:1");
}

TEST(DeviceSpec, AnyIndex) {
  EXPECT_FALSE(DeviceSpec::from_string("GPU").device_index.has_value());
  EXPECT_FALSE(DeviceSpec::from_string("/GPU:*").device_index.has_value());
  EXPECT_EQ(DeviceSpec::from_string("/GPU:*").to_string(), "/device:GPU:*");
}

TEST(DeviceSpec, ErrorsUseTensorFlowText) {
  try {
    DeviceSpec::from_string("foo");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Unknown attribute: 'foo' in 'foo'");
  }
  try {
    DeviceSpec::from_string("/GPU:0/CPU:0");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Cannot specify multiple device types: /GPU:0/CPU:0");
  }
  EXPECT_THROW(DeviceSpec::from_string("GPU:x"), ValueError);
}

TEST(DeviceSpec, InnerFieldsOverrideOuter) {
  auto outer = DeviceSpec::from_string("/job:foo");
  auto merged = outer.merged_with(DeviceSpec::from_string("/device:gpu:1"));
  EXPECT_EQ(merged.to_string(), "/job:foo/device:GPU:1");
}
