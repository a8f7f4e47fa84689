// Keras's auto-naming of layers and models: "dense", "dense_1", ...; reset by clear_session().
#pragma once

#include <string>

namespace osprey::keras {
/// The next unique name for `prefix` (the snake_case class name).
std::string auto_name(const std::string& prefix);
}  // namespace osprey::keras
