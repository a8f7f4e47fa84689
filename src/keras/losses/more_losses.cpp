// Keras's other losses (keras/src/losses/losses.py): Poisson, mean squared logarithmic error, cosine similarity,
// the squared and categorical hinges, the focal crossentropies, generalized crossentropy, Dice, Tversky and Circle.
// Each is Keras's formula written with keras::ops, so it is differentiable and runs on every device.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "keras/losses/loss_helpers.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/losses.h"
#include "osprey/keras/ops.h"

namespace osprey::keras::losses {

namespace kops = osprey::keras::ops;
namespace ser = serialization;
constexpr double kEpsilon = 1e-7;  // keras.backend.epsilon()

namespace detail {

void same_rank(Tensor& a, Tensor& b) {
  const int ra = a.shape().rank(), rb = b.shape().rank();
  if (ra == rb + 1 && a.shape()[-1] == 1) {
    if (rb == 1) b = kops::expand_dims(b, -1);
    else a = kops::squeeze(a, -1);
  } else if (rb == ra + 1 && b.shape()[-1] == 1) {
    if (ra == 1) a = kops::expand_dims(a, -1);
    else b = kops::squeeze(b, -1);
  }
}

Tensor float_predictions(const Tensor& y_pred) {
  return is_floating(y_pred.dtype()) ? y_pred : kops::cast(y_pred, DType::float32);
}

Tensor as_float_like(const Tensor& y_true, const Tensor& y_pred) {
  const DType d = is_floating(y_pred.dtype()) ? y_pred.dtype() : DType::float32;
  return y_true.dtype() == d ? y_true : kops::cast(y_true, d);
}

// (N, ..., 1) of rank >= 3 as (N, ...): Keras squeezes a weight's trailing 1 against values one rank lower.
static Shape positions_of(const Tensor& w) {
  const auto d = w.shape().dims();
  if (d.size() >= 3 && d.back() == 1) return Shape(std::vector<int64_t>(d.begin(), d.end() - 1));
  return w.shape();
}

bool weighs_positions(const Tensor& w) {
  if (!w.defined()) return false;
  const Shape s = positions_of(w);
  return s.rank() >= 3 || (s.rank() == 2 && s[1] != 1);
}

PositionRows position_rows(const Tensor& y_true, const Tensor& y_pred, const Tensor& w, const char* kind,
                           const std::string& name, std::size_t more_axes) {
  const Shape positions = positions_of(w);
  const auto p = positions.dims();
  auto starts_with_positions = [&](const Tensor& t, std::size_t more) {
    const auto d = t.shape().dims();
    return d.size() >= p.size() + more && std::equal(p.begin(), p.end(), d.begin());
  };
  if (!starts_with_positions(y_pred, more_axes) || !starts_with_positions(y_true, 0)) {
    throw ValueError(fmt::format(
        "{} '{}': sample_weight of shape {} weighs each position {} of the values, so y_pred must have those axes "
        "first{} and y_true those axes first; got y_true {} and y_pred {}. Give one weight per sample as (N,) or "
        "(N, 1), or weights shaped like the predictions without their last axis.",
        kind, name, w.shape().to_string(), positions.to_string(),
        more_axes ? " and at least one more (the axis the loss reduces)," : ",", y_true.shape().to_string(),
        y_pred.shape().to_string()));
  }
  const int64_t rows = positions.num_elements();
  auto as_rows = [&](const Tensor& t) {
    const auto d = t.shape().dims();
    std::vector<int64_t> shape{rows};
    shape.insert(shape.end(), d.begin() + static_cast<std::ptrdiff_t>(p.size()), d.end());
    return kops::reshape(t, shape);
  };
  const Tensor wf = w.dtype() == DType::float32 ? w : kops::cast(w, DType::float32);
  return {as_rows(y_true), as_rows(y_pred), kops::reshape(wf, {rows}), positions};
}

Tensor per_sample_values(const Tensor& values, int64_t n) {
  Tensor v = values.dtype() == DType::float32 ? values : kops::cast(values, DType::float32);
  if (v.shape().rank() == 0) return kops::broadcast_to(v, {n});
  if (v.shape()[0] != n) {
    throw ValueError(fmt::format("A loss gave values of shape {} for a batch of {} samples (its first axis must be the "
                                 "batch's)",
                                 v.shape().to_string(), n));
  }
  if (v.shape().rank() == 1) return v;
  return kops::mean(kops::reshape(v, {n, -1}), 1);
}

Tensor hinge_labels(const Tensor& y) {
  const Tensor binary = kops::all(kops::logical_or(kops::equal(y, 0.0), kops::equal(y, 1.0)));
  return kops::where(binary, kops::subtract(kops::multiply(y, 2.0), 1.0), y);
}

}  // namespace detail

using detail::as_float_like;
using detail::float_predictions;
using detail::per_sample_values;
using detail::same_rank;

namespace {
// The prologue of Keras's loss functions: predictions as they are, labels in their dtype, ranks matched.
struct Pair {
  Tensor t, p;
};
Pair prepare(const Tensor& y_true, const Tensor& y_pred) {
  Pair r{as_float_like(y_true, y_pred), float_predictions(y_pred)};
  same_rank(r.t, r.p);
  return r;
}
int64_t batch_of(const Tensor& y_pred) {
  if (y_pred.shape().rank() == 0) throw ValueError("A loss needs predictions with a batch axis; got a scalar");
  return y_pred.shape()[0];
}
ser::json base_config(const Loss& l) { return ser::parse(l.Loss::get_config(), "a loss config"); }
}  // namespace

Poisson::Poisson() : Loss("poisson") {}
Tensor Poisson::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const auto [t, p] = prepare(y_true, y_pred);
  const Tensor v = kops::mean(kops::subtract(p, kops::multiply(t, kops::log(kops::add(p, kEpsilon)))), -1);
  return per_sample_values(v, batch_of(y_pred));
}

MeanSquaredLogarithmicError::MeanSquaredLogarithmicError() : Loss("mean_squared_logarithmic_error") {}
Tensor MeanSquaredLogarithmicError::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const auto [t, p] = prepare(y_true, y_pred);
  const Tensor first = kops::log(kops::add(kops::maximum(p, kEpsilon), 1.0));
  const Tensor second = kops::log(kops::add(kops::maximum(t, kEpsilon), 1.0));
  return per_sample_values(kops::mean(kops::square(kops::subtract(first, second)), -1), batch_of(y_pred));
}

CosineSimilarity::CosineSimilarity(int axis) : Loss("cosine_similarity"), axis_(axis) {}
Tensor CosineSimilarity::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const auto [t, p] = prepare(y_true, y_pred);
  const int rank = p.shape().rank();
  if (axis_ < -rank || axis_ >= rank) {
    throw ValueError(fmt::format("CosineSimilarity: axis {} is out of bounds for predictions of rank {} (shape {})",
                                 axis_, rank, p.shape().to_string()));
  }
  if (axis_ == 0 || axis_ == -rank) {
    throw ValueError(fmt::format("CosineSimilarity: axis {} is the batch axis of predictions of shape {}; Osprey's "
                                 "losses give one value per sample (give another axis)",
                                 axis_, p.shape().to_string()));
  }
  const Tensor v = kops::negative(kops::sum(kops::multiply(kops::normalize(t, axis_), kops::normalize(p, axis_)), axis_));
  return per_sample_values(v, batch_of(y_pred));
}
double CosineSimilarity::keras_values_per_sample(const Tensor&, const Tensor& y_pred) const {
  const Shape& s = y_pred.shape();
  if (s.rank() < 2) return 1.0;
  const int axis = axis_ < 0 ? axis_ + s.rank() : axis_;
  double n = 1.0;
  for (int a = 1; a < s.rank(); ++a) n *= a == axis ? 1.0 : static_cast<double>(s[a]);
  return n;
}
std::string CosineSimilarity::get_config() const {
  ser::json c = base_config(*this);
  c["axis"] = axis_;
  return ser::dumps(c);
}

SquaredHinge::SquaredHinge() : Loss("squared_hinge") {}
Tensor SquaredHinge::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const auto [t, p] = prepare(y_true, y_pred);
  const Tensor margin = kops::maximum(kops::subtract(1.0, kops::multiply(detail::hinge_labels(t), p)), 0.0);
  return per_sample_values(kops::mean(kops::square(margin), -1), batch_of(y_pred));
}

CategoricalHinge::CategoricalHinge() : Loss("categorical_hinge") {}
Tensor CategoricalHinge::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const Tensor p = float_predictions(y_pred);
  const Tensor t = as_float_like(y_true, p);
  const Tensor pos = kops::sum(kops::multiply(t, p), -1);
  const Tensor neg = kops::max(kops::multiply(kops::subtract(1.0, t), p), -1);
  return per_sample_values(kops::maximum(kops::add(kops::subtract(neg, pos), 1.0), 0.0), batch_of(y_pred));
}

static void check_focal(const FocalOptions& o, const char* cls) {
  if (!(o.gamma >= 0)) throw ValueError(fmt::format("{}: gamma must be >= 0, got {}", cls, o.gamma));
  if (!(o.label_smoothing >= 0 && o.label_smoothing <= 1)) {
    throw ValueError(fmt::format("{}: label_smoothing must be in [0, 1], got {}", cls, o.label_smoothing));
  }
}
static ser::json focal_config(const Loss& l, const FocalOptions& o, bool binary) {
  ser::json c = base_config(l);
  c["from_logits"] = o.from_logits;
  c["label_smoothing"] = o.label_smoothing;
  c["axis"] = -1;
  if (binary) c["apply_class_balancing"] = o.apply_class_balancing;
  c["alpha"] = o.alpha;
  c["gamma"] = o.gamma;
  return c;
}

BinaryFocalCrossentropy::BinaryFocalCrossentropy(FocalOptions o) : Loss("binary_focal_crossentropy"), opt_(o) {
  check_focal(o, "BinaryFocalCrossentropy");
}
Tensor BinaryFocalCrossentropy::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = prepare(y_true, y_pred);
  if (opt_.label_smoothing != 0) {
    t = kops::add(kops::multiply(t, 1.0 - opt_.label_smoothing), 0.5 * opt_.label_smoothing);
  }
  if (opt_.from_logits) p = kops::sigmoid(p);
  const Tensor bce = kops::binary_crossentropy(t, p);
  const Tensor p_t = kops::add(kops::multiply(t, p), kops::multiply(kops::subtract(1.0, t), kops::subtract(1.0, p)));
  Tensor focal = kops::multiply(kops::power(kops::subtract(1.0, p_t), opt_.gamma), bce);
  if (opt_.apply_class_balancing) {
    const Tensor weight = kops::add(kops::multiply(t, opt_.alpha), kops::multiply(kops::subtract(1.0, t), 1.0 - opt_.alpha));
    focal = kops::multiply(weight, focal);
  }
  return per_sample_values(kops::mean(focal, -1), batch_of(y_pred));
}
std::string BinaryFocalCrossentropy::get_config() const { return ser::dumps(focal_config(*this, opt_, true)); }

CategoricalFocalCrossentropy::CategoricalFocalCrossentropy(FocalOptions o)
    : Loss("categorical_focal_crossentropy"), opt_(o) {
  check_focal(o, "CategoricalFocalCrossentropy");
  if (o.apply_class_balancing) {
    throw ValueError("CategoricalFocalCrossentropy has no apply_class_balancing (alpha always weighs every class)");
  }
}
Tensor CategoricalFocalCrossentropy::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor p = float_predictions(y_pred);
  Tensor t = as_float_like(y_true, p);
  if (t.shape() != p.shape()) {
    throw ValueError(fmt::format("CategoricalFocalCrossentropy: y_true of shape {} must be one-hot labels of the "
                                 "predictions' shape {}",
                                 t.shape().to_string(), p.shape().to_string()));
  }
  if (opt_.label_smoothing != 0) {
    const double classes = static_cast<double>(t.shape()[-1]);
    t = kops::add(kops::multiply(t, 1.0 - opt_.label_smoothing), opt_.label_smoothing / classes);
  }
  if (opt_.from_logits) p = kops::softmax(p, -1);
  const Tensor output = kops::clip(kops::divide(p, kops::sum(p, -1, true)), kEpsilon, 1.0 - kEpsilon);
  const Tensor cce = kops::multiply(kops::negative(t), kops::log(output));
  const Tensor weight = kops::multiply(kops::power(kops::subtract(1.0, output), opt_.gamma), opt_.alpha);
  return per_sample_values(kops::sum(kops::multiply(weight, cce), -1), batch_of(y_pred));
}
std::string CategoricalFocalCrossentropy::get_config() const { return ser::dumps(focal_config(*this, opt_, false)); }

CategoricalGeneralizedCrossEntropy::CategoricalGeneralizedCrossEntropy(double q)
    : Loss("categorical_generalized_cross_entropy"), q_(q) {
  if (!(q > 0 && q < 1)) {
    throw ValueError(fmt::format("q must be in the interval (0, 1). Received: q={}", q));
  }
}
Tensor CategoricalGeneralizedCrossEntropy::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const Tensor p = float_predictions(y_pred);
  Tensor labels = y_true;
  if (labels.shape().rank() == p.shape().rank() && labels.shape()[-1] == 1) labels = kops::squeeze(labels, -1);
  if (labels.shape().rank() + 1 != p.shape().rank()) {
    throw ValueError(fmt::format("CategoricalGeneralizedCrossEntropy expects integer labels of shape (batch,) or "
                                 "(batch, 1) for predictions of shape (batch, classes); got y_true {} and y_pred {}",
                                 y_true.shape().to_string(), p.shape().to_string()));
  }
  const int64_t classes = p.shape()[-1];
  const Tensor one_hot = kops::one_hot(kops::cast(labels, DType::int32), classes, -1, p.dtype());
  const Tensor prob = kops::sum(kops::multiply(p, one_hot), -1);
  return per_sample_values(kops::divide(kops::subtract(1.0, kops::power(prob, q_)), q_), batch_of(y_pred));
}
std::string CategoricalGeneralizedCrossEntropy::get_config() const {
  ser::json c = base_config(*this);
  c["q"] = q_;
  return ser::dumps(c);
}

static kops::Axes axes_of(const std::vector<int>& axis) { return axis.empty() ? kops::Axes() : kops::Axes(axis); }
static void check_overlap_axes(const std::vector<int>& axis, const Tensor& p, const char* cls) {
  const int rank = p.shape().rank();
  for (int a : axis) {
    if (a < -rank || a >= rank) {
      throw ValueError(fmt::format("{}: axis {} is out of bounds for predictions of shape {}", cls, a,
                                   p.shape().to_string()));
    }
    if (a == 0 || a == -rank) {
      throw ValueError(fmt::format("{}: axis {} is the batch axis (shape {}); give the other axes, or none for one "
                                   "value over the whole batch",
                                   cls, a, p.shape().to_string()));
    }
  }
}
// Dice's and Tversky's inputs: predictions in a float dtype, labels in theirs, the axes checked.
struct Overlap {
  Tensor t, p;
  kops::Axes axes;
};
static Overlap overlap_inputs(const Tensor& y_true, const Tensor& y_pred, const std::vector<int>& axis, const char* cls) {
  const Tensor p = float_predictions(y_pred);
  check_overlap_axes(axis, p, cls);
  return {as_float_like(y_true, p), p, axes_of(axis)};
}
// Dice's and Tversky's values per sample: the axes they do not reduce (none given: one value for the batch, 0).
static double overlap_values_per_sample(const std::vector<int>& axis, const Tensor& y_pred) {
  if (axis.empty()) return 0.0;
  const Shape& s = y_pred.shape();
  double n = 1.0;
  for (int a = 1; a < s.rank(); ++a) {
    const bool reduced = std::any_of(axis.begin(), axis.end(), [&](int x) { return (x < 0 ? x + s.rank() : x) == a; });
    if (!reduced) n *= static_cast<double>(s[a]);
  }
  return n;
}
static ser::json axis_json(const std::vector<int>& axis) { return axis.empty() ? ser::json(nullptr) : ser::json(axis); }

Tversky::Tversky(double alpha, double beta, std::vector<int> axis)
    : Loss("tversky"), axis_(std::move(axis)), alpha_(alpha), beta_(beta) {}
Tensor Tversky::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const auto [t, p, ax] = overlap_inputs(y_true, y_pred, axis_, "Tversky");
  const Tensor intersection = kops::sum(kops::multiply(t, p), ax);
  const Tensor fp = kops::sum(kops::multiply(kops::subtract(1.0, p), t), ax);
  const Tensor fn = kops::sum(kops::multiply(p, kops::subtract(1.0, t)), ax);
  const Tensor denominator =
      kops::add(kops::add(kops::add(intersection, kops::multiply(fp, alpha_)), kops::multiply(fn, beta_)), kEpsilon);
  return per_sample_values(kops::subtract(1.0, kops::divide(intersection, denominator)), batch_of(y_pred));
}
double Tversky::keras_values_per_sample(const Tensor&, const Tensor& y_pred) const {
  return overlap_values_per_sample(axis_, y_pred);
}
std::string Tversky::get_config() const {
  ser::json c = base_config(*this);
  c["alpha"] = alpha_;
  c["beta"] = beta_;
  c["axis"] = axis_json(axis_);
  return ser::dumps(c);
}

Dice::Dice(std::vector<int> axis) : Loss("dice"), axis_(std::move(axis)) {}
Tensor Dice::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const auto [t, p, ax] = overlap_inputs(y_true, y_pred, axis_, "Dice");
  const Tensor intersection = kops::sum(kops::multiply(t, p), ax);
  const Tensor denominator = kops::add(kops::add(kops::sum(t, ax), kops::sum(p, ax)), kEpsilon);
  return per_sample_values(kops::subtract(1.0, kops::divide(kops::multiply(intersection, 2.0), denominator)),
                           batch_of(y_pred));
}
double Dice::keras_values_per_sample(const Tensor&, const Tensor& y_pred) const {
  return overlap_values_per_sample(axis_, y_pred);
}
std::string Dice::get_config() const {
  ser::json c = base_config(*this);
  c["axis"] = axis_json(axis_);
  return ser::dumps(c);
}

// ---- Circle (keras.losses.circle) ----

Circle::Circle(double gamma, double margin, bool remove_diagonal, std::string name)
    : Loss(std::move(name)), gamma_(gamma), margin_(margin), remove_diagonal_(remove_diagonal) {
  if (!std::isfinite(gamma) || !std::isfinite(margin)) {
    throw ValueError(fmt::format("Circle: gamma and margin must be finite numbers. Received: gamma={}, margin={}",
                                 gamma, margin));
  }
}

Tensor Circle::per_sample(const Tensor& y_true, const Tensor& y_pred) const {
  const Tensor p = float_predictions(y_pred);
  const int64_t n = batch_of(p);
  if (p.shape().rank() != 2) {
    throw ValueError(fmt::format("Circle: y_pred must be embeddings of shape (batch, dim), got {}",
                                 p.shape().to_string()));
  }
  if (y_true.num_elements() != n || y_true.shape().rank() > 2) {
    throw ValueError(fmt::format("Circle: y_true must hold one class id per sample, shape ({},) or ({}, 1); got {} "
                                 "for y_pred {}",
                                 n, n, y_true.shape().to_string(), p.shape().to_string()));
  }
  // Keras casts the labels to int32 (floats truncate) and compares every pair.
  const Tensor ids = kops::reshape(kops::cast(kops::cast(y_true, DType::int32), DType::float32), {n, 1});
  Tensor positive = kops::equal(ids, kops::transpose(ids));
  const Tensor negative = kops::logical_not(positive);
  if (remove_diagonal_) positive = kops::logical_and(positive, kops::logical_not(kops::eye(n, n, 0, DType::bool_)));
  const Tensor distance = kops::maximum(kops::subtract(1.0, kops::matmul(p, kops::transpose(p))), 0.0);
  const DType d = distance.dtype();
  const Tensor pos_weights =
      kops::maximum(kops::multiply(kops::add(distance, margin_), kops::cast(positive, d)), 0.0);
  const Tensor neg_weights =
      kops::maximum(kops::multiply(kops::subtract(1.0 + margin_, distance), kops::cast(negative, d)), 0.0);
  const Tensor pos_terms = kops::multiply(kops::multiply(pos_weights, -gamma_), kops::subtract(margin_, distance));
  const Tensor neg_terms = kops::multiply(kops::multiply(neg_weights, gamma_), kops::subtract(1.0 - margin_, distance));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const Tensor p_loss = kops::logsumexp(kops::where(positive, pos_terms, neg_inf), 1);
  const Tensor n_loss = kops::logsumexp(kops::where(negative, neg_terms, neg_inf), 1);
  return per_sample_values(kops::softplus(kops::add(p_loss, n_loss)), n);
}

Tensor Circle::loss_mask(const Tensor& y_true, const Tensor& y_pred) const {
  return loss_mask(y_true, y_pred, Tensor());
}
Tensor Circle::loss_mask(const Tensor& y_true, const Tensor& y_pred, const Tensor& values) const {
  const Tensor v = values.defined() ? values : per_sample(y_true, y_pred);
  return kops::reshape(kops::cast(kops::greater(v, 0.0), DType::float32), {v.shape()[0], 1});  // Keras: loss > 0
}

std::string Circle::get_config() const {
  ser::json c = base_config(*this);
  c["gamma"] = gamma_;
  c["margin"] = margin_;
  c["remove_diagonal"] = remove_diagonal_;
  return ser::dumps(c);
}

}  // namespace osprey::keras::losses
