// The CUDA plug-in's image resizing (the CPU's taps: ops/resize_taps.h) and its deterministic gradient, resampling
// along an axis by a table (ops/resample_tables.h) and projective transforms.
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"
#include "ops/resize_taps.h"
#include "ops/transform_taps.h"

namespace osprey::cuda {

namespace {

using osprey::ops::detail::ResizeTap;
using osprey::ops::detail::resize_tap;

__global__ void resize_k(const float* x, float* y, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow,
                         bool bilinear, int64_t total) {
  GRID_STRIDE(k, total) {
    const int64_t ch = k % c, col = (k / c) % ow, row = (k / (c * ow)) % oh, s = k / (c * ow * oh);
    const ResizeTap ty = resize_tap(row, h, oh, bilinear), tx = resize_tap(col, w, ow, bilinear);
    const float* top = x + (s * h + ty.lo) * w * c;
    const float* bottom = x + (s * h + ty.hi) * w * c;
    const float tl = top[tx.lo * c + ch], tr = top[tx.hi * c + ch];
    const float bl = bottom[tx.lo * c + ch], br = bottom[tx.hi * c + ch];
    const float upper = tl + (tr - tl) * tx.frac, lower = bl + (br - bl) * tx.frac;
    y[k] = upper + (lower - upper) * ty.frac;
  }
}

__global__ void resize_grad_k(const float* dy, float* dx, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow,
                              bool bilinear, int64_t planes) {
  GRID_STRIDE(p, planes) {
    const int64_t s = p / c, ch = p % c;
    float* out = dx + s * h * w * c + ch;
    for (int64_t row = 0; row < oh; ++row) {
      const ResizeTap ty = resize_tap(row, h, oh, bilinear);
      for (int64_t col = 0; col < ow; ++col) {
        const ResizeTap tx = resize_tap(col, w, ow, bilinear);
        const float v = dy[((s * oh + row) * ow + col) * c + ch], vt = v * (1.f - ty.frac), vb = v * ty.frac;
        out[(ty.lo * w + tx.lo) * c] += vt * (1.f - tx.frac);
        out[(ty.lo * w + tx.hi) * c] += vt * tx.frac;
        out[(ty.hi * w + tx.lo) * c] += vb * (1.f - tx.frac);
        out[(ty.hi * w + tx.hi) * c] += vb * tx.frac;
      }
    }
  }
}

// One thread per output element: the table's taps along the axis, in order (the CPU kernel's sums).
__global__ void resample_k(const float* x, const int64_t* starts, const float* weights, float* y, int64_t in,
                           int64_t out, int64_t inner, int64_t span, int64_t total) {
  GRID_STRIDE(k, total) {
    const int64_t i = k % inner, o = (k / inner) % out, b = k / (inner * out), start = starts[o];
    const int64_t taps = span < in - start ? span : in - start;
    float acc = 0.f;
    for (int64_t j = 0; j < taps; ++j) acc += weights[o * span + j] * x[(b * in + start + j) * inner + i];
    y[k] = acc;
  }
}

__global__ void affine_transform_k(const float* x, const float* t, float* y, int64_t h, int64_t w, int64_t c,
                                   bool per_image, bool bilinear, int fill_mode, float fill_value, int64_t total) {
  GRID_STRIDE(k, total) {
    const int64_t ch = k % c, xx = (k / c) % w, yy = (k / (c * w)) % h, s = k / (c * w * h);
    y[k] = osprey::ops::detail::transform_pixel(x + s * h * w * c, h, w, c, t + (per_image ? s * 8 : 0), yy, xx, ch,
                                                bilinear, static_cast<osprey::ops::detail::FillMode>(fill_mode),
                                                fill_value);
  }
}

}  // namespace

void launch_affine_transform(const float* x, const float* transforms, float* y, int64_t n, int64_t h, int64_t w,
                             int64_t c, bool per_image, bool bilinear, int fill_mode, float fill_value,
                             cudaStream_t s) {
  const int64_t total = n * h * w * c;
  if (total > 0) {
    affine_transform_k<<<blocks_for(total), kThreads, 0, s>>>(x, transforms, y, h, w, c, per_image, bilinear,
                                                              fill_mode, fill_value, total);
  }
}

void launch_resample(const float* x, const int64_t* starts, const float* weights, float* y, int64_t outer,
                     int64_t in, int64_t out, int64_t inner, int64_t span, cudaStream_t s) {
  const int64_t total = outer * out * inner;
  if (total > 0) resample_k<<<blocks_for(total), kThreads, 0, s>>>(x, starts, weights, y, in, out, inner, span, total);
}

void launch_resize(const float* x, float* y, int64_t n, int64_t h, int64_t w, int64_t c, int64_t oh, int64_t ow,
                   bool bilinear, cudaStream_t s) {
  const int64_t total = n * oh * ow * c;
  if (total > 0) resize_k<<<blocks_for(total), kThreads, 0, s>>>(x, y, h, w, c, oh, ow, bilinear, total);
}

void launch_resize_grad(const float* dy, float* dx, int64_t n, int64_t h, int64_t w, int64_t c, int64_t oh,
                        int64_t ow, bool bilinear, cudaStream_t s) {
  cudaMemsetAsync(dx, 0, static_cast<std::size_t>(n * h * w * c) * sizeof(float), s);
  const int64_t planes = n * c;
  if (planes > 0) resize_grad_k<<<blocks_for(planes), kThreads, 0, s>>>(dy, dx, h, w, c, oh, ow, bilinear, planes);
}

}  // namespace osprey::cuda
