// Tests that set a global dtype policy: restores "float32" when the scope ends, whatever the test does.
#pragma once

#include <string>

#include "osprey/keras/mixed_precision.h"

namespace osprey::testing {

struct PolicyScope {
  explicit PolicyScope(const std::string& name) { keras::mixed_precision::set_global_policy(name); }
  ~PolicyScope() { keras::mixed_precision::set_global_policy("float32"); }
  PolicyScope(const PolicyScope&) = delete;
  PolicyScope& operator=(const PolicyScope&) = delete;
};

}  // namespace osprey::testing
