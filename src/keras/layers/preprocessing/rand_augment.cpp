// keras.layers.RandAugment: Keras 3.15's eleven operations made from one factor range, num_ops of them drawn per
// batch and applied in turn in training (the identity in inference), computed channels_last. Config as Keras writes
// it; the weights file keeps a group per operation, as Keras's does.
#include <fmt/format.h>

#include <algorithm>

#include "keras/layers/preprocessing/crop.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/mix.h"

namespace osprey::keras::layers {

namespace {

std::pair<double, double> factor_of(const ImageFactor& f, const std::string& layer) {
  try {
    return f.single ? keras_factor(f.a, 0.0, 1.0) : keras_factor(std::pair<double, double>{f.a, f.b}, 0.0, 1.0);
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("{}: {}", layer, e.what()));
  }
}

}  // namespace

RandAugment::RandAugment(RandAugmentOptions options)
    : Layer(options.name, "rand_augment", options.dtype), options_(std::move(options)),
      factor_(factor_of(options_.factor, name_)) {
  if (options_.num_ops < 0 || options_.num_ops > 64) {
    throw ValueError(fmt::format("{}: `num_ops` must be between 0 and 64; received {}", name_, options_.num_ops));
  }
  if (options_.interpolation != "bilinear" && options_.interpolation != "nearest") {
    throw ValueError(fmt::format("{}: `interpolation` must be \"bilinear\" or \"nearest\"; received \"{}\"", name_,
                                 options_.interpolation));
  }
  detail::check_data_format(options_.data_format, name_);
  if (options_.seed) generator_.emplace(static_cast<uint64_t>(*options_.seed), uint64_t{0x72616e64});
  make_operations();
}

// Keras's operations and their arguments: the factor pair for each, RandomPosterization's max(1, int(8 · upper))
// bits. They compute channels_last (call() transposes channels_first batches around them).
void RandAugment::make_operations() {
  const FactorRange range(factor_.first, factor_.second);
  AugmentOptions spatial;
  spatial.interpolation = options_.interpolation;
  ColorOptions color;
  color.value_range = options_.value_range;
  color.seed = options_.seed;
  const auto posterize = std::max(1, static_cast<int>(8.0 * factor_.second));
  operations_ = {
      {"random_shear", std::make_shared<RandomShear>(range, range, spatial)},
      {"random_translation", std::make_shared<RandomTranslation>(range, range, spatial)},
      {"random_rotation", std::make_shared<RandomRotation>(range, spatial)},
      {"random_brightness", std::make_shared<RandomBrightness>(factor_, options_.value_range)},
      {"random_color_degeneration", std::make_shared<RandomColorDegeneration>(ImageFactor(factor_.first, factor_.second), color)},
      {"random_contrast", std::make_shared<RandomContrast>(factor_, options_.value_range)},
      {"random_sharpness", std::make_shared<RandomSharpness>(ImageFactor(factor_.first, factor_.second), color)},
      {"random_posterization", std::make_shared<RandomPosterization>(ImageFactor(static_cast<double>(posterize)), color)},
      {"solarization", std::make_shared<Solarization>(ImageFactor(factor_.first, factor_.second),
                                                      ImageFactor(factor_.first, factor_.second), color)},
      {"auto_contrast", std::make_shared<AutoContrast>(color)},
      {"equalization", std::make_shared<Equalization>(color)},
  };
}

Shape RandAugment::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  const bool first = options_.data_format == "channels_first";
  const Shape last = first ? Shape({input_shape[1], input_shape[2], input_shape[0]}) : input_shape;
  for (auto& [key, op] : operations_) (void)op->build(last);
  return finish_build(input_shape);
}

std::vector<int> RandAugment::draw_operations() {
  std::vector<float> u;
  if (generator_) {
    for (int i = 0; i < options_.num_ops; ++i) u.push_back(generator_->next_float());
  } else {
    u = host_uniform(options_.num_ops);
  }
  const int n = static_cast<int>(operations_.size());
  std::vector<int> picks;
  for (float v : u) picks.push_back(std::min(n - 1, static_cast<int>(v * static_cast<float>(n))));
  return picks;
}

Tensor RandAugment::call(const Tensor& inputs, bool training) {
  check_batch(name_, inputs);
  const Tensor x = as_float(inputs);
  if (!training) return x;
  const bool first = options_.data_format == "channels_first";
  Tensor y = to_last(x, first);
  for (int k : draw_operations()) y = (*operations_[static_cast<std::size_t>(k)].second)(y, true);
  return from_last(y, first);
}

std::vector<std::pair<std::string, Layer*>> RandAugment::sublayers() {
  std::vector<std::pair<std::string, Layer*>> out;
  for (auto& [key, op] : operations_) out.emplace_back(key, op.get());
  return out;
}

// ---- Keras config ----

namespace ser = serialization;
using ser::json;

std::string RandAugment::get_config() const {
  json c = ser::base_config(*this);
  c["data_format"] = options_.data_format;
  c["value_range"] = json::array({options_.value_range.first, options_.value_range.second});
  c["num_ops"] = options_.num_ops;
  c["factor"] = json::array({factor_.first, factor_.second});
  c["interpolation"] = options_.interpolation;
  c["seed"] = options_.seed ? json(*options_.seed) : json(nullptr);
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(rand_augment) {
  ser::register_layer_class("RandAugment", {true, [](const json& c) -> std::shared_ptr<Layer> {
    RandAugmentOptions o;
    if (c.contains("value_range")) o.value_range = number_pair(c["value_range"], "value_range", "RandAugment");
    if (c.contains("num_ops")) o.num_ops = static_cast<int>(ser::integer(c, "num_ops", 0, 64, "RandAugment"));
    if (c.contains("factor") && !c["factor"].is_null()) {
      if (c["factor"].is_number()) {
        o.factor = c["factor"].get<double>();
      } else {
        const auto p = number_pair(c["factor"], "factor", "RandAugment");
        o.factor = ImageFactor(p.first, p.second);
      }
    }
    o.interpolation = ser::value_or<std::string>(c, "interpolation", "bilinear");
    if (c.contains("seed") && !c["seed"].is_null()) {
      if (!c["seed"].is_number_integer()) throw ValueError("RandAugment: `seed` must be an integer or null");
      o.seed = c["seed"].get<int64_t>();
    }
    o.data_format = ser::value_or<std::string>(c, "data_format", "channels_last");
    o.name = ser::name_of(c);
    return std::make_shared<RandAugment>(std::move(o));
  }});
}

}  // namespace osprey::keras::layers
