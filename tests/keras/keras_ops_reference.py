"""Expected values for keras::ops (tests/ops/test_keras_ops.cpp): each case runs a keras.ops call of real Keras 3 (the
TensorFlow backend) on stored inputs and records its outputs (values, shape, dtype) and, for float inputs, the
gradients of sum(output * cotangent) under tf.GradientTape. `python3 tests/keras/keras_ops_reference.py` (pip
tensorflow-cpu keras) writes tests/data/keras_ops.json."""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import ops  # noqa: E402

rng = np.random.default_rng(20261202)


def f32(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype("float32")


def i32(*shape, lo=0, hi=5):
    return rng.integers(lo, hi, size=shape).astype("int32")


ties = np.array([[1, 3, 3, 0], [2, 2, -1, 2], [0, 0, 0, 0]], dtype="float32")
cases = [
    ("add_broadcast", lambda a, b: ops.add(a, b), [f32(2, 3, 4), f32(3, 1)]),
    ("subtract_broadcast", lambda a, b: ops.subtract(a, b), [f32(4, 1, 3), f32(2, 3)]),
    ("multiply_broadcast", lambda a, b: ops.multiply(a, b), [f32(2, 1, 4), f32(3, 1)]),
    ("divide_broadcast", lambda a, b: ops.divide(a, b), [f32(2, 3), f32(2, 1, lo=0.5, hi=2.0)]),
    ("maximum_outer", lambda a, b: ops.maximum(a, b), [f32(3, 1), f32(1, 4)]),
    ("minimum_row", lambda a, b: ops.minimum(a, b), [f32(3, 4), f32(4)]),
    ("power", lambda a, b: ops.power(a, b), [f32(2, 3, lo=0.5, hi=2.0), f32(3)]),
    ("where", lambda c, a, b: ops.where(c, a, b), [f32(2, 3) > 0, f32(2, 3), f32(3)]),
    ("clip", lambda x: ops.clip(x, -1.0, 1.5), [f32(3, 4)]),
    ("sum_axis1_keepdims", lambda x: ops.sum(x, axis=1, keepdims=True), [f32(2, 3, 4)]),
    ("sum_axes02", lambda x: ops.sum(x, axis=(0, 2)), [f32(2, 3, 4)]),
    ("sum_all", lambda x: ops.sum(x), [f32(2, 3, 4)]),
    ("mean_last", lambda x: ops.mean(x, axis=-1), [f32(3, 5)]),
    ("max_ties", lambda x: ops.max(x, axis=1), [ties]),
    ("min_axis0", lambda x: ops.min(x, axis=0), [f32(4, 3)]),
    ("prod_with_zero", lambda x: ops.prod(x, axis=1), [np.array([[1.5, 0.0, 2.0], [0.5, -1.0, 3.0]], "float32")]),
    ("logsumexp_last", lambda x: ops.logsumexp(x, axis=-1), [f32(3, 6, lo=-5, hi=5)]),
    ("var_axis0", lambda x: ops.var(x, axis=0), [f32(5, 3)]),
    ("std_keepdims", lambda x: ops.std(x, axis=(0, 1), keepdims=True), [f32(2, 3, 2)]),
    ("argmax_axis1", lambda x: ops.argmax(x, axis=1), [ties]),
    ("argmin_axis0", lambda x: ops.argmin(x, axis=0), [ties]),
    ("argmax_flat", lambda x: ops.argmax(x), [f32(3, 4)]),
    ("any_axis1", lambda x: ops.any(x, axis=1), [np.array([[True, False], [False, False], [True, True]])]),
    ("all_axis0", lambda x: ops.all(x, axis=0), [np.array([[True, False], [True, True], [True, True]])]),
    ("cumsum_axis1", lambda x: ops.cumsum(x, axis=1), [f32(2, 4)]),
    ("cumprod_axis0", lambda x: ops.cumprod(x, axis=0), [f32(3, 2, lo=0.5, hi=1.5)]),
    ("cumsum_flat_int", lambda x: ops.cumsum(x), [i32(2, 3)]),
    ("one_hot", lambda x: ops.one_hot(x, 4), [np.array([0, 3, 5, -1, 2], "int32")]),
    ("one_hot_axis0", lambda x: ops.one_hot(x, 3, axis=0), [np.array([[0, 2], [1, 1]], "int32")]),
    ("take_axis1", lambda x, i: ops.take(x, i, axis=1), [f32(2, 5, 3), np.array([[0, -1], [2, 2]], "int32")]),
    ("take_flat", lambda x, i: ops.take(x, i), [f32(3, 4), np.array([11, 0, 5], "int32")]),
    ("take_along_axis", lambda x, i: ops.take_along_axis(x, i, axis=1),
     [f32(3, 4), np.array([[0, 3], [1, 1], [2, 0]], "int32")]),
    ("top_k", lambda x: ops.top_k(x, 2), [ties]),
    ("sort_axis0", lambda x: ops.sort(x, axis=0), [f32(4, 3)]),
    ("argsort_last", lambda x: ops.argsort(x, axis=-1), [f32(3, 5)]),
    ("einsum_bmm", lambda a, b: ops.einsum("bij,bjk->bik", a, b), [f32(2, 3, 4), f32(2, 4, 5)]),
    ("einsum_attention", lambda a, b: ops.einsum("bhqd,bhkd->bhqk", a, b), [f32(2, 2, 3, 4), f32(2, 2, 5, 4)]),
    ("einsum_matvec", lambda a, b: ops.einsum("ij,j->i", a, b), [f32(3, 4), f32(4)]),
    ("einsum_transpose_sum", lambda a: ops.einsum("ijk->ki", a), [f32(2, 3, 4)]),
    ("einsum_outer_implicit", lambda a, b: ops.einsum("i,j", a, b), [f32(3), f32(2)]),
    ("matmul_broadcast", lambda a, b: ops.matmul(a, b), [f32(2, 1, 3, 4), f32(3, 4, 5)]),
    ("matmul_vector", lambda a, b: ops.matmul(a, b), [f32(4), f32(2, 4, 3)]),
    ("stack_axis1", lambda a, b: ops.stack([a, b], axis=1), [f32(2, 3), f32(2, 3)]),
    ("concatenate_last", lambda a, b: ops.concatenate([a, b], axis=-1), [f32(2, 3), f32(2, 1)]),
    ("split_sections", lambda x: ops.split(x, 3, axis=1), [f32(2, 6)]),
    ("split_indices", lambda x: ops.split(x, [1, 3], axis=0), [f32(5, 2)]),
    ("equal_int", lambda a, b: ops.equal(a, b), [i32(3, 4), i32(4)]),
    ("less_float", lambda a, b: ops.less(a, b), [f32(2, 1, 3), f32(4, 1)]),
    ("greater_equal_scalar", lambda a: ops.greater_equal(a, 0.25), [f32(3, 3)]),
    ("logical_xor", lambda a, b: ops.logical_xor(a, b), [f32(3, 2) > 0, f32(2) > 0]),
    ("expand_squeeze", lambda x: ops.squeeze(ops.expand_dims(x, 1), axis=1), [f32(3, 2)]),
    ("transpose_default", lambda x: ops.transpose(x), [f32(2, 3, 4)]),
    ("reshape_infer", lambda x: ops.reshape(x, (-1, 6)), [f32(2, 3, 2)]),
    ("int_plus_half", lambda x: ops.add(x, 0.5), [i32(2, 3)]),
    ("int_times_two", lambda x: ops.multiply(x, 2), [i32(2, 3)]),
    ("mean_int", lambda x: ops.mean(x, axis=0), [i32(4, 3)]),
    ("broadcast_to", lambda x: ops.broadcast_to(x, (2, 3, 4)), [f32(3, 1)]),
    ("slice", lambda x: ops.slice(x, (1, 0, 2), (2, 3, 2)), [f32(3, 3, 4)]),
    ("abs_sign", lambda x: ops.multiply(ops.abs(x), ops.sign(x)), [f32(3, 4)]),
    # Ellipses (broadcast between the operands) and repeated labels (diagonals).
    ("einsum_ellipsis_bmm", lambda a, b: ops.einsum("...ij,...jk->...ik", a, b), [f32(2, 1, 3, 4), f32(3, 4, 2)]),
    ("einsum_ellipsis_middle", lambda a: ops.einsum("i...j->j...i", a), [f32(2, 3, 4, 5)]),
    ("einsum_ellipsis_sum", lambda a, b: ops.einsum("...d,...d->...", a, b), [f32(2, 3, 4), f32(4)]),
    ("einsum_trace", lambda a: ops.einsum("ii", a), [f32(3, 3)]),
    ("einsum_diagonal_batch", lambda a: ops.einsum("bii->bi", a), [f32(2, 3, 3)]),
    ("einsum_diagonal_product", lambda a, b: ops.einsum("iij,jk->ik", a, b), [f32(2, 2, 3), f32(3, 4)]),
    # Three and four operands (contracted pairwise).
    ("einsum_chain3", lambda a, b, c: ops.einsum("ij,jk,kl->il", a, b, c), [f32(2, 3), f32(3, 4), f32(4, 2)]),
    ("einsum_bilinear", lambda a, b, c: ops.einsum("bi,bij,bj->b", a, b, c), [f32(3, 2), f32(3, 2, 4), f32(3, 4)]),
    ("einsum_chain3_implicit", lambda a, b, c: ops.einsum("ij,jk,kl", a, b, c), [f32(2, 3), f32(3, 4), f32(4, 2)]),
    ("einsum_ellipsis3", lambda a, b, c: ops.einsum("...i,ij,...j->...", a, b, c), [f32(2, 3), f32(3, 4), f32(5, 2, 4)]),
    ("einsum_four", lambda a, b, c, d: ops.einsum("ab,bc,cd,de->ae", a, b, c, d),
     [f32(2, 3), f32(3, 2), f32(2, 4), f32(4, 3)]),
    # Trigonometric, hyperbolic and rounding functions, log1p/expm1/log2/log10/reciprocal; integer inputs.
    ("sin_cos_tan", lambda x: [ops.sin(x), ops.cos(x), ops.tan(x)], [f32(3, 4, lo=-1.2, hi=1.2)]),
    ("inverse_trig", lambda x: [ops.arcsin(x), ops.arccos(x), ops.arctan(x)], [f32(2, 5, lo=-0.9, hi=0.9)]),
    ("hyperbolic", lambda x: [ops.sinh(x), ops.cosh(x), ops.tanh(x), ops.arcsinh(x)], [f32(2, 4)]),
    ("arccosh", lambda x: ops.arccosh(x), [f32(3, 3, lo=1.2, hi=4.0)]),
    ("arctanh", lambda x: ops.arctanh(x), [f32(3, 3, lo=-0.9, hi=0.9)]),
    ("floor_ceil", lambda x: [ops.floor(x), ops.ceil(x)], [f32(3, 4, lo=-3.0, hi=3.0)]),
    ("round_halves", lambda x: ops.round(x), [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6], "float32")]),
    ("round_decimals", lambda x: ops.round(x, 2), [f32(3, 3)]),
    ("round_int", lambda x: ops.round(x), [i32(2, 3)]),
    ("round_int_negative_decimals", lambda x: ops.round(x, -1), [np.array([14, 16, 26, -16, 123], "int32")]),
    ("log1p_expm1", lambda x: [ops.log1p(x), ops.expm1(x)], [f32(3, 4, lo=-0.5, hi=2.0)]),
    ("log2_log10_reciprocal", lambda x: [ops.log2(x), ops.log10(x), ops.reciprocal(x)], [f32(2, 3, lo=0.5, hi=4.0)]),
    ("sin_int", lambda x: ops.sin(x), [i32(2, 3)]),
    ("floor_int", lambda x: ops.floor(x), [i32(2, 3)]),
    ("negative_int", lambda x: ops.negative(x), [i32(2, 3)]),
    # pad, tile, repeat; arctan2 (every quadrant, the axes, signed zeros) and hypot.
    ("pad_constant", lambda x: ops.pad(x, ((1, 2), (0, 1)), constant_values=1.5), [f32(2, 3)]),
    ("pad_reflect", lambda x: ops.pad(x, ((2, 1), (1, 3)), mode="reflect"), [f32(3, 4)]),
    ("pad_symmetric", lambda x: ops.pad(x, ((0, 3), (2, 2), (1, 0)), mode="symmetric"), [f32(3, 3, 2)]),
    ("pad_int", lambda x: ops.pad(x, ((1, 1), (2, 0))), [i32(2, 2)]),
    ("tile", lambda x: ops.tile(x, (2, 1, 3)), [f32(2, 3)]),
    ("tile_short_repeats", lambda x: ops.tile(x, (2,)), [f32(2, 3)]),
    ("repeat_flat", lambda x: ops.repeat(x, 2), [f32(2, 2)]),
    ("repeat_per_element", lambda x: ops.repeat(x, [1, 0, 3], axis=1), [f32(2, 3)]),
    ("arctan2", lambda y, x: ops.arctan2(y, x), [f32(3, 4), f32(4)]),
    ("arctan2_axes", lambda y, x: ops.arctan2(y, x),
     [np.array([1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.0, -0.0], "float32"),
      np.array([0.0, 0.0, -0.0, -0.0, -3.0, -3.0, -3.0, -3.0], "float32")]),
    # The origins' values by the zeros' signs (TensorFlow's gradient there is NaN: none taken).
    ("arctan2_origins", lambda y, x: ops.arctan2(ops.stop_gradient(y), ops.stop_gradient(x)),
     [np.array([0.0, -0.0, 0.0, -0.0], "float32"), np.array([0.0, 0.0, -0.0, -0.0], "float32")]),
    ("hypot", lambda a, b: ops.hypot(a, b), [f32(2, 3), f32(3)]),
    # Neural-network functions, moments, normalize, norm.
    ("activations", lambda x: [ops.relu(x), ops.relu6(ops.multiply(x, 4.0)), ops.sigmoid(x), ops.softplus(x),
                               ops.softsign(x), ops.silu(x), ops.selu(x), ops.elu(x), ops.leaky_relu(x)],
     [f32(3, 4, lo=-3.0, hi=3.0)]),
    ("activations_parametric", lambda x: [ops.elu(x, alpha=0.5), ops.leaky_relu(x, negative_slope=0.1),
                                          ops.hard_sigmoid(x), ops.hard_silu(x)], [f32(3, 4, lo=-4.0, hi=4.0)]),
    ("gelu_both", lambda x: [ops.gelu(x), ops.gelu(x, approximate=False)], [f32(3, 5, lo=-3.0, hi=3.0)]),
    ("softmax_axes", lambda x: [ops.softmax(x), ops.softmax(x, axis=1), ops.softmax(x, axis=0)], [f32(2, 3, 4)]),
    ("log_softmax", lambda x: [ops.log_softmax(x), ops.log_softmax(x, axis=0)], [f32(3, 4)]),
    ("moments", lambda x: list(ops.moments(x, axes=[0, 2])), [f32(3, 2, 4)]),
    ("moments_keepdims", lambda x: list(ops.moments(x, axes=[1], keepdims=True)), [f32(3, 4)]),
    ("normalize", lambda x: [ops.normalize(x), ops.normalize(x, axis=0, order=1)], [f32(3, 4)]),
    ("norm_vector", lambda x: [ops.norm(x, axis=1), ops.norm(x, ord=1, axis=1), ops.norm(x, ord=float("inf"), axis=0),
                               ops.norm(x, ord=float("-inf"), axis=1, keepdims=True), ops.norm(x, ord=3, axis=-1)],
     [f32(3, 4)]),
    ("norm_zero_count", lambda x: ops.norm(x, ord=0, axis=0), [np.array([[0, 1.5], [2, 0], [0, 0]], "float32")]),
    ("norm_matrix", lambda x: [ops.norm(x), ops.norm(x, ord=1, axis=(0, 1)), ops.norm(x, ord=float("inf"), axis=(0, 1)),
                               ops.norm(x, ord=-1, axis=(0, 1)), ops.norm(x, ord=float("-inf"), axis=(1, 0))],
     [f32(3, 4)]),
    ("norm_batched_matrix", lambda x: [ops.norm(x, ord=1, axis=(2, 1)), ops.norm(x, axis=(0, 2), keepdims=True)],
     [f32(2, 3, 4)]),
    ("norm_int", lambda x: ops.norm(x, axis=0), [i32(3, 2, lo=1, hi=5)]),
    # Convolution and pooling.
    ("conv2d_same_strided", lambda x, k: ops.conv(x, k, strides=2, padding="same"), [f32(2, 7, 6, 3), f32(3, 3, 3, 4)]),
    ("conv1d_dilated", lambda x, k: ops.conv(x, k, dilation_rate=2), [f32(2, 9, 2), f32(3, 2, 3)]),
    ("conv3d_valid", lambda x, k: ops.conv(x, k, strides=(1, 2, 1)), [f32(1, 4, 5, 4, 2), f32(2, 2, 2, 2, 3)]),
    ("conv2d_grouped", lambda x, k: ops.conv(x, k, padding="same"), [f32(2, 5, 5, 4), f32(3, 3, 2, 6)]),
    ("conv2d_channels_first", lambda x, k: ops.conv(x, k, padding="same", data_format="channels_first"),
     [f32(2, 3, 6, 5), f32(3, 3, 3, 2)]),
    ("depthwise_conv", lambda x, k: ops.depthwise_conv(x, k, padding="same"), [f32(2, 6, 6, 3), f32(3, 3, 3, 2)]),
    ("max_pool_same", lambda x: ops.max_pool(x, 3, strides=2, padding="same"), [f32(2, 7, 6, 3)]),
    ("max_pool_1d", lambda x: ops.max_pool(x, 2), [f32(2, 7, 3)]),
    ("average_pool_same", lambda x: ops.average_pool(x, (2, 3), strides=(2, 1), padding="same"), [f32(2, 7, 6, 3)]),
    ("average_pool_channels_first", lambda x: ops.average_pool(x, 2, data_format="channels_first"),
     [f32(2, 3, 6, 4)]),
    # Cross-entropies (not reduced), with clipped probabilities and from logits; gradients in targets too.
    ("binary_crossentropy_probs", lambda t, o: ops.binary_crossentropy(t, o),
     [np.array([[0, 1, 1, 0], [1, 0, 0.3, 1]], "float32"),
      np.array([[0.2, 0.9, 0.0, 0.4], [0.7, 0.1, 0.5, 1.0]], "float32")]),
    ("binary_crossentropy_logits", lambda t, o: ops.binary_crossentropy(t, o, from_logits=True),
     [f32(3, 4, lo=0.0, hi=1.0), f32(3, 4, lo=-4.0, hi=4.0)]),
    ("categorical_crossentropy_probs", lambda t, o: ops.categorical_crossentropy(t, o),
     [np.array([[1, 0, 0], [0, 0.5, 0.5]], "float32"), f32(2, 3, lo=0.05, hi=1.0)]),
    # Soft labels adding up to 1 along the axis (TensorFlow's gradient in the logits, softmax - labels, assumes it).
    ("categorical_crossentropy_logits_axis1", lambda t, o: ops.categorical_crossentropy(t, o, from_logits=True, axis=1),
     [(lambda t: t / t.sum(axis=1, keepdims=True))(f32(2, 3, 4, lo=0.1, hi=1.0)), f32(2, 3, 4)]),
    ("sparse_categorical_crossentropy_probs", lambda t, o: ops.sparse_categorical_crossentropy(t, o),
     [np.array([0, 2, 1], "int32"), f32(3, 3, lo=0.05, hi=1.0)]),
    ("sparse_categorical_crossentropy_logits", lambda t, o: ops.sparse_categorical_crossentropy(t, o, from_logits=True),
     [np.array([[1], [3]], "int32"), f32(2, 4, lo=-3.0, hi=3.0)]),
    # Constructors, rearrangements, NaN tests, contractions; erf and rsqrt.
    ("eye_identity", lambda: [ops.eye(3, 4, k=1), ops.eye(3, k=-1, dtype="int32"), ops.identity(2)], []),
    ("full_linspace", lambda: [ops.full((2, 3), 1.5), ops.full((2,), 7), ops.linspace(0.0, 1.0, 5),
                               ops.linspace(-2.0, 3.0, 4, endpoint=False)], []),
    ("full_like", lambda x: [ops.full_like(x, 2.5), ops.zeros_like(x)], [f32(2, 3)]),
    ("tril_triu", lambda x: [ops.tril(x), ops.triu(x, k=1), ops.tril(x, k=-1)], [f32(2, 3, 4)]),
    ("flip_roll", lambda x: [ops.flip(x), ops.flip(x, axis=1), ops.roll(x, 2), ops.roll(x, -1, axis=2)], [f32(2, 3, 4)]),
    ("swap_move", lambda x: [ops.swapaxes(x, 0, 2), ops.moveaxis(x, 0, -1), ops.moveaxis(x, [0, 1], [2, 0])],
     [f32(2, 3, 4)]),
    ("nan_tests", lambda x: [ops.isnan(x), ops.isinf(x), ops.isfinite(x), ops.nan_to_num(x),
                             ops.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0)],
     [np.array([1.0, np.nan, np.inf, -np.inf, -2.5], "float32")]),
    ("tensordot", lambda a, b: [ops.tensordot(a, b, axes=1), ops.tensordot(a, ops.transpose(b), axes=([2], [1]))],
     [f32(2, 3, 4), f32(4, 5)]),
    ("tensordot_two_axes", lambda a, b: ops.tensordot(a, b), [f32(2, 3, 4), f32(3, 4, 2)]),
    ("dot_forms", lambda a, b, v: [ops.dot(a, b), ops.dot(a, v), ops.dot(v, v), ops.dot(ops.reshape(a, (2, 2, 3)), b)],
     [f32(4, 3), f32(3, 2), f32(3)]),
    ("inner_outer", lambda a, b: [ops.inner(a, b), ops.outer(a, b)], [f32(2, 3), f32(4, 3)]),
    ("diagonal_trace", lambda x: [ops.diagonal(x), ops.diagonal(x, offset=1, axis1=1, axis2=2),
                                  ops.diagonal(x, offset=-1, axis1=2, axis2=1), ops.trace(x, axis1=1, axis2=2)],
     [f32(2, 3, 4)]),
    ("diag", lambda v, m: [ops.diag(v), ops.diag(v, k=-2), ops.diag(m, k=1)], [f32(3), f32(3, 4)]),
    ("count_nonzero", lambda x: [ops.count_nonzero(x), ops.count_nonzero(x, axis=1)],
     [np.array([[0, 1.5, 0], [2, 0, -1]], "float32")]),
    ("erf_rsqrt", lambda x, p: [ops.erf(x), ops.rsqrt(p)], [f32(3, 4), f32(2, 3, lo=0.2, hi=3.0)]),
    ("separable_conv", lambda x, d, p: ops.separable_conv(x, d, p, padding="same"),
     [f32(2, 6, 5, 3), f32(3, 3, 3, 2), f32(1, 1, 6, 4)]),
    ("ravel_logaddexp", lambda x, y: [ops.ravel(x), ops.logaddexp(x, y)], [f32(2, 3, lo=-5.0, hi=5.0), f32(3)]),
    ("average", lambda x, w, v: [ops.average(x), ops.average(x, axis=1, weights=w), ops.average(x, axis=0, weights=v)],
     [f32(4, 3), f32(3, lo=0.1, hi=1.0), f32(4, 3, lo=0.1, hi=1.0)]),
    ("meshgrid", lambda a, b: list(ops.meshgrid(a, b)) + list(ops.meshgrid(a, b, indexing="ij")), [f32(3), f32(2)]),
    ("quantile_methods", lambda x: [ops.quantile(x, 0.3, axis=1), ops.quantile(x, [0.0, 0.5, 1.0]),
                                    ops.quantile(x, 0.4, axis=0, method="lower"),
                                    ops.quantile(x, 0.4, axis=0, method="higher"),
                                    ops.quantile(x, 0.4, axis=0, method="midpoint"),
                                    ops.quantile(x, 0.625, axis=1, method="nearest", keepdims=True)],
     [f32(3, 5)]),
    ("median", lambda x: [ops.median(x), ops.median(x, axis=(0, 2)), ops.median(x, axis=1, keepdims=True)],
     [f32(2, 3, 4)]),
    # Session 21: more element-wise functions and activations (math_more.cpp).
    ("cbrt_exp2_angles", lambda x, i: [ops.cbrt(x), ops.exp2(x), ops.deg2rad(x), ops.rad2deg(x), ops.fabs(x),
                                       ops.cbrt(i), ops.exp2(i)],
     [np.array([[-3.0, 0.5, 2.0], [8.0, -0.2, 1.5]], "float32"), np.array([1, -8, 27], "int32")]),
    ("trunc_divisions", lambda a, b, i, j: [ops.trunc(a), ops.floor_divide(a, b), ops.mod(a, b), ops.fmod(a, b),
                                            ops.floor_divide(i, j), ops.mod(i, j), ops.fmod(i, j), ops.trunc(i)],
     [np.array([[-2.5, 1.7, 7.25], [-7.5, 3.0, -0.4]], "float32"), np.array([1.5, -2.0, 3.0], "float32"),
      np.array([7, -7, 9, -9], "int32"), np.array([2, 3, -4, -2], "int32")]),
    ("divide_no_nan_heaviside", lambda a, b, c: [ops.divide_no_nan(a, b), ops.heaviside(c, 0.5)],
     [f32(2, 3), np.array([[0.0, 1.5, -2.0], [0.5, 0.0, 4.0]], "float32"),
      np.array([-1.0, 0.0, 2.0, 0.0], "float32")]),
    ("signbit_isclose_infs", lambda x, y: [ops.signbit(x), ops.isclose(x, y), ops.isclose(x, y, equal_nan=True),
                                           ops.allclose(x, y, equal_nan=True), ops.isneginf(x), ops.isposinf(x)],
     [np.array([-0.0, 0.0, -2.0, np.inf, -np.inf, np.nan, 1.0], "float32"),
      np.array([0.0, 1e-9, -2.00001, np.inf, np.inf, np.nan, 1.1], "float32")]),
    ("sinc_logaddexp2_erfc", lambda x, y: [ops.sinc(x), ops.logaddexp2(x, y), ops.erfc(x)],
     [np.array([[-1.5, 0.25, 0.7], [2.2, -0.5, 1.0]], "float32"), f32(3, lo=-4.0, hi=4.0)]),
    ("activations_more", lambda x: [ops.celu(x), ops.celu(x, alpha=0.5), ops.glu(x), ops.glu(x, axis=0),
                                    ops.hard_shrink(x), ops.soft_shrink(x, threshold=0.3), ops.tanh_shrink(x),
                                    ops.threshold(x, 0.2, -1.0), ops.hard_tanh(x), ops.hard_swish(x),
                                    ops.log_sigmoid(x), ops.sparse_plus(x), ops.squareplus(x),
                                    ops.squareplus(x, b=1.0)],
     [np.array([[-2.7, -0.9, -0.45, 0.1], [0.35, 0.8, 1.6, -1.4]], "float32")]),
    ("normalizations_psnr", lambda x, s, g, b, y: [ops.rms_normalization(x), ops.rms_normalization(x, scale=s),
                                                  ops.layer_normalization(x, g, b),
                                                  ops.layer_normalization(x, epsilon=1e-3),
                                                  ops.psnr(x, y, 2.0)],
     [f32(3, 5), f32(5, lo=0.5, hi=1.5), f32(5, lo=0.5, hi=1.5), f32(5), f32(3, 5)]),
    # Reductions (reduce_more.cpp).
    ("amax_ptp", lambda x: [ops.amax(x, axis=1), ops.amin(x), ops.ptp(x, axis=0), ops.ptp(x, axis=1, keepdims=True)],
     [f32(3, 4)]),
    ("nan_reductions", lambda x: [ops.nansum(x, axis=1), ops.nanmean(x, axis=1), ops.nanmax(x, axis=1),
                                  ops.nanmin(x, axis=0), ops.nanprod(x, axis=1), ops.nanvar(x, axis=1),
                                  ops.nanstd(x), ops.nansum(x)],
     [np.array([[1.0, np.nan, 3.0, -2.0], [np.nan, np.nan, np.nan, np.nan], [0.5, 2.0, np.nan, 1.5]], "float32")]),
    ("percentile_diff_trapezoid", lambda x, t: [ops.percentile(x, 30.0, axis=1), ops.percentile(x, 75.0),
                                                ops.diff(x), ops.diff(x, n=2, axis=-1), ops.diff(x, axis=0),
                                                ops.trapezoid(x), ops.trapezoid(x, dx=0.5, axis=0),
                                                ops.trapezoid(x, x=t)],
     [f32(3, 5), np.array([0.0, 0.5, 1.5, 1.75, 3.0], "float32")]),
    # Arrays (array_more.cpp).
    ("stacks_splits", lambda a, b, v: [ops.append(a, b), ops.append(a, b, axis=0), ops.hstack([a, b]),
                                       ops.vstack([a, b]), ops.dstack([a, b]), ops.hstack([v, v]),
                                       ops.vstack([v, v]), ops.dstack([v, v])]
     + list(ops.array_split(v, 3)) + list(ops.hsplit(a, 2)) + list(ops.vsplit(a, 3)) + list(ops.unstack(a, axis=1)),
     [f32(3, 4), f32(3, 4), f32(7)]),
    # rot90 with k=2 left out: Keras 3.15's TensorFlow backend gets it wrong (the C++ test checks NumPy's).
    ("flips_rot90", lambda x: [ops.fliplr(x), ops.flipud(x), ops.rot90(x), ops.rot90(x, k=-5), ops.rot90(x, k=3),
                               ops.rot90(x, k=1, axes=(1, 2))],
     [f32(2, 3, 4)]),
    ("tri_vander_kron", lambda v, a, b, i: [ops.tri(3, 4, k=1), ops.tri(3), ops.vander(v), ops.vander(v, 4, True),
                                            ops.kron(a, b), ops.kron(v, a), ops.vander(i)],
     [f32(3), f32(2, 3), f32(2, 2), np.array([2, -1, 3], "int32")]),
    ("cross_vdot_logspace_diagflat", lambda a, b, c, d: [ops.cross(a, b), ops.cross(c, d), ops.vdot(a, b),
                                                         ops.logspace(0.0, 2.0, 5), ops.logspace(1.0, 3.0, 4, base=2.0,
                                                                                                 endpoint=False),
                                                         ops.diagflat(c), ops.diagflat(c, k=-1)],
     [f32(4, 3), f32(4, 3), f32(2, 2), f32(2, 2)]),
    ("select_digitize_search", lambda x, b, s, v: [ops.select([x < -0.5, x > 0.5], [x * 2.0, x - 1.0], -3.0),
                                                   ops.digitize(x, b), ops.searchsorted(s, v),
                                                   ops.searchsorted(s, v, side="right")],
     [f32(3, 4), np.array([-1.0, 0.0, 0.5, 1.5], "float32"), np.array([-1.0, 0.0, 0.0, 2.0, 3.5], "float32"),
      np.array([0.0, -2.0, 3.5, 1.0, 4.0], "float32")]),
    ("bincount_in_top_k_multi_hot_isin", lambda x, w, r, t, p, m: [
        ops.bincount(x), ops.bincount(x, weights=ops.stop_gradient(w), minlength=7), ops.bincount(r),
        ops.in_top_k(t, p, 1), ops.in_top_k(t, p, 2), ops.multi_hot(m, 5), ops.isin(x, m),
        ops.isin(x, m, invert=True), ops.copy(w)],
     [np.array([0, 3, 1, 3, 3, 5], "int32"), f32(6), np.array([[0, 1, 1], [2, 2, 0]], "int32"),
      np.array([1, 0, 2], "int32"), np.array([[0.1, 0.9, 0.3], [0.5, 0.5, 0.7], [0.4, 0.2, 0.1]], "float32"),
      np.array([[0, 2], [4, 4]], "int32")]),
    # Transposed convolutions (conv_ops.cpp).
    ("conv_transpose", lambda x, k, y, j: [ops.conv_transpose(x, k, strides=2, padding="same"),
                                           ops.conv_transpose(x, k, strides=(2, 1), padding="valid"),
                                           ops.conv_transpose(x, k, strides=2, padding="same", output_padding=1),
                                           ops.conv_transpose(y, j, strides=1, padding="valid", dilation_rate=2,
                                                              data_format="channels_first")],
     [f32(2, 4, 3, 2), f32(3, 3, 5, 2), f32(1, 3, 6), f32(2, 4, 3)]),
    # Segments, scatters, slice updates, value-dependent shapes (scatter_ops.cpp).
    # num_segments unset: Keras's TensorFlow backend counts the distinct ids for segment_sum (max + 1 for
    # segment_max, and JAX's for both); Osprey takes max + 1 for both, the same for ids 0 .. k-1 as here.
    ("segments", lambda d, i, j, e: [ops.segment_sum(d, i), ops.segment_sum(d, j, num_segments=6),
                                     ops.segment_max(d, j), ops.segment_max(d, e, num_segments=3),
                                     ops.segment_sum(e * 2, e)],
     [f32(5, 3), np.array([0, 2, 0, 1, 2], "int32"), np.array([0, 2, 0, 4, 2], "int32"),
      np.array([1, 1, 0, 1, 0], "int32")]),
    ("scatter_slice_update", lambda i, v, x, u, w: [ops.scatter(i, v, (3, 2)), ops.scatter_update(x, i[:2], v[:2]),
                                                    ops.scatter_update(x, i, v, reduction="add"),
                                                    # (TensorFlow has no gradient for slice_update's XLA op)
                                                    ops.slice_update(ops.stop_gradient(x), (1, 0),
                                                                     ops.stop_gradient(u)),
                                                    ops.scatter(i[:, :1], w, (3, 4))],
     [np.array([[0, 1], [2, 0], [0, 1]], "int32"), f32(3), f32(3, 2), f32(2, 1), f32(3, 4)]),
    ("nonzero_unique", lambda x, i, f: list(ops.nonzero(x)) + list(ops.unique(i, return_inverse=True,
                                                                              return_counts=True)) + [ops.unique(ops.stop_gradient(f))],
     [np.array([[0, 1.5, 0], [2, 0, -1]], "float32"), np.array([[3, 1, 3], [2, 1, 1]], "int32"),
      np.array([2.5, np.nan, -1.0, 2.5, np.nan], "float32")]),
    # Windows, NaN-aware fmax/fmin, scans and arg-reductions, geomspace, sparse activations (numpy_extra.cpp).
    ("windows", lambda: [ops.bartlett(7), ops.hamming(6), ops.hanning(5), ops.blackman(8), ops.kaiser(7, 5.0),
                         ops.kaiser(4, 0.5), ops.hamming(1), ops.bartlett(1)], []),
    ("fmax_fmin_nan", lambda a, b: [ops.fmax(a, b), ops.fmin(a, b), ops.fmax(a, 0.5)],
     [np.array([[1.0, np.nan, -2.0], [np.nan, 0.25, 3.0]], "float32"),
      np.array([[0.5, 1.5, np.nan], [np.nan, -1.0, 3.5]], "float32")]),
    ("nan_scans_args", lambda x, y: [ops.nancumsum(x, axis=1), ops.nancumprod(x, axis=0), ops.nancumsum(x),
                                     ops.nanargmax(y, axis=1), ops.nanargmin(y, axis=1), ops.nanargmax(y),
                                     ops.nanargmin(y, axis=0, keepdims=True)],
     [np.array([[1.5, np.nan, -0.5], [np.nan, 2.0, 0.75]], "float32"),
      np.array([[np.nan, 3.0, -1.0], [np.nan, np.nan, np.nan], [2.0, np.nan, 5.0]], "float32")]),
    ("geomspace", lambda: [ops.geomspace(1.0, 1000.0, 4), ops.geomspace(-2.0, -32.0, 5),
                           ops.geomspace(0.5, 8.0, 4, endpoint=False)], []),
    ("sparse_activations", lambda x, y: [ops.sparse_sigmoid(x), ops.sparsemax(y), ops.sparsemax(y, axis=0)],
     [np.array([-2.0, -1.0, -0.3, 0.0, 0.6, 1.0, 1.7], "float32"), f32(3, 5, lo=-1.5, hi=1.5)]),
    ("depth_space", lambda x, y: [ops.depth_to_space(x, 2), ops.space_to_depth(y, 2),
                                  ops.depth_to_space(y, 2, data_format="channels_first"),
                                  ops.space_to_depth(x, 2, data_format="channels_first")],
     [f32(2, 2, 4, 8), f32(1, 4, 6, 4)]),
    ("corrcoef_cdist", lambda x, a, b: [ops.corrcoef(x), ops.cdist(a, b)], [f32(3, 6), f32(2, 4, 3), f32(2, 5, 3)]),
    ("ldexp_unravel", lambda x, e, i: [ops.ldexp(x, e)] + list(ops.unravel_index(i, (3, 4, 2))),
     [np.array([1.5, -0.75, 0.0, np.inf, 3.0], "float32"), np.array([2, -1, 5, 1, 0], "int32"),
      np.array([0, 7, 23, 12, 5], "int32")]),
    # (No gradient through the counts; the edges of an unset range follow min and max: left out with stop_gradient.)
    ("histogram_frames", lambda x, s: list(ops.histogram(x, bins=4, range=(-1.0, 1.5)))
     + list(ops.histogram(ops.stop_gradient(x), bins=5)) + [ops.extract_sequences(s, 4, 3)],
     [np.array([-1.0, -0.2, 0.25, 1.5, 2.0, 0.875, -1.2, 0.3], "float32"), f32(2, 11)]),
    ("bitwise_gcd", lambda a, b, s, c: [ops.bitwise_and(a, b), ops.bitwise_or(a, b), ops.bitwise_xor(a, b),
                                        ops.bitwise_invert(a), ops.bitwise_not(b), ops.bitwise_left_shift(a, s),
                                        ops.left_shift(b, 3), ops.bitwise_right_shift(a, s), ops.right_shift(b, s),
                                        ops.bitwise_and(c, a[:, None]), ops.gcd(a, b), ops.lcm(a, b), ops.gcd(c, 6)],
     [np.array([5, -3, 12, 0, 255, -128, 7], "int32"), np.array([3, 6, -1, 7, 15, 127, 0], "int32"),
      np.array([1, 0, 3, 2, 40, 1, -2], "int32"), np.array([[6, -9, 0]], "int32")]),
    ("bitwise_int64", lambda a, b: [ops.bitwise_xor(a, b), ops.left_shift(a, 40), ops.lcm(a, b)],
     [np.array([3, -7, 1 << 40], "int64"), np.array([5, 21, 3], "int64")]),
    ("i0", lambda x, i: [ops.i0(x), ops.i0(i)],
     [np.array([0.0, 0.5, -1.5, 3.0, 3.75, -3.76, 7.5, 12.0, -30.0], "float32"), np.array([0, 2, -4], "int32")]),
    # (Keras's TensorFlow backend maps the slices of an axis through tf.map_fn, which passes no gradient: those
    # calls take x under stop_gradient, the whole-tensor ones pass theirs.)
    ("nan_quantiles", lambda x: [ops.nanquantile(ops.stop_gradient(x), 0.3, axis=1),
                                 ops.nanmedian(ops.stop_gradient(x), axis=0),
                                 ops.nanpercentile(ops.stop_gradient(x), 90.0, axis=1, method="lower"),
                                 ops.nanmedian(x),
                                 ops.nanquantile(ops.stop_gradient(x), 0.5, axis=1, keepdims=True, method="nearest"),
                                 ops.nanquantile(x, [0.2, 0.7]),
                                 ops.nanquantile(ops.stop_gradient(x), 0.6, axis=1, method="higher"),
                                 ops.nanquantile(ops.stop_gradient(x), 0.25, axis=0, method="midpoint")],
     [np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, np.nan, np.nan, np.nan], [4.0, 0.0, np.nan, -1.0]], "float32")]),
    ("correlate_argpartition", lambda a, b, c, i: [ops.correlate(a, b), ops.correlate(a, b, mode="same"),
                                                   ops.correlate(a, c, mode="full"), ops.correlate(a, c, mode="same"),
                                                   ops.correlate(i, i[:3]), ops.argpartition(i, 2),
                                                   ops.argpartition(i, 0), ops.argpartition(i, 9)],
     [f32(7), f32(3), f32(4), np.array([3, 1, 2, 5, 4, 0], "int32")]),
    ("real_parts", lambda x, i: [ops.real(x), ops.imag(x), ops.conj(x), ops.conjugate(x), ops.angle(x), ops.isreal(x),
                                 ops.angle(i)],
     [np.array([[0.0, 0.5, -1.5], [3.0, -7.5, np.nan]], "float32"), np.array([1, -2, 0], "int32")]),
]


def dtype_name(d):
    return tf.as_dtype(d).name


def numbers(a):
    """Values as JSON numbers; NaN and ±inf (not JSON) as the strings "nan", "inf", "-inf"."""
    return [v if np.isfinite(v) else ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf"))
            for v in np.asarray(a).astype("float64").reshape(-1).tolist()]


def record(t):
    a = np.asarray(t)
    return {"shape": list(a.shape), "dtype": dtype_name(a.dtype), "values": numbers(a)}


out = {"keras": keras.__version__, "tensorflow": tf.__version__, "cases": []}
for name, fn, inputs in cases:
    tensors = [tf.constant(x) for x in inputs]
    with tf.GradientTape(persistent=True) as tape:
        for t in tensors:
            if t.dtype.is_floating:
                tape.watch(t)
        result = fn(*tensors)
        results = list(result) if isinstance(result, (list, tuple)) else [result]
        cotangents = [np.cos(np.arange(np.size(r))).reshape(np.shape(r)).astype("float32") for r in results]
        losses = [tf.reduce_sum(tf.cast(r, tf.float32) * c) for r, c in zip(results, cotangents)
                  if r.dtype.is_floating]
        loss = tf.add_n(losses) if losses else None
    grads = []
    for t in tensors:
        g = tape.gradient(loss, t) if (loss is not None and t.dtype.is_floating) else None
        grads.append(None if g is None else numbers(g))
    out["cases"].append({"name": name, "inputs": [record(x) for x in inputs],
                         "outputs": [record(r) for r in results], "grads": grads})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_ops.json")
with open(path, "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"))
    f.write("\n")
print(f"wrote {path}: {len(cases)} cases (Keras {keras.__version__}, TensorFlow {tf.__version__})")
