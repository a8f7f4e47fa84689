// Keras 3's weights file (.weights.h5), read and written through the HDF5 C library.
#pragma once

#include <string>

namespace osprey::keras {
class Sequential;
namespace detail {
/// Keras's naming.to_snake_case: "Dense" -> "dense", "LeakyReLU" -> "leaky_re_lu", "RMSprop" -> "rm_sprop".
std::string to_snake_case(const std::string& class_name);
/// Writes `model`'s layer variables and (when compiled and built) its optimizer's variables in Keras 3's layout.
void save_weights_h5(const Sequential& model, const std::string& path);
/// Reads a file written by Keras 3 or save_weights_h5() into `model` (layers by position of their class, like Keras).
void load_weights_h5(Sequential& model, const std::string& path);
}  // namespace detail
}  // namespace osprey::keras
