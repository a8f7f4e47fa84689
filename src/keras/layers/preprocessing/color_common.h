// What the color augmentation layers' sources share: Keras's factor parsing, per-image columns of a
// transformation, Keras's value-range transform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/ops.h"
#include "keras/layers/preprocessing/crop.h"
#include "keras/saving/serialization.h"
#include "osprey/keras/layers/color.h"
#include "osprey/tensor.h"

namespace osprey::keras::layers::color {

/// `layer`'s Keras config: the base entries and data_format, value_range and seed when `with_range` / `with_seed`,
/// and `extra`'s entries.
std::string config_text(const ColorAugmentation& layer, bool with_range, bool with_seed,
                        const serialization::json& extra = serialization::json::object());
/// keras_factor (crop.h) of a factor given as one number or a pair.
std::pair<double, double> parse_factor(const ImageFactor& f, double lo, double hi);
/// Part `part` of a transformation of `per_image` numbers per image, as a (batch, 1, 1, 1) column; ValueError
/// naming `layer` when the transformation's size does not fit the batch.
Tensor column(const std::vector<float>& values, int64_t batch, std::size_t per_image, std::size_t part,
              const std::string& layer);
/// Keras's _transform_value_range: (x - from.low) / (from width) · (to width) + to.low, in float32; x itself when
/// the ranges are equal.
Tensor rescale(const Tensor& x, std::pair<double, double> from, std::pair<double, double> to);

/// A config's factor `key` as written (one number or a pair); `fallback` where the key is absent or null, else a
/// ValueError naming `layer`.
ImageFactor factor_of(const serialization::json& c, const char* key, const char* layer,
                      std::optional<double> fallback = {});
std::optional<ImageFactor> optional_factor(const serialization::json& c, const char* key, const char* layer);
/// value_range, data_format, seed and name from a config, as the color layers take them.
ColorOptions options_of(const serialization::json& c, const char* layer);

}  // namespace osprey::keras::layers::color
