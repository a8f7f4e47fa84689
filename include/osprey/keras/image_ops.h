// keras.ops.image: Keras 3's image ops on rank-3 (one image) or rank-4 (a batch) tensors, channels last unless
// data_format says "channels_first". Part of keras::ops (osprey/keras/ops.h includes this header).
#pragma once

#include <cstdint>
#include <optional>
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

/// keras.ops.image.pad_images / crop_images: exactly two of each axis's three numbers given (top, bottom, target
/// height; left, right, target width), the third inferred; zeros padded, or a window cut out. ValueError (Keras's
/// texts) otherwise, and for a negative or inferred-negative number or a window past the image.
struct PadImagesOptions {
  std::optional<int64_t> top_padding{}, left_padding{}, bottom_padding{}, right_padding{};
  std::optional<int64_t> target_height{}, target_width{};
  std::string data_format = "channels_last";
};
Tensor pad_images(const Tensor& images, const PadImagesOptions& options);
struct CropImagesOptions {
  std::optional<int64_t> top_cropping{}, left_cropping{}, bottom_cropping{}, right_cropping{};
  std::optional<int64_t> target_height{}, target_width{};
  std::string data_format = "channels_last";
};
Tensor crop_images(const Tensor& images, const CropImagesOptions& options);
/// keras.ops.image.extract_patches: `size` of 1 or 2 numbers for 2D patches of images (rank 3 or 4), 3 for 3D
/// patches of volumes (rank 4 or 5); each patch's values flattened (window row-major, channels last) onto the
/// channel axis, by Keras's convolution with an identity kernel. strides unset: the size. Differentiable.
Tensor extract_patches(const Tensor& images, const std::vector<int64_t>& size, const std::vector<int64_t>& strides = {},
                       const std::vector<int64_t>& dilation_rate = {1}, const std::string& padding = "valid",
                       const std::string& data_format = "channels_last");
/// keras.ops.image.sobel_edges: TensorFlow's Sobel filters per channel of a batch (rank 4) with reflected edges:
/// (batch, height, width, channels, 2) holding the vertical and the horizontal gradient ((batch, channels, height,
/// width, 2) with "channels_first"). Differentiable.
Tensor sobel_edges(const Tensor& images, const std::string& data_format = "channels_last");
/// keras.ops.image.ssim: the structural similarity of two images or batches (a value per image): a Gaussian window
/// of filter_size and filter_sigma (valid convolution), the means, variances and covariance per channel, averaged
/// over positions and channels; Keras's arithmetic. Differentiable in both images.
Tensor ssim(const Tensor& image1, const Tensor& image2, double max_val = 1.0, int64_t filter_size = 11,
            double filter_sigma = 1.5, double k1 = 0.01, double k2 = 0.03,
            const std::string& data_format = "channels_last");
/// keras.ops.image.map_coordinates: `inputs` sampled at `coordinates` (shape (inputs' rank, ...): the output's
/// shape after the first axis), order 0 (the nearest index, halves to even) or 1 (linear), outside the array by
/// fill_mode: "constant" (fill_value), "nearest", "wrap", "mirror" or "reflect", as Keras's TensorFlow backend
/// computes them (its "reflect" mirrors negative indices about 0; its "mirror" maps an index equal to the size to
/// itself, which TensorFlow's gather refuses: an InvalidArgumentError here too). Integer inputs are rounded back.
/// Differentiable in float inputs and in the coordinates (through the linear weights).
Tensor map_coordinates(const Tensor& inputs, const Tensor& coordinates, int order,
                       const std::string& fill_mode = "constant", double fill_value = 0.0);

/// keras.ops.image.elastic_transform: each image displaced by alpha times a Gaussian-blurred (sigma; 6 · int(sigma)
/// | 1 taps) field of normal noise times sigma, then sampled as map_coordinates samples ("bilinear": order 1,
/// "nearest": order 0) with fill_mode ("reflect" by default). As Keras's TensorFlow backend, one noise field moves
/// both axes alike. The noise is Osprey's draw (of `seed`'s own generator when given); the overload below takes it
/// as a (batch, height, width) tensor of standard normal values. Differentiable in the images.
Tensor elastic_transform(const Tensor& images, double alpha = 20.0, double sigma = 5.0,
                         const std::string& interpolation = "bilinear", const std::string& fill_mode = "reflect",
                         double fill_value = 0.0, std::optional<int64_t> seed = std::nullopt,
                         const std::string& data_format = "channels_last");
Tensor elastic_transform(const Tensor& images, const Tensor& noise, double alpha, double sigma,
                         const std::string& interpolation = "bilinear", const std::string& fill_mode = "reflect",
                         double fill_value = 0.0, const std::string& data_format = "channels_last");

}  // namespace osprey::keras::ops
