# Keras 3's sample weights per output of a multi-output model: sample_weight=[w_a, w_b] (a list in the outputs'
# order; None leaves an output unweighted), each output's loss, logged <name>_loss and weighted_metrics taking its
# own (CompileLoss.call resolves each output's weight by its path; CompileMetrics.update_state gives each output's
# weighted metrics its own), and one (N,) array for every output. fit (history with validation_data weighted per
# output), evaluate, train_on_batch/test_on_batch, and the cases Keras refuses.
# Keras 3.15.1 refuses a dict of weights for a model whose outputs are a list (CompileLoss looks the weights up by
# list index: KeyError 0); Osprey takes a map by output name as the same list, so the tests compare it with the
# list's numbers.
# Regenerates tests/data/keras_output_weights.json, read by tests/keras/test_output_weights.cpp.
# Run: python3 tests/keras/keras_output_weights_reference.py (pip tensorflow-cpu keras; Keras 3.15.1 / TF 2.21).
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
import keras
from keras import layers
from keras import metrics as M

rng = np.random.default_rng(71)
out = {"keras": keras.__version__, "cases": [], "errors": []}


def lst(a):
    return np.asarray(a, dtype="float64").tolist()


n, t, f, C = 16, 5, 4, 3
x = rng.normal(size=(n, t, f)).astype("float32")
tags = rng.integers(0, C, (n, t)).astype("int32")
score = rng.normal(size=(n, 1)).astype("float32")
w_steps = rng.uniform(0.0, 2.0, (n, t)).astype("float32")
w_steps[:, 0] = 0.0  # the first step never counts
w_samples = rng.uniform(0.0, 2.0, (n,)).astype("float32")
w_one = rng.uniform(0.2, 2.0, (n,)).astype("float32")
xv = rng.normal(size=(8, t, f)).astype("float32")
tags_v = rng.integers(0, C, (8, t)).astype("int32")
score_v = rng.normal(size=(8, 1)).astype("float32")
wv_steps = rng.uniform(0.0, 2.0, (8, t)).astype("float32")
wv_samples = rng.uniform(0.0, 2.0, (8,)).astype("float32")
kh = rng.normal(scale=0.5, size=(f, 6)).astype("float32")
kt = rng.normal(scale=0.5, size=(6, C)).astype("float32")
ks = rng.normal(scale=0.5, size=(6, 1)).astype("float32")
out["data"] = {"x": lst(x), "tags": lst(tags), "score": lst(score), "w_steps": lst(w_steps),
               "w_samples": lst(w_samples), "w_one": lst(w_one), "x_val": lst(xv), "tags_val": lst(tags_v),
               "score_val": lst(score_v), "w_val_steps": lst(wv_steps), "w_val_samples": lst(wv_samples),
               "kernels": [lst(kh), lst(kt), lst(ks)]}


def two_outputs():
    # A per-step tagger and a pooled regression head over the same hidden layer.
    inp = keras.Input((t, f), name="x")
    h = layers.Dense(6, activation="tanh", name="h")(inp)
    tg = layers.Dense(C, activation="softmax", name="tags")(h)
    sc = layers.Dense(1, name="score")(layers.GlobalAveragePooling1D(name="pool")(h))
    m = keras.Model(inp, [tg, sc])
    m.get_layer("h").set_weights([kh, np.zeros(6, "float32")])
    m.get_layer("tags").set_weights([kt, np.zeros(C, "float32")])
    m.get_layer("score").set_weights([ks, np.zeros(1, "float32")])
    m.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.5),
              loss=["sparse_categorical_crossentropy", "mse"], loss_weights=[1.0, 0.5],
              metrics={"tags": ["accuracy"], "score": ["mae"]},
              weighted_metrics={"tags": ["accuracy", M.SparseCategoricalCrossentropy(name="wce")],
                                "score": ["mae"]})
    return m


def record(name, weights, val_weights=None):
    m = two_outputs()
    kw = {}
    if val_weights is not None:
        kw["validation_data"] = (xv, [tags_v, score_v], val_weights)
    hist = m.fit(x, [tags, score], sample_weight=weights, epochs=3, batch_size=8, shuffle=False, verbose=0, **kw)
    ev = m.evaluate(x, [tags, score], sample_weight=weights, batch_size=8, verbose=0, return_dict=True)
    fresh = two_outputs()
    tob = fresh.test_on_batch(x[:8], [tags[:8], score[:8]], sample_weight=slice_weights(weights, 8),
                              return_dict=True)
    trb = fresh.train_on_batch(x[:8], [tags[:8], score[:8]], sample_weight=slice_weights(weights, 8),
                               return_dict=True)
    out["cases"].append({"name": name,
                         "history": {k: [float(v) for v in vs] for k, vs in hist.history.items()},
                         "weights_after": [lst(v) for v in m.get_weights()],
                         "evaluate": {k: float(v) for k, v in ev.items()},
                         "test_on_batch": {k: float(v) for k, v in tob.items()},
                         "train_on_batch": {k: float(v) for k, v in trb.items()},
                         "weights_after_train_on_batch": [lst(v) for v in fresh.get_weights()]})


def slice_weights(w, k):
    if isinstance(w, list):
        return [None if v is None else v[:k] for v in w]
    return w[:k]


# A weight per step for the tagger, one per sample for the regression head; validation weighted the same way.
record("per_output", [w_steps, w_samples], [wv_steps, wv_samples])
# Only the tagger weighted.
record("tags_only", [w_steps, None])
# One array of one weight per sample for both outputs. Keras 3.15 cannot multiply (N,) weights into the tagger's
# (N, T) loss values (squeeze_or_expand_to_same_rank leaves (8, 5) and (8,), which do not broadcast); Osprey puts a
# sample's weight on each of its steps, which is Keras's list of that weight repeated over the steps.
record("one_for_all", [np.repeat(w_one[:, None], t, axis=1), w_one])


def refused(name, f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 (what Keras raises is what the reference records)
        out["errors"].append({"name": name, "type": type(e).__name__, "message": str(e).split("\n")[0]})
        return
    raise SystemExit("Keras took " + name)


m = two_outputs()
refused("non_samplewise_single", lambda: m.fit(x, [tags, score], sample_weight=w_steps, verbose=0))
refused("one_list_item_for_two_outputs", lambda: m.fit(x, [tags, score], sample_weight=[w_steps], verbose=0))
refused("class_weight_two_outputs", lambda: m.fit(x, [tags, score], class_weight={0: 1.0, 1: 2.0}, verbose=0))

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_output_weights.json")
with open(path, "w") as fh:
    json.dump(out, fh)
print("wrote", path, len(out["cases"]), "cases", len(out["errors"]), "errors")
