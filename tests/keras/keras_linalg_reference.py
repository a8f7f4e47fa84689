"""Expected values for keras.ops.linalg (tests/ops/test_keras_linalg.cpp), from real Keras 3 on the TensorFlow
backend: outputs and the gradients of sum(output * cotangent) for each case (ops_reference_common.py).
`python3 tests/keras/keras_linalg_reference.py` (pip tensorflow-cpu keras) writes tests/data/keras_linalg.json.
Eigen- and singular vectors have no sign of their own (TensorFlow's and Osprey's may differ), so the cases record
their absolute values, which do not depend on it (nor do those values' gradients)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from ops_reference_common import write_cases  # noqa: E402

rng = np.random.default_rng(20261204)


def f32(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype("float32")


def well_conditioned(*shape):
    """Random square matrices with their diagonal raised: far from singular."""
    a = f32(*shape)
    return (a + 2.5 * np.eye(shape[-1], dtype="float32")).astype("float32")


def spd(*shape):
    """Symmetric positive definite: m·mᵀ + n·I."""
    m = f32(*shape)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1], dtype="float32")).astype("float32")


def lower_factor(*shape):
    """A lower-triangular matrix with a positive diagonal (a Cholesky factor)."""
    return (np.tril(f32(*shape)) + 2.0 * np.eye(shape[-1], dtype="float32")).astype("float32")


def symmetric(n):
    """Symmetric, with well-separated eigenvalues (the eigenvectors' gradients divide by their gaps)."""
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    w = np.arange(1, n + 1) * 1.5 - 3.0
    return ((q * w) @ q.T).astype("float32")


def distinct_singular(m, n):
    """An m x n matrix with singular values 4, 2.5, 1, ... (separated)."""
    p = min(m, n)
    u, _ = np.linalg.qr(rng.normal(size=(m, m)))
    v, _ = np.linalg.qr(rng.normal(size=(n, n)))
    s = np.zeros((m, n))
    s[np.arange(p), np.arange(p)] = 4.0 - 1.5 * np.arange(p)
    return (u @ s @ v.T).astype("float32")


def matrix_power(x, n):
    """Keras's (3.16+) matrix_power on the TensorFlow backend, in keras.ops (not in Keras 3.15)."""
    if n < 0:
        x, n = ops.inv(x), -n
    result, base = None, x
    while n > 0:
        if n % 2 == 1:
            result = base if result is None else ops.matmul(result, base)
        base = ops.matmul(base, base)
        n //= 2
    return result


rank2 = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], "float32")
negative_det = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.5, 2.0]], "float32")

cases = [
    ("det_inv", lambda a, b: [ops.det(a), ops.inv(a), ops.det(b), ops.inv(b)],
     [well_conditioned(3, 3), well_conditioned(2, 4, 4)]),
    ("solve", lambda a, v, m, ab, bb: [ops.solve(a, v), ops.solve(a, m), ops.solve(ab, bb)],
     [well_conditioned(3, 3), f32(3), f32(3, 2), well_conditioned(2, 4, 4), f32(2, 4, 3)]),
    ("solve_triangular", lambda a, b, v: [ops.solve_triangular(a, b, lower=True), ops.solve_triangular(a, b),
                                          ops.solve_triangular(a, v, lower=True)],
     [well_conditioned(4, 4), f32(4, 2), f32(4)]),
    ("cholesky", lambda a, b: [ops.cholesky(a), ops.cholesky(b, upper=True)], [spd(3, 3), spd(2, 4, 4)]),
    ("cholesky_inverse", lambda l, u: [ops.cholesky_inverse(l), ops.cholesky_inverse(u, upper=True)],
     [lower_factor(3, 3), np.swapaxes(lower_factor(2, 3, 3), -1, -2).copy()]),
    ("slogdet", lambda a, b: [*ops.slogdet(a), *ops.slogdet(b)], [negative_det, well_conditioned(2, 3, 3)]),
    ("lu_factor", lambda a, b: [*ops.lu_factor(ops.stop_gradient(a)), *ops.lu_factor(ops.stop_gradient(b))],
     [np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5], [7.0, 8.5, 10.0]], "float32"), f32(4, 4)]),  # 2-D only: the
    # TensorFlow backend inverts the permutation with tf.math.invert_permutation, which takes one vector
    ("eigh", lambda a, b: [ops.eigh(a)[0], ops.abs(ops.eigh(a)[1]), ops.eigh(b)[0]],
     [symmetric(4), np.stack([symmetric(3), symmetric(3)])]),
    ("svd_reduced", lambda t, w: [ops.svd(t, full_matrices=False)[1], ops.abs(ops.svd(t, full_matrices=False)[0]),
                                  ops.abs(ops.svd(t, full_matrices=False)[2]),
                                  ops.abs(ops.svd(w, full_matrices=False)[0]),
                                  ops.abs(ops.svd(w, full_matrices=False)[2])],
     [distinct_singular(5, 3), distinct_singular(3, 5)]),
    ("svd_full", lambda t, w: [ops.abs(ops.svd(t)[0]), ops.abs(ops.svd(t)[2]), ops.abs(ops.svd(w)[0]),
                               ops.abs(ops.svd(w)[2])],
     [distinct_singular(4, 3), distinct_singular(3, 4)]),
    ("svd_values", lambda t, w: [ops.svd(t, compute_uv=False), ops.svd(w, compute_uv=False)],
     [distinct_singular(6, 3), np.stack([distinct_singular(2, 4), distinct_singular(2, 4)])]),
    ("pinv_lstsq", lambda a, v, m, w: [ops.pinv(a), ops.lstsq(a, v), ops.lstsq(a, m), ops.pinv(w)],
     [distinct_singular(4, 3), f32(4), f32(4, 2), distinct_singular(2, 3)]),
    ("matrix_rank_power", lambda r, a: [ops.matrix_rank(r), ops.matrix_rank(a), matrix_power(a, 3),
                                        matrix_power(a, -2), matrix_power(a, 1)],
     [rank2, well_conditioned(3, 3)]),
    ("matrix_norms", lambda x, b: [ops.norm(x, ord=2), ops.norm(x, ord=-2), ops.norm(x, ord="nuc"),
                                   ops.norm(x, ord="fro"), ops.norm(b, ord=2, axis=(1, 2), keepdims=True),
                                   ops.norm(b, ord="nuc", axis=(1, 2))],
     [distinct_singular(3, 4), np.stack([distinct_singular(3, 3), distinct_singular(3, 3)])]),
    ("qr", lambda t, s, w: [*ops.qr(t), *ops.qr(s), *ops.qr(w), *ops.qr(ops.stop_gradient(t), mode="complete")],
     [f32(5, 3), f32(2, 4, 4), f32(3, 5)]),
]

write_cases(cases, "keras_linalg.json")
