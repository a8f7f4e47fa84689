// keras.ops.image: Keras 3's image ops on rank-3 (one image) or rank-4 (a batch) tensors, channels last unless
// data_format says "channels_first". Part of keras::ops (osprey/keras/ops.h includes this header).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "osprey/tensor.h"

namespace osprey::keras::ops {

/// keras.ops.image's color conversions of rank-3 or rank-4 images (channels on the last axis, or the third from
/// the end with "channels_first"), in TensorFlow's formulas: rgb_to_grayscale (0.2989 r + 0.5870 g + 0.1140 b, one
/// channel; a one-channel image is returned as it is; integer images computed in float32 and cast back),
/// rgb_to_hsv (h, s, v in [0, 1] for RGB in [0, 1]) and hsv_to_rgb (float images only). Differentiable (Keras's
/// TensorFlow backend has no gradient for hsv_to_rgb).
Tensor rgb_to_grayscale(const Tensor& images, const std::string& data_format = "channels_last");
Tensor rgb_to_hsv(const Tensor& images, const std::string& data_format = "channels_last");
Tensor hsv_to_rgb(const Tensor& images, const std::string& data_format = "channels_last");
/// keras.ops.image.gaussian_blur: a depthwise convolution of rank-3 or rank-4 float images with a Gaussian window of
/// kernel_size (odd sizes in practice) and sigma per axis, zero padding ("same"), as Keras's TensorFlow backend.
Tensor gaussian_blur(const Tensor& images, std::pair<int64_t, int64_t> kernel_size = {3, 3},
                     std::pair<double, double> sigma = {1.0, 1.0}, const std::string& data_format = "channels_last");
/// keras.ops.image.perspective_transform: each image warped so that its end_points land where its start_points
/// were (4 points (x, y) each: (4, 2) for every image or (N, 4, 2)), by the homography Keras solves for, sampled
/// as ImageProjectiveTransformV3 samples ("bilinear" or "nearest"; fill_value outside). Not differentiable.
Tensor perspective_transform(const Tensor& images, const Tensor& start_points, const Tensor& end_points,
                             const std::string& interpolation = "bilinear", double fill_value = 0.0,
                             const std::string& data_format = "channels_last");
/// keras.ops.image.resize's options (Keras's arguments after `size`).
struct ImageResizeOptions {
  /// "bilinear", "nearest", "bicubic", "area", "lanczos3" or "lanczos5" (tf.image.resize's methods)
  std::string interpolation = "bilinear";
  bool antialias = false;  ///< widen the kernel by the downscaling factor (not for "nearest" and "area")
  bool crop_to_aspect_ratio = false;  ///< first crop the largest centred window of the target's aspect ratio
  bool pad_to_aspect_ratio = false;   ///< or first pad evenly on the short side to it, with fill_value
  std::string fill_mode = "constant";  ///< Keras's only one
  double fill_value = 0.0;
  std::string data_format = "channels_last";
};
/// keras.ops.image.resize: images resized to size (height, width) as Keras's TensorFlow backend (tf.image.resize,
/// ops::resize), the result in the images' dtype (integers rounded and saturated). Differentiable for float
/// images. ValueError (Keras's texts) for a size that is not positive, a rank other than 3 or 4, an unknown
/// interpolation or fill_mode, both aspect-ratio options.
Tensor resize(const Tensor& images, std::pair<int64_t, int64_t> size, const ImageResizeOptions& options = {});

/// keras.ops.image.scale_and_translate (Keras's own, from JAX): along each axis of spatial_dims, output position o
/// samples the input at (o + 0.5 - translation) / scale - 0.5 with the kernel of `method` ("linear", "bilinear",
/// "trilinear"; "cubic", "bicubic", "tricubic" (Keys); "lanczos3", "lanczos5"), widened by 1/scale when
/// antialiasing a downscale, its weights normalized and 0 for samples outside the input. output_shape is the whole
/// output's shape (x's rank; only spatial_dims may differ). Integer images are rounded and clipped to their range.
/// Differentiable for float images. ValueError for an unknown method, fewer scales or translations than
/// spatial_dims (Keras reads the first ones), an output_shape of another rank, a scale that is not positive.
Tensor scale_and_translate(const Tensor& images, const std::vector<int64_t>& output_shape,
                           const std::vector<float>& scale, const std::vector<float>& translation,
                           const std::vector<int>& spatial_dims, const std::string& method, bool antialias = true);

}  // namespace osprey::keras::ops
