// keras.ops.stft and istft as Keras's TensorFlow backend computes them (tf.signal.stft / inverse_stft): frames of
// the (reflect-padded) signal times the window, then the real DFT as a product with its cosine and sine matrices;
// back by the inverse DFT of each frame, TensorFlow's inverse_stft_window_fn and overlap-add. Compositions of
// Osprey's ops, so they run on the signal's device and are differentiable. Also the windows (scipy.signal's
// formulas) the audio layers share (keras/ops/signal.h).
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <numbers>
#include <vector>

#include "keras/ops/common.h"
#include "keras/ops/signal.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::signal {

namespace {

struct WindowName {
  const char* name;
  const char* canonical;
};
// scipy.signal.get_window's names (and its aliases) of the windows Osprey computes.
constexpr std::array<WindowName, 28> kWindows{{
    {"hann", "hann"},         {"han", "hann"},           {"hamming", "hamming"},   {"hamm", "hamming"},
    {"ham", "hamming"},       {"blackman", "blackman"},  {"black", "blackman"},    {"blk", "blackman"},
    {"bartlett", "bartlett"}, {"bart", "bartlett"},      {"brt", "bartlett"},      {"triang", "triang"},
    {"triangle", "triang"},   {"tri", "triang"},         {"boxcar", "boxcar"},     {"box", "boxcar"},
    {"ones", "boxcar"},       {"rect", "boxcar"},        {"rectangular", "boxcar"}, {"cosine", "cosine"},
    {"cos", "cosine"},        {"blackmanharris", "blackmanharris"}, {"blackharr", "blackmanharris"},
    {"bkh", "blackmanharris"}, {"nuttall", "nuttall"},   {"nutl", "nuttall"},      {"flattop", "flattop"},
    {"bohman", "bohman"},
}};

const char* canonical(const std::string& name) {
  for (const auto& w : kWindows) {
    if (name == w.name) return w.canonical;
  }
  return nullptr;
}

// scipy's general_cosine: Σ a_k cos(k·x), x spaced evenly over [-π, π].
std::vector<double> general_cosine(int64_t m, std::initializer_list<double> a) {
  std::vector<double> w(static_cast<std::size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    const double x = -std::numbers::pi + 2.0 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(m - 1);
    double v = 0.0;
    int k = 0;
    for (double c : a) v += c * std::cos(k++ * x);
    w[static_cast<std::size_t>(i)] = v;
  }
  return w;
}

// The symmetric window of m > 1 points.
std::vector<double> symmetric(const std::string& name, int64_t m) {
  const auto d = static_cast<double>(m);
  std::vector<double> w(static_cast<std::size_t>(m));
  if (name == "hann") return general_cosine(m, {0.5, 0.5});
  if (name == "hamming") return general_cosine(m, {0.54, 0.46});
  if (name == "blackman") return general_cosine(m, {0.42, 0.50, 0.08});
  if (name == "blackmanharris") return general_cosine(m, {0.35875, 0.48829, 0.14128, 0.01168});
  if (name == "nuttall") return general_cosine(m, {0.3635819, 0.4891775, 0.1365995, 0.0106411});
  if (name == "flattop") return general_cosine(m, {0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368});
  for (int64_t i = 0; i < m; ++i) {
    const auto n = static_cast<double>(i);
    double& v = w[static_cast<std::size_t>(i)];
    if (name == "boxcar") {
      v = 1.0;
    } else if (name == "cosine") {
      v = std::sin(std::numbers::pi / d * (n + 0.5));
    } else if (name == "bartlett") {
      v = n <= (d - 1.0) / 2.0 ? 2.0 * n / (d - 1.0) : 2.0 - 2.0 * n / (d - 1.0);
    } else if (name == "triang") {  // scipy: the rising half (2k-1)/m or 2k/(m+1), mirrored
      const int64_t k = std::min(i, m - 1 - i) + 1;
      v = m % 2 == 0 ? (2.0 * static_cast<double>(k) - 1.0) / d : 2.0 * static_cast<double>(k) / (d + 1.0);
    } else if (name == "bohman") {  // zero at both ends
      const double f = std::abs(-1.0 + 2.0 * n / (d - 1.0));
      v = (i == 0 || i == m - 1) ? 0.0
                                 : (1.0 - f) * std::cos(std::numbers::pi * f) + std::sin(std::numbers::pi * f) / std::numbers::pi;
    }
  }
  return w;
}

}  // namespace

std::vector<double> window(const std::string& name, int64_t n, bool periodic, const std::string& what) {
  const char* c = canonical(name);
  if (!c) {
    throw ValueError(fmt::format("{}: unknown window '{}'; Osprey computes hann, hamming, blackman, bartlett, "
                                 "triang, boxcar, cosine, blackmanharris, nuttall, flattop and bohman",
                                 what, name));
  }
  if (n < 1) throw ValueError(fmt::format("{}: a window needs at least one point; got {}", what, n));
  if (n == 1) return {1.0};
  if (!periodic) return symmetric(c, n);
  auto w = symmetric(c, n + 1);  // scipy's fftbins: one point more, the last dropped
  w.pop_back();
  return w;
}

}  // namespace osprey::keras::signal

namespace osprey::keras::ops {

namespace {

// The real DFT's tables for frames of fft_length, in `dtype`: forward {cos, -sin} (fft_length, bins), X_k = Σ_t
// x_t·e^(-2πi·t·k/N); inverse (bins, fft_length), TensorFlow's irfft: each bin weighted 2/N (the DC and Nyquist bins
// 1/N, whose imaginary parts then do not count).
template <typename T>
std::pair<Tensor, Tensor> dft_tables_as(int64_t fft_length, bool inverse) {
  const int64_t bins = fft_length / 2 + 1;
  std::vector<T> c(static_cast<std::size_t>(fft_length * bins)), s(c.size());
  for (int64_t t = 0; t < fft_length; ++t) {
    for (int64_t k = 0; k < bins; ++k) {
      const double a = 2.0 * std::numbers::pi * static_cast<double>((t * k) % fft_length) / static_cast<double>(fft_length);
      const double w = !inverse ? 1.0 : (k == 0 || 2 * k == fft_length ? 1.0 : 2.0) / static_cast<double>(fft_length);
      const auto at = static_cast<std::size_t>(inverse ? k * fft_length + t : t * bins + k);
      c[at] = static_cast<T>(w * std::cos(a));
      s[at] = static_cast<T>(-w * std::sin(a));
    }
  }
  const Shape shape = inverse ? Shape({bins, fft_length}) : Shape({fft_length, bins});
  return {Tensor::from_vector(c, shape), Tensor::from_vector(s, shape)};
}

std::pair<Tensor, Tensor> dft_tables(int64_t fft_length, bool inverse, const Tensor& like) {
  auto [c, s] = like.dtype() == DType::float64 ? dft_tables_as<double>(fft_length, inverse)
                                               : dft_tables_as<float>(fft_length, inverse);
  if (c.dtype() != like.dtype()) c = c.cast(like.dtype()), s = s.cast(like.dtype());
  return {detail::where_is(c, like), detail::where_is(s, like)};
}

void check_lengths(int64_t sequence_length, int64_t sequence_stride, int64_t fft_length, const char* op) {
  if (sequence_length < 1 || sequence_stride < 1 || fft_length < 2 || fft_length > signal::kMaxFftLength) {
    throw ValueError(fmt::format("{}: sequence_length and sequence_stride must be positive and fft_length in [2, {}] "
                                 "(Osprey's direct DFT); received sequence_length={}, sequence_stride={}, "
                                 "fft_length={}",
                                 op, signal::kMaxFftLength, sequence_length, sequence_stride, fft_length));
  }
  if (fft_length < sequence_length) {
    throw ValueError(fmt::format("`fft_length` must equal or larger than `sequence_length`. Received: "
                                 "sequence_length={}, fft_length={}",
                                 sequence_length, fft_length));
  }
}

// The window of sequence_length centred in fft_length (zeros on both sides), as a host vector; empty for none.
std::vector<double> padded_window(const StftWindow& window, int64_t sequence_length, int64_t fft_length,
                                  const char* op) {
  if (window.none()) return {};
  std::vector<double> w;
  if (window.values().defined()) {
    const Tensor& v = window.values();
    if (v.shape().rank() != 1 || v.shape()[0] != sequence_length) {
      throw ValueError(fmt::format("The shape of `window` must be equal to [sequence_length].Received: window shape={}",
                                   v.shape().to_string()));
    }
    w = v.cast(DType::float64).to_vector<double>();
  } else {
    if (window.name() != "hann" && window.name() != "hamming") {
      throw ValueError(fmt::format("If a string is passed to `window`, it must be one of `\"hann\"`, `\"hamming\"`. "
                                   "Received: window={}",
                                   window.name()));
    }
    w = signal::window(window.name(), sequence_length, true, op);
  }
  const int64_t l_pad = (fft_length - sequence_length) / 2;
  std::vector<double> out(static_cast<std::size_t>(fft_length), 0.0);
  std::copy(w.begin(), w.end(), out.begin() + l_pad);
  return out;
}

void check_float(const Tensor& x, const char* op) {
  if (x.dtype() != DType::float32 && x.dtype() != DType::float64) {
    throw InvalidArgumentError(fmt::format("{}: Invalid input type. Expected `float32` or `float64`. Received: input type={}", op,
                                dtype_name(x.dtype())));
  }
}

}  // namespace

std::pair<Tensor, Tensor> stft(const Tensor& x, int64_t sequence_length, int64_t sequence_stride, int64_t fft_length,
                               const StftWindow& window, bool center) {
  check_float(x, "stft");
  check_lengths(sequence_length, sequence_stride, fft_length, "stft");
  if (x.shape().rank() < 1) throw ValueError("stft: the signal must have at least one axis (samples)");
  Tensor s = x;
  const int64_t n = x.shape()[-1], half = fft_length / 2;
  if (center) {
    if (half >= n) {
      throw ValueError(fmt::format("stft: centring reflect-pads the signal by fft_length / 2 = {} samples on each "
                                   "side, which needs more than {} samples; received {}",
                                   half, half, n));
    }
    std::vector<std::pair<int64_t, int64_t>> widths(static_cast<std::size_t>(x.shape().rank()), {0, 0});
    widths.back() = {half, half};
    s = pad(s, widths, "reflect");
  }
  if (s.shape()[-1] < fft_length) {
    throw ValueError(fmt::format("stft: a frame is fft_length = {} samples; the {}signal has only {}", fft_length,
                                 center ? "padded " : "", s.shape()[-1]));
  }
  Tensor frames = extract_sequences(s, fft_length, sequence_stride);  // (..., frames, fft_length)
  const auto w = padded_window(window, sequence_length, fft_length, "stft");
  if (!w.empty()) {
    frames = multiply(frames, detail::where_is(Tensor::from_vector(w, Shape({fft_length})).cast(x.dtype()), x));
  }
  const auto [c, sn] = dft_tables(fft_length, false, x);
  return {matmul(frames, c), matmul(frames, sn)};
}

Tensor istft(const std::pair<Tensor, Tensor>& x, int64_t sequence_length, int64_t sequence_stride, int64_t fft_length,
             std::optional<int64_t> length, const StftWindow& window, bool center) {
  const auto& [re, im] = x;
  check_float(re, "istft");
  check_lengths(sequence_length, sequence_stride, fft_length, "istft");
  const int64_t bins = fft_length / 2 + 1;
  if (re.shape() != im.shape() || re.dtype() != im.dtype() || re.shape().rank() < 2 || re.shape()[-1] != bins) {
    throw ValueError(fmt::format("istft: the real and imaginary parts must be two tensors of one shape (..., frames, "
                                 "fft_length / 2 + 1 = {}) and dtype; received {} {} and {} {}",
                                 bins, re.shape().to_string(), dtype_name(re.dtype()), im.shape().to_string(),
                                 dtype_name(im.dtype())));
  }
  if (length && *length < 0) throw ValueError(fmt::format("istft: length must be >= 0; received {}", *length));
  const DType dt = re.dtype();
  const auto [ci, si] = dft_tables(fft_length, true, re);  // TensorFlow's irfft of each frame
  Tensor frames = add(matmul(re, ci), matmul(im, si));
  // inverse_stft_window_fn: the window over the sum of the squared windows that overlap at each position.
  auto w = padded_window(window, sequence_length, fft_length, "istft");
  if (!w.empty()) {
    const int64_t overlaps = (fft_length + sequence_stride - 1) / sequence_stride;
    std::vector<double> denom(static_cast<std::size_t>(sequence_stride), 0.0);
    for (int64_t i = 0; i < overlaps * sequence_stride; ++i) {
      const double v = i < fft_length ? w[static_cast<std::size_t>(i)] : 0.0;
      denom[static_cast<std::size_t>(i % sequence_stride)] += v * v;
    }
    for (int64_t i = 0; i < fft_length; ++i) {  // TensorFlow: zero where nothing overlaps
      const double d = denom[static_cast<std::size_t>(i % sequence_stride)];
      w[static_cast<std::size_t>(i)] = d == 0.0 ? 0.0 : w[static_cast<std::size_t>(i)] / d;
    }
    frames = multiply(frames, detail::where_is(Tensor::from_vector(w, Shape({fft_length})).cast(dt), re));
  }
  // Overlap-add (tf.signal.overlap_and_add): each frame cut into `segments` pieces of sequence_stride; a reshape
  // that shifts piece j of frame f to output piece f + j, then a sum over the pieces.
  const Shape& shape = frames.shape();
  const int64_t count = shape[-2], step = sequence_stride, segments = (fft_length + step - 1) / step;
  int64_t outer = 1;
  for (int a = 0; a + 2 < shape.rank(); ++a) outer *= shape[a];
  Tensor f = reshape(frames, {outer, count, fft_length});
  f = pad(f, {{0, 0}, {0, segments}, {0, segments * step - fft_length}});
  f = reshape(f, {outer, count + segments, segments, step});
  f = transpose(f, std::vector<int>{0, 2, 1, 3});
  f = reshape(f, {outer, (count + segments) * segments, step});
  f = slice(f, {0, 0, 0}, {outer, (count + segments - 1) * segments, step});
  f = sum(reshape(f, {outer, segments, count + segments - 1, step}), Axes(1));
  const int64_t total = (count - 1) * step + fft_length;
  f = slice(reshape(f, {outer, (count + segments - 1) * step}), {0, 0}, {outer, total});
  // Keras's cut: the centring padding off, or `length` samples.
  const int64_t start = center ? fft_length / 2 : 0;
  int64_t end = length ? start + *length : center ? total - fft_length / 2 : total;
  end = std::clamp<int64_t>(end, start, std::max(start, total));
  const int64_t kept = std::max<int64_t>(0, std::min(end, total) - std::min(start, total));
  f = slice(f, {0, std::min(start, total)}, {outer, kept});
  std::vector<int64_t> out_shape(shape.dims().begin(), shape.dims().end() - 2);
  out_shape.push_back(kept);
  return reshape(f, out_shape);
}

}  // namespace osprey::keras::ops
