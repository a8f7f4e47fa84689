// Keras's smart_resize crop, shared by Resizing/CenterCrop/RandomCrop and image_dataset_from_directory, and the
// image layers' input checks.
#pragma once

#include <cstdint>
#include <string>

#include "osprey/tensor.h"

namespace osprey::keras::layers {

/// The largest centred window of images (N, H, W, C) with the aspect ratio height : width (Keras's
/// crop_to_aspect_ratio / smart_resize, before the resize).
Tensor crop_to_aspect(const Tensor& images, int64_t height, int64_t width);

/// Keras's error unless a per-sample shape is an image's (height, width, channels).
void check_images(const std::string& layer, const Shape& input_shape);
/// The same for a batch `x` of rank 4.
void check_batch(const std::string& layer, const Tensor& x);

}  // namespace osprey::keras::layers
