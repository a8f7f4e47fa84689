// Layers that reduce over a set of axes (Softmax(axis=(1, 2)), UnitNormalization(axis=[1, 3])) as over one: the
// axes moved to the end and flattened, so that the rows kernels do the work, and back.
#pragma once

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::keras::layers::detail {

/// `axes` of a rank-`rank` input, negative ones from the end, checked: none the batch axis, none twice, all in
/// range (ValueError naming the layer); sorted.
inline std::vector<int> feature_axes(const std::string& layer, const std::string& cls, const std::vector<int>& axes,
                                     int rank) {
  std::vector<int> out;
  for (int a : axes) {
    const int ax = a < 0 ? a + rank : a;
    if (ax <= 0 || ax >= rank || std::find(out.begin(), out.end(), ax) != out.end()) {
      throw ValueError(fmt::format("Layer '{}' ({}): axis=({}) must name distinct axes of inputs of rank {}, the batch "
                                   "axis excluded (1 to {}, or -1 to -{})",
                                   layer, cls, fmt::join(axes, ", "), rank, rank - 1, rank - 1));
    }
    out.push_back(ax);
  }
  if (out.empty()) throw ValueError(fmt::format("Layer '{}' ({}): axis must name at least one axis", layer, cls));
  std::sort(out.begin(), out.end());
  return out;
}

/// A tensor of `shape` seen as (rows, the product of `axes`): the other axes first, in order.
class TrailingAxes {
 public:
  TrailingAxes(const Shape& shape, const std::vector<int>& sorted_axes) : shape_(shape) {
    const int r = shape.rank();
    for (int i = 0; i < r; ++i) {
      if (!std::binary_search(sorted_axes.begin(), sorted_axes.end(), i)) perm_.push_back(i);
    }
    perm_.insert(perm_.end(), sorted_axes.begin(), sorted_axes.end());
    inverse_.resize(perm_.size());
    for (std::size_t i = 0; i < perm_.size(); ++i) inverse_[static_cast<std::size_t>(perm_[i])] = static_cast<int>(i);
    for (int i : perm_) moved_.push_back(shape[i]);
    for (int a : sorted_axes) inner_ *= shape[a];
    identity_ = std::is_sorted(perm_.begin(), perm_.end());
  }
  /// (rows, inner): x's other axes flattened into the rows, the axes into each row.
  Tensor rows(const Tensor& x) const {
    const Tensor moved = identity_ ? x : osprey::ops::transpose(x, perm_);
    return osprey::ops::reshape(moved, Shape({shape_.num_elements() / std::max<int64_t>(inner_, 1), inner_}));
  }
  /// rows()'s inverse.
  Tensor back(const Tensor& rows) const {
    const Tensor moved = osprey::ops::reshape(rows, Shape(moved_));
    return identity_ ? moved : osprey::ops::transpose(moved, inverse_);
  }

 private:
  Shape shape_;
  std::vector<int> perm_, inverse_;
  std::vector<int64_t> moved_;
  int64_t inner_ = 1;
  bool identity_ = false;
};

}  // namespace osprey::keras::layers::detail
