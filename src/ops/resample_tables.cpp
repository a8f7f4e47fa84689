// The resampling tables of tf.image.resize's methods (TensorFlow's ResizeBicubic, ResizeArea and ScaleAndTranslate
// kernels: their scales, sample positions, kernels and normalizations in float32 as they compute them) and of
// keras.ops.image.scale_and_translate (the op applying one along an axis: conv_ops.cpp).
#include "ops/resample_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "osprey/errors.h"

namespace osprey::ops {

namespace detail {

namespace {

// Every output's inputs and weights, flat: each output's taps added in increasing input order (a repeated index,
// an edge pixel read twice, adds to its weight), then laid out as the table's fixed-width spans. About 12 bytes a
// tap, so a table costs what it holds.
class TapLists {
 public:
  explicit TapLists(int64_t in) : in_(in) {}
  /// Starts the next output's list (call once per output, in order).
  void next() { begin_.push_back(index_.size()); }
  void add(int64_t i, float w) {
    if (index_.size() > begin_.back() && index_.back() == i) {
      weight_.back() += w;
    } else {
      index_.push_back(i);
      weight_.push_back(w);
    }
  }

  ResampleTable table() const {
    ResampleTable t;
    t.in = in_;
    t.out = static_cast<int64_t>(begin_.size());
    for (std::size_t o = 0; o < begin_.size(); ++o) {
      if (end(o) > begin_[o]) t.span = std::max(t.span, index_[end(o) - 1] - index_[begin_[o]] + 1);
    }
    t.starts.assign(static_cast<std::size_t>(t.out), 0);
    t.weights.assign(static_cast<std::size_t>(t.out * t.span), 0.f);
    for (std::size_t o = 0; o < begin_.size(); ++o) {
      if (end(o) == begin_[o]) continue;
      // Runs end within the axis: a run near its end starts earlier (weights 0 before its first tap).
      const int64_t start = std::min(index_[begin_[o]], std::max<int64_t>(in_ - t.span, 0));
      t.starts[o] = start;
      for (std::size_t k = begin_[o]; k < end(o); ++k) {
        t.weights[o * static_cast<std::size_t>(t.span) + static_cast<std::size_t>(index_[k] - start)] = weight_[k];
      }
    }
    return t;
  }

 private:
  std::size_t end(std::size_t o) const { return o + 1 < begin_.size() ? begin_[o + 1] : index_.size(); }
  int64_t in_;
  std::vector<std::size_t> begin_;
  std::vector<int64_t> index_;
  std::vector<float> weight_;
};

// TensorFlow's ResizeBicubic coefficient table (1024 steps of Keys' cubic with a = -0.5, built as its
// InitCoeffsTable: a float position, the polynomial in double, stored as float).
const std::array<float, 2050>& keys_table() {
  static const std::array<float, 2050> table = [] {
    std::array<float, 2050> c{};
    const double a = -0.5;
    for (int i = 0; i <= 1024; ++i) {
      float x = static_cast<float>(i * 1.0 / 1024);
      c[static_cast<std::size_t>(i * 2)] = static_cast<float>(((a + 2) * x - (a + 3)) * x * x + 1);
      x += 1.0f;
      c[static_cast<std::size_t>(i * 2 + 1)] = static_cast<float>(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
    }
    return c;
  }();
  return table;
}

ResampleTable bicubic_table(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const auto& c = keys_table();
  TapLists taps(in);
  for (int64_t o = 0; o < out; ++o) {
    taps.next();
    const float loc_f = (static_cast<float>(o) + 0.5f) * scale - 0.5f;
    const auto loc = static_cast<int64_t>(std::floor(loc_f));
    const auto offset = static_cast<std::size_t>(lrintf((loc_f - static_cast<float>(loc)) * 1024));
    const std::array<float, 4> w{c[offset * 2 + 1], c[offset * 2], c[(1024 - offset) * 2], c[(1024 - offset) * 2 + 1]};
    std::array<float, 4> kept{};
    float sum = 0.f;
    for (int j = 0; j < 4; ++j) {
      const int64_t i = loc - 1 + j;
      kept[static_cast<std::size_t>(j)] = i >= 0 && i < in ? w[static_cast<std::size_t>(j)] : 0.f;
      sum += kept[static_cast<std::size_t>(j)];
    }
    const bool normalize = std::abs(sum) >= 1000.0f * std::numeric_limits<float>::min();
    const float inv = normalize ? 1.0f / sum : 1.0f;
    for (int j = 0; j < 4; ++j) {
      const int64_t i = loc - 1 + j;
      if (i >= 0 && i < in) taps.add(i, kept[static_cast<std::size_t>(j)] * inv);
    }
  }
  return taps.table();
}

// ResizeArea: output o covers inputs [o * scale, (o + 1) * scale), each input weighted by the part of it covered,
// the sum divided by scale (out-of-range indices read the edge, as its Bound).
ResampleTable area_table(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float inv = 1.0f / scale;
  TapLists taps(in);
  for (int64_t o = 0; o < out; ++o) {
    taps.next();
    const float lo = static_cast<float>(o) * scale, hi = static_cast<float>(o + 1) * scale;
    const auto start = static_cast<int64_t>(std::floor(lo)), end = static_cast<int64_t>(std::ceil(hi));
    for (int64_t i = start; i < end; ++i) {
      const auto fi = static_cast<float>(i);
      const float part = fi < lo ? (fi + 1 > hi ? scale : fi + 1 - lo) : (fi + 1 > hi ? hi - fi : 1.0f);
      taps.add(std::clamp<int64_t>(i, 0, in - 1), part * inv);
    }
  }
  return taps.table();
}

struct Kernel {
  SamplingKernel kind;
  float radius() const {
    switch (kind) {
      case SamplingKernel::box:
      case SamplingKernel::triangle:
      case SamplingKernel::lanczos1: return 1.f;
      case SamplingKernel::keyscubic:
      case SamplingKernel::mitchellcubic: return 2.f;
      case SamplingKernel::lanczos3: return 3.f;
      case SamplingKernel::lanczos5: return 5.f;
      case SamplingKernel::gaussian: return 1.5f;
    }
    return 1.f;
  }
  // TensorFlow's sampling_kernels.h functions (float arithmetic as there).
  float operator()(float x) const {
    x = std::abs(x);
    switch (kind) {
      case SamplingKernel::box: return x < 0.5f ? 1.f : x == 0.5f ? 0.5f : 0.f;
      case SamplingKernel::triangle: return x < 1.f ? 1.f - x : 0.f;
      case SamplingKernel::keyscubic:
        if (x >= 2.f) return 0.f;
        if (x >= 1.f) return ((-0.5f * x + 2.5f) * x - 4.0f) * x + 2.0f;
        return ((1.5f * x - 2.5f) * x) * x + 1.0f;
      case SamplingKernel::mitchellcubic:
        if (x >= 2.f) return 0.f;
        if (x >= 1.f) return (((-7.0f / 18.0f) * x + 2.0f) * x - 10.0f / 3.0f) * x + 16.0f / 9.0f;
        return (((7.0f / 6.0f) * x - 2.0f) * x) * x + 8.0f / 9.0f;
      case SamplingKernel::gaussian: {
        const float sigma = 1.5f / 3.0f;
        if (x >= 1.5f) return 0.f;
        return static_cast<float>(std::exp(-x * x / (2.0 * sigma * sigma)));
      }
      case SamplingKernel::lanczos1:
      case SamplingKernel::lanczos3:
      case SamplingKernel::lanczos5: {
        constexpr float kPi = 3.14159265359f;
        const float r = radius();
        if (x > r) return 0.f;
        if (x <= 1e-3f) return 1.f;
        return r * std::sin(kPi * x) * std::sin(kPi * x / r) / (kPi * kPi * x * x);
      }
    }
    return 0.f;
  }
};

// A position (any size: a tiny scale widens an antialiasing kernel past the int64 range) as an index in [0, in).
int64_t clamped(double position, int64_t in) {
  if (!(position >= 0.0)) return 0;  // below the axis, or NaN
  return static_cast<int64_t>(std::min(position, static_cast<double>(in - 1)));
}

void check_scale(float scale, float translation) {
  if (!(scale > 0.f) || !std::isfinite(scale) || !std::isfinite(translation)) {
    throw InvalidArgumentError(fmt::format("scale_and_translate: the scale must be positive and finite and the "
                                           "translation finite; got scale {} and translation {}",
                                           scale, translation));
  }
}

}  // namespace

ResampleTable scale_translate_table(SamplingKernel kind, bool antialias, int64_t in, int64_t out, float scale,
                                    float translation) {
  check_scale(scale, translation);
  const Kernel kernel{kind};
  const auto inv_scale = static_cast<float>(1.0 / scale);
  const float inv_translate = -inv_scale * translation;
  const float kernel_scale = antialias ? std::max(inv_scale, 1.0f) : 1.0f;
  const float one_over_kernel_scale = 1.0f / kernel_scale;
  TapLists taps(in);
  std::vector<float> w;
  for (int64_t o = 0; o < out; ++o) {
    taps.next();
    const float sample = (static_cast<float>(o) + 0.5f) * inv_scale + inv_translate;
    if (!(sample >= 0 && sample <= static_cast<float>(in))) continue;  // outside the image (or NaN: a huge 1/scale)
    const int64_t lo = clamped(std::ceil(sample - kernel.radius() * kernel_scale - 0.5f), in);
    const int64_t hi = clamped(std::floor(sample + kernel.radius() * kernel_scale - 0.5f), in) + 1;
    w.clear();
    float sum = 0.f;
    for (int64_t i = lo; i < hi; ++i) {
      w.push_back(kernel(std::abs((static_cast<float>(i) + 0.5f - sample) * one_over_kernel_scale)));
      sum += w.back();
    }
    if (std::abs(sum) < 1000.0f * std::numeric_limits<float>::min()) continue;  // all zeros, as TensorFlow
    const float inv = 1.0f / sum;
    for (int64_t i = lo; i < hi; ++i) taps.add(i, w[static_cast<std::size_t>(i - lo)] * inv);
  }
  return taps.table();
}

ResampleTable keras_scale_translate_table(SamplingKernel kind, bool antialias, int64_t in, int64_t out, float scale,
                                          float translation) {
  check_scale(scale, translation);
  const Kernel kernel{kind};
  const float inv_scale = 1.0f / scale;
  const float kernel_scale = antialias ? std::max(inv_scale, 1.0f) : 1.0f;
  // Keras weighs every input; outside the kernel's radius (plus one) the weights are 0, so only those are visited.
  const double reach = static_cast<double>(kernel.radius()) * kernel_scale + 1.0;
  TapLists taps(in);
  std::vector<float> w;
  for (int64_t o = 0; o < out; ++o) {
    taps.next();
    const float sample = (static_cast<float>(o) + 0.5f) * inv_scale - translation * inv_scale - 0.5f;
    if (!(sample >= -0.5f && sample <= static_cast<float>(in) - 0.5f)) continue;
    const int64_t lo = clamped(std::floor(sample - reach), in), hi = clamped(std::ceil(sample + reach), in);
    w.clear();
    float sum = 0.f;
    for (int64_t i = lo; i <= hi; ++i) {
      w.push_back(kernel(std::abs(sample - static_cast<float>(i)) / kernel_scale));
      sum += w.back();
    }
    if (!(std::abs(sum) > 1000.0f * std::numeric_limits<float>::epsilon())) continue;
    for (int64_t i = lo; i <= hi; ++i) {
      if (w[static_cast<std::size_t>(i - lo)] != 0.f) taps.add(i, w[static_cast<std::size_t>(i - lo)] / sum);
    }
  }
  return taps.table();
}

ResampleTable resize_table(ResizeMethod method, bool antialias, int64_t in, int64_t out) {
  if (method == ResizeMethod::area) return area_table(in, out);
  if (method == ResizeMethod::bicubic && !antialias) return bicubic_table(in, out);
  // The rest through ScaleAndTranslate, as tf.image.resize (bilinear and bicubic only with antialias).
  SamplingKernel kernel = SamplingKernel::triangle;
  switch (method) {
    case ResizeMethod::bilinear: kernel = SamplingKernel::triangle; break;
    case ResizeMethod::bicubic: kernel = SamplingKernel::keyscubic; break;
    case ResizeMethod::lanczos3: kernel = SamplingKernel::lanczos3; break;
    case ResizeMethod::lanczos5: kernel = SamplingKernel::lanczos5; break;
    case ResizeMethod::gaussian: kernel = SamplingKernel::gaussian; break;
    case ResizeMethod::mitchellcubic: kernel = SamplingKernel::mitchellcubic; break;
    case ResizeMethod::area:
    case ResizeMethod::nearest: throw InternalError("resize_table: nearest resizing has no table (resize_taps.h)");
  }
  return scale_translate_table(kernel, antialias, in, out, static_cast<float>(out) / static_cast<float>(in), 0.f);
}

ResampleTable transpose(const ResampleTable& t) {
  // Which outputs read each input (a counting sort by input, outputs in increasing order within each).
  std::vector<std::size_t> first(static_cast<std::size_t>(t.in) + 1, 0);
  auto taps_of = [&](int64_t o) { return std::min(t.span, t.in - t.starts[static_cast<std::size_t>(o)]); };
  for (int64_t o = 0; o < t.out; ++o) {
    for (int64_t j = 0; j < taps_of(o); ++j) {
      if (t.weights[static_cast<std::size_t>(o * t.span + j)] != 0.f) {
        ++first[static_cast<std::size_t>(t.starts[static_cast<std::size_t>(o)] + j) + 1];
      }
    }
  }
  for (std::size_t i = 0; i < static_cast<std::size_t>(t.in); ++i) first[i + 1] += first[i];
  std::vector<int64_t> reader(first.back());
  std::vector<float> weight(first.back());
  std::vector<std::size_t> fill(first.begin(), first.end() - 1);
  for (int64_t o = 0; o < t.out; ++o) {
    const int64_t start = t.starts[static_cast<std::size_t>(o)];
    for (int64_t j = 0; j < taps_of(o); ++j) {
      const float w = t.weights[static_cast<std::size_t>(o * t.span + j)];
      if (w == 0.f) continue;
      const std::size_t k = fill[static_cast<std::size_t>(start + j)]++;
      reader[k] = o;
      weight[k] = w;
    }
  }
  TapLists taps(t.out);
  for (std::size_t i = 0; i < static_cast<std::size_t>(t.in); ++i) {
    taps.next();
    for (std::size_t k = first[i]; k < first[i + 1]; ++k) taps.add(reader[k], weight[k]);
  }
  return taps.table();
}

}  // namespace detail

}  // namespace osprey::ops
