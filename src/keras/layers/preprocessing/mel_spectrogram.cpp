// keras.layers.MelSpectrogram: keras::ops::stft (centred), |X|^mag_exp, Keras's linear_to_mel_weight_matrix (HTK's
// mel scale, the DC bin dropped), then dB scaling floored top_db under the batch's largest value; (..., mel, frames).
#include <fmt/format.h>

#include <cmath>

#include "keras/ops/common.h"
#include "keras/ops/signal.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/audio.h"
#include "osprey/keras/ops.h"

namespace osprey::keras::layers {

namespace kops = osprey::keras::ops;
namespace ser = serialization;
using json = ser::json;

// The largest fft_length taken (a config from a file included): the mel filter bank is (fft_length / 2 + 1) ×
// num_mel_bins.
constexpr int64_t kMaxMelFftLength = int64_t{1} << 16;

namespace {

constexpr float kMelBreakHertz = 700.0f, kMelHighQ = 1127.0f;

float hertz_to_mel(float hz) { return kMelHighQ * std::log(1.0f + hz / kMelBreakHertz); }

}  // namespace

MelSpectrogram::MelSpectrogram(MelSpectrogramOptions options)
    : Layer(options.name, "mel_spectrogram", options.dtype), o_(std::move(options)) {
  sequence_length_ = o_.sequence_length.value_or(o_.fft_length);
  if (o_.fft_length < sequence_length_) {
    throw ValueError(fmt::format("`fft_length` must be greater than or equal to  `sequence_length`. Received: "
                                 "`sequence_length`={}, `fft_length`={}.",
                                 sequence_length_, o_.fft_length));
  }
  if (o_.fft_length < 2 || o_.fft_length > kMaxMelFftLength || sequence_length_ < 1 || o_.sequence_stride < 1) {
    throw ValueError(fmt::format("MelSpectrogram: fft_length must be in [2, {}] (its mel filter bank is fft_length / 2 + 1 rows) and "
                                 "sequence_length and sequence_stride positive; received fft_length={}, "
                                 "sequence_length={}, sequence_stride={}",
                                 kMaxMelFftLength, o_.fft_length, sequence_length_, o_.sequence_stride));
  }
  if (o_.window && *o_.window != "hann" && *o_.window != "hamming") {
    throw ValueError(fmt::format("If a string is passed to `window`, it must be one of `\"hann\"`, `\"hamming\"`. "
                                 "Received: window={}",
                                 *o_.window));
  }
  if (o_.num_mel_bins < 1 || o_.num_mel_bins > 65536 || o_.sampling_rate < 1) {
    throw ValueError(fmt::format("MelSpectrogram: num_mel_bins must be in [1, 65536] and sampling_rate positive; "
                                 "received num_mel_bins={}, sampling_rate={}",
                                 o_.num_mel_bins, o_.sampling_rate));
  }
  if (o_.num_mel_bins * (o_.fft_length / 2 + 1) > (int64_t{1} << 25)) {
    throw ValueError(fmt::format("MelSpectrogram: a filter bank of {} mel bins over {} frequencies is more than the "
                                 "2^25 weights Osprey allows",
                                 o_.num_mel_bins, o_.fft_length / 2 + 1));
  }
  max_freq_ = o_.max_freq.value_or(static_cast<double>(o_.sampling_rate / 2));
  if (!std::isfinite(o_.min_freq) || !std::isfinite(max_freq_) || !std::isfinite(o_.top_db) ||
      !std::isfinite(o_.mag_exp) || !(o_.min_power > 0.0)) {
    throw ValueError(fmt::format("MelSpectrogram: min_freq, max_freq, top_db and mag_exp must be finite and min_power "
                                 "positive; received {}, {}, {}, {}, {}",
                                 o_.min_freq, max_freq_, o_.top_db, o_.mag_exp, o_.min_power));
  }
}

Tensor MelSpectrogram::linear_to_mel_weight_matrix(int64_t num_mel_bins, int64_t num_spectrogram_bins,
                                                   double sampling_rate, double lower_edge_hertz,
                                                   double upper_edge_hertz) {
  if (num_mel_bins < 1 || num_spectrogram_bins < 2) {
    throw ValueError(fmt::format("linear_to_mel_weight_matrix: needs num_mel_bins >= 1 and num_spectrogram_bins >= "
                                 "2; received {} and {}",
                                 num_mel_bins, num_spectrogram_bins));
  }
  // float32 throughout, as Keras computes it.
  const float nyquist = static_cast<float>(sampling_rate) / 2.0f;
  const float lower = hertz_to_mel(static_cast<float>(lower_edge_hertz));
  const float upper = hertz_to_mel(static_cast<float>(upper_edge_hertz));
  std::vector<float> edges(static_cast<std::size_t>(num_mel_bins + 2));
  const float mel_step = (upper - lower) / static_cast<float>(num_mel_bins + 1);
  for (std::size_t i = 0; i < edges.size(); ++i) edges[i] = lower + static_cast<float>(i) * mel_step;
  const float hz_step = nyquist / static_cast<float>(num_spectrogram_bins - 1);
  std::vector<float> m(static_cast<std::size_t>(num_spectrogram_bins * num_mel_bins), 0.0f);
  for (int64_t b = 1; b < num_spectrogram_bins; ++b) {  // HTK: the DC bin stays zero
    const float mel = hertz_to_mel(static_cast<float>(b) * hz_step);
    for (int64_t j = 0; j < num_mel_bins; ++j) {
      const float lo = edges[static_cast<std::size_t>(j)], centre = edges[static_cast<std::size_t>(j + 1)];
      const float hi = edges[static_cast<std::size_t>(j + 2)];
      const float rising = (mel - lo) / (centre - lo), falling = (hi - mel) / (hi - centre);
      m[static_cast<std::size_t>(b * num_mel_bins + j)] = std::max(0.0f, std::min(rising, falling));
    }
  }
  return Tensor::from_vector(m, Shape({num_spectrogram_bins, num_mel_bins}));
}

Shape MelSpectrogram::build(const Shape& input_shape) {
  if (input_shape.rank() > 1) {
    throw ValueError(fmt::format("MelSpectrogram '{}' takes signals (batch, samples) or one signal (samples,); "
                                 "received a batch of {}",
                                 name_, input_shape.to_string()));
  }
  if (input_shape.rank() == 0) return finish_build(Shape({}));  // one signal, called eagerly: shaped by call()
  const int64_t samples = input_shape[0], half = o_.fft_length / 2;
  if (samples >= 0 && samples <= half) {
    throw ValueError(fmt::format("MelSpectrogram '{}': a signal of {} samples is too short to centre frames of "
                                 "fft_length {} (reflect padding by {} needs more samples)",
                                 name_, samples, o_.fft_length, half));
  }
  const int64_t frames = samples < 0 ? -1 : 1 + (samples + 2 * half - o_.fft_length) / o_.sequence_stride;
  return finish_build(Shape({o_.num_mel_bins, frames}));
}

Tensor MelSpectrogram::call(const Tensor& inputs, bool) {
  if (inputs.shape().rank() != 1 && inputs.shape().rank() != 2) {
    throw ValueError(fmt::format("MelSpectrogram '{}' takes signals (batch, samples) or one signal (samples,); "
                                 "received {}",
                                 name_, inputs.shape().to_string()));
  }
  const Tensor x = inputs.dtype() == DType::float32 ? inputs : inputs.cast(DType::float32);
  const auto window = o_.window ? kops::StftWindow(*o_.window) : kops::StftWindow(nullptr);
  const auto [re, im] = kops::stft(x, sequence_length_, o_.sequence_stride, o_.fft_length, window, true);
  // Keras: power(sqrt(re² + im²), mag_exp); the power spectrum (mag_exp 2, the default) directly, within rounding.
  const Tensor power2 = kops::add(kops::square(re), kops::square(im));
  Tensor spec = o_.mag_exp == 2.0 ? power2 : kops::power(kops::sqrt(power2), o_.mag_exp);
  const Tensor matrix = linear_to_mel_weight_matrix(o_.num_mel_bins, o_.fft_length / 2 + 1,
                                                    static_cast<double>(o_.sampling_rate), o_.min_freq, max_freq_);
  spec = kops::tensordot(spec, kops::detail::where_is(matrix, spec), 1);
  if (o_.power_to_db) {
    Tensor db = kops::multiply(kops::log10(kops::maximum(spec, o_.min_power)), 10.0);
    const double ref = 10.0 * std::log10(static_cast<double>(std::max(static_cast<float>(std::abs(o_.ref_power)),
                                                                      static_cast<float>(o_.min_power))));
    db = kops::subtract(db, ref);
    spec = kops::maximum(db, kops::subtract(kops::max(db), o_.top_db));
  }
  return kops::swapaxes(spec, -1, -2);
}

std::string MelSpectrogram::get_config() const {
  json c = ser::base_config(*this);
  c["fft_length"] = o_.fft_length;
  c["sequence_stride"] = o_.sequence_stride;
  c["sequence_length"] = sequence_length_;
  c["window"] = o_.window ? json(*o_.window) : json();
  c["sampling_rate"] = o_.sampling_rate;
  c["num_mel_bins"] = o_.num_mel_bins;
  c["min_freq"] = o_.min_freq;
  // Keras keeps the integer sampling_rate / 2 when max_freq was not given.
  c["max_freq"] = o_.max_freq ? json(*o_.max_freq) : json(o_.sampling_rate / 2);
  c["power_to_db"] = o_.power_to_db;
  c["top_db"] = o_.top_db;
  c["mag_exp"] = o_.mag_exp;
  c["min_power"] = o_.min_power;
  c["ref_power"] = o_.ref_power;
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(mel_spectrogram) {
  ser::register_layer_class("MelSpectrogram", {true, [](const json& c) -> std::shared_ptr<Layer> {
    MelSpectrogramOptions o;
    o.fft_length = c.contains("fft_length") ? ser::integer(c, "fft_length", 2, kMaxMelFftLength, "MelSpectrogram")
                                            : 2048;
    o.sequence_stride = c.contains("sequence_stride")
                            ? ser::integer(c, "sequence_stride", 1, int64_t{1} << 40, "MelSpectrogram")
                            : 512;
    if (c.contains("sequence_length") && !c["sequence_length"].is_null()) {
      o.sequence_length = ser::integer(c, "sequence_length", 1, kMaxMelFftLength, "MelSpectrogram");
    }
    if (c.contains("window")) {
      if (c["window"].is_null()) {
        o.window = std::nullopt;
      } else if (c["window"].is_string()) {
        o.window = c["window"].get<std::string>();
      } else {
        throw ValueError("MelSpectrogram: \"window\" must be \"hann\", \"hamming\" or null (Osprey reads no window "
                         "values from a config)");
      }
    }
    o.sampling_rate = c.contains("sampling_rate") ? ser::integer(c, "sampling_rate", 1, int64_t{1} << 40, "MelSpectrogram")
                                                  : 16000;
    o.num_mel_bins = c.contains("num_mel_bins") ? ser::integer(c, "num_mel_bins", 1, 65536, "MelSpectrogram") : 128;
    if (c.contains("min_freq")) o.min_freq = ser::number(c, "min_freq", -1e12, 1e12, "MelSpectrogram");
    if (c.contains("max_freq") && !c["max_freq"].is_null()) {
      o.max_freq = ser::number(c, "max_freq", -1e12, 1e12, "MelSpectrogram");
    }
    o.power_to_db = ser::value_or<bool>(c, "power_to_db", true);
    if (c.contains("top_db")) o.top_db = ser::number(c, "top_db", -1e12, 1e12, "MelSpectrogram");
    if (c.contains("mag_exp")) o.mag_exp = ser::number(c, "mag_exp", -1e6, 1e6, "MelSpectrogram");
    if (c.contains("min_power")) o.min_power = ser::number(c, "min_power", 0.0, 1e12, "MelSpectrogram");
    if (c.contains("ref_power")) o.ref_power = ser::number(c, "ref_power", -1e12, 1e12, "MelSpectrogram");
    o.name = ser::name_of(c);
    return std::make_shared<MelSpectrogram>(std::move(o));
  }});
}

}  // namespace osprey::keras::layers
