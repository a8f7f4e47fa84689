"""What the keras.ops reference scripts share: each case runs a keras.ops call of real Keras 3 (the TensorFlow backend)
on stored inputs and records its outputs (values, shape, dtype) and, for float inputs, the gradients of
sum(output * cotangent) under tf.GradientTape, the cotangent being cos(0), cos(1), ... over the output's elements."""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402


def dtype_name(d):
    return tf.as_dtype(d).name


def numbers(a):
    """Values as JSON numbers; NaN and ±inf (not JSON) as the strings "nan", "inf", "-inf"."""
    return [v if np.isfinite(v) else ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf"))
            for v in np.asarray(a).astype("float64").reshape(-1).tolist()]


def record(t):
    a = np.asarray(t)
    return {"shape": list(a.shape), "dtype": dtype_name(a.dtype), "values": numbers(a)}


def write_cases(cases, filename):
    """Runs (name, fn, inputs) cases and writes them to tests/data/<filename>."""
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

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", filename)
    with open(path, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases (Keras {keras.__version__}, TensorFlow {tf.__version__})")
