// Keras 3's color augmentations, part two: RandomSaturation and RandomHue (through HSV), RandomSharpness (a 3×3
// depthwise smoothing), Equalization (histograms, on the host) and RandomColorJitter.
#include "keras/layers/preprocessing/color_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "osprey/device.h"
#include "osprey/errors.h"
#include "keras/layers/preprocessing/crop.h"
#include "osprey/keras/layers/preprocessing.h"
#include "keras/saving/serialization.h"

namespace osprey::keras::layers {

namespace kops = osprey::keras::ops;
using color::column;
using color::parse_factor;
using color::rescale;

namespace {

// HSV images (N, H, W, 3) with channel `axis` of them replaced.
Tensor with_channel(const Tensor& hsv, int index, const Tensor& replacement) {
  std::vector<Tensor> parts;
  for (int i = 0; i < 3; ++i) parts.push_back(i == index ? replacement : osprey::ops::slice_axis(hsv, 3, i, 1));
  return kops::concatenate(parts, 3);
}

}  // namespace

// ---- RandomSaturation ----

RandomSaturation::RandomSaturation(ImageFactor factor, ColorOptions options)
    : FactorColorAugmentation("random_saturation", factor, -1.0, 1.0, std::move(options), true) {}

std::vector<float> RandomSaturation::get_random_transformation(int64_t batch) {
  auto t = FactorColorAugmentation::get_random_transformation(batch);
  for (float& f : t) f = f / ((1.0f - f) + 1e-7f);  // Keras: factor / (1 - factor + epsilon())
  return t;
}

Tensor RandomSaturation::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor hsv = kops::rgb_to_hsv(to_last(images));
  const Tensor s = kops::clip(kops::multiply(osprey::ops::slice_axis(hsv, 3, 1, 1), column(t, hsv.shape()[0], 1, 0, name_)),
                              options_.value_range.first, options_.value_range.second);
  return from_last(kops::hsv_to_rgb(with_channel(hsv, 1, s)));
}

// ---- RandomHue ----

RandomHue::RandomHue(ImageFactor factor, ColorOptions options)
    : FactorColorAugmentation("random_hue", factor, 0.0, 1.0, std::move(options), false) {}

// A sign per image (negative when a draw exceeds 1/2), then a factor from [lower, upper], halved.
std::vector<float> RandomHue::get_random_transformation(int64_t batch) {
  const auto sign = uniform(batch);
  auto t = FactorColorAugmentation::get_random_transformation(batch);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = (sign[i] > 0.5f ? -1.0f : 1.0f) * t[i] * 0.5f;
  return t;
}

Tensor RandomHue::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor hsv = kops::rgb_to_hsv(rescale(to_last(images), options_.value_range, {0.0, 1.0}));
  Tensor h = kops::add(osprey::ops::slice_axis(hsv, 3, 0, 1), column(t, hsv.shape()[0], 1, 0, name_));
  h = kops::where(kops::greater(h, 1.0), kops::subtract(h, 1.0), h);
  h = kops::where(kops::less(h, 0.0), kops::add(h, 1.0), h);
  const Tensor rgb = kops::clip(kops::hsv_to_rgb(with_channel(hsv, 0, h)), 0.0, 1.0);
  return from_last(rescale(rgb, {0.0, 1.0}, options_.value_range));
}

// ---- RandomSharpness ----

RandomSharpness::RandomSharpness(ImageFactor factor, ColorOptions options)
    : FactorColorAugmentation("random_sharpness", factor, 0.0, 1.0, std::move(options), true) {}

Tensor RandomSharpness::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = to_last(images);
  const int64_t c = x.shape()[3];
  const float a = 1.0f / 13.0f, b = 5.0f / 13.0f;
  std::vector<float> k;
  for (int i = 0; i < 9; ++i) k.insert(k.end(), static_cast<std::size_t>(c), i == 4 ? b : a);
  const Tensor kernel = Tensor::from_vector(k, Shape({3, 3, c, 1}));
  const Tensor smoothed = kops::depthwise_conv(x, kernel, {1}, "same");
  const Tensor blend = kops::subtract(1.0, kops::multiply(column(t, x.shape()[0], 1, 0, name_), 2.0));
  const Tensor y = kops::add(x, kops::multiply(blend, kops::subtract(smoothed, x)));
  return from_last(kops::clip(y, options_.value_range.first, options_.value_range.second));
}

// ---- Equalization ----

Equalization::Equalization(ColorOptions options, int64_t bins)
    : ColorAugmentation("equalization", std::move(options), true), bins_(bins) {
  if (bins < 1 || bins > (int64_t{1} << 20)) {
    throw ValueError(fmt::format("Equalization: `bins` must be in [1, 1048576]; received {}", bins));
  }
}

namespace {

// One channel of every image (Keras 3.15 takes the histogram over the whole batch), values already on the 0-255
// scale, equalized through a lookup table of `bins` entries; float64 as Keras's table (an int32 / int32 division).
std::vector<double> equalize(const std::vector<float>& values, int64_t bins) {
  std::vector<int64_t> hist(static_cast<std::size_t>(bins), 0);
  const float scale_bins = static_cast<float>(bins - 1);
  for (float v : values) {
    const float scaled = v * scale_bins / 255.0f;
    auto index = std::isnan(scaled) ? int64_t{0} : static_cast<int64_t>(std::clamp(scaled, -1.0f, 3.0e9f));
    hist[static_cast<std::size_t>(std::clamp<int64_t>(index, 0, bins - 1))] += 1;
  }
  std::vector<double> out(values.begin(), values.end());
  if (std::count_if(hist.begin(), hist.end(), [](int64_t h) { return h != 0; }) <= 1) return out;
  std::vector<int64_t> cdf(hist.size());
  int64_t running = 0;
  for (std::size_t i = 0; i < hist.size(); ++i) cdf[i] = running += hist[i];
  const int64_t cdf_min = *std::find_if(cdf.begin(), cdf.end(), [](int64_t v) { return v != 0; });
  int64_t denominator = cdf.back() - cdf_min;
  if (denominator == 0) denominator = 1;
  std::vector<double> table(cdf.size());
  for (std::size_t i = 0; i < cdf.size(); ++i) {
    table[i] = std::clamp(std::nearbyint(static_cast<double>((cdf[i] - cdf_min) * 255) / static_cast<double>(denominator)),
                          0.0, 255.0);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float scaled = std::clamp(values[i] / 255.0f * scale_bins, 0.0f, scale_bins);
    out[i] = table[static_cast<std::size_t>(std::isnan(scaled) ? 0.0f : scaled)];
  }
  return out;
}

}  // namespace

Tensor Equalization::transform_images(const Tensor& images, const std::vector<float>&) const {
  const Tensor x = to_last(images);
  const int64_t c = x.shape()[3];
  std::vector<float> v = x.to_vector<float>();
  const auto [lo, hi] = options_.value_range;
  // Keras compares its sorted list with a tuple, so it always rescales: float32 on the way in, float64 out.
  const auto in_scale = static_cast<float>(255.0 / (hi - lo)), in_offset = static_cast<float>(-lo * (255.0 / (hi - lo)));
  const double out_scale = (hi - lo) / 255.0, out_offset = lo;
  const std::size_t n = v.size() / static_cast<std::size_t>(c);
  std::vector<float> channel(n);
  for (int64_t ch = 0; ch < c; ++ch) {
    for (std::size_t i = 0; i < n; ++i) channel[i] = v[i * static_cast<std::size_t>(c) + static_cast<std::size_t>(ch)] * in_scale + in_offset;
    const auto eq = equalize(channel, bins_);
    for (std::size_t i = 0; i < n; ++i) {
      v[i * static_cast<std::size_t>(c) + static_cast<std::size_t>(ch)] = static_cast<float>(eq[i] * out_scale + out_offset);
    }
  }
  return from_last(Tensor::from_vector(v, x.shape()));
}

std::string Equalization::get_config() const {
  return color::config_text(*this, true, false, {{"bins", bins_}});
}

// ---- RandomColorJitter ----

namespace {

serialization::json factor_json(const std::optional<ImageFactor>& f) {
  if (!f) return nullptr;
  if (f->single) return f->a;
  return serialization::json::array({f->a, f->b});
}

ColorOptions part_options(const ColorOptions& o) {
  return ColorOptions{.value_range = o.value_range, .seed = o.seed};
}

}  // namespace

RandomColorJitter::RandomColorJitter(ColorJitterFactors factors, ColorOptions options)
    : ColorAugmentation("random_color_jitter", std::move(options), false), factors_(std::move(factors)) {
  const auto range = options_.value_range;
  const auto make = [&](const ImageFactor& f, auto tag) -> std::shared_ptr<Layer> {
    using L = typename decltype(tag)::type;
    return f.single ? std::make_shared<L>(f.a, range) : std::make_shared<L>(std::pair<double, double>{f.a, f.b}, range);
  };
  if (factors_.brightness) brightness_ = make(*factors_.brightness, std::type_identity<RandomBrightness>{});
  if (factors_.contrast) contrast_ = make(*factors_.contrast, std::type_identity<RandomContrast>{});
  if (factors_.saturation) saturation_ = std::make_shared<RandomSaturation>(*factors_.saturation, part_options(options_));
  if (factors_.hue) hue_ = std::make_shared<RandomHue>(*factors_.hue, part_options(options_));
}

Tensor RandomColorJitter::call(const Tensor& inputs, bool training) {
  check_batch(name_, inputs);
  return training ? transform_images(inputs, {}) : inputs;
}

Tensor RandomColorJitter::transform_images(const Tensor& images, const std::vector<float>&) const {
  Tensor x = to_last(images);
  for (const auto& part : {brightness_, contrast_, std::shared_ptr<Layer>(saturation_), std::shared_ptr<Layer>(hue_)}) {
    if (part) x = (*part)(x, true);
  }
  return from_last(x);
}

std::string RandomColorJitter::get_config() const {
  return color::config_text(*this, true, true,
                            {{"brightness_factor", factor_json(factors_.brightness)},
                             {"contrast_factor", factor_json(factors_.contrast)},
                             {"saturation_factor", factor_json(factors_.saturation)},
                             {"hue_factor", factor_json(factors_.hue)}});
}

}  // namespace osprey::keras::layers
