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

/// Larger products that Osprey's kernel does faster than oneDNN once its panels are packed (measured on this
/// project's 2-core machines, both threads, against oneDNN 2.6): m up to kPackedGemmMaxM, and k up to
/// kPackedGemmMaxK, or up to kPackedGemmMaxKWeightGradient with A transposed (a weight gradient, k the batch).
/// The wide MLP's 128x512x512 in 394 µs against oneDNN's 554; 512x512x128 with A transposed in 398 against 573,
/// 512x512x1024 in 3432 against 4309, 512x512x2048 in 8107 against 8586; 128x512x512 with B transposed equal.
/// oneDNN stays ahead at k = 784 (601 against 656 µs), m = 784 (565 against 610) and 512x512x4096 with A
/// transposed (16363 against 18175).
constexpr int64_t kPackedGemmMaxK = 512;
constexpr int64_t kPackedGemmMaxKWeightGradient = 2048;
constexpr int64_t kPackedGemmMaxM = 512;
bool packed_gemm_applies(int64_t m, int64_t n, int64_t k, bool a_transposed);
/// small_gemm() with every panel of B packed contiguous (and a transposed A copied at a padded stride), the rows
/// split between the OpenMP threads (those of oneDNN's products in the same step: a second spinning thread would
/// take turns with them on the same cores). Same bits as small_gemm().
void packed_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                 const float* bias = nullptr, bool accumulate = false, bool relu = false);

/// small_gemm() on the calling thread alone (one product of a batch that the threads share out); the same bits.
void small_gemm_on_this_thread(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                               float* c);
/// The product on Osprey's own kernel when one of the two paths above applies (small_gemm(), else packed_gemm());
/// false, with nothing done, when it belongs to oneDNN.
bool own_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
              const float* bias = nullptr, bool accumulate = false, bool relu = false);

}  // namespace osprey::cpu
