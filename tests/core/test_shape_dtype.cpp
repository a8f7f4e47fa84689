#include <gtest/gtest.h>

#include <vector>

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

// Ranks above the inline storage behave like the others; with_dim changes one dimension of a copy.
TEST(Shape, EveryRankAndWithDim) {
  for (int rank = 0; rank <= Shape::kInlineRank + 3; ++rank) {
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(i + 2);
    const Shape s(dims);
    EXPECT_EQ(s.rank(), rank);
    EXPECT_EQ(s.dims_vector(), dims);
    EXPECT_EQ(Shape(s.dims()), s);
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    EXPECT_EQ(s.num_elements(), n);
    if (rank == 0) continue;
    const Shape t = s.with_dim(-1, 1);
    EXPECT_EQ(t[-1], 1);
    EXPECT_EQ(s[-1], rank + 1);  // the original is unchanged
    EXPECT_NE(t, s);
    EXPECT_EQ(t.with_dim(rank - 1, rank + 1), s);
  }
  EXPECT_THROW((void)Shape({2, 3}).with_dim(2, 1), InvalidArgumentError);
  EXPECT_THROW((void)Shape({2, 3}).with_dim(0, -1), InvalidArgumentError);
  EXPECT_EQ(Shape({2, 3}).with_dim(0, 0).to_string(), "(0, 3)");
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
