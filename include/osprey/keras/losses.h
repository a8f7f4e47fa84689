// Keras losses (keras.losses) with the "sum_over_batch_size" reduction.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <string>

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
  /// With one weight per sample: Σ(w·l) divided by the element count (not Σw) for sum_over_batch_size.
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const;
  Reduction reduction() const { return reduction_; }
  void set_reduction(Reduction r) { reduction_ = r; }
  const std::string& name() const { return name_; }
  /// Keras's class name ("BinaryCrossentropy").
  virtual std::string class_name() const = 0;
  /// Keras's loss.get_config() as JSON text: name, reduction and the loss's options (a compile_config keeps it).
  virtual std::string get_config() const;

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
  };
  SparseCategoricalCrossentropy();
  explicit SparseCategoricalCrossentropy(Options o);
  Tensor per_sample(const Tensor& y_true, const Tensor& y_pred) const override;
  Tensor batch_mean(const Tensor& y_true, const Tensor& y_pred) const override;
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
};

/// A loss by Keras name: binary_crossentropy/bce, categorical_crossentropy, sparse_categorical_crossentropy,
/// mean_squared_error/mse, mean_absolute_error/mae, mean_absolute_percentage_error/mape, huber, log_cosh, hinge,
/// kl_divergence/kld, ctc, or a class name. Throws ValueError otherwise.
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
