"""Expected values for mixed precision (tests/keras/test_mixed_precision.cpp) from real Keras 3 (TensorFlow backend):
float32 -> bfloat16/float16 rounding of edge values; an MLP under the "mixed_bfloat16" policy (layers' dtypes, its
bfloat16 outputs, the loss, the float32 gradients, the weights after one SGD step); the same model's outputs under
"mixed_float16"; and tests/data/keras_files/mixed_bf16.keras, saved by Keras under mixed_bfloat16.
`python3 tests/keras/keras_mixed_precision_reference.py` (pip tensorflow-cpu keras) writes
tests/data/keras_mixed_precision.json and that file."""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
out = {"keras": keras.__version__, "tensorflow": tf.__version__}

edges = np.array([0.0, -0.0, 1.0, 1.00390625, 1.005859375, 3.14159265, -2.7182818, 65504.0, 65520.0, 1e-8, 6e-8,
                  3e-5, 1e30, -1e-40, np.inf, -np.inf, 0.1, 1.0 / 3.0], dtype="float32")
out["casts"] = {"x": edges.tolist(),
                "bfloat16": tf.cast(tf.cast(edges, tf.bfloat16), tf.float32).numpy().tolist(),
                "float16": tf.cast(tf.cast(edges, tf.float16), tf.float32).numpy().tolist()}


def make_model():
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu", name="hidden"),
                             keras.layers.Dense(4, activation="softmax", name="probs")], name="mlp")


x = rng.uniform(-1, 1, size=(6, 8)).astype("float32")
y = np.array([0, 3, 1, 2, 3, 0], dtype="int32")
weights = [rng.uniform(-0.5, 0.5, size=s).astype("float32") for s in [(8, 16), (16,), (16, 4), (4,)]]

for policy in ["mixed_bfloat16", "mixed_float16"]:
    keras.mixed_precision.set_global_policy(policy)
    model = make_model()
    model.set_weights(weights)
    rec = {"layers": [{"name": l.name, "compute_dtype": l.compute_dtype, "variable_dtype": l.variable_dtype}
                      for l in model.layers]}
    pred = model(x, training=False)
    rec["output_dtype"] = pred.dtype.name if hasattr(pred.dtype, "name") else str(pred.dtype)
    rec["predict"] = np.asarray(tf.cast(pred, tf.float32)).tolist()
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    rec["loss"] = float(loss)
    rec["grads"] = [np.asarray(g).astype("float64").tolist() for g in grads]
    rec["grad_dtypes"] = [g.dtype.name for g in grads]
    if policy == "mixed_bfloat16":
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
        model.train_on_batch(x, y)
        rec["after_sgd_step"] = [w.astype("float64").tolist() for w in model.get_weights()]
        os.makedirs(os.path.join(HERE, "..", "data", "keras_files"), exist_ok=True)
        saved = make_model()
        saved.set_weights(weights)
        saved.save(os.path.join(HERE, "..", "data", "keras_files", "mixed_bf16.keras"))
    out[policy] = rec
keras.mixed_precision.set_global_policy("float32")
out["x"] = x.tolist()
out["y"] = y.tolist()
out["weights"] = [w.astype("float64").tolist() for w in weights]



def finite(v):  # JSON has no infinities: they are written as the strings "inf" and "-inf"
    if isinstance(v, float) and np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, list):
        return [finite(e) for e in v]
    if isinstance(v, dict):
        return {k: finite(e) for k, e in v.items()}
    return v


path = os.path.join(HERE, "..", "data", "keras_mixed_precision.json")
with open(path, "w") as f:
    json.dump(finite(out), f, indent=None, separators=(",", ":"), allow_nan=False)
    f.write("\n")
print(f"wrote {path} (Keras {keras.__version__}, TensorFlow {tf.__version__})")
