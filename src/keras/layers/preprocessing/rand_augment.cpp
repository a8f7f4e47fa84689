// keras.layers.RandAugment and AugMix: Keras 3.15's eleven operations made from one factor range; RandAugment applies
// num_ops of them drawn per batch in turn, AugMix mixes chains of them with the original (both in training only, the
// identity in inference), computed channels_last. Configs as Keras writes them; the weights file keeps a group per
// operation, as Keras's does.
#include <fmt/format.h>

#include <algorithm>

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

std::pair<double, double> factor_of(const ImageFactor& f, const std::string& layer) {
  try {
    return f.single ? keras_factor(f.a, 0.0, 1.0) : keras_factor(std::pair<double, double>{f.a, f.b}, 0.0, 1.0);
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("{}: {}", layer, e.what()));
  }
}

void check_chain_arguments(const std::string& layer, const std::string& interpolation, const std::string& data_format) {
  if (interpolation != "bilinear" && interpolation != "nearest") {
    throw ValueError(fmt::format("{}: `interpolation` must be \"bilinear\" or \"nearest\"; received \"{}\"", layer,
                                 interpolation));
  }
  detail::check_data_format(data_format, layer);
}

using Operations = std::vector<std::pair<std::string, std::shared_ptr<Layer>>>;

// Keras's operations by attribute name, with their arguments: the factor pair for each, RandomPosterization's
// max(1, int(8 · upper)) bits. They compute channels_last (the layers transpose channels_first batches around them).
Operations keras_operations(const std::vector<std::string>& names, std::pair<double, double> factor,
                            std::pair<double, double> value_range, const std::string& interpolation,
                            std::optional<int64_t> seed) {
  const FactorRange range(factor.first, factor.second);
  const ImageFactor pair(factor.first, factor.second);
  AugmentOptions spatial;
  spatial.interpolation = interpolation;
  ColorOptions color;
  color.value_range = value_range;
  color.seed = seed;
  const auto posterize = std::max(1, static_cast<int>(8.0 * factor.second));
  Operations ops;
  for (const auto& name : names) {
    std::shared_ptr<Layer> op;
    if (name == "random_shear") op = std::make_shared<RandomShear>(range, range, spatial);
    if (name == "random_translation") op = std::make_shared<RandomTranslation>(range, range, spatial);
    if (name == "random_rotation") op = std::make_shared<RandomRotation>(range, spatial);
    if (name == "random_brightness") op = std::make_shared<RandomBrightness>(factor, value_range);
    if (name == "random_color_degeneration") op = std::make_shared<RandomColorDegeneration>(pair, color);
    if (name == "random_contrast") op = std::make_shared<RandomContrast>(factor, value_range);
    if (name == "random_sharpness") op = std::make_shared<RandomSharpness>(pair, color);
    if (name == "random_posterization") {
      op = std::make_shared<RandomPosterization>(ImageFactor(static_cast<double>(posterize)), color);
    }
    if (name == "solarization") op = std::make_shared<Solarization>(pair, pair, color);
    if (name == "auto_contrast") op = std::make_shared<AutoContrast>(color);
    if (name == "equalization") op = std::make_shared<Equalization>(color);
    if (!op) throw InternalError("keras_operations: no operation " + name);
    ops.emplace_back(name, std::move(op));
  }
  return ops;
}

void build_operations(Operations& ops, const Shape& input_shape, const std::string& data_format) {
  const Shape last = data_format == "channels_first" ? Shape({input_shape[1], input_shape[2], input_shape[0]})
                                                     : input_shape;
  for (auto& [key, op] : ops) (void)op->build(last);
}

std::vector<std::pair<std::string, Layer*>> pointers(const Operations& ops) {
  std::vector<std::pair<std::string, Layer*>> out;
  for (const auto& [key, op] : ops) out.emplace_back(key, op.get());
  return out;
}

}  // namespace

RandAugment::RandAugment(RandAugmentOptions options)
    : Layer(options.name, "rand_augment", options.dtype), options_(std::move(options)),
      factor_(factor_of(options_.factor, name_)) {
  if (options_.num_ops < 0 || options_.num_ops > 64) {
    throw ValueError(fmt::format("{}: `num_ops` must be between 0 and 64; received {}", name_, options_.num_ops));
  }
  check_chain_arguments(name_, options_.interpolation, options_.data_format);
  if (options_.seed) generator_.emplace(static_cast<uint64_t>(*options_.seed), uint64_t{0x72616e64});
  make_operations();
}

void RandAugment::make_operations() {
  operations_ = keras_operations({"random_shear", "random_translation", "random_rotation", "random_brightness",
                                  "random_color_degeneration", "random_contrast", "random_sharpness",
                                  "random_posterization", "solarization", "auto_contrast", "equalization"},
                                 factor_, options_.value_range, options_.interpolation, options_.seed);
}

Shape RandAugment::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  build_operations(operations_, input_shape, options_.data_format);
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

std::vector<std::pair<std::string, Layer*>> RandAugment::sublayers() { return pointers(operations_); }

// ---- AugMix ----

AugMix::AugMix(AugMixOptions options)
    : Layer(options.name, "aug_mix", options.dtype), options_(std::move(options)),
      factor_(factor_of(options_.factor, name_)) {
  if (options_.num_chains < 1 || options_.num_chains > 64 || options_.chain_depth < 0 || options_.chain_depth > 64) {
    throw ValueError(fmt::format("{}: `num_chains` must be between 1 and 64 and `chain_depth` between 0 and 64; "
                                 "received {} and {}",
                                 name_, options_.num_chains, options_.chain_depth));
  }
  if (!(options_.alpha > 0.0) || !std::isfinite(options_.alpha)) {
    throw ValueError(fmt::format("{}: `alpha` must be a positive number; received {}", name_, options_.alpha));
  }
  check_chain_arguments(name_, options_.interpolation, options_.data_format);
  if (options_.seed) generator_.emplace(static_cast<uint64_t>(*options_.seed), uint64_t{0x6175676d});
  std::vector<std::string> names{"random_shear", "random_translation", "random_rotation", "random_posterization",
                                 "solarization", "auto_contrast", "equalization"};
  if (options_.all_ops) {
    for (const char* more : {"random_brightness", "random_color_degeneration", "random_contrast", "random_sharpness"}) {
      names.emplace_back(more);
    }
  }
  operations_ = keras_operations(names, factor_, options_.value_range, options_.interpolation, options_.seed);
}

Shape AugMix::build(const Shape& input_shape) {
  check_images(name_, input_shape);
  build_operations(operations_, input_shape, options_.data_format);
  return finish_build(input_shape);
}

std::vector<std::pair<std::string, Layer*>> AugMix::sublayers() { return pointers(operations_); }

AugMix::Draw AugMix::draw() {
  auto next = [this] { return static_cast<double>(generator_ ? generator_->next_float() : host_uniform(1)[0]); };
  Draw d;
  double total = 0.0;
  for (int c = 0; c < options_.num_chains; ++c) {
    d.chain_weights.push_back(random::host::gamma_draw(options_.alpha, next));
    total += d.chain_weights.back();
  }
  for (double& w : d.chain_weights) w = total > 0.0 ? w / total : 1.0 / options_.num_chains;
  d.original_weight = random::host::beta_draw(options_.alpha, next);
  const int choices = static_cast<int>(operations_.size()) + 1;  // the operations, and none
  for (int c = 0; c < options_.num_chains; ++c) {
    std::vector<int> chain;
    for (int k = 0; k < options_.chain_depth; ++k) {
      const int pick = std::min(choices - 1, static_cast<int>(next() * choices));
      if (pick < choices - 1) chain.push_back(pick);
    }
    d.chains.push_back(std::move(chain));
  }
  return d;
}

Tensor AugMix::call(const Tensor& inputs, bool training) {
  check_batch(name_, inputs);
  const Tensor x = as_float(inputs);
  if (!training) return x;
  const bool first = options_.data_format == "channels_first";
  const Tensor images = to_last(x, first);
  const Draw d = draw();
  Tensor mixed;
  for (std::size_t c = 0; c < d.chains.size(); ++c) {
    Tensor y = images;
    for (int k : d.chains[c]) y = (*operations_[static_cast<std::size_t>(k)].second)(y, true);
    const Tensor weighted = kops::multiply(y, d.chain_weights[c]);
    mixed = c == 0 ? weighted : kops::add(mixed, weighted);
  }
  const Tensor out = kops::add(kops::multiply(images, d.original_weight),
                               kops::multiply(mixed, 1.0 - d.original_weight));
  return from_last(kops::clip(out, options_.value_range.first, options_.value_range.second), first);
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

std::string AugMix::get_config() const {
  json c = ser::base_config(*this);
  c["data_format"] = options_.data_format;
  c["value_range"] = json::array({options_.value_range.first, options_.value_range.second});
  c["num_chains"] = options_.num_chains;
  c["chain_depth"] = options_.chain_depth;
  c["factor"] = json::array({factor_.first, factor_.second});
  c["alpha"] = options_.alpha;
  c["all_ops"] = options_.all_ops;
  c["interpolation"] = options_.interpolation;
  c["seed"] = options_.seed ? json(*options_.seed) : json(nullptr);
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(rand_augment) {
  ser::register_layer_class("RandAugment", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const ColorOptions common = color::options_of(c, "RandAugment");
    RandAugmentOptions o{.value_range = common.value_range,
                         .factor = color::factor_of(c, "factor", "RandAugment", 0.5),
                         .interpolation = ser::value_or<std::string>(c, "interpolation", "bilinear"),
                         .seed = common.seed,
                         .data_format = common.data_format,
                         .name = common.name};
    if (c.contains("num_ops")) o.num_ops = static_cast<int>(ser::integer(c, "num_ops", 0, 64, "RandAugment"));
    return std::make_shared<RandAugment>(std::move(o));
  }});
  ser::register_layer_class("AugMix", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const ColorOptions common = color::options_of(c, "AugMix");
    AugMixOptions o{.value_range = common.value_range,
                    .factor = color::factor_of(c, "factor", "AugMix", 0.3),
                    .all_ops = ser::value_or(c, "all_ops", true),
                    .interpolation = ser::value_or<std::string>(c, "interpolation", "bilinear"),
                    .seed = common.seed,
                    .data_format = common.data_format,
                    .name = common.name};
    if (c.contains("num_chains")) o.num_chains = static_cast<int>(ser::integer(c, "num_chains", 1, 64, "AugMix"));
    if (c.contains("chain_depth")) o.chain_depth = static_cast<int>(ser::integer(c, "chain_depth", 0, 64, "AugMix"));
    if (c.contains("alpha")) o.alpha = ser::number(c, "alpha", 1e-12, 1e12, "AugMix");
    return std::make_shared<AugMix>(std::move(o));
  }});
}

}  // namespace osprey::keras::layers
