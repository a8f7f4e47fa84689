// keras.metrics.AUC (keras/src/metrics/confusion_metrics.py, metrics_utils.update_confusion_matrix_variables):
// confusion counts at thresholds, per label under multi_label, and the area under the ROC, PR or PR-gain curve.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "keras/metrics/metric_helpers.h"
#include "osprey/errors.h"
#include "osprey/keras/metrics.h"

namespace osprey::keras::metrics {

using detail::divide_no_nan;
namespace ser = serialization;

namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon(): the ends below 0 and above 1

// Keras's thresholds: the user's (sorted) or num_thresholds − 2 evenly spaced in (0, 1), with the two ends.
std::vector<double> auc_thresholds(const AUCOptions& o) {
  std::vector<double> t{0.0 - kEpsilon};
  if (o.thresholds) {
    if (o.thresholds->size() > (std::size_t{1} << 20)) {
      throw ValueError(fmt::format("AUC: {} thresholds given; at most 2^20", o.thresholds->size()));
    }
    std::vector<double> given = *o.thresholds;
    for (const double v : given) {
      if (!(v >= 0.0 && v <= 1.0)) {
        throw ValueError(fmt::format("AUC '{}': thresholds must be in [0, 1]. Received: {}", o.name, v));
      }
    }
    std::sort(given.begin(), given.end());
    t.insert(t.end(), given.begin(), given.end());
  } else {
    detail::check_threshold_count(o.num_thresholds, 2);
    for (int i = 0; i < o.num_thresholds - 2; ++i) t.push_back((i + 1) * 1.0 / (o.num_thresholds - 1));
  }
  t.push_back(1.0 + kEpsilon);
  return t;
}

// Keras's is_evenly_distributed_thresholds over [0, thresholds..., 1]: np.allclose with arange(n)/(n − 1) in
// float32 (rtol 1e-5, atol epsilon); fewer than 3 points are not.
bool evenly_distributed(const std::vector<double>& with_ends) {
  const std::size_t n = with_ends.size();
  if (n < 3) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = i == 0 ? 0.0 : i + 1 == n ? 1.0 : with_ends[i];
    const double b = static_cast<float>(i) / static_cast<float>(n - 1);
    if (!(std::abs(a - b) <= kEpsilon + 1e-5 * std::abs(b))) return false;
  }
  return true;
}

const char* curve_name(AUCCurve c) {
  switch (c) {
    case AUCCurve::ROC: return "ROC";
    case AUCCurve::PR: return "PR";
    case AUCCurve::PRGAIN: return "PRGAIN";
  }
  return "";
}
const char* summation_name(AUCSummation s) {
  switch (s) {
    case AUCSummation::interpolation: return "interpolation";
    case AUCSummation::minoring: return "minoring";
    case AUCSummation::majoring: return "majoring";
  }
  return "";
}

}  // namespace

AUC::AUC(int num_thresholds, Curve curve, std::string name)
    : AUC(AUCOptions{.num_thresholds = num_thresholds, .curve = curve, .name = std::move(name)}) {}

AUC::AUC(AUCOptions options) : ConfusionMetric(options.name, auc_thresholds(options)), options_(std::move(options)) {
  if (options_.thresholds) {
    options_.num_thresholds = static_cast<int>(thresholds_.size());
    options_.thresholds = std::vector<double>(thresholds_.begin() + 1, thresholds_.end() - 1);  // sorted
  }
  evenly_ = options_.thresholds ? evenly_distributed(thresholds_) : true;
  if (options_.label_weights) {
    for (const double v : *options_.label_weights) {
      if (!(v >= 0.0) || !std::isfinite(v)) {
        throw ValueError(fmt::format("AUC '{}': label_weights must be non-negative numbers. Received: {}", name(), v));
      }
    }
  }
  if (options_.multi_label) {
    if (options_.num_labels) {
      if (*options_.num_labels < 1 || *options_.num_labels > (int64_t{1} << 20)) {
        throw ValueError(fmt::format("AUC '{}': num_labels must be in [1, 2^20]. Received: {}", name(),
                                     *options_.num_labels));
      }
      labels_ = *options_.num_labels;
    }
  } else {
    if (options_.num_labels) {
      throw ValueError(fmt::format("AUC '{}': `num_labels` is needed only when `multi_label` is True. Received: "
                                   "num_labels={}",
                                   name(), *options_.num_labels));
    }
    labels_ = 1;
  }
  if (options_.multi_label && options_.label_weights && options_.num_labels &&
      static_cast<int64_t>(options_.label_weights->size()) != *options_.num_labels) {
    throw ValueError(fmt::format("AUC '{}': {} label_weights for num_labels={}", name(),
                                 options_.label_weights->size(), *options_.num_labels));
  }
  reset_state();
}

void AUC::reset_state() {
  Metric::reset_state();
  const std::size_t n = thresholds_.size() * static_cast<std::size_t>(labels_);
  for (auto* v : {&tp_, &fp_, &tn_, &fn_}) v->assign(n, 0.0);
}

// Keras's update_confusion_matrix_variables for AUC: labels count when non-zero; sample weights per sample, label
// weights per column of the last axis (multi_label: in result() instead); evenly spaced thresholds take the
// optimised path (predictions clipped to [0, 1], each in bucket max(ceil(p·(T − 1)) − 1, 0) in float32, the counts
// summed from the top bucket down), others compare every prediction with every threshold (p > t, float32).
void AUC::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  auto p = detail::host_values(y_pred);
  const auto t = detail::host_values(y_true);
  if (p.size() != t.size()) {
    throw ValueError(fmt::format("AUC '{}': y_true {} has {} values and y_pred {} {}", name(),
                                 y_true.shape().to_string(), t.size(), y_pred.shape().to_string(), p.size()));
  }
  const auto& ps = y_pred.shape();
  const int64_t columns = ps.rank() >= 2 ? std::max<int64_t>(ps[-1], 1) : 1;
  if (options_.multi_label) {
    if (ps.rank() != 2) {
      throw ValueError(fmt::format("AUC '{}': `y_pred` must have rank 2 when `multi_label=True`. Found rank {}. Full "
                                   "shape received for `y_pred`: {}",
                                   name(), ps.rank(), ps.to_string()));
    }
    if (labels_ == 0) {
      if (options_.label_weights && static_cast<int64_t>(options_.label_weights->size()) != columns) {
        throw ValueError(fmt::format("AUC '{}': {} label_weights for y_pred {} of {} labels", name(),
                                     options_.label_weights->size(), ps.to_string(), columns));
      }
      labels_ = columns;
      reset_state();
    } else if (labels_ != columns) {
      throw ValueError(fmt::format("AUC '{}' counts {} labels (num_labels or its first batch); y_pred {} has {}",
                                   name(), labels_, ps.to_string(), columns));
    }
  } else if (options_.label_weights && static_cast<int64_t>(options_.label_weights->size()) != columns) {
    throw ValueError(fmt::format("AUC '{}': label_weights has {} values, y_pred {} has {} on its last axis; they must "
                                 "match (y_pred of rank 2 or more)",
                                 name(), options_.label_weights->size(), ps.to_string(), columns));
  }
  if (options_.from_logits) {
    for (auto& v : p) v = 1.0f / (1.0f + std::exp(-v));
  }
  const std::size_t L = static_cast<std::size_t>(labels_), T = thresholds_.size(), C = static_cast<std::size_t>(columns);
  std::vector<double> weights = detail::per_value_weights(w, p.size());
  if (options_.label_weights && !options_.multi_label) {  // each column's values weighted by its label's weight
    if (weights.empty()) weights.assign(p.size(), 1.0);
    for (std::size_t i = 0; i < p.size(); ++i) weights[i] *= (*options_.label_weights)[i % C];
  }
  if (!evenly_) return count_compared(p, t, weights, L);
  std::vector<double> tp_bucket(T * L, 0.0), fp_bucket(T * L, 0.0), total_true(L, 0.0), total_false(L, 0.0);
  const float scale = static_cast<float>(T) - 1.0f;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double wt = weights.empty() ? 1.0 : weights[i];
    const std::size_t l = i % L;
    const bool positive = t[i] != 0.0f;
    (positive ? total_true : total_false)[l] += wt;
    if (std::isnan(p[i])) continue;  // in no bucket: negative at every threshold, as the comparisons
    const float v = std::clamp(p[i], 0.0f, 1.0f);
    const auto b = static_cast<std::size_t>(std::max(std::ceil(v * scale) - 1.0f, 0.0f));
    (positive ? tp_bucket : fp_bucket)[b * L + l] += wt;
  }
  for (std::size_t l = 0; l < L; ++l) {
    double tp = 0.0, fp = 0.0;
    for (std::size_t k = T; k-- > 0;) {
      tp += tp_bucket[k * L + l];
      fp += fp_bucket[k * L + l];
      tp_[k * L + l] += tp;
      fp_[k * L + l] += fp;
      fn_[k * L + l] += total_true[l] - tp;
      tn_[k * L + l] += total_false[l] - fp;
    }
  }
}

// One label's area (Keras's AUC.result and interpolate_pr_auc before the mean over labels).
double AUC::label_area(int64_t label) const {
  const std::size_t L = static_cast<std::size_t>(labels_), T = thresholds_.size(), l = static_cast<std::size_t>(label);
  auto at = [&](const std::vector<double>& v, std::size_t k) { return v[k * L + l]; };
  double sum = 0.0;
  if (options_.curve == Curve::PR && options_.summation_method == SummationMethod::interpolation) {
    // Precision varies linearly with the predicted positives between thresholds (Davis & Goadrich).
    for (std::size_t k = 0; k + 1 < T; ++k) {
      const double dtp = at(tp_, k) - at(tp_, k + 1);
      const double p0 = at(tp_, k) + at(fp_, k), p1 = at(tp_, k + 1) + at(fp_, k + 1);
      const double slope = divide_no_nan(dtp, std::max(p0 - p1, 0.0));
      const double intercept = at(tp_, k + 1) - slope * p1;
      const double ratio = p0 > 0 && p1 > 0 ? divide_no_nan(p0, std::max(p1, 0.0)) : 1.0;
      sum += divide_no_nan(slope * (dtp + intercept * std::log(ratio)), std::max(at(tp_, k + 1) + at(fn_, k + 1), 0.0));
    }
    return sum;
  }
  auto point = [&](std::size_t k) -> std::pair<double, double> {  // (x, y) of the curve at threshold k
    const double tp = at(tp_, k), fp = at(fp_, k), tn = at(tn_, k), fn = at(fn_, k);
    const double recall = divide_no_nan(tp, tp + fn);
    switch (options_.curve) {
      case Curve::ROC: return {divide_no_nan(fp, fp + tn), recall};
      case Curve::PR: return {recall, divide_no_nan(tp, tp + fp)};
      case Curve::PRGAIN: {
        const double scaling = divide_no_nan(tp + fn, tn + fp);
        const double recall_gain = tp == 0.0 ? 0.0 : std::max(1.0 - scaling * divide_no_nan(fn, tp), 0.0);
        const double precision_gain = tp == 0.0 ? 1.0 : 1.0 - scaling * divide_no_nan(fp, tp);
        return {recall_gain, precision_gain};
      }
    }
    return {0.0, 0.0};
  };
  for (std::size_t k = 0; k + 1 < T; ++k) {
    const auto [x0, y0] = point(k);
    const auto [x1, y1] = point(k + 1);
    double height = 0.0;
    switch (options_.summation_method) {
      case SummationMethod::interpolation: height = (y0 + y1) / 2.0; break;
      case SummationMethod::minoring: height = std::min(y0, y1); break;
      case SummationMethod::majoring: height = std::max(y0, y1); break;
    }
    sum += (x0 - x1) * height;
  }
  return sum;
}

double AUC::result() const {
  if (!options_.multi_label) return label_area(0);
  if (labels_ == 0) return 0.0;  // no batch yet
  double total = 0.0, weights = 0.0;
  for (int64_t l = 0; l < labels_; ++l) {
    const double lw = options_.label_weights ? (*options_.label_weights)[static_cast<std::size_t>(l)] : 1.0;
    total += label_area(l) * lw;
    weights += lw;
  }
  return options_.label_weights ? divide_no_nan(total, weights) : total / static_cast<double>(labels_);
}

// Keras's get_config; label_weights as a plain list (Keras writes a "__tensor__" object that its own from_config
// refuses; a list loads in both).
std::string AUC::get_config() const {
  ser::json c = ser::parse(detail::config_with(
                               *this, {{"num_thresholds", static_cast<int64_t>(thresholds_.size())},
                                       {"curve", curve_name(options_.curve)},
                                       {"summation_method", summation_name(options_.summation_method)},
                                       {"multi_label", options_.multi_label},
                                       {"num_labels", options_.num_labels ? ser::json(*options_.num_labels) : ser::json()},
                                       {"label_weights", options_.label_weights ? ser::json(*options_.label_weights)
                                                                                : ser::json()},
                                       {"from_logits", options_.from_logits}}),
                           "AUC's config");
  if (options_.thresholds) c["thresholds"] = *options_.thresholds;
  return ser::dumps(c);
}

}  // namespace osprey::keras::metrics
