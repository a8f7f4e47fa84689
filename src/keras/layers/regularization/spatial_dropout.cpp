// keras.layers.SpatialDropout1D/2D/3D: one keep/drop draw per sample and channel, applied to the whole feature map.
#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/regularization.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

SpatialDropout::SpatialDropout(int rank, double rate, std::string data_format, std::string name)
    : Dropout(rate, std::move(name), fmt::format("spatial_dropout{}d", rank)), rank_(rank),
      data_format_(std::move(data_format)) {
  detail::check_data_format(data_format_, class_name());
}

Shape SpatialDropout::build(const Shape& input_shape) {
  detail::check_rank(name_, rank_, input_shape);
  return finish_build(input_shape);
}

// The spatial axes moved to the front, the rest (batch, channels) flattened into one row of N·C per position:
// the mask of N·C draws is then that row, broadcast over the positions.
Tensor SpatialDropout::call(const Tensor& x, bool training) {
  if (x.shape().rank() != rank_ + 2) {
    const auto d = x.shape().dims();
    detail::check_rank(name_, rank_, Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  }
  if (!training || rate() == 0.0) return x;
  const bool first = data_format_ == "channels_first";
  std::vector<int> perm;
  for (int i = 0; i < rank_; ++i) perm.push_back(first ? i + 2 : i + 1);
  perm.push_back(0);
  perm.push_back(first ? 1 : rank_ + 1);
  std::vector<int> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<int>(i);
  const Tensor moved = osprey::ops::transpose(x, perm);
  const int64_t nc = x.shape()[0] * x.shape()[first ? 1 : rank_ + 1];
  const int64_t positions = nc ? x.num_elements() / nc : 0;
  const Tensor keep = osprey::ops::mul(keep_mask(Shape({nc}), x.device_ref()), Tensor::scalar(1.0 / (1.0 - rate())));
  const Tensor kept = osprey::ops::mul(osprey::ops::reshape(moved, Shape({positions, nc})), keep);
  return osprey::ops::transpose(osprey::ops::reshape(kept, moved.shape()), inverse);
}

namespace ser = serialization;
using ser::json;

std::string SpatialDropout::get_config() const {
  return ser::config_text(*this, {{"rate", rate()}, {"seed", nullptr}, {"data_format", data_format_}});
}

OSPREY_REGISTER_LAYERS(spatial_dropout) {
  for (int rank = 1; rank <= 3; ++rank) {
    ser::register_layer_class(fmt::format("SpatialDropout{}D", rank), {false, [rank](const json& c) -> std::shared_ptr<Layer> {
      return std::make_shared<SpatialDropout>(
          rank, ser::number(c, "rate", 0.0, 0.999999, fmt::format("SpatialDropout{}D", rank)),
          ser::value_or<std::string>(c, "data_format", "channels_last"), ser::name_of(c));
    }});
  }
}

}  // namespace osprey::keras::layers
