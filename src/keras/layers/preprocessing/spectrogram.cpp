// keras.layers.STFTSpectrogram: every channel of the signal convolved (keras::ops::conv, one frame per stride)
// with Keras's STFT initializer's kernels, the window times the DFT's cosines and sines computed in float32 as
// Keras computes them; then the mode's function of the real and imaginary parts, laid out as Keras's
// _adjust_shapes lays them out.
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "keras/ops/signal.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/audio.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace kops = osprey::keras::ops;
namespace ser = serialization;
using json = ser::json;

namespace {

constexpr double kBackendEpsilon = 1e-7;  // keras.backend.epsilon()

bool one_of(const std::string& v, std::initializer_list<const char*> options) {
  for (const char* o : options) {
    if (v == o) return true;
  }
  return false;
}

// Keras's initializers.STFT for a (frame_length, 1, bins) kernel: the frequencies over (bins - 1) · 2, the angle
// -2·t·f·π in float32, the window (scipy's, in float32) divided by its scaling.
Tensor stft_kernel(bool real, const STFTSpectrogramOptions& o, int64_t bins) {
  const int64_t n = o.frame_length;
  std::vector<float> win;
  float scaling = 1.0f;
  if (o.window) {
    for (double v : signal::window(*o.window, n, o.periodic, "STFTSpectrogram")) win.push_back(static_cast<float>(v));
    float total = 0.0f;
    if (o.scaling == "density") {
      for (float v : win) total += v * v;
      scaling = std::sqrt(total);
    } else if (o.scaling == "spectrum") {
      for (float v : win) total += std::abs(v);
      scaling = total;
    }
  }
  const auto denom = static_cast<float>((bins - 1) * 2);
  const auto pi = static_cast<float>(std::numbers::pi);
  std::vector<float> k(static_cast<std::size_t>(n * bins));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t f = 0; f < bins; ++f) {
      const float arg = (-2.0f * static_cast<float>(t)) * (static_cast<float>(f) / denom) * pi;
      float v = static_cast<float>(real ? std::cos(static_cast<double>(arg)) : std::sin(static_cast<double>(arg)));
      if (!win.empty()) v = v * win[static_cast<std::size_t>(t)] / scaling;
      k[static_cast<std::size_t>(t * bins + f)] = v;
    }
  }
  return Tensor::from_vector(k, Shape({n, 1, bins}));
}

}  // namespace

STFTSpectrogram::STFTSpectrogram(STFTSpectrogramOptions options)
    : Layer(options.name, "stft_spectrogram", options.dtype), o_(std::move(options)) {
  if (o_.frame_length < 1 || o_.frame_length > signal::kMaxFftLength) {
    throw ValueError(fmt::format("STFTSpectrogram: `frame_length` must be in [1, {}]. Received frame_length={}",
                                 signal::kMaxFftLength, o_.frame_length));
  }
  if (o_.frame_step && (*o_.frame_step > o_.frame_length || *o_.frame_step < 1)) {
    throw ValueError(fmt::format("`frame_step` should be a positive integer not greater than `frame_length`. Received "
                                 "frame_step={}, frame_length={}",
                                 *o_.frame_step, o_.frame_length));
  }
  if (o_.fft_length && *o_.fft_length < o_.frame_length) {
    throw ValueError(fmt::format("`fft_length` should be not less than `frame_length`. Received fft_length={}, "
                                 "frame_length={}",
                                 *o_.fft_length, o_.frame_length));
  }
  if (!one_of(o_.mode, {"log", "magnitude", "psd", "real", "imag", "angle", "stft"})) {
    throw ValueError(fmt::format("Output mode is invalid, it must be one of log, magnitude, psd, real, imag, angle, "
                                 "stft. Received: mode={}",
                                 o_.mode));
  }
  if (o_.scaling && !one_of(*o_.scaling, {"density", "spectrum"})) {
    throw ValueError(fmt::format("Scaling is invalid, it must be `None`, 'density' or 'spectrum'. Received scaling={}",
                                 *o_.scaling));
  }
  if (!one_of(o_.padding, {"valid", "same"})) {
    throw ValueError(fmt::format("Padding is invalid, it should be 'valid', 'same'. Received: padding={}", o_.padding));
  }
  if (!one_of(o_.data_format, {"channels_last", "channels_first"})) {
    throw ValueError(fmt::format("STFTSpectrogram: data_format must be channels_last or channels_first; received {}",
                                 o_.data_format));
  }
  if (o_.window) (void)signal::window(*o_.window, 1, false, "STFTSpectrogram");  // an unknown name is a ValueError
  step_ = o_.frame_step.value_or(o_.frame_length / 2);
  if (step_ < 1) {
    throw ValueError(fmt::format("STFTSpectrogram: frame_length {} gives a frame_step of 0; give frame_step",
                                 o_.frame_length));
  }
  fft_ = o_.fft_length.value_or(int64_t{1} << static_cast<int>(std::ceil(std::log2(static_cast<double>(o_.frame_length)))));
  if (fft_ < 2 || fft_ > signal::kMaxFftLength) {
    throw ValueError(fmt::format("STFTSpectrogram: fft_length must be in [2, {}] in Osprey; it is {}",
                                 signal::kMaxFftLength, fft_));
  }
}

Shape STFTSpectrogram::build(const Shape& input_shape) {
  if (input_shape.rank() != 2) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected ndim=3, found "
                                 "ndim={}. Full shape received: (None, {})",
                                 name_, input_shape.rank() + 1, fmt::join(input_shape.dims(), ", ")));
  }
  const bool last = o_.data_format == "channels_last";
  const int64_t channels = last ? input_shape[1] : input_shape[0], samples = last ? input_shape[0] : input_shape[1];
  const int64_t frames = samples < 0                ? -1  // unknown length
                         : o_.padding == "same"       ? (samples + step_ - 1) / step_
                         : samples >= o_.frame_length ? (samples - o_.frame_length) / step_ + 1
                                                      : 0;
  if (frames == 0) {
    throw ValueError(fmt::format("STFTSpectrogram '{}': a signal of {} samples holds no frame of {} (padding \"{}\")",
                                 name_, samples, o_.frame_length, o_.padding));
  }
  const int64_t bins = fft_ / 2 + 1, values = o_.mode == "stft" ? 2 * bins : bins;
  if (o_.mode != "imag") real_ = &add_weight("real_kernel", stft_kernel(true, o_, bins));
  if (o_.mode != "real") imag_ = &add_weight("imag_kernel", stft_kernel(false, o_, bins));
  if (o_.expand_dims) {
    return finish_build(last ? Shape({frames, values, channels}) : Shape({channels, frames, values}));
  }
  return finish_build(last ? Shape({frames, channels * values}) : Shape({channels * values, frames}));
}

// Every channel as a signal of its own (batch · channels, samples, 1), convolved: (batch · channels, frames, bins).
Tensor STFTSpectrogram::conv_frames(const Tensor& signals, const Variable& kernel) const {
  return kops::conv(signals, autocast_variable(kernel), {step_}, o_.padding);
}

Tensor STFTSpectrogram::call(const Tensor& inputs, bool) {
  if (!is_floating(inputs.dtype())) {
    throw InvalidArgumentError(fmt::format("Invalid input type. Expected `float16`, `float32` or `float64`. Received: "
                                           "input type={}",
                                           dtype_name(inputs.dtype())));
  }
  if (inputs.shape().rank() != 3) {
    throw ValueError(fmt::format("STFTSpectrogram '{}' takes (batch, samples, channels) (channels_first: (batch, "
                                 "channels, samples)); received {}",
                                 name_, inputs.shape().to_string()));
  }
  const Tensor x = inputs.dtype() == DType::float32 ? inputs : inputs.cast(DType::float32);
  const bool last = o_.data_format == "channels_last";
  const int64_t batch = x.shape()[0], channels = last ? x.shape()[2] : x.shape()[1];
  const int64_t samples = last ? x.shape()[1] : x.shape()[2];
  const Tensor flat = last ? kops::reshape(kops::transpose(x, std::vector<int>{0, 2, 1}), {batch * channels, samples, 1})
                           : kops::reshape(x, {batch * channels, samples, 1});
  const Tensor re = real_ ? conv_frames(flat, *real_) : Tensor(), im = imag_ ? conv_frames(flat, *imag_) : Tensor();
  Tensor y;
  if (o_.mode == "real") {
    y = re;
  } else if (o_.mode == "imag") {
    y = im;
  } else if (o_.mode == "angle") {
    y = kops::arctan2(im, re);
  } else if (o_.mode == "stft") {
    y = kops::concatenate({re, im}, -1);
  } else {
    const Tensor power = kops::add(kops::square(re), kops::square(im));
    if (o_.mode == "psd") {  // Keras: the inner bins counted twice (both halves of the spectrum)
      const int64_t bins = power.shape()[2];
      const Tensor inner = kops::slice(power, {0, 0, 1}, {power.shape()[0], power.shape()[1], bins - 2});
      y = kops::add(power, kops::pad(inner, {{0, 0}, {0, 0}, {1, 1}}));
    } else {
      y = kops::sqrt(kops::maximum(power, kBackendEpsilon));
      if (o_.mode == "log") y = kops::log(kops::maximum(y, kBackendEpsilon));
    }
  }
  // (batch · channels, frames, values) laid out as Keras's _adjust_shapes.
  const int64_t frames = y.shape()[1], values = y.shape()[2];
  y = kops::reshape(y, {batch, channels, frames, values});
  if (last) {
    if (o_.expand_dims) return kops::transpose(y, std::vector<int>{0, 2, 3, 1});
    return kops::reshape(kops::transpose(y, std::vector<int>{0, 2, 1, 3}), {batch, frames, channels * values});
  }
  if (o_.expand_dims) return y;
  return kops::reshape(kops::transpose(y, std::vector<int>{0, 1, 3, 2}), {batch, channels * values, frames});
}

std::string STFTSpectrogram::get_config() const {
  json c = ser::base_config(*this);
  c["mode"] = o_.mode;
  c["frame_length"] = o_.frame_length;
  c["frame_step"] = o_.frame_step ? json(*o_.frame_step) : json();
  c["fft_length"] = o_.fft_length ? json(*o_.fft_length) : json();
  c["window"] = o_.window ? json(*o_.window) : json();
  c["periodic"] = o_.periodic;
  c["scaling"] = o_.scaling ? json(*o_.scaling) : json();
  c["padding"] = o_.padding;
  c["data_format"] = o_.data_format;
  c["expand_dims"] = o_.expand_dims;
  return ser::dumps(c);
}

namespace {

std::optional<std::string> optional_text(const json& c, const char* key, const char* fallback) {
  if (!c.contains(key)) return fallback ? std::optional<std::string>(fallback) : std::nullopt;
  if (c[key].is_null()) return std::nullopt;
  if (!c[key].is_string()) {
    throw ValueError(fmt::format("STFTSpectrogram: \"{}\" must be a string or null (Osprey takes window names, not "
                                 "window values); got {}",
                                 key, c[key].dump().substr(0, 100)));
  }
  return c[key].get<std::string>();
}

std::optional<int64_t> optional_integer(const json& c, const char* key) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  return ser::integer(c, key, 1, signal::kMaxFftLength, "STFTSpectrogram");
}

}  // namespace

OSPREY_REGISTER_LAYERS(spectrogram) {
  ser::register_layer_class("STFTSpectrogram", {true, [](const json& c) -> std::shared_ptr<Layer> {
    STFTSpectrogramOptions o;
    o.mode = ser::value_or<std::string>(c, "mode", "log");
    o.frame_length = c.contains("frame_length") ? ser::integer(c, "frame_length", 1, signal::kMaxFftLength,
                                                               "STFTSpectrogram")
                                                : 256;
    o.frame_step = optional_integer(c, "frame_step");
    o.fft_length = optional_integer(c, "fft_length");
    o.window = optional_text(c, "window", "hann");
    o.periodic = ser::value_or<bool>(c, "periodic", false);
    o.scaling = optional_text(c, "scaling", "density");
    o.padding = ser::value_or<std::string>(c, "padding", "valid");
    o.expand_dims = ser::value_or<bool>(c, "expand_dims", false);
    o.data_format = ser::value_or<std::string>(c, "data_format", "channels_last");
    o.name = ser::name_of(c);
    return std::make_shared<STFTSpectrogram>(std::move(o));
  }});
}

}  // namespace osprey::keras::layers
