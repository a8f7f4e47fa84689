// Tensor shapes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace osprey {

/// A tensor shape: a list of non-negative dimension sizes. Prints as TensorFlow does: "(64, 20)".
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::vector<int64_t> dims);

  /// Number of dimensions.
  int rank() const { return static_cast<int>(dims_.size()); }
  /// Size of dimension i; negative i counts from the end, as in Python.
  int64_t operator[](int i) const;
  /// Product of all dimensions (1 for a scalar).
  int64_t num_elements() const;
  const std::vector<int64_t>& dims() const { return dims_; }
  /// "(2048, 20)"; a scalar prints "()", a vector "(5,)".
  std::string to_string() const;
  /// Keras's batch-shape form, with None for the batch: "(None, 64)".
  std::string to_keras_string() const;

  bool operator==(const Shape& other) const = default;

 private:
  std::vector<int64_t> dims_;
};

}  // namespace osprey
