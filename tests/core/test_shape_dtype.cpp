#include <gtest/gtest.h>

#include "osprey/dtype.h"
#include "osprey/errors.h"
#include "osprey/shape.h"

using namespace osprey;

TEST(Shape, PrintsLikeTensorFlow) {
  EXPECT_EQ(Shape({2048, 20}).to_string(), "(2048, 20)");
  EXPECT_EQ(Shape({5}).to_string(), "(5,)");
  EXPECT_EQ(Shape{}.to_string(), "()");
  EXPECT_EQ(Shape({64}).to_keras_string(), "(None,)");
  EXPECT_EQ(Shape({0, 64}).to_keras_string(), "(None, 64)");
}

TEST(Shape, ElementsAndNegativeIndex) {
  Shape s{3, 4, 5};
  EXPECT_EQ(s.num_elements(), 60);
  EXPECT_EQ(s[-1], 5);
  EXPECT_EQ(Shape{}.num_elements(), 1);
  EXPECT_THROW(s[3], InvalidArgumentError);
  EXPECT_THROW(Shape({2, -1}), InvalidArgumentError);
}

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(dtype_size(float32), 4u);
  EXPECT_EQ(dtype_size(int64), 8u);
  EXPECT_EQ(dtype_name(int32), "int32");
  EXPECT_EQ(dtype_from_name("float64"), float64);
  try {
    dtype_from_name("bfloat17");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat17"), std::string::npos);
  }
}

TEST(Errors, HierarchyMirrorsTensorFlow) {
  EXPECT_TRUE((std::is_base_of_v<Error, ValueError>));
  EXPECT_TRUE((std::is_base_of_v<Error, ResourceExhaustedError>));
  EXPECT_TRUE((std::is_base_of_v<std::runtime_error, Error>));
}
