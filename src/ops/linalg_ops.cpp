// Linear algebra on batches of float32 matrices (tf.linalg's ops): LU, Cholesky, triangular solves, inverse, solve,
// determinants, the symmetric eigendecomposition and the SVD. Forward through the LuFactor, Cholesky,
// TriangularSolve, SelfAdjointEig and Svd kernels; each op is one tape node whose backward is TensorFlow's
// gradient written in ops (so it runs on every backend and is differentiable again).
#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

namespace {

// The batch axes of (..., m, n) as one: {batch, m, n}.
struct Matrices {
  Shape batch_shape;
  int64_t batch, m, n;
};

Matrices matrices_of(const Tensor& a, const char* op, bool square) {
  const Shape& s = a.shape();
  if (s.rank() < 2) {
    throw InvalidArgumentError(fmt::format("{}: expects matrices (a tensor of rank >= 2, shape (..., M, N)); got shape {}",
                                           op, s.to_string()));
  }
  if (a.dtype() != DType::float32) {
    throw InvalidArgumentError(fmt::format("{}: expects float32 matrices, got {} (cast first)", op, dtype_name(a.dtype())));
  }
  if (square && s[-1] != s[-2]) {
    throw InvalidArgumentError(fmt::format("{}: expects square matrices; got shape {} ({} x {})", op, s.to_string(),
                                           s[-2], s[-1]));
  }
  std::vector<int64_t> batch(s.dims().begin(), s.dims().end() - 2);
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  return {Shape(batch), nb, s[-2], s[-1]};
}

Shape with_matrix(const Shape& batch, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> d(batch.dims().begin(), batch.dims().end());
  d.insert(d.end(), tail);
  return Shape(d);
}

// aᵀ over the last two axes of a 3-D tensor.
Tensor t3(const Tensor& x) { return transpose(x, {0, 2, 1}); }

// The n x n identity repeated `batch` times.
Tensor eye_batch(int64_t batch, int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n * n), 0.0f);
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i * n + i)] = 1.0f;
  return broadcast_to(Tensor::from_vector(v, {1, n, n}), {batch, n, n});
}

// An n x n mask: `below` under the diagonal, `on` on it, `above` over it.
Tensor band_mask(int64_t n, float below, float on, float above) {
  std::vector<float> v(static_cast<std::size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) v[static_cast<std::size_t>(i * n + j)] = i > j ? below : i == j ? on : above;
  }
  return Tensor::from_vector(v, {1, n, n});
}

// The diagonals of (batch, n, n) as (batch, n), gathered (a product with a mask would turn an infinite entry off
// the diagonal into a NaN on it).
Tensor diagonal3(const Tensor& x) {
  const int64_t b = x.shape()[0], n = x.shape()[-1];
  std::vector<int64_t> at(static_cast<std::size_t>(b * n));
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < n; ++j) at[static_cast<std::size_t>(i * n + j)] = i * n * n + j * (n + 1);
  }
  return reshape(gather_rows(reshape(x, {b * n * n, 1}), Tensor::from_vector(at, {b * n})), {b, n});
}

// (batch, n) as diagonal matrices (batch, n, n).
Tensor diag_matrix(const Tensor& d) {
  const int64_t n = d.shape()[-1];
  return mul(reshape(d, {d.shape()[0], 1, n}), band_mask(n, 0.0f, 1.0f, 0.0f));
}

// 1/x where |x| is not tiny, else about 0 (TensorFlow's _SafeReciprocal: x / (x² + 1e-20)).
Tensor safe_reciprocal(const Tensor& x) { return div(x, add(square(x), Tensor::scalar(1e-20))); }

struct LuParts {
  Tensor lu, perm, sign;
};

LuParts lu3(const Tensor& a3) {
  const int64_t b = a3.shape()[0], n = a3.shape()[1];
  const LinalgAttrs attrs{b, n, n, 0, false, false, false};
  Tensor in[1] = {a3};
  auto& dev = place(OpId::LuFactor, "Lu", in);
  Tensor outs[3] = {Tensor::empty(a3.shape(), DType::float32, &dev), Tensor::empty({b, n}, DType::int32, &dev),
                    Tensor::empty({b}, DType::float32, &dev)};
  run(OpId::LuFactor, dev, in, outs, &attrs);
  return {outs[0], outs[1], outs[2]};
}

// The kernel alone: a (batch, n, n), b (batch, n, k) of one batch; perm (batch, n) int32 or undefined.
Tensor triangular_solve3(const Tensor& a, const Tensor& b, const Tensor& perm, bool lower, bool adjoint,
                         bool unit_diagonal, const char* name) {
  const LinalgAttrs attrs{a.shape()[0], a.shape()[1], a.shape()[1], b.shape()[2], lower, adjoint, unit_diagonal};
  std::vector<Tensor> in = {a, b};
  if (perm.defined()) in.push_back(perm);
  auto& dev = place(OpId::TriangularSolve, name, in);
  Tensor out = Tensor::empty(b.shape(), DType::float32, &dev);
  run(OpId::TriangularSolve, dev, in, {&out, 1}, &attrs);
  return out;
}

void require_invertible(const Tensor& lu, const char* op) {
  if (lu.num_elements() == 0) return;
  const double smallest = reduce_axes(abs(diagonal3(lu)), ReduceOp::min, {}).item();
  if (smallest == 0.0) {
    throw InvalidArgumentError(fmt::format("{}: the input is not invertible (its LU factorization has a zero pivot); "
                                           "a singular matrix has no inverse and no unique solution", op));
  }
}

// x with a·x = b for a (batch, n, n), b (batch, n, k) through a's LU (not recorded).
Tensor lu_solve3(const LuParts& f, const Tensor& b) {
  const Tensor y = triangular_solve3(f.lu, b, f.perm, true, false, true, "MatrixSolve");
  return triangular_solve3(f.lu, y, Tensor(), false, false, false, "MatrixSolve");
}

// a and b with their batch axes broadcast together, as 3-D tensors: {a3, b3, batch shape}.
struct Pair {
  Tensor a, b;
  Shape batch;
};

Pair broadcast_pair(const Tensor& a, const Tensor& b, const char* op) {
  const Matrices ma = matrices_of(a, op, true);
  if (b.shape().rank() < 2 || b.dtype() != DType::float32) {
    throw InvalidArgumentError(fmt::format("{}: the right-hand side must be float32 of shape (..., {}, K); got {} {}", op,
                                           ma.n, dtype_name(b.dtype()), b.shape().to_string()));
  }
  if (b.shape()[-2] != ma.n) {
    throw InvalidArgumentError(fmt::format("{}: the matrix {} and the right-hand side {} do not align ({} rows != {})",
                                           op, a.shape().to_string(), b.shape().to_string(), b.shape()[-2], ma.n));
  }
  const int64_t n = ma.n, k = b.shape()[-1];
  const Shape bb(std::vector<int64_t>(b.shape().dims().begin(), b.shape().dims().end() - 2));
  const Shape batch = broadcast_shapes(ma.batch_shape, bb);
  int64_t nb = 1;
  for (int64_t d : batch.dims()) nb *= d;
  const Tensor a3 = reshape(a.shape() == with_matrix(batch, {n, n}) ? a : broadcast_to(a, with_matrix(batch, {n, n})),
                            {nb, n, n});
  const Tensor b3 = reshape(b.shape() == with_matrix(batch, {n, k}) ? b : broadcast_to(b, with_matrix(batch, {n, k})),
                            {nb, n, k});
  return {a3, b3, batch};
}

}  // namespace

std::vector<Tensor> lu(const Tensor& a) {
  const Matrices m = matrices_of(a, "lu", true);
  const LuParts f = lu3(a.reshape({m.batch, m.n, m.n}));
  return {f.lu.reshape(a.shape()), f.perm.reshape(with_matrix(m.batch_shape, {m.n}))};
}

Tensor cholesky(const Tensor& a) {
  const Matrices m = matrices_of(a, "cholesky", true);
  const Tensor a3 = a.reshape({m.batch, m.n, m.n});
  const LinalgAttrs attrs{m.batch, m.n, m.n, 0, true, false, false};
  Tensor in[1] = {a3};
  auto& dev = place(OpId::Cholesky, "Cholesky", in);
  Tensor l = Tensor::empty(a3.shape(), DType::float32, &dev);
  run(OpId::Cholesky, dev, in, {&l, 1}, &attrs);
  Tensor out = l.reshape(a.shape());
  Tensor rec_in[1] = {a};
  maybe_record("Cholesky", rec_in, {&out, 1}, [&] {
    return BackwardFn([l, shape = a.shape(), n = m.n, batch = m.batch](const std::vector<Tensor>& g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
      // TensorFlow's CholeskyGrad: L⁻ᵀ·Φ(Lᵀ·dL)·L⁻¹, symmetrized (Φ: the lower triangle, its diagonal halved).
      const Tensor l_inv = triangular_solve(l, eye_batch(batch, n), true);
      const Tensor middle = mul(matmul(l, g[0].reshape({batch, n, n}), true, false), band_mask(n, 1.0f, 0.5f, 0.0f));
      const Tensor ga = matmul(matmul(l_inv, middle, true, false), l_inv);
      return std::vector<Tensor>{mul(add(ga, t3(ga)), Tensor::scalar(0.5)).reshape(shape)};
    });
  });
  return out;
}

Tensor triangular_solve(const Tensor& a, const Tensor& b, bool lower, bool adjoint) {
  const Pair p = broadcast_pair(a, b, "triangular_solve");
  Tensor x;
  {
    RecordingPaused paused;
    x = triangular_solve3(p.a, p.b, Tensor(), lower, adjoint, false, "MatrixTriangularSolve");
  }
  Tensor in[2] = {p.a, p.b};
  maybe_record("MatrixTriangularSolve", in, {&x, 1}, [&] {
    return BackwardFn([a3 = p.a, x, lower, adjoint](const std::vector<Tensor>& g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor(), Tensor()};
      // TensorFlow's MatrixTriangularSolve gradient, the a side kept to the triangle the op reads.
      const Tensor gb = triangular_solve(a3, g[0], lower, !adjoint);
      Tensor ga = adjoint ? neg(matmul(x, gb, false, true)) : neg(matmul(gb, x, false, true));
      const int64_t n = a3.shape()[1];
      ga = mul(ga, lower ? band_mask(n, 1.0f, 1.0f, 0.0f) : band_mask(n, 0.0f, 1.0f, 1.0f));
      return std::vector<Tensor>{ga, gb};
    });
  });
  return reshape(x, with_matrix(p.batch, {b.shape()[-2], b.shape()[-1]}));
}

Tensor matrix_inverse(const Tensor& a) {
  const Matrices m = matrices_of(a, "matrix_inverse", true);
  Tensor y;
  {
    RecordingPaused paused;
    const LuParts f = lu3(a.reshape({m.batch, m.n, m.n}));
    require_invertible(f.lu, "matrix_inverse");
    y = lu_solve3(f, eye_batch(m.batch, m.n)).reshape(a.shape());
  }
  Tensor in[1] = {a};
  maybe_record("MatrixInverse", in, {&y, 1}, [&] {
    return BackwardFn([y, b = m.batch, n = m.n](const std::vector<Tensor>& g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
      // d(a⁻¹) = -a⁻ᵀ·g·a⁻ᵀ
      const Tensor y3 = y.reshape({b, n, n});
      return std::vector<Tensor>{neg(matmul(matmul(y3, g[0].reshape({b, n, n}), true, false), y3, false, true)).reshape(y.shape())};
    });
  });
  return y;
}

Tensor matrix_solve(const Tensor& a, const Tensor& b) {
  const Pair p = broadcast_pair(a, b, "matrix_solve");
  Tensor x;
  {
    RecordingPaused paused;
    const LuParts f = lu3(p.a);
    require_invertible(f.lu, "matrix_solve");
    x = lu_solve3(f, p.b);
  }
  Tensor in[2] = {p.a, p.b};
  maybe_record("MatrixSolve", in, {&x, 1}, [&] {
    return BackwardFn([a3 = p.a, x](const std::vector<Tensor>& g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor(), Tensor()};
      const Tensor gb = matrix_solve(t3(a3), g[0]);
      return std::vector<Tensor>{neg(matmul(gb, x, false, true)), gb};
    });
  });
  return reshape(x, with_matrix(p.batch, {b.shape()[-2], b.shape()[-1]}));
}

Tensor matrix_determinant(const Tensor& a) {
  const Matrices m = matrices_of(a, "matrix_determinant", true);
  Tensor det;
  {
    RecordingPaused paused;
    const LuParts f = lu3(a.reshape({m.batch, m.n, m.n}));
    det = mul(f.sign, reduce_axes(diagonal3(f.lu), ReduceOp::prod, {1})).reshape(m.batch_shape);
  }
  Tensor in[1] = {a};
  maybe_record("MatrixDeterminant", in, {&det, 1}, [&] {
    return BackwardFn([a, det, m](const std::vector<Tensor>& g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
      // g·det(a)·a⁻ᵀ (TensorFlow's; a singular a has no inverse, so no gradient there either).
      const Tensor inv_t = t3(matrix_inverse(a).reshape({m.batch, m.n, m.n}));
      const Tensor scale = mul(g[0], det).reshape({m.batch, 1, 1});
      return std::vector<Tensor>{mul(scale, inv_t).reshape(a.shape())};
    });
  });
  return det;
}

std::vector<Tensor> log_matrix_determinant(const Tensor& a) {
  const Matrices m = matrices_of(a, "log_matrix_determinant", true);
  Tensor outs[2];
  {
    RecordingPaused paused;
    const LuParts f = lu3(a.reshape({m.batch, m.n, m.n}));
    const Tensor d = diagonal3(f.lu), zero = Tensor::scalar(0.0f);
    const Tensor signs = where(compare(d, zero, CompareKind::less), Tensor::scalar(-1.0f),
                               where(compare(d, zero, CompareKind::greater), Tensor::scalar(1.0f), zero));
    outs[0] = mul(f.sign, reduce_axes(signs, ReduceOp::prod, {1})).reshape(m.batch_shape);
    outs[1] = reduce_axes(log(abs(d)), ReduceOp::sum, {1}).reshape(m.batch_shape);
  }
  Tensor in[1] = {a};
  maybe_record("LogMatrixDeterminant", in, outs, [&] {
    return BackwardFn([a, m](const std::vector<Tensor>& g) {
      if (g.size() < 2 || !g[1].defined()) return std::vector<Tensor>{Tensor()};
      const Tensor inv_t = t3(matrix_inverse(a).reshape({m.batch, m.n, m.n}));
      return std::vector<Tensor>{mul(g[1].reshape({m.batch, 1, 1}), inv_t).reshape(a.shape())};
    });
  });
  return {outs[0], outs[1]};
}

std::vector<Tensor> self_adjoint_eig(const Tensor& a) {
  const Matrices m = matrices_of(a, "self_adjoint_eig", true);
  const int64_t n = m.n;
  const LinalgAttrs attrs{m.batch, n, n, 0, true, false, false};
  Tensor in[1] = {a.reshape({m.batch, n, n})};
  auto& dev = place(OpId::SelfAdjointEig, "SelfAdjointEigV2", in);
  Tensor outs[2] = {Tensor::empty({m.batch, n}, DType::float32, &dev), Tensor::empty({m.batch, n, n}, DType::float32, &dev)};
  run(OpId::SelfAdjointEig, dev, in, outs, &attrs);
  Tensor result[2] = {outs[0].reshape(with_matrix(m.batch_shape, {n})), outs[1].reshape(a.shape())};
  Tensor rec_in[1] = {a};
  maybe_record("SelfAdjointEigV2", rec_in, result, [&] {
    return BackwardFn([e = outs[0], v = outs[1], m](const std::vector<Tensor>& g) {
      const int64_t b = m.batch, n = m.n;
      const Tensor ge = g[0].defined() ? g[0].reshape({b, n}) : Tensor::zeros({b, n}, DType::float32);
      Tensor inner = diag_matrix(ge);
      if (g.size() > 1 && g[1].defined()) {
        // f[i][j] = 1 / (e_j - e_i) off the diagonal (TensorFlow's SelfAdjointEigV2 gradient).
        const Tensor diff = sub(e.reshape({b, 1, n}), e.reshape({b, n, 1}));
        const Tensor f = mul(safe_reciprocal(diff), band_mask(n, 1.0f, 0.0f, 1.0f));
        inner = add(inner, mul(f, matmul(v, g[1].reshape({b, n, n}), true, false)));
      }
      Tensor ga = matmul(v, matmul(inner, v, false, true));
      // The op reads a's lower triangle only: symmetrize onto it, the diagonal once.
      ga = mul(add(ga, t3(ga)), band_mask(n, 1.0f, 0.5f, 0.0f));
      return std::vector<Tensor>{ga.reshape(with_matrix(m.batch_shape, {n, n}))};
    });
  });
  return {result[0], result[1]};
}

std::vector<Tensor> svd(const Tensor& a, bool full_matrices) {
  const Matrices mm = matrices_of(a, "svd", false);
  const int64_t m = mm.m, n = mm.n, p = std::min(m, n), uc = full_matrices ? m : p, vc = full_matrices ? n : p;
  const LinalgAttrs attrs{mm.batch, m, n, full_matrices ? 1 : 0, false, false, false};
  Tensor in[1] = {a.reshape({mm.batch, m, n})};
  auto& dev = place(OpId::Svd, "Svd", in);
  Tensor outs[3] = {Tensor::empty({mm.batch, p}, DType::float32, &dev), Tensor::empty({mm.batch, m, uc}, DType::float32, &dev),
                    Tensor::empty({mm.batch, n, vc}, DType::float32, &dev)};
  run(OpId::Svd, dev, in, outs, &attrs);
  Tensor result[3] = {outs[0].reshape(with_matrix(mm.batch_shape, {p})), outs[1].reshape(with_matrix(mm.batch_shape, {m, uc})),
                      outs[2].reshape(with_matrix(mm.batch_shape, {n, vc}))};
  Tensor rec_in[1] = {a};
  maybe_record("Svd", rec_in, result, [&] {
    return BackwardFn([s = outs[0], u = outs[1], v = outs[2], mm, full_matrices](const std::vector<Tensor>& g) {
      const int64_t b = mm.batch;
      int64_t m = mm.m, n = mm.n;
      const int64_t p = std::min(m, n);
      const bool uv_grads = (g.size() > 1 && g[1].defined()) || (g.size() > 2 && g[2].defined());
      const Tensor gs = g[0].defined() ? g[0].reshape({b, p}) : Tensor::zeros({b, p}, DType::float32);
      const Shape a_shape = with_matrix(mm.batch_shape, {m, n});
      Tensor uu = u, vv = v;
      if (!uv_grads) {  // the singular values alone: u·diag(ds)·vᵀ
        const Tensor u1 = slice_axis(uu, 2, 0, p), v1 = slice_axis(vv, 2, 0, p);
        return std::vector<Tensor>{matmul(u1, matmul(diag_matrix(gs), v1, false, true)).reshape(a_shape)};
      }
      if (full_matrices && std::abs(m - n) > 1) {
        throw NotImplementedError(fmt::format("svd: the gradient with full_matrices=True is not implemented when the "
                                              "matrix sides differ by more than one ({} x {}), as in TensorFlow", m, n));
      }
      Tensor gu = g.size() > 1 && g[1].defined() ? g[1].reshape(u.shape()) : Tensor::zeros(u.shape(), DType::float32);
      Tensor gv = g.size() > 2 && g[2].defined() ? g[2].reshape(v.shape()) : Tensor::zeros(v.shape(), DType::float32);
      // TensorFlow's SvdGrad: computed for the wide orientation (m <= n), transposed back for a tall matrix.
      const bool use_adjoint = m > n;
      if (use_adjoint) {
        std::swap(m, n);
        std::swap(uu, vv);
        std::swap(gu, gv);
      }
      const Tensor s_mat = diag_matrix(s);
      const Tensor s2 = square(s);
      const Tensor f = mul(safe_reciprocal(sub(s2.reshape({b, 1, p}), s2.reshape({b, p, 1}))), band_mask(p, 1.0f, 0.0f, 1.0f));
      const Tensor s_inv_mat = diag_matrix(safe_reciprocal(s));
      const Tensor v1 = slice_axis(vv, 2, 0, m), gv1 = slice_axis(gv, 2, 0, m);
      const Tensor f_u = mul(f, matmul(uu, gu, true, false)), f_v = mul(f, matmul(v1, gv1, true, false));
      const Tensor term1_nouv = add(add(diag_matrix(gs), matmul(add(f_u, t3(f_u)), s_mat)), matmul(s_mat, add(f_v, t3(f_v))));
      Tensor ga = matmul(uu, matmul(term1_nouv, v1, false, true));
      if (m != n) {
        const Tensor gv1t = t3(gv1);
        Tensor term2_nous = sub(gv1t, matmul(matmul(gv1t, v1), v1, false, true));
        if (full_matrices) {
          const Tensor v2 = slice_axis(vv, 2, m, n - m), gv2 = slice_axis(gv, 2, m, n - m);
          term2_nous = sub(term2_nous, matmul(matmul(v1, gv2, true, false), v2, false, true));
        }
        ga = add(ga, matmul(matmul(uu, s_inv_mat), term2_nous));
      }
      if (use_adjoint) ga = t3(ga);
      return std::vector<Tensor>{ga.reshape(a_shape)};
    });
  });
  return {result[0], result[1], result[2]};
}

std::vector<Tensor> qr(const Tensor& a, bool full_matrices) {
  const Matrices mm = matrices_of(a, "qr", false);
  const int64_t m = mm.m, n = mm.n, qc = full_matrices ? m : std::min(m, n);
  const LinalgAttrs attrs{mm.batch, m, n, full_matrices ? 1 : 0, false, false, false};
  Tensor in[1] = {a.reshape({mm.batch, m, n})};
  auto& dev = place(OpId::Qr, "Qr", in);
  Tensor outs[2] = {Tensor::empty({mm.batch, m, qc}, DType::float32, &dev), Tensor::empty({mm.batch, qc, n}, DType::float32, &dev)};
  run(OpId::Qr, dev, in, outs, &attrs);
  Tensor result[2] = {outs[0].reshape(with_matrix(mm.batch_shape, {m, qc})), outs[1].reshape(with_matrix(mm.batch_shape, {qc, n}))};
  Tensor rec_in[1] = {a};
  maybe_record("Qr", rec_in, result, [&] {
    return BackwardFn([a3 = in[0], q = outs[0], r = outs[1], mm, qc](const std::vector<Tensor>& g) {
      const int64_t m = mm.m, n = mm.n;
      if (m > n && qc == m) {
        throw NotImplementedError(fmt::format("qr: the gradient is not implemented for a tall matrix ({} x {}) with "
                                              "full_matrices (mode 'complete'), as in TensorFlow", m, n));
      }
      const Tensor dq = g[0].defined() ? g[0].reshape(q.shape()) : Tensor::zeros(q.shape(), DType::float32);
      const Tensor dr = g.size() > 1 && g[1].defined() ? g[1].reshape(r.shape()) : Tensor::zeros(r.shape(), DType::float32);
      // TensorFlow's QrGrad (arXiv 2009.10071): x·r⁻ᵀ by a triangular solve; wide matrices through their square part.
      auto times_r_inv_t = [](const Tensor& x, const Tensor& rr) { return t3(triangular_solve(rr, t3(x), false)); };
      auto square_or_deep = [&](const Tensor& qq, const Tensor& rr, const Tensor& dqq, const Tensor& drr) {
        const Tensor qdq = matmul(qq, dqq, true, false), rdr = matmul(rr, drr, false, true);
        const int64_t k = rr.shape()[1];
        const Tensor low = mul(add(sub(qdq, t3(qdq)), sub(rdr, t3(rdr))), band_mask(k, 1.0f, 1.0f, 0.0f));
        const Tensor ga = matmul(qq, add(drr, times_r_inv_t(low, rr)));
        return add(ga, times_r_inv_t(sub(dqq, matmul(qq, qdq)), rr));
      };
      Tensor ga;
      if (m >= n) {
        ga = square_or_deep(q, r, dq, dr);
      } else {
        const Tensor y = slice_axis(a3, 2, m, n - m), u = slice_axis(r, 2, 0, m);
        const Tensor dv = slice_axis(dr, 2, m, n - m), du = slice_axis(dr, 2, 0, m);
        const Tensor dx = square_or_deep(q, u, add(dq, matmul(y, dv, false, true)), du);
        ga = concat({dx, matmul(q, dv)}, 2);
      }
      return std::vector<Tensor>{ga.reshape(with_matrix(mm.batch_shape, {m, n}))};
    });
  });
  return {result[0], result[1]};
}

}  // namespace osprey::ops
