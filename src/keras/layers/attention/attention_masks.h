// What the attention layers share for their masks (private to src/keras/layers/attention/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "osprey/ops.h"
#include "osprey/tensor.h"

namespace osprey::keras::layers::detail {

/// A mask as float32 1/0 (Embedding's masks already are).
inline Tensor as_float(const Tensor& m) { return m.dtype() == DType::float32 ? m : osprey::ops::cast(m, DType::float32); }

/// A (B, T, S) mask built on the host: 1 where keep(t, s) (a causal band, a sliding window).
template <typename Keep>
Tensor band(int64_t B, int64_t T, int64_t S, Keep keep) {
  std::vector<float> v(static_cast<std::size_t>(B * T * S));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < S; ++s) v[static_cast<std::size_t>(t * S + s)] = keep(t, s) ? 1.f : 0.f;
  for (int64_t b = 1; b < B; ++b) std::copy(v.begin(), v.begin() + T * S, v.begin() + b * T * S);
  return Tensor::from_vector<float>(v, {B, T, S});
}

}  // namespace osprey::keras::layers::detail
