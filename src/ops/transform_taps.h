// TensorFlow's ImageProjectiveTransformV3 per output pixel (what keras.ops.image.affine_transform runs on the
// TensorFlow backend): the projective map from output to input coordinates, the fill modes' folding of
// coordinates outside the image, nearest / bilinear reads with the fill value outside. Shared by the CPU kernel
// (kernels_image.cpp) and the CUDA one (kernels_image.cu).
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define OSPREY_TRANSFORM_HD __host__ __device__
#else
#define OSPREY_TRANSFORM_HD
#endif

namespace osprey::ops::detail {

enum class FillMode : int { reflect, wrap, constant, nearest };

OSPREY_TRANSFORM_HD inline float clamp_coord(float v, int64_t len) {
  const float hi = static_cast<float>(len - 1);
  return v < 0.f ? 0.f : (v > hi ? hi : v);
}

// A coordinate outside [0, len - 1] folded back in as the fill mode says ("reflect": d c b a | a b c d | d c b a;
// "wrap": a b c d | a b c d; "nearest": the edge; "constant": left outside, read as the fill value).
OSPREY_TRANSFORM_HD inline float map_coord(float in, int64_t len, FillMode mode) {
  if (mode == FillMode::constant) return in;
  if (mode == FillMode::nearest) return clamp_coord(in, len);
  if (len <= 1) return 0.f;
  if (mode == FillMode::reflect) {
    const float size2 = 2.f * static_cast<float>(len);
    if (in < 0.f) {
      if (in < -size2) in = size2 * static_cast<float>(static_cast<int64_t>(-in / size2)) + in;
      in = in < -static_cast<float>(len) ? in + size2 : -in - 1.f;
    } else if (in > static_cast<float>(len - 1)) {
      in -= size2 * static_cast<float>(static_cast<int64_t>(in / size2));
      if (in >= static_cast<float>(len)) in = size2 - in - 1.f;
    }
    return clamp_coord(in, len);
  }
  const float size = static_cast<float>(len - 1);  // wrap
  if (in < 0.f) {
    in += static_cast<float>(len) * (static_cast<float>(static_cast<int64_t>(-in / size)) + 1.f);
  } else if (in > static_cast<float>(len - 1)) {
    in -= static_cast<float>(len) * static_cast<float>(static_cast<int64_t>(in / size));
  }
  return clamp_coord(in, len);
}

/// The value of output pixel (y, x), channel c, of one image (h, w, channels) under `t` (a0 a1 a2 b0 b1 b2 c0 c1).
OSPREY_TRANSFORM_HD inline float transform_pixel(const float* image, int64_t h, int64_t w, int64_t channels,
                                                 const float* t, int64_t y, int64_t x, int64_t c, bool bilinear,
                                                 FillMode mode, float fill) {
  const float fx = static_cast<float>(x), fy = static_cast<float>(y);
  const float projection = t[6] * fx + t[7] * fy + 1.f;
  if (projection == 0.f) return fill;
  const float in_x = map_coord((t[0] * fx + t[1] * fy + t[2]) / projection, w, mode);
  const float in_y = map_coord((t[3] * fx + t[4] * fy + t[5]) / projection, h, mode);
  auto read = [&](float yy, float xx) {
    const auto iy = static_cast<int64_t>(yy), ix = static_cast<int64_t>(xx);
    if (!(yy >= 0.f && xx >= 0.f) || iy >= h || ix >= w) return fill;
    return image[(iy * w + ix) * channels + c];
  };
  if (!bilinear) return read(roundf(in_y), roundf(in_x));
  const float y0 = floorf(in_y), x0 = floorf(in_x), y1 = y0 + 1.f, x1 = x0 + 1.f;
  const float top = (x1 - in_x) * read(y0, x0) + (in_x - x0) * read(y0, x1);
  const float bottom = (x1 - in_x) * read(y1, x0) + (in_x - x0) * read(y1, x1);
  return (y1 - in_y) * top + (in_y - y0) * bottom;
}

}  // namespace osprey::ops::detail
