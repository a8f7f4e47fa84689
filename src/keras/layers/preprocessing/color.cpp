// Keras 3's color augmentations, part one: the shared base (draws, data formats, configs), RandomGrayscale,
// RandomInvert, AutoContrast, Solarization, RandomPosterization and RandomColorDegeneration. The images change by
// keras::ops (so they run on the layer's device), in the order of Keras 3.15's arithmetic.
#include "keras/layers/preprocessing/color_common.h"

#include <fmt/format.h>

#include <cmath>

#include "keras/layers/preprocessing/crop.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"

namespace osprey::keras::layers {

namespace kops = osprey::keras::ops;

namespace color {

std::pair<double, double> parse_factor(const ImageFactor& f, double lo, double hi) {
  return f.single ? keras_factor(f.a, lo, hi) : keras_factor(std::pair{f.a, f.b}, lo, hi);
}

Tensor column(const std::vector<float>& values, int64_t batch, std::size_t per_image, std::size_t part,
              const std::string& layer) {
  if (values.size() != per_image * static_cast<std::size_t>(batch)) {
    throw ValueError(fmt::format("{}: the transformation has {} numbers; a batch of {} images takes {}", layer,
                                 values.size(), batch, per_image * static_cast<std::size_t>(batch)));
  }
  const auto begin = values.begin() + static_cast<std::ptrdiff_t>(part * static_cast<std::size_t>(batch));
  return Tensor::from_vector(std::vector<float>(begin, begin + batch), Shape({batch, 1, 1, 1}));
}

Tensor rescale(const Tensor& x, std::pair<double, double> from, std::pair<double, double> to) {
  if (from == to) return x;
  const auto width = [](std::pair<double, double> r) {  // Keras subtracts the bounds in float32
    return static_cast<double>(static_cast<float>(r.second) - static_cast<float>(r.first));
  };
  const Tensor unit = kops::divide(kops::subtract(x, static_cast<double>(static_cast<float>(from.first))), width(from));
  return kops::add(kops::multiply(unit, width(to)), static_cast<double>(static_cast<float>(to.first)));
}

std::string config_text(const ColorAugmentation& layer, bool with_range, bool with_seed, const serialization::json& extra) {
  const ColorOptions& o = layer.options();
  auto c = serialization::base_config(layer);
  c["data_format"] = o.data_format;
  if (with_range) c["value_range"] = serialization::json::array({o.value_range.first, o.value_range.second});
  for (const auto& [key, value] : extra.items()) c[key] = value;
  if (with_seed) c["seed"] = o.seed ? serialization::json(*o.seed) : serialization::json(nullptr);
  return serialization::dumps(c);
}

}  // namespace color

using color::column;
using color::config_text;
using color::parse_factor;
using color::rescale;

// ---- the base ----

ColorAugmentation::ColorAugmentation(const std::string& default_name, ColorOptions options, bool sort_value_range)
    : Layer(options.name, default_name, options.dtype), options_(std::move(options)) {
  auto& r = options_.value_range;
  if (!std::isfinite(r.first) || !std::isfinite(r.second)) {
    throw ValueError(fmt::format("{}: `value_range` must be two finite numbers; received ({}, {})", name_, r.first,
                                 r.second));
  }
  if (sort_value_range && r.first > r.second) std::swap(r.first, r.second);
  detail::check_data_format(options_.data_format, name_);
  if (options_.seed) generator_.emplace(static_cast<uint64_t>(*options_.seed), uint64_t{0x636f6c6f72});
}

Shape ColorAugmentation::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  return finish_build(input_shape);
}

Tensor ColorAugmentation::call(const Tensor& inputs, bool training) {
  check_batch(name_, inputs);
  if (!training) return inference(inputs);
  return transform_images(inputs, get_random_transformation(inputs.shape()[0]));
}

std::vector<float> ColorAugmentation::uniform(int64_t n) {
  if (generator_) {
    std::vector<float> u(static_cast<std::size_t>(n));
    for (float& v : u) v = generator_->next_float();
    return u;
  }
  return host_uniform(n);
}

Tensor ColorAugmentation::to_last(const Tensor& images) const {
  return layers::to_last(as_float(images), options_.data_format == "channels_first");
}

Tensor ColorAugmentation::from_last(const Tensor& images) const {
  return layers::from_last(images, options_.data_format == "channels_first");
}

FactorColorAugmentation::FactorColorAugmentation(const std::string& default_name, ImageFactor factor, double lo,
                                                 double hi, ColorOptions options, bool sort_value_range)
    : ColorAugmentation(default_name, std::move(options), sort_value_range), factor_(parse_factor(factor, lo, hi)) {}

std::vector<float> FactorColorAugmentation::get_random_transformation(int64_t batch) {
  auto t = uniform(batch);
  for (float& v : t) v = static_cast<float>(factor_.first + (factor_.second - factor_.first) * v);
  return t;
}

std::string FactorColorAugmentation::get_config() const {
  return config_text(*this, true, true, {{"factor", {factor_.first, factor_.second}}});
}

namespace {

serialization::json pair_json(std::pair<double, double> p) { return serialization::json::array({p.first, p.second}); }

// 1 where a draw says to apply, 0 elsewhere, as the mask where() takes.
Tensor chosen(const std::vector<float>& t, int64_t batch, const std::string& layer) {
  return kops::greater(column(t, batch, 1, 0, layer), 0.5);
}

}  // namespace

// ---- RandomGrayscale ----

RandomGrayscale::RandomGrayscale(double factor, ColorOptions options)
    : ColorAugmentation("random_grayscale", std::move(options), true), factor_(factor) {
  if (!(factor >= 0.0 && factor <= 1.0)) {
    throw ValueError(fmt::format("`factor` should be between 0 and 1. Received: factor={}", factor));
  }
}

std::vector<float> RandomGrayscale::get_random_transformation(int64_t batch) {
  auto u = uniform(batch);
  for (float& v : u) v = v < factor_ ? 1.0f : 0.0f;
  return u;
}

Tensor RandomGrayscale::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = to_last(images);
  return from_last(kops::where(chosen(t, x.shape()[0], name_), kops::rgb_to_grayscale(x), x));
}

std::string RandomGrayscale::get_config() const {
  return config_text(*this, false, false, {{"factor", factor_}});
}

// ---- RandomInvert ----

RandomInvert::RandomInvert(ImageFactor factor, ColorOptions options)
    : FactorColorAugmentation("random_invert", factor, 0.0, 1.0, std::move(options), false) {}

// A probability per image from [lower, upper], then a uniform threshold per image below it (Keras's two draws).
std::vector<float> RandomInvert::get_random_transformation(int64_t batch) {
  const auto p = uniform(batch), u = uniform(batch);
  std::vector<float> t(static_cast<std::size_t>(batch));
  for (std::size_t i = 0; i < t.size(); ++i) {
    const double probability = factor_.first + (factor_.second - factor_.first) * p[i];
    t[i] = u[i] < probability ? 1.0f : 0.0f;
  }
  return t;
}

Tensor RandomInvert::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = as_float(images);
  return kops::where(chosen(t, x.shape()[0], name_), kops::subtract(options_.value_range.second, x), x);
}

// ---- AutoContrast ----

AutoContrast::AutoContrast(ColorOptions options) : ColorAugmentation("auto_contrast", std::move(options), true) {}

// On the 0-255 scale: (x - low) · 255 / (high - low) per image and channel, clipped; a constant channel (a NaN
// scale) keeps its values.
Tensor AutoContrast::transform_images(const Tensor& images, const std::vector<float>&) const {
  const Tensor original = to_last(images);
  const Tensor x = rescale(original, options_.value_range, {0.0, 255.0});
  const Tensor low = kops::min(x, {1, 2}, true), high = kops::max(x, {1, 2}, true);
  const Tensor scale = kops::divide(255.0, kops::subtract(high, low));
  const Tensor y = kops::add(kops::multiply(x, scale), kops::multiply(kops::negative(low), scale));
  const Tensor back = rescale(kops::clip(y, 0.0, 255.0), {0.0, 255.0}, options_.value_range);
  return from_last(kops::where(kops::isnan(y), original, back));
}

std::string AutoContrast::get_config() const { return config_text(*this, true, false); }

// ---- Solarization ----

namespace {

std::pair<double, double> solarization_factor(const ImageFactor& f, const char* name) {
  const auto check = [&](double v) {
    if (!(v >= 0.0 && v <= 1.0)) {
      throw ValueError(fmt::format("The `addition_factor` and `threshold_factor` arguments should be a number (or a "
                                   "list of two numbers) in the range [0, 1]. Received: {}: input_number={}",
                                   name, v));
    }
  };
  check(f.a);
  if (f.single) return {0.0, f.a};
  check(f.b);
  return {std::min(f.a, f.b), std::max(f.a, f.b)};
}

}  // namespace

Solarization::Solarization(ImageFactor addition_factor, ImageFactor threshold_factor, ColorOptions options)
    : ColorAugmentation("solarization", std::move(options), true),
      addition_(solarization_factor(addition_factor, "addition_factor")),
      threshold_(solarization_factor(threshold_factor, "threshold_factor")) {}

// As Keras 3.15 draws them: uniform in [lower, upper · 255].
std::vector<float> Solarization::get_random_transformation(int64_t batch) {
  auto t = uniform(2 * batch);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto& f = i < static_cast<std::size_t>(batch) ? addition_ : threshold_;
    t[i] = static_cast<float>(f.first + (f.second * 255.0 - f.first) * t[i]);
  }
  return t;
}

Tensor Solarization::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = rescale(as_float(images), options_.value_range, {0.0, 255.0});
  const int64_t n = x.shape()[0];
  const Tensor y = kops::clip(kops::add(x, column(t, n, 2, 0, name_)), 0.0, 255.0);
  const Tensor solarized = kops::where(kops::less(y, column(t, n, 2, 1, name_)), y, kops::subtract(255.0, y));
  return rescale(solarized, {0.0, 255.0}, options_.value_range);
}

std::string Solarization::get_config() const {
  return config_text(*this, true, true, {{"addition_factor", pair_json(addition_)}, {"threshold_factor", pair_json(threshold_)}});
}

// ---- RandomPosterization ----

namespace {

std::pair<int64_t, int64_t> posterization_factor(const ImageFactor& f) {
  const auto p = parse_factor(f, 1.0, 8.0);
  if (p.first != std::floor(p.first) || p.second != std::floor(p.second) || p.first < 1.0 || p.second > 8.0) {
    throw ValueError(fmt::format("RandomPosterization: `factor` must be whole numbers of bits in [1, 8]; received "
                                 "({}, {})",
                                 p.first, p.second));
  }
  return {static_cast<int64_t>(p.first), static_cast<int64_t>(p.second)};
}

}  // namespace

RandomPosterization::RandomPosterization(ImageFactor factor, ColorOptions options)
    : ColorAugmentation("random_posterization", std::move(options), true), factor_(posterization_factor(factor)) {}

// Bits from [lower, upper) as Keras's randint draws them (upper itself only when lower == upper).
std::vector<float> RandomPosterization::get_random_transformation(int64_t batch) {
  auto t = uniform(batch);
  const auto span = static_cast<double>(factor_.second - factor_.first);
  for (float& v : t) {
    const auto bits = factor_.first == factor_.second
                          ? factor_.first
                          : std::min(factor_.second - 1, factor_.first + static_cast<int64_t>(v * span));
    v = static_cast<float>(8 - bits);
  }
  return t;
}

Tensor RandomPosterization::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = rescale(as_float(images), options_.value_range, {0.0, 255.0});
  const Tensor step = kops::power(2.0, column(t, x.shape()[0], 1, 0, name_));  // 2^shift
  const Tensor values = kops::floor(kops::clip(x, 0.0, 255.0));                // the uint8 cast
  return rescale(kops::multiply(kops::floor(kops::divide(values, step)), step), {0.0, 255.0}, options_.value_range);
}

std::string RandomPosterization::get_config() const {
  return config_text(*this, true, true, {{"factor", {factor_.first, factor_.second}}});
}

// ---- RandomColorDegeneration ----

RandomColorDegeneration::RandomColorDegeneration(ImageFactor factor, ColorOptions options)
    : FactorColorAugmentation("random_color_degeneration", factor, -1.0, 1.0, std::move(options), true) {}

Tensor RandomColorDegeneration::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = to_last(images);
  const Tensor f = column(t, x.shape()[0], 1, 0, name_);
  const Tensor y = kops::add(x, kops::multiply(f, kops::subtract(kops::rgb_to_grayscale(x), x)));
  return from_last(kops::clip(y, options_.value_range.first, options_.value_range.second));
}

}  // namespace osprey::keras::layers
