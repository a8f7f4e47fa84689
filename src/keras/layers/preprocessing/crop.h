// Keras's smart_resize crop, shared by Resizing/CenterCrop and image_dataset_from_directory.
#pragma once

#include <cstdint>

#include "osprey/tensor.h"

namespace osprey::keras::layers {

/// The largest centred window of images (N, H, W, C) with the aspect ratio height : width (Keras's
/// crop_to_aspect_ratio / smart_resize, before the resize).
Tensor crop_to_aspect(const Tensor& images, int64_t height, int64_t width);

}  // namespace osprey::keras::layers
