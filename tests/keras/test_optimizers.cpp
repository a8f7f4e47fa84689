// Optimizer steps against spec/keras_api.md §3, computed by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "osprey/errors.h"
#include "osprey/keras/optimizers.h"

using namespace osprey;
namespace opt = osprey::keras::optimizers;

static Variable var(std::vector<float> v) { return Variable(Tensor::from_vector(v, {static_cast<int64_t>(v.size())}), "v"); }
static Tensor grad(std::vector<float> g) { return Tensor::from_vector(g, {static_cast<int64_t>(g.size())}); }

TEST(Optimizers, AdamThreeStepsMatchKerasFormula) {
  Variable v = var({1.0f, -2.0f});
  opt::Adam adam;
  double x[2] = {1.0, -2.0}, m[2] = {0, 0}, s[2] = {0, 0};
  const double g[3][2] = {{0.5, -1.0}, {0.25, 0.5}, {-0.1, 2.0}};
  for (int t = 1; t <= 3; ++t) {
    adam.apply_gradients({grad({static_cast<float>(g[t - 1][0]), static_cast<float>(g[t - 1][1])})}, {&v});
    const double alpha = 0.001 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
    for (int i = 0; i < 2; ++i) {
      m[i] += (g[t - 1][i] - m[i]) * 0.1;
      s[i] += (g[t - 1][i] * g[t - 1][i] - s[i]) * 0.001;
      x[i] -= m[i] * alpha / (std::sqrt(s[i]) + 1e-7);
    }
  }
  auto got = v.value().to_vector<float>();
  EXPECT_NEAR(got[0], x[0], 1e-6);
  EXPECT_NEAR(got[1], x[1], 1e-6);
  EXPECT_EQ(adam.iterations(), 3);
  EXPECT_EQ(adam.count_params(), 2 + 2 * 2);
}

TEST(Optimizers, SgdPlainMomentumNesterov) {
  Variable a = var({1.0f});
  opt::SGD plain;
  plain.apply_gradients({grad({2.0f})}, {&a});
  EXPECT_NEAR(a.value().item(), 1.0 - 0.01 * 2.0, 1e-7);

  Variable b = var({1.0f});
  opt::SGD mom({.learning_rate = 0.1, .momentum = 0.9});
  mom.apply_gradients({grad({1.0f})}, {&b});  // m = -0.1, x = 0.9
  mom.apply_gradients({grad({1.0f})}, {&b});  // m = -0.19, x = 0.71
  EXPECT_NEAR(b.value().item(), 0.71, 1e-6);

  Variable c = var({1.0f});
  opt::SGD nest({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true});
  nest.apply_gradients({grad({1.0f})}, {&c});  // m = -0.1; x += 0.9*-0.1 - 0.1 = -0.19
  EXPECT_NEAR(c.value().item(), 0.81, 1e-6);
  EXPECT_THROW(opt::SGD({.momentum = 1.5}), ValueError);
}

TEST(Optimizers, RmspropEpsilonInsideSqrt) {
  Variable v = var({1.0f});
  opt::RMSprop rms;
  rms.apply_gradients({grad({0.5f})}, {&v});
  const double s = 0.1 * 0.25;
  EXPECT_NEAR(v.value().item(), 1.0 - 0.001 * 0.5 / std::sqrt(s + 1e-7), 1e-6);
}

TEST(Optimizers, ClippingAndNames) {
  Variable v = var({0.0f, 0.0f});
  opt::SGD sgd({.learning_rate = 1.0, .base = {.clipnorm = 1.0}});
  sgd.apply_gradients({grad({3.0f, 4.0f})}, {&v});  // norm 5 → scaled to 1
  auto got = v.value().to_vector<float>();
  EXPECT_NEAR(got[0], -0.6, 1e-6);
  EXPECT_NEAR(got[1], -0.8, 1e-6);
  Variable w = var({0.0f});
  opt::SGD cv({.learning_rate = 1.0, .base = {.clipvalue = 0.5}});
  cv.apply_gradients({grad({3.0f})}, {&w});
  EXPECT_NEAR(w.value().item(), -0.5, 1e-7);
  EXPECT_THROW(opt::Adam({.base = {.clipnorm = 1.0, .clipvalue = 1.0}}), ValueError);
  EXPECT_EQ(opt::get("Adam")->class_name(), "Adam");
  EXPECT_EQ(opt::get("rmsprop")->class_name(), "RMSprop");
  EXPECT_THROW(opt::get("adamz"), ValueError);
}
