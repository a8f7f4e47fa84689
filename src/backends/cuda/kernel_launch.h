// What every CUDA kernel of the op table starts with: its logical device made current, its stream, and launch
// errors checked after the launches.
#pragma once

#include <cstddef>
#include <cstring>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cuda_platform.h"
#include "ops/attrs.h"
#include "ops/kernel.h"

namespace osprey::cuda {

struct Launch {
  CudaDevice& dev;
  explicit Launch(const ops::KernelContext& ctx) : dev(cuda_device(*ctx.device)) { dev.activate(); }
  cudaStream_t s() const { return dev.stream(); }
  void done(const char* what) const { check(cudaGetLastError(), what); }
};

inline Dt dt_of(DType t) {
  switch (t) {
    case DType::float32: return Dt::f32;
    case DType::float64: return Dt::f64;
    case DType::int32: return Dt::i32;
    case DType::int64: return Dt::i64;
    case DType::bool_: return Dt::b8;
    case DType::float16: return Dt::f16;
    case DType::bfloat16: return Dt::bf16;
  }
  return Dt::f32;
}

/// y[c] = Σ_r x[r, c] of a (rows, cols) tensor on the kernel's device, its rows split over many blocks (their
/// partial sums in scratch from the device's pool, freed in stream order).
inline void sum_columns(const ops::KernelContext& ctx, const Launch& l, Dt dt, Dt out_dt, const void* x, void* y,
                        int64_t rows, int64_t cols) {
  const int64_t floats = sum_axis0_scratch_floats(rows, cols);
  const Tensor scratch = floats ? Tensor::empty(Shape({floats}), DType::float32, ctx.device) : Tensor();
  launch_sum_axis0(dt, out_dt, x, y, rows, cols, floats ? scratch.data<float>() : nullptr, l.s());
}

/// The launchers' activation (the same order as ops::Activation).
inline Act act_of(ops::Activation a) { return static_cast<Act>(static_cast<int>(a)); }
static_assert(static_cast<int>(ops::Activation::exponential) == static_cast<int>(Act::exponential));

/// The launchers' copy of a StridedGeometry (the same layout in plain types).
static_assert(sizeof(Strided) == sizeof(ops::StridedGeometry) && offsetof(Strided, dims) == offsetof(ops::StridedGeometry, dims) &&
              offsetof(Strided, strides) == offsetof(ops::StridedGeometry, strides) && sizeof(long long) == sizeof(int64_t));
inline Strided strided_of(const ops::StridedGeometry& g) {
  Strided s;
  std::memcpy(&s, &g, sizeof s);
  return s;
}

}  // namespace osprey::cuda
