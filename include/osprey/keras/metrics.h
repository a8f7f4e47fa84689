// Keras metrics (keras.metrics): stateful means over an epoch.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/ops.h"
#include "osprey/tensor.h"

namespace osprey::keras::metrics {

/// A stateful metric: update_state() per batch, result() is the exact mean over every sample seen.
class Metric {
 public:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  virtual ~Metric() = default;
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred) = 0;
  virtual double result() const { return count_ > 0 ? total_ / count_ : 0.0; }
  virtual void reset_state() { total_ = count_ = 0.0; }
  /// A metric whose state is a count over samples (the accuracies) gives a batch's count as a 1-element tensor:
  /// a training step split in halves computes it inside each half, recorded with the step, and adds the halves'
  /// counts with add_count() (exact: whole numbers). Undefined, the default: update_state() on the whole batch.
  virtual Tensor batch_count(const Tensor& /*y_true*/, const Tensor& /*y_pred*/) { return Tensor(); }
  /// Whether the metric is a mean of per-sample values that Keras weights by an output's mask (its
  /// MeanMetricWrapper family: the accuracies, MAE, MSE, top-k, metric functions): fit and evaluate give such a
  /// metric the unmasked steps of a masked output only, each step a sample.
  virtual bool weighs_by_mask() const { return false; }
  /// Adds `count` over `samples` samples (what update_state() adds for a batch whose batch_count() is `count`).
  void add_count(double count, double samples) { accumulate(count, samples); }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  /// Keras's class name ("BinaryAccuracy"); "" for a metric that only a string names ("accuracy") or that has no
  /// Keras class (a function wrapped by MeanMetricWrapper).
  virtual std::string class_name() const { return ""; }
  /// Keras's metric.get_config() as JSON text: name, dtype and the metric's options (a compile_config keeps it).
  virtual std::string get_config() const;

 protected:
  /// Adds `sum` over `n` samples (Keras's Mean: total += Σ values, count += n).
  void accumulate(double sum, double n) {
    total_ += sum;
    count_ += n;
  }

 private:
  std::string name_;
  double total_ = 0.0, count_ = 0.0;
};

/// Fraction of samples whose prediction matches the label, for one kind of labels.
class Accuracy : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  Accuracy(std::string name, osprey::ops::AccuracyKind kind, double threshold = 0.5)
      : Metric(std::move(name)), kind_(kind), threshold_(threshold) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  Tensor batch_count(const Tensor& y_true, const Tensor& y_pred) override;

 private:
  osprey::ops::AccuracyKind kind_;

 protected:
  double threshold_;
};
/// y_pred > threshold (strict) compared with 0/1 labels.
class BinaryAccuracy : public Accuracy {
 public:
  explicit BinaryAccuracy(double threshold = 0.5, std::string name = "binary_accuracy")
      : Accuracy(std::move(name), osprey::ops::AccuracyKind::binary, threshold) {}
  std::string class_name() const override { return "BinaryAccuracy"; }
  std::string get_config() const override;
  double threshold() const { return threshold_; }
};
class CategoricalAccuracy : public Accuracy {
 public:
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy")
      : Accuracy(std::move(name), osprey::ops::AccuracyKind::categorical) {}
  std::string class_name() const override { return "CategoricalAccuracy"; }
};
class SparseCategoricalAccuracy : public Accuracy {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy")
      : Accuracy(std::move(name), osprey::ops::AccuracyKind::sparse_categorical) {}
  std::string class_name() const override { return "SparseCategoricalAccuracy"; }
};
/// Keras's "accuracy": Binary, Sparse or Categorical, chosen from the shapes of the first batch.
class AutoAccuracy : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit AutoAccuracy(std::string name = "accuracy") : Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  Tensor batch_count(const Tensor& y_true, const Tensor& y_pred) override;
  /// The kind chosen, once a batch was seen.
  std::optional<osprey::ops::AccuracyKind> kind() const { return kind_; }

 private:
  std::optional<osprey::ops::AccuracyKind> kind_;
};
class MeanAbsoluteError : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit MeanAbsoluteError(std::string name = "mean_absolute_error") : Metric(std::move(name)) {}
  std::string class_name() const override { return "MeanAbsoluteError"; }
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
};
class MeanSquaredError : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit MeanSquaredError(std::string name = "mean_squared_error") : Metric(std::move(name)) {}
  std::string class_name() const override { return "MeanSquaredError"; }
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
};

/// sqrt(mean((y − p)²)) over every element seen (keras.metrics.RootMeanSquaredError).
class RootMeanSquaredError : public Metric {
 public:
  explicit RootMeanSquaredError(std::string name = "root_mean_squared_error") : Metric(std::move(name)) {}
  std::string class_name() const override { return "RootMeanSquaredError"; }
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  double result() const override;
};

/// Whether the true class is among the k highest predictions; one-hot labels (TopKCategoricalAccuracy) or
/// integer labels (SparseTopKCategoricalAccuracy).
class TopKCategoricalAccuracy : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit TopKCategoricalAccuracy(int k = 5, std::string name = "top_k_categorical_accuracy", bool sparse = false);
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  std::string class_name() const override {
    return sparse_ ? "SparseTopKCategoricalAccuracy" : "TopKCategoricalAccuracy";
  }
  std::string get_config() const override;
  int k() const { return k_; }

 private:
  int k_;
  bool sparse_;
};
class SparseTopKCategoricalAccuracy : public TopKCategoricalAccuracy {
 public:
  explicit SparseTopKCategoricalAccuracy(int k = 5, std::string name = "sparse_top_k_categorical_accuracy")
      : TopKCategoricalAccuracy(k, std::move(name), true) {}
};

/// Confusion counts at thresholds (predictions strictly greater than a threshold count as positive).
class ConfusionMetric : public Metric {
 public:
  ConfusionMetric(std::string name, std::vector<double> thresholds);
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  void reset_state() override;

 protected:
  std::vector<double> thresholds_, tp_, fp_, tn_, fn_;
};
/// tp / (tp + fp) at `threshold` (0.5).
class Precision : public ConfusionMetric {
 public:
  explicit Precision(double threshold = 0.5, std::string name = "precision")
      : ConfusionMetric(std::move(name), {threshold}) {}
  double result() const override;
  std::string class_name() const override { return "Precision"; }
  std::string get_config() const override;
};
/// tp / (tp + fn) at `threshold` (0.5).
class Recall : public ConfusionMetric {
 public:
  explicit Recall(double threshold = 0.5, std::string name = "recall") : ConfusionMetric(std::move(name), {threshold}) {}
  double result() const override;
  std::string class_name() const override { return "Recall"; }
  std::string get_config() const override;
};
/// Area under the ROC or precision-recall curve from confusion counts at num_thresholds thresholds
/// (0 − 1e-7, i/(n−1), 1 + 1e-7), summed as Keras's "interpolation" method.
class AUC : public ConfusionMetric {
 public:
  enum class Curve { ROC, PR };
  explicit AUC(int num_thresholds = 200, Curve curve = Curve::ROC, std::string name = "auc");
  double result() const override;
  std::string class_name() const override { return "AUC"; }
  std::string get_config() const override;

 private:
  Curve curve_;
};

/// A metric by Keras name; its log key is exactly the string given ("accuracy"/"acc", "mae", "mse", class names
/// and their snake_case). Throws ValueError otherwise.
std::shared_ptr<Metric> get(const std::string& name);

/// A metric function: (y_true, y_pred) -> values whose mean over every sample seen is the metric.
using MetricFn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
/// A metric made of a function or lambda (keras.metrics.MeanMetricWrapper): the mean of its values over every
/// batch seen.
class MeanMetricWrapper : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit MeanMetricWrapper(MetricFn fn, std::string name = "custom_metric");
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  /// The function's registered name ("package>name"), as LossFunctionWrapper's.
  const std::string& registered_name() const { return registered_name_; }
  void set_registered_name(std::string n) { registered_name_ = std::move(n); }

 private:
  MetricFn fn_;
  std::string registered_name_;
};

}  // namespace osprey::keras::metrics

namespace osprey::keras {
/// A metric given by name, as an object, or as a function or lambda of (y_true, y_pred) (a MeanMetricWrapper
/// named "custom_metric"; wrap it yourself to name it).
class MetricRef {
 public:
  MetricRef(const char* name) : ptr_(metrics::get(name)), spelled_(name) {}
  MetricRef(const std::string& name) : ptr_(metrics::get(name)), spelled_(name) {}
  /// A metric object shared with the caller.
  explicit MetricRef(std::shared_ptr<metrics::Metric> metric) : ptr_(std::move(metric)) {}
  template <typename M>
    requires std::derived_from<std::decay_t<M>, metrics::Metric>
  MetricRef(M&& m) : ptr_(std::make_shared<std::decay_t<M>>(std::forward<M>(m))) {}
  template <typename F>
    requires(!std::derived_from<std::decay_t<F>, metrics::Metric> && !std::convertible_to<F, std::string> &&
             std::is_invocable_r_v<Tensor, F, const Tensor&, const Tensor&>)
  MetricRef(F&& fn) : ptr_(std::make_shared<metrics::MeanMetricWrapper>(metrics::MetricFn(std::forward<F>(fn)))) {}
  const std::shared_ptr<metrics::Metric>& get() const { return ptr_; }
  /// The string the user passed, if any (Keras's compile_config keeps it as given).
  const std::string& spelled() const { return spelled_; }

 private:
  std::shared_ptr<metrics::Metric> ptr_;
  std::string spelled_;
};
}  // namespace osprey::keras
