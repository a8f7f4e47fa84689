// Osprey: Keras-style training on a TensorFlow-style device runtime, in C++.
#pragma once

#include <string>

#include "osprey/autodiff.h"
#include "osprey/config.h"
#include "osprey/data.h"
#include "osprey/device.h"
#include "osprey/distribute.h"
#include "osprey/dtype.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/ops.h"
#include "osprey/random.h"
#include "osprey/shape.h"
#include "osprey/summary.h"
#include "osprey/tensor.h"
#include "osprey/variable.h"

namespace osprey {
/// The library's version ("0.1.0").
std::string version();
}  // namespace osprey
