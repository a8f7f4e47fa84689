// keras.layers.RandomGaussianBlur: one pair of sigmas per batch, each image blurred (keras::ops::gaussian_blur)
// with a probability drawn per image, the batch clipped to value_range.
#include "keras/layers/preprocessing/color_common.h"

#include <fmt/format.h>

#include <cmath>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"

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
  const Tensor x = color::as_float(images);
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
  return color_config(true, true, {{"factor", json::array({factor_.first, factor_.second}).dump()},
                                   {"kernel_size", json::array({kernel_size_.first, kernel_size_.second}).dump()},
                                   {"sigma", json::array({sigma_.first, sigma_.second}).dump()}});
}

}  // namespace osprey::keras::layers
