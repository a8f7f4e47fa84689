// Keras metrics (keras.metrics): stateful means over an epoch.
#pragma once

#include <concepts>
#include <memory>
#include <optional>
#include <string>

#include "osprey/ops.h"
#include "osprey/tensor.h"

namespace osprey::keras::metrics {

/// A stateful metric: update_state() per batch, result() is the exact mean over every sample seen.
class Metric {
 public:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  virtual ~Metric() = default;
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred) = 0;
  double result() const { return count_ > 0 ? total_ / count_ : 0.0; }
  void reset_state() { total_ = count_ = 0.0; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

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
  Accuracy(std::string name, ops::AccuracyKind kind, double threshold = 0.5)
      : Metric(std::move(name)), kind_(kind), threshold_(threshold) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;

 private:
  ops::AccuracyKind kind_;
  double threshold_;
};
/// y_pred > threshold (strict) compared with 0/1 labels.
class BinaryAccuracy : public Accuracy {
 public:
  explicit BinaryAccuracy(double threshold = 0.5, std::string name = "binary_accuracy")
      : Accuracy(std::move(name), ops::AccuracyKind::binary, threshold) {}
};
class CategoricalAccuracy : public Accuracy {
 public:
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy")
      : Accuracy(std::move(name), ops::AccuracyKind::categorical) {}
};
class SparseCategoricalAccuracy : public Accuracy {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy")
      : Accuracy(std::move(name), ops::AccuracyKind::sparse_categorical) {}
};
/// Keras's "accuracy": Binary, Sparse or Categorical, chosen from the shapes of the first batch.
class AutoAccuracy : public Metric {
 public:
  explicit AutoAccuracy(std::string name = "accuracy") : Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  /// The kind chosen, once a batch was seen.
  std::optional<ops::AccuracyKind> kind() const { return kind_; }

 private:
  std::optional<ops::AccuracyKind> kind_;
};
class MeanAbsoluteError : public Metric {
 public:
  explicit MeanAbsoluteError(std::string name = "mean_absolute_error") : Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
};
class MeanSquaredError : public Metric {
 public:
  explicit MeanSquaredError(std::string name = "mean_squared_error") : Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
};

/// A metric by Keras name; its log key is exactly the string given ("accuracy"/"acc", "mae", "mse", class names
/// and their snake_case). Throws ValueError otherwise.
std::shared_ptr<Metric> get(const std::string& name);

}  // namespace osprey::keras::metrics

namespace osprey::keras {
/// A metric given by name or as an object.
class MetricRef {
 public:
  MetricRef(const char* name) : ptr_(metrics::get(name)) {}
  MetricRef(const std::string& name) : ptr_(metrics::get(name)) {}
  template <typename M>
    requires std::derived_from<std::decay_t<M>, metrics::Metric>
  MetricRef(M&& m) : ptr_(std::make_shared<std::decay_t<M>>(std::forward<M>(m))) {}
  const std::shared_ptr<metrics::Metric>& get() const { return ptr_; }

 private:
  std::shared_ptr<metrics::Metric> ptr_;
};
}  // namespace osprey::keras
