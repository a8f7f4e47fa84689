#include <algorithm>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/keras/losses.h"
#include "osprey/keras/metrics.h"
#include "osprey/ops.h"

namespace osprey::keras {

namespace losses {

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred) const {
  return ops::reduce_mean(per_sample(y_true, y_pred));
}

// ---- helpers: composite ops (differentiable through the tape, on every device) ----

static Tensor scalar(double v) { return Tensor::scalar(v); }
static Tensor minimum(const Tensor& a, const Tensor& b) { return ops::neg(ops::maximum(ops::neg(a), ops::neg(b))); }
// Views both as (N, d) float32, so per-sample reductions are over axis 1.
static Tensor as_2d(const Tensor& t) {
  Tensor f = t.dtype() == DType::float32 ? t : ops::cast(t, DType::float32);
  if (f.shape().rank() == 1) return f.reshape(Shape({f.shape()[0], 1}));
  return f;
}
static Tensor smoothed(const Tensor& y, double ls, double classes) {
  if (ls == 0.0) return y;
  return ops::add(ops::mul(y, scalar(1.0 - ls)), scalar(ls / classes));
}
// log(softmax(x)) with the softmax clipped away from 0: the from_logits crossentropies.
static Tensor log_softmax(const Tensor& x) { return ops::log(ops::maximum(ops::softmax(x), scalar(1e-37))); }

BinaryCrossentropy::BinaryCrossentropy(CrossentropyOptions o) : Loss("binary_crossentropy"), opt_(o) {}
Tensor BinaryCrossentropy::per_sample(const Tensor& t, const Tensor& p) const {
  if (!opt_.from_logits) return ops::binary_crossentropy(t, p, opt_.label_smoothing);
  // sigmoid_cross_entropy_with_logits: max(x, 0) − x·y + log(1 + exp(−|x|)), no clipping.
  const Tensor x = as_2d(p), y = smoothed(as_2d(t), opt_.label_smoothing, 2.0);
  const Tensor l = ops::add(ops::sub(ops::relu(x), ops::mul(x, y)),
                            ops::activation(ops::neg(ops::abs(x)), ops::Activation::softplus));
  return ops::reduce_mean(l, 1);
}
CategoricalCrossentropy::CategoricalCrossentropy(CrossentropyOptions o) : Loss("categorical_crossentropy"), opt_(o) {}
Tensor CategoricalCrossentropy::per_sample(const Tensor& t, const Tensor& p) const {
  if (!opt_.from_logits) return ops::categorical_crossentropy(t, p, opt_.label_smoothing);
  const Tensor x = as_2d(p);
  const Tensor y = smoothed(as_2d(t), opt_.label_smoothing, static_cast<double>(x.shape()[1]));
  return ops::neg(ops::reduce_sum(ops::mul(y, log_softmax(x)), 1));
}
SparseCategoricalCrossentropy::SparseCategoricalCrossentropy() : Loss("sparse_categorical_crossentropy") {}
SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(Options o)
    : Loss("sparse_categorical_crossentropy"), opt_(o) {}
Tensor SparseCategoricalCrossentropy::per_sample(const Tensor& t, const Tensor& p) const {
  if (!opt_.from_logits) return ops::sparse_categorical_crossentropy(t, p);
  // The clipped-path kernel on softmax(x) without clipping: −log softmax(x)[label] through the sparse kernel's
  // label checks, using probabilities that sum to one exactly where it normalises.
  return ops::sparse_categorical_crossentropy(t, ops::softmax(as_2d(p)));
}
MeanAbsolutePercentageError::MeanAbsolutePercentageError() : Loss("mean_absolute_percentage_error") {}
Tensor MeanAbsolutePercentageError::per_sample(const Tensor& t, const Tensor& p) const {
  const Tensor y = as_2d(t), x = as_2d(p);
  const Tensor diff = ops::div(ops::abs(ops::sub(y, x)), ops::maximum(ops::abs(y), scalar(1e-7)));
  return ops::mul(ops::reduce_mean(diff, 1), scalar(100.0));
}
Huber::Huber(double delta) : Loss("huber_loss"), delta_(delta) {
  if (!(delta > 0)) throw ValueError(fmt::format("Huber: delta must be positive, got {}", delta));
}
Tensor Huber::per_sample(const Tensor& t, const Tensor& p) const {
  const Tensor e = ops::abs(ops::sub(as_2d(p), as_2d(t)));
  const Tensor quadratic = minimum(e, scalar(delta_));
  const Tensor linear = ops::sub(e, quadratic);  // 0.5q² + δ·(|e| − q) is Keras's piecewise form
  return ops::reduce_mean(ops::add(ops::mul(ops::square(quadratic), scalar(0.5)), ops::mul(linear, scalar(delta_))), 1);
}
LogCosh::LogCosh() : Loss("log_cosh") {}
Tensor LogCosh::per_sample(const Tensor& t, const Tensor& p) const {
  const Tensor x = ops::sub(as_2d(p), as_2d(t));
  const Tensor l = ops::sub(ops::add(x, ops::activation(ops::mul(x, scalar(-2.0)), ops::Activation::softplus)),
                            scalar(0.69314718055994530942));
  return ops::reduce_mean(l, 1);
}
Hinge::Hinge() : Loss("hinge") {}
Tensor Hinge::per_sample(const Tensor& t, const Tensor& p) const {
  Tensor y = as_2d(t);
  // Keras converts 0/1 labels to −1/1 (labels already −1/1 are kept): y' = 2y − 1 where y ∈ {0, 1}.
  std::vector<float> v = y.to_vector<float>();
  const bool zero_one = std::all_of(v.begin(), v.end(), [](float a) { return a == 0.f || a == 1.f; });
  if (zero_one) y = ops::sub(ops::mul(y, scalar(2.0)), scalar(1.0));
  return ops::reduce_mean(ops::maximum(ops::sub(scalar(1.0), ops::mul(y, as_2d(p))), scalar(0.0)), 1);
}
KLDivergence::KLDivergence() : Loss("kl_divergence") {}
Tensor KLDivergence::per_sample(const Tensor& t, const Tensor& p) const {
  const Tensor y = minimum(ops::maximum(as_2d(t), scalar(1e-7)), scalar(1.0));
  const Tensor x = minimum(ops::maximum(as_2d(p), scalar(1e-7)), scalar(1.0));
  return ops::reduce_sum(ops::mul(y, ops::log(ops::div(y, x))), 1);
}
MeanSquaredError::MeanSquaredError() : Loss("mean_squared_error") {}
Tensor MeanSquaredError::per_sample(const Tensor& t, const Tensor& p) const { return ops::mean_squared_error(t, p); }
MeanAbsoluteError::MeanAbsoluteError() : Loss("mean_absolute_error") {}
Tensor MeanAbsoluteError::per_sample(const Tensor& t, const Tensor& p) const { return ops::mean_absolute_error(t, p); }

std::shared_ptr<Loss> get(const std::string& n) {
  if (n == "binary_crossentropy" || n == "bce" || n == "BCE" || n == "BinaryCrossentropy") {
    return std::make_shared<BinaryCrossentropy>();
  }
  if (n == "categorical_crossentropy" || n == "CategoricalCrossentropy") {
    return std::make_shared<CategoricalCrossentropy>();
  }
  if (n == "sparse_categorical_crossentropy" || n == "SparseCategoricalCrossentropy") {
    return std::make_shared<SparseCategoricalCrossentropy>();
  }
  if (n == "mean_squared_error" || n == "mse" || n == "MSE" || n == "MeanSquaredError") {
    return std::make_shared<MeanSquaredError>();
  }
  if (n == "mean_absolute_error" || n == "mae" || n == "MAE" || n == "MeanAbsoluteError") {
    return std::make_shared<MeanAbsoluteError>();
  }
  if (n == "mean_absolute_percentage_error" || n == "mape" || n == "MAPE" || n == "MeanAbsolutePercentageError") {
    return std::make_shared<MeanAbsolutePercentageError>();
  }
  if (n == "huber" || n == "huber_loss" || n == "Huber") return std::make_shared<Huber>();
  if (n == "log_cosh" || n == "logcosh" || n == "LogCosh") return std::make_shared<LogCosh>();
  if (n == "hinge" || n == "Hinge") return std::make_shared<Hinge>();
  if (n == "kl_divergence" || n == "kld" || n == "KLD" || n == "KLDivergence") return std::make_shared<KLDivergence>();
  throw ValueError("Could not interpret loss identifier: '" + n +
                   "'. Known losses: binary_crossentropy (bce), categorical_crossentropy, "
                   "sparse_categorical_crossentropy, mean_squared_error (mse), mean_absolute_error (mae), "
                   "mean_absolute_percentage_error (mape), huber, log_cosh, hinge, kl_divergence (kld).");
}

}  // namespace losses

namespace metrics {

void Accuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  accumulate(ops::accuracy_count(y_true, y_pred, kind_, threshold_).item(), static_cast<double>(y_pred.shape()[0]));
}

void AutoAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  if (!kind_) {
    // compile_utils.is_binary_or_sparse_categorical: decided by shapes, not by the loss.
    const auto& ts = y_true.shape();
    const auto& ps = y_pred.shape();
    const int64_t last = ps.rank() ? ps[-1] : 1;
    if (last == 1) {
      kind_ = ops::AccuracyKind::binary;
    } else if (ts.rank() < ps.rank() || (ts.rank() && ts[-1] == 1 && last > 1)) {
      kind_ = ops::AccuracyKind::sparse_categorical;
    } else {
      kind_ = ops::AccuracyKind::categorical;
    }
  }
  accumulate(ops::accuracy_count(y_true, y_pred, *kind_).item(), static_cast<double>(y_pred.shape()[0]));
}

void MeanAbsoluteError::update_state(const Tensor& y_true, const Tensor& y_pred) {
  accumulate(ops::reduce_sum(ops::mean_absolute_error(y_true, y_pred)).item(), static_cast<double>(y_pred.shape()[0]));
}

void MeanSquaredError::update_state(const Tensor& y_true, const Tensor& y_pred) {
  accumulate(ops::reduce_sum(ops::mean_squared_error(y_true, y_pred)).item(), static_cast<double>(y_pred.shape()[0]));
}

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
  else
    throw ValueError("Could not interpret metric identifier: '" + n +
                     "'. Known metrics: accuracy (acc), binary_accuracy, categorical_accuracy, "
                     "sparse_categorical_accuracy, mae, mse (and their class names).");
  m->set_name(n);  // the log key is exactly the string the user passed
  return m;
}

}  // namespace metrics
}  // namespace osprey::keras
