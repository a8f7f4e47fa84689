"""Expected values for keras::ops::pad's NumPy modes (tests/ops/test_keras_pad.cpp). Keras 3's TensorFlow backend
pads only with constant, reflect and symmetric; its JAX backend (jnp.pad) has every mode and pads wider than the
axis, so this script runs Keras on JAX: each case's outputs (values, shape, dtype) and, for float inputs, the
gradients of sum(output * cotangent) by jax.vjp, the cotangent cos(0), cos(1), ... over the output's elements (the
layout of tests/keras/ops_reference_common.py). `python3 tests/keras/keras_pad_reference.py` (pip jax keras) writes
tests/data/keras_pad.json."""
import json
import os

os.environ["KERAS_BACKEND"] = "jax"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import ops  # noqa: E402

rng = np.random.default_rng(20261205)


def f32(*shape):
    return rng.uniform(-2.0, 2.0, size=shape).astype("float32")


def i32(*shape):
    return rng.integers(-9, 10, size=shape).astype("int32")


def numbers(a):
    return np.asarray(a).astype("float64").reshape(-1).tolist()


def record(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "values": numbers(a)}


def p(mode, widths):
    return lambda x: ops.pad(x, widths, mode=mode)


cases = [
    # Each mode over two or three axes (a later axis's statistics read the earlier axes' padding).
    ("pad_edge", p("edge", ((2, 1), (0, 3))), [f32(3, 4)]),
    ("pad_wrap", p("wrap", ((1, 2), (3, 1), (0, 0))), [f32(3, 4, 2)]),
    ("pad_maximum", p("maximum", ((1, 2), (2, 1))), [f32(3, 4)]),
    ("pad_minimum", p("minimum", ((0, 2), (1, 1), (2, 0))), [f32(2, 3, 4)]),
    ("pad_mean", p("mean", ((2, 1), (1, 2))), [f32(3, 4)]),
    ("pad_median_odd_even", p("median", ((1, 1), (2, 1))), [f32(3, 4)]),
    ("pad_linear_ramp", p("linear_ramp", ((3, 2), (1, 4))), [f32(3, 4)]),
    ("pad_empty", p("empty", ((1, 0), (2, 2))), [f32(2, 3)]),
    # Wider than the axis: reflected, mirrored and wrapped again (TensorFlow's backend refuses these).
    ("pad_reflect_wide", p("reflect", ((7, 9), (2, 5))), [f32(3, 2)]),
    ("pad_symmetric_wide", p("symmetric", ((5, 8),)), [f32(3)]),
    ("pad_wrap_wide", p("wrap", ((0, 0), (9, 7))), [f32(2, 3)]),
    ("pad_edge_single", p("edge", ((3, 2), (1, 1))), [f32(1, 2)]),
    ("pad_reflect_single", p("reflect", ((2, 3),)), [f32(1)]),
    # Integers: means and medians rounded half to even, ramps floored.
    ("pad_int_mean", p("mean", ((2, 1), (3, 2))), [np.array([[-7, 2], [4, -8]], "int32")]),
    ("pad_int_median", p("median", ((1, 2), (2, 1))), [i32(3, 4)]),
    ("pad_int_ramp", p("linear_ramp", ((2, 1), (3, 2))), [np.array([[-7, 2], [4, -8]], "int32")]),
    ("pad_int_modes", lambda x: [ops.pad(x, ((1, 2), (3, 1)), mode=m)
                                 for m in ("edge", "wrap", "maximum", "minimum", "reflect", "symmetric")],
     [i32(3, 4)]),
]

out = {"keras": keras.__version__, "jax": jax.__version__, "cases": []}
for name, fn, inputs in cases:
    xs = [jnp.asarray(x) for x in inputs]
    result = fn(*xs)
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    grads = [None] * len(inputs)
    if all(np.issubdtype(x.dtype, np.floating) for x in inputs):
        cot = [np.cos(np.arange(np.size(r))).reshape(np.shape(r)).astype("float32") for r in results]

        def loss(*a):
            r = fn(*a)
            rs = list(r) if isinstance(r, (list, tuple)) else [r]
            return sum(jnp.sum(t.astype("float32") * c) for t, c in zip(rs, cot))

        grads = [numbers(g) for g in jax.grad(loss, argnums=tuple(range(len(xs))))(*xs)]
    out["cases"].append({"name": name, "inputs": [record(x) for x in inputs],
                         "outputs": [record(r) for r in results], "grads": grads})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_pad.json")
with open(path, "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"))
    f.write("\n")
print(f"wrote {path}: {len(cases)} cases (Keras {keras.__version__}, JAX {jax.__version__})")
