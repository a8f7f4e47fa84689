// keras.layers.RandomElasticTransform: Keras 3.15's draws (a probability per image from factor's range against a
// uniform threshold, one distortion per batch from scale's range) in Osprey's generator, alpha and sigma in float32
// as Keras computes them from the distortion, keras::ops::elastic_transform, then the whole batch clipped to
// value_range. Config as Keras writes it.
#include <fmt/format.h>

#include <cmath>

#include "keras/layers/preprocessing/color_common.h"
#include "keras/layers/preprocessing/crop.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/mix.h"
#include "osprey/keras/ops.h"
#include "tensor/host_draws.h"

namespace osprey::keras::layers {

namespace kops = osprey::keras::ops;

namespace {

std::pair<double, double> range_of(const ImageFactor& f, const char* what, const std::string& layer) {
  try {
    return f.single ? keras_factor(f.a, 0.0, 1.0) : keras_factor(std::pair<double, double>{f.a, f.b}, 0.0, 1.0);
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("{}: `{}`: {}", layer, what, e.what()));
  }
}

}  // namespace

RandomElasticTransform::RandomElasticTransform(ElasticOptions options)
    : Layer(options.name, "random_elastic_transform", options.dtype), options_(std::move(options)),
      factor_(range_of(options_.factor, "factor", name_)), scale_(range_of(options_.scale, "scale", name_)) {
  if (options_.interpolation != "bilinear" && options_.interpolation != "nearest") {
    throw NotImplementedError(fmt::format("{}: Unknown `interpolation` {}. Expected of one ('nearest', 'bilinear').",
                                          name_, options_.interpolation));
  }
  const auto& m = options_.fill_mode;
  if (m != "constant" && m != "nearest" && m != "wrap" && m != "mirror" && m != "reflect") {
    throw NotImplementedError(fmt::format("{}: Unknown `fill_mode` {}. Expected of one {{'constant', 'nearest', "
                                          "'wrap', 'mirror', 'reflect'}}.",
                                          name_, m));
  }
  detail::check_data_format(options_.data_format, name_);
  if (options_.seed) generator_.emplace(static_cast<uint64_t>(*options_.seed), uint64_t{0x656c7374});
}

Shape RandomElasticTransform::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  return finish_build(input_shape);
}

double RandomElasticTransform::uniform() {
  return generator_ ? static_cast<double>(generator_->next_float()) : static_cast<double>(host_uniform(1)[0]);
}

RandomElasticTransform::Draw RandomElasticTransform::draw(int64_t batch, int64_t height, int64_t width) {
  Draw d;
  std::vector<double> probability(static_cast<std::size_t>(batch));
  for (double& p : probability) p = factor_.first + (factor_.second - factor_.first) * uniform();
  for (int64_t i = 0; i < batch; ++i) d.apply.push_back(uniform() < probability[static_cast<std::size_t>(i)]);
  d.distortion = static_cast<float>(scale_.first + (scale_.second - scale_.first) * uniform());
  std::vector<float> noise(static_cast<std::size_t>(batch * height * width));
  for (float& z : noise) z = static_cast<float>(random::host::normal_draw([this] { return uniform(); }));
  d.noise = Tensor::from_vector(noise, Shape({batch, height, width}));
  return d;
}

Tensor RandomElasticTransform::transform_images(const Tensor& images, const Draw& d) const {
  const Tensor x = as_float(images);
  const bool first = options_.data_format == "channels_first";
  const int64_t h = x.shape()[first ? 2 : 1], w = x.shape()[first ? 3 : 2], batch = x.shape()[0];
  if (static_cast<int64_t>(d.apply.size()) != batch) {
    throw ValueError(fmt::format("{}: the draw is for {} images; the batch has {}", name_, d.apply.size(), batch));
  }
  // Keras's float32 arithmetic: 0.1 · d and 0.05 · d, times the longer and the shorter side.
  const auto dist = static_cast<float>(d.distortion);
  const float alpha = static_cast<float>(std::max(h, w)) * (0.1f * dist);
  const float sigma = static_cast<float>(std::min(h, w)) * (0.05f * dist);
  const Tensor moved = kops::elastic_transform(x, d.noise, alpha, sigma, options_.interpolation, options_.fill_mode,
                                               options_.fill_value, options_.data_format);
  std::vector<float> apply;
  for (bool a : d.apply) apply.push_back(a ? 1.0f : 0.0f);
  const Tensor chosen = kops::greater(Tensor::from_vector(apply, Shape({batch, 1, 1, 1})), 0.5);
  return kops::clip(kops::where(chosen, moved, x), options_.value_range.first, options_.value_range.second);
}

Tensor RandomElasticTransform::call(const Tensor& inputs, bool training) {
  check_batch(name_, inputs);
  if (!training || factor_.second == 0.0 || scale_.second == 0.0) return as_float(inputs);
  const bool first = options_.data_format == "channels_first";
  const int64_t h = inputs.shape()[first ? 2 : 1], w = inputs.shape()[first ? 3 : 2];
  return transform_images(inputs, draw(inputs.shape()[0], h, w));
}

// ---- Keras config ----

namespace ser = serialization;
using ser::json;

std::string RandomElasticTransform::get_config() const {
  json c = ser::base_config(*this);
  c["data_format"] = options_.data_format;
  c["factor"] = json::array({factor_.first, factor_.second});
  c["scale"] = json::array({scale_.first, scale_.second});
  c["interpolation"] = options_.interpolation;
  c["fill_mode"] = options_.fill_mode;
  c["fill_value"] = options_.fill_value;
  c["value_range"] = json::array({options_.value_range.first, options_.value_range.second});
  c["seed"] = options_.seed ? json(*options_.seed) : json(nullptr);
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(elastic) {
  ser::register_layer_class("RandomElasticTransform", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const char* layer = "RandomElasticTransform";
    const ColorOptions common = color::options_of(c, layer);
    ElasticOptions o{.factor = color::factor_of(c, "factor", layer, 1.0),
                     .scale = color::factor_of(c, "scale", layer, 1.0),
                     .interpolation = ser::value_or<std::string>(c, "interpolation", "bilinear"),
                     .fill_mode = ser::value_or<std::string>(c, "fill_mode", "reflect"),
                     .fill_value = c.contains("fill_value") ? ser::number(c, "fill_value", -1e30, 1e30, layer) : 0.0,
                     .value_range = common.value_range,
                     .seed = common.seed,
                     .data_format = common.data_format,
                     .name = common.name};
    return std::make_shared<RandomElasticTransform>(std::move(o));
  }});
}

}  // namespace osprey::keras::layers
