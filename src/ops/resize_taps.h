// TensorFlow's resize taps (tf.image.resize, half-pixel centres, no antialiasing), shared by the CPU kernel
// (kernels_image.cpp) and the CUDA one (kernels_image.cu): the same source pixels and weights on either backend.
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define OSPREY_RESIZE_HD __host__ __device__
#else
#define OSPREY_RESIZE_HD
#endif

namespace osprey::ops::detail {

/// One output coordinate's source: pixels `lo` and `hi` with weight `frac` on `hi` (bilinear), or `lo` alone
/// (nearest: frac 0).
struct ResizeTap {
  int64_t lo, hi;
  float frac;
};

OSPREY_RESIZE_HD inline ResizeTap resize_tap(int64_t out, int64_t in_size, int64_t out_size, bool bilinear) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  if (!bilinear) {  // floor((out + 0.5) * scale), clamped
    int64_t i = static_cast<int64_t>(floorf((static_cast<float>(out) + 0.5f) * scale));
    i = i < 0 ? 0 : (i > in_size - 1 ? in_size - 1 : i);
    return {i, i, 0.f};
  }
  const float in = (static_cast<float>(out) + 0.5f) * scale - 0.5f;
  const float f = floorf(in);
  int64_t lo = static_cast<int64_t>(f), hi = static_cast<int64_t>(ceilf(in));
  lo = lo < 0 ? 0 : lo;
  hi = hi > in_size - 1 ? in_size - 1 : hi;
  return {lo, hi, in - f};
}

}  // namespace osprey::ops::detail
