// A named, mutable tensor that stays on the device it was created on (tf.Variable).
#pragma once

#include <string>

#include "osprey/tensor.h"

namespace osprey {

class Variable {
 public:
  Variable() = default;
  /// Copies `initial_value` onto the current device (DeviceScope, else the default device).
  /// Trainable variables are watched by every GradientTape automatically.
  Variable(const Tensor& initial_value, std::string name, bool trainable = true);

  /// The current value (shares the variable's buffer: in-place updates are visible through it).
  const Tensor& value() const { return value_; }
  Tensor& value() { return value_; }
  /// Copies new values in (same shape and dtype); the variable keeps its device.
  void assign(const Tensor& value);
  const std::string& name() const { return name_; }
  /// Keras's variable path, e.g. "sequential/dense/kernel".
  const std::string& path() const { return path_; }
  void set_path(std::string path) { path_ = std::move(path); }
  bool trainable() const { return trainable_; }
  const Shape& shape() const { return value_.shape(); }
  int64_t num_elements() const { return value_.num_elements(); }

 private:
  Tensor value_;
  std::string name_, path_;
  bool trainable_ = true;
};

}  // namespace osprey
