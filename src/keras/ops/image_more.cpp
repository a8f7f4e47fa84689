// keras.ops.image's pad_images, crop_images, extract_patches, sobel_edges, ssim and map_coordinates, composed of
// keras::ops (so they run on the images' device and are differentiable) in the arithmetic of Keras's own
// implementations (ops/image.py) or of its TensorFlow backend (tf.image.sobel_edges, map_coordinates).
#include "osprey/keras/ops.h"

#include <fmt/format.h>

#include <climits>
#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "osprey/random.h"
#include "keras/ops/common.h"
#include "tensor/host_draws.h"

namespace osprey::keras::ops {

namespace {

void check_rank(const Tensor& x, int low, int high, const char* what, const char* op) {
  const int rank = x.shape().rank();
  if (rank < low || rank > high) {
    throw ValueError(fmt::format("{}: Invalid {} rank: expected rank {} or {}. Received input with shape: {}", op,
                                 what, low, high, x.shape().to_string()));
  }
}

// Keras's "exactly two of three" rule for one axis, the third inferred by `infer`, each given one not negative.
void two_of_three(std::optional<int64_t>& a, std::optional<int64_t>& b, std::optional<int64_t>& target,
                  const char* na, const char* nb, const char* nt, const char* op) {
  const int missing = !a + !b + !target;
  if (missing != 1) {
    const auto shown = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("None"); };
    throw ValueError(fmt::format("{}: Must specify exactly two of {}, {}, {}. Received: {}={}, {}={}, {}={}", op, na,
                                 nb, nt, na, shown(a), nb, shown(b), nt, shown(target)));
  }
  for (const auto& [v, name] : {std::pair{&a, na}, std::pair{&b, nb}, std::pair{&target, nt}}) {
    if (*v && **v < 0) throw ValueError(fmt::format("{}: {} must be >= 0. Received: {}={}", op, name, name, **v));
  }
}

void non_negative(int64_t v, const char* name, const char* op) {
  if (v < 0) throw ValueError(fmt::format("{}: {} must be >= 0. Received: {}={}", op, name, name, v));
}

// The (height, width) axes of rank-3 or rank-4 images.
std::pair<int, int> spatial_axes(const Tensor& images, const std::string& data_format) {
  const int rank = images.shape().rank();
  return data_format == "channels_last" ? std::pair{rank - 3, rank - 2} : std::pair{rank - 2, rank - 1};
}

}  // namespace

Tensor pad_images(const Tensor& images, const PadImagesOptions& o) {
  const char* op = "pad_images";
  detail::channel_axis(images, o.data_format, op);
  auto top = o.top_padding, bottom = o.bottom_padding, height = o.target_height;
  auto left = o.left_padding, right = o.right_padding, width = o.target_width;
  two_of_three(top, bottom, height, "top_padding", "bottom_padding", "target_height", op);
  two_of_three(left, right, width, "left_padding", "right_padding", "target_width", op);
  const auto [ha, wa] = spatial_axes(images, o.data_format);
  const int64_t h = images.shape()[ha], w = images.shape()[wa];
  if (!top) top = *height - *bottom - h;
  if (!bottom) bottom = *height - *top - h;
  if (!left) left = *width - *right - w;
  if (!right) right = *width - *left - w;
  non_negative(*top, "top_padding", op);
  non_negative(*left, "left_padding", op);
  non_negative(*right, "right_padding", op);
  non_negative(*bottom, "bottom_padding", op);
  std::vector<std::pair<int64_t, int64_t>> widths(static_cast<std::size_t>(images.shape().rank()), {0, 0});
  widths[static_cast<std::size_t>(ha)] = {*top, *bottom};
  widths[static_cast<std::size_t>(wa)] = {*left, *right};
  return pad(images, widths);
}

Tensor crop_images(const Tensor& images, const CropImagesOptions& o) {
  const char* op = "crop_images";
  detail::channel_axis(images, o.data_format, op);
  auto top = o.top_cropping, bottom = o.bottom_cropping, height = o.target_height;
  auto left = o.left_cropping, right = o.right_cropping, width = o.target_width;
  two_of_three(top, bottom, height, "top_cropping", "bottom_cropping", "target_height", op);
  two_of_three(left, right, width, "left_cropping", "right_cropping", "target_width", op);
  const auto [ha, wa] = spatial_axes(images, o.data_format);
  const int64_t h = images.shape()[ha], w = images.shape()[wa];
  if (!top) top = h - *height - *bottom;
  if (!height) height = h - *bottom - *top;
  if (!left) left = w - *width - *right;
  if (!width) width = w - *right - *left;
  non_negative(*top, "top_cropping", op);
  non_negative(*height, "target_height", op);
  non_negative(*left, "left_cropping", op);
  non_negative(*width, "target_width", op);
  if (*top + *height > h || *left + *width > w) {
    throw ValueError(fmt::format("{}: the window of {}x{} at ({}, {}) reaches past the {}x{} images", op, *height,
                                 *width, *top, *left, h, w));
  }
  std::vector<int64_t> start(static_cast<std::size_t>(images.shape().rank()), 0);
  const auto d = images.shape().dims();
  std::vector<int64_t> extent(d.begin(), d.end());
  start[static_cast<std::size_t>(ha)] = *top;
  start[static_cast<std::size_t>(wa)] = *left;
  extent[static_cast<std::size_t>(ha)] = *height;
  extent[static_cast<std::size_t>(wa)] = *width;
  return slice(images, start, extent);
}

Tensor extract_patches(const Tensor& images, const std::vector<int64_t>& size, const std::vector<int64_t>& strides,
                       const std::vector<int64_t>& dilation_rate, const std::string& padding,
                       const std::string& data_format) {
  const char* op = "extract_patches";
  detail::check_data_format(data_format, op);
  if (size.empty() || size.size() > 3) {
    throw ValueError(fmt::format("{}: Invalid `size` argument. Expected an int or a tuple of length 2 (3 for 3D "
                                 "patches). Received: size of {} numbers",
                                 op, size.size()));
  }
  std::vector<int64_t> window = size.size() == 1 ? std::vector<int64_t>{size[0], size[0]} : size;
  for (int64_t v : window) {
    if (v < 1) throw ValueError(fmt::format("{}: the patch size must be positive; received {}", op, v));
  }
  const int spatial = static_cast<int>(window.size());
  check_rank(images, spatial + 1, spatial + 2, spatial == 3 ? "volumes" : "images", op);
  const bool unbatched = images.shape().rank() == spatial + 1;
  const Tensor x = unbatched ? expand_dims(images, 0) : images;
  const int64_t channels = data_format == "channels_last" ? x.shape()[-1] : x.shape()[1];
  int64_t out = channels;
  for (int64_t v : window) out *= v;
  if (out > (int64_t{1} << 16)) {
    throw ValueError(fmt::format("{}: patches of {} values are more than Osprey's identity kernel allows (2^16)", op,
                                 out));
  }
  // Keras's kernel: the identity (out x out) as (window..., channels, out), in the images' dtype.
  std::vector<int64_t> kernel_shape = window;
  kernel_shape.push_back(channels);
  kernel_shape.push_back(out);
  const DType dt = is_floating(x.dtype()) ? x.dtype() : DType::float32;
  const Tensor kernel = reshape(eye(out, std::nullopt, 0, dt), kernel_shape);
  Tensor patches = conv(x, kernel, strides.empty() ? window : strides, padding, data_format, dilation_rate);
  return unbatched ? squeeze(patches, 0) : patches;
}

Tensor sobel_edges(const Tensor& images, const std::string& data_format) {
  const char* op = "sobel_edges";
  detail::check_data_format(data_format, op);
  check_rank(images, 4, 4, "images", op);
  const bool first = data_format == "channels_first";
  const Tensor x = first ? osprey::ops::transpose(images, {0, 2, 3, 1}) : images;
  const int64_t c = x.shape()[3];
  // TensorFlow's two filters (vertical, then horizontal), per channel: kernel (3, 3, channels, 2).
  const std::vector<float> dy{-1, -2, -1, 0, 0, 0, 1, 2, 1}, dx{-1, 0, 1, -2, 0, 2, -1, 0, 1};
  std::vector<float> k(static_cast<std::size_t>(9 * c * 2));
  for (std::size_t p = 0; p < 9; ++p) {
    for (int64_t ch = 0; ch < c; ++ch) {
      k[(p * static_cast<std::size_t>(c) + static_cast<std::size_t>(ch)) * 2] = dy[p];
      k[(p * static_cast<std::size_t>(c) + static_cast<std::size_t>(ch)) * 2 + 1] = dx[p];
    }
  }
  const DType dt = is_floating(x.dtype()) ? x.dtype() : DType::float32;
  const Tensor kernel = cast(Tensor::from_vector(k, Shape({3, 3, c, 2})), dt);
  const Tensor padded = pad(x, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, "reflect");
  Tensor edges = reshape(depthwise_conv(padded, kernel), {x.shape()[0], x.shape()[1], x.shape()[2], c, 2});
  return first ? osprey::ops::transpose(edges, {0, 3, 1, 2, 4}) : edges;
}

Tensor ssim(const Tensor& image1, const Tensor& image2, double max_val, int64_t filter_size, double filter_sigma,
            double k1, double k2, const std::string& data_format) {
  const char* op = "ssim";
  detail::check_data_format(data_format, op);
  check_rank(image1, 3, 4, "image1", op);
  check_rank(image2, 3, 4, "image2", op);
  if (image1.shape() != image2.shape()) {
    throw ValueError(fmt::format("{}: the images' shapes differ: {} and {}", op, image1.shape().to_string(),
                                 image2.shape().to_string()));
  }
  if (filter_size < 1) throw ValueError(fmt::format("{}: filter_size must be positive; received {}", op, filter_size));
  const DType original = image1.dtype();
  const DType dt = is_floating(original) ? original : DType::float32;
  const bool unbatched = image1.shape().rank() == 3;
  Tensor a = cast(image1, dt), b = cast(image2, dt);
  if (unbatched) {
    a = expand_dims(a, 0);
    b = expand_dims(b, 0);
  }
  if (data_format == "channels_first") {
    a = moveaxis(a, 1, -1);
    b = moveaxis(b, 1, -1);
  }
  const int64_t batch = a.shape()[0], h = a.shape()[1], w = a.shape()[2], c = a.shape()[3];
  // Keras's Gaussian window in the compute dtype: exp(-x^2 / (2 sigma^2)) normalized, the outer product.
  const Tensor x = subtract(arange(0.0, static_cast<double>(filter_size), 1.0, dt), (filter_size - 1) / 2.0);
  Tensor g = exp(divide(negative(multiply(x, x)), 2.0 * filter_sigma * filter_sigma));
  g = divide(g, sum(g));
  const Tensor kernel = reshape(outer(g, g), {filter_size, filter_size, 1, 1});
  const double c1 = (k1 * max_val) * (k1 * max_val), c2 = (k2 * max_val) * (k2 * max_val);
  const auto channels_as_batch = [&](const Tensor& t) {
    return reshape(osprey::ops::transpose(t, {0, 3, 1, 2}), {-1, h, w, 1});
  };
  const Tensor a1 = channels_as_batch(a), b1 = channels_as_batch(b);
  const auto window = [&](const Tensor& t) { return conv(t, kernel, {1}, "valid", "channels_last"); };
  const Tensor mu1 = window(a1), mu2 = window(b1);
  const Tensor mu1_sq = multiply(mu1, mu1), mu2_sq = multiply(mu2, mu2), mu12 = multiply(mu1, mu2);
  const Tensor s1 = subtract(window(multiply(a1, a1)), mu1_sq);
  const Tensor s2 = subtract(window(multiply(b1, b1)), mu2_sq);
  const Tensor s12 = subtract(window(multiply(a1, b1)), mu12);
  const Tensor numerator = multiply(add(multiply(2.0, mu12), c1), add(multiply(2.0, s12), c2));
  const Tensor denominator = multiply(add(add(mu1_sq, mu2_sq), c1), add(add(s1, s2), c2));
  const Tensor per_channel = reshape(mean(divide(numerator, denominator), Axes({1, 2, 3})), {batch, c});
  Tensor result = mean(per_channel, -1);
  if (unbatched) result = squeeze(result, 0);
  return cast(result, original);
}

namespace {

// One sample position along an axis: the index TensorFlow's map_coordinates gathers at after fill_mode, and whether
// it lies inside (fill_mode "constant" fills where it does not).
struct Tap {
  int64_t index;
  bool valid;
};

Tap fix_index(int64_t idx, int64_t size, const std::string& mode) {
  if (mode == "constant") return {std::clamp<int64_t>(idx, 0, size - 1), idx >= 0 && idx < size};
  if (mode == "nearest") return {std::clamp<int64_t>(idx, 0, size - 1), true};
  if (mode == "wrap") return {((idx % size) + size) % size, true};
  // mirror / reflect, in Keras's TensorFlow formulas: |idx| mod 2·size, folded back above size.
  const int64_t size2 = 2 * size, mod = std::abs(idx) % size2;
  int64_t r = mod < size ? mod : size2 - mod;
  if (mode == "reflect" && mod >= size) r -= 1;
  if (r >= size) {
    throw InvalidArgumentError(fmt::format("map_coordinates: fill_mode \"mirror\" maps index {} to {}, outside an "
                                           "axis of {} (TensorFlow's gather refuses it too, as Keras's TensorFlow "
                                           "backend computes mirror)",
                                           idx, r, size));
  }
  return {r, true};
}

}  // namespace

namespace {

// TensorFlow's map_coordinates arithmetic: `inputs` sampled at one coordinate tensor per axis (all of the output's
// shape), each axis by its order (0: the index nearest, halves to even; 1: linear between floor and floor + 1),
// the taps' products summed in itertools.product's order (the last axis fastest). The indices come from the
// coordinates' values on the host (they carry no gradient); the linear weights are tensors of the coordinates, so
// the result is differentiable in them.
Tensor sample_at(const Tensor& inputs, const std::vector<Tensor>& along, const std::vector<int>& orders,
                 const std::string& fill_mode, double fill_value) {
  const int rank = inputs.shape().rank();
  const auto od = along[0].shape().dims();
  const std::vector<int64_t> out_shape(od.begin(), od.end());
  const int64_t n = along[0].num_elements();
  std::vector<int64_t> strides(static_cast<std::size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) {
    strides[static_cast<std::size_t>(d)] = strides[static_cast<std::size_t>(d) + 1] * inputs.shape()[d + 1];
  }
  struct Node {
    std::vector<Tap> taps;  // one per output element
    Tensor weight;          // undefined: 1 (order 0)
  };
  std::vector<std::vector<Node>> axes(static_cast<std::size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    const int64_t size = inputs.shape()[d];
    const int order = orders[static_cast<std::size_t>(d)];
    const auto c = along[static_cast<std::size_t>(d)].to("CPU:0").cast(DType::float32).to_vector<float>();
    std::vector<int64_t> base(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double v = c[static_cast<std::size_t>(i)];
      if (!std::isfinite(v) || std::abs(v) > static_cast<double>(INT_MAX / 2)) {
        throw InvalidArgumentError(fmt::format("map_coordinates: coordinate {} along axis {} is not a finite number "
                                               "within the int32 range",
                                               v, d));
      }
      base[static_cast<std::size_t>(i)] = static_cast<int64_t>(order == 0 ? std::nearbyint(v) : std::floor(v));
    }
    const auto node = [&](int64_t shift, Tensor weight) {
      Node nd{{}, std::move(weight)};
      nd.taps.reserve(static_cast<std::size_t>(n));
      for (int64_t b : base) nd.taps.push_back(fix_index(b + shift, size, fill_mode));
      return nd;
    };
    if (order == 0) {
      axes[static_cast<std::size_t>(d)].push_back(node(0, Tensor()));
    } else {
      const Tensor& a = along[static_cast<std::size_t>(d)];
      const Tensor upper = subtract(a, floor(a));
      axes[static_cast<std::size_t>(d)].push_back(node(0, subtract(1.0, upper)));
      axes[static_cast<std::size_t>(d)].push_back(node(1, upper));
    }
  }
  const DType dt = along[0].dtype();
  const Tensor flat = reshape(inputs, {-1});
  Tensor result;
  std::vector<std::size_t> pick(static_cast<std::size_t>(rank), 0);
  for (bool more = true; more;) {
    std::vector<int64_t> linear(static_cast<std::size_t>(n), 0);
    std::vector<float> valid(static_cast<std::size_t>(n), 1.0f);
    Tensor weight;
    for (int d = 0; d < rank; ++d) {
      const Node& nd = axes[static_cast<std::size_t>(d)][pick[static_cast<std::size_t>(d)]];
      for (int64_t i = 0; i < n; ++i) {
        const Tap& t = nd.taps[static_cast<std::size_t>(i)];
        linear[static_cast<std::size_t>(i)] += t.index * strides[static_cast<std::size_t>(d)];
        if (!t.valid) valid[static_cast<std::size_t>(i)] = 0.0f;
      }
      if (nd.weight.defined()) weight = weight.defined() ? multiply(weight, nd.weight) : nd.weight;
    }
    Tensor gathered;
    {
      DeviceScope on(inputs.device());
      gathered = cast(reshape(take(flat, Tensor::from_vector(linear, Shape({n}))), out_shape), dt);
      if (fill_mode == "constant") {
        gathered = where(greater(Tensor::from_vector(valid, Shape(out_shape)), 0.5), gathered,
                         cast(Tensor::scalar(fill_value), dt));
      }
    }
    const Tensor term = weight.defined() ? multiply(weight, gathered) : gathered;
    result = result.defined() ? add(result, term) : term;
    more = false;
    for (int d = rank - 1; d >= 0; --d) {
      if (++pick[static_cast<std::size_t>(d)] < axes[static_cast<std::size_t>(d)].size()) {
        more = true;
        break;
      }
      pick[static_cast<std::size_t>(d)] = 0;
    }
  }
  if (!is_floating(inputs.dtype())) result = round(result);
  return cast(result, inputs.dtype());
}

void check_fill_mode(const std::string& fill_mode, const char* op) {
  if (fill_mode != "constant" && fill_mode != "nearest" && fill_mode != "wrap" && fill_mode != "mirror" &&
      fill_mode != "reflect") {
    throw ValueError(fmt::format("{}: Invalid value for argument `fill_mode`. Expected one of {{'constant', "
                                 "'nearest', 'wrap', 'mirror', 'reflect'}}. Received: fill_mode={}",
                                 op, fill_mode));
  }
}

}  // namespace

Tensor map_coordinates(const Tensor& inputs, const Tensor& coordinates, int order, const std::string& fill_mode,
                       double fill_value) {
  const int rank = inputs.shape().rank();
  if (coordinates.shape().rank() < 1 || coordinates.shape()[0] != rank) {
    throw ValueError(fmt::format("map_coordinates: First dim of `coordinates` must be the same as the rank of "
                                 "`inputs`. Received inputs with shape: {} and coordinate leading dim of {}",
                                 inputs.shape().to_string(),
                                 coordinates.shape().rank() < 1 ? int64_t{0} : coordinates.shape()[0]));
  }
  if (coordinates.shape().rank() < 2) {
    throw ValueError(fmt::format("map_coordinates: Invalid coordinates rank: expected at least rank 2. Received input "
                                 "with shape: {}",
                                 coordinates.shape().to_string()));
  }
  check_fill_mode(fill_mode, "map_coordinates");
  if (order != 0 && order != 1) throw NotImplementedError("map_coordinates currently requires order<=1");
  for (int d = 0; d < rank; ++d) {
    if (inputs.shape()[d] < 1) throw ValueError("map_coordinates: `inputs` has an empty axis");
  }
  const Tensor coords = is_floating(coordinates.dtype()) ? coordinates : cast(coordinates, DType::float32);
  const auto cd = coords.shape().dims();
  const std::vector<int64_t> out_shape(cd.begin() + 1, cd.end());
  std::vector<Tensor> along;
  for (int d = 0; d < rank; ++d) {
    std::vector<int64_t> start(cd.size(), 0), extent(cd.begin(), cd.end());
    start[0] = d;
    extent[0] = 1;
    along.push_back(reshape(slice(coords, start, extent), out_shape));
  }
  return sample_at(inputs, along, std::vector<int>(static_cast<std::size_t>(rank), order), fill_mode, fill_value);
}

Tensor elastic_transform(const Tensor& images, const Tensor& noise, double alpha, double sigma,
                         const std::string& interpolation, const std::string& fill_mode, double fill_value,
                         const std::string& data_format) {
  const char* op = "elastic_transform";
  detail::channel_axis(images, data_format, op);
  check_fill_mode(fill_mode, op);
  if (interpolation != "bilinear" && interpolation != "nearest") {
    throw ValueError(fmt::format("{}: Invalid value for argument `interpolation`. Expected of one ('nearest', "
                                 "'bilinear'). Received: interpolation={}",
                                 op, interpolation));
  }
  if (!(sigma >= 0.0 && sigma <= 1e6) || !std::isfinite(alpha)) {
    throw ValueError(fmt::format("{}: sigma must be a number in [0, 1e6] and alpha finite; received sigma={}, "
                                 "alpha={}",
                                 op, sigma, alpha));
  }
  const bool unbatched = images.shape().rank() == 3;
  const bool first = data_format == "channels_first";
  Tensor x = unbatched ? expand_dims(images, 0) : images;
  if (!first) x = osprey::ops::transpose(x, {0, 3, 1, 2});  // (batch, channels, height, width)
  const int64_t b = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  if (noise.shape() != Shape({b, h, w})) {
    throw ValueError(fmt::format("{}: the noise must be (batch, height, width) = ({}, {}, {}); got {}", op, b, h, w,
                                 noise.shape().to_string()));
  }
  const DType dt = is_floating(images.dtype()) ? images.dtype() : DType::float32;
  // Keras's TensorFlow backend: one noise field for both axes, times sigma, blurred by a Gaussian of
  // 6 · int(sigma) | 1 taps, then alpha times it added to the pixel grid.
  const int64_t taps = (6 * static_cast<int64_t>(static_cast<int32_t>(sigma))) | 1;
  const Tensor scaled = multiply(cast(noise, dt), cast(Tensor::scalar(sigma), dt));
  const Tensor d = squeeze(gaussian_blur(expand_dims(scaled, -1), {taps, taps}, {sigma, sigma}), -1);  // (b, h, w)
  const Tensor shift = multiply(cast(Tensor::scalar(alpha), dt), d);
  const Tensor cols = cast(reshape(arange(0.0, static_cast<double>(w)), {1, 1, w}), dt);
  const Tensor rows = cast(reshape(arange(0.0, static_cast<double>(h)), {1, h, 1}), dt);
  const Tensor y = add(rows, shift), xs = add(cols, shift);
  // Every (image, channel) plane sampled at its image's coordinates: the planes as axis 0, taken exactly.
  const auto per_channel = [&](const Tensor& t) {
    return reshape(broadcast_to(expand_dims(t, 1), {b, c, h, w}), {b * c, h, w});
  };
  std::vector<float> plane(static_cast<std::size_t>(b * c * h * w));
  for (std::size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<float>(i / static_cast<std::size_t>(h * w));
  const int order = interpolation == "nearest" ? 0 : 1;
  Tensor out = sample_at(reshape(x, {b * c, h, w}),
                         {cast(Tensor::from_vector(plane, Shape({b * c, h, w})), dt), per_channel(y), per_channel(xs)},
                         {0, order, order}, fill_mode, fill_value);
  out = reshape(out, {b, c, h, w});
  if (!first) out = osprey::ops::transpose(out, {0, 2, 3, 1});
  return unbatched ? squeeze(out, 0) : out;
}

Tensor elastic_transform(const Tensor& images, double alpha, double sigma, const std::string& interpolation,
                         const std::string& fill_mode, double fill_value, std::optional<int64_t> seed,
                         const std::string& data_format) {
  detail::channel_axis(images, data_format, "elastic_transform");
  const bool unbatched = images.shape().rank() == 3;
  const int64_t b = unbatched ? 1 : images.shape()[0];
  const auto [ha, wa] = spatial_axes(images, data_format);
  const Shape shape({b, images.shape()[ha], images.shape()[wa]});
  Tensor noise;
  if (seed) {  // Box-Muller normals from a generator of the seed
    random::Philox gen(static_cast<uint64_t>(*seed), uint64_t{0x656c6173});
    std::vector<float> v(static_cast<std::size_t>(shape.num_elements()));
    for (float& z : v) z = static_cast<float>(random::host::normal_draw([&gen] { return gen.next_double(); }));
    noise = Tensor::from_vector(v, shape);
  } else {
    noise = random::normal(shape);
  }
  return elastic_transform(images, noise, alpha, sigma, interpolation, fill_mode, fill_value, data_format);
}

}  // namespace osprey::keras::ops
