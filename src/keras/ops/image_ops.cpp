// keras.ops.image's resize and scale_and_translate (ops::resize and ops::detail::resample), color conversions
// (rgb_to_grayscale, rgb_to_hsv, hsv_to_rgb), gaussian_blur and perspective_transform, composed of element-wise ops
// (so they run on the images' device and are differentiable) in TensorFlow's formulas (tf.image.rgb_to_grayscale's
// weights, the RGBToHSV and HSVToRGB kernels' arithmetic).
#include "osprey/keras/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "keras/layers/preprocessing/crop.h"
#include "keras/ops/common.h"
#include "keras/ops/homography.h"
#include "ops/resample_tables.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::keras::ops {

using detail::channel_axis;

namespace {

void check_float(const Tensor& images, const char* op) {
  if (!is_floating(images.dtype())) {
    throw ValueError(fmt::format("{}: Invalid images dtype: expected float dtype. Received: images.dtype={}", op,
                                 dtype_name(images.dtype())));
  }
}

void check_three(const Tensor& images, int axis, const char* op) {
  if (images.shape()[axis] != 3) {
    throw ValueError(fmt::format("{}: expected 3 channels (RGB or HSV) on axis {}. Received input with shape: "
                                 "images.shape={}",
                                 op, axis, images.shape().to_string()));
  }
}

Tensor channel(const Tensor& x, int axis, int64_t i) { return osprey::ops::slice_axis(x, axis, i, 1); }

// A float32 result back in the images' dtype, as Keras's resize: integers rounded, then saturated to the dtype.
Tensor saturated(const Tensor& y, DType dtype) {
  if (dtype == DType::float32) return y;
  if (dtype == DType::bool_ || dtype == DType::float64) return y.cast(dtype);
  double lo = -65504.0, hi = 65504.0;  // float16
  if (dtype == DType::bfloat16) lo = -3.3895e38, hi = 3.3895e38;
  if (dtype == DType::int32) lo = -2147483648.0, hi = 2147483520.0;  // the largest float32 below 2^31
  if (dtype == DType::int64) lo = -9.2233715e18, hi = 9.2233715e18;
  Tensor r = is_floating(dtype) ? y : osprey::ops::round(y);
  return clip(r, lo, hi).cast(dtype);
}

}  // namespace

Tensor rgb_to_grayscale(const Tensor& images, const std::string& data_format) {
  const int axis = channel_axis(images, data_format, "rgb_to_grayscale");
  const int64_t c = images.shape()[axis];
  if (c != 1 && c != 3) {
    throw ValueError(fmt::format("rgb_to_grayscale: Invalid channel size: expected 3 (RGB) or 1 (Grayscale). "
                                 "Received input with shape: images.shape={}",
                                 images.shape().to_string()));
  }
  if (c == 1) return images;
  const DType original = images.dtype();
  const Tensor x = is_floating(original) ? images : images.cast(DType::float32);
  Tensor gray = add(add(multiply(channel(x, axis, 0), 0.2989), multiply(channel(x, axis, 1), 0.5870)),
                    multiply(channel(x, axis, 2), 0.1140));
  return gray.dtype() == original ? gray : gray.cast(original);
}

// TensorFlow's RGBToHSV: v = max, s = (v - min) / v (0 where v is 0), h from the channel that holds the maximum
// (red first, then green), in [0, 1). The divisions are taken of safe denominators so that no NaN reaches the
// gradients of the branches not taken.
Tensor rgb_to_hsv(const Tensor& images, const std::string& data_format) {
  const int axis = channel_axis(images, data_format, "rgb_to_hsv");
  check_float(images, "rgb_to_hsv");
  check_three(images, axis, "rgb_to_hsv");
  const Tensor r = channel(images, axis, 0), g = channel(images, axis, 1), b = channel(images, axis, 2);
  const Tensor v = maximum(maximum(r, g), b);
  const Tensor range = subtract(v, minimum(minimum(r, g), b));
  const Tensor positive_v = greater(v, 0.0), positive_range = greater(range, 0.0);
  const Tensor s = where(positive_v, divide(range, where(positive_v, v, 1.0)), 0.0);
  const Tensor norm = multiply(reciprocal(where(positive_range, range, 1.0)), 1.0 / 6.0);
  Tensor h = where(equal(r, v), multiply(norm, subtract(g, b)),
                   where(equal(g, v), add(multiply(norm, subtract(b, r)), 2.0 / 6.0),
                         add(multiply(norm, subtract(r, g)), 4.0 / 6.0)));
  h = where(positive_range, h, 0.0);
  h = where(less(h, 0.0), add(h, 1.0), h);
  return concatenate({h, s, v}, axis);
}

// TensorFlow's HSVToRGB: each channel v · (1 - s + s · d) with d a clipped tent of 6h.
Tensor hsv_to_rgb(const Tensor& images, const std::string& data_format) {
  const int axis = channel_axis(images, data_format, "hsv_to_rgb");
  check_float(images, "hsv_to_rgb");
  check_three(images, axis, "hsv_to_rgb");
  const Tensor h = channel(images, axis, 0), s = channel(images, axis, 1), v = channel(images, axis, 2);
  const Tensor dh = multiply(h, 6.0);
  const Tensor dr = clip(subtract(abs(subtract(dh, 3.0)), 1.0), 0.0, 1.0);
  const Tensor dg = clip(subtract(2.0, abs(subtract(dh, 2.0))), 0.0, 1.0);
  const Tensor db = clip(subtract(2.0, abs(subtract(dh, 4.0))), 0.0, 1.0);
  const Tensor one_minus_s = subtract(1.0, s);
  auto out = [&](const Tensor& d) { return multiply(add(one_minus_s, multiply(s, d)), v); };
  return concatenate({out(dr), out(dg), out(db)}, axis);
}

}  // namespace osprey::keras::ops

namespace osprey::keras::ops {

// TensorFlow's backend: a kernel_size[0] × kernel_size[1] window (the outer product of the 1-D Gaussians of
// sizes kernel_size[1] and kernel_size[0], laid out as TensorFlow reshapes it), a depthwise convolution with zero
// padding ("same").
Tensor gaussian_blur(const Tensor& images, std::pair<int64_t, int64_t> kernel_size, std::pair<double, double> sigma,
                     const std::string& data_format) {
  channel_axis(images, data_format, "gaussian_blur");
  check_float(images, "gaussian_blur");
  const auto [kx, ky] = kernel_size;
  if (kx < 1 || ky < 1 || kx > 1024 || ky > 1024) {
    throw ValueError(fmt::format("gaussian_blur: kernel_size must be in [1, 1024]; received ({}, {})", kx, ky));
  }
  if (!(sigma.first > 0.0) || !(sigma.second > 0.0) || !std::isfinite(sigma.first) || !std::isfinite(sigma.second)) {
    throw ValueError(fmt::format("gaussian_blur: sigma must be positive; received ({}, {})", sigma.first, sigma.second));
  }
  auto gaussian = [](int64_t size, double s) {  // float32 as TensorFlow computes it
    std::vector<float> k(static_cast<std::size_t>(size));
    const float centre = (static_cast<float>(size) - 1.0f) / 2.0f, sf = static_cast<float>(s);
    float total = 0.0f;
    for (int64_t i = 0; i < size; ++i) {
      const float x = (static_cast<float>(i) - centre) / sf;
      total += k[static_cast<std::size_t>(i)] = std::exp(-0.5f * (x * x));
    }
    for (float& v : k) v /= total;
    return k;
  };
  const auto gx = gaussian(kx, sigma.first), gy = gaussian(ky, sigma.second);
  const bool batched = images.shape().rank() == 4;
  Tensor x = batched ? images : expand_dims(images, 0);
  if (data_format == "channels_first") x = osprey::ops::transpose(x, {0, 2, 3, 1});
  const int64_t c = x.shape()[3];
  if (kx * ky * c > (int64_t{1} << 26)) {
    throw ValueError(fmt::format("gaussian_blur: a ({}, {}) window over {} channels is {} weights, more than the "
                                 "2^26 allowed",
                                 kx, ky, c, kx * ky * c));
  }
  std::vector<float> kernel;
  kernel.reserve(static_cast<std::size_t>(kx * ky * c));
  for (float wy : gy) {    // tensordot(kernel1d_y, kernel1d_x, axes=0), read row-major
    for (float wx : gx) kernel.insert(kernel.end(), static_cast<std::size_t>(c), wy * wx);
  }
  const Tensor k = Tensor::from_vector(kernel, Shape({kx, ky, c, 1})).cast(x.dtype());
  Tensor y = depthwise_conv(x, k, {1}, "same");
  if (data_format == "channels_first") y = osprey::ops::transpose(y, {0, 3, 1, 2});
  return batched ? y : squeeze(y, 0);
}

}  // namespace osprey::keras::ops


namespace osprey::keras::ops {

// Keras's TensorFlow backend: the homography mapping end_points onto start_points per image, applied by
// ImageProjectiveTransformV3 (osprey::ops::affine_transform) with a constant fill.
Tensor perspective_transform(const Tensor& images, const Tensor& start_points, const Tensor& end_points,
                             const std::string& interpolation, double fill_value, const std::string& data_format) {
  channel_axis(images, data_format, "perspective_transform");
  if (interpolation != "bilinear" && interpolation != "nearest") {
    throw ValueError(fmt::format("perspective_transform: Invalid value for argument `interpolation`. Expected of one "
                                 "('nearest', 'bilinear'). Received: interpolation={}",
                                 interpolation));
  }
  for (const auto* p : {&start_points, &end_points}) {
    const auto& s = p->shape();
    if ((s.rank() != 2 && s.rank() != 3) || s[-2] != 4 || s[-1] != 2) {
      throw ValueError(fmt::format("perspective_transform: Invalid {} shape: expected (4,2) for a single image or "
                                   "(N,4,2) for a batch. Received shape: {}",
                                   p == &start_points ? "start_points" : "end_points", s.to_string()));
    }
  }
  if (start_points.shape() != end_points.shape()) {
    throw ValueError(fmt::format("start_points and end_points must have the same shape. Received "
                                 "start_points.shape={}, end_points.shape={}",
                                 start_points.shape().to_string(), end_points.shape().to_string()));
  }
  const bool batched = images.shape().rank() == 4;
  Tensor x = batched ? images : expand_dims(images, 0);
  if (data_format == "channels_first") x = osprey::ops::transpose(x, {0, 2, 3, 1});
  const int64_t n = x.shape()[0], sets = start_points.shape().rank() == 3 ? start_points.shape()[0] : 1;
  if (sets != 1 && sets != n) {
    throw ValueError(fmt::format("perspective_transform: {} sets of points for {} images", sets, n));
  }
  const auto s = start_points.cast(DType::float32).to_vector<float>(), e = end_points.cast(DType::float32).to_vector<float>();
  std::vector<float> transforms(static_cast<std::size_t>(sets * 8));
  for (int64_t i = 0; i < sets; ++i) {
    std::array<float, 8> t{};
    if (!imaging::homography(&s[static_cast<std::size_t>(i * 8)], &e[static_cast<std::size_t>(i * 8)], t)) {
      throw InvalidArgumentError(fmt::format("perspective_transform: the points of image {} admit no projective "
                                             "transform (three of them on one line)",
                                             i));
    }
    std::copy(t.begin(), t.end(), transforms.begin() + i * 8);
  }
  const DType dtype = x.dtype();
  Tensor y = osprey::ops::affine_transform(dtype == DType::float32 ? x : x.cast(DType::float32),
                                           Tensor::from_vector(transforms, Shape({sets, 8})),
                                           interpolation == "nearest" ? osprey::ops::ResizeMethod::nearest
                                                                      : osprey::ops::ResizeMethod::bilinear,
                                           osprey::ops::FillMode::constant, fill_value);
  if (dtype != DType::float32) y = y.cast(dtype);
  if (data_format == "channels_first") y = osprey::ops::transpose(y, {0, 3, 1, 2});
  return batched ? y : squeeze(y, 0);
}

Tensor resize(const Tensor& images, std::pair<int64_t, int64_t> size, const ImageResizeOptions& o) {
  if (size.first <= 0 || size.second <= 0) {
    throw ValueError(fmt::format("`size` must have positive height and width. Received: size=({}, {})", size.first,
                                 size.second));
  }
  const int axis = channel_axis(images, o.data_format, "resize");
  const auto method = layers::keras_resize_method(o.interpolation, "resize");
  if (o.fill_mode != "constant") {
    throw ValueError(fmt::format("Invalid value for argument `fill_mode`. Only `'constant'` is supported. Received: "
                                 "fill_mode={}",
                                 o.fill_mode));
  }
  if (o.pad_to_aspect_ratio && o.crop_to_aspect_ratio) {
    throw ValueError("Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be `True`.");
  }
  const bool batched = images.shape().rank() == 4, first = axis != images.shape().rank() - 1;
  Tensor x = batched ? images : expand_dims(images, 0);
  if (first) x = osprey::ops::transpose(x, {0, 2, 3, 1});
  x = x.dtype() == DType::float32 ? x : x.cast(DType::float32);
  if (o.crop_to_aspect_ratio) x = layers::crop_to_aspect(x, size.first, size.second);
  if (o.pad_to_aspect_ratio) x = layers::pad_to_aspect(x, size.first, size.second, o.fill_value);
  Tensor y = saturated(osprey::ops::resize(x, size.first, size.second, method, o.antialias), images.dtype());
  if (first) y = osprey::ops::transpose(y, {0, 3, 1, 2});
  return batched ? y : squeeze(y, 0);
}

Tensor scale_and_translate(const Tensor& images, const std::vector<int64_t>& output_shape,
                           const std::vector<float>& scale, const std::vector<float>& translation,
                           const std::vector<int>& spatial_dims, const std::string& method, bool antialias) {
  using osprey::ops::SamplingKernel;
  static const std::pair<const char*, SamplingKernel> kMethods[] = {
      {"linear", SamplingKernel::triangle},   {"bilinear", SamplingKernel::triangle},
      {"trilinear", SamplingKernel::triangle},
      {"cubic", SamplingKernel::keyscubic},    {"bicubic", SamplingKernel::keyscubic},
      {"tricubic", SamplingKernel::keyscubic}, {"lanczos3", SamplingKernel::lanczos3},
      {"lanczos5", SamplingKernel::lanczos5}};
  const auto* found = std::find_if(std::begin(kMethods), std::end(kMethods),
                                   [&](const auto& m) { return method == m.first; });
  if (found == std::end(kMethods)) {
    throw ValueError(fmt::format("Invalid value for argument `method`. Expected of one ('linear', 'bilinear', "
                                 "'trilinear', 'cubic', 'bicubic', 'tricubic', 'lanczos3', 'lanczos5'). "
                                 "Received: method={}",
                                 method));
  }
  const int rank = images.shape().rank();
  if (static_cast<int>(output_shape.size()) != rank || scale.size() < spatial_dims.size() ||
      translation.size() < spatial_dims.size()) {
    throw ValueError(fmt::format("scale_and_translate: output_shape needs one size per axis of the images ({}) and "
                                 "scale and translation a value per spatial dim ({}); received {}, {} and {}",
                                 images.shape().to_string(), spatial_dims.size(), output_shape.size(), scale.size(),
                                 translation.size()));
  }
  if (images.dtype() == DType::bool_) throw ValueError("scale_and_translate: images must be numbers; received bool");
  if (spatial_dims.empty()) return images;
  Tensor y = images.dtype() == DType::float32 ? images : images.cast(DType::float32);
  for (std::size_t i = 0; i < spatial_dims.size(); ++i) {
    const int d = detail::normalized(spatial_dims[i], rank, "scale_and_translate");
    const int64_t out = output_shape[static_cast<std::size_t>(d)];
    if (out < 1 || y.shape()[d] < 1) {
      throw ValueError(fmt::format("scale_and_translate: axis {} of {} to {} positions: both must be positive", d,
                                   images.shape().to_string(), out));
    }
    if (!(scale[i] > 0.f) || !std::isfinite(scale[i]) || !std::isfinite(translation[i])) {
      throw ValueError(fmt::format("scale_and_translate: scale must be positive and finite and translation finite; "
                                   "received scale={} and translation={} for axis {}",
                                   scale[i], translation[i], d));
    }
    y = osprey::ops::detail::resample(
        y, d, osprey::ops::detail::keras_scale_translate_table(found->second, antialias, y.shape()[d], out, scale[i],
                                                               translation[i]));
  }
  if (is_floating(images.dtype())) return images.dtype() == DType::float32 ? y : y.cast(images.dtype());
  return clip(osprey::ops::round(y), min(images), max(images)).cast(images.dtype());
}

}  // namespace osprey::keras::ops
