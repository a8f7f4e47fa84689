// Environment-variable access in one place, so tests and the doctor see the same reads.
#pragma once

#include <optional>
#include <initializer_list>
#include <string>

namespace osprey::env {

/// The variable's value, or nothing when it is unset (an empty value is returned as "").
std::optional<std::string> get(const char* name);
/// The first of the names that is set.
std::optional<std::string> get_first(std::initializer_list<const char*> names);

}  // namespace osprey::env
