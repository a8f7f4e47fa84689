// MixUp and CutMix (keras.layers, Keras 3.15): the batch permuted by a Fisher-Yates shuffle of the layer's uniform
// draws, Beta(alpha, alpha) weights as G1 / (G1 + G2) of two Gamma(alpha) draws (Marsaglia and Tsang's method, with
// the U^(1/alpha) boost below 1), all from the layer's generator (seeded) or Osprey's global one. Configs as Keras
// writes them.
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "keras/layers/preprocessing/color_common.h"
#include "keras/layers/preprocessing/crop.h"
#include "tensor/host_draws.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/mix.h"
#include "osprey/keras/ops.h"

namespace osprey::keras::layers {

namespace kops = osprey::keras::ops;
using random::host::beta_draw;
using random::host::permutation;

namespace {

// The images of `x` (batch first) in the order of part `part` of the transformation.
Tensor permuted(const Tensor& x, const std::vector<float>& t, std::size_t per_image, std::size_t part,
                const std::string& layer) {
  const int64_t batch = x.shape()[0];
  const Tensor order = color::column(t, batch, per_image, part, layer);
  std::vector<int32_t> idx;
  for (float v : order.to_vector<float>()) {
    const auto i = static_cast<int32_t>(v);
    if (i < 0 || i >= batch) {
      throw ValueError(fmt::format("{}: the transformation's permutation names image {} of a batch of {}", layer, i,
                                   batch));
    }
    idx.push_back(i);
  }
  return kops::take(x, Tensor::from_vector(idx, Shape({batch})), 0);
}

}  // namespace

// ---- MixUp ----

MixUp::MixUp(double alpha, ColorOptions options) : ColorAugmentation("mix_up", std::move(options), false), alpha_(alpha) {
  if (!(alpha > 0.0) || !std::isfinite(alpha)) {
    throw ValueError(fmt::format("{}: `alpha` must be a positive number (Beta(alpha, alpha)); received {}", name_,
                                 alpha));
  }
}

std::vector<float> MixUp::get_random_transformation(int64_t batch) {
  auto next = [this] { return static_cast<double>(uniform(1)[0]); };
  std::vector<float> t = permutation(batch, next);
  std::vector<float> w(static_cast<std::size_t>(batch));
  for (float& v : w) v = static_cast<float>(beta_draw(alpha_, next));
  w.insert(w.end(), t.begin(), t.end());
  return w;
}

Tensor MixUp::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = as_float(images);
  const Tensor w = color::column(t, x.shape()[0], 2, 0, name_);
  return kops::add(kops::multiply(w, x), kops::multiply(kops::subtract(1.0, w), permuted(x, t, 2, 1, name_)));
}

std::string MixUp::get_config() const { return color::config_text(*this, false, true, {{"alpha", alpha_}}); }

// ---- CutMix ----

CutMix::CutMix(ImageFactor factor, ColorOptions options)
    : FactorColorAugmentation("cut_mix", factor, 0.0, 1.0, std::move(options), false) {}

std::vector<float> CutMix::get_random_transformation(int64_t batch) {
  // The images' size is not known here: the boxes are drawn as fractions and scaled in transform_images.
  auto next = [this] { return static_cast<double>(uniform(1)[0]); };
  const double alpha = factor_.first + (factor_.second - factor_.first) * next() + 1e-6;
  std::vector<float> t = permutation(batch, next);
  std::vector<double> ratio(static_cast<std::size_t>(batch));
  for (double& r : ratio) r = std::sqrt(1.0 - beta_draw(alpha, next));
  // Per image: the box's side as a fraction, then its start's uniform draw, for x and then for y (Keras's order).
  for (int axis = 0; axis < 2; ++axis) {
    std::vector<float> side(static_cast<std::size_t>(batch)), start(static_cast<std::size_t>(batch));
    for (std::size_t i = 0; i < side.size(); ++i) side[i] = static_cast<float>(ratio[i]);
    for (float& s : start) s = static_cast<float>(next());
    t.insert(t.end(), side.begin(), side.end());
    t.insert(t.end(), start.begin(), start.end());
  }
  return t;
}

Tensor CutMix::transform_images(const Tensor& images, const std::vector<float>& t) const {
  const Tensor x = to_last(images);
  const int64_t batch = x.shape()[0], h = x.shape()[1], w = x.shape()[2];
  const auto part = [&](std::size_t k) { return color::column(t, batch, 5, k, name_).to_vector<float>(); };
  const auto side_x = part(1), start_x = part(2), side_y = part(3), start_y = part(4);
  // Keras's box in float32: length = ratio · size, start = u · (size - length), end = start + length; a pixel
  // (i, j) is inside when j >= x0, j < x1, i >= y0, i < y1.
  std::vector<uint8_t> inside(static_cast<std::size_t>(batch * h * w));
  for (int64_t b = 0; b < batch; ++b) {
    const auto bi = static_cast<std::size_t>(b);
    const float lx = side_x[bi] * static_cast<float>(w), ly = side_y[bi] * static_cast<float>(h);
    const float x0 = start_x[bi] * (static_cast<float>(w) - lx), y0 = start_y[bi] * (static_cast<float>(h) - ly);
    const float x1 = x0 + lx, y1 = y0 + ly;
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        const auto fi = static_cast<float>(i), fj = static_cast<float>(j);
        inside[static_cast<std::size_t>((b * h + i) * w + j)] = fj >= x0 && fj < x1 && fi >= y0 && fi < y1;
      }
    }
  }
  const Tensor mask = Tensor::from_vector(std::vector<float>(inside.begin(), inside.end()), Shape({batch, h, w, 1}));
  return from_last(kops::where(kops::greater(mask, 0.5), permuted(x, t, 5, 0, name_), x));
}

std::string CutMix::get_config() const {
  return color::config_text(*this, false, true, {{"factor", {factor_.first, factor_.second}}});
}

// ---- Keras configs ----

namespace ser = serialization;
using ser::json;

namespace {

ColorOptions mix_options(const json& c, const char* layer) {
  ser::refuse_set(c, {"value_range"}, layer, "data_format, seed and the layer's factor");
  return color::options_of(c, layer);
}

}  // namespace

OSPREY_REGISTER_LAYERS(mix) {
  ser::register_layer_class("MixUp", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const double alpha = c.contains("alpha") ? ser::number(c, "alpha", 1e-12, 1e12, "MixUp") : 0.2;
    return std::make_shared<MixUp>(alpha, mix_options(c, "MixUp"));
  }});
  ser::register_layer_class("CutMix", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<CutMix>(color::factor_of(c, "factor", "CutMix", 1.0), mix_options(c, "CutMix"));
  }});
}

}  // namespace osprey::keras::layers
