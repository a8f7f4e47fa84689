// The device kernel of Fft (ops::FftKind), the CPU kernel's algorithm: a radix-2 FFT for lengths that are powers of
// two, Bluestein's algorithm (a chirp and a circular convolution through radix-2 FFTs of a power of two >= 2n - 1)
// for the others. A block per row (grid-stride over rows), its threads sharing each pass's butterflies, the values
// in a per-block slice of global scratch; twiddles and chirps computed in double (sincospi) and rounded once.
// The inverse transforms are conj(DFT(conj(x))), as on the CPU.
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"

namespace osprey::cuda {

namespace {

// FftKind's values (ops/attrs.h).
constexpr int kForward = 0, kInverse = 1, kRealForward = 2, kRealInverse = 3;

struct FftGeometry {
  int64_t n, m;  // the transform's length; the radix-2 length
  int bits;      // log2(m)
  bool bluestein;
};

FftGeometry geometry_of(int64_t n) {
  FftGeometry g{n, 1, 0, n > 1 && (n & (n - 1)) != 0};
  const int64_t target = g.bluestein ? 2 * n - 1 : n;
  while (g.m < target) g.m <<= 1, ++g.bits;
  return g;
}

int64_t buffers_of(const FftGeometry& g) { return g.bluestein ? 4 : 2; }

// Blocks of a launch: one per row, at most 4096, and at most 2^26 scratch values in all (at least one block).
int64_t fft_blocks(int64_t rows, const FftGeometry& g) {
  int64_t b = rows < 4096 ? rows : 4096;
  const int64_t fit = (int64_t{1} << 26) / (buffers_of(g) * g.m);
  if (b > fit) b = fit;
  return b < 1 ? 1 : b;
}

__device__ inline int64_t bit_reverse(int64_t i, int bits) {
  return bits == 0 ? 0 : static_cast<int64_t>(__brevll(static_cast<unsigned long long>(i)) >> (64 - bits));
}

// e^(-πi·q) rounded to T.
template <typename T>
__device__ inline void unit(double q, T& c, T& s) {
  double sd, cd;
  sincospi(-q, &sd, &cd);
  c = static_cast<T>(cd), s = static_cast<T>(sd);
}

// The radix-2 passes over m values in bit-reversed order, in place; every thread of the block takes part.
template <typename T>
__device__ void radix2(T* re, T* im, int64_t m) {
  for (int64_t len = 2; len <= m; len <<= 1) {
    const int64_t half = len >> 1;
    for (int64_t b = threadIdx.x; b < m / 2; b += blockDim.x) {
      const int64_t j = b % half, s = (b / half) * len;
      T wr, wi;
      unit(2.0 * static_cast<double>(j) / static_cast<double>(len), wr, wi);
      T& ar = re[s + j];
      T& ai = im[s + j];
      T& br = re[s + j + half];
      T& bi = im[s + j + half];
      const T tr = br * wr - bi * wi, ti = br * wi + bi * wr;
      br = ar - tr, bi = ai - ti;
      ar += tr, ai += ti;
    }
    __syncthreads();
  }
}

// The chirp w_k = e^(-πi·k²/n) (k² mod 2n keeps the angle exact).
template <typename T>
__device__ inline void chirp(int64_t k, int64_t n, T& c, T& s) {
  unit(static_cast<double>((k * k) % (2 * n)) / static_cast<double>(n), c, s);
}

template <typename T>
__global__ void fft_k(int kind, const T* xr, const T* xi, T* yr, T* yi, T* work, int64_t rows, FftGeometry g) {
  const int64_t n = g.n, m = g.m, bins = n / 2 + 1;
  T* re = work + static_cast<int64_t>(blockIdx.x) * (g.bluestein ? 4 : 2) * m;
  T* im = re + m;
  T* re2 = im + m;  // Bluestein's second pair of buffers
  T* im2 = re2 + m;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    for (int64_t i = threadIdx.x; i < (g.bluestein ? 4 : 2) * m; i += blockDim.x) re[i] = T(0);
    __syncthreads();
    // z_t (conjugated for the inverse kinds; the real inverse's Hermitian spectrum), times the chirp for
    // Bluestein, at bit-reversed positions.
    auto place = [&](int64_t t, T vr, T vi) {
      if (g.bluestein) {
        T c, s;
        chirp(t, n, c, s);
        const T ur = vr * c - vi * s, ui = vr * s + vi * c;
        vr = ur, vi = ui;
      }
      const int64_t at = bit_reverse(t, g.bits);
      re[at] = vr, im[at] = vi;
    };
    if (kind == kRealInverse) {
      for (int64_t k = threadIdx.x; k < bins; k += blockDim.x) {
        const T a = xr[row * bins + k], b = xi[row * bins + k];
        place(k, a, (k == 0 || 2 * k == n) ? T(0) : -b);
        if (k > 0 && n - k >= bins) place(n - k, a, b);
      }
    } else {
      for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
        const T a = xr[row * n + t];
        const T b = kind == kRealForward ? T(0) : (kind == kInverse ? -xi[row * n + t] : xi[row * n + t]);
        place(t, a, b);
      }
    }
    if (g.bluestein) {  // the chirp filter conj(w) wrapped around m, bit-reversed, in the second pair
      for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
        T c, s;
        chirp(k, n, c, s);
        int64_t at = bit_reverse(k, g.bits);
        re2[at] = c, im2[at] = -s;
        if (k > 0) at = bit_reverse(m - k, g.bits), re2[at] = c, im2[at] = -s;
      }
    }
    __syncthreads();
    radix2(re, im, m);
    if (g.bluestein) {
      radix2(re2, im2, m);
      const T inv_m = T(1) / static_cast<T>(m);
      for (int64_t k = threadIdx.x; k < m; k += blockDim.x) {  // conj(A·B)/m in place
        const T ar = re[k], ai = im[k], br = re2[k], bi = im2[k];
        re[k] = (ar * br - ai * bi) * inv_m;
        im[k] = -(ar * bi + ai * br) * inv_m;
      }
      __syncthreads();
      for (int64_t k = threadIdx.x; k < m; k += blockDim.x) {
        const int64_t at = bit_reverse(k, g.bits);
        re2[at] = re[k], im2[at] = im[k];
      }
      __syncthreads();
      radix2(re2, im2, m);
      for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {  // X_k = w_k·conj(D_k)
        T c, s;
        chirp(k, n, c, s);
        const T dr = re2[k], di = -im2[k];
        re[k] = dr * c - di * s, im[k] = dr * s + di * c;
      }
      __syncthreads();
    }
    const T inv = T(1) / static_cast<T>(n);
    if (kind == kForward) {
      for (int64_t k = threadIdx.x; k < n; k += blockDim.x) yr[row * n + k] = re[k], yi[row * n + k] = im[k];
    } else if (kind == kInverse) {
      for (int64_t k = threadIdx.x; k < n; k += blockDim.x) yr[row * n + k] = re[k] * inv, yi[row * n + k] = -im[k] * inv;
    } else if (kind == kRealForward) {
      for (int64_t k = threadIdx.x; k < bins; k += blockDim.x) yr[row * bins + k] = re[k], yi[row * bins + k] = im[k];
    } else {
      for (int64_t t = threadIdx.x; t < n; t += blockDim.x) yr[row * n + t] = re[t] * inv;
    }
    __syncthreads();  // the next row reuses the scratch
  }
}

}  // namespace

int64_t fft_work_elements(int64_t rows, int64_t n) {
  if (rows < 1 || n < 1) return 0;
  const FftGeometry g = geometry_of(n);
  return fft_blocks(rows, g) * buffers_of(g) * g.m;
}

void launch_fft(int kind, Dt dt, const void* xr, const void* xi, void* yr, void* yi, void* work, int64_t rows, int64_t n,
                cudaStream_t s) {
  if (rows < 1 || n < 1) return;
  const FftGeometry g = geometry_of(n);
  const int blocks = static_cast<int>(fft_blocks(rows, g));
  if (dt == Dt::f64) {
    fft_k<double><<<blocks, kThreads, 0, s>>>(kind, static_cast<const double*>(xr), static_cast<const double*>(xi),
                                              static_cast<double*>(yr), static_cast<double*>(yi),
                                              static_cast<double*>(work), rows, g);
  } else {
    fft_k<float><<<blocks, kThreads, 0, s>>>(kind, static_cast<const float*>(xr), static_cast<const float*>(xi),
                                             static_cast<float*>(yr), static_cast<float*>(yi),
                                             static_cast<float*>(work), rows, g);
  }
}

}  // namespace osprey::cuda
