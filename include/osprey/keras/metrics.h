// Keras metrics (keras.metrics): stateful means over an epoch.
#pragma once

#include <concepts>
#include <functional>
#include <initializer_list>
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
  /// Keras's update_state(y_true, y_pred, sample_weight): one weight per sample ((N,), (N, 1) or a scalar for
  /// all), applied to every value of its sample as Keras's weighted metrics do (a mean metric: Σ w·value / Σ w;
  /// a count: each sample counts w). Weights of more than one value per sample, (N, d1, ..., dk) with y_pred
  /// (N, d1, ..., dk, ...) and y_true starting with the same axes, weigh each position (a sequence's step, an
  /// image's pixel) as Keras's: each position a sample with its weight. Undefined weights: update_state(y_true,
  /// y_pred). Keras's built-in metrics take weights; a metric of one's own takes them by overriding
  /// update_weighted() (else a ValueError). A subclass that declares update_state(y_true, y_pred) adds
  /// `using Metric::update_state;` to keep this one.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight);
  virtual double result() const { return count_ > 0 ? total_ / count_ : 0.0; }
  /// Every value of Keras's result: {result()} for most metrics; one per class for F1Score/FBetaScore without an
  /// average and R2Score without an aggregation, one per threshold for Precision, Recall and the confusion counts
  /// at a list of several thresholds (scalar_result() false: fit's logs hold them in Logs::arrays).
  virtual std::vector<double> result_values() const { return {result()}; }
  /// Whether Keras's result is one number (result()); false: an array (result_values()).
  virtual bool scalar_result() const { return true; }
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
  /// A batch with one weight per sample (`w` has y_pred's batch size, checked). The default refuses: a ValueError
  /// that names the metric.
  virtual void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w);
  /// Keras's Mean with sample weights: `values` (N, ...) reduced to one mean per sample, total += Σ w·mean,
  /// count += Σ w.
  void accumulate_weighted(const Tensor& values, const std::vector<double>& w);
  /// As accumulate_weighted, from one value per sample already on the host.
  void accumulate_weighted(const std::vector<double>& per_sample, const std::vector<double>& w);

 private:
  std::string name_;
  double total_ = 0.0, count_ = 0.0;
};

/// Fraction of samples whose prediction matches the label, for one kind of labels (counted by one op).
class CountedAccuracy : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  CountedAccuracy(std::string name, osprey::ops::AccuracyKind kind, double threshold = 0.5)
      : Metric(std::move(name)), kind_(kind), threshold_(threshold) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)
  Tensor batch_count(const Tensor& y_true, const Tensor& y_pred) override;

 private:
  osprey::ops::AccuracyKind kind_;

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;
  double threshold_;
};
/// y_pred > threshold (strict) compared with 0/1 labels.
class BinaryAccuracy : public CountedAccuracy {
 public:
  explicit BinaryAccuracy(double threshold = 0.5, std::string name = "binary_accuracy")
      : CountedAccuracy(std::move(name), osprey::ops::AccuracyKind::binary, threshold) {}
  std::string class_name() const override { return "BinaryAccuracy"; }
  std::string get_config() const override;
  double threshold() const { return threshold_; }
};
class CategoricalAccuracy : public CountedAccuracy {
 public:
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy")
      : CountedAccuracy(std::move(name), osprey::ops::AccuracyKind::categorical) {}
  std::string class_name() const override { return "CategoricalAccuracy"; }
};
class SparseCategoricalAccuracy : public CountedAccuracy {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy")
      : CountedAccuracy(std::move(name), osprey::ops::AccuracyKind::sparse_categorical) {}
  std::string class_name() const override { return "SparseCategoricalAccuracy"; }
};
/// Keras's "accuracy": Binary, Sparse or Categorical, chosen from the shapes of the first batch.
class AutoAccuracy : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit AutoAccuracy(std::string name = "accuracy") : Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)
  Tensor batch_count(const Tensor& y_true, const Tensor& y_pred) override;
  /// The kind chosen, once a batch was seen.
  std::optional<osprey::ops::AccuracyKind> kind() const { return kind_; }

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;

 private:
  void resolve_kind(const Tensor& y_true, const Tensor& y_pred);
  std::optional<osprey::ops::AccuracyKind> kind_;
};
class MeanAbsoluteError : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit MeanAbsoluteError(std::string name = "mean_absolute_error") : Metric(std::move(name)) {}
  std::string class_name() const override { return "MeanAbsoluteError"; }
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;
};
class MeanSquaredError : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit MeanSquaredError(std::string name = "mean_squared_error") : Metric(std::move(name)) {}
  std::string class_name() const override { return "MeanSquaredError"; }
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;
};

/// sqrt(mean((y − p)²)) over every element seen (keras.metrics.RootMeanSquaredError).
class RootMeanSquaredError : public Metric {
 public:
  explicit RootMeanSquaredError(std::string name = "root_mean_squared_error") : Metric(std::move(name)) {}
  std::string class_name() const override { return "RootMeanSquaredError"; }
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)
  double result() const override;

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;
};

/// Whether the true class is among the k highest predictions; one-hot labels (TopKCategoricalAccuracy) or
/// integer labels (SparseTopKCategoricalAccuracy).
class TopKCategoricalAccuracy : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit TopKCategoricalAccuracy(int k = 5, std::string name = "top_k_categorical_accuracy", bool sparse = false);
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)
  std::string class_name() const override {
    return sparse_ ? "SparseTopKCategoricalAccuracy" : "TopKCategoricalAccuracy";
  }
  std::string get_config() const override;
  int k() const { return k_; }

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;

 private:
  std::vector<double> hits(const Tensor& y_true, const Tensor& y_pred) const;
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
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)
  void reset_state() override;

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;
  /// Keras's top_k (only the k highest predictions of each row can be positive; the others are −1e10) and
  /// class_id (only that class of the last axis is counted); checked: k >= 1, class_id >= 0.
  void set_top_k_class_id(std::optional<int> top_k, std::optional<int64_t> class_id);
  /// Keras's comparison update: at each threshold k, value i (prediction > threshold; a non-zero label is
  /// positive) adds its weight (`weights` one per value; empty: 1) to the counts at [k·labels + i % labels].
  void count_compared(const std::vector<float>& p, const std::vector<float>& t, const std::vector<double>& weights,
                      std::size_t labels = 1);
  /// Keras's thresholds given as a list (`thresholds=[0.3, 0.5]`): checked (non-empty, each in [0, 1]) and kept
  /// for get_config(); the metric then gives one value per threshold (one value for a list of one).
  void set_threshold_list(std::vector<double> thresholds);
  /// `values`' only value, or a ValueError naming the threshold count (result() of a metric with several).
  double single(const std::vector<double>& values) const;
  std::vector<double> thresholds_, tp_, fp_, tn_, fn_;
  std::vector<double> threshold_list_;  ///< the thresholds given as a list (empty: one or none given)
  std::optional<int> top_k_;
  std::optional<int64_t> class_id_;

 public:
  /// One value per threshold when a list of several was given (Logs::arrays in fit's logs).
  bool scalar_result() const override { return threshold_list_.size() <= 1; }
};
/// tp / (tp + fp) at `threshold` (0.5).
class Precision : public ConfusionMetric {
 public:
  /// Keras's Precision(thresholds, top_k, class_id): `threshold` 0.5 when not given (with top_k: every one of the
  /// k highest predictions of a row is positive).
  explicit Precision(std::optional<double> threshold = std::nullopt, std::string name = "precision",
                     std::optional<int> top_k = std::nullopt, std::optional<int64_t> class_id = std::nullopt);
  /// Keras's Precision(thresholds=[...]): one precision per threshold (result_values(); fit logs an array).
  explicit Precision(std::vector<double> thresholds, std::string name = "precision",
                     std::optional<int> top_k = std::nullopt, std::optional<int64_t> class_id = std::nullopt);
  double result() const override;
  std::vector<double> result_values() const override;
  std::string class_name() const override { return "Precision"; }
  std::string get_config() const override;

 private:
  std::optional<double> init_threshold_;
};
/// tp / (tp + fn) at `threshold` (0.5), with Keras's top_k and class_id as Precision's.
class Recall : public ConfusionMetric {
 public:
  explicit Recall(std::optional<double> threshold = std::nullopt, std::string name = "recall",
                  std::optional<int> top_k = std::nullopt, std::optional<int64_t> class_id = std::nullopt);
  /// Keras's Recall(thresholds=[...]): one recall per threshold.
  explicit Recall(std::vector<double> thresholds, std::string name = "recall",
                  std::optional<int> top_k = std::nullopt, std::optional<int64_t> class_id = std::nullopt);
  double result() const override;
  std::vector<double> result_values() const override;
  std::string class_name() const override { return "Recall"; }
  std::string get_config() const override;

 private:
  std::optional<double> init_threshold_;
};
/// AUC's curve: ROC (true-positive rate over false-positive rate), PR (precision over recall) or PRGAIN
/// (precision gain over recall gain, Flach & Kull).
enum class AUCCurve { ROC, PR, PRGAIN };
/// How AUC sums the area between two thresholds: the trapezoid ("interpolation"; PR interpolates precision as
/// Davis & Goadrich), the lower ("minoring") or the higher ("majoring") of the two heights.
enum class AUCSummation { interpolation, minoring, majoring };
/// keras.metrics.AUC's arguments.
struct AUCOptions {
  int num_thresholds = 200;
  AUCCurve curve = AUCCurve::ROC;
  AUCSummation summation_method = AUCSummation::interpolation;
  std::string name = "auc";
  /// Thresholds of one's own in [0, 1] (sorted; num_thresholds is then their count + 2); none: num_thresholds − 2
  /// evenly spaced ones. Either way −1e-7 and 1 + 1e-7 are added at the ends.
  std::optional<std::vector<double>> thresholds = std::nullopt;
  /// Counts per label (y_pred of rank 2: one column a label); the result is the mean of the labels' AUCs (weighted
  /// by label_weights). Without it every value counts in one curve (label_weights then weigh each column's values).
  bool multi_label = false;
  /// The labels' count under multi_label (else taken from the first batch); a ValueError without multi_label.
  std::optional<int64_t> num_labels = std::nullopt;
  /// One non-negative weight per label (y_pred's last axis).
  std::optional<std::vector<double>> label_weights = std::nullopt;
  /// y_pred holds logits (a sigmoid makes them probabilities).
  bool from_logits = false;
};
/// keras.metrics.AUC: area under the ROC, PR or PR-gain curve from confusion counts at the thresholds. Evenly
/// spaced thresholds (the default) count each value once in its bucket, as Keras's optimised update (predictions
/// clipped to [0, 1]); thresholds of one's own compare every value with every threshold.
class AUC : public ConfusionMetric {
 public:
  using Curve = AUCCurve;
  using SummationMethod = AUCSummation;
  explicit AUC(int num_thresholds = 200, Curve curve = Curve::ROC, std::string name = "auc");
  explicit AUC(AUCOptions options);
  double result() const override;
  void reset_state() override;
  std::string class_name() const override { return "AUC"; }
  std::string get_config() const override;
  /// Keras's AUC.thresholds: every threshold, with the two ends.
  const std::vector<double>& thresholds() const { return thresholds_; }

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;

 private:
  double label_area(int64_t label) const;
  AUCOptions options_;
  bool evenly_ = true;   // thresholds evenly spaced: the bucket update
  int64_t labels_ = 0;   // columns of the counts (multi_label: y_pred's labels, 0 until known; else 1)
};

/// A metric function: (y_true, y_pred) -> values whose mean over every sample seen is the metric.
using MetricFn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
/// A metric made of a function or lambda (keras.metrics.MeanMetricWrapper): the mean of its values over every
/// batch seen.
class MeanMetricWrapper : public Metric {
 public:
  bool weighs_by_mask() const override { return true; }
  explicit MeanMetricWrapper(MetricFn fn, std::string name = "custom_metric");
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)
  /// The function's registered name ("package>name"), as LossFunctionWrapper's.
  const std::string& registered_name() const { return registered_name_; }
  void set_registered_name(std::string n) { registered_name_ = std::move(n); }

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;

 private:
  MetricFn fn_;
  std::string registered_name_;
};

// ---- Keras's mean-of-values metrics (keras.metrics.MeanMetricWrapper subclasses) ----

/// The mean of a function's values over every element seen, with a Keras class name and config: the metrics that
/// wrap a loss function (Poisson, KLDivergence, the crossentropies, MAPE, MSLE, LogCoshError, the hinges), the
/// positive CosineSimilarity, Accuracy (exact equality) and the correlations.
class KerasMeanMetric : public MeanMetricWrapper {
 public:
  /// `config`: the options Keras's get_config() adds to name and dtype, as JSON text ("" for none).
  KerasMeanMetric(MetricFn fn, std::string name, std::string class_name, std::string config = "");
  std::string class_name() const override { return class_name_; }
  std::string get_config() const override;

 private:
  std::string class_name_, config_;
};
/// keras.metrics.Accuracy: how often y_pred equals y_true exactly, element by element.
class Accuracy : public KerasMeanMetric {
 public:
  explicit Accuracy(std::string name = "accuracy");
};
class Poisson : public KerasMeanMetric {
 public:
  explicit Poisson(std::string name = "poisson");
};
class KLDivergence : public KerasMeanMetric {
 public:
  explicit KLDivergence(std::string name = "kl_divergence");
};
struct CrossentropyMetricOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;
};
class BinaryCrossentropy : public KerasMeanMetric {
 public:
  explicit BinaryCrossentropy(CrossentropyMetricOptions o = {}, std::string name = "binary_crossentropy");
};
class CategoricalCrossentropy : public KerasMeanMetric {
 public:
  explicit CategoricalCrossentropy(CrossentropyMetricOptions o = {}, std::string name = "categorical_crossentropy");
};
/// Integer labels; label_smoothing does not apply.
class SparseCategoricalCrossentropy : public KerasMeanMetric {
 public:
  /// `ignore_class`: labels equal to it count as a loss of 0 (Keras's metric: their zeros stay in the mean).
  explicit SparseCategoricalCrossentropy(bool from_logits = false, std::string name = "sparse_categorical_crossentropy",
                                         std::optional<int64_t> ignore_class = std::nullopt);
};
class MeanAbsolutePercentageError : public KerasMeanMetric {
 public:
  explicit MeanAbsolutePercentageError(std::string name = "mean_absolute_percentage_error");
};
class MeanSquaredLogarithmicError : public KerasMeanMetric {
 public:
  explicit MeanSquaredLogarithmicError(std::string name = "mean_squared_logarithmic_error");
};
/// Σ normalize(y)·normalize(p) along `axis` (1 for the same direction).
class CosineSimilarity : public KerasMeanMetric {
 public:
  explicit CosineSimilarity(std::string name = "cosine_similarity", int axis = -1);
};
class LogCoshError : public KerasMeanMetric {
 public:
  explicit LogCoshError(std::string name = "logcosh");
};
class Hinge : public KerasMeanMetric {
 public:
  explicit Hinge(std::string name = "hinge");
};
class SquaredHinge : public KerasMeanMetric {
 public:
  explicit SquaredHinge(std::string name = "squared_hinge");
};
class CategoricalHinge : public KerasMeanMetric {
 public:
  explicit CategoricalHinge(std::string name = "categorical_hinge");
};
/// Per sample, the Pearson correlation of y_true and y_pred along `axis` (the mean of the standardized products).
class PearsonCorrelation : public KerasMeanMetric {
 public:
  explicit PearsonCorrelation(std::string name = "pearson_correlation", int axis = -1);
};
/// Per sample, Keras's concordance correlation along `axis`.
class ConcordanceCorrelation : public KerasMeanMetric {
 public:
  explicit ConcordanceCorrelation(std::string name = "concordance_correlation", int axis = -1);
};

// ---- confusion counts at thresholds ----

/// One count of the confusion matrix at one threshold (Keras's default 0.5 when none is given), or one per
/// threshold of a list: TruePositives, FalsePositives, TrueNegatives, FalseNegatives.
class ConfusionCount : public ConfusionMetric {
 public:
  enum class Kind { true_positives, false_positives, true_negatives, false_negatives };
  ConfusionCount(Kind kind, std::optional<double> threshold, std::string name);
  /// Keras's thresholds=[...]: one count per threshold.
  ConfusionCount(Kind kind, std::vector<double> thresholds, std::string name);
  double result() const override;
  std::vector<double> result_values() const override;
  std::string class_name() const override;
  std::string get_config() const override;

 private:
  Kind kind_;
  std::optional<double> threshold_;
};
class TruePositives : public ConfusionCount {
 public:
  explicit TruePositives(std::optional<double> threshold = std::nullopt, std::string name = "true_positives")
      : ConfusionCount(Kind::true_positives, threshold, std::move(name)) {}
  explicit TruePositives(std::vector<double> thresholds, std::string name = "true_positives")
      : ConfusionCount(Kind::true_positives, std::move(thresholds), std::move(name)) {}
};
class FalsePositives : public ConfusionCount {
 public:
  explicit FalsePositives(std::optional<double> threshold = std::nullopt, std::string name = "false_positives")
      : ConfusionCount(Kind::false_positives, threshold, std::move(name)) {}
  explicit FalsePositives(std::vector<double> thresholds, std::string name = "false_positives")
      : ConfusionCount(Kind::false_positives, std::move(thresholds), std::move(name)) {}
};
class TrueNegatives : public ConfusionCount {
 public:
  explicit TrueNegatives(std::optional<double> threshold = std::nullopt, std::string name = "true_negatives")
      : ConfusionCount(Kind::true_negatives, threshold, std::move(name)) {}
  explicit TrueNegatives(std::vector<double> thresholds, std::string name = "true_negatives")
      : ConfusionCount(Kind::true_negatives, std::move(thresholds), std::move(name)) {}
};
class FalseNegatives : public ConfusionCount {
 public:
  explicit FalseNegatives(std::optional<double> threshold = std::nullopt, std::string name = "false_negatives")
      : ConfusionCount(Kind::false_negatives, threshold, std::move(name)) {}
  explicit FalseNegatives(std::vector<double> thresholds, std::string name = "false_negatives")
      : ConfusionCount(Kind::false_negatives, std::move(thresholds), std::move(name)) {}
};

/// The best of one rate while another stays at least `value`, over num_thresholds thresholds spread evenly on
/// [0, 1] (Keras's SensitivitySpecificityBase): SensitivityAtSpecificity, SpecificityAtSensitivity,
/// PrecisionAtRecall, RecallAtPrecision.
class RateAtRate : public ConfusionMetric {
 public:
  enum class Kind { sensitivity_at_specificity, specificity_at_sensitivity, precision_at_recall, recall_at_precision };
  RateAtRate(Kind kind, double value, int num_thresholds, std::string name,
             std::optional<int64_t> class_id = std::nullopt);
  double result() const override;
  std::string class_name() const override;
  std::string get_config() const override;

 private:
  Kind kind_;
  double value_;
};
class SensitivityAtSpecificity : public RateAtRate {
 public:
  explicit SensitivityAtSpecificity(double specificity, int num_thresholds = 200,
                                    std::string name = "sensitivity_at_specificity",
                                    std::optional<int64_t> class_id = std::nullopt)
      : RateAtRate(Kind::sensitivity_at_specificity, specificity, num_thresholds, std::move(name), class_id) {}
};
class SpecificityAtSensitivity : public RateAtRate {
 public:
  explicit SpecificityAtSensitivity(double sensitivity, int num_thresholds = 200,
                                    std::string name = "specificity_at_sensitivity",
                                    std::optional<int64_t> class_id = std::nullopt)
      : RateAtRate(Kind::specificity_at_sensitivity, sensitivity, num_thresholds, std::move(name), class_id) {}
};
class PrecisionAtRecall : public RateAtRate {
 public:
  explicit PrecisionAtRecall(double recall, int num_thresholds = 200, std::string name = "precision_at_recall",
                             std::optional<int64_t> class_id = std::nullopt)
      : RateAtRate(Kind::precision_at_recall, recall, num_thresholds, std::move(name), class_id) {}
};
class RecallAtPrecision : public RateAtRate {
 public:
  explicit RecallAtPrecision(double precision, int num_thresholds = 200, std::string name = "recall_at_precision",
                             std::optional<int64_t> class_id = std::nullopt)
      : RateAtRate(Kind::recall_at_precision, precision, num_thresholds, std::move(name), class_id) {}
};

// ---- scores with one value per class (F-beta, R², IoU) ----

/// A metric whose Keras result can be one value per class (F1Score without an average, R2Score without an
/// aggregation): result_values() gives them (fit and evaluate log them in Logs::arrays); result() is the one value
/// of an averaged or aggregated score (a ValueError otherwise).
class VectorMetric : public Metric {
 public:
  using Metric::Metric;
  std::vector<double> result_values() const override = 0;
  double result() const override;
};

/// keras.metrics.FBetaScore over (batch, classes) labels and predictions: a class is predicted where y_pred >
/// threshold, or (no threshold) where it is the row's maximum; average "micro", "macro", "weighted" or "" (none:
/// one score per class, result_values()).
class FBetaScore : public VectorMetric {
 public:
  explicit FBetaScore(std::string average = "", double beta = 1.0, std::optional<double> threshold = std::nullopt,
                      std::string name = "fbeta_score");
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)
  void reset_state() override;
  std::vector<double> result_values() const override;
  bool scalar_result() const override { return !average_.empty(); }
  std::string class_name() const override { return "FBetaScore"; }
  std::string get_config() const override;

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;
  std::string average_;
  double beta_;
  std::optional<double> threshold_;

 private:
  std::vector<double> tp_, fp_, fn_, support_;
};
class F1Score : public FBetaScore {
 public:
  explicit F1Score(std::string average = "", std::optional<double> threshold = std::nullopt,
                   std::string name = "f1_score")
      : FBetaScore(std::move(average), 1.0, threshold, std::move(name)) {}
  std::string class_name() const override { return "F1Score"; }
  std::string get_config() const override;
};

/// keras.metrics.R2Score over (batch, outputs): per output 1 − SSres/SStot, aggregated "uniform_average",
/// "variance_weighted_average" or "" (none: one per output); num_regressors > 0 gives the adjusted R².
class R2Score : public VectorMetric {
 public:
  explicit R2Score(std::string class_aggregation = "uniform_average", int num_regressors = 0,
                   std::string name = "r2_score");
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)
  void reset_state() override;
  std::vector<double> result_values() const override;
  bool scalar_result() const override { return !aggregation_.empty(); }
  std::string class_name() const override { return "R2Score"; }
  std::string get_config() const override;

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;

 private:
  std::string aggregation_;
  int num_regressors_;
  double samples_ = 0;
  std::vector<double> sum_, squared_sum_, residual_, count_;
};

/// Intersection over union from a confusion matrix of integer classes (keras.metrics.IoU and its family): the mean
/// IoU of target_class_ids, classes absent from both labels and predictions left out.
class IoU : public Metric {
 public:
  struct Options {
    std::vector<int64_t> target_class_ids;
    std::optional<int64_t> ignore_class;
    bool sparse_y_true = true;   ///< false: one-hot labels (argmax over `axis`)
    bool sparse_y_pred = true;   ///< false: scores (argmax over `axis`)
    int axis = -1;
  };
  IoU(int64_t num_classes, Options o, std::string name = "io_u");
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
  using Metric::update_state;  // update_state(y_true, y_pred, sample_weight)
  void reset_state() override;
  double result() const override;
  std::string class_name() const override { return class_name_; }
  std::string get_config() const override;
  /// The accumulated (num_classes, num_classes) confusion matrix, rows the labels.
  const std::vector<double>& confusion_matrix() const { return cm_; }

 protected:
  void update_weighted(const Tensor& y_true, const Tensor& y_pred, const std::vector<double>& w) override;
  /// BinaryIoU: predictions at or above `threshold` are class 1.
  void set_binary_threshold(double t) { binary_threshold_ = t; }
  /// IoU's config without the keys a subclass's Keras config does not have.
  std::string config_without(std::initializer_list<const char*> keys) const;
  void set_class_name(std::string c) { class_name_ = std::move(c); }
  int64_t num_classes_;
  Options opt_;

 private:
  std::optional<double> binary_threshold_;
  std::string class_name_ = "IoU";
  std::vector<double> cm_;
};
/// The IoU averaged over every class.
class MeanIoU : public IoU {
 public:
  explicit MeanIoU(int64_t num_classes, std::string name = "mean_io_u", std::optional<int64_t> ignore_class = {},
                   bool sparse_y_true = true, bool sparse_y_pred = true, int axis = -1);
  std::string get_config() const override;
};
/// Binary labels, predictions thresholded (>= threshold is class 1); target_class_ids from {0, 1}.
class BinaryIoU : public IoU {
 public:
  explicit BinaryIoU(std::vector<int64_t> target_class_ids = {0, 1}, double threshold = 0.5,
                     std::string name = "binary_io_u");
  std::string get_config() const override;

 private:
  double threshold_;
};
/// One-hot labels (and scores, unless sparse_y_pred).
class OneHotIoU : public IoU {
 public:
  OneHotIoU(int64_t num_classes, std::vector<int64_t> target_class_ids, std::string name = "one_hot_io_u",
            std::optional<int64_t> ignore_class = {}, bool sparse_y_pred = false, int axis = -1);
  std::string get_config() const override;
};
class OneHotMeanIoU : public IoU {
 public:
  explicit OneHotMeanIoU(int64_t num_classes, std::string name = "one_hot_mean_io_u",
                         std::optional<int64_t> ignore_class = {}, bool sparse_y_pred = false, int axis = -1);
  std::string get_config() const override;
};

/// A metric by Keras name; its log key is exactly the string given ("accuracy"/"acc", "mae", "mse", class names
/// and their snake_case). Throws ValueError otherwise.
std::shared_ptr<Metric> get(const std::string& name);

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
