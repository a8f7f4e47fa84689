// keras.ops.linalg on Osprey's linear-algebra ops (osprey::ops::lu, cholesky, triangular_solve, matrix_inverse,
// matrix_solve, the determinants, self_adjoint_eig, svd): Keras's argument checks (ValueError), its TensorFlow
// backend's compositions (cholesky_inverse, matrix_power, pinv, lstsq, matrix_rank) and its result layouts (lu_factor's
// pivots as the inverse permutation, svd's vh). The kernels compute in float32: other float dtypes are cast there and
// back, integers give float32.
#include <cmath>
#include <limits>

#include "keras/ops/common.h"

namespace osprey::keras::ops {

namespace core = osprey::ops;
using detail::float_of;

namespace {

constexpr double kFloat32Eps = std::numeric_limits<float>::epsilon();

void assert_matrices(const Tensor& x, const char* op) {
  if (x.shape().rank() < 2) {
    throw ValueError(fmt::format("{}: expected input to have rank >= 2; received input with shape {}", op,
                                 x.shape().to_string()));
  }
}

void assert_square(const Tensor& x, const char* op) {
  assert_matrices(x, op);
  if (x.shape()[-1] != x.shape()[-2]) {
    throw ValueError(fmt::format("{}: expected a square matrix; received non-square input with shape {}", op,
                                 x.shape().to_string()));
  }
}

Tensor f32(const Tensor& x) { return x.dtype() == DType::float32 ? x : core::cast(x, DType::float32); }
Tensor as(const Tensor& y, DType t) { return y.dtype() == t ? y : core::cast(y, t); }

// b as a matrix (..., M, K) for a (..., M, M): a vector (..., M) of rank a's - 1 becomes one column. Keras's checks.
Tensor rhs_matrix(const Tensor& a, const Tensor& b, const char* op, bool& was_vector) {
  assert_square(a, op);
  if (b.shape().rank() < 1) throw ValueError(fmt::format("{}: expected b to have rank >= 1; received a scalar", op));
  was_vector = b.shape().rank() == a.shape().rank() - 1;
  if (!was_vector && b.shape().rank() < 2) {
    throw ValueError(fmt::format("{}: b of shape {} is neither a vector (..., M) of rank {} nor matrices (..., M, K) "
                                 "for a of shape {}", op, b.shape().to_string(), a.shape().rank() - 1,
                                 a.shape().to_string()));
  }
  const int64_t rows = was_vector ? b.shape()[-1] : b.shape()[-2];
  if (rows != a.shape()[-2]) {
    throw ValueError(fmt::format("{}: incompatible shapes between a and b: a.shape={}, b.shape={} ({} rows against {})",
                                 op, a.shape().to_string(), b.shape().to_string(), rows, a.shape()[-2]));
  }
  return was_vector ? expand_dims(f32(b), -1) : f32(b);
}

DType result_dtype(const Tensor& a, const Tensor& b) {
  return float_of(a.dtype()) == DType::float64 || float_of(b.dtype()) == DType::float64 ? DType::float64
                                                                                      : float_of(a.dtype());
}

// The identity (M, M) broadcast over x's batch axes.
Tensor eye_like(const Tensor& x) {
  const Tensor e = eye(x.shape()[-1]);
  const auto d = x.shape().dims();
  return x.shape().rank() == 2 ? e : broadcast_to(e, std::vector<int64_t>(d.begin(), d.end()));
}

}  // namespace

Tensor cholesky(const Tensor& x, bool upper) {
  assert_square(x, "cholesky");
  const Tensor l = core::cholesky(f32(x));
  if (l.num_elements() && all(isfinite(l)).item() == 0.0) {
    throw ValueError(fmt::format("Cholesky decomposition failed: the input (shape {}) is not symmetric positive "
                                 "definite (a non-positive pivot)", x.shape().to_string()));
  }
  return as(upper ? swapaxes(l, -1, -2) : l, float_of(x.dtype()));
}

Tensor cholesky_inverse(const Tensor& x, bool upper) {
  // x is the Cholesky factor (Keras's backends): A⁻¹ = L⁻ᵀ·L⁻¹ (upper: U⁻¹·U⁻ᵀ).
  assert_square(x, "cholesky_inverse");
  const Tensor inv_chol = core::triangular_solve(f32(x), eye_like(f32(x)), !upper);
  const Tensor t = swapaxes(inv_chol, -1, -2);
  return as(upper ? matmul(inv_chol, t) : matmul(t, inv_chol), float_of(x.dtype()));
}

Tensor det(const Tensor& x) {
  assert_square(x, "det");
  return as(core::matrix_determinant(f32(x)), float_of(x.dtype()));
}

Tensor inv(const Tensor& x) {
  assert_square(x, "inv");
  return as(core::matrix_inverse(f32(x)), float_of(x.dtype()));
}

std::vector<Tensor> lu_factor(const Tensor& x) {
  assert_square(x, "lu_factor");
  const std::vector<Tensor> f = core::lu(f32(x));
  // TensorFlow's backend: tf.linalg.lu's permutation inverted (row i of x is row pivots[i] of lu).
  return {as(f[0], float_of(x.dtype())), argsort(f[1], -1)};
}

Tensor solve(const Tensor& a, const Tensor& b) {
  bool vector = false;
  const Tensor rhs = rhs_matrix(a, b, "solve", vector);
  const Tensor x = core::matrix_solve(f32(a), rhs);
  return as(vector ? squeeze(x, -1) : x, result_dtype(a, b));
}

Tensor solve_triangular(const Tensor& a, const Tensor& b, bool lower) {
  bool vector = false;
  const Tensor rhs = rhs_matrix(a, b, "solve_triangular", vector);
  const Tensor x = core::triangular_solve(f32(a), rhs, lower);
  return as(vector ? squeeze(x, -1) : x, result_dtype(a, b));
}

std::vector<Tensor> slogdet(const Tensor& x) {
  assert_square(x, "slogdet");
  std::vector<Tensor> r = core::log_matrix_determinant(f32(x));
  return {as(r[0], float_of(x.dtype())), as(r[1], float_of(x.dtype()))};
}

std::vector<Tensor> eigh(const Tensor& x) {
  assert_square(x, "eigh");
  std::vector<Tensor> r = core::self_adjoint_eig(f32(x));
  return {as(r[0], float_of(x.dtype())), as(r[1], float_of(x.dtype()))};
}

std::vector<Tensor> svd(const Tensor& x, bool full_matrices, bool compute_uv) {
  assert_matrices(x, "svd");
  const DType t = float_of(x.dtype());
  const std::vector<Tensor> r = core::svd(f32(x), full_matrices && compute_uv);
  if (!compute_uv) return {as(r[0], t)};
  return {as(r[1], t), as(r[0], t), as(swapaxes(r[2], -1, -2), t)};
}

std::vector<Tensor> qr(const Tensor& x, const std::string& mode) {
  assert_matrices(x, "qr");
  if (mode != "reduced" && mode != "complete") {
    throw ValueError(fmt::format("qr: mode '{}' is not supported; expected one of 'reduced', 'complete'", mode));
  }
  const DType t = float_of(x.dtype());
  const std::vector<Tensor> r = core::qr(f32(x), mode == "complete");
  return {as(r[0], t), as(r[1], t)};
}

Tensor pinv(const Tensor& x, std::optional<double> rcond) {
  assert_matrices(x, "pinv");
  const int64_t m = x.shape()[-2], n = x.shape()[-1];
  // tf.linalg.pinv: singular values at most rcond · the largest dropped (as 1/inf); rcond 10·max(M, N)·ε unset.
  const double r = rcond ? *rcond : 10.0 * static_cast<double>(std::max(m, n)) * kFloat32Eps;
  if (x.num_elements() == 0) {  // no singular values: the (N, M) zeros
    const auto d = x.shape().dims();
    std::vector<int64_t> out(d.begin(), d.end());
    std::swap(out[out.size() - 1], out[out.size() - 2]);
    return as(Tensor::zeros(Shape(out)), float_of(x.dtype()));
  }
  const std::vector<Tensor> usv = core::svd(f32(x), false);
  const Tensor& s = usv[0];
  const Tensor cutoff = multiply(max(s, -1, true), r);
  const Tensor kept = core::where(greater(s, cutoff), s, Tensor::scalar(INFINITY));
  const Tensor v_scaled = core::div(usv[2], expand_dims(kept, -2));
  return as(matmul(v_scaled, swapaxes(usv[1], -1, -2)), float_of(x.dtype()));
}

Tensor lstsq(const Tensor& a, const Tensor& b, std::optional<double> rcond) {
  if (a.shape().rank() != 2) {
    throw ValueError(fmt::format("lstsq: a must be two-dimensional; got shape {}", a.shape().to_string()));
  }
  if (b.shape().rank() != 1 && b.shape().rank() != 2) {
    throw ValueError(fmt::format("lstsq: b must be one- or two-dimensional; got shape {}", b.shape().to_string()));
  }
  if (a.shape()[0] != b.shape()[0]) {
    throw ValueError(fmt::format("lstsq: leading dimensions of input arrays must match; got a {} and b {}",
                                 a.shape().to_string(), b.shape().to_string()));
  }
  const int64_t m = a.shape()[0], n = a.shape()[1];
  const Tensor b2 = b.shape().rank() == 1 ? expand_dims(f32(b), -1) : f32(b);
  // Keras's TensorFlow backend: the SVD, singular values below rcond · the largest left out.
  double r = rcond ? *rcond : kFloat32Eps * static_cast<double>(std::max(n, m));
  if (r < 0) r = kFloat32Eps;
  const std::vector<Tensor> usv = core::svd(f32(a), false);
  const Tensor& s = usv[0];
  if (s.num_elements() == 0) return as(Tensor::zeros(b.shape().rank() == 1 ? Shape{n} : Shape{n, b.shape()[1]}),
                                       result_dtype(a, b));
  const Tensor first = core::slice_axis(s, 0, 0, 1);
  const Tensor mask = greater_equal(s, multiply(first, r));
  const Tensor safe = core::where(mask, s, Tensor::scalar(1.0f));
  const Tensor s_inv = expand_dims(core::where(mask, core::div(Tensor::scalar(1.0f), safe), Tensor::scalar(0.0f)), -1);
  const Tensor utb = matmul(swapaxes(usv[1], 0, 1), b2);
  Tensor x = matmul(usv[2], core::mul(s_inv, utb));
  if (b.shape().rank() == 1) x = core::reshape(x, {n});
  return as(x, result_dtype(a, b));
}

Tensor matrix_rank(const Tensor& x, std::optional<double> tol) {
  assert_matrices(x, "matrix_rank");
  const int64_t m = x.shape()[-2], n = x.shape()[-1];
  const Tensor s = core::svd(stop_gradient(f32(x)), false)[0];
  // tf.linalg.matrix_rank: tol unset is the largest singular value · max(M, N) · ε.
  const Tensor threshold = tol ? Tensor::scalar(*tol)
                               : multiply(max(s, -1, true), static_cast<double>(std::max(m, n)) * kFloat32Eps);
  return sum(core::cast(greater(s, threshold), DType::int32), -1);
}

Tensor matrix_power(const Tensor& x_in, int64_t n) {
  assert_square(x_in, "matrix_power");
  const DType t = float_of(x_in.dtype());
  Tensor x = f32(x_in);
  if (n == std::numeric_limits<int64_t>::min()) {
    throw ValueError(fmt::format("matrix_power: n = {} has no negation; use a smaller power", n));
  }
  if (n == 0) return as(eye_like(x), t);
  if (n < 0) {
    x = core::matrix_inverse(x);
    n = -n;
  }
  if (n == 1) return as(x, t);
  // Repeated squaring, as Keras's TensorFlow backend.
  Tensor result = eye_like(x), base = x;
  while (n > 0) {
    if (n % 2 == 1) result = matmul(result, base);
    base = matmul(base, base);
    n /= 2;
  }
  return as(result, t);
}

}  // namespace osprey::keras::ops
