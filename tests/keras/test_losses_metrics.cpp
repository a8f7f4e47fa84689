// Keras 3's other losses and metrics against Keras 3.15 on TensorFlow (tests/keras/keras_losses_metrics_reference.py
// regenerates tests/data/keras_losses_metrics.json): each loss's per-sample values, reduced value, weighted value,
// gradient and config; each metric's result over two batches and its config; the metrics Keras's strings name;
// training with them; bad arguments.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/ops.h"
#include "osprey/random.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;
namespace L = osprey::keras::losses;
namespace M = osprey::keras::metrics;

namespace {

const json& losses_metrics_reference() {
  static const json ref = osprey::testing::read_reference("keras_losses_metrics.json");
  return ref;
}

std::vector<int> axes(const json& a) {
  if (a.is_null()) return {};
  return a.get<std::vector<int>>();
}

// The loss a case's class and Keras config describe, made with Osprey's C++ constructors.
std::optional<int64_t> ignored(const json& c) {
  return c.contains("ignore_class") && !c["ignore_class"].is_null() ? std::optional<int64_t>(c["ignore_class"].get<int64_t>())
                                                                    : std::nullopt;
}

std::shared_ptr<L::Loss> make_loss(const std::string& cls, const json& c) {
  const L::FocalOptions focal{.apply_class_balancing = c.value("apply_class_balancing", false),
                              .alpha = c.value("alpha", 0.25),
                              .gamma = c.value("gamma", 2.0),
                              .from_logits = c.value("from_logits", false),
                              .label_smoothing = c.value("label_smoothing", 0.0)};
  if (cls == "Poisson") return std::make_shared<L::Poisson>();
  if (cls == "MeanSquaredLogarithmicError") return std::make_shared<L::MeanSquaredLogarithmicError>();
  if (cls == "CosineSimilarity") return std::make_shared<L::CosineSimilarity>(c.value("axis", -1));
  if (cls == "SquaredHinge") return std::make_shared<L::SquaredHinge>();
  if (cls == "MeanSquaredError") return std::make_shared<L::MeanSquaredError>();
  if (cls == "CategoricalHinge") return std::make_shared<L::CategoricalHinge>();
  if (cls == "BinaryFocalCrossentropy") return std::make_shared<L::BinaryFocalCrossentropy>(focal);
  if (cls == "CategoricalFocalCrossentropy") return std::make_shared<L::CategoricalFocalCrossentropy>(focal);
  if (cls == "CategoricalGeneralizedCrossEntropy") return std::make_shared<L::CategoricalGeneralizedCrossEntropy>(c.at("q"));
  if (cls == "Dice") return std::make_shared<L::Dice>(axes(c.at("axis")));
  if (cls == "Tversky") return std::make_shared<L::Tversky>(c.at("alpha"), c.at("beta"), axes(c.at("axis")));
  if (cls == "SparseCategoricalCrossentropy") {
    return std::make_shared<L::SparseCategoricalCrossentropy>(L::SparseCategoricalCrossentropy::Options{
        .from_logits = c.value("from_logits", false), .ignore_class = ignored(c)});
  }
  ADD_FAILURE() << "no loss " << cls;
  return nullptr;
}

std::optional<double> opt_number(const json& c, const char* key) {
  return c.contains(key) && !c[key].is_null() ? std::optional<double>(c[key].get<double>()) : std::nullopt;
}
std::string opt_string(const json& c, const char* key) {
  return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : "";
}

std::shared_ptr<M::Metric> make_metric(const std::string& cls, const json& c) {
  const std::string name = c.at("name");
  const M::CrossentropyMetricOptions ce{c.value("from_logits", false), c.value("label_smoothing", 0.0)};
  if (cls == "Poisson") return std::make_shared<M::Poisson>(name);
  if (cls == "KLDivergence") return std::make_shared<M::KLDivergence>(name);
  if (cls == "BinaryCrossentropy") return std::make_shared<M::BinaryCrossentropy>(ce, name);
  if (cls == "CategoricalCrossentropy") return std::make_shared<M::CategoricalCrossentropy>(ce, name);
  if (cls == "SparseCategoricalCrossentropy") {
    return std::make_shared<M::SparseCategoricalCrossentropy>(ce.from_logits, name, ignored(c));
  }
  if (cls == "MeanAbsolutePercentageError") return std::make_shared<M::MeanAbsolutePercentageError>(name);
  if (cls == "MeanSquaredLogarithmicError") return std::make_shared<M::MeanSquaredLogarithmicError>(name);
  if (cls == "CosineSimilarity") return std::make_shared<M::CosineSimilarity>(name);
  if (cls == "LogCoshError") return std::make_shared<M::LogCoshError>(name);
  if (cls == "Hinge") return std::make_shared<M::Hinge>(name);
  if (cls == "SquaredHinge") return std::make_shared<M::SquaredHinge>(name);
  if (cls == "CategoricalHinge") return std::make_shared<M::CategoricalHinge>(name);
  if (cls == "Accuracy") return std::make_shared<M::Accuracy>(name);
  if (cls == "TruePositives") return std::make_shared<M::TruePositives>(opt_number(c, "thresholds"), name);
  if (cls == "FalsePositives") return std::make_shared<M::FalsePositives>(opt_number(c, "thresholds"), name);
  if (cls == "TrueNegatives") return std::make_shared<M::TrueNegatives>(opt_number(c, "thresholds"), name);
  if (cls == "FalseNegatives") return std::make_shared<M::FalseNegatives>(opt_number(c, "thresholds"), name);
  if (cls == "F1Score") return std::make_shared<M::F1Score>(opt_string(c, "average"), opt_number(c, "threshold"), name);
  if (cls == "FBetaScore") {
    return std::make_shared<M::FBetaScore>(opt_string(c, "average"), c.at("beta"), opt_number(c, "threshold"), name);
  }
  if (cls == "R2Score") return std::make_shared<M::R2Score>(opt_string(c, "class_aggregation"), c.at("num_regressors"), name);
  if (cls == "MeanIoU") {
    return std::make_shared<M::MeanIoU>(c.at("num_classes"), name, std::nullopt, c.at("sparse_y_true"), c.at("sparse_y_pred"));
  }
  if (cls == "IoU") {
    return std::make_shared<M::IoU>(c.at("num_classes"),
                                    M::IoU::Options{.target_class_ids = c.at("target_class_ids"),
                                                    .ignore_class = std::nullopt,
                                                    .sparse_y_true = c.at("sparse_y_true"),
                                                    .sparse_y_pred = c.at("sparse_y_pred"),
                                                    .axis = -1},
                                    name);
  }
  if (cls == "BinaryIoU") return std::make_shared<M::BinaryIoU>(c.at("target_class_ids"), c.at("threshold"), name);
  if (cls == "OneHotIoU") return std::make_shared<M::OneHotIoU>(c.at("num_classes"), c.at("target_class_ids"), name);
  if (cls == "OneHotMeanIoU") return std::make_shared<M::OneHotMeanIoU>(c.at("num_classes"), name);
  if (cls == "PrecisionAtRecall") return std::make_shared<M::PrecisionAtRecall>(c.at("recall"), c.at("num_thresholds"), name);
  if (cls == "RecallAtPrecision") return std::make_shared<M::RecallAtPrecision>(c.at("precision"), c.at("num_thresholds"), name);
  if (cls == "SensitivityAtSpecificity") {
    return std::make_shared<M::SensitivityAtSpecificity>(c.at("specificity"), c.at("num_thresholds"), name);
  }
  if (cls == "SpecificityAtSensitivity") {
    return std::make_shared<M::SpecificityAtSensitivity>(c.at("sensitivity"), c.at("num_thresholds"), name);
  }
  if (cls == "PearsonCorrelation") return std::make_shared<M::PearsonCorrelation>(name, c.at("axis"));
  if (cls == "ConcordanceCorrelation") return std::make_shared<M::ConcordanceCorrelation>(name, c.at("axis"));
  ADD_FAILURE() << "no metric " << cls;
  return nullptr;
}

// Osprey's config holds Keras's keys with Keras's values (numbers compared as numbers: Keras writes 0 for 0.0).
void expect_config(const std::string& ours, const json& keras, const std::string& what) {
  const json o = json::parse(ours);
  for (const auto& [k, v] : keras.items()) {
    ASSERT_TRUE(o.contains(k)) << what << ": no '" << k << "' in " << ours;
    if (v.is_number()) {
      EXPECT_DOUBLE_EQ(o[k].get<double>(), v.get<double>()) << what << "." << k;
    } else {
      EXPECT_EQ(o[k], v) << what << "." << k;
    }
  }
}

// The integer-label losses take int32 labels as Keras's callers give them.
Tensor labels_for(const std::string& cls, const json& j) {
  return cls == "CategoricalGeneralizedCrossEntropy" || cls == "SparseCategoricalCrossentropy" ? tensor_of(j, DType::int32)
                                                                                                 : tensor_of(j);
}

TEST(KerasLosses, ValuesGradientsAndConfigsMatchKeras) {
  for (const auto& c : losses_metrics_reference().at("losses")) {
    const std::string name = c.at("name"), cls = c.at("class");
    SCOPED_TRACE(name);
    const auto loss = make_loss(cls, c.at("config"));
    ASSERT_TRUE(loss);
    EXPECT_EQ(loss->class_name(), cls);
    expect_config(loss->get_config(), c.at("config"), name);
    const Tensor yt = labels_for(cls, c.at("y_true"));
    Variable yp(tensor_of(c.at("y_pred")), "y_pred");
    const Tensor per_sample = loss->per_sample(yt, yp.value());
    const int64_t n = yp.value().shape()[0];
    ASSERT_EQ(per_sample.shape(), Shape({n}));
    if (c.at("per_sample").is_number()) {  // axis=None: one value for the batch, which every sample carries
      for (float v : per_sample.to_vector<float>()) EXPECT_NEAR(v, c.at("per_sample").get<double>(), 2e-6);
    } else {  // Keras's values of shape (N, ...) (a loss over the middle axes): Osprey gives each sample's mean
      const Tensor keras_values = tensor_of(c.at("per_sample"));
      const Tensor means = osprey::ops::reduce_mean(keras_values.reshape({n, keras_values.num_elements() / n}), 1);
      const auto want = means.to_vector<float>();
      const auto got = per_sample.to_vector<float>();
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], want[i], 2e-6 * std::max(1.0f, std::abs(want[i]))) << i;
    }
    GradientTape tape;
    const Tensor value = (*loss)(yt, yp.value());
    const auto grads = tape.gradient(value, std::vector<Variable*>{&yp});
    EXPECT_NEAR(value.item(), c.at("loss").get<double>(), 2e-6 * std::max(1.0, std::abs(c.at("loss").get<double>())));
    expect_close(grads[0], c.at("grad"), 2e-5, name + " gradient");
    if (c.contains("weighted")) {
      const double w = (*loss)(yt, yp.value(), tensor_of(c.at("sample_weight"))).item();
      EXPECT_NEAR(w, c.at("weighted").get<double>(), 2e-6 * std::max(1.0, std::abs(c.at("weighted").get<double>())));
    }
    // One scalar weight for every sample (Keras's sample_weight=2.5), and as a one-element array, per reduction
    // (Keras's "sum" and "mean_with_sample_weight" count every value of a loss that gives several per sample, or
    // one for the batch).
    for (const auto& [key, reduction] : {std::pair{"sum_over_batch_size", L::Reduction::sum_over_batch_size},
                                         std::pair{"sum", L::Reduction::sum},
                                         std::pair{"mean_with_sample_weight", L::Reduction::mean_with_sample_weight}}) {
      SCOPED_TRACE(std::string("scalar weight, ") + key);
      const double want = c.at("scalar_weighted").at(key).get<double>();
      loss->set_reduction(reduction);
      for (const Tensor& w : {Tensor::scalar(2.5f), Tensor::from_vector<float>({2.5f}, {1})}) {
        EXPECT_NEAR((*loss)(yt, yp.value(), w).item(), want, 2e-6 * std::max(1.0, std::abs(want)));
      }
    }
    // Unweighted, "sum" is that sum over the weight (Keras: values · 2.5, summed).
    loss->set_reduction(L::Reduction::sum);
    const double sum = c.at("scalar_weighted").at("sum").get<double>() / 2.5;
    EXPECT_NEAR((*loss)(yt, yp.value()).item(), sum, 2e-6 * std::max(1.0, std::abs(sum))) << "unweighted sum";
    loss->set_reduction(L::Reduction::sum_over_batch_size);
    // Keras's other reductions (the ignore_class cases record them), with and without one weight per sample.
    for (const auto& [key, reduction] : {std::pair{"sum_over_batch_size", L::Reduction::sum_over_batch_size},
                                         std::pair{"sum", L::Reduction::sum},
                                         std::pair{"mean_with_sample_weight", L::Reduction::mean_with_sample_weight}}) {
      if (!c.contains(key)) continue;
      SCOPED_TRACE(key);
      loss->set_reduction(reduction);
      const double want = c.at(key).get<double>(), want_w = c.at(std::string(key) + "_weighted").get<double>();
      EXPECT_NEAR((*loss)(yt, yp.value()).item(), want, 2e-6 * std::max(1.0, std::abs(want)));
      const double got_w = (*loss)(yt, yp.value(), tensor_of(c.at("sample_weight"))).item();
      EXPECT_NEAR(got_w, want_w, 2e-6 * std::max(1.0, std::abs(want_w)));
    }
    EXPECT_NO_THROW(L::get(cls));
  }
}

TEST(KerasLosses, GeneralizedCrossEntropyTakesColumnLabelsAsKerasDocuments) {
  // Keras 3.15 one-hot encodes (N, 1) labels to (N, 1, C) and broadcasts them against every row (an (N, N) result);
  // its documentation says (N,) or (N, 1): Osprey reads both as one label per row.
  const Tensor p = Tensor::from_vector<float>({0.2f, 0.5f, 0.3f, 0.6f, 0.1f, 0.3f}, {2, 3});
  L::CategoricalGeneralizedCrossEntropy gce(0.7);
  const auto flat = gce.per_sample(Tensor::from_vector<int32_t>({1, 0}, {2}), p).to_vector<float>();
  const auto column = gce.per_sample(Tensor::from_vector<int32_t>({1, 0}, {2, 1}), p).to_vector<float>();
  EXPECT_EQ(flat, column);
  EXPECT_NEAR(flat[0], (1 - std::pow(0.5, 0.7)) / 0.7, 1e-6);
  EXPECT_NEAR(flat[1], (1 - std::pow(0.6, 0.7)) / 0.7, 1e-6);
}

TEST(KerasMetrics, ResultsAndConfigsMatchKeras) {
  for (const auto& c : losses_metrics_reference().at("metrics")) {
    const std::string name = c.at("name"), cls = c.at("class");
    SCOPED_TRACE(name);
    const auto metric = make_metric(cls, c.at("config"));
    ASSERT_TRUE(metric);
    EXPECT_EQ(metric->class_name(), cls);
    expect_config(metric->get_config(), c.at("config"), name);
    const bool sparse = cls == "SparseCategoricalCrossentropy";
    for (const auto& b : c.at("batches")) {
      metric->update_state(sparse ? tensor_of(b[0], DType::int32) : tensor_of(b[0]), tensor_of(b[1]));
    }
    const json& want = c.at("result");
    if (want.is_array()) {
      const auto* v = dynamic_cast<const M::VectorMetric*>(metric.get());
      ASSERT_TRUE(v);
      EXPECT_FALSE(v->scalar_result());
      const auto got = v->result_values();
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i].get<double>(), 1e-6) << i;
      EXPECT_THROW(metric->result(), ValueError);
    } else {
      EXPECT_NEAR(metric->result(), want.get<double>(), 2e-6 * std::max(1.0, std::abs(want.get<double>())));
    }
    metric->reset_state();  // a fresh epoch gives the same again
    for (const auto& b : c.at("batches")) {
      metric->update_state(sparse ? tensor_of(b[0], DType::int32) : tensor_of(b[0]), tensor_of(b[1]));
    }
    if (!want.is_array()) {
      EXPECT_NEAR(metric->result(), want.get<double>(), 2e-6 * std::max(1.0, std::abs(want.get<double>())));
    }
  }
}

TEST(KerasMetrics, StringsNameWhatKerasNames) {
  const json& ref = losses_metrics_reference();
  const Tensor yt = tensor_of(ref.at("metric_strings_batch")[0]), yp = tensor_of(ref.at("metric_strings_batch")[1]);
  for (const auto& [s, c] : ref.at("metric_strings").items()) {
    SCOPED_TRACE(s);
    if (c.contains("error")) {  // Keras has no metric by that name (huber and log_cosh are losses only)
      EXPECT_THROW(M::get(s), ValueError);
      continue;
    }
    const auto m = M::get(s);
    EXPECT_EQ(m->name(), s);
    EXPECT_EQ(m->class_name(), c.at("kind").get<std::string>());
    m->update_state(yt, yp);
    const json& want = c.at("result");
    if (want.is_array()) {
      const auto got = dynamic_cast<const M::VectorMetric&>(*m).result_values();
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i].get<double>(), 1e-6);
    } else if (want.is_null()) {
      EXPECT_TRUE(std::isnan(m->result()));  // Pearson of constant rows
    } else {
      EXPECT_NEAR(m->result(), want.get<double>(), 2e-6 * std::max(1.0, std::abs(want.get<double>())));
    }
  }
}

// ignore_class in fit: the batch's loss divides by its unmasked labels, so a small Dense model's batch of 64 (which
// two intra-op threads train as two halves) is not split: the halves below hold 30 and 2 labelled rows.
TEST(KerasLosses, IgnoreClassLossInFitIsTheWholeBatchsMean) {
  osprey::random::set_seed(6);
  const Tensor x = osprey::random::uniform({64, 4});
  std::vector<int32_t> labels(64);
  for (int i = 0; i < 64; ++i) labels[static_cast<std::size_t>(i)] = i < 32 ? (i < 30 ? i % 3 : -1) : (i < 34 ? i % 3 : -1);
  const Tensor y = Tensor::from_vector(labels, {64});
  Sequential m({layers::Input({4}), layers::Dense(8, "relu"), layers::Dense(3, "softmax")});
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 1e-30}),
             .loss = L::SparseCategoricalCrossentropy({.ignore_class = -1})});
  const double before = m.evaluate(x, y, {.batch_size = 64, .verbose = 0})[0];
  const Tensor p = m.predict(x, {.verbose = 0});
  double sum = 0;  // −log p[label] over the labelled rows, clipped as Keras
  for (int i = 0; i < 64; ++i) {
    const int32_t l = labels[static_cast<std::size_t>(i)];
    if (l >= 0) sum -= std::log(std::clamp(p.to_vector<float>()[static_cast<std::size_t>(i * 3 + l)], 1e-7f, 1.0f - 1e-7f));
  }
  EXPECT_NEAR(before, sum / 32, 1e-5);
  const auto h = m.fit(x, y, {.epochs = 1, .batch_size = 64, .verbose = 0, .shuffle = false});
  EXPECT_NEAR(h.history.at("loss")[0], before, 1e-5);
  // Every label ignored: a loss of 0 (divide_no_nan), no NaN.
  const Tensor none = Tensor::from_vector(std::vector<int32_t>(64, -1), {64});
  EXPECT_EQ(m.evaluate(x, none, {.batch_size = 64, .verbose = 0})[0], 0.0);
  // Without ignore_class the -1 labels are an error, not a class.
  m.compile({.optimizer = optimizers::SGD(), .loss = "sparse_categorical_crossentropy"});
  EXPECT_THROW(m.evaluate(x, y, {.batch_size = 64, .verbose = 0}), osprey::Error);
}

TEST(KerasLosses, EveryNewLossTrainsAModelByName) {
  for (const char* name : {"squared_hinge", "binary_focal_crossentropy", "dice", "tversky"}) {
    SCOPED_TRACE(name);
    osprey::random::set_seed(4);
    const Tensor x = osprey::random::uniform({64, 4});
    const Tensor y = osprey::ops::cast(osprey::ops::greater_equal(osprey::ops::reduce_sum(x, 1).reshape({64, 1}), Tensor::scalar(2.0)), DType::float32);
    Sequential m({layers::Input({4}), layers::Dense(8, "relu"), layers::Dense(1, "sigmoid")});
    m.compile({.optimizer = "adam", .loss = name, .metrics = {"binary_accuracy"}});
    const auto h = m.fit(x, y, {.epochs = 15, .batch_size = 16, .verbose = 0});
    EXPECT_LT(h.history.at("loss").back(), h.history.at("loss").front());
  }
  // Regression losses on positive targets with three outputs (the cosine of one-element rows is only their sign).
  for (const char* name : {"poisson", "msle", "cosine_similarity"}) {
    SCOPED_TRACE(name);
    osprey::random::set_seed(4);
    const Tensor x = osprey::random::uniform({64, 4});
    const Tensor y = osprey::ops::add(osprey::ops::matmul(x, osprey::random::uniform({4, 3})), Tensor::scalar(0.5));
    Sequential m({layers::Input({4}), layers::Dense(8, "relu"), layers::Dense(3, "softplus")});
    m.compile({.optimizer = "adam", .loss = name});
    const auto h = m.fit(x, y, {.epochs = 15, .batch_size = 16, .verbose = 0});
    EXPECT_LT(h.history.at("loss").back(), h.history.at("loss").front());
  }
  // Categorical losses on one-hot labels, the generalized crossentropy on integer labels.
  osprey::random::set_seed(5);
  const Tensor x = osprey::random::uniform({60, 3});
  const Tensor labels = osprey::ops::cast(keras::ops::argmax(x, 1), DType::int32);
  for (const char* name : {"categorical_focal_crossentropy", "categorical_hinge", "categorical_generalized_cross_entropy"}) {
    SCOPED_TRACE(name);
    const bool sparse = std::string(name) == "categorical_generalized_cross_entropy";
    Sequential m({layers::Input({3}), layers::Dense(3, "softmax")});
    m.compile({.optimizer = keras::optimizers::Adam({.learning_rate = 0.05}), .loss = name,
               .metrics = {sparse ? "sparse_categorical_accuracy" : "categorical_accuracy"}});
    const auto h = m.fit(x, sparse ? labels : keras::ops::one_hot(labels, 3), {.epochs = 20, .batch_size = 15, .verbose = 0});
    EXPECT_LT(h.history.at("loss").back(), h.history.at("loss").front());
  }
}

TEST(KerasMetrics, NewMetricsLogInFitAndPerClassOnesAsArrays) {
  osprey::random::set_seed(6);
  const Tensor x = osprey::random::uniform({48, 4});
  const Tensor y = osprey::ops::cast(osprey::ops::greater_equal(osprey::ops::reduce_sum(x, 1).reshape({48, 1}), Tensor::scalar(2.0)), DType::float32);
  Sequential m({layers::Input({4}), layers::Dense(1, "sigmoid")});
  m.compile({.optimizer = "adam",
             .loss = "bce",
             .metrics = {"true_positives", M::F1Score("macro", 0.5), M::BinaryIoU(), "poisson", M::RecallAtPrecision(0.5),
                         "bce", M::R2Score()}});
  const auto h = m.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0});
  for (const char* key : {"true_positives", "f1_score", "binary_io_u", "poisson", "recall_at_precision", "bce", "r2_score"}) {
    ASSERT_EQ(h.history.count(key), 1u) << key;
    EXPECT_TRUE(std::isfinite(h.history.at(key).back())) << key;
  }
  // The "bce" metric is the loss's mean over the epoch.
  EXPECT_NEAR(h.history.at("bce").back(), h.history.at("loss").back(), 1e-5);

  // Without an average: one value per class, in the logs' arrays (test_class_metrics.cpp has Keras's numbers).
  Sequential per_class({layers::Input({4}), layers::Dense(2, "softmax")});
  per_class.compile({.optimizer = "adam", .loss = "categorical_crossentropy", .metrics = {"f1_score"}});
  const Tensor y2 = osprey::ops::concat({y, osprey::ops::sub(Tensor::scalar(1.0f), y)}, 1);
  const auto hc = per_class.fit(x, y2, {.epochs = 2, .batch_size = 16, .verbose = 0});
  ASSERT_EQ(hc.arrays.count("f1_score"), 1u);
  EXPECT_EQ(hc.history.count("f1_score"), 0u);
  ASSERT_EQ(hc.arrays.at("f1_score").size(), 2u);
  EXPECT_EQ(hc.arrays.at("f1_score")[1].size(), 2u);
}

TEST(KerasLossesAndMetrics, BadArgumentsRaiseTypedErrors) {
  const Tensor p = Tensor::from_vector<float>({0.2f, 0.8f, 0.6f, 0.4f}, {2, 2});
  const Tensor t = Tensor::from_vector<float>({0, 1, 1, 0}, {2, 2});
  EXPECT_THROW(L::CosineSimilarity(2).per_sample(t, p), ValueError);
  EXPECT_THROW(L::Dice({0}).per_sample(t, p), ValueError);  // the batch axis
  EXPECT_THROW(L::Tversky(0.5, 0.5, {3}).per_sample(t, p), ValueError);
  EXPECT_THROW(L::CategoricalGeneralizedCrossEntropy(1.0), ValueError);
  EXPECT_THROW(L::CategoricalGeneralizedCrossEntropy(0.5).per_sample(Tensor::from_vector<int32_t>({1, 0, 1, 0}, {2, 2, 1}), p),
               ValueError);
  EXPECT_THROW(L::BinaryFocalCrossentropy({.gamma = -1.0}), ValueError);
  EXPECT_THROW(L::CategoricalFocalCrossentropy({.label_smoothing = 2.0}), ValueError);
  EXPECT_THROW(L::CategoricalFocalCrossentropy().per_sample(Tensor::from_vector<float>({1, 0}, {2}), p), ValueError);
  EXPECT_THROW(L::get("focal"), ValueError);

  EXPECT_THROW(M::FBetaScore("median"), ValueError);
  EXPECT_THROW(M::FBetaScore("macro", 0.0), ValueError);
  EXPECT_THROW(M::F1Score("macro", 1.5), ValueError);
  M::F1Score f1("micro");
  EXPECT_THROW(f1.update_state(Tensor::from_vector<float>({1, 0}, {2}), Tensor::from_vector<float>({1, 0}, {2})), ValueError);
  f1.update_state(t, p);
  EXPECT_THROW(f1.update_state(Tensor::from_vector<float>({1, 0, 0}, {1, 3}), Tensor::from_vector<float>({1, 0, 0}, {1, 3})),
               ValueError);  // three classes after two
  EXPECT_THROW(M::R2Score("median"), ValueError);
  EXPECT_THROW(M::R2Score("uniform_average", -1), ValueError);
  EXPECT_THROW(M::MeanIoU(0), ValueError);
  EXPECT_THROW(M::MeanIoU(1 << 20), ValueError);  // a (classes × classes) matrix
  EXPECT_THROW(M::IoU(3, {.target_class_ids = {3}, .ignore_class = std::nullopt, .sparse_y_true = true, .sparse_y_pred = true, .axis = -1}), ValueError);
  EXPECT_THROW(M::BinaryIoU({2}), ValueError);
  EXPECT_THROW(M::PrecisionAtRecall(1.5), ValueError);
  EXPECT_THROW(M::SensitivityAtSpecificity(0.5, 0), ValueError);
  EXPECT_THROW(M::TruePositives(2.0), ValueError);
  M::MeanIoU iou(3);
  EXPECT_THROW(iou.update_state(Tensor::from_vector<float>({1, 2}, {2}), Tensor::from_vector<float>({1, 2, 0}, {3})),
               ValueError);
  // Labels outside [0, num_classes) are left out, as Keras's bounds mask does.
  iou.update_state(Tensor::from_vector<float>({1, 7, -1}, {3}), Tensor::from_vector<float>({1, 1, 1}, {3}));
  EXPECT_NEAR(iou.result(), 1.0, 1e-6);
  iou.update_state(Tensor::from_vector<float>({NAN, 1e30f, 2}, {3}), Tensor::from_vector<float>({1, 1, -1e30f}, {3}));
  EXPECT_NEAR(iou.result(), 1.0, 1e-6);  // NaN and huge ids are outside too
  EXPECT_THROW(M::F1Score("macro").update_state(Tensor::zeros(Shape({2, 0})), Tensor::zeros(Shape({2, 0}))), ValueError);
}

}  // namespace

// fit with a "sum" loss over sequence outputs: each batch's loss is the sum of Keras's N·T values (a step's mean
// over its features), so the history and the weights are Keras's (Keras 3.15.1's numbers in
// keras_losses_metrics.json), eager and recorded.
TEST(KerasLosses, ASumLossOverSequencesTrainsAsKeras) {
  const auto& c = losses_metrics_reference().at("fit_sum_sequence");
  for (const bool eager : {true, false}) {
    SCOPED_TRACE(eager ? "eager" : "recorded");
    Sequential m({layers::Input({3, 4}), layers::Dense(2)});
    m.set_weights({tensor_of(c.at("kernel")), Tensor::zeros(Shape({2}))});
    L::MeanSquaredError mse;
    mse.set_reduction(L::Reduction::sum);
    m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.01}), .loss = mse, .run_eagerly = eager});
    const auto h = m.fit(tensor_of(c.at("x")), tensor_of(c.at("y")), {.epochs = 2, .batch_size = 5, .verbose = 0, .shuffle = false});
    for (std::size_t e = 0; e < 2; ++e) {
      const double want = c.at("loss")[e].get<double>();
      EXPECT_NEAR(h.history.at("loss")[e], want, 2e-5 * std::abs(want)) << "epoch " << e + 1;
    }
    const auto w = m.get_weights();
    for (std::size_t i = 0; i < w.size(); ++i) expect_close(w[i], c.at("weights")[i], 2e-5, "weight " + std::to_string(i));
  }
}
