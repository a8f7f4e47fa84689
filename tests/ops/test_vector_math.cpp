// The CPU's vector exp, log and sigmoid (backends/cpu/vector_math.h) against double-precision <cmath>.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/vector_math.h"

namespace {

// Distance in units in the last place between two finite floats of the same sign.
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

std::vector<float> run_on(void (*f)(const float*, float*, int64_t), const std::vector<float>& x) {
  std::vector<float> y(x.size());
  f(x.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

}  // namespace

using osprey::cpu::exp_values;
using osprey::cpu::log_values;
using osprey::cpu::sigmoid_values;
using osprey::cpu::tanh_values;

TEST(VectorMath, ExpWithinTwoUlpsOverItsRange) {
  std::vector<float> x;
  for (float v = -87.f; v <= 88.f; v += 0.0137f) x.push_back(v);
  const auto y = run_on(exp_values, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_LE(ulps(y[i], static_cast<float>(std::exp(static_cast<double>(x[i])))), 2) << "exp(" << x[i] << ")";
  }
}

TEST(VectorMath, TanhWithinTwoUlpsAndItsLimits) {
  std::vector<float> x;
  for (float v = -12.f; v <= 12.f; v += 0.00377f) x.push_back(v);
  for (double v = 1e-30; v < 1.0; v *= 1.37) {  // tiny magnitudes, where tanh(x) is x
    x.push_back(static_cast<float>(v));
    x.push_back(static_cast<float>(-v));
  }
  const auto y = run_on(tanh_values, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_LE(ulps(y[i], static_cast<float>(std::tanh(static_cast<double>(x[i])))), 2) << "tanh(" << x[i] << ")";
  }
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const auto t = run_on(tanh_values, {nan, inf, -inf, 50.f, -50.f, 0.f, -0.f});
  EXPECT_TRUE(std::isnan(t[0]));
  EXPECT_EQ(t[1], 1.f);
  EXPECT_EQ(t[2], -1.f);
  EXPECT_EQ(t[3], 1.f);
  EXPECT_EQ(t[4], -1.f);
  EXPECT_EQ(t[5], 0.f);
  EXPECT_TRUE(std::signbit(t[6]));
}

TEST(VectorMath, LogWithinTwoUlpsFromTinyToHuge) {
  std::vector<float> x;
  for (double v = 1e-37; v < 3e38; v *= 1.0173) x.push_back(static_cast<float>(v));
  for (float v = 0.5f; v < 2.f; v += 0.000731f) x.push_back(v);  // around 1, where log is near 0
  x.push_back(1e-7f);                                             // the crossentropies' clip
  x.push_back(1.f - 1e-7f);
  const auto y = run_on(log_values, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto expected = static_cast<float>(std::log(static_cast<double>(x[i])));
    if (expected == 0.f) {
      EXPECT_EQ(y[i], 0.f);
      continue;
    }
    ASSERT_LE(ulps(y[i], expected), 2) << "log(" << x[i] << ") = " << y[i] << ", expected " << expected;
  }
}

TEST(VectorMath, SpecialValuesAndSigmoid) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  auto e = run_on(exp_values, {nan, 100.f, -100.f, 0.f, inf, -inf});
  EXPECT_TRUE(std::isnan(e[0]));
  EXPECT_EQ(e[1], inf);
  EXPECT_LT(e[2], 1e-37f);
  EXPECT_GE(e[2], 0.f);
  EXPECT_EQ(e[3], 1.f);
  EXPECT_EQ(e[4], inf);
  EXPECT_LT(e[5], 1e-37f);
  auto l = run_on(log_values, {nan, 0.f, -1.f, inf, 1.f, 1e-40f});
  EXPECT_TRUE(std::isnan(l[0]));
  EXPECT_EQ(l[1], -inf);
  EXPECT_TRUE(std::isnan(l[2]));
  EXPECT_EQ(l[3], inf);
  EXPECT_EQ(l[4], 0.f);
  EXPECT_TRUE(std::isfinite(l[5]) && l[5] < -87.f);
  auto s = run_on(sigmoid_values, {nan, 100.f, -100.f, 0.f, 2.f, -2.f});
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[1], 1.f);
  EXPECT_LT(s[2], 1e-37f);
  EXPECT_EQ(s[3], 0.5f);
  EXPECT_NEAR(s[4], 1.0 / (1.0 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(s[5], 1.0 / (1.0 + std::exp(2.0)), 1e-7);
}

// A value is computed the same way wherever it sits in the array (whole vectors or the padded tail).
TEST(VectorMath, EveryLengthGivesTheSameValues) {
  std::vector<float> x;
  for (int i = 0; i < 19; ++i) x.push_back(0.37f * static_cast<float>(i) - 3.f);
  const auto whole = run_on(sigmoid_values, x);
  for (std::size_t n = 0; n <= x.size(); ++n) {
    for (std::size_t start = 0; start + n <= x.size(); start += 3) {
      std::vector<float> y(n);
      sigmoid_values(x.data() + start, y.data(), static_cast<int64_t>(n));
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], whole[start + i]) << "n " << n << " start " << start;
    }
  }
}
