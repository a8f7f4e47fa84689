// Keras's smart_resize crop, shared by Resizing/CenterCrop/RandomCrop and image_dataset_from_directory, and the
// image layers' input checks.
#pragma once

#include <cstdint>
#include <string>

#include "osprey/keras/layers/convolutional.h"
#include "osprey/ops.h"
#include "osprey/tensor.h"

namespace osprey::keras::layers {

/// The largest centred window of images (N, H, W, C) with the aspect ratio height : width (Keras's
/// crop_to_aspect_ratio / smart_resize, before the resize).
Tensor crop_to_aspect(const Tensor& images, int64_t height, int64_t width);

/// Images (N, C, H, W) as (N, H, W, C) for the ops when `first` (channels_first), and back.
inline Tensor to_last(const Tensor& x, bool first) { return first ? ops::transpose(x, detail::to_channels_last(2)) : x; }
inline Tensor from_last(const Tensor& x, bool first) { return first ? ops::transpose(x, detail::to_channels_first(2)) : x; }

/// Keras's error unless a per-sample shape is an image's (height, width, channels).
void check_images(const std::string& layer, const Shape& input_shape);
/// The same for a batch `x` of rank 4.
void check_batch(const std::string& layer, const Tensor& x);

}  // namespace osprey::keras::layers
