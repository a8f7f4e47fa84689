# Regenerates tests/data/keras_hashing.json: Keras 3's Hashing layer on its TensorFlow backend — bins of int64,
# int32 and float inputs with the fast (FarmHash Fingerprint64) and the salted (SipHash) hash, a mask value, every
# output mode, output dtypes and shapes, configs, and Keras's rejections — and HashedCrossing (crosses of two and
# three features, one_hot, int32).
# tests/keras/test_hashing.cpp checks Osprey's layer against it.
# Run: python3 tests/keras/keras_hashing_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from keras import layers as L

rng = np.random.default_rng(79)
ref = {}


def tl(v):
    return np.asarray(v).tolist()


big = np.array([[0, 1, -1], [2**31, -(2**31), 2**62 + 7], [2**63 - 1, -(2**63), 1234567890123],
                [42, 42, -999]], dtype="int64")
ints = rng.integers(-10**6, 10**6, (5, 4)).astype("int64")
floats = np.array([[1.7, -2.3, 3.0], [0.0, -0.9, 1e10], [123.99, -5.5, 7.0]], dtype="float32")
cases = []
for name, x, kw in [
    ("fast_big", big, dict(num_bins=1000003)),
    ("fast_ints", ints, dict(num_bins=7)),
    ("fast_int32", ints.astype("int32"), dict(num_bins=11)),
    ("floats", floats, dict(num_bins=13)),
    ("salt_pair", ints, dict(num_bins=9, salt=[17, 42])),
    ("salt_one", big, dict(num_bins=1000003, salt=133)),
    ("mask", np.array([[0, 3, 0], [5, 0, 9]], dtype="int64"), dict(num_bins=5, mask_value=0)),
    ("mask_float", np.array([[1.5, 1.0, 2.5]], dtype="float32"), dict(num_bins=4, mask_value=1.5)),
    ("one_hot", ints[:, :1], dict(num_bins=6, output_mode="one_hot")),
    ("multi_hot", ints, dict(num_bins=6, output_mode="multi_hot")),
    ("count", np.array([[1, 1, 2, 3], [4, 4, 4, 4]], dtype="int64"), dict(num_bins=5, output_mode="count")),
    ("count_salted_masked", ints, dict(num_bins=8, output_mode="count", salt=[1, 2], mask_value=int(ints[0, 0]))),
    ("int32_dtype", ints, dict(num_bins=7, dtype="int32")),
    ("bools", np.array([[True, False], [False, False]]), dict(num_bins=1000003)),
]:
    layer = L.Hashing(**kw)
    y = layer(x)
    cases.append({"name": name, "x": tl(x), "x_dtype": str(x.dtype), "kwargs": kw, "y": tl(y),
                  "y_dtype": str(np.asarray(y).dtype), "config": layer.get_config()})
ref["cases"] = cases

# HashedCrossing: tf.sparse.cross_hashed of one feature per row.
ca = rng.integers(-10**9, 10**9, (6, 1)).astype("int64")
cb = rng.integers(0, 50, (6, 1)).astype("int64")
cc = rng.integers(-5, 5, (6, 1)).astype("int64")
crosses = []
for name, xs, kw in [("two", [ca, cb], dict(num_bins=1000003)),
                     ("three_rank1", [ca[:, 0], cb[:, 0], cc[:, 0]], dict(num_bins=7)),
                     ("one_hot", [cb, cc], dict(num_bins=6, output_mode="one_hot")),
                     ("int32", [cb.astype("int32"), cc.astype("int32")], dict(num_bins=9)),
                     ("int32_dtype", [ca, cb], dict(num_bins=11, dtype="int32"))]:
    layer = L.HashedCrossing(**kw)
    y = layer(tuple(xs))
    crosses.append({"name": name, "xs": [tl(x) for x in xs], "x_dtype": str(xs[0].dtype), "kwargs": kw, "y": tl(y),
                    "y_dtype": str(np.asarray(y).dtype), "config": layer.get_config()})
ref["crossing"] = crosses


def rejected(make):
    try:
        make()
        return False
    except (ValueError, TypeError):
        return True


ref["rejects"] = {
    "zero_bins": rejected(lambda: L.Hashing(num_bins=0)),
    "bad_mode": rejected(lambda: L.Hashing(num_bins=3, output_mode="tf_idf")),
    "sparse_int": rejected(lambda: L.Hashing(num_bins=3, sparse=True)),
    "float_dtype_int_mode": rejected(lambda: L.Hashing(num_bins=3, dtype="float32")),
    "bad_salt": rejected(lambda: L.Hashing(num_bins=3, salt=[1, 2, 3])),
    "crossing_mode": rejected(lambda: L.HashedCrossing(num_bins=3, output_mode="multi_hot")),
    "crossing_one_input": rejected(lambda: L.HashedCrossing(num_bins=3)((ca,))),
    "crossing_floats": rejected(lambda: L.HashedCrossing(num_bins=3)((ca.astype("float32"), cb.astype("float32")))),
}

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_hashing.json"), "w") as f:
    json.dump(ref, f)
print("wrote keras_hashing.json")
