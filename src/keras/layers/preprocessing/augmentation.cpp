// keras.layers.RandomRotation, RandomTranslation, RandomZoom and RandomFlip: per-sample transforms built as
// Keras 3 builds them (its _compute_affine_matrix, _get_translation_matrix, _get_zoom_matrix, in float32), applied
// by osprey::ops::affine_transform; the identity outside training.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "keras/ops/homography.h"
#include "keras/saving/serialization.h"
#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/preprocessing.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::keras::layers {

namespace imaging = osprey::keras::imaging;

namespace {

const char* class_of(RandomAffine::Kind k) {
  switch (k) {
    case RandomAffine::Kind::rotation: return "RandomRotation";
    case RandomAffine::Kind::translation: return "RandomTranslation";
    case RandomAffine::Kind::zoom: return "RandomZoom";
    case RandomAffine::Kind::flip: return "RandomFlip";
    case RandomAffine::Kind::shear: return "RandomShear";
    case RandomAffine::Kind::perspective: return "RandomPerspective";
  }
  return "RandomAffine";
}
const char* prefix_of(RandomAffine::Kind k) {
  switch (k) {
    case RandomAffine::Kind::rotation: return "random_rotation";
    case RandomAffine::Kind::translation: return "random_translation";
    case RandomAffine::Kind::zoom: return "random_zoom";
    case RandomAffine::Kind::flip: return "random_flip";
    case RandomAffine::Kind::shear: return "random_shear";
    case RandomAffine::Kind::perspective: return "random_perspective";
  }
  return "random_affine";
}

osprey::ops::FillMode fill_mode_of(const std::string& m, const std::string& layer) {
  if (m == "reflect") return osprey::ops::FillMode::reflect;
  if (m == "wrap") return osprey::ops::FillMode::wrap;
  if (m == "constant") return osprey::ops::FillMode::constant;
  if (m == "nearest") return osprey::ops::FillMode::nearest;
  throw ValueError(fmt::format("{}: unknown `fill_mode` {}. Expected one of ('reflect', 'wrap', 'constant', "
                               "'nearest')",
                               layer, m));
}

void check_range(const FactorRange& r, double lo, double hi, const std::string& layer, const char* what) {
  if (!(r.lower <= r.upper) || r.lower < lo || r.upper > hi) {
    throw ValueError(fmt::format("{}: `{}` must be a range (lower <= upper) within [{}, {}]; received ({}, {})", layer,
                                 what, lo, hi, r.lower, r.upper));
  }
}

// n draws in [lower, upper] as Keras makes them in float32 (minval + (maxval - minval) · u).
std::vector<float> draws(int64_t n, const FactorRange& r, double scale) {
  const auto u = random::uniform({n}).to_vector<float>();
  std::vector<float> out;
  const auto lo = static_cast<float>(r.lower * scale), hi = static_cast<float>(r.upper * scale);
  for (float v : u) out.push_back(lo + (hi - lo) * v);
  return out;
}

}  // namespace

RandomAffine::RandomAffine(Kind kind, FactorRange a, std::optional<FactorRange> b, std::string flip_mode,
                           AugmentOptions options)
    : Layer(options.name, prefix_of(kind), options.dtype), kind_(kind), a_(a), b_(b), flip_mode_(std::move(flip_mode)),
      options_(std::move(options)) {
  const std::string cls = class_of(kind);
  (void)fill_mode_of(options_.fill_mode, cls);
  if (options_.interpolation != "bilinear" && options_.interpolation != "nearest") {
    throw ValueError(fmt::format("{}: interpolation must be \"bilinear\" or \"nearest\"; received {}", cls,
                                 options_.interpolation));
  }
  detail::check_data_format(options_.data_format, cls);
  if (kind == Kind::rotation) check_range(a_, -1e6, 1e6, cls, "factor");
  if (kind == Kind::translation) {
    check_range(a_, -1.0, 1.0, cls, "height_factor");
    check_range(*b_, -1.0, 1.0, cls, "width_factor");
  }
  if (kind == Kind::zoom) {
    check_range(a_, -1.0, 1e6, cls, "height_factor");
    if (b_) check_range(*b_, -1.0, 1e6, cls, "width_factor");
  }
  if (kind == Kind::shear) {  // Keras: each number of a pair in [0, 1]; one number f means (-f, f)
    for (const auto& [r, what] : {std::pair{a_, "x_factor"}, std::pair{*b_, "y_factor"}}) {
      if (!(r.lower == -r.upper && r.upper >= 0.0 && r.upper <= 1.0)) check_range(r, 0.0, 1.0, cls, what);
    }
  }
  if (kind == Kind::perspective) {  // Keras: a pair may not lie wholly above 1 or below 0; scale within [0, 1]
    if (!(a_.lower <= a_.upper) || a_.lower > 1.0 || a_.upper < 0.0) check_range(a_, 0.0, 1.0, cls, "factor");
    if (!(b_->lower >= 0.0 && b_->lower <= 1.0)) {
      throw ValueError(fmt::format("The `scale` argument should be a number in the range [0,1]. Received: scale={}",
                                   b_->lower));
    }
  }
  if (kind == Kind::flip && flip_mode_ != "horizontal" && flip_mode_ != "vertical" &&
      flip_mode_ != "horizontal_and_vertical") {
    throw ValueError(fmt::format("RandomFlip layer {} received an unknown mode argument {}", name_, flip_mode_));
  }
}

std::string RandomAffine::class_name() const { return class_of(kind_); }

Shape RandomAffine::build(const Shape& input_shape) {
  if (input_shape.rank() != 3) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected images of ndim=4 "
                                 "(batch, height, width, channels), found ndim={}. Full shape received: {}",
                                 name_, input_shape.rank() + 1, detail::with_batch(input_shape)));
  }
  return finish_build(input_shape);
}

Tensor RandomAffine::call(const Tensor& inputs, bool training) {
  const auto d = inputs.shape().dims();
  if (d.size() != 4) build(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  if (!training) return inputs;
  const bool first = options_.data_format == "channels_first";
  const Tensor x = first ? osprey::ops::transpose(inputs, {0, 2, 3, 1}) : inputs;
  const int64_t n = x.shape()[0];
  const float h = static_cast<float>(x.shape()[1]), w = static_cast<float>(x.shape()[2]);
  std::vector<float> t(static_cast<std::size_t>(n * 8), 0.f);
  {
    DeviceScope cpu("/CPU:0");  // the draws on the host: they build the transforms there
    switch (kind_) {
      case Kind::rotation: {
        const auto degrees = draws(n, a_, 360.0);
        const float cx = 0.5f * (w - 1.f), cy = 0.5f * (h - 1.f), to_radians = static_cast<float>(M_PI / 180.0);
        for (int64_t i = 0; i < n; ++i) {
          const float angle = degrees[static_cast<std::size_t>(i)] * to_radians;
          const float c = std::cos(angle), s = std::sin(angle);
          float* m = &t[static_cast<std::size_t>(i * 8)];
          m[0] = c, m[1] = -s, m[2] = cx - cx * m[0] - cy * m[1];
          m[3] = s, m[4] = c, m[5] = cy - cx * m[3] - cy * m[4];
        }
        break;
      }
      case Kind::translation: {
        const auto dy = draws(n, a_, 1.0), dx = draws(n, *b_, 1.0);
        for (int64_t i = 0; i < n; ++i) {
          float* m = &t[static_cast<std::size_t>(i * 8)];
          m[0] = 1.f, m[2] = -(dx[static_cast<std::size_t>(i)] * w);
          m[4] = 1.f, m[5] = -(dy[static_cast<std::size_t>(i)] * h);
        }
        break;
      }
      case Kind::zoom: {
        const auto hz = draws(n, a_, 1.0);
        const auto wz = b_ ? draws(n, *b_, 1.0) : hz;
        for (int64_t i = 0; i < n; ++i) {
          const float zx = 1.f + wz[static_cast<std::size_t>(i)], zy = 1.f + hz[static_cast<std::size_t>(i)];
          float* m = &t[static_cast<std::size_t>(i * 8)];
          m[0] = zx, m[2] = (w - 1.f) / 2.f * (1.f - zx);
          m[4] = zy, m[5] = (h - 1.f) / 2.f * (1.f - zy);
        }
        break;
      }
      case Kind::shear: {  // one sign per sample for both factors (Keras draws it first)
        const auto signs = random::uniform({n}).to_vector<float>();
        const auto sy = draws(n, *b_, 1.0), sx = draws(n, a_, 1.0);
        for (int64_t i = 0; i < n; ++i) {
          const float sign = signs[static_cast<std::size_t>(i)] > 0.5f ? -1.f : 1.f;
          float* m = &t[static_cast<std::size_t>(i * 8)];
          m[0] = 1.f, m[1] = sx[static_cast<std::size_t>(i)] * sign;
          m[3] = sy[static_cast<std::size_t>(i)] * sign, m[4] = 1.f;
        }
        break;
      }
      case Kind::perspective: {  // Keras: start points the corners, end points start · (1 + f)
        const auto p = draws(n, a_, 1.0), u = random::uniform({n}).to_vector<float>();
        const double half = 0.5 * b_->lower;
        const auto f = draws(n * 8, FactorRange(-half, half), 1.0);
        const float start[8] = {0.f, 0.f, w - 1.f, 0.f, 0.f, h - 1.f, w - 1.f, h - 1.f};
        for (int64_t i = 0; i < n; ++i) {
          float* m = &t[static_cast<std::size_t>(i * 8)];
          m[0] = m[4] = 1.f;  // the identity unless drawn and solvable
          if (!(u[static_cast<std::size_t>(i)] < p[static_cast<std::size_t>(i)])) continue;
          float end[8];
          for (int k = 0; k < 8; ++k) end[k] = start[k] + start[k] * f[static_cast<std::size_t>(i * 8 + k)];
          std::array<float, 8> hm{};
          if (imaging::homography(start, end, hm)) std::copy(hm.begin(), hm.end(), m);
        }
        break;
      }
      case Kind::flip: {
        const auto coins = random::uniform({n, 2}).to_vector<float>();
        for (int64_t i = 0; i < n; ++i) {
          const bool horizontal = flip_mode_ != "vertical" && coins[static_cast<std::size_t>(2 * i)] > 0.5f;
          const bool vertical = flip_mode_ != "horizontal" && coins[static_cast<std::size_t>(2 * i + 1)] > 0.5f;
          float* m = &t[static_cast<std::size_t>(i * 8)];
          m[0] = horizontal ? -1.f : 1.f, m[2] = horizontal ? w - 1.f : 0.f;
          m[4] = vertical ? -1.f : 1.f, m[5] = vertical ? h - 1.f : 0.f;
        }
        break;
      }
    }
  }
  const Tensor transforms = Tensor::from_vector(t, Shape({n, 8}));
  const Tensor y = osprey::ops::affine_transform(
      x.dtype() == DType::float32 ? x : x.cast(DType::float32), transforms,
      options_.interpolation == "nearest" ? osprey::ops::ResizeMethod::nearest : osprey::ops::ResizeMethod::bilinear,
      fill_mode_of(options_.fill_mode, class_name()), options_.fill_value);
  return first ? osprey::ops::transpose(y, {0, 3, 1, 2}) : y;
}

// ---- Keras configs ----

namespace ser = serialization;
using ser::json;

namespace {
json range(const FactorRange& r) { return json::array({r.lower, r.upper}); }
}  // namespace

std::string RandomAffine::get_config() const {
  const json common_fill{{"fill_mode", options_.fill_mode}, {"fill_value", options_.fill_value},
                         {"interpolation", options_.interpolation}};
  json c = ser::base_config(*this);
  switch (kind_) {
    case Kind::rotation: c["factor"] = range(a_); break;
    case Kind::translation:
      c["height_factor"] = range(a_);
      c["width_factor"] = range(*b_);
      break;
    case Kind::zoom:
      c["height_factor"] = range(a_);
      c["width_factor"] = b_ ? range(*b_) : json(nullptr);
      break;
    case Kind::flip: c["mode"] = flip_mode_; break;
    case Kind::shear:
      c["x_factor"] = range(a_);
      c["y_factor"] = range(*b_);
      break;
    case Kind::perspective:
      c["factor"] = range(a_);
      c["scale"] = b_->lower;
      c["interpolation"] = options_.interpolation;
      c["fill_value"] = options_.fill_value;
      break;
  }
  if (kind_ != Kind::flip && kind_ != Kind::perspective) {
    for (const auto& [k, v] : common_fill.items()) c[k] = v;
  }
  c["seed"] = nullptr;
  c["data_format"] = options_.data_format;
  return ser::dumps(c);
}

namespace {

std::optional<FactorRange> range_from(const json& c, const char* key, const std::string& what) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  const json& v = c[key];
  auto num = [&](const json& e) {
    if (!e.is_number() || !std::isfinite(e.get<double>())) {
      throw ValueError(fmt::format("{}: `{}` must hold finite numbers; got {}", what, key, v.dump()));
    }
    return e.get<double>();
  };
  if (v.is_number()) return FactorRange(num(v));
  if (v.is_array() && v.size() == 2) return FactorRange(num(v[0]), num(v[1]));
  throw ValueError(fmt::format("{}: `{}` must be a number or a pair; got {}", what, key, v.dump()));
}

AugmentOptions augment_options(const json& c) {
  return {ser::value_or<std::string>(c, "fill_mode", "reflect"), ser::value_or<std::string>(c, "interpolation", "bilinear"),
          c.contains("fill_value") && c["fill_value"].is_number() ? c["fill_value"].get<double>() : 0.0,
          ser::value_or<std::string>(c, "data_format", "channels_last"), ser::name_of(c)};
}

}  // namespace

OSPREY_REGISTER_LAYERS(augmentation) {
  ser::register_layer_class("RandomRotation", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const auto f = range_from(c, "factor", "RandomRotation");
    if (!f) throw ValueError("RandomRotation: the config has no `factor`");
    return std::make_shared<RandomRotation>(*f, augment_options(c));
  }});
  ser::register_layer_class("RandomTranslation", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const auto h = range_from(c, "height_factor", "RandomTranslation"), w = range_from(c, "width_factor", "RandomTranslation");
    if (!h || !w) throw ValueError("RandomTranslation: the config needs `height_factor` and `width_factor`");
    return std::make_shared<RandomTranslation>(*h, *w, augment_options(c));
  }});
  ser::register_layer_class("RandomZoom", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const auto h = range_from(c, "height_factor", "RandomZoom");
    if (!h) throw ValueError("RandomZoom: the config has no `height_factor`");
    return std::make_shared<RandomZoom>(*h, range_from(c, "width_factor", "RandomZoom"), augment_options(c));
  }});
  ser::register_layer_class("RandomShear", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const auto x = range_from(c, "x_factor", "RandomShear"), y = range_from(c, "y_factor", "RandomShear");
    return std::make_shared<RandomShear>(x.value_or(FactorRange(0.0)), y.value_or(FactorRange(0.0)), augment_options(c));
  }});
  ser::register_layer_class("RandomPerspective", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const auto f = range_from(c, "factor", "RandomPerspective");
    const double scale = c.contains("scale") ? ser::number(c, "scale", 0.0, 1.0, "RandomPerspective") : 1.0;
    return std::make_shared<RandomPerspective>(f.value_or(FactorRange(1.0)), scale, augment_options(c));
  }});
  ser::register_layer_class("RandomFlip", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<RandomFlip>(ser::value_or<std::string>(c, "mode", "horizontal_and_vertical"),
                                        ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
