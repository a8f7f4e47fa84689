// Keras 3's metrics with sample weights, Precision/Recall's top_k and class_id, and compile()'s weighted_metrics
// in fit/evaluate (sample_weight, class_weight, validation_split, validation_data with weights), against Keras 3.15
// on TensorFlow (tests/keras/keras_weighted_metrics_reference.py regenerates tests/data/keras_weighted_metrics.json).
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/loss_metric_config.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;
namespace M = osprey::keras::metrics;

namespace {

const json& weighted_metrics_reference() {
  static const json ref = osprey::testing::read_reference("keras_weighted_metrics.json");
  return ref;
}

// The metric as a Keras file's compile_config holds it (the loader reads top_k and class_id).
std::shared_ptr<M::Metric> metric_of(const json& c) {
  const auto refs = serialization::metrics_from(json::array({{{"class_name", c.at("class")}, {"config", c.at("config")}}}));
  return refs.at(0).get();
}

void expect_near(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 2e-6 * std::max(1.0, std::abs(want))) << what;
}

// Every case of a reference file's "metrics": the metric from its Keras config, its options read back as Keras
// wrote them, the batches (with or without weights) and the result, twice (a reset gives the same again).
void check_metric_cases(const json& cases) {
  for (const auto& c : cases) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    const auto metric = metric_of(c);
    ASSERT_TRUE(metric);
    EXPECT_EQ(metric->class_name(), c.at("class").get<std::string>());
    const auto got_config = json::parse(metric->get_config());
    for (const char* key : {"top_k", "class_id", "thresholds", "num_thresholds", "curve", "summation_method",
                            "multi_label", "num_labels", "label_weights", "from_logits"}) {
      if (c.at("config").contains(key)) {
        EXPECT_EQ(got_config.at(key), c.at("config").at(key)) << key;
      } else {
        EXPECT_FALSE(got_config.contains(key)) << key;
      }
    }
    for (int pass = 0; pass < 2; ++pass) {
      metric->reset_state();
      for (const auto& b : c.at("batches")) {
        const Tensor yt = c.at("sparse_labels").get<bool>() ? tensor_of(b[0], DType::int32) : tensor_of(b[0]);
        if (b[2].is_null()) {
          metric->update_state(yt, tensor_of(b[1]));
        } else {
          metric->update_state(yt, tensor_of(b[1]), tensor_of(b[2]));
        }
      }
      expect_near(metric->result(), c.at("result").get<double>(), name);
    }
  }
}

}  // namespace

TEST(WeightedMetrics, EveryMetricWeighsItsSamplesAsKeras) { check_metric_cases(weighted_metrics_reference().at("metrics")); }

TEST(WeightedMetrics, UnitWeightsAreTheUnweightedMetricAndZeroWeightsDropSamples) {
  const Tensor yt = Tensor::from_vector<float>({1, 0, 1, 1, 0, 0}, {6, 1});
  const Tensor yp = Tensor::from_vector<float>({0.9f, 0.8f, 0.3f, 0.7f, 0.1f, 0.6f}, {6, 1});
  for (const std::string name : {"binary_accuracy", "precision", "recall", "auc", "mse", "binary_crossentropy"}) {
    SCOPED_TRACE(name);
    auto plain = M::get(name), ones = M::get(name), picked = M::get(name), subset = M::get(name);
    plain->update_state(yt, yp);
    ones->update_state(yt, yp, Tensor::ones(Shape({6})));
    EXPECT_NEAR(ones->result(), plain->result(), 1e-6);
    picked->update_state(yt, yp, Tensor::from_vector<float>({1, 0, 1, 0, 1, 0}, {6, 1}));  // (N, 1) weights
    subset->update_state(Tensor::from_vector<float>({1, 1, 0}, {3, 1}), Tensor::from_vector<float>({0.9f, 0.3f, 0.1f}, {3, 1}));
    EXPECT_NEAR(picked->result(), subset->result(), 1e-6);
  }
}

TEST(WeightedMetrics, BadWeightsAndOptionsAreValueErrors) {
  auto acc = M::get("binary_accuracy");
  const Tensor yt = Tensor::zeros(Shape({4, 1})), yp = Tensor::zeros(Shape({4, 1}));
  try {
    acc->update_state(yt, yp, Tensor::ones(Shape({3})));
    ADD_FAILURE() << "3 weights for 4 samples";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("(4,)"));
    EXPECT_THAT(e.what(), HasSubstr("(3,)"));
  }
  EXPECT_THROW(acc->update_state(yt, yp, Tensor::ones(Shape({4, 2}))), ValueError);
  EXPECT_THROW(M::Precision(0.5, "p", 0), ValueError);                 // top_k 0
  EXPECT_THROW(M::Recall(std::nullopt, "r", std::nullopt, -1), ValueError);  // class_id -1
  EXPECT_THROW(M::Precision(1.5), ValueError);
  M::Precision wide(std::nullopt, "p", std::nullopt, 3);
  EXPECT_THROW(wide.update_state(Tensor::zeros(Shape({2, 3})), Tensor::zeros(Shape({2, 3}))), ValueError);  // class 3 of 3
  M::Precision flat(std::nullopt, "p", std::nullopt, 0);
  EXPECT_THROW(flat.update_state(Tensor::zeros(Shape({4})), Tensor::zeros(Shape({4}))), ValueError);  // needs (N, C)
  // A metric of one's own without update_weighted(): weighted use names it.
  struct Mine : M::Metric {
    Mine() : M::Metric("mine") {}
    using M::Metric::update_state;
    void update_state(const Tensor&, const Tensor&) override {}
  } mine;
  EXPECT_NO_THROW(mine.update_state(yt, yp, Tensor()));
  try {
    mine.update_state(yt, yp, Tensor::ones(Shape({4})));
    ADD_FAILURE() << "no weighted update";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'mine'"));
    EXPECT_THAT(e.what(), HasSubstr("update_weighted"));
  }
}

namespace {

const json& reference_data() { return weighted_metrics_reference().at("data"); }

Sequential classifier(bool run_eagerly = false) {
  const json& d = reference_data();
  Sequential m({layers::Input({5}), layers::Dense(8, "relu"), layers::Dense(3, "softmax")});
  m.set_weights({tensor_of(d.at("kernels")[0]), Tensor::zeros(Shape({8})), tensor_of(d.at("kernels")[1]),
                 Tensor::zeros(Shape({3}))});
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}),
             .loss = "sparse_categorical_crossentropy",
             .metrics = {"accuracy", M::SparseTopKCategoricalAccuracy(2, "top2")},
             .weighted_metrics = {"accuracy", M::SparseCategoricalCrossentropy(false, "wce"),
                                  M::SparseTopKCategoricalAccuracy(2, "top2")},
             .run_eagerly = run_eagerly});
  return m;
}

void expect_logs(const std::map<std::string, double>& got, const json& want, const std::string& what) {
  for (const auto& [key, value] : want.items()) {
    ASSERT_TRUE(got.count(key)) << what << ": no " << key;
    EXPECT_NEAR(got.at(key), value.get<double>(), 2e-5 * std::max(1.0, std::abs(value.get<double>()))) << what << " " << key;
  }
  EXPECT_EQ(got.size(), want.size()) << what;
}

}  // namespace

TEST(WeightedMetrics, FitAndEvaluateLogWeightedMetricsAsKeras) {
  const json& d = reference_data();
  const Tensor x = tensor_of(d.at("x")), y = tensor_of(d.at("y"), DType::int32), sw = tensor_of(d.at("sample_weight"));
  const Tensor x_val = tensor_of(d.at("x_val")), y_val = tensor_of(d.at("y_val"), DType::int32);
  const Tensor w_val = tensor_of(d.at("w_val"));
  for (const auto& c : weighted_metrics_reference().at("training")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    for (bool eager : {false, true}) {
      SCOPED_TRACE(eager ? "run_eagerly" : "recorded steps");
      auto m = classifier(eager);
      FitOptions fo{.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false};
      if (name.find("sample_weight") == 0) fo.sample_weight = sw;
      if (name.find("validation_split") != std::string::npos) fo.validation_split = 0.25;
      if (name.find("class_weight") == 0) {
        fo.class_weight = {{0, 1.0}, {1, 2.5}, {2, 0.5}};
        fo.validation_data = ValidationData(Arrays(x_val), Arrays(y_val), w_val);
      }
      const auto h = m.fit(x, y, fo);
      std::map<std::string, double> last;
      for (const auto& [k, v] : h.history) last[k] = v.back();
      json want_last = json::object();
      for (const auto& [k, v] : c.at("history").items()) want_last[k] = v.back();
      expect_logs(last, want_last, "fit's last epoch");
      for (const auto& [k, v] : c.at("history").items()) {
        ASSERT_TRUE(h.history.count(k)) << k;
        EXPECT_NEAR(h.history.at(k).front(), v.front().get<double>(), 2e-5 * std::max(1.0, std::abs(v.front().get<double>())))
            << "epoch 1 " << k;
      }
      EvaluateOptions eo{.batch_size = 8, .verbose = 0};
      if (c.at("evaluate_weighted").get<bool>()) eo.sample_weight = w_val;
      expect_logs(m.evaluate_dict(x_val, y_val, eo), c.at("evaluate"), "evaluate");
      EXPECT_EQ(m.metrics_names(),
                (std::vector<std::string>{"loss", "accuracy", "top2", "weighted_accuracy", "wce", "weighted_top2"}));
    }
  }
}

TEST(WeightedMetrics, EvaluateOnADatasetWeighsItsThirdItem) {
  const json& d = reference_data();
  const Tensor x_val = tensor_of(d.at("x_val")), y_val = tensor_of(d.at("y_val"), DType::int32);
  const Tensor w_val = tensor_of(d.at("w_val"));
  const json* weighted = nullptr;
  for (const auto& c : weighted_metrics_reference().at("training")) {
    if (c.at("name") == "sample_weight") weighted = &c;
  }
  ASSERT_TRUE(weighted);
  // The same model state as the reference's evaluate: fitted as its case, then evaluated through a Dataset.
  auto m = classifier();
  m.fit(tensor_of(d.at("x")), tensor_of(d.at("y"), DType::int32),
        {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false, .sample_weight = tensor_of(d.at("sample_weight"))});
  const auto ds = data::Dataset::from_tensor_slices({x_val, y_val, w_val}).batch(8);
  expect_logs(m.evaluate_dict(ds, {.verbose = 0}), weighted->at("evaluate"), "evaluate(Dataset)");
  EXPECT_THROW(m.evaluate_dict(ds, {.verbose = 0, .sample_weight = w_val}), ValueError);
  EXPECT_THROW(m.evaluate_dict(x_val, y_val, {.verbose = 0, .sample_weight = Tensor::ones(Shape({5}))}), ValueError);
}

TEST(WeightedMetrics, CompileChecksWeightedMetrics) {
  Sequential m({layers::Input(Shape({2})), layers::Dense(1, "sigmoid")});
  auto shared = std::make_shared<M::BinaryAccuracy>();
  EXPECT_THROW(m.compile({.loss = "binary_crossentropy", .metrics = {MetricRef(shared)},
                          .weighted_metrics = {MetricRef(shared)}}),
               ValueError);
  m.compile({.loss = "binary_crossentropy", .weighted_metrics = {M::F1Score()}});  // one value per class: logs' arrays
  // Keras's CompileMetrics.result(): a weighted metric whose name is taken is "weighted_<name>", then "_1", ...
  m.compile({.loss = "binary_crossentropy",
             .weighted_metrics = {"binary_accuracy", "binary_accuracy", "binary_accuracy"}});
  EXPECT_EQ(m.metrics_names(), (std::vector<std::string>{"loss", "binary_accuracy", "weighted_binary_accuracy",
                                                         "weighted_binary_accuracy_1"}));
  m.compile({.loss = "binary_crossentropy", .metrics = {"binary_accuracy", "binary_accuracy"}});
  EXPECT_EQ(m.metrics_names(), (std::vector<std::string>{"loss", "binary_accuracy", "binary_accuracy_1"}));
}

TEST(WeightedMetrics, OnBatchCallsWeighAsFitAndEvaluate) {
  const json& d = reference_data();
  const Tensor x = tensor_of(d.at("x")).slice_rows(0, 8), y = tensor_of(d.at("y"), DType::int32).slice_rows(0, 8);
  const Tensor w = tensor_of(d.at("sample_weight")).slice_rows(0, 8);
  const std::map<int, double> class_weight{{0, 1.0}, {1, 2.5}, {2, 0.5}};
  for (bool eager : {false, true}) {
    SCOPED_TRACE(eager ? "run_eagerly" : "recorded steps");
    auto by_fit = classifier(eager), by_batch = classifier(eager);
    const auto h = by_fit.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0, .shuffle = false, .sample_weight = w,
                                     .class_weight = class_weight});
    const auto logs = by_batch.train_on_batch(x, y, w, class_weight);
    const auto names = by_batch.metrics_names();
    ASSERT_EQ(logs.size(), names.size());
    for (std::size_t i = 0; i < names.size(); ++i) EXPECT_NEAR(logs[i], h.history.at(names[i])[0], 1e-6) << names[i];
    const auto ev = by_fit.evaluate_dict(x, y, {.batch_size = 8, .verbose = 0, .sample_weight = w});
    const auto tb = by_batch.test_on_batch(x, y, w);
    for (std::size_t i = 0; i < names.size(); ++i) EXPECT_NEAR(tb[i], ev.at(names[i]), 1e-6) << names[i];
    EXPECT_NE(tb[3], by_batch.test_on_batch(x, y)[3]) << "weighted_accuracy without weights is the plain accuracy";
    EXPECT_THROW(by_batch.train_on_batch(x, y, Tensor::ones(Shape({3}))), ValueError);
  }
}

// ---- keras.metrics.AUC's options (tests/keras/keras_auc_reference.py regenerates tests/data/keras_auc.json) ----

namespace {
const json& auc_reference() {
  static const json ref = osprey::testing::read_reference("keras_auc.json");
  return ref;
}
}  // namespace

TEST(AUCMetric, EveryCurveSummationThresholdsMultiLabelAndLabelWeightsAsKeras) {
  check_metric_cases(auc_reference().at("metrics"));
}

TEST(AUCMetric, FitLogsAMultiLabelAUCAsKeras) {
  const json& d = auc_reference().at("training");
  Sequential m({layers::Input({6}), layers::Dense(3, "sigmoid")});
  m.set_weights({tensor_of(d.at("kernel")), Tensor::zeros(Shape({3}))});
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}),
             .loss = "binary_crossentropy",
             .metrics = {M::AUC(M::AUCOptions{.name = "ml_auc", .multi_label = true}),
                         M::AUC(M::AUCOptions{.num_thresholds = 40, .curve = M::AUCCurve::PR, .name = "pr_auc"})}});
  const auto h = m.fit(tensor_of(d.at("x")), tensor_of(d.at("y")), {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (const auto& [k, v] : d.at("history").items()) {
    ASSERT_TRUE(h.history.count(k)) << k;
    for (std::size_t e = 0; e < 2; ++e) {
      EXPECT_NEAR(h.history.at(k)[e], v[e].get<double>(), 2e-5) << k << " epoch " << e + 1;
    }
  }
}

TEST(AUCMetric, KerasTensorLabelWeightsLoadAndOptionsRoundTrip) {
  // Keras writes label_weights as a serialized tensor (which its own from_config refuses); Osprey reads it and
  // writes a plain list, which both read.
  const json config = {{"name", "auc"}, {"dtype", "float32"}, {"num_thresholds", 5}, {"curve", "PRGAIN"},
                       {"summation_method", "minoring"}, {"multi_label", true}, {"num_labels", 3},
                       {"label_weights", {{"class_name", "__tensor__"}, {"config", {{"value", {1.0, 2.0, 0.5}}, {"dtype", "float32"}}}}},
                       {"from_logits", false}, {"thresholds", {0.2, 0.5, 0.7}}};
  const auto metric = metric_of({{"class", "AUC"}, {"config", config}});
  const auto written = json::parse(metric->get_config());
  EXPECT_EQ(written.at("label_weights"), json({1.0, 2.0, 0.5}));
  for (const char* key : {"num_thresholds", "curve", "summation_method", "multi_label", "num_labels", "thresholds"}) {
    EXPECT_EQ(written.at(key), config.at(key)) << key;
  }
  const auto again = metric_of({{"class", "AUC"}, {"config", written}});
  EXPECT_EQ(json::parse(again->get_config()), written);
  auto* auc = dynamic_cast<M::AUC*>(again.get());
  ASSERT_TRUE(auc);
  EXPECT_EQ(auc->thresholds().size(), 5u);
  EXPECT_NEAR(auc->thresholds().front(), -1e-7, 1e-12);
  EXPECT_NEAR(auc->thresholds().back(), 1 + 1e-7, 1e-12);
}

TEST(AUCMetric, BadOptionsAndShapesAreValueErrors) {
  EXPECT_THROW(M::AUC(M::AUCOptions{.num_thresholds = 1}), ValueError);
  EXPECT_THROW(M::AUC(M::AUCOptions{.num_labels = 3}), ValueError);  // num_labels without multi_label
  EXPECT_THROW(M::AUC(M::AUCOptions{.thresholds = std::vector<double>{0.5, 1.5}}), ValueError);
  EXPECT_THROW(M::AUC(M::AUCOptions{.label_weights = std::vector<double>{1.0, -1.0}}), ValueError);
  EXPECT_THROW(M::AUC(M::AUCOptions{.multi_label = true, .num_labels = 2, .label_weights = std::vector<double>{1.0}}),
               ValueError);
  M::AUC multi(M::AUCOptions{.multi_label = true});
  try {
    multi.update_state(Tensor::zeros(Shape({2, 3, 2})), Tensor::zeros(Shape({2, 3, 2})));
    ADD_FAILURE() << "multi_label takes rank 2 only";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 2"));
    EXPECT_THAT(e.what(), HasSubstr("(2, 3, 2)"));
  }
  multi.update_state(Tensor::zeros(Shape({2, 3})), Tensor::zeros(Shape({2, 3})));
  try {
    multi.update_state(Tensor::zeros(Shape({2, 4})), Tensor::zeros(Shape({2, 4})));
    ADD_FAILURE() << "3 labels, then 4";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("3 labels"));
  }
  multi.reset_state();  // keeps its labels, as Keras's built variables
  EXPECT_THROW(multi.update_state(Tensor::zeros(Shape({2, 4})), Tensor::zeros(Shape({2, 4}))), ValueError);
  M::AUC weighted(M::AUCOptions{.label_weights = std::vector<double>{1.0, 2.0}});
  EXPECT_THROW(weighted.update_state(Tensor::zeros(Shape({2, 3})), Tensor::zeros(Shape({2, 3}))), ValueError);
  EXPECT_THROW(weighted.update_state(Tensor::zeros(Shape({2, 3})), Tensor::zeros(Shape({2, 2}))), ValueError);
  // A config with an unknown curve names the ones there are.
  try {
    metric_of({{"class", "AUC"}, {"config", {{"name", "auc"}, {"curve", "LIFT"}}}});
    ADD_FAILURE() << "curve LIFT";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("PRGAIN"));
  }
}
