// keras.ops.fft, fft2, ifft2, rfft and irfft against Keras 3.15 on TensorFlow (tests/keras/keras_fft_reference.py
// regenerates tests/data/keras_fft.json): values and gradients over power-of-two lengths and the others (Bluestein),
// float64, rfft's and irfft's cropping and padding (their gradients there against a direct DFT: TensorFlow's are
// wrong there), round trips, Keras's rejections.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <tuple>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"
#include "osprey/random.h"

using namespace osprey;
using nlohmann::json;
namespace kops = osprey::keras::ops;

namespace {

const json& fft_reference() {
  static const json ref = osprey::testing::read_reference("keras_fft.json");
  return ref;
}

// A reference list as a tensor of the case's dtype ("float32" or "float64").
Tensor tensor_as(const json& j, const std::string& dtype) {
  return osprey::testing::tensor_of(j, dtype == "float64" ? DType::float64 : DType::float32);
}

std::vector<double> values_of(const Tensor& t) { return t.cast(DType::float64).to_vector<double>(); }

// Every value within tol times the largest magnitude of the reference tensor (at least 1): an FFT's rounding error
// scales with the whole row's size, not with each value's.
void expect_close(const Tensor& got, const std::vector<double>& want, const Shape& shape, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.shape(), shape) << what;
  const auto g = values_of(got);
  double scale = 1.0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], tol * scale) << what << " [" << i << "]";
  }
}
void expect_close(const Tensor& got, const json& want, const std::string& dtype, const std::string& what) {
  const Tensor w = tensor_as(want, dtype);
  expect_close(got, values_of(w), w.shape(), dtype == "float64" ? 1e-11 : 2e-6, what);
}

// The sum of every value, in x's dtype (ops::reduce_sum gives float32).
Tensor total(const Tensor& x) { return ops::reduce_axes(x, ops::ReduceOp::sum, {}); }

Tensor weighted_sum(const Tensor& y, const json& w, const std::string& dtype) {
  return total(ops::mul(y, tensor_as(w, dtype)));
}

void check_complex_cases(const char* key, const std::function<kops::ComplexParts(const kops::ComplexParts&)>& op) {
  for (const json& c : fft_reference().at(key)) {
    const std::string dt = c.at("dtype");
    const Tensor re = tensor_as(c.at("real"), dt), im = tensor_as(c.at("imag"), dt);
    const std::string what = std::string(key) + " " + re.shape().to_string() + " " + dt;
    GradientTape tape;
    tape.watch(re);
    tape.watch(im);
    const auto [yr, yi] = op({re, im});
    EXPECT_EQ(yr.dtype(), re.dtype()) << what;
    expect_close(yr, c.at("out_real"), dt, what + " real");
    expect_close(yi, c.at("out_imag"), dt, what + " imag");
    const Tensor loss = ops::add(weighted_sum(yr, c.at("w_real"), dt), weighted_sum(yi, c.at("w_imag"), dt));
    const auto g = tape.gradient(loss, std::vector<Tensor>{re, im});
    expect_close(g[0], c.at("grad_real"), dt, what + " d real");
    expect_close(g[1], c.at("grad_imag"), dt, what + " d imag");
  }
}

// Rows of the last axis of a (..., len) tensor as doubles.
std::vector<std::vector<double>> rows_of(const Tensor& t) {
  const auto v = values_of(t);
  const int64_t len = t.shape()[-1];
  std::vector<std::vector<double>> rows;
  for (std::size_t i = 0; len > 0 && i < v.size(); i += static_cast<std::size_t>(len)) {
    rows.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(i), v.begin() + static_cast<std::ptrdiff_t>(i + len));
  }
  return rows;
}

Tensor noise(const Shape& shape, uint64_t seed) {
  random::set_seed(seed);
  return random::normal(shape);
}

double angle(int64_t t, int64_t k, int64_t n) {
  return 2.0 * std::numbers::pi * static_cast<double>((t * k) % n) / static_cast<double>(n);
}

}  // namespace

TEST(KerasFft, FftMatchesKerasWithGradients) { check_complex_cases("fft", kops::fft); }

TEST(KerasFft, Fft2AndIfft2MatchKerasWithGradients) {
  check_complex_cases("fft2", kops::fft2);
  check_complex_cases("ifft2", kops::ifft2);
}

TEST(KerasFft, RfftMatchesKerasCroppingAndPadding) {
  for (const json& c : fft_reference().at("rfft")) {
    const std::string dt = c.at("dtype");
    const Tensor x = tensor_as(c.at("x"), dt);
    const std::optional<int64_t> len = c.at("fft_length").is_null() ? std::nullopt
                                                                     : std::optional(c.at("fft_length").get<int64_t>());
    const int64_t n = len.value_or(x.shape()[-1]);
    const std::string what = "rfft " + x.shape().to_string() + " n=" + std::to_string(n) + " " + dt;
    GradientTape tape;
    tape.watch(x);
    const auto [yr, yi] = kops::rfft(x, len);
    expect_close(yr, c.at("out_real"), dt, what + " real");
    expect_close(yi, c.at("out_imag"), dt, what + " imag");
    const Tensor wr = tensor_as(c.at("w_real"), dt), wi = tensor_as(c.at("w_imag"), dt);
    const Tensor loss = ops::add(total(ops::mul(yr, wr)), total(ops::mul(yi, wi)));
    const Tensor g = tape.gradient(loss, std::vector<Tensor>{x})[0];
    if (!c.at("grad").is_null()) {
      expect_close(g, c.at("grad"), dt, what + " gradient");
      continue;
    }
    // Cropped: d x_t = Σ_k wr_k·cos(2πtk/n) - wi_k·sin(2πtk/n) for t < n, zero for the samples cropped away.
    const auto wrr = rows_of(wr), wir = rows_of(wi);
    const int64_t samples = x.shape()[-1], bins = n / 2 + 1;
    std::vector<double> want;
    for (std::size_t r = 0; r < wrr.size(); ++r) {
      for (int64_t t = 0; t < samples; ++t) {
        double v = 0.0;
        for (int64_t k = 0; t < n && k < bins; ++k) {
          v += wrr[r][static_cast<std::size_t>(k)] * std::cos(angle(t, k, n)) -
               wir[r][static_cast<std::size_t>(k)] * std::sin(angle(t, k, n));
        }
        want.push_back(v);
      }
    }
    expect_close(g, want, x.shape(), 2e-6, what + " gradient (direct DFT)");
  }
}

TEST(KerasFft, IrfftMatchesKerasCroppingAndPadding) {
  for (const json& c : fft_reference().at("irfft")) {
    const std::string dt = c.at("dtype");
    const Tensor re = tensor_as(c.at("real"), dt), im = tensor_as(c.at("imag"), dt);
    const std::optional<int64_t> len = c.at("fft_length").is_null() ? std::nullopt
                                                                     : std::optional(c.at("fft_length").get<int64_t>());
    const int64_t n = len.value_or(2 * (re.shape()[-1] - 1));
    const std::string what = "irfft " + re.shape().to_string() + " n=" + std::to_string(n) + " " + dt;
    GradientTape tape;
    tape.watch(re);
    tape.watch(im);
    const Tensor y = kops::irfft({re, im}, len);
    expect_close(y, c.at("out"), dt, what);
    const Tensor w = tensor_as(c.at("w"), dt);
    const auto g = tape.gradient(total(ops::mul(y, w)), std::vector<Tensor>{re, im});
    if (!c.at("grad_real").is_null()) {
      expect_close(g[0], c.at("grad_real"), dt, what + " d real");
      expect_close(g[1], c.at("grad_imag"), dt, what + " d imag");
      continue;
    }
    // Cropped bins: dRe X_k = (c_k/n)·Σ_t w_t·cos(2πtk/n), dIm X_k = -(c'_k/n)·Σ_t w_t·sin(2πtk/n) for the kept
    // bins (c = 1 at bins 0 and n/2, else 2; c' = 0 there), zero for the bins cropped away.
    const auto wr = rows_of(w);
    const int64_t given = re.shape()[-1], kept = n / 2 + 1;
    std::vector<double> want_r, want_i;
    for (const auto& row : wr) {
      for (int64_t k = 0; k < given; ++k) {
        double cs = 0.0, sn = 0.0;
        for (int64_t t = 0; k < kept && t < n; ++t) {
          cs += row[static_cast<std::size_t>(t)] * std::cos(angle(t, k, n));
          sn += row[static_cast<std::size_t>(t)] * std::sin(angle(t, k, n));
        }
        const bool edge = k == 0 || 2 * k == n;
        want_r.push_back((edge ? 1.0 : 2.0) * cs / static_cast<double>(n));
        want_i.push_back(edge ? 0.0 : -2.0 * sn / static_cast<double>(n));
      }
    }
    expect_close(g[0], want_r, re.shape(), 2e-6, what + " d real (direct DFT)");
    expect_close(g[1], want_i, im.shape(), 2e-6, what + " d imag (direct DFT)");
  }
}

TEST(KerasFft, KerasDocstringExample) {
  const auto [re, im] = kops::rfft(Tensor::from_vector<float>({0, 1, 2, 3, 4}, Shape({5})));
  const json& doc = fft_reference().at("doc_rfft");
  expect_close(re, doc[0], "float32", "rfft(0..4) real");
  expect_close(im, doc[1], "float32", "rfft(0..4) imag");
  // Integer signals compute in float32, as Keras converts them.
  const auto [ri, ii] = kops::rfft(Tensor::from_vector<int32_t>({0, 1, 2, 3, 4}, Shape({5})));
  EXPECT_EQ(ri.dtype(), DType::float32);
  expect_close(ri, doc[0], "float32", "rfft of int32");
}

TEST(KerasFft, RoundTripsAndFloat64AgainstADirectDft) {
  for (int64_t n : {1, 2, 3, 5, 16, 17, 100, 127, 1000, 4096}) {
    const std::string what = "n=" + std::to_string(n);
    const Tensor x = noise(Shape({3, n}), 7);
    const Tensor y = noise(Shape({3, n}), 8);
    const auto [fr, fi] = ops::fft(x, y);
    const auto [br, bi] = ops::fft(fr, fi, true);
    expect_close(br, values_of(x), x.shape(), 2e-6, what + " ifft(fft) real");
    expect_close(bi, values_of(y), y.shape(), 2e-6, what + " ifft(fft) imag");
    const Tensor back = kops::irfft(kops::rfft(x), n);
    expect_close(back, values_of(x), x.shape(), 2e-6, what + " irfft(rfft)");
    // float64 against the DFT's definition, summed in double.
    const Tensor x64 = x.cast(DType::float64), y64 = y.cast(DType::float64);
    const auto [dr, di] = ops::fft(x64, y64);
    EXPECT_EQ(dr.dtype(), DType::float64);
    const auto xr = rows_of(x64), yr = rows_of(y64);
    std::vector<double> want_r, want_i;
    for (std::size_t r = 0; r < xr.size(); ++r) {
      for (int64_t k = 0; k < n; ++k) {
        double sr = 0.0, si = 0.0;
        for (int64_t t = 0; t < n; ++t) {
          const double a = angle(t, k, n), c = std::cos(a), s = std::sin(a);
          const double u = xr[r][static_cast<std::size_t>(t)], v = yr[r][static_cast<std::size_t>(t)];
          sr += u * c + v * s, si += v * c - u * s;
        }
        want_r.push_back(sr), want_i.push_back(si);
      }
    }
    expect_close(dr, want_r, x.shape(), 1e-12, what + " float64 real");
    expect_close(di, want_i, x.shape(), 1e-12, what + " float64 imag");
  }
}

TEST(KerasFft, EmptyAndMultiAxisShapes) {
  const auto [er, ei] = kops::fft({Tensor::zeros(Shape({2, 0})), Tensor::zeros(Shape({2, 0}))});
  EXPECT_EQ(er.shape(), Shape({2, 0}));
  EXPECT_EQ(ei.shape(), Shape({2, 0}));
  const auto [zr, zi] = kops::fft({Tensor::zeros(Shape({0, 4})), Tensor::zeros(Shape({0, 4}))});
  EXPECT_EQ(zr.shape(), Shape({0, 4}));
  EXPECT_EQ(kops::irfft({Tensor::ones(Shape({3, 1})), Tensor::ones(Shape({3, 1}))}).shape(), Shape({3, 0}));
  // A batch of 37 rows (more than a SIMD block of lanes, not a multiple of it) equals each row alone.
  const Tensor x = noise(Shape({37, 24}), 3);
  const auto [all_r, all_i] = kops::rfft(x);
  for (int64_t r : {0, 15, 16, 36}) {
    const auto [one_r, one_i] = kops::rfft(kops::slice(x, {r, 0}, {1, 24}));
    EXPECT_EQ(values_of(kops::slice(all_r, {r, 0}, {1, 13})), values_of(one_r)) << r;
    EXPECT_EQ(values_of(kops::slice(all_i, {r, 0}, {1, 13})), values_of(one_i)) << r;
  }
}

TEST(KerasFft, RejectsWhatKerasRejects) {
  const Tensor a = Tensor::zeros(Shape({2, 8})), b = Tensor::zeros(Shape({2, 7}));
  EXPECT_THROW(kops::fft({a, b}), ValueError);  // parts of different shapes
  EXPECT_THROW(kops::fft({a.cast(DType::int32), a.cast(DType::int32)}), ValueError);  // not floats
  EXPECT_THROW(kops::fft({Tensor::scalar(1.0), Tensor::scalar(1.0)}), ValueError);   // rank 0
  EXPECT_THROW(kops::fft({a.cast(DType::float16), a.cast(DType::float16)}), InvalidArgumentError);
  EXPECT_THROW(kops::fft({a, a.cast(DType::float64)}), InvalidArgumentError);  // mixed float dtypes
  EXPECT_THROW(kops::fft2({Tensor::zeros(Shape({8})), Tensor::zeros(Shape({8}))}), ValueError);  // rank < 2
  EXPECT_THROW(kops::rfft(Tensor::scalar(1.0)), ValueError);
  EXPECT_THROW(kops::rfft(a, 0), ValueError);
  EXPECT_THROW(kops::rfft(a.cast(DType::bfloat16)), InvalidArgumentError);
  EXPECT_THROW(kops::irfft({a, a}, -2), ValueError);
  // The ops themselves: the bins must match the length.
  EXPECT_THROW(ops::irfft(a, a, 8), InvalidArgumentError);  // 8 takes 5 bins
  EXPECT_THROW(ops::rfft(Tensor::zeros(Shape({2, 0}))), InvalidArgumentError);
  try {
    kops::fft({a, b});
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 8)"), std::string::npos) << e.what();
  }
}

// extract_sequences (ops::frames, a strided copy) and its gradient, which adds the frames back where they overlap:
// steps that divide the frame length, that do not, and that skip samples; against the definition.
TEST(KerasFft, ExtractSequencesAndItsGradientFollowTheDefinition) {
  for (auto [n, len, step] : {std::tuple{50, 8, 4}, {50, 8, 3}, {50, 5, 7}, {9, 9, 1}, {31, 1, 2}, {40, 16, 5}}) {
    const std::string what = "n=" + std::to_string(n) + " length=" + std::to_string(len) + " step=" + std::to_string(step);
    const Tensor x = noise(Shape({2, 3, n}), 11);
    GradientTape tape;
    tape.watch(x);
    const Tensor f = kops::extract_sequences(x, len, step);
    const int64_t count = 1 + (n - len) / step;
    ASSERT_EQ(f.shape(), Shape({2, 3, count, len})) << what;
    const Tensor w = noise(f.shape(), 12);
    const Tensor g = tape.gradient(total(ops::mul(f, w)), std::vector<Tensor>{x})[0];
    const auto xv = values_of(x), fv = values_of(f), wv = values_of(w), gv = values_of(g);
    std::vector<double> want(xv.size(), 0.0);
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t c = 0; c < count; ++c) {
        for (int64_t k = 0; k < len; ++k) {
          const auto at = static_cast<std::size_t>((r * count + c) * len + k), src = static_cast<std::size_t>(r * n + c * step + k);
          ASSERT_EQ(fv[at], xv[src]) << what;
          want[src] += wv[at];
        }
      }
    }
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(gv[i], want[i], 1e-5) << what << " [" << i << "]";
  }
  EXPECT_THROW(kops::extract_sequences(Tensor::zeros(Shape({2, 5})), 6, 1), ValueError);
  EXPECT_THROW(ops::frames(Tensor::zeros(Shape({2, 5})), 2, 0), InvalidArgumentError);
}
