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

BinaryCrossentropy::BinaryCrossentropy(CrossentropyOptions o) : Loss("binary_crossentropy"), opt_(o) {}
Tensor BinaryCrossentropy::per_sample(const Tensor& t, const Tensor& p) const {
  return ops::binary_crossentropy(t, p, opt_.label_smoothing);
}
CategoricalCrossentropy::CategoricalCrossentropy(CrossentropyOptions o) : Loss("categorical_crossentropy"), opt_(o) {}
Tensor CategoricalCrossentropy::per_sample(const Tensor& t, const Tensor& p) const {
  return ops::categorical_crossentropy(t, p, opt_.label_smoothing);
}
SparseCategoricalCrossentropy::SparseCategoricalCrossentropy() : Loss("sparse_categorical_crossentropy") {}
Tensor SparseCategoricalCrossentropy::per_sample(const Tensor& t, const Tensor& p) const {
  return ops::sparse_categorical_crossentropy(t, p);
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
  throw ValueError("Could not interpret loss identifier: '" + n +
                   "'. Known losses: binary_crossentropy (bce), categorical_crossentropy, "
                   "sparse_categorical_crossentropy, mean_squared_error (mse), mean_absolute_error (mae).");
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
