// What the image layers share: Keras's smart_resize crop (Resizing/CenterCrop/RandomCrop and
// image_dataset_from_directory), their input checks, Keras's factor parsing, host draws and config pairs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "osprey/keras/layers/convolutional.h"
#include "osprey/ops.h"
#include "osprey/tensor.h"

namespace osprey::keras::layers {

/// The largest centred window of images (N, H, W, C) with the aspect ratio height : width (Keras's
/// crop_to_aspect_ratio / smart_resize, before the resize).
Tensor crop_to_aspect(const Tensor& images, int64_t height, int64_t width);
/// Images (N, H, W, C) padded evenly on the short side with fill_value to the aspect ratio height : width (Keras's
/// pad_to_aspect_ratio, before the resize).
Tensor pad_to_aspect(const Tensor& images, int64_t height, int64_t width, double fill_value);

/// tf.image.resize's method of a Keras interpolation name as Keras's TensorFlow backend takes them (bilinear,
/// nearest, bicubic, area, lanczos3, lanczos5); ValueError naming `where` and them for another.
osprey::ops::ResizeMethod keras_resize_method(const std::string& name, const char* where);

/// Images (N, C, H, W) as (N, H, W, C) for the ops when `first` (channels_first), and back.
inline Tensor to_last(const Tensor& x, bool first) {
  return first ? osprey::ops::transpose(x, detail::to_channels_last(2)) : x;
}
inline Tensor from_last(const Tensor& x, bool first) {
  return first ? osprey::ops::transpose(x, detail::to_channels_first(2)) : x;
}

/// Keras's error unless a per-sample shape is an image's (height, width, channels).
void check_images(const std::string& layer, const Shape& input_shape);
/// The same for a batch `x` of rank 4.
void check_batch(const std::string& layer, const Tensor& x);

/// Keras's BaseImagePreprocessingLayer._set_factor within [lo, hi]: one number f in [lo, hi] gives
/// (max(-|f|, lo), |f|); a pair is sorted and may not lie wholly above hi or below lo. ValueError (Keras's text).
std::pair<double, double> keras_factor(double f, double lo, double hi);
std::pair<double, double> keras_factor(std::pair<double, double> f, double lo, double hi);
/// n uniform draws in [0, 1) from the global generator, on the host.
std::vector<float> host_uniform(int64_t n);
/// x as float32 (the image layers compute in float32).
Tensor as_float(const Tensor& x);
/// A config's list of two numbers (value_range, a factor pair); ValueError naming the layer and key otherwise.
std::pair<double, double> number_pair(const nlohmann::json& v, const char* key, const char* layer);

}  // namespace osprey::keras::layers
