// What the keras::ops source files share: axis arguments checked and resolved against a rank, Keras's float dtype
// for integer and bool inputs, and int64 index vectors for take().
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::ops::detail {

/// ValueError (Keras's text) unless data_format is "channels_last" or "channels_first".
inline void check_data_format(const std::string& data_format, const char* op) {
  if (data_format != "channels_last" && data_format != "channels_first") {
    throw ValueError(fmt::format("{}: The `data_format` argument must be one of {{\"channels_first\", "
                                 "\"channels_last\"}}. Received: data_format={}",
                                 op, data_format));
  }
}

/// The channel axis of rank-3 or rank-4 images; ValueError (Keras's text) for other ranks or an unknown format.
inline int channel_axis(const Tensor& images, const std::string& data_format, const char* op) {
  const int rank = images.shape().rank();
  if (rank != 3 && rank != 4) {
    throw ValueError(fmt::format("{}: Invalid images rank: expected rank 3 (single image) or rank 4 (batch of "
                                 "images). Received input with shape: images.shape={}",
                                 op, images.shape().to_string()));
  }
  check_data_format(data_format, op);
  return data_format == "channels_last" ? rank - 1 : rank - 3;
}

/// `axis` (negative: from the end) as an index in [0, rank); InvalidArgumentError naming `op` otherwise.
inline int normalized(int axis, int rank, const char* op) {
  if (axis < -rank || axis >= rank) {
    throw InvalidArgumentError(fmt::format("{}: axis {} is out of range for a tensor of rank {} (valid: [{}, {}))", op,
                                           axis, rank, -rank, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

/// An Axes argument as indices: every axis when unset, else each one normalized.
inline std::vector<int> resolved_axes(const Axes& axis, int rank, const char* op) {
  std::vector<int> out;
  if (axis.all()) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
  } else {
    for (int a : axis.axes()) out.push_back(normalized(a, rank, op));
  }
  return out;
}

/// Keras's promotion order of dtypes: bool < int32 < int64 < float16, bfloat16 < float32 < float64.
inline int rank_of(DType t) {
  switch (t) {
    case DType::bool_: return 0;
    case DType::int32: return 1;
    case DType::int64: return 2;
    case DType::float16:
    case DType::bfloat16: return 3;
    case DType::float32: return 4;
    case DType::float64: return 5;
  }
  return 4;
}
/// The wider of two dtypes (float16 with bfloat16: float32), keras.ops.result_type of two tensors.
inline DType wider(DType x, DType y) {
  if (is_half(x) && is_half(y) && x != y) return DType::float32;
  return rank_of(x) >= rank_of(y) ? x : y;
}

/// The dtype a float op computes an input of dtype t in: t itself when floating, else float32 (Keras's floatx()).
inline DType float_of(DType t) { return is_floating(t) ? t : DType::float32; }
inline Tensor floating(const Tensor& x) { return is_floating(x.dtype()) ? x : osprey::ops::cast(x, DType::float32); }

/// keras.backend.epsilon().
inline constexpr double kEpsilon = 1e-7;

/// The number v as a 0-d tensor of like's dtype.
inline Tensor scalar(double v, const Tensor& like) { return Tensor::scalar(v, like.dtype()); }

/// x with its NaNs replaced by `fill` (integers have none).
inline Tensor nan_filled(const Tensor& x, double fill) {
  if (!is_floating(x.dtype())) return x;
  return osprey::ops::where(osprey::keras::ops::isnan(x), scalar(fill, x), x);
}

/// ValueError naming `op` and `what` unless t holds integers (not floats, not bool).
inline void check_integer(const Tensor& t, const char* op, const char* what) {
  if (is_floating(t.dtype()) || t.dtype() == DType::bool_) {
    throw ValueError(fmt::format("{}: {} must be integers; got {}", op, what, dtype_name(t.dtype())));
  }
}

/// t (made on the host or the scope's device) where `like` is.
inline Tensor where_is(const Tensor& t, const Tensor& like) {
  return &t.device_ref() == &like.device_ref() ? t : t.to(like.device_ref());
}

/// A 1-D int64 tensor of `v` (indices for take()).
inline Tensor index_vector(const std::vector<int64_t>& v) {
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
}

/// quantile's and nanquantile's q (each in [0, 1]) and method, checked (ValueError naming `op`).
inline void check_quantiles(const std::vector<double>& q, const std::string& method, const char* op) {
  static const char* methods[] = {"linear", "lower", "higher", "midpoint", "nearest"};
  if (std::find(std::begin(methods), std::end(methods), method) == std::end(methods)) {
    throw ValueError(fmt::format("{}: method '{}' is not one of linear, lower, higher, midpoint, nearest", op, method));
  }
  for (double v : q) {
    if (!(v >= 0 && v <= 1)) throw ValueError(fmt::format("{}: q must be in [0, 1], got {}", op, v));
  }
}

/// x with the reduced axes of `axis` moved last and flattened into one: (kept axes..., n); `axes` gets them.
/// InvalidArgumentError naming `op` when n is 0.
inline Tensor quantile_rows(const Tensor& x, const Axes& axis, const char* op, std::vector<int>& axes) {
  const int r = x.shape().rank();
  axes = resolved_axes(axis, r, op);
  std::vector<int> perm;
  std::vector<int64_t> flat;
  for (int i = 0; i < r; ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) perm.push_back(i), flat.push_back(x.shape()[i]);
  }
  perm.insert(perm.end(), axes.begin(), axes.end());
  int64_t n = 1;
  for (int i : axes) n *= x.shape()[i];
  if (n == 0) throw InvalidArgumentError(fmt::format("{} of an empty axis (x of shape {})", op, x.shape().to_string()));
  flat.push_back(n);
  return osprey::ops::reshape(transpose(x, perm), Shape(flat));
}

/// quantile_rows()'s (..., k) quantiles as NumPy gives them: the k first; with keepdims, x's axes with ones where
/// reduced.
inline Tensor quantiles_first(Tensor out, const Shape& x_shape, const std::vector<int>& axes, bool keepdims) {
  if (keepdims) {
    std::vector<int64_t> dims = x_shape.dims_vector();
    for (int i : axes) dims[static_cast<std::size_t>(i)] = 1;
    dims.push_back(out.shape()[out.shape().rank() - 1]);
    out = osprey::ops::reshape(out, Shape(dims));
  }
  return moveaxis(out, -1, 0);
}

/// The quantile of a list of one: its leading axis dropped.
inline Tensor only_quantile(const Tensor& out) {
  return osprey::ops::reshape(out, Shape(std::vector<int64_t>(out.shape().dims().begin() + 1, out.shape().dims().end())));
}

}  // namespace osprey::keras::ops::detail
