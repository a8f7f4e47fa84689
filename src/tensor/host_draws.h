// Random variates on the host from a source of uniform draws in [0, 1) (a layer's seeded generator or Osprey's
// global one): normals, Gamma and Beta variates, permutations. The mixing augmentations (MixUp, CutMix, AugMix) and
// the elastic transform's noise use them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

namespace osprey::random::host {

/// One standard normal draw by Box-Muller (1 - u lies in (0, 1]).
template <typename Uniform>
double normal_draw(Uniform&& uniform) {
  const double u1 = 1.0 - uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

/// One Gamma(a, 1) draw: Marsaglia and Tsang's method, with the U^(1/a) boost below 1.
template <typename Uniform>
double gamma_draw(double a, Uniform&& uniform) {
  if (a < 1.0) return gamma_draw(a + 1.0, uniform) * std::pow(1.0 - uniform(), 1.0 / a);
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double z = normal_draw(uniform);
    const double v = std::pow(1.0 + c * z, 3);
    if (v <= 0.0) continue;
    const double u = 1.0 - uniform();
    if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) return d * v;
  }
}

/// One Beta(a, a) draw: G1 / (G1 + G2) of two Gamma(a) draws.
template <typename Uniform>
double beta_draw(double a, Uniform&& uniform) {
  const double x = gamma_draw(a, uniform), y = gamma_draw(a, uniform);
  return x + y > 0.0 ? x / (x + y) : 0.5;
}

/// A permutation of 0..n-1 (Fisher-Yates), as float indices.
template <typename Uniform>
std::vector<float> permutation(int64_t n, Uniform&& uniform) {
  std::vector<float> p(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = static_cast<float>(i);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = std::min<int64_t>(i, static_cast<int64_t>(uniform() * static_cast<double>(i + 1)));
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

}  // namespace osprey::random::host
