#include <gtest/gtest.h>

#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

using namespace osprey;

TEST(GradientTape, WatchedTensorAndVariable) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
  Variable w(Tensor::from_vector(std::vector<float>{2, 2, 2}, {3}), "w");
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::reduce_sum(ops::mul(ops::square(x), w.value()));  // Σ w x²
  auto g = tape.gradient(y, std::vector<Tensor>{x, w.value()});
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{4, 8, 12}));  // 2 w x
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{1, 4, 9}));   // x²
}

TEST(GradientTape, UnconnectedSourceHasNoGradientAndTapeIsSingleUse) {
  Variable a(Tensor::ones({2}), "a"), b(Tensor::ones({2}), "b");
  GradientTape tape;
  Tensor y = ops::reduce_sum(a.value());
  auto g = tape.gradient(y, std::vector<Variable*>{&a, &b});
  EXPECT_TRUE(g[0].defined());
  EXPECT_FALSE(g[1].defined());
  EXPECT_THROW(tape.gradient(y, std::vector<Variable*>{&a}), RuntimeError);
}

TEST(GradientTape, UnwatchedOpsAreNotRecorded) {
  Tensor x = Tensor::ones({2});
  GradientTape tape;
  Tensor y = ops::reduce_sum(x);
  auto g = tape.gradient(y, std::vector<Tensor>{x});
  EXPECT_FALSE(g[0].defined());
}
