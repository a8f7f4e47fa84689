// What the convolution-shaped layers' config readers share (conv.cpp, conv_lstm.cpp).
#pragma once

#include <string>

#include "keras/saving/serialization.h"
#include "osprey/keras/layers/convolutional.h"

namespace osprey::keras::layers::detail {

/// A tuple argument of a conv config: a list of `rank` integers >= lo, or one integer; Keras's default of 1 when
/// absent (kernel_size has none: a ValueError).
Ints conv_ints_from(const serialization::json& c, const char* key, int rank, int64_t lo, const std::string& what);

}  // namespace osprey::keras::layers::detail
