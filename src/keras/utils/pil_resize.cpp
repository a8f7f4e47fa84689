// keras.utils.load_img's resizing, which is Pillow's Image.resize on 8-bit pixels: for the filters a two-pass
// separable convolution (horizontal first unless the height shrinks much more, the intermediate rounded to 8 bits)
// with coefficients in 22-bit fixed point (16-bit grayscale, Pillow's "I;16": double coefficients, each pass
// rounded to 16 bits); for nearest an affine scan whose source position is accumulated in
// double; RGBA resized premultiplied (Pillow's RGBa) unless nearest. The arithmetic follows Pillow's (Resample.c,
// Geometry.c, Convert.c) step for step so that load_img(target_size=...) gives Keras's pixel values exactly.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "keras/utils/image_codecs.h"
#include "osprey/errors.h"

namespace osprey::keras::utils::detail {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double box_filter(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }
double bilinear_filter(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}
double hamming_filter(double x) {
  x = std::fabs(x);
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x *= std::numbers::pi;
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));  // Pillow's float constants, promoted
}
double bicubic_filter(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}
double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= std::numbers::pi;
  return std::sin(x) / x;
}
double lanczos_filter(double x) { return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3) : 0.0; }

struct Filter {
  double (*f)(double);
  double support;
};

Filter filter_of(PilFilter filter) {
  switch (filter) {
    case PilFilter::box: return {box_filter, 0.5};
    case PilFilter::bilinear: return {bilinear_filter, 1.0};
    case PilFilter::hamming: return {hamming_filter, 1.0};
    case PilFilter::bicubic: return {bicubic_filter, 2.0};
    case PilFilter::lanczos: return {lanczos_filter, 3.0};
    case PilFilter::nearest: break;
  }
  throw InternalError("pil_resize: nearest has no filter");
}

// Per output position: the first input index, the number of taps, and `ksize` weights, normalised (`kd`: the
// 16-bit passes use them) and in fixed point (`k`: the 8-bit passes).
struct Coefficients {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<double> kd;
  std::vector<int32_t> k;
};

Coefficients coefficients(int in_size, float in0, float in1, int out_size, const Filter& filter) {
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = filter.support * filterscale;
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<std::size_t>(out_size));
  c.count.resize(static_cast<std::size_t>(out_size));
  c.k.assign(static_cast<std::size_t>(out_size) * static_cast<std::size_t>(c.ksize), 0);
  c.kd.assign(c.k.size(), 0.0);
  std::vector<double> w(static_cast<std::size_t>(c.ksize));
  const double ss = 1.0 / filterscale;
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[static_cast<std::size_t>(x)] = filter.f((x + xmin - center + 0.5) * ss);
      ww += w[static_cast<std::size_t>(x)];
    }
    for (int x = 0; x < xmax; ++x) {
      double v = w[static_cast<std::size_t>(x)];
      if (ww != 0.0) v /= ww;
      const std::size_t at = static_cast<std::size_t>(xx) * static_cast<std::size_t>(c.ksize) + static_cast<std::size_t>(x);
      c.kd[at] = v;
      c.k[at] = static_cast<int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    c.first[static_cast<std::size_t>(xx)] = xmin;
    c.count[static_cast<std::size_t>(xx)] = std::max(xmax, 0);
  }
  return c;
}

unsigned char clip8(int32_t sum) {
  const int32_t v = sum >> kPrecisionBits;
  return static_cast<unsigned char>(v < 0 ? 0 : v > 255 ? 255 : v);
}

using Pixels = std::vector<unsigned char>;

// An 8-bit tap sum: fixed point, rounded at half, clipped to 8 bits.
unsigned char taps(const unsigned char* in, std::ptrdiff_t stride, const Coefficients& c, std::size_t o) {
  const int32_t* k = c.k.data() + o * static_cast<std::size_t>(c.ksize);
  int32_t sum = 1 << (kPrecisionBits - 1);
  for (int t = 0; t < c.count[o]; ++t) sum += static_cast<int32_t>(in[t * stride]) * k[t];
  return clip8(sum);
}

// A 16-bit tap sum: double, Pillow's ROUND_UP (half away from zero through a float 0.5) and CLIP16.
uint16_t taps(const uint16_t* in, std::ptrdiff_t stride, const Coefficients& c, std::size_t o) {
  const double* k = c.kd.data() + o * static_cast<std::size_t>(c.ksize);
  double sum = 0.0;
  for (int t = 0; t < c.count[o]; ++t) sum += static_cast<double>(in[t * stride]) * k[t];
  const int v = static_cast<int>(sum >= 0.0 ? sum + 0.5F : sum - 0.5F);
  return static_cast<uint16_t>(v <= 0 ? 0 : v < 65536 ? v : 65535);
}

// One pass along x (`horizontal`: out_rows rows of `w` pixels become out_cols pixels each) or along y (out_rows
// rows of out_cols = `w` pixels from the input's rows), `channels` values a pixel, each sum rounded to the type.
template <typename P>
P pass(const P& in, int64_t w, int channels, const Coefficients& c, bool horizontal, int64_t out_rows,
       int64_t out_cols) {
  P out(static_cast<std::size_t>(out_rows * out_cols * channels));
  const std::ptrdiff_t stride = horizontal ? channels : static_cast<std::ptrdiff_t>(w * channels);
  for (int64_t yy = 0; yy < out_rows; ++yy) {
    for (int64_t xx = 0; xx < out_cols; ++xx) {
      const std::size_t o = horizontal ? static_cast<std::size_t>(xx) : static_cast<std::size_t>(yy);
      const int first = c.first[o];
      const int64_t sy = horizontal ? yy : first, sx = horizontal ? first : xx;
      for (int ch = 0; ch < channels; ++ch) {
        out[static_cast<std::size_t>((yy * out_cols + xx) * channels + ch)] =
            taps(in.data() + (sy * w + sx) * channels + ch, stride, c, o);
      }
    }
  }
  return out;
}

// Each pass is skipped where Pillow skips it (same size, no box offset). Pillow's horizontal-first pass covers only
// the rows the vertical one reads; every row here gives the same values.
template <typename P>
P resample(const P& in, int64_t w, int64_t h, int channels, int64_t out_w, int64_t out_h, PilFilter filter,
           const std::array<float, 4>& box) {
  const Filter f = filter_of(filter);
  const bool need_horizontal = out_w != w || box[0] != 0.f || box[2] != static_cast<float>(out_w);
  const bool need_vertical = out_h != h || box[1] != 0.f || box[3] != static_cast<float>(out_h);
  const auto horizontal = [&](const P& p, int64_t rows) {
    return pass(p, w, channels, coefficients(static_cast<int>(w), box[0], box[2], static_cast<int>(out_w), f), true,
                rows, out_w);
  };
  const auto vertical = [&](const P& p, int64_t cols) {
    return pass(p, cols, channels, coefficients(static_cast<int>(h), box[1], box[3], static_cast<int>(out_h), f),
                false, out_h, cols);
  };
  // Pillow 13 resizes vertically first when the height shrinks by more than twice what the width does (the
  // intermediate image is rounded, so the order shows in the values).
  if (out_h < h && (h - out_h) > 2 * (w - out_w)) {
    return need_horizontal ? horizontal(vertical(in, w), out_h) : vertical(in, w);
  }
  if (!need_horizontal) return need_vertical ? vertical(in, w) : in;
  return need_vertical ? vertical(horizontal(in, h), out_w) : horizontal(in, h);
}

// Pillow's affine transform for NEAREST: 8-bit images through its scan (ImagingScaleAffine: the source position
// starts half a step in and is accumulated in double), 16-bit ones through its generic transform (each position
// computed as a * (i + 0.5) + offset). The last bits of the sums differ, and with them a pixel now and then.
template <typename P>
P nearest(const P& in, int64_t w, int64_t h, int channels, int64_t out_w, int64_t out_h,
          const std::array<float, 4>& box) {
  constexpr bool accumulated = sizeof(typename P::value_type) == 1;
  const double ax = static_cast<double>(box[2] - box[0]) / static_cast<double>(out_w);
  const double ay = static_cast<double>(box[3] - box[1]) / static_cast<double>(out_h);
  const auto coord = [](double v) { return v < 0.0 ? int64_t{-1} : static_cast<int64_t>(v); };
  const auto positions = [&](int64_t n, double a, double offset) {
    std::vector<int64_t> at(static_cast<std::size_t>(n));
    double o = offset + a * 0.5;
    for (int64_t i = 0; i < n; ++i, o += a) {
      at[static_cast<std::size_t>(i)] = coord(accumulated ? o : a * (static_cast<double>(i) + 0.5) + offset);
    }
    return at;
  };
  const std::vector<int64_t> xs = positions(out_w, ax, box[0]), ys = positions(out_h, ay, box[1]);
  P out(static_cast<std::size_t>(out_w * out_h * channels), 0);
  for (int64_t y = 0; y < out_h; ++y) {
    const int64_t sy = ys[static_cast<std::size_t>(y)];
    if (sy < 0 || sy >= h) continue;  // filled with zeros, as Pillow's fill
    for (int64_t x = 0; x < out_w; ++x) {
      const int64_t sx = xs[static_cast<std::size_t>(x)];
      if (sx < 0 || sx >= w) continue;
      for (int ch = 0; ch < channels; ++ch) {
        out[static_cast<std::size_t>((y * out_w + x) * channels + ch)] =
            in[static_cast<std::size_t>((sy * w + sx) * channels + ch)];
      }
    }
  }
  return out;
}

}  // namespace

PilFilter pil_filter(const std::string& name) {
  if (name == "nearest") return PilFilter::nearest;
  if (name == "bilinear") return PilFilter::bilinear;
  if (name == "bicubic") return PilFilter::bicubic;
  if (name == "hamming") return PilFilter::hamming;
  if (name == "box") return PilFilter::box;
  if (name == "lanczos") return PilFilter::lanczos;
  throw ValueError(fmt::format("Invalid interpolation method {} specified. Supported methods are nearest, bilinear, "
                               "bicubic, hamming, box, lanczos",
                               name));
}

std::vector<unsigned char> pil_resize(const std::vector<unsigned char>& pixels, int64_t w, int64_t h, int channels,
                                      int64_t out_w, int64_t out_h, PilFilter filter, std::array<float, 4> box) {
  if (filter == PilFilter::nearest) return nearest(pixels, w, h, channels, out_w, out_h, box);
  if (channels != 4) return resample(pixels, w, h, channels, out_w, out_h, filter, box);
  // RGBA through Pillow's premultiplied RGBa: c * a / 255 rounded (MULDIV255), and back with an integer division.
  Pixels premultiplied(pixels.size());
  for (std::size_t i = 0; i < pixels.size(); i += 4) {
    const unsigned a = pixels[i + 3];
    for (std::size_t c = 0; c < 3; ++c) {
      const unsigned t = pixels[i + c] * a + 128;
      premultiplied[i + c] = static_cast<unsigned char>(((t >> 8) + t) >> 8);
    }
    premultiplied[i + 3] = static_cast<unsigned char>(a);
  }
  Pixels out = resample(premultiplied, w, h, 4, out_w, out_h, filter, box);
  for (std::size_t i = 0; i < out.size(); i += 4) {
    const unsigned a = out[i + 3];
    if (a == 0 || a == 255) continue;
    for (std::size_t c = 0; c < 3; ++c) out[i + c] = static_cast<unsigned char>(std::min(255u, 255u * out[i + c] / a));
  }
  return out;
}

std::vector<uint16_t> pil_resize(const std::vector<uint16_t>& pixels, int64_t w, int64_t h, int64_t out_w,
                                 int64_t out_h, PilFilter filter, std::array<float, 4> box) {
  if (filter == PilFilter::nearest) return nearest(pixels, w, h, 1, out_w, out_h, box);
  return resample(pixels, w, h, 1, out_w, out_h, filter, box);
}

}  // namespace osprey::keras::utils::detail
