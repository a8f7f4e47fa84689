// keras.regularizers (weight penalties) and keras.constraints (projections after each update).
#include "osprey/keras/layers/layer.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

Tensor Regularizer::operator()(const Tensor& w) const {
  Tensor total = Tensor::scalar(0.0);
  if (l1 != 0.0) total = ops::add(total, ops::mul(ops::reduce_sum(ops::abs(w)), Tensor::scalar(l1)));
  if (l2 != 0.0) total = ops::add(total, ops::mul(ops::reduce_sum(ops::square(w)), Tensor::scalar(l2)));
  return total;
}

Tensor Constraint::operator()(const Tensor& w) const {
  if (kind == Kind::non_neg) return ops::mul(w, ops::greater_equal(w, Tensor::scalar(0.0)));
  // MaxNorm (axis 0): w · clip(norms, 0, max) / (1e-7 + norms), norms per column.
  Tensor w2 = w.shape().rank() == 2 ? w : w.reshape(Shape({w.num_elements(), 1}));
  const Tensor norms = ops::sqrt(ops::reduce_sum(ops::square(w2), 0));
  const Tensor desired = ops::minimum(norms, Tensor::scalar(max_value));
  const Tensor scaled = ops::mul(w2, ops::div(desired, ops::add(norms, Tensor::scalar(1e-7))));
  return w.shape().rank() == 2 ? scaled : scaled.reshape(w.shape());
}

}  // namespace osprey::keras::layers
