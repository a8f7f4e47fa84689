// Keras losses (keras.losses) with the "sum_over_batch_size" reduction.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/tensor.h"

namespace osprey::keras::losses {

/// How per-sample losses become the loss (Keras's `reduction`): "sum_over_batch_size" (the mean; the default),
/// "sum", "mean_with_sample_weight" (Σ w·l / Σ w), "none" (the per-sample values).
enum class Reduction { sum_over_batch_size, sum, mean_with_sample_weight, none };

/// A loss: per-sample values, reduced as its reduction says (Keras's "sum_over_batch_size" by default).
class Loss {
 public:
  explicit Loss(std::string name) : name_(std::move(name)) {}
  virtual ~Loss() = default;
  /// Per-sample losses, shape (N,).
  virtual Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const = 0;
  /// Their mean over the batch (sum_over_batch_size without weights): osprey::ops::reduce_mean(per_sample(...)); the
  /// kernel-backed losses compute the same value as one fused op (osprey::ops::batch_mean_loss).
  virtual Tensor batch_mean(const Tensor& y_true, const Tensor& y_pred) const;
  /// The reduced loss (a scalar unless the reduction is none).
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred) const;
  /// With one weight per sample: Σ(w·l) divided by the element count (not Σw) for sum_over_batch_size. Weights of
  /// more than one value per sample, (N, d1, ..., dk) — a weight per step of a sequence, per pixel of an image —
  /// weigh the values at those positions as Keras's (y_pred is (N, d1, ..., dk, ...) with at least one more axis,
  /// the one the loss reduces; y_true starts with the same axes): Σ(w·l) over the positions divided by their count
  /// (sum_over_batch_size) or by Σw (mean_with_sample_weight); reduction none gives the (N, d1, ..., dk) values.
  /// A scalar (or one-element) weight weighs every sample; mean_with_sample_weight then divides by it, as Keras.
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const;
  Reduction reduction() const { return reduction_; }
  void set_reduction(Reduction r) { reduction_ = r; }
  const std::string& name() const { return name_; }
  /// Keras's class name ("BinaryCrossentropy").
  virtual std::string class_name() const = 0;
  /// Keras's loss.get_config() as JSON text: name, reduction and the loss's options (a compile_config keeps it).
  virtual std::string get_config() const;
  /// The mask Keras's loss function puts on its values (SparseCategoricalCrossentropy's ignore_class): float32 1/0,
  /// shape (N, elements per sample); undefined for losses that make none. The reductions weigh by it as Keras's
  /// apply_mask: sum_over_batch_size divides by the unmasked elements' count, mean_with_sample_weight by Σ w·mask.
  virtual Tensor loss_mask(const Tensor& y_true, const Tensor& y_pred) const;
  /// The same, given `values` = per_sample(y_true, y_pred) where the caller has them (undefined otherwise): what
  /// the reductions call, so that a loss whose mask comes from its own values (Circle's) computes them once. The
  /// default is loss_mask(y_true, y_pred).
  virtual Tensor loss_mask(const Tensor& y_true, const Tensor& y_pred, const Tensor& values) const;
  /// How many values Keras's loss function gives each sample (per_sample() is their mean): 1 for (N, d)
  /// predictions, each step's or pixel's for (N, d1, ..., dk, d) (a loss over the last axis), those left by a
  /// CosineSimilarity/Dice/Tversky axis; 0 where Keras gives one value for the whole batch (Dice/Tversky with no
  /// axis). The "sum" and "mean_with_sample_weight" reductions count every one of them, as Keras's.
  virtual double keras_values_per_sample(const Tensor& y_true, const Tensor& y_pred) const;
  /// Whether loss_mask() gives a mask (then a batch's loss is not the mean of its halves' losses).
  virtual bool masks_values() const { return false; }
  /// Whether a sample's loss depends on the other samples of its batch (Circle's pairs): then a batch is never
  /// computed in parts.
  virtual bool mixes_samples() const { return false; }

 private:
  std::string name_;
  Reduction reduction_ = Reduction::sum_over_batch_size;
};

struct CrossentropyOptions {
  double label_smoothing = 0.0;
  /// y_pred holds logits (no sigmoid/softmax applied): computed from them without clipping.
  bool from_logits = false;
};
/// −mean(y·log(p) + (1−y)·log(1−p)) with p clipped to [1e-7, 1−1e-7].
class BinaryCrossentropy : public Loss {
 public:
  explicit BinaryCrossentropy(CrossentropyOptions o = {});
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  Tensor batch_mean(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "BinaryCrossentropy"; }
  std::string get_config() const override;
  const CrossentropyOptions& options() const { return opt_; }

 private:
  CrossentropyOptions opt_;
};
/// −Σ y·log(p/Σp), p clipped to [1e-7, 1−1e-7]; one-hot labels.
class CategoricalCrossentropy : public Loss {
 public:
  explicit CategoricalCrossentropy(CrossentropyOptions o = {});
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  Tensor batch_mean(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "CategoricalCrossentropy"; }
  std::string get_config() const override;
  const CrossentropyOptions& options() const { return opt_; }

 private:
  CrossentropyOptions opt_;
};
/// Categorical crossentropy with integer labels (shape (N,) or (N, 1)).
class SparseCategoricalCrossentropy : public Loss {
 public:
  struct Options {
    bool from_logits = false;
    /// Keras's ignore_class (a segmentation map's "void" label, often -1 or 255): labels equal to it give no loss
    /// and no gradient, and the mean is over the other labels only.
    std::optional<int64_t> ignore_class = std::nullopt;
  };
  SparseCategoricalCrossentropy();
  explicit SparseCategoricalCrossentropy(Options o);
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  Tensor batch_mean(const Tensor& y_true, const Tensor& y_pred) const override;
  Tensor loss_mask(const Tensor& y_true, const Tensor& y_pred) const override;
  bool masks_values() const override { return opt_.ignore_class.has_value(); }
  std::string class_name() const override { return "SparseCategoricalCrossentropy"; }
  std::string get_config() const override;
  const Options& options() const { return opt_; }

 private:
  Options opt_{};
};
/// mean((y − p)²) over the last axis.
class MeanSquaredError : public Loss {
 public:
  MeanSquaredError();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  Tensor batch_mean(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "MeanSquaredError"; }
};
/// mean(|y − p|) over the last axis.
class MeanAbsoluteError : public Loss {
 public:
  MeanAbsoluteError();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  Tensor batch_mean(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "MeanAbsoluteError"; }
};

/// 100·mean(|y − p| / max(|y|, 1e-7)) over the last axis.
class MeanAbsolutePercentageError : public Loss {
 public:
  MeanAbsolutePercentageError();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "MeanAbsolutePercentageError"; }
};
/// mean(0.5·e² where |e| ≤ δ, else δ·|e| − 0.5·δ²) over the last axis (δ = 1 by default).
class Huber : public Loss {
 public:
  explicit Huber(double delta = 1.0);
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "Huber"; }
  std::string get_config() const override;
  double delta() const { return delta_; }

 private:
  double delta_;
};
/// mean(log(cosh(p − y))) over the last axis, computed as x + softplus(−2x) − log 2.
class LogCosh : public Loss {
 public:
  LogCosh();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "LogCosh"; }
};
/// mean(max(1 − y·p, 0)) over the last axis; labels 0/1 are converted to −1/1.
class Hinge : public Loss {
 public:
  Hinge();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "Hinge"; }
};
/// Σ y·log(y/p) over the last axis, y and p clipped to [1e-7, 1].
class KLDivergence : public Loss {
 public:
  KLDivergence();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "KLDivergence"; }
};

/// Connectionist temporal classification (keras.losses.CTC): y_true (batch, max_label) integer labels, 0 the blank
/// and the padding (each row's label length is its count of nonzero labels), y_pred (batch, frames, classes) logits
/// (no softmax); every frame counts. Per sample the CTC loss (keras::ops::ctc_loss). ValueError for other ranks.
class CTC : public Loss {
 public:
  CTC();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "CTC"; }
  double keras_values_per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
};

/// mean(y_pred − y_true·log(y_pred + 1e-7)) over the last axis (keras.losses.Poisson).
class Poisson : public Loss {
 public:
  Poisson();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "Poisson"; }
};
/// mean((log(max(p, 1e-7) + 1) − log(max(y, 1e-7) + 1))²) over the last axis.
class MeanSquaredLogarithmicError : public Loss {
 public:
  MeanSquaredLogarithmicError();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "MeanSquaredLogarithmicError"; }
};
/// −Σ normalize(y)·normalize(p) along `axis` (L2 normalization, the norm at least 1e-7): −1 for the same direction,
/// 0 for orthogonal vectors or a zero vector.
class CosineSimilarity : public Loss {
 public:
  explicit CosineSimilarity(int axis = -1);
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "CosineSimilarity"; }
  double keras_values_per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string get_config() const override;
  int axis() const { return axis_; }

 private:
  int axis_;
};
/// mean(max(1 − y·p, 0)²) over the last axis; labels 0/1 are converted to −1/1 as Hinge's.
class SquaredHinge : public Loss {
 public:
  SquaredHinge();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "SquaredHinge"; }
};
/// max(max((1 − y)·p) − Σ y·p + 1, 0) over the last axis (one-hot labels).
class CategoricalHinge : public Loss {
 public:
  CategoricalHinge();
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "CategoricalHinge"; }
};

/// The focal crossentropies' options (Keras's defaults): (1 − p_t)^gamma scales each term; apply_class_balancing
/// (binary only) weights class 1 by alpha and class 0 by 1 − alpha; the categorical one always multiplies by alpha.
struct FocalOptions {
  bool apply_class_balancing = false;
  double alpha = 0.25;
  double gamma = 2.0;
  bool from_logits = false;
  double label_smoothing = 0.0;
};
/// mean((1 − p_t)^γ · bce) over the last axis, p_t = y·p + (1 − y)(1 − p) (keras.losses.BinaryFocalCrossentropy).
class BinaryFocalCrossentropy : public Loss {
 public:
  explicit BinaryFocalCrossentropy(FocalOptions o = {});
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "BinaryFocalCrossentropy"; }
  std::string get_config() const override;
  const FocalOptions& options() const { return opt_; }

 private:
  FocalOptions opt_;
};
/// Σ −α·(1 − p)^γ·y·log(p) over the last axis, p normalized to sum 1 and clipped to [1e-7, 1 − 1e-7].
class CategoricalFocalCrossentropy : public Loss {
 public:
  explicit CategoricalFocalCrossentropy(FocalOptions o = {});
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "CategoricalFocalCrossentropy"; }
  std::string get_config() const override;
  const FocalOptions& options() const { return opt_; }

 private:
  FocalOptions opt_;
};
/// (1 − p^q)/q with p the predicted probability of the true class; integer labels of shape (N,) or (N, 1) (Keras
/// 3.15 broadcasts (N, 1) labels against every row, an (N, N) result; Osprey reads them as (N,), as Keras
/// documents).
class CategoricalGeneralizedCrossEntropy : public Loss {
 public:
  explicit CategoricalGeneralizedCrossEntropy(double q = 0.5);
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "CategoricalGeneralizedCrossEntropy"; }
  std::string get_config() const override;
  double q() const { return q_; }

 private:
  double q_;
};
/// 1 − Tversky index, TP / (TP + α·FP + β·FN + 1e-7), with sums over `axis` (empty: every axis, Keras's None: one
/// value for the whole batch, which each sample then carries).
class Tversky : public Loss {
 public:
  explicit Tversky(double alpha = 0.5, double beta = 0.5, std::vector<int> axis = {});
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "Tversky"; }
  double keras_values_per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string get_config() const override;

 private:
  std::vector<int> axis_;
  double alpha_, beta_;
};
/// 1 − 2·Σ y·p / (Σ y + Σ p + 1e-7) over `axis`, as Tversky's (Keras's dice).
class Dice : public Loss {
 public:
  explicit Dice(std::vector<int> axis = {});
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "Dice"; }
  double keras_values_per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string get_config() const override;

 private:
  std::vector<int> axis_;
};

/// Keras's Circle loss (Sun et al. 2020) for metric learning: y_true holds each sample's class id ((N,) or (N, 1),
/// integers; floats are truncated), y_pred its embedding (N, D), meant to be L2-normalised. Every pair of the batch
/// counts: with distance d = max(1 − a·b, 0), positives (same class, a sample not with itself unless
/// remove_diagonal is false) weigh −gamma·max(margin + d, 0)·(margin − d), negatives
/// gamma·max(1 + margin − d, 0)·(1 − margin − d); a sample's loss is softplus(logsumexp(positives) +
/// logsumexp(negatives)). A sample whose loss is 0 (no positives, or an underflow) is masked out of the reductions,
/// as Keras's mask on the values: sum_over_batch_size divides by the others' count.
class Circle : public Loss {
 public:
  explicit Circle(double gamma = 80.0, double margin = 0.4, bool remove_diagonal = true, std::string name = "circle");
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  /// Keras's mask on the values: 1 where a sample's loss is above 0 ((N, 1) float32).
  Tensor loss_mask(const Tensor& y_true, const Tensor& y_pred) const override;
  Tensor loss_mask(const Tensor& y_true, const Tensor& y_pred, const Tensor& values) const override;
  bool masks_values() const override { return true; }
  /// Pairs across the batch: a batch split in parts is not the mean of its parts' losses.
  bool mixes_samples() const override { return true; }
  std::string class_name() const override { return "Circle"; }
  std::string get_config() const override;
  double gamma() const { return gamma_; }
  double margin() const { return margin_; }
  bool remove_diagonal() const { return remove_diagonal_; }

 private:
  double gamma_, margin_;
  bool remove_diagonal_;
};

/// A loss by Keras name: binary_crossentropy/bce, categorical_crossentropy, sparse_categorical_crossentropy,
/// mean_squared_error/mse, mean_absolute_error/mae, mean_absolute_percentage_error/mape, huber, log_cosh, hinge,
/// kl_divergence/kld, ctc, poisson, mean_squared_logarithmic_error/msle, cosine_similarity, squared_hinge,
/// categorical_hinge, binary_focal_crossentropy, categorical_focal_crossentropy,
/// categorical_generalized_cross_entropy, dice, tversky, circle, or a class name. Throws ValueError otherwise.
std::shared_ptr<Loss> get(const std::string& name);

/// A loss function: (y_true, y_pred) -> the per-sample values (shape (N,), or (N, ...) averaged per sample).
using LossFn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
/// A loss made of a function or lambda, reduced like every loss (keras.losses.LossFunctionWrapper): written with
/// ops, it trains through the tape.
class LossFunctionWrapper : public Loss {
 public:
  explicit LossFunctionWrapper(LossFn fn, std::string name = "custom_loss");
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  std::string class_name() const override { return "LossFunctionWrapper"; }
  /// The function's values per sample (it is called for them: only the "sum" and "mean_with_sample_weight"
  /// reductions ask).
  double keras_values_per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  /// The function's registered name ("package>name") when it came from saving::register_keras_serializable; a file
  /// then holds it by that name.
  const std::string& registered_name() const { return registered_name_; }
  void set_registered_name(std::string n) { registered_name_ = std::move(n); }

 private:
  LossFn fn_;
  std::string registered_name_;
};

}  // namespace osprey::keras::losses

namespace osprey::keras {
/// A loss given by name, as an object, or as a function or lambda of (y_true, y_pred) (a LossFunctionWrapper).
class LossRef {
 public:
  LossRef() = default;
  LossRef(const char* name) : ptr_(losses::get(name)), spelled_(name) {}
  LossRef(const std::string& name) : ptr_(losses::get(name)), spelled_(name) {}
  /// A loss object shared with the caller.
  explicit LossRef(std::shared_ptr<losses::Loss> loss) : ptr_(std::move(loss)) {}
  template <typename L>
    requires std::derived_from<std::decay_t<L>, losses::Loss>
  LossRef(L&& l) : ptr_(std::make_shared<std::decay_t<L>>(std::forward<L>(l))) {}
  template <typename F>
    requires(!std::derived_from<std::decay_t<F>, losses::Loss> && !std::convertible_to<F, std::string> &&
             std::is_invocable_r_v<Tensor, F, const Tensor&, const Tensor&>)
  LossRef(F&& fn) : ptr_(std::make_shared<losses::LossFunctionWrapper>(losses::LossFn(std::forward<F>(fn)))) {}
  const std::shared_ptr<losses::Loss>& get() const { return ptr_; }
  /// The string the user passed, if any (Keras's compile_config keeps it).
  const std::string& spelled() const { return spelled_; }

 private:
  std::shared_ptr<losses::Loss> ptr_;
  std::string spelled_;
};
}  // namespace osprey::keras
