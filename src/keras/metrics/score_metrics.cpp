// Keras's F-scores, R² and intersection-over-union metrics (keras/src/metrics/{f_score,regression,iou}_metrics.py):
// per-class or per-output sums over every batch, combined when the result is asked for.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "keras/metrics/metric_helpers.h"
#include "osprey/errors.h"
#include "osprey/keras/metrics.h"
#include "osprey/keras/ops.h"

namespace osprey::keras::metrics {

using detail::config_with;
using detail::host_values;
namespace ser = serialization;
constexpr double kEpsilon = 1e-7;

double VectorMetric::result() const {
  const auto v = result_values();
  if (!scalar_result() || v.size() != 1) {
    throw ValueError(fmt::format("Metric '{}' ({}) gives one value per class ({} values): read them with "
                                 "result_values() (fit's logs hold them in Logs::arrays), or give it an average "
                                 "(F1Score/FBetaScore: average \"micro\", \"macro\" or \"weighted\"; R2Score: "
                                 "class_aggregation \"uniform_average\" or \"variance_weighted_average\") for one value.",
                                 name(), class_name(), v.size()));
  }
  return v[0];
}

// ---- F-beta ----

FBetaScore::FBetaScore(std::string average, double beta, std::optional<double> threshold, std::string name)
    : VectorMetric(std::move(name)), average_(std::move(average)), beta_(beta), threshold_(threshold) {
  if (average_ != "" && average_ != "micro" && average_ != "macro" && average_ != "weighted") {
    throw ValueError(fmt::format("Invalid `average` argument value. Expected one of: {{None, 'micro', 'macro', "
                                 "'weighted'}}. Received: average={}",
                                 average_));
  }
  if (!(beta > 0)) throw ValueError(fmt::format("Invalid `beta` argument value. It should be > 0. Received: beta={}", beta));
  if (threshold && !(*threshold > 0.0 && *threshold <= 1.0)) {
    throw ValueError(fmt::format("Invalid `threshold` argument value. It should verify 0 < threshold <= 1. Received: "
                                 "threshold={}",
                                 *threshold));
  }
}
void FBetaScore::reset_state() {
  Metric::reset_state();
  tp_.clear(), fp_.clear(), fn_.clear(), support_.clear();
}
void FBetaScore::update_state(const Tensor& y_true, const Tensor& y_pred) { update_weighted(y_true, y_pred, {}); }
// Keras's sums over the batch, each row times its sample's weight (none given: 1).
void FBetaScore::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  const auto& ts = y_true.shape();
  const auto& ps = y_pred.shape();
  if (ps.rank() != 2 || ts.rank() != 2 || ts[1] != ps[1] || ts[0] != ps[0]) {
    throw ValueError(fmt::format("FBetaScore expects 2D inputs with shape (batch_size, output_dim). Received input "
                                 "shapes: y_pred.shape={} and y_true.shape={}.",
                                 ps.to_string(), ts.to_string()));
  }
  const int64_t n = ps[0], classes = ps[1];
  if (classes == 0) throw ValueError(fmt::format("FBetaScore: y_pred of shape {} has no classes", ps.to_string()));
  if (tp_.empty()) {
    tp_.assign(classes, 0.0), fp_.assign(classes, 0.0), fn_.assign(classes, 0.0), support_.assign(classes, 0.0);
  } else if (static_cast<int64_t>(tp_.size()) != classes) {
    throw ValueError(fmt::format("{}: this batch has {} classes, earlier batches {}", name(), classes, tp_.size()));
  }
  const auto t = host_values(y_true), p = host_values(y_pred);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = &p[i * classes];
    const float top = *std::max_element(row, row + classes);
    for (int64_t j = 0; j < classes; ++j) {
      // No threshold: the row's maximum is the prediction (an all-zero row predicts nothing).
      const double pred = threshold_ ? (row[j] > static_cast<float>(*threshold_)) : (row[j] >= top && std::abs(row[j]) > 1e-9f);
      const double label = t[i * classes + j], weight = w.empty() ? 1.0 : w[static_cast<std::size_t>(i)];
      tp_[j] += weight * pred * label;
      fp_[j] += weight * pred * (1 - label);
      fn_[j] += weight * (1 - pred) * label;
      support_[j] += weight * label;
    }
  }
}
std::vector<double> FBetaScore::result_values() const {
  if (tp_.empty()) return {0.0};
  std::vector<double> tp = tp_, fp = fp_, fn = fn_;
  if (average_ == "micro") {  // Keras sums over classes too (axis=None)
    tp = {std::accumulate(tp_.begin(), tp_.end(), 0.0)};
    fp = {std::accumulate(fp_.begin(), fp_.end(), 0.0)};
    fn = {std::accumulate(fn_.begin(), fn_.end(), 0.0)};
  }
  const double b2 = beta_ * beta_;
  std::vector<double> f(tp.size());
  for (std::size_t j = 0; j < tp.size(); ++j) {
    const double precision = tp[j] / (tp[j] + fp[j] + kEpsilon), recall = tp[j] / (tp[j] + fn[j] + kEpsilon);
    f[j] = precision * recall / (b2 * precision + recall + kEpsilon) * (1 + b2);
  }
  if (average_.empty()) return f;
  if (average_ == "weighted") {
    const double total = std::accumulate(support_.begin(), support_.end(), 0.0) + kEpsilon;
    double s = 0;
    for (std::size_t j = 0; j < f.size(); ++j) s += f[j] * support_[j] / total;
    return {s};
  }
  return {std::accumulate(f.begin(), f.end(), 0.0) / static_cast<double>(f.size())};
}
std::string FBetaScore::get_config() const {
  return config_with(*this, {{"average", average_.empty() ? ser::json(nullptr) : ser::json(average_)},
                             {"beta", beta_},
                             {"threshold", threshold_ ? ser::json(*threshold_) : ser::json(nullptr)}});
}
std::string F1Score::get_config() const {  // FBetaScore's without beta (always 1)
  ser::json c = ser::parse(FBetaScore::get_config(), "F1Score's config");
  c.erase("beta");
  return ser::dumps(c);
}

// ---- R² ----

R2Score::R2Score(std::string class_aggregation, int num_regressors, std::string name)
    : VectorMetric(std::move(name)), aggregation_(std::move(class_aggregation)), num_regressors_(num_regressors) {
  if (aggregation_ != "" && aggregation_ != "uniform_average" && aggregation_ != "variance_weighted_average") {
    throw ValueError(fmt::format("Invalid value for argument `class_aggregation`. Expected one of (None, "
                                 "'uniform_average', 'variance_weighted_average'). Received: class_aggregation={}",
                                 aggregation_));
  }
  if (num_regressors < 0) {
    throw ValueError(fmt::format("Invalid value for argument `num_regressors`. Expected a value >= 0. Received: "
                                 "num_regressors={}",
                                 num_regressors));
  }
}
void R2Score::reset_state() {
  Metric::reset_state();
  samples_ = 0;
  sum_.clear(), squared_sum_.clear(), residual_.clear(), count_.clear();
}
void R2Score::update_state(const Tensor& y_true, const Tensor& y_pred) { update_weighted(y_true, y_pred, {}); }
// Keras's weighted sums: each row's values times its sample's weight, the count per output Σ w.
void R2Score::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  Shape ts = y_true.shape(), ps = y_pred.shape();
  if (ts.rank() == ps.rank() + 1 && ts[-1] == 1) ts = Shape(std::vector<int64_t>(ts.dims().begin(), ts.dims().end() - 1));
  if (ps.rank() == ts.rank() + 1 && ps[-1] == 1) ps = Shape(std::vector<int64_t>(ps.dims().begin(), ps.dims().end() - 1));
  if (ps.rank() == 1 && ts.rank() == 1) ps = ts = Shape({ts[0], 1});  // Keras expands rank-1 pairs to columns
  if (ps.rank() != 2 || ts.rank() != 2 || ps != ts) {
    throw ValueError(fmt::format("R2Score expects 2D inputs with shape (batch_size, output_dim). Received input "
                                 "shapes: y_pred.shape={} and y_true.shape={}.",
                                 y_pred.shape().to_string(), y_true.shape().to_string()));
  }
  const int64_t n = ps[0], outputs = ps[1];
  if (sum_.empty()) {
    sum_.assign(outputs, 0.0), squared_sum_.assign(outputs, 0.0), residual_.assign(outputs, 0.0);
    count_.assign(outputs, 0.0);
  } else if (static_cast<int64_t>(sum_.size()) != outputs) {
    throw ValueError(fmt::format("{}: this batch has {} outputs, earlier batches {}", name(), outputs, sum_.size()));
  }
  const auto t = host_values(y_true), p = host_values(y_pred);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < outputs; ++j) {
      const double y = t[i * outputs + j], e = y - p[i * outputs + j];
      const double weight = w.empty() ? 1.0 : w[static_cast<std::size_t>(i)];
      sum_[j] += weight * y, squared_sum_[j] += weight * y * y, residual_[j] += weight * e * e, count_[j] += weight;
    }
  }
  samples_ += static_cast<double>(n * outputs);
}
std::vector<double> R2Score::result_values() const {
  if (sum_.empty()) return {std::nan("")};
  const std::size_t k = sum_.size();
  std::vector<double> raw(k), total(k);
  for (std::size_t j = 0; j < k; ++j) {
    const double mean = sum_[j] / count_[j];
    total[j] = squared_sum_[j] - sum_[j] * mean;
    raw[j] = 1 - residual_[j] / total[j];
    if (std::isinf(raw[j])) raw[j] = 0.0;
  }
  std::vector<double> r2 = raw;
  if (aggregation_ == "uniform_average") {
    r2 = {std::accumulate(raw.begin(), raw.end(), 0.0) / static_cast<double>(k)};
  } else if (aggregation_ == "variance_weighted_average") {
    double num = 0, den = 0;
    for (std::size_t j = 0; j < k; ++j) num += total[j] * raw[j], den += total[j];
    r2 = {num / den};
  }
  const double n = samples_, p = num_regressors_;
  if (num_regressors_ != 0 && p < n - 1) {  // the adjusted R² (Keras falls back to R² otherwise, with a warning)
    for (double& v : r2) v = 1 - (1 - v) * (n - 1) / (n - p - 1);
  }
  return r2;
}
std::string R2Score::get_config() const {
  return config_with(*this, {{"class_aggregation", aggregation_.empty() ? ser::json(nullptr) : ser::json(aggregation_)},
                             {"num_regressors", num_regressors_}});
}

// ---- IoU ----

namespace {
constexpr int64_t kMaxIoUClasses = 4096;  // a (classes × classes) matrix of doubles: 128 MiB at most
std::vector<int64_t> all_classes(int64_t n) {
  std::vector<int64_t> ids(std::max<int64_t>(n, 0));
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}
// Class ids from one-hot rows or scores: the argmax over the last axis (Keras's axis=-1).
std::vector<int64_t> argmax_rows(const Tensor& x, int axis, const std::string& metric) {
  const int rank = x.shape().rank();
  if (rank == 0 || (axis != -1 && axis != rank - 1)) {
    throw ValueError(fmt::format("{}: one-hot labels and scores are read along the last axis (axis=-1); got axis={} "
                                 "for shape {}",
                                 metric, axis, x.shape().to_string()));
  }
  const int64_t c = x.shape()[-1], rows = c ? x.num_elements() / c : 0;
  const auto v = host_values(x);
  std::vector<int64_t> out(rows);
  for (int64_t i = 0; i < rows; ++i) out[i] = std::max_element(&v[i * c], &v[i * c] + c) - &v[i * c];
  return out;
}
// A class id given as a number: truncated as Keras's cast to int; NaN and values beyond int64 are out of bounds.
int64_t class_of(float v) { return std::isfinite(v) && std::abs(v) < 9e18f ? static_cast<int64_t>(v) : -1; }
}  // namespace

IoU::IoU(int64_t num_classes, Options o, std::string name)
    : Metric(std::move(name)), num_classes_(num_classes), opt_(std::move(o)) {
  if (num_classes < 1 || num_classes > kMaxIoUClasses) {
    throw ValueError(fmt::format("{}: num_classes must be in [1, {}], got {}", this->name(), kMaxIoUClasses, num_classes));
  }
  if (opt_.target_class_ids.empty()) throw ValueError(fmt::format("{}: target_class_ids is empty", this->name()));
  for (int64_t id : opt_.target_class_ids) {
    if (id < 0 || id >= num_classes) {
      throw ValueError(fmt::format("Target class id {} is out of range, which is [0, {}).", id, num_classes));
    }
  }
  reset_state();
}
void IoU::reset_state() {
  Metric::reset_state();
  cm_.assign(static_cast<std::size_t>(num_classes_ * num_classes_), 0.0);
}
void IoU::update_state(const Tensor& y_true, const Tensor& y_pred) { update_weighted(y_true, y_pred, {}); }
// Each (label, prediction) pair adds its sample's weight to the confusion matrix (none given: 1).
void IoU::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  std::vector<int64_t> t, p;
  if (opt_.sparse_y_true) {
    for (float v : host_values(y_true)) t.push_back(class_of(v));
  } else {
    t = argmax_rows(y_true, opt_.axis, name());
  }
  if (binary_threshold_) {
    for (float v : host_values(y_pred)) p.push_back(v >= static_cast<float>(*binary_threshold_) ? 1 : 0);
  } else if (opt_.sparse_y_pred) {
    for (float v : host_values(y_pred)) p.push_back(class_of(v));
  } else {
    p = argmax_rows(y_pred, opt_.axis, name());
  }
  if (t.size() != p.size()) {
    throw ValueError(fmt::format("{}: y_true (shape {}) gives {} classes and y_pred (shape {}) {}", name(),
                                 y_true.shape().to_string(), t.size(), y_pred.shape().to_string(), p.size()));
  }
  const auto weights = detail::per_value_weights(w, t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    const bool in_bounds = t[i] >= 0 && t[i] < num_classes_ && p[i] >= 0 && p[i] < num_classes_;
    if (!in_bounds || (opt_.ignore_class && t[i] == *opt_.ignore_class)) continue;
    // Keras keeps integer counts: it casts the weights to int64 (fractions truncated).
    const double weight = weights.empty() ? 1.0 : std::trunc(weights[i]);
    cm_[static_cast<std::size_t>(t[i] * num_classes_ + p[i])] += weight;
  }
}
double IoU::result() const {
  double sum = 0, valid = 0;
  for (int64_t c : opt_.target_class_ids) {
    double row = 0, col = 0;
    for (int64_t k = 0; k < num_classes_; ++k) row += cm_[c * num_classes_ + k], col += cm_[k * num_classes_ + c];
    const double tp = cm_[c * num_classes_ + c], denominator = row + col - tp;
    if (denominator > 1e-9) sum += tp / (denominator + kEpsilon), valid += 1;  // absent classes count 0
  }
  return sum / (valid + kEpsilon);
}
static ser::json optional_int(const std::optional<int64_t>& v) { return v ? ser::json(*v) : ser::json(nullptr); }
std::string IoU::get_config() const { return config_without({}); }
std::string IoU::config_without(std::initializer_list<const char*> keys) const {
  ser::json c = ser::parse(config_with(*this, {{"dtype", "int64"},
                                              {"num_classes", num_classes_},
                                              {"target_class_ids", opt_.target_class_ids},
                                              {"ignore_class", optional_int(opt_.ignore_class)},
                                              {"sparse_y_true", opt_.sparse_y_true},
                                              {"sparse_y_pred", opt_.sparse_y_pred},
                                              {"axis", opt_.axis}}),
                           "IoU's config");
  for (const char* k : keys) c.erase(k);
  return ser::dumps(c);
}

MeanIoU::MeanIoU(int64_t num_classes, std::string name, std::optional<int64_t> ignore_class, bool sparse_y_true,
                 bool sparse_y_pred, int axis)
    : IoU(num_classes,
          {.target_class_ids = all_classes(num_classes), .ignore_class = ignore_class, .sparse_y_true = sparse_y_true,
           .sparse_y_pred = sparse_y_pred, .axis = axis},
          std::move(name)) {
  set_class_name("MeanIoU");
}
std::string MeanIoU::get_config() const { return config_without({"target_class_ids"}); }

BinaryIoU::BinaryIoU(std::vector<int64_t> target_class_ids, double threshold, std::string name)
    : IoU(2,
          {.target_class_ids = std::move(target_class_ids), .ignore_class = std::nullopt, .sparse_y_true = true,
           .sparse_y_pred = true, .axis = -1},
          std::move(name)), threshold_(threshold) {
  set_binary_threshold(threshold);
  set_class_name("BinaryIoU");
}
std::string BinaryIoU::get_config() const {
  ser::json c = ser::parse(config_without({"num_classes", "ignore_class", "sparse_y_true", "sparse_y_pred", "axis"}),
                           "BinaryIoU's config");
  c["threshold"] = threshold_;
  return ser::dumps(c);
}

OneHotIoU::OneHotIoU(int64_t num_classes, std::vector<int64_t> target_class_ids, std::string name,
                     std::optional<int64_t> ignore_class, bool sparse_y_pred, int axis)
    : IoU(num_classes,
          {.target_class_ids = std::move(target_class_ids), .ignore_class = ignore_class, .sparse_y_true = false,
           .sparse_y_pred = sparse_y_pred, .axis = axis},
          std::move(name)) {
  set_class_name("OneHotIoU");
}
std::string OneHotIoU::get_config() const { return config_without({"sparse_y_true"}); }

OneHotMeanIoU::OneHotMeanIoU(int64_t num_classes, std::string name, std::optional<int64_t> ignore_class,
                             bool sparse_y_pred, int axis)
    : IoU(num_classes,
          {.target_class_ids = all_classes(num_classes), .ignore_class = ignore_class, .sparse_y_true = false,
           .sparse_y_pred = sparse_y_pred, .axis = axis},
          std::move(name)) {
  set_class_name("OneHotMeanIoU");
}
std::string OneHotMeanIoU::get_config() const {
  return config_without({"target_class_ids", "sparse_y_true"});
}

}  // namespace osprey::keras::metrics
