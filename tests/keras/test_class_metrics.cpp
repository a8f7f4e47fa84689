// Metrics with one value per class in fit's logs (F1Score/FBetaScore without an average, R2Score without an
// aggregation), against Keras 3.15 on TensorFlow (tests/keras/keras_class_metrics_reference.py regenerates
// tests/data/keras_class_metrics.json and .keras): History's arrays per epoch (validation's too), evaluate_dict,
// train_on_batch_dict/test_on_batch_dict, CSVLogger's cells, the progress bar's mean, a Keras file compiled with
// such a metric, and the refusals (the list forms, a monitored array).
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "keras/fit_expect.h"
#include "keras/reference_json.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_history;
using osprey::testing::expect_logs;
using osprey::testing::expect_near_rel;
using osprey::testing::expect_weights;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;
namespace M = osprey::keras::metrics;

namespace {

const json& class_metrics_reference() {
  static const json ref = osprey::testing::read_reference("keras_class_metrics.json");
  return ref;
}
const json& ref_data() { return class_metrics_reference().at("data"); }
const json& ref_case(const char* name) { return class_metrics_reference().at("cases").at(name); }
Tensor ref(const char* key) { return tensor_of(ref_data().at(key)); }

void set_classifier_weights(Model& m) {
  const auto& k = ref_data().at("kernels");
  m.set_weights({tensor_of(k[0]), Tensor::zeros(Shape({6})), tensor_of(k[1]), Tensor::zeros(Shape({3}))});
}

Sequential classifier(bool eager) {
  Sequential m({layers::Input({5}), layers::Dense(6, "tanh", {.name = "h"}), layers::Dense(3, "softmax", {.name = "c"})});
  set_classifier_weights(m);
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.5}),
             .loss = "categorical_crossentropy",
             .metrics = {M::F1Score(), M::FBetaScore("", 2.0, 0.4), "accuracy"},
             .weighted_metrics = {M::R2Score("")},
             .run_eagerly = eager});
  return m;
}

// The cells of one CSV line (Python's csv: a quoted cell may hold the separator, "" is a quote).
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Osprey's CSV file against Keras's: the same header and layout, each number within 2e-5 (an array's values are
// float32 reprs, computed in float32 by Keras).
void expect_same_csv(const std::string& got, const std::string& want) {
  const auto g = lines_of(got), w = lines_of(want);
  ASSERT_EQ(g.size(), w.size()) << got;
  ASSERT_EQ(g[0], w[0]);
  for (std::size_t r = 1; r < g.size(); ++r) {
    const auto gc = csv_cells(g[r]), wc = csv_cells(w[r]);
    ASSERT_EQ(gc.size(), wc.size()) << g[r];
    for (std::size_t c = 0; c < gc.size(); ++c) {
      const std::string where = fmt::format("row {} column {}", r, c);
      if (wc[c].rfind("\"[", 0) == 0) {  // '"[a, b]"' after the csv's unquoting
        ASSERT_EQ(gc[c].rfind("\"[", 0), 0u) << where << ": " << gc[c];
        ASSERT_EQ(gc[c].back(), '"') << where;
        std::string gs = gc[c].substr(2, gc[c].size() - 4), ws = wc[c].substr(2, wc[c].size() - 4);
        std::replace(gs.begin(), gs.end(), ',', ' ');
        std::replace(ws.begin(), ws.end(), ',', ' ');
        std::istringstream gi(gs), wi(ws);
        double a = 0, b = 0;
        int n = 0;
        while (wi >> b) {
          ASSERT_TRUE(gi >> a) << where << ": " << gc[c];
          expect_near_rel(a, b, where, 2e-5);
          ++n;
        }
        EXPECT_GT(n, 0) << where;
        EXPECT_FALSE(gi >> a) << where << ": more values than Keras's";
      } else {
        expect_near_rel(std::stod(gc[c]), std::stod(wc[c]), where, 2e-5);
      }
    }
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(ClassMetrics, FitLogsOneArrayPerEpochAsKeras) {
  const auto& c = ref_case("classifier");
  for (const bool eager : {true, false}) {
    SCOPED_TRACE(eager ? "eager" : "recorded");
    auto m = classifier(eager);
    const std::string csv = ::testing::TempDir() + "/osprey_class_metrics.csv";
    const auto h = m.fit({ref("x")}, {ref("y")},
                         {.epochs = 3,
                          .batch_size = 8,
                          .verbose = 0,
                          .callbacks = {std::make_shared<callbacks::CSVLogger>(csv)},
                          .validation_data = {{ref("x_val")}, {ref("y_val")}},
                          .shuffle = false,
                          .sample_weight = Arrays{ref("w")}});
    expect_history(h, c);
    expect_same_csv(read_text(csv), c.at("csv").get<std::string>());
    expect_logs(m.evaluate_dict({ref("x_val")}, {ref("y_val")}, {.verbose = 0}), c.at("evaluate"), "evaluate");
    expect_logs(m.evaluate_dict({ref("x")}, {ref("y")}, {.batch_size = 5, .verbose = 0, .sample_weight = Arrays{ref("w")}}),
                c.at("evaluate_weighted"), "weighted evaluate");
    const Tensor x10 = ops::slice_axis(ref("x"), 0, 0, 10), y10 = ops::slice_axis(ref("y"), 0, 0, 10);
    expect_logs(m.train_on_batch_dict({x10}, {y10}), c.at("train_on_batch"), "train_on_batch");
    expect_logs(m.test_on_batch_dict({ref("x_val")}, {ref("y_val")}), c.at("test_on_batch"), "test_on_batch");
    expect_weights(m, c.at("weights"));
    std::filesystem::remove(csv);
  }
}

TEST(ClassMetrics, EachOutputLogsItsOwnArrays) {
  const auto& c = ref_case("two_outputs");
  for (const bool eager : {true, false}) {
    SCOPED_TRACE(eager ? "eager" : "recorded");
    auto in = keras::Input({5}, {.name = "x"});
    auto hid = layers::Dense(6, "tanh", {.name = "h"})(in);
    auto cls = layers::Dense(3, "softmax", {.name = "cls"})(hid);
    auto reg = layers::Dense(2, "", {.name = "reg"})(hid);
    Model m(in, {cls, reg}, "two_outputs");
    const auto& k = ref_data().at("kernels");
    m.set_weights({tensor_of(k[0]), Tensor::zeros(Shape({6})), tensor_of(k[1]), Tensor::zeros(Shape({3})),
                   tensor_of(k[2]), Tensor::zeros(Shape({2}))});
    m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.2}),
               .loss = {"categorical_crossentropy", "mse"},
               .metrics = std::map<std::string, std::vector<MetricRef>>{
                   {"cls", {M::F1Score("macro"), M::F1Score("", std::nullopt, "per_class")}},
                   {"reg", {M::R2Score(""), "mae"}}},
               .run_eagerly = eager});
    const auto h = m.fit({ref("x")}, {ref("y"), ref("score")}, {.epochs = 2, .batch_size = 6, .verbose = 0, .shuffle = false});
    expect_history(h, c);
    expect_logs(m.evaluate_dict({ref("x")}, {ref("y"), ref("score")}, {.batch_size = 6, .verbose = 0}),
                c.at("evaluate"), "evaluate");
    expect_weights(m, c.at("weights"));
  }
}

TEST(ClassMetrics, AKerasFileCompiledWithAPerClassMetricTrainsAsKeras) {
  SKIP_WITHOUT_HDF5();
  auto m = models::load_model(osprey::testing::data_file("keras_class_metrics.keras"));
  const auto h = m->fit({ref("x")}, {ref("y")},
                        {.epochs = 3,
                         .batch_size = 8,
                         .verbose = 0,
                         .validation_data = {{ref("x_val")}, {ref("y_val")}},
                         .shuffle = false,
                         .sample_weight = Arrays{ref("w")}});
  expect_history(h, ref_case("classifier"));
}

TEST(ClassMetrics, TheProgressBarShowsAnArraysMean) {
  auto m = classifier(false);
  ::testing::internal::CaptureStdout();
  const auto h = m.fit({ref("x")}, {ref("y")}, {.epochs = 1, .batch_size = 8, .verbose = 2, .shuffle = false});
  const std::string out = ::testing::internal::GetCapturedStdout();
  for (const char* key : {"f1_score", "fbeta_score", "r2_score"}) {
    const auto& v = h.arrays.at(key).at(0);
    double sum = 0;
    for (double x : v) sum += x;
    const double mean = sum / static_cast<double>(v.size());
    // verbose 2 compares the value itself with 1e-3 (negative ones in %.4e), as Keras
    EXPECT_THAT(out, HasSubstr(fmt::format(" - {}: {}", key,
                                           mean > 1e-3 ? fmt::format("{:.4f}", mean) : fmt::format("{:.4e}", mean))))
        << out;
  }
}

TEST(ClassMetrics, ListFormsAndMonitorsRefuseAnArrayBeforeRunning) {
  auto m = classifier(false);
  const auto before = m.get_weights();
  try {
    (void)m.train_on_batch({ref("x")}, {ref("y")});
    FAIL() << "train_on_batch returned a list with a per-class metric";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'f1_score' gives one value per class"));
    EXPECT_THAT(e.what(), HasSubstr("train_on_batch_dict"));
  }
  const auto after = m.get_weights();  // refused before the step: nothing trained
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i].to_vector<float>(), before[i].to_vector<float>());
  EXPECT_THROW((void)m.test_on_batch({ref("x")}, {ref("y")}), ValueError);
  try {
    (void)m.evaluate({ref("x")}, {ref("y")}, {.verbose = 0});
    FAIL() << "evaluate returned a list with a per-class metric";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("evaluate_dict"));
  }
  for (const auto& cb : std::vector<CallbackRef>{
           std::make_shared<callbacks::EarlyStopping>(callbacks::EarlyStoppingOptions{.monitor = "val_f1_score", .mode = MonitorMode::max}),
           std::make_shared<callbacks::ReduceLROnPlateau>(callbacks::ReduceLROnPlateauOptions{.monitor = "f1_score", .mode = MonitorMode::max})}) {
    try {
      m.fit({ref("x")}, {ref("y")},
            {.epochs = 1, .verbose = 0, .callbacks = {cb}, .validation_data = {{ref("x_val")}, {ref("y_val")}}});
      FAIL() << "a per-class metric was monitored";
    } catch (const ValueError& e) {
      EXPECT_THAT(e.what(), HasSubstr("one value per class or threshold (3 values)"));
    }
  }
  // A metric with an average is one number: logged as before.
  Sequential averaged({layers::Input({5}), layers::Dense(3, "softmax")});
  averaged.compile({.optimizer = "sgd", .loss = "categorical_crossentropy", .metrics = {M::F1Score("macro")}});
  const auto r = averaged.evaluate({ref("x")}, {ref("y")}, {.verbose = 0});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(averaged.evaluate_dict({ref("x")}, {ref("y")}, {.verbose = 0}).arrays.empty());
}

namespace {

Sequential thresholded() {
  Sequential m({layers::Input({5}), layers::Dense(6, "tanh", {.name = "h"}), layers::Dense(1, "sigmoid", {.name = "b"})});
  m.set_weights({tensor_of(ref_data().at("kernels")[0]), Tensor::zeros(Shape({6})),
                 tensor_of(ref_data().at("kernel_binary")), Tensor::zeros(Shape({1}))});
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.3}),
             .loss = "binary_crossentropy",
             .metrics = {M::Precision(std::vector<double>{0.3, 0.6}), M::Recall(std::vector<double>{0.2, 0.5, 0.8}),
                         M::TruePositives(std::vector<double>{0.4, 0.7}), M::FalseNegatives(std::vector<double>{0.5}),
                         M::TrueNegatives(0.45), M::Precision(std::vector<double>{0.5}, "precision_one")}});
  return m;
}

void fit_thresholded(Model& m) {
  const Tensor x10 = ops::slice_axis(ref("x"), 0, 0, 10), y10 = ops::slice_axis(ref("y_binary"), 0, 0, 10);
  const auto h = m.fit({ref("x")}, {ref("y_binary")}, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  expect_history(h, ref_case("thresholds"));
  expect_logs(m.evaluate_dict({x10}, {y10}, {.verbose = 0}), ref_case("thresholds").at("evaluate_val"), "validation");
  expect_logs(m.evaluate_dict({ref("x")}, {ref("y_binary")}, {.batch_size = 8, .verbose = 0}),
              ref_case("thresholds").at("evaluate"), "evaluate");
  expect_weights(m, ref_case("thresholds").at("weights"));
}

}  // namespace

TEST(ClassMetrics, ConfusionMetricsAtAListOfThresholdsGiveOneValueEach) {
  auto m = thresholded();
  fit_thresholded(m);
  // Their configs are Keras's (a list stays a list, a number a number).
  const auto& want = ref_case("thresholds").at("configs");
  const std::vector<std::shared_ptr<M::Metric>> made = {
      std::make_shared<M::Precision>(std::vector<double>{0.3, 0.6}),
      std::make_shared<M::Recall>(std::vector<double>{0.2, 0.5, 0.8}),
      std::make_shared<M::TruePositives>(std::vector<double>{0.4, 0.7}),
      std::make_shared<M::FalseNegatives>(std::vector<double>{0.5}), std::make_shared<M::TrueNegatives>(0.45),
      std::make_shared<M::Precision>(std::vector<double>{0.5}, "precision_one")};
  for (std::size_t i = 0; i < made.size(); ++i) EXPECT_EQ(json::parse(made[i]->get_config()), want[i]) << i;
  EXPECT_FALSE(made[0]->scalar_result());
  EXPECT_TRUE(made[3]->scalar_result());  // a list of one is one value, as Keras's result()[0]
  EXPECT_THROW((void)made[0]->result(), ValueError);
  EXPECT_THROW(M::Precision(std::vector<double>{}), ValueError);
  EXPECT_THROW(M::TruePositives(std::vector<double>{0.2, 1.5}), ValueError);
}

TEST(ClassMetrics, AKerasFileWithThresholdListsTrainsAsKerasAndSavesThemBack) {
  SKIP_WITHOUT_HDF5();
  auto m = models::load_model(osprey::testing::data_file("keras_threshold_metrics.keras"));
  const std::string path = ::testing::TempDir() + "/osprey_threshold_metrics.keras";
  m->save(path);  // compiled, unfitted: the saved file loads to the same training
  fit_thresholded(*m);
  auto again = models::load_model(path);
  fit_thresholded(*again);
  std::filesystem::remove(path);
}
