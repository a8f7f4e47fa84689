# Keras 3's metrics with one value per class in fit's logs: F1Score/FBetaScore without an average and R2Score
# without an aggregation log an array (History keeps one per epoch, validation's "val_" ones too), evaluate's
# return_dict and train_on_batch/test_on_batch's return_dict hold it, CSVLogger writes it as '"[a, b, c]"' (quoted
# by the csv writer). Osprey keeps these in Logs::arrays / FitHistory::arrays.
# A single-output classifier (metrics and weighted_metrics, sample weights, validation data) and a two-output model
# (per-output metrics: "<output>_f1_score"); the classifier is also saved compiled (tests/data/keras_class_metrics.keras)
# so that loading it compiles its per-class metric and trains to the same numbers.
# Precision, Recall and the confusion counts at a list of thresholds give one value per threshold (a list of one: one
# value); that model is saved compiled too (tests/data/keras_threshold_metrics.keras).
# Regenerates tests/data/keras_class_metrics.json and the two .keras files, read by tests/keras/test_class_metrics.cpp.
# Run: python3 tests/keras/keras_class_metrics_reference.py (pip tensorflow-cpu keras; Keras 3.15.1 / TF 2.21).
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import keras
from keras import layers
from keras import metrics as M

here = os.path.dirname(os.path.abspath(__file__))
data_dir = os.path.join(here, "..", "data")
rng = np.random.default_rng(29)
out = {"keras": keras.__version__, "cases": {}}


def lst(a):
    return np.asarray(a, dtype="float64").tolist()


def pythonic(logs):
    return {k: lst(v) for k, v in logs.items()}


n, f, C = 24, 5, 3
x = rng.normal(size=(n, f)).astype("float32")
labels = rng.integers(0, C, n)
y = np.eye(C, dtype="float32")[labels]
w = rng.uniform(0.2, 2.0, (n,)).astype("float32")
xv = rng.normal(size=(12, f)).astype("float32")
yv = np.eye(C, dtype="float32")[rng.integers(0, C, 12)]
score = rng.normal(size=(n, 2)).astype("float32")
kh = rng.normal(scale=0.6, size=(f, 6)).astype("float32")
kc = rng.normal(scale=0.6, size=(6, C)).astype("float32")
kr = rng.normal(scale=0.6, size=(6, 2)).astype("float32")
out["data"] = {"x": lst(x), "y": lst(y), "w": lst(w), "x_val": lst(xv), "y_val": lst(yv), "score": lst(score),
               "kernels": [lst(kh), lst(kc), lst(kr)]}


def classifier():
    m = keras.Sequential([keras.Input((f,)), layers.Dense(6, activation="tanh", name="h"),
                          layers.Dense(C, activation="softmax", name="c")])
    m.get_layer("h").set_weights([kh, np.zeros(6, "float32")])
    m.get_layer("c").set_weights([kc, np.zeros(C, "float32")])
    m.compile(optimizer=keras.optimizers.SGD(0.5), loss="categorical_crossentropy",
              metrics=[M.F1Score(), M.FBetaScore(beta=2.0, threshold=0.4), "accuracy"],
              weighted_metrics=[M.R2Score(class_aggregation=None)])
    return m


m = classifier()
m.save(os.path.join(data_dir, "keras_class_metrics.keras"))
csv = "/tmp/keras_class_metrics.csv"
h = m.fit(x, y, sample_weight=w, validation_data=(xv, yv), epochs=3, batch_size=8, shuffle=False, verbose=0,
          callbacks=[keras.callbacks.CSVLogger(csv)])
out["cases"]["classifier"] = {
    "history": {k: [lst(v) for v in vs] for k, vs in h.history.items()},
    "csv": open(csv).read(),
    "evaluate": pythonic(m.evaluate(xv, yv, verbose=0, return_dict=True)),
    "evaluate_weighted": pythonic(m.evaluate(x, y, sample_weight=w, batch_size=5, verbose=0, return_dict=True)),
    "train_on_batch": pythonic(m.train_on_batch(x[:10], y[:10], return_dict=True)),
    "test_on_batch": pythonic(m.test_on_batch(xv, yv, return_dict=True)),
    "weights": [lst(v) for v in m.get_weights()],
}


def two_outputs():
    inp = keras.Input((f,), name="x")
    hid = layers.Dense(6, activation="tanh", name="h")(inp)
    c = layers.Dense(C, activation="softmax", name="cls")(hid)
    r = layers.Dense(2, name="reg")(hid)
    m = keras.Model(inp, {"cls": c, "reg": r})
    m.get_layer("h").set_weights([kh, np.zeros(6, "float32")])
    m.get_layer("cls").set_weights([kc, np.zeros(C, "float32")])
    m.get_layer("reg").set_weights([kr, np.zeros(2, "float32")])
    m.compile(optimizer=keras.optimizers.SGD(0.2), loss={"cls": "categorical_crossentropy", "reg": "mse"},
              metrics={"cls": [M.F1Score(average="macro"), M.F1Score(name="per_class")],
                       "reg": [M.R2Score(class_aggregation=None), "mae"]})
    return m


m2 = two_outputs()
h2 = m2.fit(x, {"cls": y, "reg": score}, epochs=2, batch_size=6, shuffle=False, verbose=0)
out["cases"]["two_outputs"] = {
    "history": {k: [lst(v) for v in vs] for k, vs in h2.history.items()},
    "evaluate": pythonic(m2.evaluate(x, {"cls": y, "reg": score}, batch_size=6, verbose=0, return_dict=True)),
    "weights": [lst(v) for v in m2.get_weights()],
}

# Confusion metrics at a list of thresholds: one value per threshold (a list of one is one value).
yb = (rng.uniform(size=(n, 1)) < 0.5).astype("float32")
kb = rng.normal(scale=0.8, size=(6, 1)).astype("float32")
out["data"]["y_binary"] = lst(yb)
out["data"]["kernel_binary"] = lst(kb)


def thresholded():
    m = keras.Sequential([keras.Input((f,)), layers.Dense(6, activation="tanh", name="h"),
                          layers.Dense(1, activation="sigmoid", name="b")])
    m.get_layer("h").set_weights([kh, np.zeros(6, "float32")])
    m.get_layer("b").set_weights([kb, np.zeros(1, "float32")])
    m.compile(optimizer=keras.optimizers.SGD(0.3), loss="binary_crossentropy",
              metrics=[M.Precision(thresholds=[0.3, 0.6]), M.Recall(thresholds=[0.2, 0.5, 0.8]),
                       M.TruePositives(thresholds=[0.4, 0.7]), M.FalseNegatives(thresholds=[0.5]),
                       M.TrueNegatives(thresholds=0.45), M.Precision(thresholds=[0.5], name="precision_one")])
    return m


m3 = thresholded()
m3.save(os.path.join(data_dir, "keras_threshold_metrics.keras"))
# Without validation_data: Keras 3.15.1's confusion counts at several thresholds return their variable itself as the
# result, so the epoch's logs (and History) show whatever the validation pass left in it (train = val values);
# Osprey logs each pass's own counts. The validation counts are checked through evaluate instead.
h3 = m3.fit(x, yb, epochs=2, batch_size=8, shuffle=False, verbose=0)
out["cases"]["thresholds"] = {
    "history": {k: [lst(v) for v in vs] for k, vs in h3.history.items()},
    "evaluate_val": pythonic(m3.evaluate(x[:10], yb[:10], verbose=0, return_dict=True)),
    "evaluate": pythonic(m3.evaluate(x, yb, batch_size=8, verbose=0, return_dict=True)),
    "configs": [mt.get_config() for mt in m3.metrics[1].metrics],
    "weights": [lst(v) for v in m3.get_weights()],
}

with open(os.path.join(data_dir, "keras_class_metrics.json"), "w") as fh:
    json.dump(out, fh)
print("wrote keras_class_metrics.json and .keras")
