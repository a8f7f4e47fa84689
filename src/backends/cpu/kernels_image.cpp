// CPU kernels for image resizing (tf.image.resize's bilinear and nearest, half-pixel centres) and its gradient,
// resampling along an axis by a table (the other resize methods, ops/resample_tables.h), projective transforms.
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels.h"
#include "ops/resize_taps.h"
#include "ops/transform_taps.h"

namespace osprey::cpu {

using ops::KernelContext;
using ops::detail::ResizeTap;
using ops::detail::resize_tap;

namespace {

struct Taps {
  std::vector<ResizeTap> rows, cols;
};
Taps taps_of(const Shape& x, const Shape& y, bool bilinear) {
  Taps t;
  for (int64_t r = 0; r < y[1]; ++r) t.rows.push_back(resize_tap(r, x[1], y[1], bilinear));
  for (int64_t c = 0; c < y[2]; ++c) t.cols.push_back(resize_tap(c, x[2], y[2], bilinear));
  return t;
}

void resize_kernel(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const bool bilinear = ctx.attr<ops::ResizeAttrs>().method == ops::ResizeMethod::bilinear;
  const Taps t = taps_of(x.shape(), y.shape(), bilinear);
  const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const int64_t oh = y.shape()[1], ow = y.shape()[2];
  const float* in = x.data<float>();
  float* out = y.data<float>();
  parallel_chunks(n * oh, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t s = row / oh, r = row % oh;
      const ResizeTap& ty = t.rows[static_cast<std::size_t>(r)];
      const float* top = in + (s * h + ty.lo) * w * c;
      const float* bottom = in + (s * h + ty.hi) * w * c;
      float* o = out + row * ow * c;
      for (int64_t col = 0; col < ow; ++col) {
        const ResizeTap& tx = t.cols[static_cast<std::size_t>(col)];
        for (int64_t ch = 0; ch < c; ++ch) {
          const float tl = top[tx.lo * c + ch], tr = top[tx.hi * c + ch];
          const float bl = bottom[tx.lo * c + ch], br = bottom[tx.hi * c + ch];
          const float upper = tl + (tr - tl) * tx.frac, lower = bl + (br - bl) * tx.frac;
          o[col * c + ch] = upper + (lower - upper) * ty.frac;
        }
      }
    }
  }, 64);
}

// Each sample's gradient scattered from its output pixels in a fixed order (samples split between threads).
void resize_grad_kernel(const KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  const bool bilinear = ctx.attr<ops::ResizeAttrs>().method == ops::ResizeMethod::bilinear;
  const Taps t = taps_of(dx.shape(), dy.shape(), bilinear);
  const int64_t n = dx.shape()[0], h = dx.shape()[1], w = dx.shape()[2], c = dx.shape()[3];
  const int64_t oh = dy.shape()[1], ow = dy.shape()[2];
  const float* g = dy.data<float>();
  float* out = dx.data<float>();
  std::memset(out, 0, dx.nbytes());
  parallel_chunks(n, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      for (int64_t r = 0; r < oh; ++r) {
        const ResizeTap& ty = t.rows[static_cast<std::size_t>(r)];
        float* top = out + (s * h + ty.lo) * w * c;
        float* bottom = out + (s * h + ty.hi) * w * c;
        for (int64_t col = 0; col < ow; ++col) {
          const ResizeTap& tx = t.cols[static_cast<std::size_t>(col)];
          const float* gp = g + ((s * oh + r) * ow + col) * c;
          for (int64_t ch = 0; ch < c; ++ch) {
            const float v = gp[ch], vt = v * (1.f - ty.frac), vb = v * ty.frac;
            top[tx.lo * c + ch] += vt * (1.f - tx.frac);
            top[tx.hi * c + ch] += vt * tx.frac;
            bottom[tx.lo * c + ch] += vb * (1.f - tx.frac);
            bottom[tx.hi * c + ch] += vb * tx.frac;
          }
        }
      }
    }
  }, 1);
}

// Rows [begin, end) of y (outer · out, C) for x (outer, in, C) with a compile-time channel count C (the last axis of
// channels-last images): the sums kept in registers.
template <int C>
void resample_rows(const float* src, const int64_t* starts, const float* weights, float* dst, int64_t in, int64_t out,
                   int64_t span, int64_t begin, int64_t end) {
  int64_t b = begin / out, o = begin % out;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t start = starts[o], taps = std::min(span, in - start);
    const float* w = weights + o * span;
    const float* xb = src + (b * in + start) * C;
    float acc[C] = {};
    for (int64_t j = 0; j < taps; ++j) {
      for (int k = 0; k < C; ++k) acc[k] += w[j] * xb[j * C + k];
    }
    for (int k = 0; k < C; ++k) dst[row * C + k] = acc[k];
    if (++o == out) o = 0, ++b;
  }
}

// x viewed as (outer, in, inner): each output row o of each outer block is the weighted sum of the table's input
// rows, in the table's order (ScaleAndTranslate's GatherRows / GatherColumns).
void resample_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<ops::ResampleAttrs>();
  const Tensor& x = ctx.inputs[0];
  const int64_t* starts = ctx.inputs[1].data<int64_t>();
  const float* weights = ctx.inputs[2].data<float>();
  Tensor& y = ctx.outputs[0];
  const auto& xs = x.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a.axis; ++i) outer *= xs[i];
  for (int i = a.axis + 1; i < xs.rank(); ++i) inner *= xs[i];
  const int64_t in = xs[a.axis], out = y.shape()[a.axis], span = a.span;
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  parallel_chunks(outer * out, [&](int64_t begin, int64_t end) {
    switch (inner) {
      case 1: return resample_rows<1>(src, starts, weights, dst, in, out, span, begin, end);
      case 2: return resample_rows<2>(src, starts, weights, dst, in, out, span, begin, end);
      case 3: return resample_rows<3>(src, starts, weights, dst, in, out, span, begin, end);
      case 4: return resample_rows<4>(src, starts, weights, dst, in, out, span, begin, end);
      default: break;
    }
    int64_t b = begin / out, o = begin % out;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t start = starts[o], taps = std::min(span, in - start);
      const float* w = weights + o * span;
      float* yo = dst + row * inner;
      std::fill(yo, yo + inner, 0.f);
      for (int64_t j = 0; j < taps; ++j) {
        const float* xi = src + (b * in + start + j) * inner;
        for (int64_t k = 0; k < inner; ++k) yo[k] += w[j] * xi[k];
      }
      if (++o == out) o = 0, ++b;
    }
  }, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner * span, 1)));
}

void affine_transform_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<ops::TransformAttrs>();
  const Tensor& x = ctx.inputs[0];
  const Tensor& t = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const bool per_image = t.shape()[0] != 1;
  const auto mode = static_cast<ops::detail::FillMode>(static_cast<int>(a.fill_mode));
  parallel_chunks(n * h, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t s = row / h, yy = row % h;
      const float* image = x.data<float>() + s * h * w * c;
      const float* tr = t.data<float>() + (per_image ? s * 8 : 0);
      float* out = y.data<float>() + row * w * c;
      for (int64_t xx = 0; xx < w; ++xx) {
        for (int64_t ch = 0; ch < c; ++ch) {
          out[xx * c + ch] = ops::detail::transform_pixel(image, h, w, c, tr, yy, xx, ch,
                                                          a.interpolation == ops::ResizeMethod::bilinear, mode,
                                                          a.fill_value);
        }
      }
    }
  }, 16);
}

}  // namespace

void register_image_kernels() {
  ops::register_kernel(ops::OpId::Resize, runtime::DeviceType::CPU, resize_kernel);
  ops::register_kernel(ops::OpId::ResizeGrad, runtime::DeviceType::CPU, resize_grad_kernel);
  ops::register_kernel(ops::OpId::AffineTransform, runtime::DeviceType::CPU, affine_transform_kernel);
  ops::register_kernel(ops::OpId::Resample, runtime::DeviceType::CPU, resample_kernel);
}

}  // namespace osprey::cpu
