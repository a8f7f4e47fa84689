// Reverse-mode automatic differentiation with a tape (tf.GradientTape).
#pragma once

#include <memory>
#include <vector>

#include "osprey/tensor.h"
#include "osprey/variable.h"

namespace osprey {

/// Records the ops run while it is alive (on this thread) whose inputs are watched — trainable variables and
/// tensors passed to watch() — and computes gradients by walking them in reverse.
class GradientTape {
 public:
  /// A non-persistent tape allows one gradient() call.
  explicit GradientTape(bool persistent = false);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /// Records ops on `tensor` from now on.
  void watch(const Tensor& tensor);
  /// d target / d source for each source (target's gradient seeded with ones). A source the target does not
  /// depend on gets an undefined Tensor, as TensorFlow returns None.
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources);
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Variable*>& sources);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace osprey
