// Every Keras layer family (keras.layers): the Layer base, then one header per family.
#pragma once

#include "osprey/keras/layers/activations.h"
#include "osprey/keras/layers/attention.h"
#include "osprey/keras/layers/audio.h"
#include "osprey/keras/layers/color.h"
#include "osprey/keras/layers/conv_lstm.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/core.h"
#include "osprey/keras/layers/hashing.h"
#include "osprey/keras/layers/layer.h"
#include "osprey/keras/layers/merging.h"
#include "osprey/keras/layers/normalization.h"
#include "osprey/keras/layers/pooling.h"
#include "osprey/keras/layers/preprocessing.h"
#include "osprey/keras/layers/regularization.h"
#include "osprey/keras/layers/reshaping.h"
#include "osprey/keras/layers/rnn.h"
