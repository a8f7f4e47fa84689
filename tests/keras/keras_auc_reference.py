# Keras 3's AUC with every option: curves ROC/PR/PRGAIN, the three summation methods, thresholds of one's own
# (evenly spaced or not), multi_label with num_labels and label_weights, label_weights over one curve, from_logits,
# predictions outside [0, 1], predictions on the thresholds, soft labels, sample weights; and a fit whose logs hold
# a multi-label AUC; and the other confusion metrics' reading of labels that are neither 0 nor 1.
# Regenerates tests/data/keras_auc.json, read by tests/keras/test_weighted_metrics.cpp (the same "metrics" entries as
# keras_weighted_metrics.json).
# Run: python3 tests/keras/keras_auc_reference.py (pip tensorflow-cpu keras; Keras 3.15.1 / TF 2.21).
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import keras
from keras import metrics as M

rng = np.random.default_rng(47)
out = {"keras": keras.__version__, "metrics": [], "training": {}}


def lst(a):
    return np.asarray(a, dtype="float64").tolist()


def add_metric(name, metric, batches):
    """batches: (y_true, y_pred, sample_weight or None)."""
    for yt, yp, w in batches:
        metric.update_state(yt, yp, sample_weight=w)
    config = metric.get_config()
    if config.get("label_weights") is not None:  # a tensor in Keras's config
        config["label_weights"] = [float(v) for v in np.asarray(config["label_weights"])]
    if isinstance(config.get("thresholds"), (list, tuple)):
        config["thresholds"] = [float(v) for v in config["thresholds"]]
    out["metrics"].append({"name": name, "class": metric.__class__.__name__, "config": config, "sparse_labels": False,
                           "batches": [[lst(yt), lst(yp), None if w is None else lst(w)] for yt, yp, w in batches],
                           "result": float(metric.result())})


N = 24
h = N // 2
bin_t = rng.integers(0, 2, (N, 1)).astype("float32")
bin_p = rng.uniform(0, 1, (N, 1)).astype("float32")
multi_t = rng.integers(0, 2, (N, 4)).astype("float32")
multi_t[:, 3] = 0.0  # a label without positives (its ROC area is 0, as Keras's divide_no_nan)
multi_t[0, 3] = 1.0
multi_p = rng.uniform(0, 1, (N, 4)).astype("float32")
w1, w2 = rng.uniform(0.0, 2.0, h).astype("float32"), rng.uniform(0.0, 2.0, N - h).astype("float32")


def halves(yt, yp, weighted=True):
    return [(yt[:h], yp[:h], w1 if weighted else None), (yt[h:], yp[h:], w2 if weighted else None)]


add_metric("roc", M.AUC(), halves(bin_t, bin_p, False))
add_metric("roc_weighted", M.AUC(num_thresholds=37), halves(bin_t, bin_p))
add_metric("pr_interpolation", M.AUC(curve="PR"), halves(bin_t, bin_p))
for curve in ("ROC", "PR", "PRGAIN"):
    for method in ("interpolation", "minoring", "majoring"):
        if curve == "PR" and method == "interpolation":
            continue
        add_metric(f"{curve.lower()}_{method}", M.AUC(num_thresholds=11, curve=curve, summation_method=method),
                   halves(bin_t, bin_p))
add_metric("thresholds_uneven", M.AUC(thresholds=[0.9, 0.1, 0.35, 0.5, 0.62]), halves(bin_t, bin_p))
add_metric("thresholds_uneven_pr", M.AUC(thresholds=[0.3, 0.05, 0.8], curve="PR"), halves(bin_t, bin_p))
add_metric("thresholds_even", M.AUC(thresholds=[0.75, 0.25, 0.5]), halves(bin_t, bin_p))
add_metric("multi_label_roc", M.AUC(multi_label=True), halves(multi_t, multi_p, False))
add_metric("multi_label_pr_weighted", M.AUC(multi_label=True, curve="PR", num_thresholds=50), halves(multi_t, multi_p))
add_metric("multi_label_label_weights",
           M.AUC(multi_label=True, num_labels=4, label_weights=[1.0, 2.0, 0.0, 0.5]), halves(multi_t, multi_p))
add_metric("multi_label_thresholds_uneven", M.AUC(multi_label=True, thresholds=[0.2, 0.45, 0.7]),
           halves(multi_t, multi_p))
add_metric("one_curve_label_weights", M.AUC(label_weights=[0.5, 1.0, 2.0, 0.25]), halves(multi_t, multi_p))
add_metric("one_curve_label_weights_uneven", M.AUC(label_weights=[0.5, 1.0, 2.0, 0.25], thresholds=[0.3, 0.6]),
           halves(multi_t, multi_p))
logits = rng.normal(scale=2.0, size=(N, 1)).astype("float32")
add_metric("from_logits", M.AUC(from_logits=True, num_thresholds=25), halves(bin_t, logits))
outside = rng.uniform(-0.5, 1.5, (N, 1)).astype("float32")
add_metric("outside_unit_even", M.AUC(num_thresholds=9), halves(bin_t, outside))
add_metric("outside_unit_uneven", M.AUC(thresholds=[0.1, 0.4, 0.55]), halves(bin_t, outside))
on_thresholds = np.array([[i / 8.0] for i in rng.integers(0, 9, N)], "float32")
add_metric("on_the_thresholds", M.AUC(num_thresholds=9), halves(bin_t, on_thresholds))
add_metric("on_the_thresholds_pr", M.AUC(num_thresholds=9, curve="PR"), halves(bin_t, on_thresholds, False))
soft = rng.choice(np.array([0.0, 0.3, 1.0], "float32"), (N, 1))
add_metric("soft_labels", M.AUC(num_thresholds=13), halves(soft, bin_p))
add_metric("three_thresholds", M.AUC(num_thresholds=3), halves(bin_t, bin_p))
seq_t = rng.integers(0, 2, (N, 3, 2)).astype("float32")
seq_p = rng.uniform(0, 1, (N, 3, 2)).astype("float32")
add_metric("rank_3", M.AUC(num_thresholds=21), halves(seq_t, seq_p, False))  # Keras cannot weight rank 3 here

# The other confusion metrics read labels as Keras's cast(y_true, bool): any non-zero label is positive (their own
# generator, so that the cases above keep their data).
crng = np.random.default_rng(59)
odd_t = crng.choice(np.array([0.0, 0.3, 1.0, -1.0], "float32"), (N, 1))
odd_p = crng.uniform(0, 1, (N, 1)).astype("float32")
for name, metric in [("precision_soft_labels", M.Precision()), ("recall_soft_labels", M.Recall(thresholds=0.4)),
                     ("true_positives_soft_labels", M.TruePositives()),
                     ("false_positives_soft_labels", M.FalsePositives()),
                     ("sensitivity_at_specificity_soft_labels", M.SensitivityAtSpecificity(0.5))]:
    add_metric(name, metric, halves(odd_t, odd_p))

# ---- fit with a multi-label AUC in the logs ----
n, d = 32, 6
x = rng.normal(size=(n, d)).astype("float32")
y = (rng.uniform(size=(n, 3)) < 0.5).astype("float32")
kernel = rng.normal(scale=0.5, size=(d, 3)).astype("float32")
model = keras.Sequential([keras.Input((d,)), keras.layers.Dense(3, activation="sigmoid")])
model.layers[0].set_weights([kernel, np.zeros(3, "float32")])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="binary_crossentropy",
              metrics=[M.AUC(multi_label=True, name="ml_auc"), M.AUC(curve="PR", name="pr_auc", num_thresholds=40)])
hist = model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
out["training"] = {"x": lst(x), "y": lst(y), "kernel": lst(kernel),
                   "history": {k: [float(v) for v in vs] for k, vs in hist.history.items()}}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_auc.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path, len(out["metrics"]), "metric cases")
