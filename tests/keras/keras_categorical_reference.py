"""Expected values for keras.layers.CategoryEncoding and keras.layers.Discretization
(tests/keras/test_categorical_layers.cpp) from real Keras 3 on the TensorFlow backend: each case's inputs, the
layer's arguments and either its output (values, shape, dtype) or the class of the error Keras raises; for
Discretization also the bin boundaries adapt() finds (one array, or several batches merged).
`python3 tests/keras/keras_categorical_reference.py` (pip tensorflow-cpu keras) writes
tests/data/keras_categorical.json."""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(31)
out = {"keras": keras.__version__, "tensorflow": tf.__version__}


def run(fn):
    try:
        y = fn()
    except Exception as e:  # noqa: BLE001 -- the class is what the test checks
        return {"error": type(e).__name__}
    y = np.asarray(y)
    return {"output": y.astype("float64").reshape(-1).tolist(), "shape": list(y.shape), "dtype": str(y.dtype)}


def array(a, dtype):  # NaN as null (JSON has no NaN)
    a = np.asarray(a, dtype=dtype)
    values = [None if np.isnan(v) else v for v in a.astype("float64").reshape(-1).tolist()]
    return {"values": values, "shape": list(a.shape), "dtype": str(a.dtype)}


ce = []
for tokens, mode, x, dtype, weights in [
        (4, "multi_hot", [3, 2, 0, 1, 1], "int32", None),          # rank 1: one sample (TF's bincount)
        (4, "one_hot", [3, 2, 0, 1], "int32", None),
        (4, "one_hot", [[3], [2]], "int32", None),                   # (n, 1): the last axis replaced
        (4, "one_hot", [[3, 1], [2, 0]], "int64", None),             # (n, k): an axis appended
        (4, "multi_hot", [[3, 1], [2, 0], [1, 1]], "int32", None),
        (4, "multi_hot", [[3, 5], [2, 9]], "int32", None),           # ids >= num_tokens are dropped
        (4, "multi_hot", [[3, 1], [2, -1]], "int32", None),          # negative ids: an error
        (4, "count", [[3, 3], [2, 7], [0, 0]], "int32", None),
        (4, "count", [[0, 1], [0, 0]], "int32", [[0.1, 0.2], [0.1, 0.1]]),
        (4, "one_hot", [5, -1, 2], "int32", None),                   # one_hot: out-of-range rows are zeros
        (4, "multi_hot", [[[0, 1]], [[2, 2]]], "int32", None),       # rank 3: one_hot reduced over axis 1
        (3, "count", [[[0, 1], [1, 1]]], "int32", None),
        (4, "count", 2, "int32", None),                              # a scalar: one sample
        (4, "multi_hot", [[0.7, 1.2]], "float32", None),             # float ids truncate
        (6, "binary", [[5, 0]], "int32", None),                      # Keras's alias of multi_hot
        (4, "one_hot", [[1, 2]], "int32", [[1.0, 1.0]]),             # count_weights outside "count": an error
]:
    w = None if weights is None else np.asarray(weights, "float32")
    xa = np.asarray(x, dtype=dtype)
    case = {"num_tokens": tokens, "output_mode": mode, "x": array(x, dtype),
            "count_weights": None if w is None else array(weights, "float32")}
    case.update(run(lambda: keras.layers.CategoryEncoding(tokens, mode)(xa, count_weights=w)))
    ce.append(case)
for tokens, mode in [(0, "multi_hot"), (4, "tf_idf"), (None, "one_hot")]:
    ce.append({"num_tokens": tokens, "output_mode": mode, "x": None, "count_weights": None,
               **run(lambda: keras.layers.CategoryEncoding(tokens, mode))})
out["category_encoding"] = ce

disc = []
xs = rng.normal(0, 1, (6, 3)).astype("float32")
for args, x in [
        (dict(bin_boundaries=[-0.5, 0.0, 0.5]), xs),
        (dict(bin_boundaries=[-0.5, 0.0, 0.5]), np.array([[-0.5, 0.0, 0.5, 0.49, np.nan, 7.0]], "float32")),
        (dict(bin_boundaries=[-0.5, 0.0, 0.5], output_mode="one_hot"), xs[:, :1]),
        (dict(bin_boundaries=[-0.5, 0.0, 0.5], output_mode="one_hot"), xs),
        (dict(bin_boundaries=[-0.5, 0.0, 0.5], output_mode="multi_hot"), xs),
        (dict(bin_boundaries=[-0.5, 0.0, 0.5], output_mode="count"), xs),
        (dict(bin_boundaries=[0.0, 1.0], output_mode="count"), xs[0]),
        (dict(bin_boundaries=[1.5, 3.0]), np.array([[1, 2, 3, 4]], "int32")),
        (dict(bin_boundaries=[]), xs[:2]),
]:
    d = keras.layers.Discretization(**args)
    disc.append({"args": args, "x": array(x, x.dtype), **run(lambda: d(x))})
for args in [dict(), dict(num_bins=3, bin_boundaries=[0.0]), dict(num_bins=-1), dict(bin_boundaries=[0.0], output_mode="tf_idf")]:
    disc.append({"args": args, "x": None, **run(lambda: keras.layers.Discretization(**args))})
out["discretization"] = disc

adapt = []
for num_bins, epsilon, batches in [
        (4, 0.01, [rng.normal(0, 1, (200, 3))]),
        (5, 0.01, [rng.uniform(-2, 3, (40,)), rng.exponential(1.0, (300, 2)), rng.normal(5, 1, (7,))]),
        (3, 0.1, [rng.integers(0, 4, (50, 1)).astype("float64")]),   # ties
        (8, 0.01, [rng.normal(0, 1, (5,))]),                          # fewer values than bins
        (2, 0.25, [rng.normal(0, 1, (1000,)), rng.normal(3, 1, (1000,))]),
]:
    batches = [b.astype("float32") for b in batches]
    d = keras.layers.Discretization(num_bins=num_bins, epsilon=epsilon)
    d.adapt(batches if len(batches) > 1 else batches[0])
    probe = rng.normal(0, 2, (4, 5)).astype("float32")
    adapt.append({"num_bins": num_bins, "epsilon": epsilon, "batches": [array(b, "float32") for b in batches],
                  "bin_boundaries": [float(v) for v in d.bin_boundaries], "probe": array(probe, "float32"),
                  **run(lambda: d(probe)), "config": json.loads(json.dumps(d.get_config()))})
out["adapt"] = adapt

path = os.path.join(HERE, "..", "data", "keras_categorical.json")
with open(path, "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"), allow_nan=False)
    f.write("\n")
print(f"wrote {path} (Keras {keras.__version__}, TensorFlow {tf.__version__})")
