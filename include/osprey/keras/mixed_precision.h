// keras.mixed_precision: dtype policies. A layer computes in its policy's compute dtype and keeps its variables in
// the variable dtype (float32): "mixed_bfloat16" computes in bfloat16 (oneDNN's bfloat16 products on CPUs with
// AVX-512 BF16), "mixed_float16" in float16. Losses and metrics take the outputs as float32, as Keras's do.
// Training in float16 uses dynamic loss scaling: keras::mixed_precision::LossScaleOptimizer is declared in
// osprey/keras/optimizers.h, and compile() applies it by itself under "mixed_float16".
#pragma once

#include <string>

#include "osprey/dtype.h"

namespace osprey::keras::mixed_precision {

/// keras.DTypePolicy: "float32", "float64", "float16", "bfloat16" (compute and variables in that dtype),
/// "mixed_float16", "mixed_bfloat16" (compute in the half type, variables float32); "int32", "int64", "bool" for
/// layers whose outputs are ids (Hashing, Discretization: a layer that computes in floats takes float32 under them).
/// ValueError for other names.
class DTypePolicy {
 public:
  DTypePolicy() : DTypePolicy("float32") {}
  explicit DTypePolicy(const std::string& name);
  const std::string& name() const { return name_; }
  DType compute_dtype() const { return compute_; }
  DType variable_dtype() const { return variable_; }
  bool operator==(const DTypePolicy& other) const { return name_ == other.name_; }

 private:
  std::string name_;
  DType compute_, variable_;
};
using Policy = DTypePolicy;

/// The policy layers created from now on take (Keras's keras.mixed_precision.set_global_policy). Layers made
/// before keep theirs.
void set_global_policy(const std::string& name);
void set_global_policy(const DTypePolicy& policy);
DTypePolicy global_policy();

}  // namespace osprey::keras::mixed_precision
