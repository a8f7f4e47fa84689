// The CPU kernel of Fft (ops::FftKind): a radix-2 FFT for lengths that are powers of two, Bluestein's algorithm
// (a chirp, a circular convolution through two radix-2 FFTs of a power of two >= 2n - 1) for the others, so every
// length costs O(n log n); real transforms of even length run one complex FFT of half the length. Rows are
// transformed kLanes at a time, lane l of the work buffer holding row r0 + l: every
// butterfly is a short loop over lanes with one twiddle, which the compiler turns into SIMD instructions. float32
// rows compute in float32, float64 rows in float64; the tables (twiddles, chirp, the chirp filter's transform) are
// computed in double and kept per length.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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
  std::vector<T> split_c, split_s;          // e^(-2πi·k/2n), k <= n: a real transform of 2n points through this one
};

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
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

// The forward DFT of p.n lane vectors z_t (z(t, vr, vi) fills them), into re/im at positions k < p.n (natural
// order). work holds (Bluestein ? 4 : 2) · p.m · kLanes values.
template <typename T, typename Z>
void dft_lanes(const Plan<T>& p, T* work, Z&& z) {
  constexpr int L = kLanes<T>;
  const int64_t n = p.n, m = p.m;
  T* re = work;
  T* im = re + m * L;
  if (p.bluestein) std::fill(work, work + 2 * m * L, T(0));  // the padding to m
  T vr[L], vi[L];
  for (int64_t t = 0; t < n; ++t) {
    z(t, vr, vi);
    T* __restrict dr = re + p.rev[static_cast<std::size_t>(t)] * L;
    T* __restrict di = im + p.rev[static_cast<std::size_t>(t)] * L;
    if (p.bluestein) {
      const T cr = p.chirp_r[static_cast<std::size_t>(t)], ci = p.chirp_i[static_cast<std::size_t>(t)];
      for (int l = 0; l < L; ++l) dr[l] = vr[l] * cr - vi[l] * ci, di[l] = vr[l] * ci + vi[l] * cr;
    } else {
      for (int l = 0; l < L; ++l) dr[l] = vr[l], di[l] = vi[l];
    }
  }
  butterflies(re, im, m, p.twr.data(), p.twi.data());
  if (!p.bluestein) return;
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
  for (int64_t k = 0; k <= n; ++k) {
    const double a = -std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    p->split_c.push_back(static_cast<T>(std::cos(a)));
    p->split_s.push_back(static_cast<T>(std::sin(a)));
  }
  if (p->bluestein) {
    std::vector<double> cr(static_cast<std::size_t>(n)), ci(cr.size());
    for (int64_t k = 0; k < n; ++k) {  // k² mod 2n keeps the angle exact for long rows
      const auto q = static_cast<double>((k * k) % (2 * n));
      const double a = -std::numbers::pi * q / static_cast<double>(n);
      cr[static_cast<std::size_t>(k)] = std::cos(a), ci[static_cast<std::size_t>(k)] = std::sin(a);
    }
    // The filter conj(w) wrapped around m, through the lanes' own FFT in double (m is a power of two: no Bluestein
    // inside); every lane holds the same values, lane 0 is read.
    const auto radix2 = build_plan<double>(m);
    constexpr int L = kLanes<double>;
    std::vector<double> work(static_cast<std::size_t>(2 * m * L));
    dft_lanes(*radix2, work.data(), [&](int64_t t, double* vr, double* vi) {
      const int64_t k = t < n ? t : m - t < n ? m - t : -1;
      std::fill(vr, vr + L, k < 0 ? 0.0 : cr[static_cast<std::size_t>(k)]);
      std::fill(vi, vi + L, k < 0 ? 0.0 : -ci[static_cast<std::size_t>(k)]);
    });
    for (int64_t k = 0; k < m; ++k) {
      p->filter_r.push_back(static_cast<T>(work[static_cast<std::size_t>(k * L)] / static_cast<double>(m)));
      p->filter_i.push_back(static_cast<T>(work[static_cast<std::size_t>((m + k) * L)] / static_cast<double>(m)));
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

// Rows are read and written in tiles of kTile values: rows n apart map to the same cache sets, so each row's cache
// line is used whole before the next row's is touched. Staged lane-major: s[t·kLanes + l] is row r0 + l's value t.
constexpr int64_t kTile = 16;

// Rows [r0, r0 + count) of (rows, len) x into the lane-major s (kIn), or back out of it.
template <bool kIn, typename T>
void copy_lanes(const T* from, T* to, int64_t len, int64_t r0, int64_t count) {
  constexpr int L = kLanes<T>;
  for (int64_t t0 = 0; t0 < len; t0 += kTile) {
    const int64_t w = std::min(kTile, len - t0);
    for (int64_t l = 0; l < count; ++l) {
      const int64_t row = (r0 + l) * len + t0;
      for (int64_t j = 0; j < w; ++j) {
        const int64_t lane = (t0 + j) * L + l;
        if constexpr (kIn) to[lane] = from[row + j];
        else to[row + j] = from[lane];
      }
    }
  }
}

// Rows [r0, r0 + count) (count <= kLanes) of the op. Every transform is a forward DFT of kLanes rows at once:
// the inverse ones are conj(DFT(conj(x))); the real ones of even n go through one complex DFT of n/2 points
// (z_t = x_2t + i·x_2t+1 forward, split into the even and odd samples' transforms; backward the reverse), the others
// of odd n through a complex one of n points. `stage` holds the staged input and output, `work` dft_lanes's.
template <typename T>
void transform_rows(const Plan<T>& p, FftKind kind, int64_t n, const T* xr, const T* xi,
                    T* yr, T* yi, int64_t r0, int64_t count, T* stage, T* work) {
  constexpr int L = kLanes<T>;
  const int64_t bins = n / 2 + 1, h = n / 2;
  const bool real = kind == FftKind::real_forward || kind == FftKind::real_inverse;
  const int64_t in_len = kind == FftKind::real_inverse ? bins : n, out_len = kind == FftKind::real_forward ? bins : n;
  T* ir = stage;  // the input, lane-major
  T* ii = ir + in_len * L;
  T* orr = ii + in_len * L;  // the output, lane-major
  T* oi = orr + std::max(in_len, out_len) * L;
  if (count < L) std::fill(stage, stage + 2 * in_len * L, T(0));  // lanes without a row
  copy_lanes<true>(xr, ir, in_len, r0, count);
  if (kind != FftKind::real_forward) copy_lanes<true>(xi, ii, in_len, r0, count);
  T* re = work;
  T* im = work + p.m * L;
  const T inv = T(1) / static_cast<T>(n);
  if (!real || n % 2 == 1) {
    // A complex DFT of n points: x itself, conj(x), real x, or the Hermitian spectrum's n bins conjugated.
    dft_lanes(p, work, [&](int64_t t, T* vr, T* vi) {
      if (kind == FftKind::real_inverse) {
        const bool mirrored = t >= bins;  // X_t = conj(X_(n-t)), conjugated: X_(n-t)
        const int64_t k = mirrored ? n - t : t;
        const T sign = mirrored ? T(1) : T(-1);
        for (int l = 0; l < L; ++l) vr[l] = ir[k * L + l], vi[l] = k == 0 ? T(0) : sign * ii[k * L + l];
      } else {
        const T sign = kind == FftKind::inverse ? T(-1) : T(1);
        for (int l = 0; l < L; ++l) vr[l] = ir[t * L + l], vi[l] = kind == FftKind::real_forward ? T(0) : sign * ii[t * L + l];
      }
    });
    const T scale = kind == FftKind::forward || kind == FftKind::real_forward ? T(1) : inv;
    const T imag_sign = kind == FftKind::inverse ? T(-1) : T(1);
    for (int64_t k = 0; k < out_len; ++k) {
      for (int l = 0; l < L; ++l) orr[k * L + l] = re[k * L + l] * scale, oi[k * L + l] = im[k * L + l] * scale * imag_sign;
    }
  } else if (kind == FftKind::real_forward) {
    dft_lanes(p, work, [&](int64_t t, T* vr, T* vi) {
      for (int l = 0; l < L; ++l) vr[l] = ir[2 * t * L + l], vi[l] = ir[(2 * t + 1) * L + l];
    });
    // E_k = (Z_k + conj(Z_(h-k)))/2, O_k = (Z_k - conj(Z_(h-k)))/(2i), X_k = E_k + e^(-2πik/n)·O_k, Z_h = Z_0.
    for (int64_t k = 0; k <= h; ++k) {
      const int64_t a = k % h, b = (h - k) % h;
      const T wc = p.split_c[static_cast<std::size_t>(k)], ws = p.split_s[static_cast<std::size_t>(k)];
      for (int l = 0; l < L; ++l) {
        const T zr = re[a * L + l], zi = im[a * L + l], cr = re[b * L + l], ci = -im[b * L + l];
        const T er = (zr + cr) * T(0.5), ei = (zi + ci) * T(0.5);
        const T or_ = (zi - ci) * T(0.5), oi_ = -(zr - cr) * T(0.5);
        orr[k * L + l] = er + wc * or_ - ws * oi_;
        oi[k * L + l] = ei + wc * oi_ + ws * or_;
      }
    }
  } else {  // real_inverse, even n
    // E_k = (X_k + conj(X_(h-k)))/2, O_k = (X_k - conj(X_(h-k)))·e^(2πik/n)/2, Z_k = E_k + i·O_k (k < h; the
    // imaginary parts of X_0 and X_h unused); z = IFFT_h(Z) = conj(DFT(conj(Z)))/h; x_2t = Re z_t, x_2t+1 = Im z_t.
    dft_lanes(p, work, [&](int64_t k, T* vr, T* vi) {
      const int64_t b = h - k;
      const T wc = p.split_c[static_cast<std::size_t>(k)], ws = -p.split_s[static_cast<std::size_t>(k)];
      for (int l = 0; l < L; ++l) {
        const T xr_ = ir[k * L + l], xi_ = k == 0 ? T(0) : ii[k * L + l];
        const T yr_ = ir[b * L + l], yi_ = b == h ? T(0) : -ii[b * L + l];  // conj(X_(h-k))
        const T er = (xr_ + yr_) * T(0.5), ei = (xi_ + yi_) * T(0.5);
        const T dr = (xr_ - yr_) * T(0.5), di = (xi_ - yi_) * T(0.5);
        const T or_ = dr * wc - di * ws, oi_ = dr * ws + di * wc;
        vr[l] = er - oi_;       // Z = E + i·O, conjugated
        vi[l] = -(ei + or_);
      }
    });
    // z_t = conj(D_t)/h, and the signal is its real and imaginary parts interleaved; irfft's 1/n is 1/(2h), and
    // the halves above make up the other 2.
    const T s2 = T(2) * inv;
    for (int64_t t = 0; t < h; ++t) {
      for (int l = 0; l < L; ++l) orr[2 * t * L + l] = re[t * L + l] * s2, orr[(2 * t + 1) * L + l] = -im[t * L + l] * s2;
    }
  }
  copy_lanes<false>(orr, yr, out_len, r0, count);
  if (kind != FftKind::real_inverse) copy_lanes<false>(oi, yi, out_len, r0, count);
}

template <typename T>
void fft_typed(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::FftAttrs>();
  if (at.n < 1 || at.rows < 1) return;
  const bool split = (at.kind == FftKind::real_forward || at.kind == FftKind::real_inverse) && at.n % 2 == 0;
  const auto plan = plan_for<T>(split ? at.n / 2 : at.n);
  const T* xr = ctx.inputs[0].data<T>();
  const T* xi = ctx.inputs.size() > 1 ? ctx.inputs[1].data<T>() : nullptr;
  T* yr = ctx.outputs[0].data<T>();
  T* yi = ctx.outputs.size() > 1 ? ctx.outputs[1].data<T>() : nullptr;
  constexpr int L = kLanes<T>;
  const int64_t m = plan->m, buffers = plan->bluestein ? 4 : 2, len = at.n / 2 + 1 + at.n;
  int64_t log_m = 1;
  while ((int64_t{1} << log_m) < m) ++log_m;
  // Chunks of rows worth a fork: about 2^18 butterfly-lane operations each.
  const int64_t grain = std::max<int64_t>(16, (int64_t{1} << 18) / std::max<int64_t>(1, m * log_m));
  parallel_chunks(at.rows, [&](int64_t begin, int64_t end) {
    std::vector<T> work(static_cast<std::size_t>(buffers * m * L)), stage(static_cast<std::size_t>(4 * len * L));
    for (int64_t r = begin; r < end; r += L) {
      transform_rows(*plan, at.kind, at.n, xr, xi, yr, yi, r, std::min<int64_t>(L, end - r), stage.data(),
                     work.data());
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
