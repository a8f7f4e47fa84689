// Tensor shapes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace osprey {

/// A tensor shape: a list of non-negative dimension sizes. Prints as TensorFlow does: "(64, 20)". Shapes of rank
/// up to kInlineRank live inside the object: making a tensor or a view of one allocates nothing for its shape.
class Shape {
 public:
  static constexpr int kInlineRank = 6;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims) : Shape(std::span<const int64_t>(dims)) {}

  /// Number of dimensions.
  int rank() const { return rank_; }
  /// Size of dimension i; negative i counts from the end, as in Python.
  int64_t operator[](int i) const;
  /// Product of all dimensions (1 for a scalar).
  int64_t num_elements() const;
  std::span<const int64_t> dims() const { return {data(), static_cast<std::size_t>(rank_)}; }
  std::vector<int64_t> dims_vector() const { return {data(), data() + rank_}; }
  /// This shape with dimension i (negative: from the end) set to `size`.
  Shape with_dim(int i, int64_t size) const;
  /// "(2048, 20)"; a scalar prints "()", a vector "(5,)".
  std::string to_string() const;
  /// Keras's batch-shape form, with None for the batch: "(None, 64)".
  std::string to_keras_string() const;

  bool operator==(const Shape& other) const = default;

 private:
  const int64_t* data() const { return rank_ <= kInlineRank ? inline_ : heap_.data(); }
  /// Dimension index i (negative: from the end) as 0 .. rank-1; InvalidArgumentError when out of range.
  int index_of(int i) const;
  int rank_ = 0;
  int64_t inline_[kInlineRank] = {};  // ranks up to kInlineRank; unused entries stay 0 (for ==)
  std::vector<int64_t> heap_;         // larger ranks
};

}  // namespace osprey
