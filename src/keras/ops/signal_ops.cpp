// keras.ops.fft, fft2, ifft2, rfft and irfft (osprey::ops's FFTs along the last axis, with Keras's checks, cropping
// and padding), and stft and istft as Keras's TensorFlow backend computes them (tf.signal.stft / inverse_stft):
// frames of the (reflect-padded) signal times the window, then the rfft of each; back by the irfft of each frame,
// TensorFlow's inverse_stft_window_fn and overlap-add. Compositions of Osprey's ops, so they run on the signal's
// device and are differentiable. Also the windows (scipy.signal's formulas) the audio layers share
// (keras/ops/signal.h).
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

void check_lengths(int64_t sequence_length, int64_t sequence_stride, int64_t fft_length, const char* op) {
  if (sequence_length < 1 || sequence_stride < 1 || fft_length < 2 || fft_length > signal::kMaxTransformLength) {
    throw ValueError(fmt::format("{}: sequence_length and sequence_stride must be positive and fft_length in [2, {}]; "
                                 "received sequence_length={}, sequence_stride={}, fft_length={}",
                                 op, signal::kMaxTransformLength, sequence_length, sequence_stride, fft_length));
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

// Keras's checks of a {real, imag} pair: one shape, float parts, at least `rank` axes.
void check_parts(const ComplexParts& x, int rank) {
  const auto& [re, im] = x;
  if (re.shape() != im.shape()) {
    throw ValueError(fmt::format("Input `x` should be a tuple of two tensors - real and imaginary.Both the real and "
                                 "imaginary parts should have the same shape. Received: x[0].shape = {}, x[1].shape = {}",
                                 re.shape().to_string(), im.shape().to_string()));
  }
  if (!is_floating(re.dtype()) || !is_floating(im.dtype())) {
    throw ValueError(fmt::format("At least one tensor in input `x` is not of type float.Received: x=({}, {}) tensors",
                                 dtype_name(re.dtype()), dtype_name(im.dtype())));
  }
  if (re.shape().rank() < rank) {
    throw ValueError(fmt::format("Input should have rank >= {}. Received: input.shape = {}", rank, re.shape().to_string()));
  }
  if (re.dtype() != im.dtype() || (re.dtype() != DType::float32 && re.dtype() != DType::float64)) {
    throw InvalidArgumentError(fmt::format("The `real` and `imag` components have incorrect types: {} {}. They must be "
                                           "consistent, and one of [float32, float64]",
                                           dtype_name(re.dtype()), dtype_name(im.dtype())));
  }
}

// x with its last axis cropped or zero-padded to `length`.
Tensor fit_last_axis(const Tensor& x, int64_t length) {
  const Shape& s = x.shape();
  const int64_t have = s[-1];
  if (have == length) return x;
  if (have > length) {
    std::vector<int64_t> begin(static_cast<std::size_t>(s.rank()), 0), size(s.dims().begin(), s.dims().end());
    size.back() = length;
    return slice(x, begin, size);
  }
  std::vector<std::pair<int64_t, int64_t>> widths(static_cast<std::size_t>(s.rank()), {0, 0});
  widths.back() = {0, length - have};
  return pad(x, widths);
}

// The last two axes swapped.
Tensor swap_last(const Tensor& x) {
  const int r = x.shape().rank();
  std::vector<int> perm(static_cast<std::size_t>(r));
  for (int i = 0; i < r; ++i) perm[static_cast<std::size_t>(i)] = i;
  std::swap(perm[static_cast<std::size_t>(r - 1)], perm[static_cast<std::size_t>(r - 2)]);
  return transpose(x, perm);
}

ComplexParts fft_2d(const ComplexParts& x, bool inverse) {
  check_parts(x, 2);
  auto [r1, i1] = osprey::ops::fft(x.first, x.second, inverse);  // along the last axis
  auto [r2, i2] = osprey::ops::fft(swap_last(r1), swap_last(i1), inverse);  // along the one before it
  return {swap_last(r2), swap_last(i2)};
}

}  // namespace

ComplexParts fft(const ComplexParts& x) {
  check_parts(x, 1);
  return osprey::ops::fft(x.first, x.second, false);
}

ComplexParts fft2(const ComplexParts& x) { return fft_2d(x, false); }

ComplexParts ifft2(const ComplexParts& x) { return fft_2d(x, true); }

ComplexParts rfft(const Tensor& x, std::optional<int64_t> fft_length) {
  if (x.shape().rank() < 1) {
    throw ValueError(fmt::format("Input should have rank >= 1. Received: input.shape = {}", x.shape().to_string()));
  }
  const int64_t n = fft_length.value_or(x.shape()[-1]);
  if (n < 1 || n > signal::kMaxTransformLength) {
    throw ValueError(fmt::format("rfft: fft_length must be in [1, {}]; received {}", signal::kMaxTransformLength, n));
  }
  // Keras converts integer signals to floatx
  const Tensor f = is_floating(x.dtype()) ? x : osprey::ops::cast(x, DType::float32);
  if (f.dtype() != DType::float32 && f.dtype() != DType::float64) {
    throw InvalidArgumentError(fmt::format("rfft: float32 or float64 signals (TensorFlow's RFFT); received {}",
                                           dtype_name(f.dtype())));
  }
  return osprey::ops::rfft(fit_last_axis(f, n));
}

Tensor irfft(const ComplexParts& x, std::optional<int64_t> fft_length) {
  check_parts(x, 1);
  const int64_t bins = x.first.shape()[-1];
  const int64_t n = fft_length.value_or(2 * (bins - 1));
  if (n < 0 || n > signal::kMaxTransformLength) {
    throw ValueError(fmt::format("irfft: fft_length must be in [0, {}]; received {} (bins: {})",
                                 signal::kMaxTransformLength, n, bins));
  }
  if (n == 0) return Tensor::zeros(x.first.shape().with_dim(x.first.shape().rank() - 1, 0), x.first.dtype());
  return osprey::ops::irfft(fit_last_axis(x.first, n / 2 + 1), fit_last_axis(x.second, n / 2 + 1), n);
}

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
  return osprey::ops::rfft(frames);
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
  Tensor frames = osprey::ops::irfft(re, im, fft_length);  // TensorFlow's irfft of each frame
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
  const Shape& shape = frames.shape();
  int64_t outer = 1;
  for (int a = 0; a + 2 < shape.rank(); ++a) outer *= shape[a];
  Tensor f = osprey::ops::overlap_add(frames, sequence_stride);  // tf.signal.overlap_and_add
  const int64_t total = f.shape()[-1];
  f = reshape(f, {outer, total});
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
