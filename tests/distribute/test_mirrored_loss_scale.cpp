// Dynamic loss scaling under MirroredStrategy: every replica's all-reduced gradients decide whether the step is
// applied (the same answer on every replica), a skipped step changes no replica, and the scale follows the
// single-device run step for step.
#include <gtest/gtest.h>

#include "osprey/osprey.h"
#include "osprey/keras/mixed_precision.h"
#include "test_util.h"

using namespace osprey;
namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;
namespace opt = osprey::keras::optimizers;

namespace {

struct Trace {
  std::vector<float> scales;
  std::vector<int64_t> iterations;
  std::vector<std::vector<float>> weights;
};

Trace train(bool mirrored) {
  osprey::testing::reset_runtime();
  if (mirrored) {
    std::vector<LogicalDeviceConfiguration> two(2);
    config::set_logical_device_configuration(config::list_physical_devices("CPU")[0], two);
  }
  keras::mixed_precision::set_global_policy("mixed_float16");
  std::unique_ptr<distribute::MirroredStrategy> strategy;
  std::optional<distribute::StrategyScope> scope;
  if (mirrored) {
    strategy = std::make_unique<distribute::MirroredStrategy>();
    scope.emplace(strategy->scope());
  }
  random::set_seed(9);
  const Tensor x = random::uniform({16, 6}, -1, 1), y = random::uniform({16, 3}, -1, 1);
  random::set_seed(5);
  keras::Sequential model({layers::Input({6}), layers::Dense(8, "tanh"), layers::Dense(3)});
  model.compile({.optimizer = opt::LossScaleOptimizer(opt::SGD({.learning_rate = 0.05}),
                                                     {.initial_scale = 16777216.0, .dynamic_growth_steps = 2}),
                 .loss = "mse"});
  Trace r;
  for (int step = 0; step < 16; ++step) {
    model.train_on_batch(x, y);
    r.scales.push_back(model.optimizer()->loss_scale()->dynamic_scale);
    r.iterations.push_back(model.optimizer()->iterations());
    for (auto* v : model.variables()) {
      for (int c = 1; c < v->num_components(); ++c) {
        EXPECT_EQ(v->component(c).to_vector<float>(), v->component(0).to_vector<float>()) << "step " << step;
      }
    }
  }
  for (auto* v : model.variables()) r.weights.push_back(v->component(0).to_vector<float>());
  keras::mixed_precision::set_global_policy("float32");
  return r;
}

}  // namespace

TEST(MirroredLossScale, TwoReplicasSkipAndGrowAsOneDevice) {
  const Trace one = train(false), two = train(true);
  EXPECT_EQ(two.scales, one.scales);
  EXPECT_EQ(two.iterations, one.iterations);
  EXPECT_LT(one.iterations.back(), 16);  // some steps were skipped
  EXPECT_GT(one.iterations.back(), 0);
  ASSERT_EQ(one.weights.size(), two.weights.size());
  for (std::size_t i = 0; i < one.weights.size(); ++i) {
    for (std::size_t k = 0; k < one.weights[i].size(); ++k) {
      EXPECT_NEAR(two.weights[i][k], one.weights[i][k], 2e-3) << "variable " << i << "[" << k << "]";
    }
  }
  osprey::testing::reset_runtime();
}
