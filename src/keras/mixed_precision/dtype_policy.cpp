#include <mutex>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/keras/mixed_precision.h"

namespace osprey::keras::mixed_precision {

DTypePolicy::DTypePolicy(const std::string& name) : name_(name) {
  if (name == "mixed_float16" || name == "mixed_bfloat16") {
    compute_ = name == "mixed_float16" ? DType::float16 : DType::bfloat16;
    variable_ = DType::float32;
  } else if (name == "float32" || name == "float64" || name == "float16" || name == "bfloat16" || name == "int32" ||
             name == "int64" || name == "bool") {
    compute_ = variable_ = dtype_from_name(name);  // integer policies: layers that give ids (Hashing, Discretization)
  } else {
    throw ValueError(fmt::format("Cannot convert '{}' to a mixed precision DTypePolicy. Valid policies include "
                                 "'mixed_float16', 'mixed_bfloat16', and the name of any float dtype such as "
                                 "'float32'.",
                                 name));
  }
}

namespace {
std::mutex g_mu;
DTypePolicy& global() {
  static DTypePolicy p("float32");
  return p;
}
}  // namespace

void set_global_policy(const std::string& name) { set_global_policy(DTypePolicy(name)); }

void set_global_policy(const DTypePolicy& policy) {
  if (!is_floating(policy.compute_dtype())) {
    throw ValueError(fmt::format("set_global_policy can only be used to set the global policy to floating-point "
                                 "policies, such as \"float32\" and \"mixed_float16\", but got policy: {}",
                                 policy.name()));
  }
  std::lock_guard<std::mutex> lock(g_mu);
  global() = policy;
}

DTypePolicy global_policy() {
  std::lock_guard<std::mutex> lock(g_mu);
  return global();
}

}  // namespace osprey::keras::mixed_precision
