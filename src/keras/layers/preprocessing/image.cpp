// keras.layers.Rescaling, Resizing and CenterCrop on ops (resize: tf.image.resize's taps on every backend).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "keras/saving/serialization.h"
#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/image_ops.h"
#include "osprey/keras/layers/preprocessing.h"
#include "keras/layers/preprocessing/crop.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::keras::layers {

namespace ops = osprey::ops;  // keras::ops is named in full (image_ops.h declares it)

namespace {

void check_size(const std::string& layer, int64_t height, int64_t width) {
  if (height < 1 || width < 1 || height > (int64_t{1} << 24) || width > (int64_t{1} << 24)) {
    throw ValueError(fmt::format("{}: height and width must be in [1, 2^24]; received height={}, width={}", layer,
                                 height, width));
  }
}

}  // namespace

// Keras's smart_resize crop: the largest centred window of the target's aspect ratio (the resize follows).
Tensor crop_to_aspect(const Tensor& x, int64_t height, int64_t width) {
  const int64_t h = x.shape()[1], w = x.shape()[2];
  const int64_t ch = std::min(h, static_cast<int64_t>(static_cast<double>(w * height) / static_cast<double>(width)));
  const int64_t cw = std::min(w, static_cast<int64_t>(static_cast<double>(h * width) / static_cast<double>(height)));
  const int64_t top = static_cast<int64_t>(static_cast<double>(h - ch) / 2);
  const int64_t left = static_cast<int64_t>(static_cast<double>(w - cw) / 2);
  return osprey::ops::slice_axis(osprey::ops::slice_axis(x, 1, top, std::max<int64_t>(ch, 1)), 2, left, std::max<int64_t>(cw, 1));
}

void check_images(const std::string& layer, const Shape& input_shape) {
  if (input_shape.rank() != 3) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected images of ndim=4 "
                                 "(batch, height, width, channels), found ndim={}. Full shape received: {}",
                                 layer, input_shape.rank() + 1, detail::with_batch(input_shape)));
  }
}

void check_batch(const std::string& layer, const Tensor& x) {
  const auto d = x.shape().dims();
  if (d.size() != 4) check_images(layer, Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
}

std::pair<double, double> keras_factor(double f, double lo, double hi) {
  if (!(f >= lo && f <= hi)) {
    throw ValueError(fmt::format("The `factor` argument should be a number (or a list of two numbers) in the range "
                                 "[{}, {}]. Received: factor={}", lo, hi, f));
  }
  return {std::max(lo, -std::abs(f)), std::abs(f)};
}

std::pair<double, double> keras_factor(std::pair<double, double> f, double lo, double hi) {
  if (!std::isfinite(f.first) || !std::isfinite(f.second) || f.first > hi || f.second < lo) {
    throw ValueError(fmt::format("The `factor` argument should be a number (or a list of two numbers) in the range "
                                 "[{}, {}]. Received: factor=({}, {})", lo, hi, f.first, f.second));
  }
  return {std::min(f.first, f.second), std::max(f.first, f.second)};
}

std::vector<float> host_uniform(int64_t n) {
  DeviceScope cpu("/CPU:0");
  return random::uniform({n}).to_vector<float>();
}

Tensor as_float(const Tensor& x) { return x.dtype() == DType::float32 ? x : x.cast(DType::float32); }

std::pair<double, double> number_pair(const nlohmann::json& v, const char* key, const char* layer) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number()) {
    throw ValueError(fmt::format("{}: `{}` must be a list of two numbers; got {}", layer, key, v.dump()));
  }
  return {v[0].get<double>(), v[1].get<double>()};
}

osprey::ops::ResizeMethod keras_resize_method(const std::string& name, const char* where) {
  static const char* names[] = {"bilinear", "nearest", "lanczos3", "lanczos5", "bicubic", "area"};
  if (std::find_if(std::begin(names), std::end(names), [&](const char* n) { return name == n; }) == std::end(names)) {
    throw ValueError(fmt::format("{}: Invalid value for argument `interpolation`. Expected of one ('bilinear', "
                                 "'nearest', 'lanczos3', 'lanczos5', 'bicubic', 'area'). Received: interpolation={}",
                                 where, name));
  }
  return osprey::ops::resize_method(name);
}

// Keras's pad_to_aspect_ratio: fill_value rows (or columns) added evenly above and below (left and right) so that
// the image takes the target's aspect ratio (TensorFlow backend: int(float(pad - h) / 2) on each side).
Tensor pad_to_aspect(const Tensor& x, int64_t height, int64_t width, double fill_value) {
  const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const auto ph = std::max(h, static_cast<int64_t>(static_cast<float>(w * height) / static_cast<float>(width)));
  const auto pw = std::max(w, static_cast<int64_t>(static_cast<float>(h * width) / static_cast<float>(height)));
  const auto top = static_cast<int64_t>(static_cast<float>(ph - h) / 2);
  const auto left = static_cast<int64_t>(static_cast<float>(pw - w) / 2);
  Tensor y = x;
  if (top > 0) {
    const Tensor band = Tensor::full(Shape({n, top, w, c}), fill_value);
    y = osprey::ops::concat({band, y, band}, 1);
  }
  if (left > 0) {
    const Tensor band = Tensor::full(Shape({n, y.shape()[1], left, c}), fill_value);
    y = osprey::ops::concat({band, y, band}, 2);
  }
  return y;
}

namespace {

Shape image_shape(const Shape& input_shape, bool first, int64_t height, int64_t width) {
  return first ? Shape({input_shape[0], height, width}) : Shape({height, width, input_shape[2]});
}

}  // namespace

Rescaling::Rescaling(double scale, double offset, std::string name)
    : Layer(name, "rescaling"), scale_(scale), offset_(offset) {}

Tensor Rescaling::call(const Tensor& x, bool) {
  const Tensor scaled = osprey::ops::mul(x.dtype() == DType::float32 ? x : x.cast(DType::float32), Tensor::scalar(scale_));
  return offset_ == 0.0 ? scaled : osprey::ops::add(scaled, Tensor::scalar(offset_));
}

Resizing::Resizing(int64_t height, int64_t width, ResizingOptions options)
    : Layer(options.name, "resizing", options.dtype), height_(height), width_(width), options_(std::move(options)) {
  check_size("Resizing", height, width);
  keras_resize_method(options_.interpolation, "Resizing");
  detail::check_data_format(options_.data_format, "Resizing");
  if (options_.crop_to_aspect_ratio && options_.pad_to_aspect_ratio) {
    throw ValueError("Resizing: only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be `True`.");
  }
}

Shape Resizing::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  return finish_build(image_shape(input_shape, options_.data_format == "channels_first", height_, width_));
}

// keras.ops.image.resize of the images in float32 (Keras's layer calls the backend's resize: a float result).
Tensor Resizing::call(const Tensor& inputs, bool) {
  check_batch(name_, inputs);
  return keras::ops::resize(as_float(inputs), {height_, width_},
                            {.interpolation = options_.interpolation,
                             .antialias = options_.antialias,
                             .crop_to_aspect_ratio = options_.crop_to_aspect_ratio,
                             .pad_to_aspect_ratio = options_.pad_to_aspect_ratio,
                             .fill_mode = "constant",
                             .fill_value = options_.fill_value,
                             .data_format = options_.data_format});
}

CenterCrop::CenterCrop(int64_t height, int64_t width, std::string data_format, std::string name)
    : Layer(name, "center_crop"), height_(height), width_(width), data_format_(std::move(data_format)) {
  check_size("CenterCrop", height, width);
  detail::check_data_format(data_format_, "CenterCrop");
}

Shape CenterCrop::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  return finish_build(image_shape(input_shape, data_format_ == "channels_first", height_, width_));
}

Tensor CenterCrop::call(const Tensor& inputs, bool) {
  const bool first = data_format_ == "channels_first";
  check_batch(name_, inputs);
  const Tensor x = to_last(inputs.dtype() == DType::float32 ? inputs : inputs.cast(DType::float32), first);
  const int64_t h = x.shape()[1], w = x.shape()[2];
  if (h >= height_ && w >= width_) {
    return from_last(osprey::ops::slice_axis(osprey::ops::slice_axis(x, 1, (h - height_) / 2, height_), 2, (w - width_) / 2, width_),
                     first);
  }
  return from_last(osprey::ops::resize(crop_to_aspect(x, height_, width_), height_, width_, osprey::ops::ResizeMethod::bilinear), first);
}

// ---- Keras configs ----

namespace ser = serialization;
using ser::json;

std::string Rescaling::get_config() const { return ser::config_text(*this, {{"scale", scale_}, {"offset", offset_}}); }
std::string Resizing::get_config() const {
  return ser::config_text(*this, {{"data_format", options_.data_format},
                                  {"height", height_},
                                  {"width", width_},
                                  {"interpolation", options_.interpolation},
                                  {"crop_to_aspect_ratio", options_.crop_to_aspect_ratio},
                                  {"pad_to_aspect_ratio", options_.pad_to_aspect_ratio},
                                  {"fill_mode", "constant"},
                                  {"fill_value", options_.fill_value},
                                  {"antialias", options_.antialias}});
}
std::string CenterCrop::get_config() const {
  return ser::config_text(*this, {{"data_format", data_format_}, {"height", height_}, {"width", width_}});
}

OSPREY_REGISTER_LAYERS(preprocessing_image) {
  ser::register_layer_class("Rescaling", {true, [](const json& c) -> std::shared_ptr<Layer> {
    if (c.contains("scale") && c["scale"].is_array()) ser::unsupported("Rescaling scale", "a list", "one number");
    return std::make_shared<Rescaling>(ser::number(c, "scale", -1e30, 1e30, "Rescaling"),
                                       c.contains("offset") ? ser::number(c, "offset", -1e30, 1e30, "Rescaling") : 0.0,
                                       ser::name_of(c));
  }});
  ser::register_layer_class("Resizing", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const auto fill_mode = ser::value_or<std::string>(c, "fill_mode", "constant");
    if (fill_mode != "constant") {
      throw ValueError(fmt::format("Resizing: fill_mode \"{}\" is not supported; only \"constant\"", fill_mode));
    }
    ResizingOptions o{ser::value_or<std::string>(c, "interpolation", "bilinear"),
                      ser::value_or(c, "crop_to_aspect_ratio", false),
                      ser::value_or<std::string>(c, "data_format", "channels_last"), ser::name_of(c),
                      ser::value_or(c, "pad_to_aspect_ratio", false),
                      c.contains("fill_value") && c["fill_value"].is_number() ? c["fill_value"].get<double>() : 0.0,
                      std::string{}, ser::value_or(c, "antialias", false)};
    return std::make_shared<Resizing>(ser::integer(c, "height", 1, int64_t{1} << 24, "Resizing"),
                                      ser::integer(c, "width", 1, int64_t{1} << 24, "Resizing"), o);
  }});
  ser::register_layer_class("CenterCrop", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<CenterCrop>(ser::integer(c, "height", 1, int64_t{1} << 24, "CenterCrop"),
                                        ser::integer(c, "width", 1, int64_t{1} << 24, "CenterCrop"),
                                        ser::value_or<std::string>(c, "data_format", "channels_last"),
                                        ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
