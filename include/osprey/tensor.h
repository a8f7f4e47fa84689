// Tensor: a shape, a dtype and a reference-counted buffer on one logical device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "osprey/device.h"
#include "osprey/dtype.h"
#include "osprey/shape.h"

namespace osprey {

namespace runtime {
class Device;
}
struct TensorImpl;

/// An n-dimensional array on a device. Copies share the buffer (like TensorFlow's eager tensors); use clone()
/// for a deep copy. Tensors are created on the current device (DeviceScope, else the default device).
class Tensor {
 public:
  /// An undefined tensor (defined() is false).
  Tensor() = default;

  /// Uninitialised storage of the given shape and dtype on `device` (nullptr: the current device).
  static Tensor empty(const Shape& shape, DType dtype = float32, runtime::Device* device = nullptr);
  static Tensor zeros(const Shape& shape, DType dtype = float32);
  static Tensor ones(const Shape& shape, DType dtype = float32);
  static Tensor full(const Shape& shape, double value, DType dtype = float32);
  /// Copies `data` (num_elements of `shape` values) from host memory.
  static Tensor from_host(const float* data, const Shape& shape);
  static Tensor from_host(const double* data, const Shape& shape);
  static Tensor from_host(const int32_t* data, const Shape& shape);
  static Tensor from_host(const int64_t* data, const Shape& shape);
  static Tensor from_host(const bool* data, const Shape& shape);
  /// Copies a host vector; throws InvalidArgumentError if its size does not match the shape.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& data, const Shape& shape);
  /// A 0-d tensor.
  static Tensor scalar(double value, DType dtype = float32);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  DType dtype() const;
  int64_t num_elements() const { return shape().num_elements(); }
  int64_t nbytes() const;
  /// The logical device the buffer lives on.
  LogicalDevice device() const;
  runtime::Device& device_ref() const;

  /// Element-type conversion (a new tensor; same device).
  Tensor cast(DType dtype) const;
  /// A copy on another device ("/GPU:0", "CPU:0", ...).
  Tensor to(const std::string& device) const;
  Tensor to(runtime::Device& device) const;
  /// A deep copy on the same device.
  Tensor clone() const;
  /// Rows [begin, end) of the first dimension, sharing the buffer.
  Tensor slice_rows(int64_t begin, int64_t end) const;
  /// x[i]: entry i of the first axis (negative: from the end), that axis removed; a copy, recorded on gradient
  /// tapes. InvalidArgumentError when out of range.
  Tensor operator[](int64_t i) const;
  /// The block of `size` elements per axis starting at `begin` (one entry per axis; a size of -1: to the end), as
  /// keras.ops.slice; recorded on gradient tapes.
  Tensor slice(const std::vector<int64_t>& begin, const std::vector<int64_t>& size) const;
  /// The same buffer with another shape of the same element count.
  Tensor reshape(const Shape& shape) const;

  /// Copies the values to host memory.
  template <typename T>
  std::vector<T> to_vector() const;
  /// The value of a one-element tensor, converted to double.
  double item() const;
  /// Typed pointer to the data; only for tensors in host memory (CPU devices). Throws otherwise.
  template <typename T>
  T* data() const;
  void* raw_data() const;

  /// numpy-like text: "tf.Tensor([[1 2]], shape=(1, 2), dtype=float32)"-style summary.
  std::string to_string() const;

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace osprey
