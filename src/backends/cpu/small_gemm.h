// Osprey's own GEMM for small products on the CPU (small_gemm.cpp).
#pragma once

#include <cstdint>

namespace osprey::cpu {

/// Products up to this many multiply-adds (m·n·k) run on Osprey's own kernel (small_gemm.cpp) instead of oneDNN,
/// whose per-call cost dominates them. Above it, oneDNN's blocking wins (128³: 45 µs against 49 µs here).
constexpr int64_t kSmallGemmMaxWork = int64_t{1} << 18;
/// From this many multiply-adds on, small_gemm() splits the rows between the calling thread and the CPU helper
/// thread (pair_runner.h) when intra-op threads allow two.
constexpr int64_t kSmallGemmSplitWork = int64_t{1} << 15;
/// Whether this CPU has AVX2 and FMA (the small GEMM's and vector_math.h's kernels need both).
bool cpu_has_avx2_fma();
/// True when small_gemm() takes this product: within kSmallGemmMaxWork and the CPU has AVX2 and FMA.
bool small_gemm_applies(int64_t m, int64_t n, int64_t k);
/// Row-major C[m,n] = op(A)·op(B) (+ bias[n] per row) (+ C when `accumulate`), then max(·, 0) with `relu`. Each
/// element is one FMA chain over k in order, so the result does not depend on how the product is tiled or split.
void small_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                const float* bias = nullptr, bool accumulate = false, bool relu = false);

}  // namespace osprey::cpu
