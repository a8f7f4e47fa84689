// The spatial reshaping layers: keras.layers.ZeroPadding1D/2D/3D (concatenated zeros), Cropping1D/2D/3D (slices)
// and UpSampling1D/2D/3D (nearest: each element repeated; UpSampling2D's other interpolations: keras::ops::resize), built from
// differentiable ops.
#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/image_ops.h"
#include "osprey/keras/layers/reshaping.h"
#include "osprey/ops.h"
#include "keras/layers/preprocessing/crop.h"

namespace osprey::keras::layers {

namespace ops = osprey::ops;  // keras::ops is named in full (image_ops.h declares it)

namespace {

using detail::check_rank;
using detail::with_batch;

// The per-sample axis (batch excluded) of spatial axis i.
int sample_axis(int i, const std::string& data_format) { return data_format == "channels_first" ? i + 1 : i; }

AxisPairs pairs_of(const Ints& amounts, int rank, const std::string& layer) {
  const auto& v = amounts.values;
  AxisPairs out;
  if (v.size() == 1) out.assign(static_cast<std::size_t>(rank), {v[0], v[0]});
  else if (rank == 1 && v.size() == 2) out = {{v[0], v[1]}};
  else if (static_cast<int>(v.size()) == rank) {
    for (int64_t e : v) out.emplace_back(e, e);
  } else {
    throw ValueError(fmt::format("{}: expected one integer, {} integers (one per axis) or {} pairs; received ({})",
                                 layer, rank, rank, fmt::join(v, ", ")));
  }
  return out;
}

}  // namespace

SpatialPadding::SpatialPadding(Kind kind, int rank, const Ints& amounts, std::string data_format, std::string name)
    : SpatialPadding(kind, rank,
                     pairs_of(amounts, rank, fmt::format("{}{}D", kind == Kind::cropping ? "Cropping" : "ZeroPadding",
                                                         rank)),
                     std::move(data_format), std::move(name)) {}

SpatialPadding::SpatialPadding(Kind kind, int rank, AxisPairs amounts, std::string data_format, std::string name)
    : Layer(name, fmt::format("{}{}d", kind == Kind::cropping ? "cropping" : "zero_padding", rank)), kind_(kind),
      rank_(rank), amounts_(std::move(amounts)), data_format_(std::move(data_format)) {
  check();
}

void SpatialPadding::check() const {
  detail::check_data_format(data_format_, class_name());
  if (static_cast<int>(amounts_.size()) != rank_) {
    throw ValueError(fmt::format("{}: expected {} (before, after) pairs, received {}", class_name(), rank_,
                                 amounts_.size()));
  }
  for (const auto& [b, a] : amounts_) {
    if (b < 0 || a < 0 || b > (int64_t{1} << 30) || a > (int64_t{1} << 30)) {
      throw ValueError(fmt::format("{}: amounts must be in [0, 2^30]; received ({}, {})", class_name(), b, a));
    }
  }
}

std::string SpatialPadding::class_name() const {
  return fmt::format("{}{}D", kind_ == Kind::cropping ? "Cropping" : "ZeroPadding", rank_);
}

Shape SpatialPadding::build(const Shape& input_shape) {
  check_rank(name_, rank_, input_shape);
  Shape out = input_shape;
  for (int i = 0; i < rank_; ++i) {
    const int ax = sample_axis(i, data_format_);
    const auto [b, a] = amounts_[static_cast<std::size_t>(i)];
    const int64_t extent = kind_ == Kind::cropping ? input_shape[ax] - b - a : input_shape[ax] + b + a;
    if (extent < 1) {
      throw ValueError(fmt::format("`cropping` parameter of `{}` layer must be smaller than the input shape. Received: "
                                   "inputs.shape={}, and cropping=({}, {}) on spatial axis {}",
                                   class_name(), with_batch(input_shape), b, a, i + 1));
    }
    out = out.with_dim(ax, extent);
  }
  return finish_build(out);
}

Tensor SpatialPadding::call(const Tensor& inputs, bool) {
  const auto d = inputs.shape().dims();
  Shape sample(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end()));
  if (!built_ || sample.rank() != rank_ + 1 || output_shape_.rank() != sample.rank()) build(sample);
  Tensor y = inputs;
  for (int i = 0; i < rank_; ++i) {
    const int ax = sample_axis(i, data_format_) + 1;
    const auto [b, a] = amounts_[static_cast<std::size_t>(i)];
    if (kind_ == Kind::cropping) {
      y = osprey::ops::slice_axis(y, ax, b, y.shape()[ax] - b - a);
      continue;
    }
    std::vector<Tensor> parts;
    if (b) parts.push_back(Tensor::zeros(y.shape().with_dim(ax, b), y.dtype()));
    parts.push_back(y);
    if (a) parts.push_back(Tensor::zeros(y.shape().with_dim(ax, a), y.dtype()));
    if (parts.size() > 1) y = osprey::ops::concat(parts, ax);
  }
  return y;
}

UpSampling::UpSampling(int rank, const Ints& size, std::string data_format, std::string interpolation,
                       std::string name)
    : Layer(name, fmt::format("up_sampling{}d", rank)), rank_(rank), data_format_(std::move(data_format)),
      interpolation_(std::move(interpolation)) {
  size_ = detail::per_axis(size, rank, 1, fmt_class(), "size");
  detail::check_data_format(data_format_, fmt_class());
  if (rank == 2) {
    keras_resize_method(interpolation_, "UpSampling2D");
  } else if (interpolation_ != "nearest") {
    throw ValueError(fmt::format("{}: `interpolation` must be \"nearest\"; received {}", fmt_class(), interpolation_));
  }
}

Shape UpSampling::build(const Shape& input_shape) {
  check_rank(name_, rank_, input_shape);
  Shape out = input_shape;
  for (int i = 0; i < rank_; ++i) {
    const int ax = sample_axis(i, data_format_);
    out = out.with_dim(ax, input_shape[ax] * size_[static_cast<std::size_t>(i)]);
  }
  return finish_build(out);
}

// Each element repeated along axis `ax`: a unit axis after it, `n` copies concatenated there, the two merged.
Tensor UpSampling::call(const Tensor& inputs, bool) {
  const auto d0 = inputs.shape().dims();
  if (static_cast<int>(d0.size()) != rank_ + 2) {
    check_rank(name_, rank_, Shape(std::vector<int64_t>(d0.begin() + (d0.empty() ? 0 : 1), d0.end())));
  }
  if (interpolation_ != "nearest") {  // Keras: ops.image.resize to (h · size[0], w · size[1])
    const int h_axis = sample_axis(0, data_format_) + 1, w_axis = sample_axis(1, data_format_) + 1;
    return keras::ops::resize(inputs, {inputs.shape()[h_axis] * size_[0], inputs.shape()[w_axis] * size_[1]},
                              {.interpolation = interpolation_, .data_format = data_format_});
  }
  Tensor y = inputs;
  for (int i = 0; i < rank_; ++i) {
    const int64_t n = size_[static_cast<std::size_t>(i)];
    if (n == 1) continue;
    const int ax = sample_axis(i, data_format_) + 1;
    std::vector<int64_t> d(y.shape().dims().begin(), y.shape().dims().end());
    std::vector<int64_t> with_unit(d);
    with_unit.insert(with_unit.begin() + ax + 1, 1);
    const Tensor unit = osprey::ops::reshape(y, Shape(with_unit));
    const Tensor copies = osprey::ops::concat(std::vector<Tensor>(static_cast<std::size_t>(n), unit), ax + 1);
    d[static_cast<std::size_t>(ax)] *= n;
    y = osprey::ops::reshape(copies, Shape(d));
  }
  return y;
}

// ---- Keras configs (layer.get_config()) and from_config ----

namespace ser = serialization;
using ser::json;

std::string SpatialPadding::get_config() const {
  json amounts = json::array();
  for (const auto& [b, a] : amounts_) amounts.push_back(json::array({b, a}));
  const char* key = kind_ == Kind::cropping ? "cropping" : "padding";
  if (rank_ == 1) amounts = amounts[0];
  if (kind_ == Kind::cropping && rank_ == 1) return ser::config_text(*this, {{key, amounts}});
  return ser::config_text(*this, {{key, amounts}, {"data_format", data_format_}});
}

std::string UpSampling::get_config() const {
  if (rank_ == 1) return ser::config_text(*this, {{"size", size_[0]}});
  if (rank_ == 3) return ser::config_text(*this, {{"size", size_}, {"data_format", data_format_}});
  return ser::config_text(*this, {{"size", size_}, {"data_format", data_format_}, {"interpolation", interpolation_}});
}

namespace {

// An amounts entry as Keras writes it: an integer, a list of integers, or a list of [before, after] pairs.
AxisPairs amounts_from(const json& c, const char* key, int rank, const std::string& what) {
  if (!c.contains(key) || c[key].is_null()) throw ValueError(fmt::format("{}: the config has no `{}`", what, key));
  const json& v = c[key];
  auto integer = [&](const json& e) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > (int64_t{1} << 30)) {
      throw ValueError(fmt::format("{}: `{}` must hold integers in [0, 2^30]; got {}", what, key, e.dump()));
    }
    return e.get<int64_t>();
  };
  if (v.is_number_integer()) return AxisPairs(static_cast<std::size_t>(rank), {integer(v), integer(v)});
  if (!v.is_array() || v.size() > 3) throw ValueError(fmt::format("{}: `{}` must be a list; got {}", what, key, v.dump()));
  if (rank == 1 && v.size() == 2 && v[0].is_number()) return {{integer(v[0]), integer(v[1])}};
  AxisPairs out;
  for (const json& e : v) {
    if (e.is_array() && e.size() == 2) out.emplace_back(integer(e[0]), integer(e[1]));
    else out.emplace_back(integer(e), integer(e));
  }
  return out;
}

}  // namespace

OSPREY_REGISTER_LAYERS(spatial_reshaping) {
  using K = SpatialPadding::Kind;
  for (int rank = 1; rank <= 3; ++rank) {
    for (K kind : {K::zero_padding, K::cropping}) {
      const std::string cls = fmt::format("{}{}D", kind == K::cropping ? "Cropping" : "ZeroPadding", rank);
      ser::register_layer_class(cls, {true, [kind, rank, cls](const json& c) -> std::shared_ptr<Layer> {
        return std::make_shared<SpatialPadding>(
            kind, rank, amounts_from(c, kind == K::cropping ? "cropping" : "padding", rank, cls + " " + ser::name_of(c)),
            ser::value_or<std::string>(c, "data_format", "channels_last"), ser::name_of(c));
      }});
    }
    ser::register_layer_class(fmt::format("UpSampling{}D", rank), {true, [rank](const json& c) -> std::shared_ptr<Layer> {
      const std::string what = fmt::format("UpSampling{}D {}", rank, ser::name_of(c));
      Ints size(2);
      if (c.contains("size") && c["size"].is_number_integer()) size = Ints(ser::integer(c, "size", 1, 1 << 20, what));
      else if (c.contains("size")) size = Ints(ser::integers(c, "size", 1, 1 << 20, what, 3));
      return std::make_shared<UpSampling>(rank, size, ser::value_or<std::string>(c, "data_format", "channels_last"),
                                          ser::value_or<std::string>(c, "interpolation", "nearest"), ser::name_of(c));
    }});
  }
}

}  // namespace osprey::keras::layers
