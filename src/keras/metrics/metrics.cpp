// Keras's metrics (keras.metrics): stateful means, counts and curves.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "keras/losses/loss_helpers.h"
#include "keras/metrics/metric_helpers.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/losses.h"
#include "osprey/keras/metrics.h"
#include "osprey/keras/saving.h"
#include "osprey/ops.h"

namespace osprey::keras {

namespace metrics {

// ---- sample weights (Keras's update_state(y_true, y_pred, sample_weight)) ----

void Metric::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (!sample_weight.defined()) return update_state(y_true, y_pred);
  if (losses::detail::weighs_positions(sample_weight)) {  // a weight per step or pixel: each position a sample
    const auto rows = losses::detail::position_rows(y_true, y_pred, sample_weight, "Metric", name_, 0);
    return update_state(rows.y_true, rows.y_pred, rows.weights);
  }
  const int64_t n = y_pred.shape().rank() ? y_pred.shape()[0] : 1;
  const auto& ws = sample_weight.shape();
  const bool per_sample = (ws.rank() == 1 && ws[0] == n) || (ws.rank() == 2 && ws[0] == n && ws[1] == 1);
  if (ws.rank() != 0 && !per_sample) {
    throw ValueError(fmt::format("Metric '{}': sample_weight must be a scalar or have shape ({},) or ({}, 1) (one "
                                 "weight per sample of y_pred {}) or y_pred's shape without its last axis (one per "
                                 "position), got {}",
                                 name_, n, n, y_pred.shape().to_string(), ws.to_string()));
  }
  const auto v = detail::host_values(sample_weight);
  std::vector<double> w(static_cast<std::size_t>(n), ws.rank() == 0 ? static_cast<double>(v.at(0)) : 0.0);
  if (ws.rank() != 0) std::copy(v.begin(), v.end(), w.begin());
  update_weighted(y_true, y_pred, w);
}

void Metric::update_weighted(const Tensor&, const Tensor&, const std::vector<double>&) {
  throw ValueError(fmt::format("Metric '{}' ({}) takes no sample weights: list it in compile()'s `metrics`, not "
                               "`weighted_metrics`, or override update_weighted() to weigh its samples",
                               name_, class_name().empty() ? std::string("a metric of one's own") : class_name()));
}

std::vector<double> detail::per_value_weights(const std::vector<double>& w, std::size_t values) {
  if (w.empty()) return {};
  const std::size_t per = std::max<std::size_t>(values / w.size(), 1);
  std::vector<double> out(values);
  for (std::size_t i = 0; i < values; ++i) out[i] = w[std::min(i / per, w.size() - 1)];
  return out;
}

void Metric::accumulate_weighted(const std::vector<double>& per_sample, const std::vector<double>& w) {
  double total = 0.0, count = 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) total += per_sample[i] * w[i], count += w[i];
  accumulate(total, count);
}

void Metric::accumulate_weighted(const Tensor& values, const std::vector<double>& w) {
  const auto n = static_cast<int64_t>(w.size());
  if (values.shape().rank() == 0 || values.shape()[0] != n) {
    throw ValueError(fmt::format("Metric '{}': its values have shape {}, which does not have the {} samples of the "
                                 "sample weights",
                                 name_, values.shape().to_string(), n));
  }
  const auto v = detail::host_values(values);
  const int64_t per = n ? static_cast<int64_t>(v.size()) / n : 0;
  std::vector<double> means(w.size(), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0.0;
    for (int64_t j = 0; j < per; ++j) sum += v[static_cast<std::size_t>(i * per + j)];
    means[static_cast<std::size_t>(i)] = per ? sum / static_cast<double>(per) : 0.0;
  }
  accumulate_weighted(means, w);
}

// One accuracy per sample, on the host: the fraction of its values (binary) or tokens (categorical, sparse) right,
// what Keras's accuracy functions give before its Mean reduces them per sample.
static std::vector<double> accuracy_per_sample(const Tensor& y_true, const Tensor& y_pred, osprey::ops::AccuracyKind kind,
                                               double threshold, const std::string& name) {
  const auto& ps = y_pred.shape();
  const int64_t n = ps.rank() ? ps[0] : 1;
  const auto p = detail::host_values(y_pred), t = detail::host_values(y_true);
  std::vector<double> out(static_cast<std::size_t>(n), 0.0);
  const int64_t v = kind == osprey::ops::AccuracyKind::binary || ps.rank() == 0 ? 1 : ps[-1];
  const int64_t rows = v ? static_cast<int64_t>(p.size()) / v : 0;
  const int64_t want = kind == osprey::ops::AccuracyKind::sparse_categorical ? rows : static_cast<int64_t>(p.size());
  if (static_cast<int64_t>(t.size()) != want || n == 0 || rows % n != 0) {
    throw InvalidArgumentError(fmt::format("{}: y_true of shape {} does not match y_pred of shape {}", name,
                                           y_true.shape().to_string(), ps.to_string()));
  }
  const int64_t per = rows / n;
  auto argmax = [v](const float* row) { return std::max_element(row, row + v) - row; };
  for (int64_t r = 0; r < rows; ++r) {
    bool right = false;
    if (kind == osprey::ops::AccuracyKind::binary) {
      right = (p[r] > static_cast<float>(threshold) ? 1.0f : 0.0f) == t[r];
    } else if (kind == osprey::ops::AccuracyKind::sparse_categorical) {
      right = static_cast<float>(argmax(&p[r * v])) == t[r];
    } else {
      right = argmax(&p[r * v]) == argmax(&t[r * v]);
    }
    out[static_cast<std::size_t>(r / per)] += right ? 1.0 : 0.0;
  }
  for (auto& a : out) a /= static_cast<double>(per);
  return out;
}

// (Sparse) categorical accuracy of token-level predictions (N, T..., V): counted per token, in units of samples
// (a sample's count is the fraction of its tokens right), so that the metric is the tokens' mean, as Keras's.
static Tensor count_per_token(const Tensor& y_true, const Tensor& y_pred, osprey::ops::AccuracyKind kind, double threshold) {
  const auto& ps = y_pred.shape();
  if (kind == osprey::ops::AccuracyKind::binary || ps.rank() < 3) return osprey::ops::accuracy_count(y_true, y_pred, kind, threshold);
  const int64_t v = ps[-1], tokens = y_pred.num_elements() / std::max<int64_t>(v, 1);
  const Tensor p = osprey::ops::reshape(y_pred, Shape({tokens, v}));
  const Tensor t = kind == osprey::ops::AccuracyKind::sparse_categorical && y_true.num_elements() == tokens
                       ? osprey::ops::reshape(y_true, Shape({tokens}))
                       : (y_true.num_elements() == tokens * v ? osprey::ops::reshape(y_true, Shape({tokens, v})) : y_true);
  const double per_sample = static_cast<double>(tokens) / static_cast<double>(std::max<int64_t>(ps[0], 1));
  return osprey::ops::div(osprey::ops::accuracy_count(t, p, kind, threshold), Tensor::scalar(per_sample));
}

void CountedAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  accumulate(batch_count(y_true, y_pred).item(), static_cast<double>(y_pred.shape()[0]));
}
Tensor CountedAccuracy::batch_count(const Tensor& y_true, const Tensor& y_pred) {
  return count_per_token(y_true, y_pred, kind_, threshold_);
}
void CountedAccuracy::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  accumulate_weighted(accuracy_per_sample(y_true, y_pred, kind_, threshold_, name()), w);
}
void AutoAccuracy::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  resolve_kind(y_true, y_pred);
  accumulate_weighted(accuracy_per_sample(y_true, y_pred, *kind_, 0.5, name()), w);
}

void AutoAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  accumulate(batch_count(y_true, y_pred).item(), static_cast<double>(y_pred.shape()[0]));
}
Tensor AutoAccuracy::batch_count(const Tensor& y_true, const Tensor& y_pred) {
  resolve_kind(y_true, y_pred);
  return count_per_token(y_true, y_pred, *kind_, 0.5);
}
void AutoAccuracy::resolve_kind(const Tensor& y_true, const Tensor& y_pred) {
  if (!kind_) {
    // compile_utils.is_binary_or_sparse_categorical: decided by shapes, not by the loss.
    const auto& ts = y_true.shape();
    const auto& ps = y_pred.shape();
    const int64_t last = ps.rank() ? ps[-1] : 1;
    if (last == 1) {
      kind_ = osprey::ops::AccuracyKind::binary;
    } else if (ts.rank() < ps.rank() || (ts.rank() && ts[-1] == 1 && last > 1)) {
      kind_ = osprey::ops::AccuracyKind::sparse_categorical;
    } else {
      kind_ = osprey::ops::AccuracyKind::categorical;
    }
  }
}

void MeanAbsoluteError::update_state(const Tensor& y_true, const Tensor& y_pred) {
  accumulate(osprey::ops::reduce_sum(osprey::ops::mean_absolute_error(y_true, y_pred)).item(), static_cast<double>(y_pred.shape()[0]));
}
void MeanAbsoluteError::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  accumulate_weighted(osprey::ops::mean_absolute_error(y_true, y_pred), w);
}

MeanMetricWrapper::MeanMetricWrapper(MetricFn fn, std::string name) : Metric(std::move(name)), fn_(std::move(fn)) {
  if (!fn_) throw ValueError("MeanMetricWrapper: the metric function is empty");
}

void MeanMetricWrapper::update_state(const Tensor& y_true, const Tensor& y_pred) {
  Tensor v = fn_(y_true, y_pred);
  if (!v.defined()) throw ValueError(fmt::format("Metric '{}' returned an undefined tensor", name()));
  if (v.dtype() != DType::float32) v = osprey::ops::cast(v, DType::float32);
  accumulate(osprey::ops::reduce_sum(v).item(), static_cast<double>(v.num_elements()));
}
void MeanMetricWrapper::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  const Tensor v = fn_(y_true, y_pred);
  if (!v.defined()) throw ValueError(fmt::format("Metric '{}' returned an undefined tensor", name()));
  accumulate_weighted(v, w);
}

void MeanSquaredError::update_state(const Tensor& y_true, const Tensor& y_pred) {
  accumulate(osprey::ops::reduce_sum(osprey::ops::mean_squared_error(y_true, y_pred)).item(), static_cast<double>(y_pred.shape()[0]));
}
void MeanSquaredError::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  accumulate_weighted(osprey::ops::mean_squared_error(y_true, y_pred), w);
}

using detail::divide_no_nan;
using detail::host_values;

void detail::check_threshold_count(int n, int least) {
  if (n < least) {
    throw ValueError(fmt::format("Argument `num_thresholds` must be an integer > {}. Received: {}", least - 1, n));
  }
  // Each threshold keeps four counters and is walked per batch: past a million it is a mistake (or a crafted file).
  constexpr int kMaxThresholds = 1 << 20;
  if (n > kMaxThresholds) {
    throw ValueError(fmt::format("Argument `num_thresholds` must be at most {}. Received: {}", kMaxThresholds, n));
  }
}

std::vector<float> detail::host_values(const Tensor& t) {
  return (t.dtype() == DType::float32 ? t : osprey::ops::cast(t, DType::float32)).to_vector<float>();
}

void RootMeanSquaredError::update_state(const Tensor& y_true, const Tensor& y_pred) {
  const Tensor yt = y_true.dtype() == DType::float32 ? y_true : osprey::ops::cast(y_true, DType::float32);
  const Tensor e = osprey::ops::sub(y_pred, yt.reshape(y_pred.shape()));
  accumulate(osprey::ops::reduce_sum(osprey::ops::square(e)).item(), static_cast<double>(y_pred.num_elements()));
}
void RootMeanSquaredError::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  const Tensor yt = y_true.dtype() == DType::float32 ? y_true : osprey::ops::cast(y_true, DType::float32);
  accumulate_weighted(osprey::ops::square(osprey::ops::sub(y_pred, yt.reshape(y_pred.shape()))), w);
}
double RootMeanSquaredError::result() const { return std::sqrt(Metric::result()); }

TopKCategoricalAccuracy::TopKCategoricalAccuracy(int k, std::string name, bool sparse)
    : Metric(std::move(name)), k_(k), sparse_(sparse) {
  if (k <= 0) throw ValueError(fmt::format("TopKCategoricalAccuracy: k must be positive, got {}", k));
}
void TopKCategoricalAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  const auto h = hits(y_true, y_pred);
  double sum = 0.0;
  for (double x : h) sum += x;
  accumulate(sum, static_cast<double>(h.size()));
}
void TopKCategoricalAccuracy::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  accumulate_weighted(hits(y_true, y_pred), w);
}
std::vector<double> TopKCategoricalAccuracy::hits(const Tensor& y_true, const Tensor& y_pred) const {
  const int64_t n = y_pred.shape().rank() ? y_pred.shape()[0] : 0, d = n ? y_pred.num_elements() / n : 0;
  const int64_t want = sparse_ ? n : n * d;  // one integer label per row, or one-hot labels like y_pred
  if (y_pred.shape().rank() < 2 || y_true.num_elements() != want) {
    throw InvalidArgumentError(fmt::format("{}: y_true of shape {} does not match y_pred of shape {} ({})", name(),
                                           y_true.shape().to_string(), y_pred.shape().to_string(),
                                           sparse_ ? "one integer label per row" : "one-hot labels of y_pred's shape"));
  }
  const auto p = host_values(y_pred), t = host_values(y_true);
  std::vector<double> out(static_cast<std::size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t label = 0;
    if (sparse_) {
      label = static_cast<int64_t>(t[i]);
    } else {
      for (int64_t j = 1; j < d; ++j) {
        if (t[i * d + j] > t[i * d + label]) label = j;
      }
    }
    if (label < 0 || label >= d) continue;
    // in_top_k: the label is in the top k when fewer than k predictions are strictly greater than its own.
    int64_t greater = 0;
    for (int64_t j = 0; j < d; ++j) greater += p[i * d + j] > p[i * d + label];
    out[static_cast<std::size_t>(i)] = greater < k_ ? 1.0 : 0.0;
  }
  return out;
}

ConfusionMetric::ConfusionMetric(std::string name, std::vector<double> thresholds)
    : Metric(std::move(name)), thresholds_(std::move(thresholds)) {
  reset_state();
}
void ConfusionMetric::reset_state() {
  Metric::reset_state();
  tp_.assign(thresholds_.size(), 0.0);
  fp_.assign(thresholds_.size(), 0.0);
  tn_.assign(thresholds_.size(), 0.0);
  fn_.assign(thresholds_.size(), 0.0);
}
void ConfusionMetric::update_state(const Tensor& y_true, const Tensor& y_pred) { update_weighted(y_true, y_pred, {}); }
void ConfusionMetric::set_threshold_list(std::vector<double> thresholds) {
  if (thresholds.empty()) throw ValueError(fmt::format("{}: `thresholds` is an empty list; give at least one", name()));
  for (double t : thresholds) {
    if (!(t >= 0.0 && t <= 1.0)) throw ValueError(fmt::format("Threshold values must be in [0, 1]. Received: {}", t));
  }
  thresholds_ = thresholds;
  threshold_list_ = std::move(thresholds);
  reset_state();
}
double ConfusionMetric::single(const std::vector<double>& values) const {
  if (values.size() != 1) {
    throw ValueError(fmt::format("Metric '{}' gives one value per threshold ({} thresholds): read them with "
                                 "result_values() (fit's logs hold them in Logs::arrays)",
                                 name(), values.size()));
  }
  return values[0];
}
void ConfusionMetric::set_top_k_class_id(std::optional<int> top_k, std::optional<int64_t> class_id) {
  if (top_k && *top_k < 1) throw ValueError(fmt::format("{}: top_k must be at least 1, got {}", name(), *top_k));
  if (class_id && *class_id < 0) {
    throw ValueError(fmt::format("{}: class_id must be a class index (>= 0), got {}", name(), *class_id));
  }
  top_k_ = top_k;
  class_id_ = class_id;
}
// Keras's update_confusion_matrix_variables: with top_k, only the k highest predictions of each row (along the
// last axis; ties to the lower index, as top_k) keep their values, the others become −1e10; with class_id, only
// that column of the last axis counts. Each value of a sample counts its weight (no weights, `w` empty: 1).
void ConfusionMetric::update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) {
  auto p = host_values(y_pred), t = host_values(y_true);
  if (p.size() != t.size()) {
    throw ValueError(fmt::format("{}: y_true has {} values and y_pred {}", name(), t.size(), p.size()));
  }
  const auto& ps = y_pred.shape();
  const int64_t last = ps.rank() ? std::max<int64_t>(ps[-1], 1) : 1;
  if (class_id_ && ps.rank() < 2) {
    throw ValueError(fmt::format("{}: When class_id is provided, y_pred must be a 2D array with shape (num_samples, "
                                 "num_classes), found shape: {}",
                                 name(), ps.to_string()));
  }
  if (class_id_ && *class_id_ >= last) {
    throw ValueError(fmt::format("{}: class_id {} is out of range for y_pred of shape {} ({} classes)", name(),
                                 *class_id_, ps.to_string(), last));
  }
  if (top_k_) {
    constexpr float kNegInf = -1e10f;  // Keras's metrics_utils.NEG_INF
    std::vector<std::size_t> order(static_cast<std::size_t>(last));
    for (std::size_t r = 0; r + static_cast<std::size_t>(last) <= p.size(); r += static_cast<std::size_t>(last)) {
      for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
      const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(*top_k_), order.size());
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                        [&](std::size_t a, std::size_t b) {
                          return p[r + a] > p[r + b] || (p[r + a] == p[r + b] && a < b);
                        });
      for (std::size_t j = k; j < order.size(); ++j) p[r + order[j]] = kNegInf;
    }
  }
  if (class_id_) {
    std::vector<float> pc, tc;
    for (std::size_t r = static_cast<std::size_t>(*class_id_); r < p.size(); r += static_cast<std::size_t>(last)) {
      pc.push_back(p[r]);
      tc.push_back(t[r]);
    }
    p = std::move(pc);
    t = std::move(tc);
  }
  count_compared(p, t, detail::per_value_weights(w, p.size()));
}
void ConfusionMetric::count_compared(const std::vector<float>& p, const std::vector<float>& t,
                                     const std::vector<double>& weights, std::size_t labels) {
  for (std::size_t k = 0; k < thresholds_.size(); ++k) {
    const float thr = static_cast<float>(thresholds_[k]);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const bool positive = p[i] > thr, label = t[i] != 0.0f;  // Keras: cast(y_true, bool)
      (label ? (positive ? tp_ : fn_) : (positive ? fp_ : tn_))[k * labels + i % labels] +=
          weights.empty() ? 1.0 : weights[i];
    }
  }
}
static double default_threshold(std::optional<double> threshold, std::optional<int> top_k) {
  if (threshold && !(*threshold >= 0.0 && *threshold <= 1.0)) {
    throw ValueError(fmt::format("Threshold values must be in [0, 1]. Received: {}", *threshold));
  }
  return threshold.value_or(top_k ? -1e10 : 0.5);  // Keras: NEG_INF with top_k, so that the top k are positive
}
Precision::Precision(std::optional<double> threshold, std::string name, std::optional<int> top_k,
                     std::optional<int64_t> class_id)
    : ConfusionMetric(std::move(name), {default_threshold(threshold, top_k)}), init_threshold_(threshold) {
  set_top_k_class_id(top_k, class_id);
}
Recall::Recall(std::optional<double> threshold, std::string name, std::optional<int> top_k,
               std::optional<int64_t> class_id)
    : ConfusionMetric(std::move(name), {default_threshold(threshold, top_k)}), init_threshold_(threshold) {
  set_top_k_class_id(top_k, class_id);
}
Precision::Precision(std::vector<double> thresholds, std::string name, std::optional<int> top_k,
                     std::optional<int64_t> class_id)
    : ConfusionMetric(std::move(name), {0.5}) {
  set_threshold_list(std::move(thresholds));
  set_top_k_class_id(top_k, class_id);
}
Recall::Recall(std::vector<double> thresholds, std::string name, std::optional<int> top_k,
               std::optional<int64_t> class_id)
    : ConfusionMetric(std::move(name), {0.5}) {
  set_threshold_list(std::move(thresholds));
  set_top_k_class_id(top_k, class_id);
}
std::vector<double> Precision::result_values() const {
  std::vector<double> out;
  for (std::size_t k = 0; k < thresholds_.size(); ++k) out.push_back(divide_no_nan(tp_[k], tp_[k] + fp_[k]));
  return out;
}
std::vector<double> Recall::result_values() const {
  std::vector<double> out;
  for (std::size_t k = 0; k < thresholds_.size(); ++k) out.push_back(divide_no_nan(tp_[k], tp_[k] + fn_[k]));
  return out;
}
double Precision::result() const { return single(result_values()); }
double Recall::result() const { return single(result_values()); }

std::shared_ptr<Metric> get(const std::string& n) {
  std::shared_ptr<Metric> m;
  if (n == "accuracy" || n == "acc") m = std::make_shared<AutoAccuracy>();
  else if (n == "binary_accuracy" || n == "BinaryAccuracy") m = std::make_shared<BinaryAccuracy>();
  else if (n == "categorical_accuracy" || n == "CategoricalAccuracy") m = std::make_shared<CategoricalAccuracy>();
  else if (n == "sparse_categorical_accuracy" || n == "SparseCategoricalAccuracy")
    m = std::make_shared<SparseCategoricalAccuracy>();
  else if (n == "mae" || n == "MAE" || n == "mean_absolute_error" || n == "MeanAbsoluteError")
    m = std::make_shared<MeanAbsoluteError>();
  else if (n == "mse" || n == "MSE" || n == "mean_squared_error" || n == "MeanSquaredError")
    m = std::make_shared<MeanSquaredError>();
  else if (n == "root_mean_squared_error" || n == "RootMeanSquaredError" || n == "rmse")
    m = std::make_shared<RootMeanSquaredError>();
  else if (n == "top_k_categorical_accuracy" || n == "TopKCategoricalAccuracy")
    m = std::make_shared<TopKCategoricalAccuracy>();
  else if (n == "sparse_top_k_categorical_accuracy" || n == "SparseTopKCategoricalAccuracy")
    m = std::make_shared<SparseTopKCategoricalAccuracy>();
  else if (n == "precision" || n == "Precision") m = std::make_shared<Precision>();
  else if (n == "recall" || n == "Recall") m = std::make_shared<Recall>();
  else if (n == "auc" || n == "AUC") m = std::make_shared<AUC>();
  else if (auto more = detail::more_metrics_by_name(n)) m = more;
  else if (std::string registered; auto fn = saving::detail::find_function(n, &registered)) {
    auto wrapper = std::make_shared<MeanMetricWrapper>(fn, registered.substr(registered.find('>') + 1));
    wrapper->set_registered_name(registered);
    m = wrapper;
  } else
    throw ValueError("Could not interpret metric identifier: '" + n +
                     "'. Known metrics: accuracy (acc), binary_accuracy, categorical_accuracy, "
                     "sparse_categorical_accuracy, mae, mse, root_mean_squared_error, top_k_categorical_accuracy, "
                     "sparse_top_k_categorical_accuracy, precision, recall, auc, binary_crossentropy (bce), "
                     "categorical_crossentropy, sparse_categorical_crossentropy, poisson, kl_divergence, "
                     "mean_absolute_percentage_error (mape), mean_squared_logarithmic_error (msle), cosine_similarity, "
                     "log_cosh_error, hinge, squared_hinge, categorical_hinge, pearson_correlation, "
                     "concordance_correlation, true_positives, false_positives, true_negatives, false_negatives, "
                     "f1_score, fbeta_score, r2_score (and their class names).");
  m->set_name(n);  // the log key is exactly the string the user passed
  return m;
}

// ---- Keras configs (metric.get_config()) ----

namespace ser = serialization;

std::string Metric::get_config() const { return ser::dumps(ser::json{{"name", name_}, {"dtype", "float32"}}); }
serialization::json detail::thresholds_config(const std::vector<double>& list, std::optional<double> one) {
  if (!list.empty()) return ser::json(list);
  return one ? ser::json(*one) : ser::json(nullptr);
}
std::string detail::config_with(const Metric& m, std::initializer_list<std::pair<const char*, ser::json>> entries) {
  ser::json c = ser::parse(m.Metric::get_config(), "a metric config");
  for (const auto& [k, v] : entries) c[k] = v;
  return ser::dumps(c);
}
std::string BinaryAccuracy::get_config() const { return detail::config_with(*this, {{"threshold", threshold_}}); }
std::string TopKCategoricalAccuracy::get_config() const { return detail::config_with(*this, {{"k", k_}}); }
// Precision's and Recall's config: Keras writes the thresholds given (None when none was), top_k and class_id.
template <typename T>
static ser::json or_null(const std::optional<T>& v) {
  return v ? ser::json(*v) : ser::json(nullptr);
}
static std::string rate_config(const Metric& m, const std::vector<double>& list, std::optional<double> threshold,
                               std::optional<int> top_k, std::optional<int64_t> class_id) {
  return detail::config_with(m, {{"thresholds", detail::thresholds_config(list, threshold)},
                                 {"top_k", or_null(top_k)},
                                 {"class_id", or_null(class_id)}});
}
std::string Precision::get_config() const {
  return rate_config(*this, threshold_list_, init_threshold_, top_k_, class_id_);
}
std::string Recall::get_config() const { return rate_config(*this, threshold_list_, init_threshold_, top_k_, class_id_); }

}  // namespace metrics
}  // namespace osprey::keras
