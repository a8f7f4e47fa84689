// Keras in C++: layers, functional models and Sequential, losses, metrics, optimizers, callbacks.
#pragma once

#include "osprey/keras/callbacks.h"
#include "osprey/keras/keras_tensor.h"
#include "osprey/keras/layers.h"
#include "osprey/keras/layers/merging.h"
#include "osprey/keras/losses.h"
#include "osprey/keras/mixed_precision.h"
#include "osprey/keras/metrics.h"
#include "osprey/keras/model.h"
#include "osprey/keras/optimizers.h"
#include "osprey/keras/plot.h"
#include "osprey/keras/saving.h"

namespace osprey::keras::utils {
/// Seeds every random source Osprey uses (keras.utils.set_random_seed).
void set_random_seed(uint64_t seed);
}  // namespace osprey::keras::utils
