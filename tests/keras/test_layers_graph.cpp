// The layers functional models need beyond Dense, in one graph, against Keras 3 (tests/keras/
// keras_layers_reference.py regenerates tests/data/keras_layers.json): each branch's forward values, the model's
// predictions, evaluate (with the activity penalty), two epochs of training and the trained weights. The random
// layers (GaussianNoise, GaussianDropout, AlphaDropout) are checked by their statistics and their inference identity.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "test_util.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;

TEST(LayersGraph, EveryLayerMatchesKerasForwardEvaluateAndTraining) {
  std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_layers.json");
  const json ref = json::parse(in).at("reference");
  auto x_in = keras::Input({6}, {.name = "x"});
  auto d = layers::Dense(8, "", {.name = "d"})(x_in);
  auto seq = layers::Dense(4, "", {.name = "seq_in"})(layers::RepeatVector(3, "repeat")(d));
  EXPECT_EQ(seq.shape(), Shape({3, 4}));
  std::vector<KerasTensor> branches{
      layers::ReLU({.name = "relu"})(d),
      layers::ReLU({.max_value = 0.5, .negative_slope = 0.1, .threshold = 0.2, .name = "relu_custom"})(d),
      layers::ELU(0.5, "elu")(d),
      layers::Softmax(-1, "softmax")(d),
      layers::PReLU("zeros", "prelu")(d),
      layers::UnitNormalization(-1, "unit")(d),
      layers::GroupNormalization({.groups = 2, .name = "group"})(d),
      layers::RMSNormalization(1e-6, "rms")(d),
      layers::ActivityRegularization(0.01, 0.02, "act_reg")(d),
      layers::Identity("identity")(d),
      layers::Lambda([](const Tensor& t) { return ops::mul(t, t); }, std::nullopt, "square")(d),
      layers::Flatten("flat_seq")(layers::Permute({2, 1}, "permute")(seq)),
      layers::Flatten("flat_group3")(layers::GroupNormalization({.groups = 2, .name = "group3"})(seq))};
  EXPECT_EQ(branches[11].shape(), Shape({12}));
  Model model(x_in, layers::Dense(1, "", {.name = "out"})(layers::Concatenate(-1, "cat")(branches)), "layers");
  for (const auto& [name, values] : ref.at("initial_weights").items()) {
    auto vars = model.get_layer(name)->variables();
    ASSERT_EQ(vars.size(), values.size()) << name;
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(tensor_of(values[i]));
  }
  const Tensor x = tensor_of(ref.at("x")), y = tensor_of(ref.at("y"));
  for (std::size_t b = 0; b < 11; ++b) {
    Model branch(x_in, branches[b]);
    expect_close(branch.predict(x, {.verbose = 0}), ref.at("branches")[b], 2e-5, "branch " + std::to_string(b));
  }
  expect_close(model.predict(x, {.verbose = 0}), ref.at("predict_before"), 2e-5, "predict");
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.05}), .loss = "mse"});
  EXPECT_NEAR(model.evaluate(x, y, {.verbose = 0})[0], ref.at("evaluate_before").get<double>(), 1e-5);
  const auto h = model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (int e = 0; e < 2; ++e) EXPECT_NEAR(h.history.at("loss")[e], ref.at("history")[e].get<double>(), 1e-4);
  for (const auto& [name, values] : ref.at("final_weights").items()) {
    auto vars = model.get_layer(name)->variables();
    for (std::size_t i = 0; i < vars.size(); ++i) expect_close(vars[i]->value(), values[i], 2e-4, name);
  }
  expect_close(model.predict(x, {.verbose = 0}), ref.at("predict_after"), 5e-4, "predict after");
}

TEST(LayersGraph, RandomLayersAreTheIdentityOutsideTrainingAndKeepTheirStatisticsInIt) {
  random::set_seed(8);
  const Tensor x = random::normal({20000, 1});
  auto stats = [](const Tensor& t) {
    double sum = 0, sq = 0;
    const auto v = t.to_vector<float>();
    for (float f : v) {
      sum += f;
      sq += static_cast<double>(f) * f;
    }
    const double mean = sum / static_cast<double>(v.size());
    return std::pair<double, double>{mean, sq / static_cast<double>(v.size()) - mean * mean};
  };
  layers::GaussianNoise noise(0.5);
  layers::GaussianDropout gdrop(0.2);
  layers::AlphaDropout adrop(0.2);
  for (Layer* l : std::initializer_list<Layer*>{&noise, &gdrop, &adrop}) {
    EXPECT_EQ((*l)(x, false).to_vector<float>(), x.to_vector<float>()) << l->class_name();
  }
  // x ~ N(0, 1): noise adds variance 0.25; Gaussian dropout multiplies by N(1, 0.25) (variance 1.25); AlphaDropout
  // keeps mean 0 and variance 1 (SELU's fixed point).
  auto [m1, v1] = stats(noise(x, true));
  EXPECT_NEAR(m1, 0.0, 0.03);
  EXPECT_NEAR(v1, 1.25, 0.05);
  auto [m2, v2] = stats(gdrop(x, true));
  EXPECT_NEAR(m2, 0.0, 0.03);
  EXPECT_NEAR(v2, 1.25, 0.06);
  auto [m3, v3] = stats(adrop(x, true));
  EXPECT_NEAR(m3, 0.0, 0.03);
  EXPECT_NEAR(v3, 1.0, 0.05);
  EXPECT_THROW(layers::AlphaDropout(1.0), ValueError);
  EXPECT_THROW(layers::ReLU({.threshold = -1}), ValueError);
  EXPECT_THROW(layers::Permute({1, 3}), ValueError);
  EXPECT_THROW((void)layers::RepeatVector(2)(keras::Input({2, 3})), ValueError);
  EXPECT_THROW((void)layers::GroupNormalization({.groups = 3})(keras::Input({8})), ValueError);
}

TEST(LayersGraph, RecordedStepsKeepTheActivityPenaltyAndNewOpOnlyLayers) {
  std::vector<std::vector<float>> weights[2];
  std::vector<double> losses[2];
  for (int eager = 0; eager < 2; ++eager) {
    random::set_seed(19);
    Sequential m({layers::Input({5}), layers::Dense(6), layers::PReLU("ones"), layers::ActivityRegularization(0.01, 0.1),
                  layers::RMSNormalization(), layers::RepeatVector(2), layers::Permute({2, 1}), layers::Flatten(),
                  layers::ReLU({.max_value = 1.0}), layers::Dense(1)});
    m.compile({.optimizer = "adam", .loss = "mse", .run_eagerly = eager == 1});
    const Tensor x = random::uniform({40, 5}, -1, 1), y = random::uniform({40, 1});
    losses[eager] = m.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0}).history["loss"];
    losses[eager].push_back(m.evaluate(x, y, {.verbose = 0})[0]);
    for (auto* v : m.variables()) weights[eager].push_back(v->value().to_vector<float>());
  }
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(losses[0], losses[1]);
  // evaluate's loss is the mse plus (0.01·Σ|h| + 0.1·Σh²) / batch of the regularized activations h.
  auto in = keras::Input({5});
  auto h = layers::Dense(6)(in);
  Model m(in, layers::Dense(1)(layers::ActivityRegularization(0.01, 0.1)(h)));
  Model hidden(in, h);
  m.compile({.optimizer = "sgd", .loss = "mse"});
  random::set_seed(20);
  const Tensor x = random::uniform({8, 5}, -1, 1), y = random::uniform({8, 1});
  const auto p = m.predict(x, {.verbose = 0}).to_vector<float>(), t = y.to_vector<float>();
  const auto hv = hidden.predict(x, {.verbose = 0}).to_vector<float>();
  double mse = 0, penalty = 0;
  for (int i = 0; i < 8; ++i) mse += (p[i] - t[i]) * (p[i] - t[i]) / 8.0;
  for (float v : hv) penalty += (0.01 * std::abs(v) + 0.1 * v * v) / 8.0;
  EXPECT_NEAR(m.evaluate(x, y, {.batch_size = 8, .verbose = 0})[0], mse + penalty, 1e-5);
}

TEST(LayersGraph, SavingALambdaIsAClearError) {
  Sequential with_lambda({layers::Input({3}), layers::Lambda([](const Tensor& t) { return ops::square(t); }),
                          layers::Dense(1)});
  try {
    (void)with_lambda.to_json();
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("is a Lambda"), std::string::npos) << e.what();
  }
  EXPECT_THROW(with_lambda.save("/tmp/osprey_lambda.keras"), ValueError);
  auto in = keras::Input({3});
  Model functional(in, layers::Lambda([](const Tensor& t) { return ops::square(t); })(in));
  EXPECT_THROW((void)functional.to_json(), ValueError);
}

// Element-wise merges of broadcastable inputs, as Keras's Merge: (None, 4) with (None, 1), and an input of lower
// rank getting axes after the batch axis; the gradient of the broadcast input sums over what it was repeated along.
TEST(LayersGraph, ElementwiseMergesBroadcastAsKeras) {
  random::set_seed(5);
  auto a = keras::Input({4}, {.name = "a"});
  auto b = keras::Input({1}, {.name = "b"});
  auto c = keras::Input({3, 4}, {.name = "c"});
  auto sum = layers::Add()({a, b});
  auto prod = layers::Multiply()({sum, c});
  keras::Model model({a, b, c}, {prod}, "merges");
  // Keras's order (by depth from the output): a, b, add, c, multiply.
  EXPECT_EQ(model.layers()[2]->output_shape(), Shape({4}));
  EXPECT_EQ(model.layers()[3]->name(), "c");
  EXPECT_EQ(model.layers()[4]->output_shape(), Shape({3, 4}));
  const Tensor xa = random::uniform({2, 4}), xb = random::uniform({2, 1}), xc = random::uniform({2, 3, 4});
  const auto got = model.predict({xa, xb, xc}, {.verbose = 0}).to_vector<float>();
  const auto va = xa.to_vector<float>(), vb = xb.to_vector<float>(), vc = xc.to_vector<float>();
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) {
        EXPECT_FLOAT_EQ(got[(n * 3 + i) * 4 + j], (va[n * 4 + j] + vb[n]) * vc[(n * 3 + i) * 4 + j]);
      }
    }
  }
  Tensor wb = xb;
  GradientTape tape;
  tape.watch(wb);
  const Tensor y = layers::Average()(std::vector<Tensor>{xa, wb});
  EXPECT_EQ(y.shape(), Shape({2, 4}));
  const auto g = tape.gradient(ops::reduce_sum(y), std::vector<Tensor>{wb});
  EXPECT_EQ(g[0].to_vector<float>(), (std::vector<float>{2.f, 2.f}));  // 4 columns · 1/2
  EXPECT_THROW((void)layers::Add()({keras::Input({3}), keras::Input({4})}), ValueError);
  EXPECT_THROW((void)layers::Add()(std::vector<Tensor>{Tensor::zeros({2, 3}), Tensor::zeros({3, 3})}), ValueError);
}

// Softmax over another axis than the last (Keras's Softmax(axis=1)), its config keeping the axis.
TEST(LayersGraph, SoftmaxOverAnyFeatureAxis) {
  random::set_seed(6);
  const Tensor x = random::uniform({2, 3, 4}, -2, 2);
  const auto v = x.to_vector<float>();
  const auto y = layers::Softmax(1)(x).to_vector<float>();
  for (int n = 0; n < 2; ++n) {
    for (int j = 0; j < 4; ++j) {
      double total = 0;
      for (int i = 0; i < 3; ++i) total += std::exp(static_cast<double>(v[(n * 3 + i) * 4 + j]));
      for (int i = 0; i < 3; ++i) {
        EXPECT_NEAR(y[(n * 3 + i) * 4 + j], std::exp(static_cast<double>(v[(n * 3 + i) * 4 + j])) / total, 1e-6);
      }
    }
  }
  EXPECT_EQ(layers::Softmax(-2)(x).to_vector<float>(), y);
  EXPECT_THAT(layers::Softmax(1).get_config(), ::testing::HasSubstr("\"axis\": 1"));
  EXPECT_THROW((void)layers::Softmax(0), ValueError);
  EXPECT_THROW((void)layers::Softmax(3)(x), ValueError);
}

// Softmax and UnitNormalization over several axes (or one other than the last), against Keras 3: outputs, the
// Softmax's mask, the input's gradients, and the configs both ways.
TEST(LayersGraph, SoftmaxAndUnitNormalizationOverSeveralAxesMatchKeras) {
  std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_layers.json");
  const json all = json::parse(in).at("several_axes");
  ASSERT_EQ(all.size(), 6u);
  for (const auto& [name, c] : all.items()) {
    SCOPED_TRACE(name);
    const json object{{"class_name", name.starts_with("softmax") ? "Softmax" : "UnitNormalization"},
                      {"module", "keras.layers"}, {"config", c.at("config")}};
    const auto layer = keras::serialization::layer_from_object(object);
    // The config comes back as Keras wrote it.
    EXPECT_EQ(json::parse(layer->get_config()).at("axis"), c.at("config").at("axis"));
    Variable x(osprey::testing::tensor_of(c.at("x")), "x");
    GradientTape tape;
    const Tensor y = c.at("mask").is_null() ? (*layer)(x.value())
                                            : layer->call_masked(x.value(), false, osprey::testing::tensor_of(c.at("mask")));
    osprey::testing::expect_close(y, c.at("y"), 1e-6, "output");
    const auto g = tape.gradient(ops::reduce_sum(ops::mul(y, osprey::testing::tensor_of(c.at("w")))), {&x});
    osprey::testing::expect_close(g[0], c.at("grad"), 1e-5, "gradient");
  }
  const Tensor x = Tensor::ones({2, 3, 4});
  EXPECT_THAT(osprey::testing::error_of([&] { layers::Softmax(std::vector<int>{1, -2}, "sm")(x); }),
              ::testing::HasSubstr("Layer 'sm' (Softmax): axis=(1, -2) must name distinct axes"));
  EXPECT_THAT(osprey::testing::error_of([&] { layers::UnitNormalization(std::vector<int>{1, 3}, "un")(x); }),
              ::testing::HasSubstr("Layer 'un' (UnitNormalization): axis=(1, 3)"));
  EXPECT_THROW((void)layers::UnitNormalization(std::vector<int>{0, 1}), ValueError);
}
