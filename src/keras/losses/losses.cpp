// Keras's losses (keras.losses): per-sample values and their reductions.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "keras/losses/loss_helpers.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/losses.h"
#include "osprey/keras/metrics.h"
#include "osprey/keras/ops.h"
#include "osprey/keras/saving.h"
#include "osprey/ops.h"

namespace osprey::keras {

namespace losses {

namespace ops = osprey::ops;  // the kernels' ops (keras::ops for the CTC loss, as Keras's ctc())
namespace kops = osprey::keras::ops;

static Tensor reduce(Reduction r, const Tensor& values, const Tensor& weights) {
  switch (r) {
    case Reduction::none: return values;
    case Reduction::sum: return ops::reduce_sum(values);
    case Reduction::mean_with_sample_weight:
      if (weights.defined()) {  // divide_no_nan
        const Tensor total = ops::reduce_sum(weights);
        return ops::div(ops::reduce_sum(values), ops::maximum(total, Tensor::scalar(1e-30)));
      }
      return ops::reduce_mean(values);
    case Reduction::sum_over_batch_size: return ops::reduce_mean(values);
  }
  return ops::reduce_mean(values);
}

// Keras's reduction of values that carry a mask (losses.loss.apply_mask): `values` each sample's mean of its
// masked elements' losses (N,), `mask` (N, T) 1/0, `w` one weight per sample or undefined. Σ over elements of
// l·mask·w is T·Σ values·w; sum_over_batch_size divides it by Σ mask, mean_with_sample_weight by Σ w·mask (both
// divide_no_nan), sum not at all.
static Tensor masked_reduce(Reduction r, const Tensor& values, const Tensor& mask, const Tensor& w) {
  const int64_t n = values.shape()[0];
  auto here = [&](const Tensor& t) { return &t.device_ref() == &values.device_ref() ? t : t.to(values.device_ref()); };
  const Tensor m = here(mask);
  const Tensor wd = w.defined() ? ops::reshape(here(w), values.shape()) : Tensor();
  const Tensor weighted = wd.defined() ? ops::mul(values, wd) : values;
  if (r == Reduction::none) return weighted;
  const double steps = static_cast<double>(m.num_elements()) / static_cast<double>(std::max<int64_t>(n, 1));
  const Tensor total = ops::mul(ops::reduce_sum(weighted), Tensor::scalar(steps));
  if (r == Reduction::sum) return total;
  const Tensor valid = ops::reduce_sum(m, 1);  // each sample's unmasked elements
  const Tensor divisor = r == Reduction::mean_with_sample_weight && wd.defined() ? ops::reduce_sum(ops::mul(valid, wd))
                                                                                   : ops::reduce_sum(valid);
  return ops::div(total, ops::maximum(divisor, Tensor::scalar(1e-30)));  // nothing unmasked: 0
}

Tensor Loss::batch_mean(const Tensor& y_true, const Tensor& y_pred) const {
  return ops::reduce_mean(per_sample(y_true, y_pred));
}

Tensor Loss::loss_mask(const Tensor&, const Tensor&) const { return Tensor(); }
Tensor Loss::loss_mask(const Tensor& y_true, const Tensor& y_pred, const Tensor&) const {
  return loss_mask(y_true, y_pred);
}

double Loss::keras_values_per_sample(const Tensor&, const Tensor& y_pred) const {
  const Shape& s = y_pred.shape();
  double n = 1.0;
  for (int a = 1; a + 1 < s.rank(); ++a) n *= static_cast<double>(s[a]);
  return n;
}

// `sum` (of per-sample means) as Keras's sum over all the loss's values: k values per sample (k 0: one value for
// the batch, which every sample carries: their mean).
static Tensor keras_count(const Tensor& sum, const Tensor& per_sample, double k) {
  if (k == 0.0) return ops::div(sum, Tensor::scalar(static_cast<double>(std::max<int64_t>(per_sample.shape()[0], 1))));
  return k == 1.0 ? sum : ops::mul(sum, Tensor::scalar(k));
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred) const {
  // A loss that masks its values computes them once here (Circle's mask comes from them).
  const Tensor v = masks_values() ? per_sample(y_true, y_pred) : Tensor();
  if (const Tensor m = loss_mask(y_true, y_pred, v); m.defined()) {
    return masked_reduce(reduction_, v.defined() ? v : per_sample(y_true, y_pred), m, Tensor());
  }
  if (reduction_ == Reduction::sum_over_batch_size || reduction_ == Reduction::mean_with_sample_weight) {
    return batch_mean(y_true, y_pred);
  }
  const Tensor values = per_sample(y_true, y_pred);
  const Tensor r = reduce(reduction_, values, Tensor());
  return reduction_ == Reduction::sum ? keras_count(r, values, keras_values_per_sample(y_true, y_pred)) : r;
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& w) const {
  if (detail::weighs_positions(w)) {  // a weight per step or pixel: each position a row with its weight
    if (mixes_samples()) {
      throw ValueError(fmt::format("Loss '{}' compares the batch's samples with each other: it takes one weight per "
                                   "sample ((N,) or (N, 1)), got sample_weight of shape {}",
                                   name(), w.shape().to_string()));
    }
    const auto rows = detail::position_rows(y_true, y_pred, w, "Loss", name(), 1);
    const Tensor v = (*this)(rows.y_true, rows.y_pred, rows.weights);
    return reduction_ == Reduction::none ? ops::reshape(v, rows.positions) : v;
  }
  const Tensor v = per_sample(y_true, y_pred);
  const Tensor wd = &w.device_ref() == &v.device_ref() ? w : w.to(v.device_ref());
  // One weight for all the samples (Keras's sample_weight=2.0, or a one-element array): each value times it;
  // mean_with_sample_weight divides by Σ sample_weight, the weight itself (Keras's reduce_values), not N·w.
  const bool one_for_all = w.num_elements() == 1 && w.shape().rank() <= 1;
  const Tensor w_rows = one_for_all ? ops::broadcast_to(ops::reshape(wd, Shape({})), v.shape()) : wd;
  if (const Tensor m = loss_mask(y_true, y_pred, v); m.defined()) return masked_reduce(reduction_, v, m, w_rows);
  const Tensor r = reduce(reduction_, ops::mul(v, ops::reshape(w_rows, v.shape())), wd);
  if (reduction_ != Reduction::sum && reduction_ != Reduction::mean_with_sample_weight) return r;
  // Keras reduces all the loss's values: k per sample (each weighted by its sample's weight), or one for the batch
  // (k 0), which one weight scales and weights per sample spread over the samples (per-sample means then).
  const double k = keras_values_per_sample(y_true, y_pred);
  if (k == 0.0) return one_for_all ? ops::mul(ops::reduce_mean(v), ops::reshape(wd, Shape({}))) : r;
  return k == 1.0 ? r : ops::mul(r, Tensor::scalar(k));
}

LossFunctionWrapper::LossFunctionWrapper(LossFn fn, std::string name) : Loss(std::move(name)), fn_(std::move(fn)) {
  if (!fn_) throw ValueError("LossFunctionWrapper: the loss function is empty");
}

double LossFunctionWrapper::keras_values_per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const Tensor v = fn_(y_true, y_pred);
  const int64_t n = y_pred.shape().rank() ? y_pred.shape()[0] : 1;
  return v.defined() && n > 0 ? static_cast<double>(v.num_elements()) / static_cast<double>(n) : 1.0;
}

Tensor LossFunctionWrapper::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const Tensor v = fn_(y_true, y_pred);
  if (!v.defined() || v.shape().rank() < 1 || v.shape()[0] != y_pred.shape()[0]) {
    throw ValueError(fmt::format("Loss '{}' must return one value per sample (shape ({},) or ({}, ...)), got {}",
                                 name(), y_pred.shape()[0], y_pred.shape()[0],
                                 v.defined() ? v.shape().to_string() : std::string("an undefined tensor")));
  }
  return detail::per_sample_values(v, v.shape()[0]);  // float32, (N, ...) as each sample's mean
}

// ---- helpers: composite ops (differentiable through the tape, on every device) ----

static Tensor scalar(double v) { return Tensor::scalar(v); }
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
Tensor BinaryCrossentropy::batch_mean(const Tensor& t, const Tensor& p) const {
  if (opt_.from_logits) return Loss::batch_mean(t, p);
  return ops::batch_mean_loss(ops::LossFunction::binary_crossentropy, t, p, opt_.label_smoothing);
}
CategoricalCrossentropy::CategoricalCrossentropy(CrossentropyOptions o) : Loss("categorical_crossentropy"), opt_(o) {}
Tensor CategoricalCrossentropy::per_sample(const Tensor& t, const Tensor& p) const {
  if (!opt_.from_logits) return ops::categorical_crossentropy(t, p, opt_.label_smoothing);
  const Tensor x = as_2d(p);
  const Tensor y = smoothed(as_2d(t), opt_.label_smoothing, static_cast<double>(x.shape()[1]));
  return ops::neg(ops::reduce_sum(ops::mul(y, log_softmax(x)), 1));
}
Tensor CategoricalCrossentropy::batch_mean(const Tensor& t, const Tensor& p) const {
  if (opt_.from_logits) return Loss::batch_mean(t, p);
  return ops::batch_mean_loss(ops::LossFunction::categorical_crossentropy, t, p, opt_.label_smoothing);
}
// Token-level predictions (N, T..., V) with labels (N, T...) or (N, T..., 1) (a language model's, a tagger's):
// Keras's loss per token; a sample's value is its tokens' mean, so that the batch mean is the tokens' mean.
static bool per_token(const Tensor& p) { return p.shape().rank() >= 3; }
static Tensor token_rows(const Tensor& p) {
  const int64_t v = p.shape()[-1];
  return ops::reshape(p, Shape({p.num_elements() / std::max<int64_t>(v, 1), v}));
}
static Tensor token_labels(const Tensor& t, const Tensor& p) {
  const int64_t tokens = p.num_elements() / std::max<int64_t>(p.shape()[-1], 1);
  if (t.num_elements() != tokens) {
    throw InvalidArgumentError(fmt::format("SparseCategoricalCrossentropy: labels of shape {} do not match predictions "
                                           "of shape {} (one integer label per token: shape {})",
                                           t.shape().to_string(), p.shape().to_string(),
                                           Shape(std::vector<int64_t>(p.shape().dims().begin(), p.shape().dims().end() - 1))
                                               .to_string()));
  }
  return ops::reshape(t, Shape({tokens}));
}
static Tensor per_sample_mean(const Tensor& token_values, const Tensor& p) {
  const int64_t n = p.shape()[0];
  return ops::reduce_mean(ops::reshape(token_values, Shape({n, token_values.num_elements() / std::max<int64_t>(n, 1)})), 1);
}

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy() : Loss("sparse_categorical_crossentropy") {}
SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(Options o)
    : Loss("sparse_categorical_crossentropy"), opt_(o) {}
// ignore_class: float32 1/0 per label, (N, labels per sample), 1 where the label is not `ignored` (compared in
// float32, as Keras's not_equal(y_true, cast(ignore_class, y_pred.dtype))).
static Tensor not_ignored(const Tensor& labels, int64_t n, int64_t ignored) {
  const Tensor f = labels.dtype() == DType::float32 ? labels : ops::cast(labels, DType::float32);
  const Tensor flat = ops::reshape(f, Shape({n, f.num_elements() / std::max<int64_t>(n, 1)}));
  return ops::cast(kops::not_equal(flat, static_cast<double>(ignored)), DType::float32);
}
Tensor SparseCategoricalCrossentropy::loss_mask(const Tensor& t, const Tensor& p) const {
  if (!opt_.ignore_class) return Tensor();
  return not_ignored(per_token(p) ? token_labels(t, p) : t, p.shape()[0], *opt_.ignore_class);
}
Tensor SparseCategoricalCrossentropy::per_sample(const Tensor& t, const Tensor& p) const {
  if (opt_.ignore_class) {
    // Keras: ignored labels read as class 0, their losses set to 0 (no gradient); a sample's value is the mean of
    // its labels' masked losses (so that the reductions above divide by the unmasked count).
    const Tensor labels = per_token(p) ? token_labels(t, p) : t;
    const Tensor m = not_ignored(labels, p.shape()[0], *opt_.ignore_class);
    const Tensor flat_m = ops::reshape(m, Shape({m.num_elements()}));
    const Tensor flat_labels = ops::reshape(labels, Shape({m.num_elements()}));
    const Tensor kept = ops::mul(flat_labels, ops::cast(flat_m, labels.dtype()));  // ignored labels read as 0
    SparseCategoricalCrossentropy plain({.from_logits = opt_.from_logits});
    const Tensor values = ops::mul(plain.per_sample(kept, per_token(p) ? token_rows(p) : p), flat_m);
    return ops::reduce_mean(ops::reshape(values, m.shape()), 1);
  }
  if (per_token(p)) return per_sample_mean(per_sample(token_labels(t, p), token_rows(p)), p);
  if (!opt_.from_logits) return ops::sparse_categorical_crossentropy(t, p);
  // The clipped-path kernel on softmax(x) without clipping: −log softmax(x)[label] through the sparse kernel's
  // label checks, using probabilities that sum to one exactly where it normalises.
  return ops::sparse_categorical_crossentropy(t, ops::softmax(as_2d(p)));
}
Tensor SparseCategoricalCrossentropy::batch_mean(const Tensor& t, const Tensor& p) const {
  if (per_token(p)) return batch_mean(token_labels(t, p), token_rows(p));
  if (opt_.from_logits) return Loss::batch_mean(t, p);
  return ops::batch_mean_loss(ops::LossFunction::sparse_categorical_crossentropy, t, p);
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
  const Tensor quadratic = ops::minimum(e, scalar(delta_));
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
  const Tensor y = detail::hinge_labels(as_2d(t));  // 0/1 labels as −1/1
  return ops::reduce_mean(ops::maximum(ops::sub(scalar(1.0), ops::mul(y, as_2d(p))), scalar(0.0)), 1);
}
KLDivergence::KLDivergence() : Loss("kl_divergence") {}
Tensor KLDivergence::per_sample(const Tensor& t, const Tensor& p) const {
  const Tensor y = ops::minimum(ops::maximum(as_2d(t), scalar(1e-7)), scalar(1.0));
  const Tensor x = ops::minimum(ops::maximum(as_2d(p), scalar(1e-7)), scalar(1.0));
  return ops::reduce_sum(ops::mul(y, ops::log(ops::div(y, x))), 1);
}
MeanSquaredError::MeanSquaredError() : Loss("mean_squared_error") {}
Tensor MeanSquaredError::per_sample(const Tensor& t, const Tensor& p) const { return ops::mean_squared_error(t, p); }
Tensor MeanSquaredError::batch_mean(const Tensor& t, const Tensor& p) const {
  return ops::batch_mean_loss(ops::LossFunction::mean_squared_error, t, p);
}
MeanAbsoluteError::MeanAbsoluteError() : Loss("mean_absolute_error") {}
Tensor MeanAbsoluteError::per_sample(const Tensor& t, const Tensor& p) const { return ops::mean_absolute_error(t, p); }
Tensor MeanAbsoluteError::batch_mean(const Tensor& t, const Tensor& p) const {
  return ops::batch_mean_loss(ops::LossFunction::mean_absolute_error, t, p);
}

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
  if (n == "ctc" || n == "CTC") return std::make_shared<CTC>();
  if (n == "poisson" || n == "Poisson") return std::make_shared<Poisson>();
  if (n == "mean_squared_logarithmic_error" || n == "msle" || n == "MSLE" || n == "MeanSquaredLogarithmicError") {
    return std::make_shared<MeanSquaredLogarithmicError>();
  }
  if (n == "cosine_similarity" || n == "CosineSimilarity") return std::make_shared<CosineSimilarity>();
  if (n == "squared_hinge" || n == "SquaredHinge") return std::make_shared<SquaredHinge>();
  if (n == "categorical_hinge" || n == "CategoricalHinge") return std::make_shared<CategoricalHinge>();
  if (n == "binary_focal_crossentropy" || n == "BinaryFocalCrossentropy") {
    return std::make_shared<BinaryFocalCrossentropy>();
  }
  if (n == "categorical_focal_crossentropy" || n == "CategoricalFocalCrossentropy") {
    return std::make_shared<CategoricalFocalCrossentropy>();
  }
  if (n == "categorical_generalized_cross_entropy" || n == "CategoricalGeneralizedCrossEntropy") {
    return std::make_shared<CategoricalGeneralizedCrossEntropy>();
  }
  if (n == "dice" || n == "Dice") return std::make_shared<Dice>();
  if (n == "tversky" || n == "Tversky") return std::make_shared<Tversky>();
  if (n == "circle" || n == "Circle") return std::make_shared<Circle>();
  std::string registered;
  if (auto fn = saving::detail::find_function(n, &registered)) {  // saving::register_keras_serializable
    auto loss = std::make_shared<LossFunctionWrapper>(fn, registered.substr(registered.find('>') + 1));
    loss->set_registered_name(registered);
    return loss;
  }
  throw ValueError("Could not interpret loss identifier: '" + n +
                   "'. Known losses: binary_crossentropy (bce), categorical_crossentropy, "
                   "sparse_categorical_crossentropy, mean_squared_error (mse), mean_absolute_error (mae), "
                   "mean_absolute_percentage_error (mape), huber, log_cosh, hinge, kl_divergence (kld), ctc, poisson, "
                   "mean_squared_logarithmic_error (msle), cosine_similarity, squared_hinge, categorical_hinge, "
                   "binary_focal_crossentropy, categorical_focal_crossentropy, "
                   "categorical_generalized_cross_entropy, dice, tversky, circle.");
}

CTC::CTC() : Loss("ctc") {}
double CTC::keras_values_per_sample(const Tensor&, const Tensor&) const { return 1.0; }  // one per sequence

Tensor CTC::per_sample(const Tensor& t, const Tensor& p) const {
  if (t.shape().rank() != 2) {
    throw ValueError(fmt::format("Targets `y_true` are expected to be a tensor of shape `(batch_size, max_length)` in "
                                 "integer format. Received: y_true.shape={}",
                                 t.shape().to_string()));
  }
  if (p.shape().rank() != 3) {
    throw ValueError(fmt::format("Logits `y_pred` are expected to be a tensor of shape `(batch_size, max_length, "
                                 "num_classes)`. Received: y_pred.shape={}",
                                 p.shape().to_string()));
  }
  // Keras's ctc(): each row's label length is its count of nonzero labels, every frame counts.
  const Tensor frames = Tensor::full(Shape({p.shape()[0]}), static_cast<double>(p.shape()[1]), DType::int32);
  const Tensor loss = keras::ops::ctc_loss(t, p, keras::ops::count_nonzero(t, 1), frames, 0);
  return loss.dtype() == DType::float32 ? loss : ops::cast(loss, DType::float32);
}

// ---- Keras configs (loss.get_config()) ----

namespace ser = serialization;

static const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::sum: return "sum";
    case Reduction::mean_with_sample_weight: return "mean_with_sample_weight";
    case Reduction::none: return "none";
    case Reduction::sum_over_batch_size: break;
  }
  return "sum_over_batch_size";
}

std::string Loss::get_config() const {
  return ser::dumps(ser::json{{"name", name_}, {"reduction", reduction_name(reduction_)}});
}
static std::string crossentropy_config(const Loss& l, const CrossentropyOptions& o) {
  ser::json c = ser::parse(l.Loss::get_config(), "a loss config");
  c["from_logits"] = o.from_logits;
  c["label_smoothing"] = o.label_smoothing;
  c["axis"] = -1;
  return ser::dumps(c);
}
std::string BinaryCrossentropy::get_config() const { return crossentropy_config(*this, opt_); }
std::string CategoricalCrossentropy::get_config() const { return crossentropy_config(*this, opt_); }
std::string SparseCategoricalCrossentropy::get_config() const {
  ser::json c = ser::parse(Loss::get_config(), "a loss config");
  c["from_logits"] = opt_.from_logits;
  c["ignore_class"] = opt_.ignore_class ? ser::json(*opt_.ignore_class) : ser::json(nullptr);
  return ser::dumps(c);
}
// Keras 3.15's Huber leaves delta out of its config (and so loses it); Osprey writes it, which Keras's
// Huber(**config) reads back.
std::string Huber::get_config() const {
  ser::json c = ser::parse(Loss::get_config(), "a loss config");
  c["delta"] = delta_;
  return ser::dumps(c);
}

}  // namespace losses
}  // namespace osprey::keras
