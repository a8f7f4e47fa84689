// keras.layers.RandomGaussianBlur (one pair of sigmas per batch, each image blurred by keras::ops::gaussian_blur
// with a probability drawn per image, the batch clipped to value_range) and RandomErasing (a box per image).
#include "keras/layers/preprocessing/color_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "keras/layers/preprocessing/crop.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/random.h"

namespace osprey::keras::layers {

namespace kops = osprey::keras::ops;

namespace {

std::pair<int64_t, int64_t> odd_kernel(const ImageFactor& k) {
  const auto check = [&](double v) {
    if (!(v >= 1.0 && v <= 1024.0) || v != std::floor(v) || static_cast<int64_t>(v) % 2 == 0) {
      throw ValueError(k.single ? fmt::format("kernel_size must be an odd number. Received: kernel_size={}", k.a)
                                : fmt::format("kernel_size must be an odd number. Received: kernel_size=({}, {})",
                                              k.a, k.b));
    }
  };
  check(k.a);
  check(k.b);
  return {static_cast<int64_t>(k.a), static_cast<int64_t>(k.b)};
}

}  // namespace

RandomGaussianBlur::RandomGaussianBlur(ImageFactor factor, ImageFactor kernel_size, ImageFactor sigma,
                                       ColorOptions options)
    : FactorColorAugmentation("random_gaussian_blur", factor, 0.0, 1.0, std::move(options), false),
      kernel_size_(odd_kernel(kernel_size)), sigma_(color::parse_factor(sigma, 0.0, 1.0)) {}

// A probability per image, a uniform threshold per image below it, then the batch's two sigmas (+ 1e-6).
std::vector<float> RandomGaussianBlur::get_random_transformation(int64_t batch) {
  const auto p = uniform(batch), u = uniform(batch), s = uniform(2);
  std::vector<float> t(static_cast<std::size_t>(batch + 2));
  for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
    t[i] = u[i] < factor_.first + (factor_.second - factor_.first) * p[i] ? 1.0f : 0.0f;
  }
  for (std::size_t i = 0; i < 2; ++i) {
    t[static_cast<std::size_t>(batch) + i] =
        static_cast<float>(sigma_.first + (sigma_.second - sigma_.first) * s[i]) + 1e-6f;
  }
  return t;
}

Tensor RandomGaussianBlur::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = as_float(images);
  const int64_t n = x.shape()[0];
  if (t.size() != static_cast<std::size_t>(n + 2)) {
    throw ValueError(fmt::format("{}: the transformation has {} numbers; a batch of {} images takes {} (a choice per "
                                 "image, then two sigmas)",
                                 name_, t.size(), n, n + 2));
  }
  const std::vector<float> apply(t.begin(), t.begin() + n);
  const Tensor blurred = kops::gaussian_blur(x, kernel_size_, {t[static_cast<std::size_t>(n)], t[static_cast<std::size_t>(n + 1)]},
                                             options_.data_format);
  const Tensor y = kops::where(kops::greater(color::column(apply, n, 1, 0, name_), 0.5), blurred, x);
  return kops::clip(y, options_.value_range.first, options_.value_range.second);
}

std::string RandomGaussianBlur::get_config() const {
  using serialization::json;
  return color::config_text(*this, true, true,
                            {{"factor", json::array({factor_.first, factor_.second})},
                             {"kernel_size", json::array({kernel_size_.first, kernel_size_.second})},
                             {"sigma", json::array({sigma_.first, sigma_.second})}});
}

}  // namespace osprey::keras::layers

namespace osprey::keras::layers {

// ---- RandomErasing ----

RandomErasing::RandomErasing(ImageFactor factor, ImageFactor scale, std::vector<double> fill_value, ColorOptions options)
    : FactorColorAugmentation("random_erasing", factor, 0.0, 1.0, std::move(options), false),
      scale_(color::parse_factor(scale, 0.0, 1.0)), fill_value_(std::move(fill_value)) {
  if (fill_value_.size() > 1 && fill_value_.size() != 3) {
    throw ValueError(fmt::format("The `fill_value` argument should be a number (or a list of three numbers); "
                                 "received {} numbers",
                                 fill_value_.size()));
  }
}

// Keras's order: the box sides (x, y), the starts along x then y, the probability, the threshold.
std::vector<float> RandomErasing::get_random_transformation(int64_t batch) {
  const auto n = static_cast<std::size_t>(batch);
  const auto sides = uniform(2 * batch), start_x = uniform(batch), start_y = uniform(batch);
  const auto p = uniform(batch), u = uniform(batch);
  std::vector<float> t(5 * n);
  for (std::size_t i = 0; i < n; ++i) {
    t[i] = u[i] < factor_.first + (factor_.second - factor_.first) * p[i] ? 1.0f : 0.0f;
    for (std::size_t k = 0; k < 2; ++k) {
      t[(1 + k) * n + i] = std::sqrt(static_cast<float>(scale_.first + (scale_.second - scale_.first) * sides[2 * i + k]));
    }
    t[3 * n + i] = start_x[i];
    t[4 * n + i] = start_y[i];
  }
  return t;
}

Tensor RandomErasing::call(const Tensor& inputs, bool training) {
  check_batch(name_, inputs);
  const Tensor x = as_float(inputs);
  if (!training) return x;
  const auto t = get_random_transformation(x.shape()[0]);
  Tensor noise;
  if (fill_value_.empty()) {
    if (generator_) {  // the layer's own stream: Box-Muller over its uniform draws
      const int64_t count = x.num_elements();
      const auto u = uniform(2 * count);
      std::vector<float> z(static_cast<std::size_t>(count));
      for (std::size_t i = 0; i < z.size(); ++i) {
        const float r = std::sqrt(-2.0f * std::log(std::max(u[2 * i], 1e-30f)));
        z[i] = r * std::cos(6.2831853f * u[2 * i + 1]);
      }
      noise = Tensor::from_vector(z, x.shape());
    } else {
      noise = random::normal(x.shape());
    }
  }
  return erase(x, t, noise);
}

Tensor RandomErasing::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = as_float(images);
  return erase(x, t, fill_value_.empty() ? random::normal(x.shape()) : Tensor());
}

// The boxes as a (N, H, W, 1) mask built on the host in Keras's float32 arithmetic (a pixel's column x is in the
// box when x0 <= x < x1), the fill clipped to value_range.
Tensor RandomErasing::erase(const Tensor& images, const std::vector<float>& t, const Tensor& noise) const {
  const Tensor x = to_last(images);
  const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  if (t.size() != static_cast<std::size_t>(5 * n)) {
    throw ValueError(fmt::format("{}: the transformation has {} numbers; a batch of {} images takes {}", name_,
                                 t.size(), n, 5 * n));
  }
  const auto un = static_cast<std::size_t>(n);
  std::vector<float> mask(static_cast<std::size_t>(n * h * w), 0.0f);
  for (std::size_t i = 0; i < un; ++i) {
    if (t[i] <= 0.5f) continue;
    const auto span = [&](std::size_t side, std::size_t start, int64_t length) {
      const float crop = t[side * un + i] * static_cast<float>(length);
      const float begin = t[start * un + i] * (static_cast<float>(length) - crop);
      return std::pair<float, float>{begin, begin + crop};
    };
    const auto [x0, x1] = span(1, 3, w);
    const auto [y0, y1] = span(2, 4, h);
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t col = 0; col < w; ++col) {
        const auto fr = static_cast<float>(r), fc = static_cast<float>(col);
        if (fc >= x0 && fc < x1 && fr >= y0 && fr < y1) mask[(i * static_cast<std::size_t>(h) + static_cast<std::size_t>(r)) * static_cast<std::size_t>(w) + static_cast<std::size_t>(col)] = 1.0f;
      }
    }
  }
  Tensor fill;
  if (fill_value_.empty()) {
    fill = kops::multiply(noise.defined() ? noise : random::normal(x.shape()), options_.value_range.second);
  } else {
    std::vector<float> per_channel(static_cast<std::size_t>(c));
    for (std::size_t k = 0; k < per_channel.size(); ++k) {
      per_channel[k] = static_cast<float>(fill_value_.size() == 1 ? fill_value_[0] : fill_value_[k % fill_value_.size()]);
    }
    if (fill_value_.size() == 3 && c != 3) {
      throw ValueError(fmt::format("{}: three fill values for images of {} channels", name_, c));
    }
    fill = Tensor::from_vector(per_channel, Shape({c}));
  }
  fill = kops::clip(fill, options_.value_range.first, options_.value_range.second);
  const Tensor boxes = kops::greater(Tensor::from_vector(mask, Shape({n, h, w, 1})), 0.5);
  return from_last(kops::where(boxes, fill, x));
}

std::string RandomErasing::get_config() const {
  using serialization::json;
  json fill = nullptr;
  if (fill_value_.size() == 1) fill = fill_value_[0];
  if (fill_value_.size() == 3) fill = fill_value_;
  return color::config_text(*this, true, true,
                            {{"factor", json::array({factor_.first, factor_.second})},
                             {"scale", json::array({scale_.first, scale_.second})},
                             {"fill_value", fill}});
}

}  // namespace osprey::keras::layers
