// The color augmentation layers from Keras configs (keras.layers.RandomGrayscale ... RandomColorJitter as Keras 3.15
// writes them).
#include <fmt/format.h>

#include "keras/layers/preprocessing/color_common.h"
#include "keras/layers/preprocessing/crop.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/color.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using ser::json;

namespace color {

ImageFactor factor_of(const json& c, const char* key, const char* layer, std::optional<double> fallback) {
  if (!c.contains(key) || c[key].is_null()) {
    if (fallback) return *fallback;
    throw ValueError(fmt::format("{}: the config has no `{}`", layer, key));
  }
  const json& f = c[key];
  if (f.is_number()) return f.get<double>();
  const auto p = number_pair(f, key, layer);
  return {p.first, p.second};
}

std::optional<ImageFactor> optional_factor(const json& c, const char* key, const char* layer) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  return factor_of(c, key, layer);
}

ColorOptions options_of(const json& c, const char* layer) {
  ColorOptions o;
  if (c.contains("value_range")) o.value_range = number_pair(c["value_range"], "value_range", layer);
  o.data_format = ser::value_or<std::string>(c, "data_format", "channels_last");
  if (c.contains("seed") && !c["seed"].is_null()) {
    if (!c["seed"].is_number_integer()) throw ValueError(fmt::format("{}: `seed` must be an integer or null", layer));
    o.seed = c["seed"].get<int64_t>();
  }
  o.name = ser::name_of(c);
  return o;
}

}  // namespace color

using color::factor_of;
using color::optional_factor;
using color::options_of;

OSPREY_REGISTER_LAYERS(color) {
  ser::register_layer_class("RandomGrayscale", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const double f = c.contains("factor") ? ser::number(c, "factor", 0.0, 1.0, "RandomGrayscale") : 0.5;
    return std::make_shared<RandomGrayscale>(f, options_of(c, "RandomGrayscale"));
  }});
  ser::register_layer_class("RandomInvert", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<RandomInvert>(factor_of(c, "factor", "RandomInvert", 1.0), options_of(c, "RandomInvert"));
  }});
  ser::register_layer_class("AutoContrast", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<AutoContrast>(options_of(c, "AutoContrast"));
  }});
  ser::register_layer_class("Solarization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<Solarization>(factor_of(c, "addition_factor", "Solarization", 0.0),
                                          factor_of(c, "threshold_factor", "Solarization", 0.0),
                                          options_of(c, "Solarization"));
  }});
  ser::register_layer_class("RandomPosterization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<RandomPosterization>(factor_of(c, "factor", "RandomPosterization"),
                                                 options_of(c, "RandomPosterization"));
  }});
  ser::register_layer_class("RandomColorDegeneration", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<RandomColorDegeneration>(factor_of(c, "factor", "RandomColorDegeneration"),
                                                     options_of(c, "RandomColorDegeneration"));
  }});
  ser::register_layer_class("RandomSaturation", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<RandomSaturation>(factor_of(c, "factor", "RandomSaturation"),
                                              options_of(c, "RandomSaturation"));
  }});
  ser::register_layer_class("RandomHue", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<RandomHue>(factor_of(c, "factor", "RandomHue"), options_of(c, "RandomHue"));
  }});
  ser::register_layer_class("RandomSharpness", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<RandomSharpness>(factor_of(c, "factor", "RandomSharpness"),
                                             options_of(c, "RandomSharpness"));
  }});
  ser::register_layer_class("RandomGaussianBlur", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const char* name = "RandomGaussianBlur";
    return std::make_shared<RandomGaussianBlur>(factor_of(c, "factor", name, 1.0), factor_of(c, "kernel_size", name, 3.0),
                                                factor_of(c, "sigma", name, 1.0), options_of(c, name));
  }});
  ser::register_layer_class("RandomErasing", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const char* name = "RandomErasing";
    std::vector<double> fill;
    if (c.contains("fill_value") && !c["fill_value"].is_null()) {
      const json& f = c["fill_value"];
      if (f.is_number()) {
        fill.push_back(f.get<double>());
      } else if (f.is_array() && f.size() == 3 && f[0].is_number() && f[1].is_number() && f[2].is_number()) {
        for (const auto& v : f) fill.push_back(v.get<double>());
      } else {
        throw ValueError(fmt::format("RandomErasing: `fill_value` must be a number or three numbers; got {}", f.dump()));
      }
    }
    return std::make_shared<RandomErasing>(factor_of(c, "factor", name, 1.0),
                                           c.contains("scale") ? factor_of(c, "scale", name) : ImageFactor(0.02, 0.33),
                                           fill, options_of(c, name));
  }});
  ser::register_layer_class("Equalization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const int64_t bins = c.contains("bins") ? ser::integer(c, "bins", 1, int64_t{1} << 20, "Equalization") : 256;
    return std::make_shared<Equalization>(options_of(c, "Equalization"), bins);
  }});
  ser::register_layer_class("RandomColorJitter", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const char* name = "RandomColorJitter";
    return std::make_shared<RandomColorJitter>(
        ColorJitterFactors{optional_factor(c, "brightness_factor", name), optional_factor(c, "contrast_factor", name),
                           optional_factor(c, "saturation_factor", name), optional_factor(c, "hue_factor", name)},
        options_of(c, name));
  }});
}

}  // namespace osprey::keras::layers
