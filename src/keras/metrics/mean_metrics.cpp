// Keras's metrics that are means of per-sample values (keras/src/metrics/{probabilistic,regression,hinge,
// accuracy,correlation}_metrics.py): each is the mean, over every value seen, of Keras's function of y_true and
// y_pred, most of them a loss function.
#include <fmt/format.h>

#include "keras/losses/loss_helpers.h"
#include "keras/metrics/metric_helpers.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/losses.h"
#include "osprey/keras/metrics.h"
#include "osprey/keras/ops.h"

namespace osprey::keras::metrics {

namespace kops = osprey::keras::ops;
namespace ser = serialization;

KerasMeanMetric::KerasMeanMetric(MetricFn fn, std::string name, std::string class_name, std::string config)
    : MeanMetricWrapper(std::move(fn), std::move(name)), class_name_(std::move(class_name)), config_(std::move(config)) {}

std::string KerasMeanMetric::get_config() const {
  ser::json c = ser::parse(Metric::get_config(), "a metric config");
  if (config_.empty()) return ser::dumps(c);
  const ser::json options = ser::parse(config_, "a metric's options");
  for (auto it = options.begin(); it != options.end(); ++it) c[it.key()] = it.value();
  return ser::dumps(c);
}

namespace {
// A loss's per-sample values as a metric function (Keras's metric classes wrap the loss functions).
MetricFn of_loss(std::shared_ptr<losses::Loss> loss) {
  return [loss](const Tensor& t, const Tensor& p) { return loss->per_sample(t, p); };
}
template <typename L, typename... A>
MetricFn loss_fn(A&&... args) {
  return of_loss(std::make_shared<L>(std::forward<A>(args)...));
}
}  // namespace

Accuracy::Accuracy(std::string name)
    : KerasMeanMetric(
          [](const Tensor& y_true, const Tensor& y_pred) {
            Tensor t = y_true, p = y_pred;
            losses::detail::same_rank(t, p);
            return kops::cast(kops::equal(t, p), DType::float32);
          },
          std::move(name), "Accuracy") {}
Poisson::Poisson(std::string name) : KerasMeanMetric(loss_fn<losses::Poisson>(), std::move(name), "Poisson") {}
KLDivergence::KLDivergence(std::string name)
    : KerasMeanMetric(loss_fn<losses::KLDivergence>(), std::move(name), "KLDivergence") {}
BinaryCrossentropy::BinaryCrossentropy(CrossentropyMetricOptions o, std::string name)
    : KerasMeanMetric(loss_fn<losses::BinaryCrossentropy>(
                          losses::CrossentropyOptions{.label_smoothing = o.label_smoothing, .from_logits = o.from_logits}),
                      std::move(name), "BinaryCrossentropy",
                      ser::dumps(ser::json{{"from_logits", o.from_logits}, {"label_smoothing", o.label_smoothing}})) {}
CategoricalCrossentropy::CategoricalCrossentropy(CrossentropyMetricOptions o, std::string name)
    : KerasMeanMetric(loss_fn<losses::CategoricalCrossentropy>(
                          losses::CrossentropyOptions{.label_smoothing = o.label_smoothing, .from_logits = o.from_logits}),
                      std::move(name), "CategoricalCrossentropy",
                      ser::dumps(ser::json{
                          {"from_logits", o.from_logits}, {"label_smoothing", o.label_smoothing}, {"axis", -1}})) {}
SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(bool from_logits, std::string name,
                                                             std::optional<int64_t> ignore_class)
    : KerasMeanMetric(loss_fn<losses::SparseCategoricalCrossentropy>(losses::SparseCategoricalCrossentropy::Options{
                          .from_logits = from_logits, .ignore_class = ignore_class}),
                      std::move(name), "SparseCategoricalCrossentropy",
                      ser::dumps(ser::json{{"from_logits", from_logits},
                                           {"ignore_class", ignore_class ? ser::json(*ignore_class) : ser::json(nullptr)},
                                           {"axis", -1}})) {}
MeanAbsolutePercentageError::MeanAbsolutePercentageError(std::string name)
    : KerasMeanMetric(loss_fn<losses::MeanAbsolutePercentageError>(), std::move(name), "MeanAbsolutePercentageError") {}
MeanSquaredLogarithmicError::MeanSquaredLogarithmicError(std::string name)
    : KerasMeanMetric(loss_fn<losses::MeanSquaredLogarithmicError>(), std::move(name), "MeanSquaredLogarithmicError") {}
CosineSimilarity::CosineSimilarity(std::string name, int axis)
    : KerasMeanMetric(
          [loss = std::make_shared<losses::CosineSimilarity>(axis)](const Tensor& t, const Tensor& p) {
            return kops::negative(loss->per_sample(t, p));  // the similarity, not the loss
          },
          std::move(name), "CosineSimilarity") {}
LogCoshError::LogCoshError(std::string name)
    : KerasMeanMetric(loss_fn<losses::LogCosh>(), std::move(name), "LogCoshError") {}
Hinge::Hinge(std::string name) : KerasMeanMetric(loss_fn<losses::Hinge>(), std::move(name), "Hinge") {}
SquaredHinge::SquaredHinge(std::string name)
    : KerasMeanMetric(loss_fn<losses::SquaredHinge>(), std::move(name), "SquaredHinge") {}
CategoricalHinge::CategoricalHinge(std::string name)
    : KerasMeanMetric(loss_fn<losses::CategoricalHinge>(), std::move(name), "CategoricalHinge") {}

PearsonCorrelation::PearsonCorrelation(std::string name, int axis)
    : KerasMeanMetric(
          [axis](const Tensor& y_true, const Tensor& y_pred) {
            Tensor p = losses::detail::float_predictions(y_pred), t = losses::detail::as_float_like(y_true, p);
            losses::detail::same_rank(t, p);
            Tensor tn = kops::subtract(t, kops::mean(t, axis, true));
            Tensor pn = kops::subtract(p, kops::mean(p, axis, true));
            tn = kops::divide(tn, kops::std(tn, axis, true));
            pn = kops::divide(pn, kops::std(pn, axis, true));
            return kops::mean(kops::multiply(tn, pn), axis);
          },
          std::move(name), "PearsonCorrelation", ser::dumps(ser::json{{"axis", axis}})) {}

ConcordanceCorrelation::ConcordanceCorrelation(std::string name, int axis)
    : KerasMeanMetric(
          [axis](const Tensor& y_true, const Tensor& y_pred) {
            Tensor p = losses::detail::float_predictions(y_pred), t = losses::detail::as_float_like(y_true, p);
            losses::detail::same_rank(t, p);
            const Tensor t_mean = kops::mean(t, axis, true), p_mean = kops::mean(p, axis, true);
            const Tensor t_var = kops::var(kops::subtract(t, t_mean), axis, true);
            const Tensor p_var = kops::var(kops::subtract(p, p_mean), axis, true);
            // Keras 3.15 centres y_true on y_pred's mean in the covariance; kept, so the numbers are Keras's.
            const Tensor covar = kops::multiply(kops::subtract(t, p_mean), kops::subtract(p, p_mean));
            const Tensor norm = kops::add(kops::add(t_var, p_var), kops::square(kops::subtract(t_mean, p_mean)));
            return kops::mean(kops::divide(kops::multiply(covar, 2.0), kops::add(norm, 1e-7)), axis);
          },
          std::move(name), "ConcordanceCorrelation", ser::dumps(ser::json{{"axis", axis}})) {}

std::shared_ptr<Metric> detail::more_metrics_by_name(const std::string& n) {
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* a : names) {
      if (n == a) return true;
    }
    return false;
  };
  if (is({"Accuracy"})) return std::make_shared<Accuracy>();  // the string "accuracy" picks the kind by shapes
  if (is({"bce", "BCE", "binary_crossentropy", "BinaryCrossentropy"})) return std::make_shared<BinaryCrossentropy>();
  if (is({"categorical_crossentropy", "CategoricalCrossentropy"})) return std::make_shared<CategoricalCrossentropy>();
  if (is({"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"})) {
    return std::make_shared<SparseCategoricalCrossentropy>();
  }
  if (is({"poisson", "Poisson"})) return std::make_shared<Poisson>();
  if (is({"kl_divergence", "KLDivergence"})) return std::make_shared<KLDivergence>();
  if (is({"mape", "MAPE", "mean_absolute_percentage_error", "MeanAbsolutePercentageError"})) {
    return std::make_shared<MeanAbsolutePercentageError>();
  }
  if (is({"msle", "MSLE", "mean_squared_logarithmic_error", "MeanSquaredLogarithmicError"})) {
    return std::make_shared<MeanSquaredLogarithmicError>();
  }
  if (is({"cosine_similarity", "CosineSimilarity"})) return std::make_shared<CosineSimilarity>();
  if (is({"log_cosh_error", "LogCoshError"})) return std::make_shared<LogCoshError>();
  if (is({"hinge", "Hinge"})) return std::make_shared<Hinge>();
  if (is({"squared_hinge", "SquaredHinge"})) return std::make_shared<SquaredHinge>();
  if (is({"categorical_hinge", "CategoricalHinge"})) return std::make_shared<CategoricalHinge>();
  if (is({"pearson_correlation", "PearsonCorrelation"})) return std::make_shared<PearsonCorrelation>();
  if (is({"concordance_correlation", "ConcordanceCorrelation"})) return std::make_shared<ConcordanceCorrelation>();
  if (is({"true_positives", "TruePositives"})) return std::make_shared<TruePositives>();
  if (is({"false_positives", "FalsePositives"})) return std::make_shared<FalsePositives>();
  if (is({"true_negatives", "TrueNegatives"})) return std::make_shared<TrueNegatives>();
  if (is({"false_negatives", "FalseNegatives"})) return std::make_shared<FalseNegatives>();
  if (is({"f1_score", "F1Score"})) return std::make_shared<F1Score>();
  if (is({"fbeta_score", "FBetaScore"})) return std::make_shared<FBetaScore>();
  if (is({"r2_score", "R2Score"})) return std::make_shared<R2Score>();
  return nullptr;
}

}  // namespace osprey::keras::metrics
