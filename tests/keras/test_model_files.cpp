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
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/ops.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;

#ifndef OSPREY_HAVE_HDF5_PLUGIN
#define SKIP_WITHOUT_HDF5() GTEST_SKIP() << "Osprey was built without HDF5 (libhdf5-dev): no .keras files"
#else
#define SKIP_WITHOUT_HDF5() (void)0
#endif

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

const bool registered = [] {
  saving::register_keras_serializable<Scale>("osprey_test", "Scale");
  return true;
}();

const json& reference(const std::string& name) {
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

Arrays arrays_of(const json& j, const std::vector<std::string>& output_names) {
  if (j.is_object()) {  // by output name
    std::map<std::string, Tensor> named;
    for (const auto& n : output_names) named.emplace(n, tensor_of(j.at(n)));
    return Arrays(named);
  }
  if (j.is_array() && !j.empty() && j[0].is_array() && !j[0].empty() && j[0][0].is_array()) {  // a list of inputs
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
  const json& ref = reference(name);
  auto model = models::load_model(file_of(name), {.tf_logits_shortcut = true});  // written by TF-backend Keras
  const Arrays x = arrays_of(ref.at("x"), {});
  const Arrays y = arrays_of(ref.at("y"), model->output_names());
  expect_predictions(*model, ref, x, 2e-5, name + " predict");
  expect_evaluate(*model, ref, x, y, 2e-5, name + " evaluate");

  // Osprey's file of the loaded model, before training on: Keras evaluates it to the same numbers (the script), and
  // Osprey reads it back to the same architecture, weights and optimizer state.
  const std::string saved = out_dir() + "/" + name + ".keras";
  model->save(saved);
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
TEST(ModelFiles, ACustomLayerRegisteredByName) {
  SKIP_WITHOUT_HDF5();
  check_file("custom_layer");
}
