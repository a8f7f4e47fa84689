// A Keras activation by name: one the kernels implement (fused into Dense), or a composite of ops.
#pragma once

#include <string>

#include "osprey/ops.h"

namespace osprey::keras {

struct ActivationFn {
  std::string name = "linear";  ///< Keras's name ("silu" for "swish")
  osprey::ops::Activation kernel = osprey::ops::Activation::linear;
  bool composite = false;  ///< true: applied with ops after a linear product

  /// Throws ValueError listing the known names for unknown ones.
  static ActivationFn get(const std::string& name);
  Tensor operator()(const Tensor& x) const;
};

}  // namespace osprey::keras
