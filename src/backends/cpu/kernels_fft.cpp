// The CPU kernel of Fft (ops::FftKind): a radix-2 FFT for lengths that are powers of two, Bluestein's algorithm
// (a chirp, a circular convolution through two radix-2 FFTs of a power of two >= 2n - 1) for the others, so every
// length costs O(n log n). Rows are transformed kLanes at a time, lane l of the work buffer holding row r0 + l: every
// butterfly is a short loop over lanes with one twiddle, which the compiler turns into SIMD instructions. float32
// rows compute in float32, float64 rows in float64; the tables (twiddles, chirp, the chirp filter's transform) are
// computed in double and kept per length.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <vector>

#include "backends/cpu/kernels.h"
#include "osprey/errors.h"

namespace osprey::cpu {

using ops::FftKind;
using ops::KernelContext;
using runtime::DeviceType;

namespace {

template <typename T>
constexpr int kLanes = static_cast<int>(64 / sizeof(T));  // 16 floats, 8 doubles: one cache line per position

template <typename T>
struct Plan {
  int64_t n = 0, m = 0;  // the transform's length; the radix-2 length (n, or Bluestein's power of two)
  bool bluestein = false;
  std::vector<int64_t> rev;                 // the bit reversal of [0, m)
  std::vector<T> twr, twi;                  // e^(-2πi·j/m), j < m/2
  std::vector<T> chirp_r, chirp_i;          // Bluestein: w_k = e^(-πi·k²/n), k < n
  std::vector<T> filter_r, filter_i;        // Bluestein: the FFT of conj(w) wrapped around m, over m
};

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// An in-place radix-2 FFT of m values in double (the plans' tables), input in natural order.
void fft_double(std::vector<double>& re, std::vector<double>& im) {
  const auto m = static_cast<int64_t>(re.size());
  for (int64_t i = 1, j = 0; i < m; ++i) {
    int64_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(re[static_cast<std::size_t>(i)], re[static_cast<std::size_t>(j)]),
               std::swap(im[static_cast<std::size_t>(i)], im[static_cast<std::size_t>(j)]);
  }
  for (int64_t len = 2; len <= m; len <<= 1) {
    for (int64_t s = 0; s < m; s += len) {
      for (int64_t j = 0; j < len / 2; ++j) {
        const double a = -2.0 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(len);
        const double wr = std::cos(a), wi = std::sin(a);
        auto& ar = re[static_cast<std::size_t>(s + j)];
        auto& ai = im[static_cast<std::size_t>(s + j)];
        auto& br = re[static_cast<std::size_t>(s + j + len / 2)];
        auto& bi = im[static_cast<std::size_t>(s + j + len / 2)];
        const double tr = br * wr - bi * wi, ti = br * wi + bi * wr;
        br = ar - tr, bi = ai - ti, ar += tr, ai += ti;
      }
    }
  }
}

template <typename T>
std::shared_ptr<const Plan<T>> build_plan(int64_t n) {
  auto p = std::make_shared<Plan<T>>();
  p->n = n;
  p->bluestein = n > 1 && (n & (n - 1)) != 0;
  p->m = p->bluestein ? next_pow2(2 * n - 1) : n;
  const int64_t m = p->m;
  int bits = 0;
  while ((int64_t{1} << bits) < m) ++bits;
  p->rev.resize(static_cast<std::size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    int64_t r = 0;
    for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
    p->rev[static_cast<std::size_t>(i)] = r;
  }
  for (int64_t j = 0; j < m / 2; ++j) {
    const double a = -2.0 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(m);
    p->twr.push_back(static_cast<T>(std::cos(a)));
    p->twi.push_back(static_cast<T>(std::sin(a)));
  }
  if (p->bluestein) {
    std::vector<double> cr(static_cast<std::size_t>(n)), ci(cr.size());
    for (int64_t k = 0; k < n; ++k) {  // k² mod 2n keeps the angle exact for long rows
      const auto q = static_cast<double>((k * k) % (2 * n));
      const double a = -std::numbers::pi * q / static_cast<double>(n);
      cr[static_cast<std::size_t>(k)] = std::cos(a), ci[static_cast<std::size_t>(k)] = std::sin(a);
    }
    std::vector<double> br(static_cast<std::size_t>(m), 0.0), bi(br.size(), 0.0);
    for (int64_t k = 0; k < n; ++k) {
      br[static_cast<std::size_t>(k)] = cr[static_cast<std::size_t>(k)];
      bi[static_cast<std::size_t>(k)] = -ci[static_cast<std::size_t>(k)];
      if (k > 0) br[static_cast<std::size_t>(m - k)] = br[static_cast<std::size_t>(k)],
                 bi[static_cast<std::size_t>(m - k)] = bi[static_cast<std::size_t>(k)];
    }
    fft_double(br, bi);
    for (int64_t k = 0; k < m; ++k) {
      p->filter_r.push_back(static_cast<T>(br[static_cast<std::size_t>(k)] / static_cast<double>(m)));
      p->filter_i.push_back(static_cast<T>(bi[static_cast<std::size_t>(k)] / static_cast<double>(m)));
    }
    for (int64_t k = 0; k < n; ++k) {
      p->chirp_r.push_back(static_cast<T>(cr[static_cast<std::size_t>(k)]));
      p->chirp_i.push_back(static_cast<T>(ci[static_cast<std::size_t>(k)]));
    }
  }
  return p;
}

template <typename T>
std::shared_ptr<const Plan<T>> plan_for(int64_t n) {
  static std::mutex mu;
  static std::map<int64_t, std::shared_ptr<const Plan<T>>> plans;
  std::lock_guard lock(mu);
  if (auto it = plans.find(n); it != plans.end()) return it->second;
  if (plans.size() >= 64) plans.clear();  // a bound on the tables kept; the ones in use stay alive with their users
  return plans[n] = build_plan<T>(n);
}

// The radix-2 passes over m positions of kLanes values each, the input in bit-reversed order.
template <typename T>
__attribute__((always_inline)) inline void butterflies_body(T* re, T* im, int64_t m, const T* twr, const T* twi) {
  constexpr int L = kLanes<T>;
  for (int64_t len = 2; len <= m; len <<= 1) {
    const int64_t half = len >> 1, step = m / len;
    for (int64_t s = 0; s < m; s += len) {
      for (int64_t j = 0; j < half; ++j) {
        const T wr = twr[j * step], wi = twi[j * step];
        T* __restrict ar = re + (s + j) * L;
        T* __restrict ai = im + (s + j) * L;
        T* __restrict br = re + (s + j + half) * L;
        T* __restrict bi = im + (s + j + half) * L;
        for (int l = 0; l < L; ++l) {
          const T tr = br[l] * wr - bi[l] * wi, ti = br[l] * wi + bi[l] * wr;
          br[l] = ar[l] - tr;
          bi[l] = ai[l] - ti;
          ar[l] += tr;
          ai[l] += ti;
        }
      }
    }
  }
}

OSPREY_VECTOR_CLONES void butterflies(float* re, float* im, int64_t m, const float* twr, const float* twi) {
  butterflies_body(re, im, m, twr, twi);
}
OSPREY_VECTOR_CLONES void butterflies(double* re, double* im, int64_t m, const double* twr, const double* twi) {
  butterflies_body(re, im, m, twr, twi);
}

// Rows [r0, r0 + count) (count <= kLanes) of the op. The transform computed is always the forward DFT: the inverse
// ones are conj(DFT(conj(x))), so their inputs go in conjugated and their outputs come out conjugated (the real
// inverse: the Hermitian spectrum's full n bins, conjugated, whose DFT's real part is the signal).
template <typename T>
void transform_rows(const Plan<T>& p, FftKind kind, const T* xr, const T* xi, T* yr, T* yi, int64_t r0, int64_t count,
                    std::vector<T>& work) {
  constexpr int L = kLanes<T>;
  const int64_t n = p.n, m = p.m, bins = n / 2 + 1;
  T* re = work.data();
  T* im = re + m * L;
  if (p.bluestein || count < L) std::fill(work.begin(), work.end(), T(0));  // Bluestein's padding, unused lanes
  // The input z_t (t < n) of every lane, placed at rev[t] (times the chirp for Bluestein): t outer, lanes inner, so
  // each position's kLanes values are written together and each row is read in order.
  auto place = [&](int64_t t, const T* vr, const T* vi) {
    T* __restrict dr = re + p.rev[static_cast<std::size_t>(t)] * L;
    T* __restrict di = im + p.rev[static_cast<std::size_t>(t)] * L;
    if (p.bluestein) {
      const T cr = p.chirp_r[static_cast<std::size_t>(t)], ci = p.chirp_i[static_cast<std::size_t>(t)];
      for (int64_t l = 0; l < count; ++l) dr[l] = vr[l] * cr - vi[l] * ci, di[l] = vr[l] * ci + vi[l] * cr;
    } else {
      for (int64_t l = 0; l < count; ++l) dr[l] = vr[l], di[l] = vi[l];
    }
  };
  // Rows are read (and written, below) in tiles of kTile values: rows n apart map to the same cache sets, so each
  // row's cache line is used whole before the next row's is touched.
  constexpr int64_t kTile = 16;
  T ar[L][kTile], ai[L][kTile];
  const int64_t in_len = kind == FftKind::real_inverse ? bins : n;
  for (int64_t t0 = 0; t0 < in_len; t0 += kTile) {
    const int64_t w = std::min(kTile, in_len - t0);
    for (int64_t l = 0; l < count; ++l) {
      const T* a = xr + (r0 + l) * in_len + t0;
      for (int64_t j = 0; j < w; ++j) ar[l][j] = a[j];
      if (kind != FftKind::real_forward) {
        const T* b = xi + (r0 + l) * in_len + t0;
        for (int64_t j = 0; j < w; ++j) ai[l][j] = b[j];
      }
    }
    T vr[L], vi[L];
    for (int64_t j = 0; j < w; ++j) {
      const int64_t t = t0 + j;
      if (kind == FftKind::real_inverse) {
        const bool real_only = t == 0 || 2 * t == n;
        for (int64_t l = 0; l < count; ++l) vr[l] = ar[l][j], vi[l] = real_only ? T(0) : ai[l][j];
        if (t > 0 && n - t >= bins) place(n - t, vr, vi);  // X_(n-t) = conj(X_t), conjugated
        for (int64_t l = 0; l < count; ++l) vi[l] = -vi[l];
      } else if (kind == FftKind::real_forward) {
        for (int64_t l = 0; l < count; ++l) vr[l] = ar[l][j], vi[l] = T(0);
      } else {
        const T sign = kind == FftKind::inverse ? T(-1) : T(1);
        for (int64_t l = 0; l < count; ++l) vr[l] = ar[l][j], vi[l] = sign * ai[l][j];
      }
      place(t, vr, vi);
    }
  }
  butterflies(re, im, m, p.twr.data(), p.twi.data());
  if (p.bluestein) {
    // times the chirp filter's transform, conjugated, into bit-reversed order; the second FFT; conj; times the chirp
    T* re2 = im + m * L;
    T* im2 = re2 + m * L;
    for (int64_t k = 0; k < m; ++k) {
      const T fr = p.filter_r[static_cast<std::size_t>(k)], fi = p.filter_i[static_cast<std::size_t>(k)];
      const T* ar = re + k * L;
      const T* ai = im + k * L;
      T* cr = re2 + p.rev[static_cast<std::size_t>(k)] * L;
      T* ci = im2 + p.rev[static_cast<std::size_t>(k)] * L;
      for (int l = 0; l < L; ++l) cr[l] = ar[l] * fr - ai[l] * fi, ci[l] = -(ar[l] * fi + ai[l] * fr);
    }
    butterflies(re2, im2, m, p.twr.data(), p.twi.data());
    for (int64_t k = 0; k < n; ++k) {
      const T wr = p.chirp_r[static_cast<std::size_t>(k)], wi = p.chirp_i[static_cast<std::size_t>(k)];
      const T* dr = re2 + k * L;
      const T* di = im2 + k * L;
      T* outr = re + k * L;
      T* outi = im + k * L;
      for (int l = 0; l < L; ++l) {
        const T cr = dr[l], ci = -di[l];
        outr[l] = cr * wr - ci * wi, outi[l] = cr * wi + ci * wr;
      }
    }
  }
  // re, im: the DFT of the placed input, natural order, positions k < n.
  const T inv = T(1) / static_cast<T>(n);
  const int64_t out_len = kind == FftKind::real_forward ? bins : n;
  const T scale = kind == FftKind::forward || kind == FftKind::real_forward ? T(1) : inv;
  const T imag_sign = kind == FftKind::inverse ? T(-1) : T(1);
  for (int64_t k0 = 0; k0 < out_len; k0 += kTile) {
    const int64_t w = std::min(kTile, out_len - k0);
    for (int64_t j = 0; j < w; ++j) {
      const T* sr = re + (k0 + j) * L;
      const T* si = im + (k0 + j) * L;
      for (int64_t l = 0; l < count; ++l) ar[l][j] = sr[l] * scale, ai[l][j] = si[l] * scale * imag_sign;
    }
    for (int64_t l = 0; l < count; ++l) {
      T* a = yr + (r0 + l) * out_len + k0;
      for (int64_t j = 0; j < w; ++j) a[j] = ar[l][j];
      if (kind != FftKind::real_inverse) {
        T* b = yi + (r0 + l) * out_len + k0;
        for (int64_t j = 0; j < w; ++j) b[j] = ai[l][j];
      }
    }
  }
}

template <typename T>
void fft_typed(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::FftAttrs>();
  if (at.n < 1 || at.rows < 1) return;
  const auto plan = plan_for<T>(at.n);
  const T* xr = ctx.inputs[0].data<T>();
  const T* xi = ctx.inputs.size() > 1 ? ctx.inputs[1].data<T>() : nullptr;
  T* yr = ctx.outputs[0].data<T>();
  T* yi = ctx.outputs.size() > 1 ? ctx.outputs[1].data<T>() : nullptr;
  constexpr int L = kLanes<T>;
  const int64_t m = plan->m, buffers = plan->bluestein ? 4 : 2;
  int64_t log_m = 1;
  while ((int64_t{1} << log_m) < m) ++log_m;
  // Chunks of rows worth a fork: about 2^18 butterfly-lane operations each.
  const int64_t grain = std::max<int64_t>(16, (int64_t{1} << 18) / std::max<int64_t>(1, m * log_m));
  parallel_chunks(at.rows, [&](int64_t begin, int64_t end) {
    std::vector<T> work(static_cast<std::size_t>(buffers * m * L));
    for (int64_t r = begin; r < end; r += L) {
      transform_rows(*plan, at.kind, xr, xi, yr, yi, r, std::min<int64_t>(L, end - r), work);
    }
  }, grain);
}

void fft_kernel(const KernelContext& ctx) {
  switch (ctx.inputs[0].dtype()) {
    case DType::float32: return fft_typed<float>(ctx);
    case DType::float64: return fft_typed<double>(ctx);
    default:
      throw InvalidArgumentError(fmt::format("Fft kernel: float32 or float64 rows, got {}",
                                             dtype_name(ctx.inputs[0].dtype())));
  }
}

}  // namespace

void register_fft_kernels() { ops::register_kernel(ops::OpId::Fft, DeviceType::CPU, fft_kernel); }

}  // namespace osprey::cpu
