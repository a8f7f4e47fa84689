# Keras 3's Circle loss (metric learning over the batch's pairs; its values mask themselves where they are 0): the
# loss and its gradient with respect to the embeddings for several gamma/margin/remove_diagonal settings, integer and
# float labels, a sample without positives, sample weights and the reductions; and a fit of a small embedding model
# (Dense then UnitNormalization) trained with it.
# Regenerates tests/data/keras_circle.json, read by tests/keras/test_circle_loss.cpp.
# Run: python3 tests/keras/keras_circle_reference.py (pip tensorflow-cpu keras; Keras 3.15.1 / TF 2.21).
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
import keras

rng = np.random.default_rng(53)
out = {"keras": keras.__version__, "cases": []}


def lst(a):
    return np.asarray(a, dtype="float64").tolist()


def unit(a):
    return (a / np.linalg.norm(a, axis=-1, keepdims=True)).astype("float32")


def add(name, loss, y, emb, weights=None):
    e = tf.Variable(emb)
    with tf.GradientTape() as tape:
        value = loss(y, e, sample_weight=weights)
    grad = tape.gradient(value, e)
    per_sample = keras.losses.circle(y, emb, gamma=loss.gamma, margin=loss.margin,
                                     remove_diagonal=loss.remove_diagonal)
    out["cases"].append({"name": name, "config": loss.get_config(), "y": lst(y), "y_pred": lst(emb),
                         "sample_weight": None if weights is None else lst(weights),
                         "loss": lst(value), "per_sample": lst(per_sample), "grad": lst(grad)})


N, D = 10, 4
labels = rng.integers(0, 3, (N,)).astype("int32")
emb = unit(rng.normal(size=(N, D)))
add("default", keras.losses.Circle(), labels, emb)
add("gamma_2_margin_0.25", keras.losses.Circle(gamma=2.0, margin=0.25), labels, emb)
add("keep_diagonal", keras.losses.Circle(gamma=4.0, remove_diagonal=False), labels, emb)
add("labels_n_by_1_float", keras.losses.Circle(gamma=3.0), labels[:, None].astype("float32"), emb)
lonely = labels.copy()
lonely[0] = 7  # no other sample has its label: no positives in its row
add("a_sample_without_positives", keras.losses.Circle(gamma=3.0), lonely, emb)
w = rng.uniform(0.0, 2.0, N).astype("float32")
add("sample_weight", keras.losses.Circle(gamma=3.0), labels, emb, w)
add("reduction_sum", keras.losses.Circle(gamma=3.0, reduction="sum"), labels, emb)
add("reduction_none", keras.losses.Circle(gamma=3.0, reduction="none"), labels, emb)
add("mean_with_sample_weight", keras.losses.Circle(gamma=3.0, reduction="mean_with_sample_weight"), labels, emb, w)
add("not_normalized", keras.losses.Circle(gamma=1.5), labels, rng.normal(size=(N, D)).astype("float32"))

# ---- fit: Dense(4) then UnitNormalization, trained with Circle(gamma=8) ----
n, d = 24, 6
x = rng.normal(size=(n, d)).astype("float32")
y = rng.integers(0, 3, (n,)).astype("int32")
kernel = rng.normal(scale=0.5, size=(d, 4)).astype("float32")
model = keras.Sequential([keras.Input((d,)), keras.layers.Dense(4), keras.layers.UnitNormalization()])
model.layers[0].set_weights([kernel, np.zeros(4, "float32")])
model.compile(optimizer=keras.optimizers.SGD(0.05), loss=keras.losses.Circle(gamma=8.0))
hist = model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
out["training"] = {"x": lst(x), "y": lst(y), "kernel": lst(kernel),
                   "history": {k: [float(v) for v in vs] for k, vs in hist.history.items()},
                   "weights_after": [lst(v) for v in model.get_weights()],
                   "evaluate": float(model.evaluate(x, y, batch_size=8, verbose=0))}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_circle.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path, len(out["cases"]), "cases")
