// keras.utils' data helpers: to_categorical, normalize, split_dataset, and tf.math.confusion_matrix; on the host.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "data/pipeline.h"
#include "osprey/errors.h"
#include "osprey/keras/data.h"
#include "osprey/random.h"

namespace osprey::keras::utils {

namespace {

// Integer labels as int64 values, checked: whole numbers, non-negative.
std::vector<int64_t> labels_of(const Tensor& t, const char* fn, const char* what) {
  if (!t.defined()) throw ValueError(fmt::format("{}: {} is an undefined tensor", fn, what));
  const auto v = (t.dtype() == float64 ? t : t.cast(float64)).to_vector<double>();
  std::vector<int64_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!(v[i] >= 0.0) || v[i] != std::floor(v[i]) || v[i] > 9.0e15) {
      throw ValueError(fmt::format("{}: {} must be non-negative integers; element {} is {}", fn, what, i, v[i]));
    }
    out[i] = static_cast<int64_t>(v[i]);
  }
  return out;
}

int64_t classes_of(const std::vector<int64_t>& a, const std::vector<int64_t>* b, std::optional<int64_t> given,
                   const char* fn) {
  int64_t most = -1;
  for (int64_t v : a) most = std::max(most, v);
  if (b) {
    for (int64_t v : *b) most = std::max(most, v);
  }
  if (!given) return most + 1;
  if (*given <= 0) throw ValueError(fmt::format("{}: num_classes must be positive, got {}", fn, *given));
  if (most >= *given) {
    throw ValueError(fmt::format("{}: label {} is out of range for num_classes={}", fn, most, *given));
  }
  return *given;
}

}  // namespace

Tensor to_categorical(const Tensor& y, std::optional<int64_t> num_classes) {
  const auto labels = labels_of(y, "to_categorical", "the labels");
  const int64_t k = classes_of(labels, nullptr, num_classes, "to_categorical");
  std::vector<int64_t> dims = y.shape().dims_vector();
  if (!dims.empty() && dims.back() == 1 && dims.size() > 1) dims.pop_back();  // Keras drops a trailing 1
  dims.push_back(k);
  std::vector<float> out(labels.size() * static_cast<std::size_t>(k), 0.0f);
  for (std::size_t i = 0; i < labels.size(); ++i) out[i * static_cast<std::size_t>(k) + static_cast<std::size_t>(labels[i])] = 1.0f;
  return Tensor::from_host(out.data(), Shape(dims)).to(data::detail::host());
}

Tensor normalize(const Tensor& x, int axis, int order) {
  if (order != 1 && order != 2) throw ValueError(fmt::format("normalize: order must be 1 or 2, got {}", order));
  const Shape& s = x.shape();
  const int rank = s.rank();
  if (rank == 0 || axis < -rank || axis >= rank) {
    throw ValueError(fmt::format("normalize: axis {} is out of range for a tensor of shape {}", axis, s.to_string()));
  }
  const int a = axis < 0 ? axis + rank : axis;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= s[i];
  for (int i = a + 1; i < rank; ++i) inner *= s[i];
  const int64_t len = s[a];
  const bool f64 = x.dtype() == float64;
  auto v = (f64 ? x : x.cast(float64)).to_vector<double>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double norm = 0.0;
      for (int64_t j = 0; j < len; ++j) {
        const double e = v[static_cast<std::size_t>((o * len + j) * inner + i)];
        norm += order == 1 ? std::abs(e) : e * e;
      }
      if (order == 2) norm = std::sqrt(norm);
      if (norm == 0.0) norm = 1.0;  // Keras: l2[l2 == 0] = 1
      for (int64_t j = 0; j < len; ++j) v[static_cast<std::size_t>((o * len + j) * inner + i)] /= norm;
    }
  }
  Tensor out = Tensor::from_host(v.data(), s).to(data::detail::host());
  return f64 ? out : out.cast(float32);
}

namespace {

int64_t resolve_size(const std::optional<SplitSize>& z, int64_t total, const char* side) {
  if (!z) return -1;
  if (z->fraction) {
    if (!(z->value > 0.0 && z->value < 1.0)) {
      throw ValueError(fmt::format("`{}_size` should be either a positive integer smaller than {}, or a float within "
                                   "the range `[0, 1]`. Received: {}_size={}",
                                   side, total, side, z->value));
    }
    return static_cast<int64_t>(std::nearbyint(z->value * static_cast<double>(total)));  // Python's round()
  }
  if (z->value <= 0 || z->value >= static_cast<double>(total)) {
    throw ValueError(fmt::format("`{}_size` should be either a positive integer smaller than {}, or a float within "
                                 "the range `[0, 1]`. Received: {}_size={}",
                                 side, total, side, static_cast<int64_t>(z->value)));
  }
  return static_cast<int64_t>(z->value);
}

data::Dataset from_elements(const std::vector<data::Element>& all, const std::vector<std::size_t>& order,
                            std::size_t begin, std::size_t end) {
  std::vector<data::Element> rows;
  for (std::size_t i = begin; i < end; ++i) rows.push_back(all[order[i]]);
  return data::Dataset::from_tensor_slices(data::detail::stack(rows, 0));
}

}  // namespace

std::pair<data::Dataset, data::Dataset> split_dataset(const data::Dataset& dataset, std::optional<SplitSize> left_size,
                                                      std::optional<SplitSize> right_size, bool shuffle,
                                                      std::optional<uint64_t> seed) {
  if (!left_size && !right_size) {
    throw ValueError("split_dataset: at least one of the `left_size` or `right_size` must be specified. Received: "
                     "left_size=None and right_size=None");
  }
  const auto all = dataset.collect();
  const auto total = static_cast<int64_t>(all.size());
  if (total == 0) throw ValueError("split_dataset: the dataset is empty; there is nothing to split");
  if (left_size && right_size && left_size->fraction && right_size->fraction &&
      left_size->value + right_size->value > 1.0) {
    throw ValueError("The sum of `left_size` and `right_size` is greater than 1. It must be less than or equal to 1.");
  }
  int64_t left = resolve_size(left_size, total, "left"), right = resolve_size(right_size, total, "right");
  if (left < 0) left = total - right;
  if (right < 0) right = total - left;
  if (left + right > total) {
    throw ValueError(fmt::format("The sum of `left_size` and `right_size` should be smaller than the {}. Received: "
                                 "left_size + right_size = {}and total_length = {}",
                                 total, left + right, total));
  }
  for (auto [split, side] : {std::pair{left, "left"}, std::pair{right, "right"}}) {
    if (split == 0) {
      throw ValueError(fmt::format("With `dataset` of length={}, `left_size`={} and `right_size`={}.Resulting {} side "
                                   "dataset split will be empty. Adjust any of the aforementioned parameters",
                                   total, left, right, side));
    }
  }
  std::vector<std::size_t> order(all.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (shuffle) {
    auto [s, stream] = seed ? std::pair<uint64_t, uint64_t>{*seed, 0} : random::next_seed_and_stream();
    random::Philox rng(s, stream);
    for (std::size_t i = order.size(); i > 1; --i) {  // Fisher-Yates
      const uint64_t r = (static_cast<uint64_t>(rng.next_u32()) << 32) | rng.next_u32();
      std::swap(order[i - 1], order[static_cast<std::size_t>(r % i)]);
    }
  }
  return {from_elements(all, order, 0, static_cast<std::size_t>(left)),
          from_elements(all, order, static_cast<std::size_t>(total - right), static_cast<std::size_t>(total))};
}

std::pair<data::Dataset, data::Dataset> split_dataset(const data::Element& arrays, std::optional<SplitSize> left_size,
                                                      std::optional<SplitSize> right_size, bool shuffle,
                                                      std::optional<uint64_t> seed) {
  return split_dataset(data::Dataset::from_tensor_slices(arrays), left_size, right_size, shuffle, seed);
}

Tensor confusion_matrix(const Tensor& labels, const Tensor& predictions, std::optional<int64_t> num_classes,
                        const Tensor& weights) {
  const auto l = labels_of(labels, "confusion_matrix", "labels");
  const auto p = labels_of(predictions, "confusion_matrix", "predictions");
  if (l.size() != p.size()) {
    throw ValueError(fmt::format("confusion_matrix: labels has {} values and predictions {}; they must match",
                                 l.size(), p.size()));
  }
  std::vector<double> w;
  if (weights.defined()) {
    w = (weights.dtype() == float64 ? weights : weights.cast(float64)).to_vector<double>();
    if (w.size() != l.size()) {
      throw ValueError(fmt::format("confusion_matrix: weights has {} values for {} labels", w.size(), l.size()));
    }
  }
  const int64_t k = classes_of(l, &p, num_classes, "confusion_matrix");
  const auto cells = static_cast<std::size_t>(k * k);
  if (w.empty()) {
    std::vector<int64_t> m(cells, 0);
    for (std::size_t i = 0; i < l.size(); ++i) ++m[static_cast<std::size_t>(l[i] * k + p[i])];
    return Tensor::from_host(m.data(), Shape{k, k}).to(data::detail::host());
  }
  std::vector<float> m(cells, 0.0f);
  for (std::size_t i = 0; i < l.size(); ++i) m[static_cast<std::size_t>(l[i] * k + p[i])] += static_cast<float>(w[i]);
  return Tensor::from_host(m.data(), Shape{k, k}).to(data::detail::host());
}

}  // namespace osprey::keras::utils
