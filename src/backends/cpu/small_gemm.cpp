// Osprey's own GEMM for small products (AVX2 + FMA register tiles; from kSmallGemmSplitWork on, the rows are split
// between the calling thread and the helper thread of pair_runner.h). For products of a few
// hundred thousand multiply-adds oneDNN's per-call cost (primitive lookup, argument maps, its own packing) is as
// large as the arithmetic: the seed model's 64x32 by 32x1 layer took 2 us for 2 k multiply-adds. Here a product
// is a loop of 6x16 register tiles over B's 16-column panels with no setup beyond packing B when it is transposed
// or narrower than a panel.
//
// Every C element is one FMA chain over k in order (p = 0, 1, ..., k-1), started at 0, then + bias, then
// + C when accumulating. That order does not depend on the tiling, so a product gives the same bits whatever
// rows or columns it is split into.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/pair_runner.h"
#include "backends/cpu/small_gemm.h"

namespace osprey::cpu {

namespace {

constexpr int kMr = 6;   // rows per register tile
constexpr int kNr = 16;  // columns per panel (two 8-float vectors)

// Where A's element (i, p) is: a[i * row + p * col].
struct AView {
  const float* a;
  int64_t row, col;
};

// One tile: C[0..MR) x [0..NV*8) (width `w` ≤ NV*8 columns stored) += A rows · the panel (k rows of ldb floats,
// at least NV*8 readable per row).
template <int MR, int NV>
__attribute__((target("avx2,fma"))) inline void tile(int64_t k, AView a, const float* b, int64_t ldb, float* c,
                                                      int64_t ldc, int w, const float* bias, bool accumulate, bool relu) {
  __m256 acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();
  }
  const float* ap = a.a;
  for (int64_t p = 0; p < k; ++p, b += ldb, ap += a.col) {
    __m256 bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(ap + i * a.row);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
  if (w == NV * 8) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const __m256 bb = bias ? _mm256_loadu_ps(bias + 8 * v) : _mm256_setzero_ps();
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        float* out = c + i * ldc + 8 * v;
        __m256 r = bias ? _mm256_add_ps(acc[i][v], bb) : acc[i][v];
        if (accumulate) r = _mm256_add_ps(r, _mm256_loadu_ps(out));
        if (relu) r = _mm256_max_ps(r, _mm256_setzero_ps());
        _mm256_storeu_ps(out, r);
      }
    }
    return;
  }
  // A narrower last panel: spill and copy the `w` valid columns.
  alignas(32) float buf[NV * 8];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) _mm256_store_ps(buf + 8 * v, acc[i][v]);
    float* out = c + i * ldc;
    for (int j = 0; j < w; ++j) {
      float r = bias ? buf[j] + bias[j] : buf[j];
      if (accumulate) r += out[j];
      out[j] = relu ? std::max(r, 0.f) : r;
    }
  }
}

template <int NV>
__attribute__((target("avx2,fma"))) void panel_rows(int64_t m, int64_t k, AView a, const float* b, int64_t ldb,
                                                     float* c, int64_t ldc, int w, const float* bias, bool accumulate, bool relu) {
  // Six-row tiles; a remainder of 1 or 2 rows takes one six-row tile with it as 4 + 3 or 4 + 4 rows (a 1- or
  // 2-row tile keeps too few FMAs in flight to hide their latency).
  int64_t full = m / kMr;
  if (full > 0 && m % kMr > 0 && m % kMr < 3) --full;
  int64_t i = 0;
  for (; i < full * kMr; i += kMr) {
    tile<kMr, NV>(k, {a.a + i * a.row, a.row, a.col}, b, ldb, c + i * ldc, ldc, w, bias, accumulate, relu);
  }
  if (m - i > kMr) {
    tile<4, NV>(k, {a.a + i * a.row, a.row, a.col}, b, ldb, c + i * ldc, ldc, w, bias, accumulate, relu);
    i += 4;
  }
  const AView rest{a.a + i * a.row, a.row, a.col};
  float* cr = c + i * ldc;
  switch (m - i) {
    case 5: tile<5, NV>(k, rest, b, ldb, cr, ldc, w, bias, accumulate, relu); break;
    case 4: tile<4, NV>(k, rest, b, ldb, cr, ldc, w, bias, accumulate, relu); break;
    case 3: tile<3, NV>(k, rest, b, ldb, cr, ldc, w, bias, accumulate, relu); break;
    case 2: tile<2, NV>(k, rest, b, ldb, cr, ldc, w, bias, accumulate, relu); break;
    case 1: tile<1, NV>(k, rest, b, ldb, cr, ldc, w, bias, accumulate, relu); break;
    default: break;
  }
}

// dst[p*ld + j] = src[j*k + p] for an 8 x 8 block (j, p < 8): B's rows become the panel's columns.
__attribute__((target("avx2,fma"))) inline void transpose8x8(const float* src, int64_t k, float* dst, int64_t ld) {
  __m256 r[8], t[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + j * k);
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    r[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
    r[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xEE);
    r[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
    r[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(dst + j * ld, _mm256_permute2f128_ps(r[j], r[j + 4], 0x20));
    _mm256_storeu_ps(dst + (j + 4) * ld, _mm256_permute2f128_ps(r[j], r[j + 4], 0x31));
  }
}

// dst[p*ld + j] = b[(j0 + j)*k + p] for p < k, j < 16: columns j0 .. j0+w of B = b^T (zero past w).
__attribute__((target("avx2,fma"))) void pack_transposed(const float* b, int64_t k, int64_t j0, int w, float* dst,
                                                          int64_t ld = kNr) {
  const float* src = b + j0 * k;
  int64_t p = 0;
  if (w == kNr) {
    for (; p + 8 <= k; p += 8) {
      transpose8x8(src + p, k, dst + p * ld, ld);
      transpose8x8(src + 8 * k + p, k, dst + p * ld + 8, ld);
    }
  }
  for (; p < k; ++p) {
    int j = 0;
    for (; j < w; ++j) dst[p * ld + j] = src[j * k + p];
    for (; j < kNr; ++j) dst[p * ld + j] = 0.f;
  }
}

// dst[p*16 + j] = b[p*ldb + j] for p < k, j < w (zero past w): a row-major panel copied contiguous.
__attribute__((target("avx2,fma"))) void pack_rows(const float* b, int64_t ldb, int64_t k, int w, float* dst) {
  if (w == kNr) {
    for (int64_t p = 0; p < k; ++p) {
      _mm256_storeu_ps(dst + p * kNr, _mm256_loadu_ps(b + p * ldb));
      _mm256_storeu_ps(dst + p * kNr + 8, _mm256_loadu_ps(b + p * ldb + 8));
    }
    return;
  }
  for (int64_t p = 0; p < k; ++p) {
    int j = 0;
    for (; j < w; ++j) dst[p * kNr + j] = b[p * ldb + j];
    for (; j < kNr; ++j) dst[p * kNr + j] = 0.f;
  }
}

// C[m, 1] = op(A)·b for a single column (b: k contiguous floats), vectorised over rows. `at` holds op(A)^T row
// by row (at[p*ld + i] = op(A)(i, p)). Each element is the same in-order FMA chain as in tile().
__attribute__((target("avx2,fma"))) void column_product(int64_t m, int64_t k, const float* at, int64_t ld,
                                                         const float* b, float* c, const float* bias, bool accumulate, bool relu) {
  int64_t i = 0;
  for (; i + 32 <= m; i += 32) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t p = 0; p < k; ++p) {
      const __m256 bp = _mm256_broadcast_ss(b + p);
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[v] = _mm256_fmadd_ps(_mm256_loadu_ps(at + p * ld + i + 8 * v), bp, acc[v]);
    }
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      __m256 r = bias ? _mm256_add_ps(acc[v], _mm256_broadcast_ss(bias)) : acc[v];
      if (accumulate) r = _mm256_add_ps(r, _mm256_loadu_ps(c + i + 8 * v));
      if (relu) r = _mm256_max_ps(r, _mm256_setzero_ps());
      _mm256_storeu_ps(c + i + 8 * v, r);
    }
  }
  for (; i + 8 <= m; i += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t p = 0; p < k; ++p) acc = _mm256_fmadd_ps(_mm256_loadu_ps(at + p * ld + i), _mm256_broadcast_ss(b + p), acc);
    __m256 r = bias ? _mm256_add_ps(acc, _mm256_broadcast_ss(bias)) : acc;
    if (accumulate) r = _mm256_add_ps(r, _mm256_loadu_ps(c + i));
    if (relu) r = _mm256_max_ps(r, _mm256_setzero_ps());
    _mm256_storeu_ps(c + i, r);
  }
  for (; i < m; ++i) {
    float acc = 0.f;
    for (int64_t p = 0; p < k; ++p) acc = __builtin_fmaf(at[p * ld + i], b[p], acc);
    float r = bias ? acc + *bias : acc;
    if (accumulate) r += c[i];
    c[i] = relu ? std::max(r, 0.f) : r;
  }
}

// C[m, n] = a ⊗ b (k = 1): each element a_i·b_j rounded once, then + bias, + C, ReLU (A's i-th value at
// a[i * stride]). Eight columns at a time.
__attribute__((target("avx2,fma"))) void outer_product(int64_t m, int64_t n, const float* a, int64_t stride,
                                                        const float* b, float* c, const float* bias, bool accumulate,
                                                        bool relu) {
  for (int64_t i = 0; i < m; ++i) {
    const float ai = a[i * stride];
    const __m256 av = _mm256_set1_ps(ai);
    float* ci = c + i * n;
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      __m256 r = _mm256_mul_ps(av, _mm256_loadu_ps(b + j));
      if (bias) r = _mm256_add_ps(r, _mm256_loadu_ps(bias + j));
      if (accumulate) r = _mm256_add_ps(r, _mm256_loadu_ps(ci + j));
      if (relu) r = _mm256_max_ps(r, _mm256_setzero_ps());
      _mm256_storeu_ps(ci + j, r);
    }
    for (; j < n; ++j) {
      float r = ai * b[j];
      if (bias) r += bias[j];
      if (accumulate) r += ci[j];
      ci[j] = relu ? std::max(r, 0.f) : r;
    }
  }
}

}  // namespace

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

bool small_gemm_applies(int64_t m, int64_t n, int64_t k) {
  return m > 0 && n > 0 && k > 0 && m * n * k <= kSmallGemmMaxWork && cpu_has_avx2_fma();
}

// Rows [0, m) of C, with A's rows starting at `a` (row i of op(A) is a + i*k, or column a + i of the stored
// k x lda matrix when transposed).
static void gemm_rows(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                      float* c, const float* bias, bool accumulate, bool relu, bool pack, int64_t j_begin = 0,
                      int64_t j_end = -1) {
  // A(i, p) is a[i*k + p], or a[p*lda + i] when transposed.
  AView av = ta ? AView{a, 1, lda} : AView{a, k, 1};
  thread_local std::vector<float> a_copy;
  if (pack && ta && n > kNr) {
    // A's columns at a stride of 16 floats more than this thread's rows: a power-of-two stride (512 floats in
    // the wide MLP) puts a tile's k lines of A into two L1 sets, which then miss on every reuse.
    const int64_t ld = m + kNr;
    a_copy.resize(static_cast<std::size_t>(k * ld));
    for (int64_t p = 0; p < k; ++p) std::memcpy(&a_copy[p * ld], a + p * lda, sizeof(float) * m);
    av = AView{a_copy.data(), 1, ld};
  }
  // B's panel j0 (columns j0 .. j0+16) is read in place when B is row-major and the panel is whole; otherwise it
  // is packed (transposed, zero-padded) into a k x 16 buffer first. An 8-column panel is read in place too.
  thread_local std::vector<float> packed;
  // The two shapes below take every column (packed_gemm never splits them by columns: k < 64, one panel).
  if (k == 1) {  // an outer product: each element is fma(a, b, 0), i.e. a·b rounded once
    return outer_product(m, n, av.a, av.row, b, c, bias, accumulate, relu);  // B is 1 x n, or n x 1: b[j] either way
  }
  if (n == 1) {  // a column: B's one column is contiguous whether or not it is transposed
    if (ta) return column_product(m, k, a, lda, b, c, bias, accumulate, relu);
    const int64_t ld = (m + kNr - 1) / kNr * kNr;
    packed.resize(static_cast<std::size_t>(k * ld));
    for (int64_t i0 = 0; i0 < m; i0 += kNr) {
      pack_transposed(a, k, i0, static_cast<int>(std::min<int64_t>(kNr, m - i0)), packed.data() + i0, ld);
    }
    return column_product(m, k, packed.data(), ld, b, c, bias, accumulate, relu);
  }
  // Columns [j_begin, j_end) only (j_begin a multiple of 16): one thread's panels when the threads split them.
  if (j_end < 0) j_end = n;
  for (int64_t j0 = j_begin; j0 < j_end; j0 += kNr) {
    const int w = static_cast<int>(std::min<int64_t>(kNr, j_end - j0));
    const float* panel;
    int64_t ldp;
    if (!tb && (w == kNr || w == 8) && !pack) {
      panel = b + j0;
      ldp = n;
    } else {
      packed.resize(static_cast<std::size_t>(k) * kNr);
      if (tb) {
        pack_transposed(b, k, j0, w, packed.data());
      } else {
        pack_rows(b + j0, n, k, w, packed.data());
      }
      panel = packed.data();
      ldp = kNr;
    }
    const float* bj = bias ? bias + j0 : nullptr;
    if (w > 8) {
      panel_rows<2>(m, k, av, panel, ldp, c + j0, n, w, bj, accumulate, relu);
    } else {
      panel_rows<1>(m, k, av, panel, ldp, c + j0, n, w, bj, accumulate, relu);
    }
  }
}

// Rows [r0, r1) of the product (op(A)'s rows start at a + r0, or column r0 of the stored k x m A when transposed).
static void gemm_row_range(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                           float* c, const float* bias, bool accumulate, bool relu, bool pack, int64_t r0,
                           int64_t r1) {
  if (r1 <= r0) return;
  gemm_rows(ta, tb, r1 - r0, n, k, ta ? a + r0 : a + r0 * k, ta ? m : k, b, c + r0 * n, bias, accumulate, relu,
            pack);
}

void small_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                const float* bias, bool accumulate, bool relu) {
  // Rows are independent: two parts of them on two threads give the same bits as one thread.
  runtime::split_in_two(m, m * n * k >= kSmallGemmSplitWork, 8, [&](int64_t r0, int64_t r1) {
    gemm_row_range(ta, tb, m, n, k, a, b, c, bias, accumulate, relu, false, r0, r1);
  });
}

bool packed_gemm_applies(int64_t m, int64_t n, int64_t k, bool a_transposed) {
  const int64_t max_k = a_transposed ? kPackedGemmMaxKWeightGradient : kPackedGemmMaxK;
  return m > 0 && n > 0 && k > 0 && k <= max_k && m <= kPackedGemmMaxM && cpu_has_avx2_fma();
}

void packed_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                 const float* bias, bool accumulate, bool relu) {
  auto rows = [&](int64_t r0, int64_t r1) {
    gemm_row_range(ta, tb, m, n, k, a, b, c, bias, accumulate, relu, true, r0, r1);
  };
  const int threads = runtime::in_pair_half() ? 1 : omp_get_max_threads();
  if (threads <= 1) return rows(0, m);
  // Elements are independent: any split gives the same bits. With A as it is, the threads split B's panels
  // (each packs only its own: packing all of them per thread was 3.6 % of the wide MLP's step); with A
  // transposed, which is copied per thread, they split the rows (parts start at multiples of 8).
  const int64_t num_panels = (n + kNr - 1) / kNr;
  const bool by_columns = !ta && k >= 64 && num_panels >= 2 * threads;
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (by_columns) {
      const int64_t p0 = num_panels * t / nt, p1 = num_panels * (t + 1) / nt;
      gemm_rows(ta, tb, m, n, k, a, k, b, c, bias, accumulate, relu, true, p0 * kNr, std::min(n, p1 * kNr));
    } else {
      rows(std::min(m, (m * t / nt) & ~int64_t{7}), t + 1 == nt ? m : std::min(m, (m * (t + 1) / nt) & ~int64_t{7}));
    }
  }
}

void small_gemm_on_this_thread(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                               float* c) {
  gemm_row_range(ta, tb, m, n, k, a, b, c, nullptr, false, false, false, 0, m);
}

bool own_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
              const float* bias, bool accumulate, bool relu) {
  if (small_gemm_applies(m, n, k)) {
    small_gemm(ta, tb, m, n, k, a, b, c, bias, accumulate, relu);
    return true;
  }
  if (packed_gemm_applies(m, n, k, ta)) {
    packed_gemm(ta, tb, m, n, k, a, b, c, bias, accumulate, relu);
    return true;
  }
  return false;
}

}  // namespace osprey::cpu
