// Discrete Fourier transforms along the last axis (ops::FftKind): forward through dispatch, backward as the adjoint
// transforms (the forward DFT's adjoint is n times the inverse one; rfft's and irfft's adjoints weight the bins that
// stand for two of the full spectrum's).
#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

namespace {

void check_float(const Tensor& x, const char* op) {
  if (x.dtype() != DType::float32 && x.dtype() != DType::float64) {
    throw InvalidArgumentError(fmt::format("{}: float32 or float64 tensors, got {} (cast first)", op,
                                           dtype_name(x.dtype())));
  }
  if (x.shape().rank() < 1) {
    throw InvalidArgumentError(fmt::format("{}: the input must have rank >= 1 (the transform runs along its last axis); "
                                           "got shape {}",
                                           op, x.shape().to_string()));
  }
}

void check_parts(const Tensor& re, const Tensor& im, const char* op) {
  check_float(re, op);
  if (re.shape() != im.shape() || re.dtype() != im.dtype()) {
    throw InvalidArgumentError(fmt::format("{}: the real and imaginary parts must have one shape and dtype; got {} {} "
                                           "and {} {}",
                                           op, re.shape().to_string(), dtype_name(re.dtype()), im.shape().to_string(),
                                           dtype_name(im.dtype())));
  }
}

Tensor or_zeros(const Tensor& g, const Tensor& like) {
  return g.defined() ? g : Tensor::zeros(like.shape(), like.dtype());
}

// A row of per-bin factors (bins) in `dtype`: `ends` for bin 0 and, for even n, bin n/2; `middle` for the others.
Tensor bin_weights(int64_t n, double ends, double middle, DType dtype) {
  const int64_t bins = n / 2 + 1;
  std::vector<double> w(static_cast<std::size_t>(bins), middle);
  w.front() = ends;
  if (n % 2 == 0) w.back() = ends;
  return Tensor::from_vector(w, Shape({bins})).cast(dtype);
}

// Runs the Fft op on rows of `inputs` (same leading shape), outputs of `out_last` columns.
std::vector<Tensor> run_fft(FftKind kind, const char* name, std::vector<Tensor> inputs, int64_t n, int64_t out_last,
                            int outputs) {
  const Shape& in_shape = inputs[0].shape();
  int64_t rows = 1;
  for (int a = 0; a + 1 < in_shape.rank(); ++a) rows *= in_shape[a];
  const FftAttrs attrs{kind, rows, n};
  auto& dev = place(OpId::Fft, name, inputs);
  const Shape out_shape = in_shape.with_dim(in_shape.rank() - 1, out_last);
  std::vector<Tensor> outs;
  for (int i = 0; i < outputs; ++i) outs.push_back(Tensor::empty(out_shape, inputs[0].dtype(), &dev));
  if (rows > 0 && (n > 0 || out_last > 0)) run(OpId::Fft, dev, inputs, outs, &attrs);
  return outs;
}

}  // namespace

std::pair<Tensor, Tensor> fft(const Tensor& real, const Tensor& imag, bool inverse) {
  const char* name = inverse ? "IFFT" : "FFT";
  check_parts(real, imag, name);
  const int64_t n = real.shape()[-1];
  auto outs = run_fft(inverse ? FftKind::inverse : FftKind::forward, name, {real, imag}, n, n, 2);
  const Tensor in[2] = {real, imag};
  maybe_record(name, in, outs, [&] {
    return BackwardFn([real, imag, n, inverse](const std::vector<Tensor>& g) {
      // The adjoint of the forward DFT is n times the inverse one, the inverse's is the forward one over n.
      auto [dr, di] = fft(or_zeros(g[0], real), or_zeros(g.size() > 1 ? g[1] : Tensor(), imag), !inverse);
      const Tensor s = Tensor::scalar(inverse ? 1.0 / static_cast<double>(n) : static_cast<double>(n), real.dtype());
      return std::vector<Tensor>{mul(dr, s), mul(di, s)};
    });
  });
  return {outs[0], outs[1]};
}

std::pair<Tensor, Tensor> rfft(const Tensor& x) {
  check_float(x, "RFFT");
  const int64_t n = x.shape()[-1];
  if (n < 1) throw InvalidArgumentError("RFFT: the transform length (the last axis) must be >= 1; got 0");
  auto outs = run_fft(FftKind::real_forward, "RFFT", {x}, n, n / 2 + 1, 2);
  const Tensor in[1] = {x};
  maybe_record("RFFT", in, outs, [&] {
    return BackwardFn([x, n](const std::vector<Tensor>& g) {
      // d x_t = Σ_k Re(g_k·e^(2πi·tk/n)) over the kept bins: n·irfft of g with the bins that irfft counts twice
      // halved.
      const Shape bins_shape = x.shape().with_dim(x.shape().rank() - 1, n / 2 + 1);
      const Tensor zero = Tensor::zeros(bins_shape, x.dtype());
      const Tensor w = bin_weights(n, 1.0, 0.5, x.dtype());
      const Tensor gr = g[0].defined() ? mul(g[0], w) : zero;
      const Tensor gi = g.size() > 1 && g[1].defined() ? mul(g[1], w) : zero;
      return std::vector<Tensor>{mul(irfft(gr, gi, n), Tensor::scalar(static_cast<double>(n), x.dtype()))};
    });
  });
  return {outs[0], outs[1]};
}

Tensor irfft(const Tensor& real, const Tensor& imag, int64_t n) {
  check_parts(real, imag, "IRFFT");
  if (n < 1 || real.shape()[-1] != n / 2 + 1) {
    throw InvalidArgumentError(fmt::format("IRFFT: a transform of length n >= 1 takes n / 2 + 1 bins; got n = {} and "
                                           "{} bins (shape {})",
                                           n, real.shape()[-1], real.shape().to_string()));
  }
  auto outs = run_fft(FftKind::real_inverse, "IRFFT", {real, imag}, n, n, 1);
  const Tensor in[2] = {real, imag};
  maybe_record("IRFFT", in, outs, [&] {
    return BackwardFn([real, n](const std::vector<Tensor>& g) {
      // y_t = (1/n)·Σ_k c_k·Re(X_k·e^(2πi·tk/n)), c_k = 2 but for bins 0 and n/2 (1, their imaginary parts unused):
      // dX_k = (c_k / n)·rfft(g)_k.
      auto [fr, fi] = rfft(or_zeros(g[0], Tensor::zeros(real.shape().with_dim(real.shape().rank() - 1, n), real.dtype())));
      const double inv = 1.0 / static_cast<double>(n);
      return std::vector<Tensor>{mul(fr, bin_weights(n, inv, 2.0 * inv, real.dtype())),
                                 mul(fi, bin_weights(n, 0.0, 2.0 * inv, real.dtype()))};
    });
  });
  return outs[0];
}

}  // namespace osprey::ops
