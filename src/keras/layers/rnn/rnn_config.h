// What the recurrent layers' config readers share (rnn_config.cpp, conv_lstm.cpp).
#pragma once

#include <string>

#include "keras/saving/serialization.h"
#include "osprey/keras/layers/rnn.h"

namespace osprey::keras::layers::detail {

/// A recurrent cell's arguments from a Keras config (activations, initializers, penalties, dropouts); ValueError
/// for a set activity_regularizer and for bad values, naming `cls`.
RecurrentOptions recurrent_from(const serialization::json& c, const std::string& cls);

}  // namespace osprey::keras::layers::detail
