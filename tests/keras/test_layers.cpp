// Layers beyond Dense: Activation, Dropout, Flatten, Reshape, BatchNormalization, LayerNormalization; and the
// real multi-class problem of the Keras issue (scikit-learn's 8x8 digits) trained with Dense + Dropout + BN.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/ops.h"
#include "osprey/random.h"

using namespace osprey;
namespace layers = osprey::keras::layers;
using keras::Sequential;

TEST(Layers, DropoutScalesKeptValuesInTrainingAndIsTheIdentityOtherwise) {
  random::set_seed(1);
  layers::Dropout d(0.25);
  d.build(Shape({1000}));
  Tensor x = Tensor::ones({4, 1000});
  auto y = d.call(x, true).to_vector<float>();
  int zeros = 0;
  for (float v : y) {
    EXPECT_TRUE(v == 0.f || std::abs(v - 1.f / 0.75f) < 1e-6f) << v;
    zeros += v == 0.f;
  }
  EXPECT_NEAR(zeros / 4000.0, 0.25, 0.03);
  EXPECT_EQ(d.call(x, false).to_vector<float>(), x.to_vector<float>());
  EXPECT_THROW(layers::Dropout(1.0), ValueError);
}

TEST(Layers, FlattenAndReshapeKeepValuesAndGradients) {
  Sequential m({layers::Input({2, 3}), layers::Flatten(), layers::Reshape({3, -1}), layers::Flatten(), layers::Dense(1)});
  EXPECT_EQ(m.layers()[1]->output_shape(), Shape({3, 2}));
  Tensor x = random::uniform({5, 2, 3});
  Tensor y = m(x);
  EXPECT_EQ(y.shape(), Shape({5, 1}));
  m.compile({.optimizer = "sgd", .loss = "mse"});
  auto before = m.variables()[0]->value().to_vector<float>();
  m.train_on_batch(x, Tensor::zeros({5, 1}));
  EXPECT_NE(m.variables()[0]->value().to_vector<float>(), before);  // the gradient flowed through the reshapes
  EXPECT_THROW(Sequential({layers::Input({2, 3}), layers::Reshape({4, 2})}), ValueError);
}

TEST(Layers, BatchNormalizationTrainingInferenceAndMovingStatistics) {
  layers::BatchNormalization bn({.momentum = 0.9});
  bn.build(Shape({2}));
  ASSERT_EQ(bn.variables().size(), 4u);
  EXPECT_EQ(bn.variables()[2]->path(), bn.name() + "/moving_mean");
  EXPECT_EQ(bn.trainable_variables().size(), 2u);
  Tensor x = Tensor::from_vector<float>({1, 10, 3, 20, 5, 30}, {3, 2});  // means 3, 20; variances 8/3, 200/3
  auto y = bn.call(x, true).to_vector<float>();
  const double s0 = std::sqrt(8.0 / 3 + 1e-3), s1 = std::sqrt(200.0 / 3 + 1e-3);
  EXPECT_NEAR(y[0], -2 / s0, 1e-5);
  EXPECT_NEAR(y[1], -10 / s1, 1e-5);
  EXPECT_NEAR(y[4], 2 / s0, 1e-5);
  auto mm = bn.moving_mean()->value().to_vector<float>();
  auto mv = bn.moving_variance()->value().to_vector<float>();
  EXPECT_NEAR(mm[0], 0.3, 1e-6);             // 0·0.9 + 3·0.1
  EXPECT_NEAR(mv[1], 0.9 + 200.0 / 30, 1e-4);  // 1·0.9 + (200/3)·0.1
  auto inf = bn.call(x, false).to_vector<float>();  // the moving statistics
  EXPECT_NEAR(inf[0], (1 - 0.3) / std::sqrt(mv[0] + 1e-3), 1e-5);
}

TEST(Layers, LayerNormalizationNormalisesEachSample) {
  layers::LayerNormalization ln;
  ln.build(Shape({3}));
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 10, 10, 40}, {2, 3});
  auto y = ln.call(x, true).to_vector<float>();
  const double s0 = std::sqrt(2.0 / 3 + 1e-3), s1 = std::sqrt(200.0 + 1e-3);
  EXPECT_NEAR(y[0], -1 / s0, 1e-5);
  EXPECT_NEAR(y[2], 1 / s0, 1e-5);
  EXPECT_NEAR(y[5], 20 / s1, 1e-4);
  // Its gradient is right (finite differences on gamma through a sum of squares).
  Variable& gamma = *ln.variables()[0];
  GradientTape tape;
  Tensor loss = ops::reduce_sum(ops::square(ln.call(x, true)));
  auto g = tape.gradient(loss, std::vector<Variable*>{&gamma});
  const auto y2 = ln.call(x, true).to_vector<float>();
  double want0 = 2 * (y2[0] * y2[0] + y2[3] * y2[3]);  // d/dγ0 Σ (γ·n + β)² at γ=1, β=0
  EXPECT_NEAR(g[0].to_vector<float>()[0], want0, 1e-4);
}

TEST(Layers, ActivationLayer) {
  Sequential m({layers::Input({2}), layers::Activation("relu")});
  EXPECT_EQ(m(Tensor::from_vector<float>({-1, 2}, {1, 2})).to_vector<float>(), (std::vector<float>{0, 2}));
  EXPECT_THROW(layers::Activation("nope"), ValueError);
}

// The Keras issue's done criterion: scikit-learn's 8x8 digits (1797 samples, 10 classes; exported once to
// tests/data/digits.csv by the script in its header) with Dense + Dropout + BatchNormalization reaches at least
// 95 % validation accuracy on the last 20 %.
TEST(Layers, DigitsReachNinetyFivePercentWithDropoutAndBatchNorm) {
  std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/digits.csv");
  ASSERT_TRUE(in) << "tests/data/digits.csv is missing";
  std::vector<float> pixels, labels;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream row(line);
    std::string cell;
    std::vector<float> values;
    while (std::getline(row, cell, ',')) values.push_back(std::stof(cell));
    ASSERT_EQ(values.size(), 65u);
    for (int i = 0; i < 64; ++i) pixels.push_back(values[i] / 16.f);
    labels.push_back(values[64]);
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  ASSERT_EQ(n, 1797);
  Tensor x = Tensor::from_vector(pixels, {n, 64}), y = Tensor::from_vector(labels, {n});
  keras::utils::set_random_seed(7);
  Sequential m({layers::Input({64}), layers::Dense(128, "relu"), layers::BatchNormalization(), layers::Dropout(0.2),
                layers::Dense(64, "relu"), layers::Dropout(0.2), layers::Dense(10, "softmax")});
  m.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  auto h = m.fit(x, y, {.epochs = 30, .batch_size = 32, .verbose = 0, .validation_split = 0.2});
  const double val_acc = h.history.at("val_accuracy").back();
  RecordProperty("val_accuracy", std::to_string(val_acc));
  std::cout << "digits: validation accuracy " << val_acc << " after 30 epochs\n";
  EXPECT_GE(val_acc, 0.95);
  EXPECT_LT(h.history.at("val_loss").back(), h.history.at("val_loss").front());
}

TEST(Layers, RegularizersAddToTheLossAndConstraintsProjectTheWeights) {
  random::set_seed(4);
  Tensor x = random::uniform({32, 3}), y = random::uniform({32, 1});
  Sequential m({layers::Input({3}),
                layers::Dense(5, "relu", {.kernel_regularizer = layers::L2(0.1), .kernel_constraint = layers::NonNeg()}),
                layers::Dense(1, "", {.kernel_regularizer = layers::L1L2(0.01, 0.0),
                                      .kernel_constraint = layers::MaxNorm(0.5)})});
  m.compile({.optimizer = "sgd", .loss = "mse"});
  const auto w1 = m.variables()[0]->value().to_vector<float>();
  const auto w2 = m.variables()[2]->value().to_vector<float>();
  double penalty = 0;
  for (float v : w1) penalty += 0.1 * v * v;
  for (float v : w2) penalty += 0.01 * std::abs(v);
  EXPECT_NEAR(m.regularization_loss().item(), penalty, 1e-5);
  const double mse = m.test_on_batch(x, y)[0] - penalty;  // test_on_batch reports loss + penalties, as Keras
  EXPECT_NEAR(mse, ops::reduce_mean(ops::mean_squared_error(y, m.predict_on_batch(x))).item(), 1e-5);
  m.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0});
  for (float v : m.variables()[0]->value().to_vector<float>()) EXPECT_GE(v, 0.f);
  double norm = 0;
  for (float v : m.variables()[2]->value().to_vector<float>()) norm += v * v;
  EXPECT_LE(std::sqrt(norm), 0.5 + 1e-5);
}

TEST(Layers, NaNInputsAreReportedWithTheirPlace) {
  Sequential m({layers::Input({2}), layers::Dense(1)});
  m.compile({.optimizer = "sgd", .loss = "mse"});
  Tensor x = Tensor::from_vector<float>({1, 2, 3, std::nanf(""), 5, 6}, {3, 2});
  try {
    m.fit(x, Tensor::zeros({3, 1}), {.verbose = 0});
    FAIL() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("`x` contains 1 NaN or infinite value(s), the first at sample 1"));
  }
}

// Keras 3.15 values (tests/keras/keras_reference.py, edge cases).
TEST(Layers, LeakyReLUAndEdgeCasesAsKeras) {
  layers::LeakyReLU leaky;
  leaky.build(Shape({2}));
  auto y = leaky.call(Tensor::from_vector<float>({-2.0f, 3.0f}, {1, 2}), false).to_vector<float>();
  EXPECT_NEAR(y[0], -0.6000000238418579, 1e-7);
  EXPECT_EQ(y[1], 3.0f);
  // BCE with probabilities exactly 0 and 1: clipped, finite.
  auto bce = ops::binary_crossentropy(Tensor::from_vector<float>({1, 0, 1, 0}, {4, 1}),
                                      Tensor::from_vector<float>({1, 0, 0, 1}, {4, 1}))
                 .to_vector<float>();
  EXPECT_NEAR(bce[0], 1.1920928955078125e-07, 1e-12);
  EXPECT_NEAR(bce[2], 16.11809539794922, 1e-5);
  EXPECT_NEAR(bce[3], 15.942384719848633, 1e-5);
  // All one class: AUC has no negatives and Precision no predicted positives; both are 0, not NaN.
  keras::metrics::AUC auc;
  auc.update_state(Tensor::from_vector<float>({1, 1, 1}, {3, 1}), Tensor::from_vector<float>({0.2f, 0.6f, 0.9f}, {3, 1}));
  EXPECT_EQ(auc.result(), 0.0);
  keras::metrics::Precision precision;
  precision.update_state(Tensor::from_vector<float>({0, 0}, {2, 1}), Tensor::from_vector<float>({0.2f, 0.1f}, {2, 1}));
  EXPECT_EQ(precision.result(), 0.0);
}
