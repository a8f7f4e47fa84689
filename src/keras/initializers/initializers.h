// Internal: checking an initializer's name when a layer is made (not when it is built). Private.
#pragma once

#include <string>

namespace osprey::keras {
/// ValueError listing the known names unless `initializer` is one.
void check_initializer(const std::string& initializer);
}  // namespace osprey::keras
