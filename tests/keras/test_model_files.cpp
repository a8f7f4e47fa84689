// Keras files of functional, nested, multi-output and custom-layer models, both ways (issue 15): files written by
// Keras 3 (tests/keras/keras_model_files_reference.py) load in Osprey and predict, evaluate and train on to Keras's
// numbers; Osprey writes them back in Keras's layout (tests/keras/keras_load_osprey_files.py loads those in Keras).
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/zip_store.h"
#include "test_util.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/ops.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;


namespace {

/// The custom layer of the reference files: x * w, one factor per feature (Keras: "osprey_test>Scale").
class Scale : public Layer {
 public:
  explicit Scale(double init = 1.0, std::string name = "") : Layer(name, "scale"), init_(init) {}
  OSPREY_KERAS_LAYER(Scale)
  std::string class_name() const override { return "Scale"; }
  Shape build(const Shape& input_shape) override {
    if (!built_) w_ = &add_weight("w", ops::mul(Tensor::ones(Shape({input_shape[-1]})), Tensor::scalar(init_)));
    return finish_build(input_shape);
  }
  Tensor call(const Tensor& x, bool) override { return ops::mul(x, w_->value()); }
  std::string get_config() const override { return config_with(Layer::get_config(), {{"init", init_}}); }
  static std::shared_ptr<Scale> from_config(const saving::Config& c) {
    return std::make_shared<Scale>(c.get_double("init"), c.name());
  }

 private:
  double init_;
  Variable* w_ = nullptr;
};

/// The custom metric class of the reference files: mean |y - p| ** power (Keras: "osprey_test>PowerError").
class PowerError : public metrics::MeanMetricWrapper {
 public:
  explicit PowerError(double power = 2.0, std::string name = "power_error")
      : MeanMetricWrapper(
            [power](const Tensor& y, const Tensor& p) {
              // |e| ** power as exp(power · log|e|) (0 for e = 0: exp(-inf))
              const Tensor e = ops::abs(ops::sub(y, p));
              return ops::reduce_mean(ops::exp(ops::mul(ops::log(e), Tensor::scalar(power))), -1);
            },
            std::move(name)),
        power_(power) {}
  std::string class_name() const override { return "PowerError"; }
  std::string get_config() const override {
    return json{{"name", name()}, {"dtype", "float32"}, {"power", power_}}.dump();
  }
  static std::shared_ptr<PowerError> from_config(const saving::Config& c) {
    return std::make_shared<PowerError>(c.get_double("power"), c.name());
  }

 private:
  double power_;
};

/// The subclassed model of the reference files (Keras: "osprey_test>TwoLayer"): its layers tracked under the
/// attribute names Keras's file keys them by.
class TwoLayer : public Model {
 public:
  explicit TwoLayer(int64_t units = 4, std::string name = "") : Model(std::move(name)), units_(units) {
    encoder_ = track("encoder", layers::Dense(static_cast<int>(units), "relu"));
    readout_ = track("readout", layers::Dense(1));
  }
  std::string class_name() const override { return "TwoLayer"; }
  Tensor call(const Tensor& x, bool training) override { return (*readout_)((*encoder_)(x, training), training); }
  std::string get_config() const override { return config_with(Layer::get_config(), {{"units", units_}}); }
  static std::shared_ptr<TwoLayer> from_config(const saving::Config& c) {
    return std::make_shared<TwoLayer>(c.get_int("units"), c.name());
  }

 private:
  int64_t units_;
  std::shared_ptr<layers::Dense> encoder_, readout_;
};

const bool registered = [] {
  saving::register_keras_serializable<TwoLayer>("osprey_test", "TwoLayer");
  saving::register_keras_serializable<Scale>("osprey_test", "Scale");
  saving::register_keras_serializable<PowerError>("osprey_test", "PowerError");
  // The custom loss function: 2 * mean squared error per sample.
  saving::register_keras_serializable("osprey_test", "scaled_mse", [](const Tensor& y, const Tensor& p) {
    return ops::mul(Tensor::scalar(2.0), ops::reduce_mean(ops::square(ops::sub(y, p)), -1));
  });
  return true;
}();

const json& model_files_reference(const std::string& name) {
  static const json all = [] {
    std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_files.json");
    return json::parse(in);
  }();
  return all.at(name);
}

std::string file_of(const std::string& name) {
  return std::string(OSPREY_TEST_DATA_DIR) + "/keras_files/" + name + ".keras";
}

/// Where Osprey's files go for the Keras cross-check (OSPREY_KERAS_FILES_OUT, else a temporary directory).
std::string out_dir() {
  const char* env = std::getenv("OSPREY_KERAS_FILES_OUT");
  const std::string dir = env && *env ? env : (std::filesystem::temp_directory_path() / "osprey_model_files").string();
  std::filesystem::create_directories(dir);
  return dir;
}

// `j` as the model's data: a name map, a list of `arrays` arrays (several inputs), or one array.
Arrays arrays_of(const json& j, const std::vector<std::string>& output_names, std::size_t arrays = 1) {
  if (j.is_object()) {  // by output name
    std::map<std::string, Tensor> named;
    for (const auto& n : output_names) named.emplace(n, tensor_of(j.at(n)));
    return Arrays(named);
  }
  if (arrays > 1 && j.is_array() && j.size() == arrays) {  // a list of inputs
    std::vector<Tensor> ts;
    for (const auto& e : j) ts.push_back(tensor_of(e));
    return Arrays(ts);
  }
  return Arrays(tensor_of(j));
}

void expect_predictions(Model& m, const json& ref, const Arrays& x, double tol, const std::string& what) {
  const auto got = m.predict_all(x, {.batch_size = ref.at("batch_size").get<int>(), .verbose = 0});
  const json& want = ref.at("predict");
  if (want.is_object()) {
    const auto names = m.output_names();
    for (std::size_t o = 0; o < names.size(); ++o) expect_close(got[o], want.at(names[o]), tol, what + " " + names[o]);
  } else if (got.size() > 1) {  // a model whose outputs are a list: Keras's predictions in its order
    ASSERT_EQ(want.size(), got.size()) << what;
    for (std::size_t o = 0; o < got.size(); ++o) expect_close(got[o], want[o], tol, what + " output " + std::to_string(o));
  } else {
    expect_close(got[0], want, tol, what);
  }
}

void expect_evaluate(Model& m, const json& ref, const Arrays& x, const Arrays& y, double tol, const std::string& what) {
  const auto got = m.evaluate_dict(x, y, {.batch_size = ref.at("batch_size").get<int>(), .verbose = 0});
  for (const auto& [key, value] : ref.at("evaluate").items()) {
    ASSERT_TRUE(got.count(key)) << what << ": no '" << key << "' in Osprey's evaluate";
    EXPECT_NEAR(got.at(key), value.get<double>(), tol * std::max(1.0, std::abs(value.get<double>())))
        << what << " " << key;
  }
  EXPECT_EQ(got.size(), ref.at("evaluate").size()) << what;
}

// Loads Keras's file, checks predict / evaluate / one more epoch / the weights after it against Keras, then saves it
// and checks that Osprey's own file loads back to the same model.
void check_file(const std::string& name) {
  const json& ref = model_files_reference(name);
  auto model = models::load_model(file_of(name), {.tf_logits_shortcut = true});  // written by TF-backend Keras
  const Arrays x = arrays_of(ref.at("x"), {}, model->inputs().size());
  const Arrays y = arrays_of(ref.at("y"), model->output_names(), model->outputs().size());
  expect_predictions(*model, ref, x, 2e-5, name + " predict");
  expect_evaluate(*model, ref, x, y, 2e-5, name + " evaluate");

  // Osprey's file of the loaded model, before training on: Keras evaluates it to the same numbers (the script), and
  // Osprey reads it back to the same architecture, weights and optimizer state.
  const std::string saved = out_dir() + "/" + name + ".keras";
  model->save(saved);
  model->save_weights(out_dir() + "/" + name + ".weights.h5");  // Keras's load_weights reads it (the script)
  {
    std::ofstream out(out_dir() + "/" + name + ".json");
    out << json{{"evaluate", model->evaluate_dict(x, y, {.batch_size = ref.at("batch_size").get<int>(), .verbose = 0})}}
               .dump();
  }
  auto again = models::load_model(saved, {.tf_logits_shortcut = true});
  EXPECT_EQ(again->to_json(), model->to_json()) << name;
  expect_predictions(*again, ref, x, 2e-5, name + " predict after Osprey's save");

  const auto hist = model->fit(x, y, {.epochs = 1, .batch_size = ref.at("batch_size").get<int>(), .verbose = 0,
                                      .shuffle = false});
  for (const auto& [key, values] : ref.at("history").items()) {
    ASSERT_TRUE(hist.history.count(key)) << name << ": no '" << key << "' in Osprey's history";
    EXPECT_NEAR(hist.history.at(key)[0], values[0].get<double>(), 1e-4 * std::max(1.0, std::abs(values[0].get<double>())))
        << name << " fit " << key;
  }
  const auto weights = model->get_weights();
  const json& want = ref.at("weights_after");
  ASSERT_EQ(weights.size(), want.size()) << name;
  for (std::size_t i = 0; i < weights.size(); ++i) expect_close(weights[i], want[i], 1e-4, name + " weight " + std::to_string(i));
  // The reloaded copy trains the same way: its optimizer state came back too.
  const auto hist2 = again->fit(x, y, {.epochs = 1, .batch_size = ref.at("batch_size").get<int>(), .verbose = 0,
                                       .shuffle = false});
  EXPECT_EQ(hist2.history.at("loss"), hist.history.at("loss")) << name;
}

}  // namespace

TEST(ModelFiles, TwoInputsWithASharedLayerAndMetricObjects) {
  SKIP_WITHOUT_HDF5();
  check_file("two_input");
}
TEST(ModelFiles, AResidualBlockOfTheNewerLayers) {
  SKIP_WITHOUT_HDF5();
  check_file("residual");
}
TEST(ModelFiles, NestedFunctionalAndSequentialModels) {
  SKIP_WITHOUT_HDF5();
  check_file("nested");
}
TEST(ModelFiles, TwoOutputsWithPerOutputLossesMetricsAndLossWeights) {
  SKIP_WITHOUT_HDF5();
  check_file("two_output");
}
TEST(ModelFiles, ASubclassedModelWithAConfig) {
  SKIP_WITHOUT_HDF5();
  check_file("subclassed");
}
TEST(ModelFiles, ACustomLayerRegisteredByName) {
  SKIP_WITHOUT_HDF5();
  check_file("custom_layer");
}
TEST(ModelFiles, ASaturatedSigmoidFromTensorFlowKerasNeedsItsLogitsShortcut) {
  SKIP_WITHOUT_HDF5();
  check_file("saturated");  // with tf_logits_shortcut: TF-backend Keras's numbers
  const json& ref = model_files_reference("saturated");
  auto clipped = models::load_model(file_of("saturated"));  // the default: JAX/torch backends' clipped formula
  const double loss = clipped->evaluate_dict(arrays_of(ref.at("x"), {}), arrays_of(ref.at("y"), {}),
                                             {.batch_size = 8, .verbose = 0})
                          .at("loss");
  EXPECT_LT(loss, ref.at("evaluate").at("loss").get<double>() - 1.0) << "saturated outputs: the clip bounds the loss";
}

namespace {
Tensor features(int64_t rows, int64_t cols) {
  std::vector<float> v;
  for (int64_t i = 0; i < rows * cols; ++i) v.push_back(static_cast<float>(std::sin(0.37 * static_cast<double>(i))));
  return Tensor::from_vector(v, Shape({rows, cols}));
}
}  // namespace

TEST(ModelFiles, LossAndMetricObjectsKeepTheirOptionsThroughOspreysFiles) {
  SKIP_WITHOUT_HDF5();
  auto in = keras::Input({4}, {.name = "x"});
  auto h = layers::Dense(6, "relu", {.name = "h"})(in);
  Model m(in,
          std::map<std::string, KerasTensor>{{"probs", layers::Dense(3, "softmax", {.name = "probs"})(h)},
                                             {"value", layers::Dense(1, "", {.name = "value"})(h)}},
          "options");
  m.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
             .loss = std::map<std::string, LossRef>{{"probs", losses::CategoricalCrossentropy({.label_smoothing = 0.1})},
                                                    {"value", losses::Huber(0.5)}},
             .metrics = std::map<std::string, std::vector<MetricRef>>{
                 {"probs", {metrics::TopKCategoricalAccuracy(2), metrics::AUC(50, metrics::AUC::Curve::PR, "pr_auc")}},
                 {"value", {"mae"}}},
             .loss_weights = std::map<std::string, double>{{"probs", 1.0}, {"value", 0.25}}});
  const Tensor x = features(16, 4);
  std::vector<float> onehot(48, 0.0f);
  for (int i = 0; i < 16; ++i) onehot[static_cast<std::size_t>(i * 3 + i % 3)] = 1.0f;
  const Arrays y(std::map<std::string, Tensor>{{"probs", Tensor::from_vector(onehot, Shape({16, 3}))},
                                               {"value", features(16, 1)}});
  m.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0});
  const std::string path = out_dir() + "/options.keras";
  m.save(path);
  auto back = models::load_model(path);
  EXPECT_EQ(back->to_json(), m.to_json());
  const json cc = json::parse(back->to_json()).at("compile_config");
  EXPECT_EQ(cc.at("loss").at("probs").at("config").at("label_smoothing"), 0.1);
  EXPECT_EQ(cc.at("loss").at("value").at("config").at("delta"), 0.5);
  EXPECT_EQ(cc.at("metrics").at("probs")[0].at("config").at("k"), 2);
  EXPECT_EQ(cc.at("metrics").at("probs")[1].at("config").at("name"), "pr_auc");
  EXPECT_EQ(cc.at("metrics").at("probs")[1].at("config").at("curve"), "PR");
  EXPECT_EQ(cc.at("loss_weights").at("value"), 0.25);
  EXPECT_EQ(back->evaluate_dict(x, y, {.batch_size = 8, .verbose = 0}), m.evaluate_dict(x, y, {.batch_size = 8, .verbose = 0}));
  // A loss that is a C++ function cannot go into a file: a clear error before anything is written.
  Sequential f({layers::Input({4}), layers::Dense(1)});
  f.compile({.optimizer = "sgd", .loss = [](const Tensor& a, const Tensor& b) { return ops::square(ops::sub(a, b)); }});
  EXPECT_THAT(osprey::testing::error_of([&] { f.save(out_dir() + "/fn.keras"); }), HasSubstr("is a C++ function"));
  EXPECT_FALSE(std::filesystem::exists(out_dir() + "/fn.keras"));
}

TEST(ModelFiles, InitializerOptionsAreKeptAndSampled) {
  namespace init = initializers;
  Sequential m({layers::Input({64}),
                layers::Dense(64, "", {.kernel_initializer = init::RandomNormal(0.0, 15.0), .name = "wide"}),
                layers::Dense(32, "", {.kernel_initializer = init::Orthogonal(1.5), .name = "ortho"}),
                layers::Dense(8, "", {.kernel_initializer = init::VarianceScaling(2.0, "fan_out", "uniform"),
                                      .bias_initializer = init::Constant(0.25), .name = "vs"})});
  const std::string text = m.to_json();
  EXPECT_THAT(text, HasSubstr(R"("class_name": "RandomNormal", "config": {"seed": null, "mean": 0.0, "stddev": 15.0})"));
  EXPECT_THAT(text, HasSubstr(R"("class_name": "Orthogonal", "config": {"seed": null, "gain": 1.5})"));
  auto again = models::model_from_json(text);
  EXPECT_EQ(again->to_json(), text);  // written back unchanged
  // The values follow the options: stddev 15; the orthogonal kernel's columns are orthogonal with norm 1.5; the
  // constant bias.
  const auto w = m.get_layer("wide")->variables()[0]->value().to_vector<float>();
  double sq = 0;
  for (float v : w) sq += static_cast<double>(v) * v;
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(w.size())), 15.0, 0.6);
  const auto q = m.get_layer("ortho")->variables()[0]->value().to_vector<float>();  // (64, 32)
  for (int a = 0; a < 32; a += 7) {
    for (int b = 0; b < 32; b += 5) {
      double dot = 0;
      for (int r = 0; r < 64; ++r) dot += static_cast<double>(q[r * 32 + a]) * q[r * 32 + b];
      EXPECT_NEAR(dot, a == b ? 2.25 : 0.0, 1e-4) << a << "," << b;
    }
  }
  for (float v : m.get_layer("vs")->variables()[1]->value().to_vector<float>()) EXPECT_EQ(v, 0.25f);
  // Keras's seeded initializers and the ones Osprey does not sample are read and written back as they are.
  const std::string seeded = R"({"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": 7, "input_axes": null, "output_axes": null}, "registered_name": null})";
  std::string with_seed = text;
  const std::string plain = R"({"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null})";
  with_seed.replace(with_seed.find(plain), plain.size(), seeded);
  EXPECT_EQ(models::model_from_json(with_seed)->to_json(), with_seed);
  EXPECT_THAT(osprey::testing::error_of([] { (void)layers::DenseOptions{.kernel_initializer = "not_an_initializer"}; }),
              HasSubstr("Could not interpret initializer identifier: 'not_an_initializer'"));
}

namespace {
/// A layer class that is never registered: x + b (files name it "Shift"; only custom_objects find it).
class Shift : public Layer {
 public:
  explicit Shift(double by = 0.0, std::string name = "") : Layer(name, "shift"), by_(by) {}
  OSPREY_KERAS_LAYER(Shift)
  std::string class_name() const override { return "Shift"; }
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& x, bool) override { return ops::add(x, Tensor::scalar(by_)); }
  std::string get_config() const override { return config_with(Layer::get_config(), {{"by", by_}}); }
  static std::shared_ptr<Layer> from_config(const saving::Config& c) {
    return std::make_shared<Shift>(c.get_double("by"), c.name());
  }

 private:
  double by_;
};
}  // namespace

// Keras's load_model(..., custom_objects={...}) and custom_object_scope: a class of the user's that is not
// registered loads for that call (or inside the scope) only.
TEST(ModelFiles, CustomObjectsLoadUnregisteredClassesForOneCallOrScope) {
  SKIP_WITHOUT_HDF5();
  auto in = keras::Input({3}, {.name = "x"});
  Model m(in, layers::Dense(2, "", {.name = "out"})(Shift(0.5, "shift")(in)), "custom");
  const std::string path = out_dir() + "/custom_objects.keras";
  m.save(path);
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, -1, 0, 1}, {2, 3});
  const auto want = m.predict(x, {.verbose = 0}).to_vector<float>();
  EXPECT_THAT(osprey::testing::error_of([&] { models::load_model(path); }), HasSubstr("Shift"));
  saving::CustomObjects objects{.layers = {{"Shift", &Shift::from_config}}};
  auto loaded = models::load_model(path, {.custom_objects = objects});
  EXPECT_EQ(loaded->predict(x, {.verbose = 0}).to_vector<float>(), want);
  EXPECT_EQ(loaded->get_layer("shift")->class_name(), "Shift");
  // Only for that call; a scope covers model_from_json too, and ends with it.
  EXPECT_THROW(models::load_model(path), ValueError);
  const std::string text = m.to_json();
  {
    saving::CustomObjectScope scope(objects);
    EXPECT_EQ(models::model_from_json(text)->get_layer("shift")->class_name(), "Shift");
    saving::CustomObjectScope inner({.functions = {{"twice_mse", [](const Tensor& y, const Tensor& p) {
                                                      return ops::mul(Tensor::scalar(2.0), ops::reduce_mean(ops::square(ops::sub(y, p)), -1));
                                                    }}}});
    EXPECT_TRUE(static_cast<bool>(saving::detail::find_function("twice_mse")));
    EXPECT_NO_THROW(models::model_from_json(text));  // the outer scope still counts
  }
  EXPECT_FALSE(static_cast<bool>(saving::detail::find_function("twice_mse")));
  EXPECT_THROW(models::model_from_json(text), ValueError);
  EXPECT_THAT(osprey::testing::error_of([] { saving::CustomObjectScope bad({.layers = {{"Empty", nullptr}}}); }),
              HasSubstr("the layer 'Empty' needs a non-empty name and a non-empty factory"));
}

TEST(ModelFiles, WhatOspreyCannotLoadIsAClearErrorNamingIt) {
  auto in = keras::Input({3}, {.name = "x"});
  Model m(in, layers::Dense(2, "", {.name = "out"})(in), "m");
  const std::string text = m.to_json();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  // A class Osprey does not have: named with the layer.
  EXPECT_THAT(osprey::testing::error_of([&] { models::model_from_json(replaced("\"Dense\"", "\"TextVectorization\"")); }),
              HasSubstr("unknown layer class 'TextVectorization' (layer 'out')"));
  // A custom class that is not registered.
  EXPECT_THAT(osprey::testing::error_of([&] {
                models::model_from_json(replaced(R"("class_name": "Dense", "config")",
                                                 R"("class_name": "Mine", "config")"));
              }),
              HasSubstr("register_keras_serializable"));
  // Mixed precision: a layer's policy loads with it (not silently as float32); a policy that does not exist is a
  // ValueError naming it.
  {
    auto m = models::model_from_json(replaced(R"({"name": "float32"})", R"({"name": "mixed_float16"})"));
    bool found = false;
    for (const auto& l : m->layers()) found = found || l->dtype_policy().name() == "mixed_float16";
    EXPECT_TRUE(found);
  }
  EXPECT_THAT(osprey::testing::error_of([&] {
                models::model_from_json(replaced(R"({"name": "float32"})", R"({"name": "mixed_int4"})"));
              }),
              HasSubstr("mixed_int4"));
  // A node that calls a layer on a tensor nothing makes.
  EXPECT_THAT(osprey::testing::error_of([&] {
                models::model_from_json(replaced(R"("keras_history": ["x", 0, 0])", R"("keras_history": ["y", 0, 0])"));
              }),
              HasSubstr("layer 'out' is called on a tensor that no layer of the config makes"));
}

TEST(ModelFiles, AResNetStyleCnnWithResidualAddsAndBatchNormalization) {
  SKIP_WITHOUT_HDF5();
  check_file("cnn_residual");
}
TEST(ModelFiles, ADepthwiseSeparableCnn) {
  SKIP_WITHOUT_HDF5();
  check_file("cnn_separable");
}
TEST(ModelFiles, AConv1DModelOverSequences) {
  SKIP_WITHOUT_HDF5();
  check_file("cnn_conv1d");
}
TEST(ModelFiles, ABagOfEmbeddingsTextClassifierWithInt32TokenIds) {
  SKIP_WITHOUT_HDF5();
  check_file("embedding_bag");
}
TEST(ModelFiles, AnLstmTextClassifierOnPaddedTokenIds) {
  SKIP_WITHOUT_HDF5();
  check_file("text_lstm");
}
TEST(ModelFiles, AnEmbeddingBidirectionalLstmTextClassifier) {
  SKIP_WITHOUT_HDF5();
  check_file("text_bilstm");
}
TEST(ModelFiles, ASmallTransformerEncoder) {
  SKIP_WITHOUT_HDF5();
  check_file("transformer");
}
TEST(ModelFiles, ACausalLanguageModelWithTokenLevelLossAndAccuracy) {
  SKIP_WITHOUT_HDF5();
  check_file("causal_lm");
}
TEST(ModelFiles, LuongAndBahdanauAttentionOverMaskedLstmStates) {
  SKIP_WITHOUT_HDF5();
  check_file("rnn_attention");
}
TEST(ModelFiles, GroupedQueryAttentionWithACausalMask) {
  SKIP_WITHOUT_HDF5();
  check_file("gqa");
}
TEST(ModelFiles, TimeDistributedDenseAndBatchNormalizationBeforeAnLstm) {
  SKIP_WITHOUT_HDF5();
  check_file("time_distributed");
}
TEST(ModelFiles, AnEncoderDecoderWhoseBidirectionalEncoderStatesStartTheDecoder) {
  SKIP_WITHOUT_HDF5();
  check_file("seq2seq");
}
TEST(ModelFiles, StackedRnnCellsOverMaskedTokens) {
  SKIP_WITHOUT_HDF5();
  check_file("stacked_cells");
}
TEST(ModelFiles, MaskingBeforeAnLstmAndABackwardsGru) {
  SKIP_WITHOUT_HDF5();
  check_file("masked_series");  // Keras's NotEqual and Any nodes: the Masking layer's mask, left to Osprey
}
// Mask nodes that are not exactly a Masking layer's mask stay errors naming the operation.
TEST(ModelFiles, OperationNodesThatAreNotAMaskAreRefused) {
  const std::string text = osprey::keras::detail::read_zip(file_of("masked_series")).at("config.json");
  ASSERT_NO_THROW((void)models::model_from_json(text));
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  // Any over another axis, with keepdims, or a NotEqual against another value than the Masking layer's.
  EXPECT_THAT(osprey::testing::error_of([&] { models::model_from_json(replaced(R"("axis": -1)", R"("axis": 1)")); }),
              HasSubstr("Any other than a Masking layer's mask"));
  EXPECT_THAT(osprey::testing::error_of([&] {
                models::model_from_json(replaced(R"("keepdims": false)", R"("keepdims": true)"));
              }),
              HasSubstr("Any other than a Masking layer's mask"));
  EXPECT_THAT(osprey::testing::error_of([&] { models::model_from_json(replaced(R"(}}, -1.0])", R"(}}, -2.0])")); }),
              HasSubstr("not the mask of an Embedding with mask_zero or of a Masking layer"));
}
TEST(ModelFiles, AxialAttentionOverTheRowsAndOverTheWholeGrid) {
  SKIP_WITHOUT_HDF5();
  check_file("axial_attention");  // attention_axes (2,) and (1, 2)
}
TEST(ModelFiles, AnAttentionMaskGivenAsAModelInput) {
  SKIP_WITHOUT_HDF5();
  check_file("attention_mask_input");  // Keras's kwargs {"attention_mask": <tensor>}
}
TEST(ModelFiles, AdaptivePoolingToFixedSizesInBothDataFormats) {
  SKIP_WITHOUT_HDF5();
  check_file("adaptive_pooling");  // AdaptiveAveragePooling2D((3, 2)), AdaptiveMaxPooling2D channels_first, 1D
}
TEST(ModelFiles, BinnedFeaturesThroughDiscretizationAndCategoryEncoding) {
  SKIP_WITHOUT_HDF5();
  check_file("categorical");  // given and adapted bin boundaries, int ids counted, one-hot bins
}
TEST(ModelFiles, ConvolutionalLstmsOverFramesAndRows) {
  SKIP_WITHOUT_HDF5();
  check_file("conv_lstm");  // ConvLSTM2D return_sequences same padding, ConvLSTM1D channels_first with strides
}
TEST(ModelFiles, ColorAugmentationsInFrontOfACnn) {
  SKIP_WITHOUT_HDF5();
  check_file("color");  // posterization, AutoContrast, degeneration, saturation, sharpness, blur, solarization, ...
}
TEST(ModelFiles, SpectrallyNormalizedConvolutionAndDense) {
  SKIP_WITHOUT_HDF5();
  check_file("spectral");  // SpectralNormalization around Conv2D (two power iterations) and Dense
}
TEST(ModelFiles, MelAndStftSpectrogramsOfRawAudio) {
  SKIP_WITHOUT_HDF5();
  check_file("audio");  // MelSpectrogram beside an STFTSpectrogram whose DFT kernels train, a Conv1D over its frames
}
TEST(ModelFiles, HashedIdsIntoAnEmbeddingAndASaltedMultiHot) {
  SKIP_WITHOUT_HDF5();
  check_file("hashing");  // Hashing (int64 policy) into an Embedding, a salted masked multi_hot, a one_hot cross
}
TEST(ModelFiles, IntegerLookupsWithAnAdaptedVocabularyAGivenOneAndTfIdfWeights) {
  SKIP_WITHOUT_HDF5();
  // The adapted vocabularies come from the file's assets, tf_idf's weights from its weights file.
  check_file("lookup");
}
TEST(ModelFiles, ATranscriberTrainedWithTheCtcLoss) {
  SKIP_WITHOUT_HDF5();
  check_file("ctc");  // Conv1D + Bidirectional(GRU) into per-frame logits; compile_config's loss keras.losses.CTC
}
TEST(ModelFiles, KerasOtherLossesAndMetricsInCompileConfig) {
  SKIP_WITHOUT_HDF5();
  // Focal crossentropies with loss weights; confusion counts, F-scores, IoUs, hinges and crossentropy metrics.
  check_file("catalogue_classifier");
  // Poisson; R2 (two aggregations), MSLE, cosine similarity, the correlations, log-cosh, MAPE.
  check_file("catalogue_regressor");
  // Tversky and Dice over the image axes; BinaryIoU, MeanIoU, Accuracy and the sensitivity/specificity family.
  check_file("catalogue_segmenter");
  check_file("catalogue_dice");
}
TEST(ModelFiles, WeightedMetricsAndPrecisionRecallWithClassIdAndTopK) {
  SKIP_WITHOUT_HDF5();
  // compile(weighted_metrics=[...]) (logged as "weighted_accuracy" beside "accuracy"), Precision(class_id),
  // Recall(top_k), PrecisionAtRecall(class_id): loaded, evaluated, trained and written back with them.
  check_file("weighted_metrics");
}
TEST(ModelFiles, ResizingAndUpSamplingWithTensorFlowsOtherResizeMethods) {
  SKIP_WITHOUT_HDF5();
  // Resizing(bicubic, antialias), UpSampling2D(lanczos3) and UpSampling2D(bicubic) between convolutions.
  check_file("resize_methods");
}
TEST(ModelFiles, AGruRegressorOnATimeSeries) {
  SKIP_WITHOUT_HDF5();
  check_file("gru_series");
}
TEST(ModelFiles, PreprocessingLayersInAModelWithAnAdaptedNormalization) {
  SKIP_WITHOUT_HDF5();
  check_file("preprocess");
}

TEST(ModelFiles, OrthogonalInitializerRegularizerAndNormConstraints) {
  SKIP_WITHOUT_HDF5();
  check_file("regularized");
}

TEST(ModelFiles, RegularizersAndConstraintsComputeKerasNumbers) {
  const json& ref = model_files_reference("penalties");
  const Tensor w = tensor_of(ref.at("w"));
  EXPECT_NEAR(regularizers::OrthogonalRegularizer(0.1, "rows")(w).to_vector<float>()[0], ref.at("orthogonal_rows").get<double>(),
              1e-6);
  EXPECT_NEAR(regularizers::OrthogonalRegularizer(0.1, "columns")(w).to_vector<float>()[0],
              ref.at("orthogonal_columns").get<double>(), 1e-6);
  expect_close(constraints::MaxNorm(0.8)(w), ref.at("max_norm"), 1e-6, "MaxNorm");
  expect_close(constraints::UnitNorm()(w), ref.at("unit_norm"), 1e-6, "UnitNorm");
  expect_close(constraints::MinMaxNorm(0.5, 1.0, 0.8)(w), ref.at("min_max_norm"), 1e-6, "MinMaxNorm");
  EXPECT_THROW((void)regularizers::OrthogonalRegularizer(0.1, "diagonal"), ValueError);
}

TEST(ModelFiles, AUCWithMultiLabelCurvesSummationAndThresholdsOfItsOwn) {
  SKIP_WITHOUT_HDF5();
  // AUC(multi_label, num_labels, curve PR), AUC(PRGAIN, majoring), AUC(thresholds=[...], minoring) and a weighted
  // multi-label AUC: loaded, evaluated, trained and written back with their options.
  check_file("auc_options");
}

TEST(ModelFiles, ReversibleEmbeddingsCalledForwardAndInReverse) {
  SKIP_WITHOUT_HDF5();
  check_file("reversible_tied");    // the embeddings' transpose as the output projection, a logit soft cap
  check_file("reversible_untied");  // reverse_embeddings of its own; mask_zero's mask into a GRU, none after
}
