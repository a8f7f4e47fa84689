// What the CUDA plug-in's kernel files share about element types: float16/bfloat16 values read as float32 and
// results rounded back (to nearest even, as the CPU), and the launchers' dispatch on a float dtype.
#pragma once

#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/cuda_kernels.h"

namespace osprey::cuda {

template <typename T>
__device__ inline float to_f32(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return static_cast<float>(v);
}

// One element converted: through float where a half type is involved (rounding to nearest even, as the CPU).
template <typename T, typename F>
__device__ inline T convert(F v) {
  constexpr bool from_half = std::is_same_v<F, __half> || std::is_same_v<F, __nv_bfloat16>;
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(to_f32(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(to_f32(v));
  else if constexpr (from_half && std::is_same_v<T, bool>) return to_f32(v) != 0.f;
  else if constexpr (from_half) return static_cast<T>(to_f32(v));
  else return static_cast<T>(v);  // to bool: nonzero (NaN too) is true, as on the CPU
}

template <typename T>
struct Tag {
  using type = T;
};
// f(Tag<T>{}) for the float kernels' element type of dt (float32, float16 or bfloat16).
template <typename F>
void by_float_type(Dt dt, F&& f) {
  switch (dt) {
    case Dt::f16: return f(Tag<__half>{});
    case Dt::bf16: return f(Tag<__nv_bfloat16>{});
    default: return f(Tag<float>{});
  }
}

}  // namespace osprey::cuda
