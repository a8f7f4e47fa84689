// keras.regularizers (weight penalties) and keras.constraints (projections after each update).
#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/keras/layers/layer.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

Regularizer OrthogonalRegularizer(double factor, const std::string& mode) {
  if (mode != "rows" && mode != "columns") {
    throw ValueError(fmt::format("Invalid value for argument `mode`. Expected one of {{'rows', 'columns'}}. "
                                 "Received: mode={}",
                                 mode));
  }
  Regularizer r;
  r.kind = Regularizer::Kind::orthogonal;
  r.factor = factor;
  r.rows = mode == "rows";
  return r;
}

Tensor Regularizer::operator()(const Tensor& w) const {
  if (kind == Kind::orthogonal) {
    if (w.shape().rank() != 2) {
      throw ValueError(fmt::format("Inputs to OrthogonalRegularizer must have rank 2. Received: inputs.shape={}",
                                   w.shape().to_string()));
    }
    // Keras: the rows (or columns) scaled to unit L2 norm (rsqrt(max(Σx², 1e-7))), their Gram matrix without its
    // diagonal, factor · ½ · Σ|·| / pairs.
    // Rows as the columns of the transpose: each column scaled by a vector along the last axis.
    const Tensor x = rows ? osprey::ops::transpose(w, {1, 0}) : w;
    const int64_t size = x.shape()[1];
    const Tensor sq = osprey::ops::reduce_sum(osprey::ops::square(x), 0);
    const Tensor unit = osprey::ops::div(x, osprey::ops::sqrt(osprey::ops::maximum(sq, Tensor::scalar(1e-7))));
    const Tensor gram = osprey::ops::matmul(unit, unit, true, false);
    std::vector<float> off(static_cast<std::size_t>(size * size), 1.0f);
    for (int64_t i = 0; i < size; ++i) off[static_cast<std::size_t>(i * size + i)] = 0.0f;
    const Tensor mask = Tensor::from_vector(off, Shape({size, size})).to(w.device_ref());
    const double pairs = static_cast<double>(size) * (static_cast<double>(size) - 1.0) / 2.0;
    return osprey::ops::mul(osprey::ops::reduce_sum(osprey::ops::abs(osprey::ops::mul(gram, mask))),
                    Tensor::scalar(factor * 0.5 / std::max(pairs, 1.0)));
  }
  Tensor total = Tensor::scalar(0.0);
  if (l1 != 0.0) total = osprey::ops::add(total, osprey::ops::mul(osprey::ops::reduce_sum(osprey::ops::abs(w)), Tensor::scalar(l1)));
  if (l2 != 0.0) total = osprey::ops::add(total, osprey::ops::mul(osprey::ops::reduce_sum(osprey::ops::square(w)), Tensor::scalar(l2)));
  return total;
}

Tensor Constraint::operator()(const Tensor& w) const {
  if (kind == Kind::non_neg) return osprey::ops::mul(w, osprey::ops::greater_equal(w, Tensor::scalar(0.0)));
  // The norm-based ones, per column (axis 0): w · desired / (1e-7 + norms).
  Tensor w2 = w.shape().rank() == 2 ? w : w.reshape(Shape({w.num_elements(), 1}));
  const Tensor norms = osprey::ops::sqrt(osprey::ops::reduce_sum(osprey::ops::square(w2), 0));
  Tensor desired;
  switch (kind) {
    case Kind::max_norm: desired = osprey::ops::minimum(norms, Tensor::scalar(max_value)); break;
    case Kind::unit_norm: desired = Tensor::scalar(1.0); break;
    case Kind::min_max_norm: {
      const Tensor clipped = osprey::ops::minimum(osprey::ops::maximum(norms, Tensor::scalar(min_value)), Tensor::scalar(max_value));
      desired = osprey::ops::add(osprey::ops::mul(clipped, Tensor::scalar(rate)), osprey::ops::mul(norms, Tensor::scalar(1.0 - rate)));
      break;
    }
    case Kind::non_neg: break;
  }
  const Tensor scaled = osprey::ops::mul(w2, osprey::ops::div(desired, osprey::ops::add(norms, Tensor::scalar(1e-7))));
  return w.shape().rank() == 2 ? scaled : scaled.reshape(w.shape());
}

}  // namespace osprey::keras::layers
