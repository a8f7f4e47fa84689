#include "core/env.h"

#include <cstdlib>

namespace osprey::env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

std::optional<std::string> get_first(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (auto v = get(n)) return v;
  }
  return std::nullopt;
}

}  // namespace osprey::env
