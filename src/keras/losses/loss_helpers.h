// Helpers the loss files share: Keras's rank matching of labels and predictions, per-sample values, hinge labels.
#pragma once

#include <string>

#include "osprey/tensor.h"

namespace osprey::keras::losses::detail {

/// Keras's squeeze_or_expand_to_same_rank: when the ranks differ by one and the longer one ends in 1, that axis is
/// squeezed (or, against a rank-1 tensor, the other gains it).
void same_rank(Tensor& y_true, Tensor& y_pred);
/// Predictions in a float dtype (integers as float32), as Keras's convert_to_tensor of y_pred.
Tensor float_predictions(const Tensor& y_pred);
/// y_true in y_pred's float dtype (labels given as integers).
Tensor as_float_like(const Tensor& y_true, const Tensor& y_pred);
/// Values of shape (N, ...) as one float32 value per sample (its mean), so that the batch mean is the elements'
/// mean; a scalar (a loss over the whole batch) is given to each of the N samples.
Tensor per_sample_values(const Tensor& values, int64_t n);
/// Whether sample weights `w` hold more than one value per sample: (N, d1, ..., dk), a weight per position of a
/// loss's values (a sequence's steps, an image's pixels), as Keras multiplies them into its values. (N,) and (N, 1)
/// are one per sample; a trailing axis of 1 does not count ((N, T, 1) weighs the positions (N, T)).
bool weighs_positions(const Tensor& w);
/// Labels, predictions and weights per position: y_true and y_pred with the weights' positions (N, d1, ..., dk) as
/// rows, (R, rest...) with R = N·d1⋯dk, and the weights as (R,), one per row. ValueError naming the `kind`
/// ("Loss", "Metric") and `name` and the shapes unless y_true and y_pred start with the positions' axes and y_pred has at least `more_axes` more (a
/// loss's 1, the axis it reduces: Keras's loss values are y_pred's shape without its last axis; a metric's 0).
struct PositionRows {
  Tensor y_true, y_pred, weights;
  Shape positions;
};
PositionRows position_rows(const Tensor& y_true, const Tensor& y_pred, const Tensor& w, const char* kind,
                           const std::string& name, std::size_t more_axes);
/// Hinge losses' labels: 0/1 labels become −1/1 (when every label is 0 or 1), others are kept.
Tensor hinge_labels(const Tensor& y);

}  // namespace osprey::keras::losses::detail
