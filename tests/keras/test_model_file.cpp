// Keras 3's whole-model file (.keras): Osprey loads what Keras saves (architecture, weights, compile settings and
// optimizer state) and saves files of the same form. tests/data/keras_model.keras and the numbers below come from
// tests/keras/keras_model_file_reference.py (Keras 3.15).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "osprey/errors.h"
#include <nlohmann/json.hpp>

#include "keras/saving/zip_store.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
namespace layers = osprey::keras::layers;
using keras::Model;
using keras::Sequential;
using ::testing::HasSubstr;
using osprey::testing::data_file;

namespace {
std::string temp_path(const std::string& name) { return osprey::testing::temp_path("model_file_test", name); }
using osprey::testing::error_of;
}  // namespace

namespace {

// Keras's model.predict(x[:4]) and model.evaluate(x, y) (loss with the L2 penalty, accuracy) after loading.
const std::vector<double> kKerasPredict = {0.6373485326766968, 0.2708512842655182, 0.09180016815662384,
                                           0.30525168776512146, 0.42187240719795227, 0.27287590503692627,
                                           0.4008498191833496, 0.07948583364486694, 0.5196644067764282,
                                           0.5742008090019226, 0.321310818195343, 0.10448841750621796};
const double kKerasLoss = 1.3466877937316895, kKerasAccuracy = 0.375;

// The reference script's data: x[i][j] = sin(0.37 (6i + j)), y[i] = i mod 3, 16 samples.
Tensor inputs(int rows = 16) {
  std::vector<float> v;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < 6; ++j) v.push_back(static_cast<float>(std::sin(0.37 * (6 * i + j))));
  return Tensor::from_vector(v, {rows, 6});
}
Tensor labels() {
  std::vector<int32_t> v;
  for (int i = 0; i < 16; ++i) v.push_back(i % 3);
  return Tensor::from_vector(v, {16});
}

}  // namespace

TEST(ModelFile, LoadsAKerasFileAndPredictsAsKeras) {
  SKIP_WITHOUT_HDF5();
  auto m_ptr = keras::models::load_model(data_file("keras_model.keras"));
  Model& m = *m_ptr;
  EXPECT_EQ(m.name(), "classifier");
  ASSERT_EQ(m.layers().size(), 4u);
  EXPECT_EQ(m.layers()[1]->class_name(), "BatchNormalization");
  ASSERT_TRUE(m.compiled());
  EXPECT_EQ(m.optimizer()->class_name(), "Adam");
  EXPECT_TRUE(m.optimizer()->has_schedule());
  EXPECT_EQ(m.optimizer()->iterations(), 4);  // 2 epochs of 2 batches
  const auto p = m.predict(inputs(4), {.verbose = 0}).to_vector<float>();
  ASSERT_EQ(p.size(), kKerasPredict.size());
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], kKerasPredict[i], 1e-5) << i;
  const auto e = m.evaluate(inputs(), labels(), {.verbose = 0});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_NEAR(e[0], kKerasLoss, 1e-5);  // includes the Dense's L2 penalty: the regularizer was restored
  EXPECT_NEAR(e[1], kKerasAccuracy, 1e-9);
  // compile_config as Keras wrote it, the learning-rate schedule included.
  const auto keras_config = nlohmann::json::parse(keras::detail::read_zip(data_file("keras_model.keras")).at("config.json"));
  EXPECT_EQ(nlohmann::json::parse(m.to_json())["compile_config"], keras_config["compile_config"]);
  // Saved again by Osprey, the schedule and the optimizer state survive.
  const std::string again = temp_path("again.keras");
  m.save(again);
  auto n_ptr = keras::models::load_model(again);
  Model& n = *n_ptr;
  EXPECT_TRUE(n.optimizer()->has_schedule());
  EXPECT_EQ(n.optimizer()->iterations(), 4);
  EXPECT_EQ(n.predict(inputs(4), {.verbose = 0}).to_vector<float>(), m.predict(inputs(4), {.verbose = 0}).to_vector<float>());
  // Training resumes (the schedule continues from iteration 4).
  m.fit(inputs(), labels(), {.epochs = 1, .batch_size = 8, .verbose = 0});
  EXPECT_EQ(m.optimizer()->iterations(), 6);
}

// Metric objects keep their options (AUC curve and thresholds, Precision threshold, BinaryAccuracy threshold, names).
TEST(ModelFile, MetricObjectsKeepTheirOptions) {
  SKIP_WITHOUT_HDF5();
  auto m_ptr = keras::models::load_model(data_file("keras_metrics.keras"));
  Model& m = *m_ptr;
  std::vector<float> yb;
  for (int i = 0; i < 16; ++i) yb.push_back((i * 7) % 3 == 0 ? 1.f : 0.f);
  auto logs = m.evaluate_dict(inputs(), Tensor::from_vector(yb, {16, 1}), {.verbose = 0});
  // keras: b.evaluate(x, yb, return_dict=True) in tests/keras/keras_model_file_reference.py
  EXPECT_NEAR(logs.at("loss"), 0.9905300736427307, 1e-5);
  EXPECT_NEAR(logs.at("pr_auc"), 0.22714966535568237, 1e-5);
  EXPECT_NEAR(logs.at("precision"), 0.25, 1e-9);
  EXPECT_NEAR(logs.at("binary_accuracy"), 0.3125, 1e-9);
}

TEST(ModelFile, SaveAndLoadRoundTrip) {
  SKIP_WITHOUT_HDF5();
  Sequential a({layers::Input({6}), layers::Dense(5, "tanh", {.kernel_constraint = layers::MaxNorm(1.5)}),
                layers::LayerNormalization(), layers::LeakyReLU(0.1), layers::Dense(1)},
               "regressor");
  a.compile({.optimizer = keras::optimizers::RMSprop({.learning_rate = 0.01, .momentum = 0.5}), .loss = "mse",
             .metrics = {"mae"}});
  std::vector<float> target;
  for (float v : inputs().to_vector<float>()) target.push_back(v);
  target.resize(16);
  const Tensor t = Tensor::from_vector(target, {16, 1});
  a.fit(inputs(), t, {.epochs = 2, .batch_size = 4, .verbose = 0});
  const std::string path = temp_path("regressor.keras");
  a.save(path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  auto b_ptr = keras::models::load_model(path);
  Model& b = *b_ptr;
  EXPECT_EQ(b.to_json(), a.to_json());
  EXPECT_EQ(b.predict(inputs(), {.verbose = 0}).to_vector<float>(), a.predict(inputs(), {.verbose = 0}).to_vector<float>());
  EXPECT_EQ(b.optimizer()->iterations(), 8);
  // Both continue identically: weights, optimizer slots and iteration count were all restored.
  a.train_on_batch(inputs(), t);
  b.train_on_batch(inputs(), t);
  EXPECT_EQ(b.predict(inputs(), {.verbose = 0}).to_vector<float>(), a.predict(inputs(), {.verbose = 0}).to_vector<float>());
  // compile = false: the architecture and weights only.
  auto c_ptr = keras::models::load_model(path, {.compile = false});
  Model& c = *c_ptr;
  EXPECT_FALSE(c.compiled());
}

TEST(ModelFile, ModelFromJsonRebuildsTheArchitecture) {
  Sequential a({layers::Input({4}), layers::Dense(3, "relu", {.kernel_regularizer = layers::L1L2(0.01, 0.02)}),
                layers::Dropout(0.5), layers::Flatten(), layers::Reshape({3, 1}), layers::Activation("softplus")});
  auto b_ptr = keras::models::model_from_json(a.to_json());
  Model& b = *b_ptr;
  EXPECT_EQ(b.get_config(), a.get_config());
  EXPECT_FALSE(b.compiled());
}

TEST(ModelFile, BadFilesAndUnsupportedContentAreValueErrors) {
  EXPECT_THAT(error_of([] { keras::models::load_model(temp_path("missing.keras")); }), HasSubstr("File not found"));
  EXPECT_THROW(keras::models::load_model(temp_path("missing.keras")), NotFoundError);
  EXPECT_THAT(error_of([] { keras::models::load_model(temp_path("model.h5")); }), HasSubstr("File format not supported"));
  {
    std::ofstream(temp_path("text.keras")) << "this is not a zip file at all";
  }
  EXPECT_THAT(error_of([] { keras::models::load_model(temp_path("text.keras")); }),
              HasSubstr("is not a valid .keras (ZIP) file: no end-of-central-directory record"));
  // A damaged entry: flip one byte of the stored weights.
  const std::string damaged = temp_path("damaged.keras");
  std::filesystem::copy_file(data_file("keras_model.keras"), damaged, std::filesystem::copy_options::overwrite_existing);
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5000);
    f.put('\x55');
  }
  EXPECT_THAT(error_of([&] { keras::models::load_model(damaged); }), HasSubstr("fails its CRC-32 check"));
  Sequential m({layers::Input({2}), layers::Dense(1)});
  EXPECT_THAT(error_of([&] { m.save(temp_path("m.h5")); }), HasSubstr("Invalid filepath extension for saving"));
  EXPECT_THAT(error_of([] {
                keras::models::model_from_json(
                    R"({"class_name": "Sequential", "config": {"layers": [{"class_name": "TextVectorization", "config": {}}]}})");
              }),
              HasSubstr("unknown layer class 'TextVectorization' (layer ''). Osprey has: Activation, "));
  EXPECT_THAT(error_of([] { keras::models::model_from_json(R"({"class_name": "Functional", "config": {}})"); }),
              HasSubstr("the functional model '' has no \"layers\" in its config"));
  EXPECT_THAT(error_of([] { keras::models::model_from_json("{not json"); }), HasSubstr("is not valid JSON"));
}
