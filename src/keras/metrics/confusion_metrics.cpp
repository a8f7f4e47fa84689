// Keras's confusion-count metrics (keras/src/metrics/confusion_metrics.py): the four counts at a threshold and the
// sensitivity/specificity family (the best of one rate while another stays at least a value).
#include <algorithm>

#include <fmt/format.h>

#include "keras/metrics/metric_helpers.h"
#include "osprey/errors.h"
#include "osprey/keras/metrics.h"

namespace osprey::keras::metrics {

using detail::config_with;
using detail::divide_no_nan;
namespace ser = serialization;

ConfusionCount::ConfusionCount(Kind kind, std::optional<double> threshold, std::string name)
    : ConfusionMetric(std::move(name), {threshold.value_or(0.5)}), kind_(kind), threshold_(threshold) {
  if (threshold && !(*threshold >= 0.0 && *threshold <= 1.0)) {
    throw ValueError(fmt::format("Threshold values must be in [0, 1]. Received: {}", *threshold));
  }
}
ConfusionCount::ConfusionCount(Kind kind, std::vector<double> thresholds, std::string name)
    : ConfusionMetric(std::move(name), {0.5}), kind_(kind) {
  set_threshold_list(std::move(thresholds));
}
std::vector<double> ConfusionCount::result_values() const {
  switch (kind_) {
    case Kind::true_positives: return tp_;
    case Kind::false_positives: return fp_;
    case Kind::true_negatives: return tn_;
    case Kind::false_negatives: return fn_;
  }
  return {};
}
double ConfusionCount::result() const { return single(result_values()); }
std::string ConfusionCount::class_name() const {
  switch (kind_) {
    case Kind::true_positives: return "TruePositives";
    case Kind::false_positives: return "FalsePositives";
    case Kind::true_negatives: return "TrueNegatives";
    case Kind::false_negatives: return "FalseNegatives";
  }
  return "";
}
std::string ConfusionCount::get_config() const {
  return config_with(*this, {{"thresholds", detail::thresholds_config(threshold_list_, threshold_)}});
}

namespace {
// [0, 1/(n−1), ..., 1] (one threshold: 0.5), as SensitivitySpecificityBase.
std::vector<double> even_thresholds(int n) {
  detail::check_threshold_count(n, 1);
  if (n == 1) return {0.5};
  std::vector<double> t{0.0};
  for (int i = 0; i < n - 2; ++i) t.push_back((i + 1) * 1.0 / (n - 1));
  t.push_back(1.0);
  return t;
}
const char* value_key(RateAtRate::Kind k) {
  switch (k) {
    case RateAtRate::Kind::sensitivity_at_specificity: return "specificity";
    case RateAtRate::Kind::specificity_at_sensitivity: return "sensitivity";
    case RateAtRate::Kind::precision_at_recall: return "recall";
    case RateAtRate::Kind::recall_at_precision: return "precision";
  }
  return "";
}
}  // namespace

RateAtRate::RateAtRate(Kind kind, double value, int num_thresholds, std::string name, std::optional<int64_t> class_id)
    : ConfusionMetric(std::move(name), even_thresholds(num_thresholds)), kind_(kind), value_(value) {
  set_top_k_class_id(std::nullopt, class_id);
  if (!(value >= 0.0 && value <= 1.0)) {
    throw ValueError(fmt::format("Argument `{}` must be in the range [0, 1]. Received: {}={}", value_key(kind),
                                 value_key(kind), value));
  }
}
double RateAtRate::result() const {
  double best = 0.0;  // Keras: max(where(constrained >= value, dependent, 0))
  for (std::size_t i = 0; i < thresholds_.size(); ++i) {
    const double sensitivity = divide_no_nan(tp_[i], tp_[i] + fn_[i]);  // = recall
    const double specificity = divide_no_nan(tn_[i], tn_[i] + fp_[i]);
    const double precision = divide_no_nan(tp_[i], tp_[i] + fp_[i]);
    double constrained = 0, dependent = 0;
    switch (kind_) {
      case Kind::sensitivity_at_specificity: constrained = specificity, dependent = sensitivity; break;
      case Kind::specificity_at_sensitivity: constrained = sensitivity, dependent = specificity; break;
      case Kind::precision_at_recall: constrained = sensitivity, dependent = precision; break;
      case Kind::recall_at_precision: constrained = precision, dependent = sensitivity; break;
    }
    if (constrained >= value_) best = std::max(best, dependent);
  }
  return best;
}
std::string RateAtRate::class_name() const {
  switch (kind_) {
    case Kind::sensitivity_at_specificity: return "SensitivityAtSpecificity";
    case Kind::specificity_at_sensitivity: return "SpecificityAtSensitivity";
    case Kind::precision_at_recall: return "PrecisionAtRecall";
    case Kind::recall_at_precision: return "RecallAtPrecision";
  }
  return "";
}
std::string RateAtRate::get_config() const {
  return config_with(*this, {{"class_id", class_id_ ? ser::json(*class_id_) : ser::json(nullptr)},
                             {"num_thresholds", static_cast<int64_t>(thresholds_.size())},
                             {value_key(kind_), value_}});
}

}  // namespace osprey::keras::metrics
