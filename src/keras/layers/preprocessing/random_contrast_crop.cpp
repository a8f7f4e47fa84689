// keras.layers.RandomContrast, RandomBrightness and RandomCrop: per-batch draws from Osprey's generator on the host, the images
// changed by ops (so they run on the layer's device); Keras 3's argument parsing and checks.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "keras/layers/preprocessing/crop.h"
#include "keras/saving/serialization.h"
#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/preprocessing.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::keras::layers {

namespace {

void check_value_range(const std::pair<double, double>& r, const char* layer) {
  if (!std::isfinite(r.first) || !std::isfinite(r.second) || r.first > r.second) {
    throw ValueError(fmt::format("{}: `value_range` must be two finite numbers [low, high] with low <= high; "
                                 "received [{}, {}]",
                                 layer, r.first, r.second));
  }
}

}  // namespace

// ---- RandomContrast ----

RandomContrast::RandomContrast(double factor, std::pair<double, double> value_range, std::string name)
    : Layer(name, "random_contrast"), value_range_(value_range) {
  std::tie(lower_, upper_) = keras_factor(factor, 0.0, 1.0);
  check_value_range(value_range_, "RandomContrast");
}

RandomContrast::RandomContrast(std::pair<double, double> factor, std::pair<double, double> value_range,
                               std::string name)
    : Layer(name, "random_contrast"), value_range_(value_range) {
  std::tie(lower_, upper_) = keras_factor(factor, 0.0, 1.0);
  check_value_range(value_range_, "RandomContrast");
}

Shape RandomContrast::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  return finish_build(input_shape);
}

// (x - mean) · f + mean per image and channel, the means over height and width, then clipped to value_range: the
// images as rows of (height·width, images·channels) so that the means and factors are row vectors.
Tensor RandomContrast::call(const Tensor& inputs, bool training) {
  check_batch(name_, inputs);
  if (!training) return inputs;
  const Tensor x = as_float(inputs);
  const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const auto u = host_uniform(n);
  std::vector<float> f(static_cast<std::size_t>(n * c));
  const auto lo = static_cast<float>(1.0 - lower_), hi = static_cast<float>(1.0 + upper_);
  for (int64_t i = 0; i < n * c; ++i) f[static_cast<std::size_t>(i)] = lo + (hi - lo) * u[static_cast<std::size_t>(i / c)];
  const Tensor rows = osprey::ops::reshape(osprey::ops::transpose(osprey::ops::reshape(x, Shape({n, h * w, c})), {1, 0, 2}), Shape({h * w, n * c}));
  const Tensor mean = osprey::ops::reduce_mean(rows, 0);
  Tensor y = osprey::ops::add(osprey::ops::mul(osprey::ops::sub(rows, mean), Tensor::from_vector(f, Shape({n * c}))), mean);
  y = osprey::ops::minimum(osprey::ops::maximum(y, Tensor::scalar(value_range_.first)), Tensor::scalar(value_range_.second));
  return osprey::ops::reshape(osprey::ops::transpose(osprey::ops::reshape(y, Shape({h * w, n, c})), {1, 0, 2}), Shape({n, h, w, c}));
}

// ---- RandomBrightness ----

namespace {

// Keras sorts value_range.
std::pair<double, double> sorted_range(std::pair<double, double> r) {
  if (r.first > r.second) std::swap(r.first, r.second);
  check_value_range(r, "RandomBrightness");
  return r;
}

}  // namespace

RandomBrightness::RandomBrightness(double factor, std::pair<double, double> value_range, std::string name)
    : Layer(name, "random_brightness"), value_range_(sorted_range(value_range)) {
  std::tie(lower_, upper_) = keras_factor(factor, -1.0, 1.0);
}

RandomBrightness::RandomBrightness(std::pair<double, double> factor, std::pair<double, double> value_range,
                                   std::string name)
    : Layer(name, "random_brightness"), value_range_(sorted_range(value_range)) {
  std::tie(lower_, upper_) = keras_factor(factor, -1.0, 1.0);
}

Shape RandomBrightness::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  return finish_build(input_shape);
}

// x + delta per image (one draw per image, Keras's rgb_delta of shape (N, 1, 1, 1)), clipped to value_range.
Tensor RandomBrightness::call(const Tensor& inputs, bool training) {
  check_batch(name_, inputs);
  if (!training) return inputs;
  const Tensor x = as_float(inputs);
  const int64_t n = x.shape()[0];
  const auto u = host_uniform(n);
  const double span = value_range_.second - value_range_.first;
  std::vector<float> delta(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    delta[k] = static_cast<float>((lower_ + (upper_ - lower_) * u[k]) * span);
  }
  const Tensor y = osprey::ops::add(x, Tensor::from_vector(delta, Shape({n, 1, 1, 1})));
  return osprey::ops::minimum(osprey::ops::maximum(y, Tensor::scalar(value_range_.first)), Tensor::scalar(value_range_.second));
}

// ---- RandomCrop ----

RandomCrop::RandomCrop(int64_t height, int64_t width, std::string data_format, std::string name)
    : Layer(name, "random_crop"), height_(height), width_(width), data_format_(std::move(data_format)) {
  if (height < 1 || width < 1 || height > (int64_t{1} << 24) || width > (int64_t{1} << 24)) {
    throw ValueError(fmt::format("RandomCrop: height and width must be in [1, 2^24]; received height={}, width={}",
                                 height, width));
  }
  detail::check_data_format(data_format_, "RandomCrop");
}

Shape RandomCrop::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  return finish_build(data_format_ == "channels_first" ? Shape({input_shape[0], height_, width_})
                                                       : Shape({height_, width_, input_shape[2]}));
}

Tensor RandomCrop::call(const Tensor& inputs, bool training) {
  check_batch(name_, inputs);
  const bool first = data_format_ == "channels_first";
  const Tensor x = to_last(as_float(inputs), first);
  const int64_t h = x.shape()[1], w = x.shape()[2];
  if (training && h > height_ && w > width_) {
    const auto u = host_uniform(2);  // Keras: int(uniform(0, h - height + 1)), one window for the batch
    const auto top = std::min(h - height_, static_cast<int64_t>(u[0] * static_cast<float>(h - height_ + 1)));
    const auto left = std::min(w - width_, static_cast<int64_t>(u[1] * static_cast<float>(w - width_ + 1)));
    return from_last(osprey::ops::slice_axis(osprey::ops::slice_axis(x, 1, top, height_), 2, left, width_), first);
  }
  Tensor y = crop_to_aspect(x, height_, width_);
  if (y.shape()[1] != height_ || y.shape()[2] != width_) y = osprey::ops::resize(y, height_, width_, osprey::ops::ResizeMethod::bilinear);
  return from_last(y, first);
}

// ---- Keras configs ----

namespace ser = serialization;
using ser::json;

std::string RandomContrast::get_config() const {
  json c = ser::base_config(*this);
  c["data_format"] = "channels_last";  // as Keras 3.15 writes it
  c["factor"] = json::array({lower_, upper_});
  c["value_range"] = json::array({value_range_.first, value_range_.second});
  c["seed"] = nullptr;
  return ser::dumps(c);
}

std::string RandomBrightness::get_config() const {
  json c = ser::base_config(*this);
  c["data_format"] = "channels_last";
  c["factor"] = json::array({lower_, upper_});
  c["value_range"] = json::array({value_range_.first, value_range_.second});
  c["seed"] = nullptr;
  return ser::dumps(c);
}

std::string RandomCrop::get_config() const {
  json c = ser::base_config(*this);
  c["height"] = height_;
  c["width"] = width_;
  c["seed"] = nullptr;
  c["data_format"] = data_format_;
  return ser::dumps(c);
}


OSPREY_REGISTER_LAYERS(random_contrast_crop) {
  ser::register_layer_class("RandomContrast", {true, [](const json& c) -> std::shared_ptr<Layer> {
    if (c.contains("data_format") && c["data_format"] == "channels_first") {
      ser::unsupported("RandomContrast data_format", "channels_first", "channels_last");
    }
    const auto range = c.contains("value_range") ? number_pair(c["value_range"], "value_range", "RandomContrast")
                                                 : std::pair<double, double>{0.0, 255.0};
    if (!c.contains("factor")) throw ValueError("RandomContrast: the config has no `factor`");
    const json& f = c["factor"];
    if (f.is_number()) return std::make_shared<RandomContrast>(f.get<double>(), range, ser::name_of(c));
    return std::make_shared<RandomContrast>(number_pair(f, "factor", "RandomContrast"), range, ser::name_of(c));
  }});
  ser::register_layer_class("RandomBrightness", {true, [](const json& c) -> std::shared_ptr<Layer> {
    if (c.contains("data_format") && c["data_format"] == "channels_first") {
      ser::unsupported("RandomBrightness data_format", "channels_first", "channels_last");
    }
    const auto range = c.contains("value_range") ? number_pair(c["value_range"], "value_range", "RandomBrightness")
                                                 : std::pair<double, double>{0.0, 255.0};
    if (!c.contains("factor")) throw ValueError("RandomBrightness: the config has no `factor`");
    const json& f = c["factor"];
    if (f.is_number()) return std::make_shared<RandomBrightness>(f.get<double>(), range, ser::name_of(c));
    return std::make_shared<RandomBrightness>(number_pair(f, "factor", "RandomBrightness"), range, ser::name_of(c));
  }});
  ser::register_layer_class("RandomCrop", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<RandomCrop>(ser::integer(c, "height", 1, int64_t{1} << 24, "RandomCrop"),
                                        ser::integer(c, "width", 1, int64_t{1} << 24, "RandomCrop"),
                                        ser::value_or<std::string>(c, "data_format", "channels_last"),
                                        ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
