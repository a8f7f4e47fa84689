# Keras 3's metrics with sample weights (update_state(y_true, y_pred, sample_weight)), Precision/Recall with top_k
# and class_id, and compile(weighted_metrics=...) in fit/evaluate with sample_weight, class_weight, validation_split
# and validation_data=(x, y, w): the logs' names and values.
# Regenerates tests/data/keras_weighted_metrics.json, read by tests/keras/test_weighted_metrics.cpp.
# Run: python3 tests/keras/keras_weighted_metrics_reference.py (pip tensorflow-cpu keras; Keras 3.15.1 / TF 2.21).
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import keras
from keras import metrics as M

rng = np.random.default_rng(31)
out = {"keras": keras.__version__, "metrics": [], "training": []}


def lst(a):
    return np.asarray(a, dtype="float64").tolist()


def probs(shape):
    p = rng.uniform(0.05, 1.0, shape).astype("float32")
    return p / p.sum(-1, keepdims=True)


def weights(n):
    w = rng.uniform(0.0, 2.0, n).astype("float32")
    w[0] = 0.0  # a sample that does not count
    return w


def add_metric(name, metric, batches, sparse_labels=False):
    """batches: (y_true, y_pred, sample_weight or None)."""
    for yt, yp, w in batches:
        metric.update_state(yt, yp, sample_weight=w)
    out["metrics"].append({"name": name, "class": metric.__class__.__name__, "config": metric.get_config(),
                           "sparse_labels": sparse_labels,
                           "batches": [[lst(yt), lst(yp), None if w is None else lst(w)] for yt, yp, w in batches],
                           "result": float(metric.result())})


N = 16
bin_t = rng.integers(0, 2, (N, 1)).astype("float32")
bin_p = rng.uniform(0, 1, (N, 1)).astype("float32")
cat_t = np.eye(4, dtype="float32")[rng.integers(0, 4, N)]
cat_p = probs((N, 4))
sp_t = rng.integers(0, 4, (N,)).astype("float32")
multi_t = rng.integers(0, 2, (N, 4)).astype("float32")
multi_p = rng.uniform(0, 1, (N, 4)).astype("float32")
reg_t = rng.normal(size=(N, 3)).astype("float32")
reg_p = rng.normal(size=(N, 3)).astype("float32")
tok_t = rng.integers(0, 5, (N, 3)).astype("float32")
tok_p = probs((N, 3, 5))
w1, w2 = weights(N // 2), weights(N - N // 2)
h = N // 2


def halves(yt, yp):
    return [(yt[:h], yp[:h], w1), (yt[h:], yp[h:], w2)]


add_metric("binary_accuracy", M.BinaryAccuracy(), halves(bin_t, bin_p))
add_metric("categorical_accuracy", M.CategoricalAccuracy(), halves(cat_t, cat_p))
add_metric("sparse_categorical_accuracy", M.SparseCategoricalAccuracy(), halves(sp_t, cat_p), True)
add_metric("sparse_categorical_accuracy_tokens", M.SparseCategoricalAccuracy(), halves(tok_t, tok_p), True)
add_metric("mae", M.MeanAbsoluteError(), halves(reg_t, reg_p))
add_metric("mse", M.MeanSquaredError(), halves(reg_t, reg_p))
add_metric("rmse", M.RootMeanSquaredError(), halves(reg_t, reg_p))
add_metric("top_2", M.TopKCategoricalAccuracy(k=2), halves(cat_t, cat_p))
add_metric("sparse_top_2", M.SparseTopKCategoricalAccuracy(k=2), halves(sp_t, cat_p), True)
add_metric("precision", M.Precision(), halves(bin_t, bin_p))
add_metric("recall_0.3", M.Recall(thresholds=0.3), halves(bin_t, bin_p))
add_metric("auc", M.AUC(num_thresholds=20), halves(bin_t, bin_p))
add_metric("auc_pr", M.AUC(curve="PR"), halves(bin_t, bin_p))
add_metric("true_positives", M.TruePositives(), halves(multi_t, multi_p))
add_metric("false_negatives", M.FalseNegatives(thresholds=0.7), halves(multi_t, multi_p))
add_metric("precision_class_1", M.Precision(class_id=1), halves(multi_t, multi_p))
add_metric("recall_class_2_unweighted", M.Recall(class_id=2), [(multi_t, multi_p, None)])
add_metric("precision_top_2", M.Precision(top_k=2), halves(multi_t, multi_p))
add_metric("recall_top_1_class_3", M.Recall(top_k=1, class_id=3), halves(multi_t, multi_p))
add_metric("precision_top_2_unweighted", M.Precision(top_k=2), [(multi_t, multi_p, None)])
add_metric("precision_top_2_threshold", M.Precision(thresholds=0.4, top_k=2), halves(multi_t, multi_p))
add_metric("precision_at_recall_class_0", M.PrecisionAtRecall(0.5, class_id=0), halves(multi_t, multi_p))
add_metric("sensitivity_at_specificity", M.SensitivityAtSpecificity(0.4), halves(bin_t, bin_p))
add_metric("f1_macro", M.F1Score(average="macro", threshold=0.5), halves(multi_t, multi_p))
add_metric("f1_weighted", M.F1Score(average="weighted"), halves(cat_t, cat_p))
add_metric("fbeta_micro", M.FBetaScore(average="micro", beta=2.0, threshold=0.4), halves(multi_t, multi_p))
add_metric("r2", M.R2Score(), halves(reg_t, reg_p))
# The IoUs keep integer counts (dtype int64): Keras casts the weights to integers (whole weights here, and one case
# with fractions, which Keras truncates).
iw1, iw2 = rng.integers(0, 4, h).astype("float32"), rng.integers(0, 4, N - h).astype("float32")
sp_pred = np.argmax(cat_p, -1).astype("float32")
add_metric("mean_iou", M.MeanIoU(num_classes=4), [(sp_t[:h], sp_pred[:h], iw1), (sp_t[h:], sp_pred[h:], iw2)], True)
add_metric("mean_iou_fractional_weights", M.MeanIoU(num_classes=4), [(sp_t, sp_pred, 3 * np.concatenate([w1, w2]))],
           True)
add_metric("binary_iou", M.BinaryIoU(), [(bin_t[:h], bin_p[:h], iw1), (bin_t[h:], bin_p[h:], iw2)])
add_metric("poisson", M.Poisson(), halves(np.abs(reg_t), np.abs(reg_p)))
add_metric("categorical_crossentropy", M.CategoricalCrossentropy(), halves(cat_t, cat_p))
add_metric("sparse_categorical_crossentropy", M.SparseCategoricalCrossentropy(), halves(sp_t, cat_p), True)
add_metric("hinge", M.Hinge(), halves(bin_t, bin_p))
add_metric("cosine_similarity", M.CosineSimilarity(), halves(reg_t, reg_p))
add_metric("binary_accuracy_scalar_weight", M.BinaryAccuracy(), [(bin_t, bin_p, np.float32(0.5))])


# ---- training: a softmax classifier with fixed initial weights ----
n, d, k = 32, 5, 3
x = rng.normal(size=(n, d)).astype("float32")
y = rng.integers(0, k, (n,)).astype("float32")
sw = rng.uniform(0.1, 2.0, n).astype("float32")
x_val = rng.normal(size=(12, d)).astype("float32")
y_val = rng.integers(0, k, (12,)).astype("float32")
w_val = rng.uniform(0.1, 2.0, 12).astype("float32")
k1 = rng.normal(scale=0.5, size=(d, 8)).astype("float32")
k2 = rng.normal(scale=0.5, size=(8, k)).astype("float32")
out["data"] = {"x": lst(x), "y": lst(y), "sample_weight": lst(sw), "x_val": lst(x_val), "y_val": lst(y_val),
               "w_val": lst(w_val), "kernels": [lst(k1), lst(k2)]}


def model():
    m = keras.Sequential([keras.Input((d,)), keras.layers.Dense(8, activation="relu"),
                          keras.layers.Dense(k, activation="softmax")])
    m.layers[0].set_weights([k1, np.zeros(8, "float32")])
    m.layers[1].set_weights([k2, np.zeros(k, "float32")])
    return m


def compiled():
    m = model()
    m.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
              metrics=["accuracy", M.SparseTopKCategoricalAccuracy(k=2, name="top2")],
              weighted_metrics=["accuracy", M.SparseCategoricalCrossentropy(name="wce"),
                                M.SparseTopKCategoricalAccuracy(k=2, name="top2")])
    return m


def train_case(name, fit_kwargs, evaluate_kwargs):
    m = compiled()
    hist = m.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0, **fit_kwargs)
    ev = m.evaluate(x_val, y_val, batch_size=8, verbose=0, return_dict=True, **evaluate_kwargs)
    out["training"].append({"name": name, "fit": list(fit_kwargs), "evaluate_weighted": bool(evaluate_kwargs),
                            "history": {k: [float(v) for v in vs] for k, vs in hist.history.items()},
                            "history_keys": list(hist.history.keys()),
                            "evaluate": {k: float(v) for k, v in ev.items()}, "evaluate_keys": list(ev.keys())})


train_case("sample_weight", {"sample_weight": sw}, {"sample_weight": w_val})
train_case("sample_weight_validation_split", {"sample_weight": sw, "validation_split": 0.25}, {})
train_case("class_weight_validation_data", {"class_weight": {0: 1.0, 1: 2.5, 2: 0.5},
                                            "validation_data": (x_val, y_val, w_val)}, {})
train_case("unweighted", {}, {})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_weighted_metrics.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path, len(out["metrics"]), "metrics", len(out["training"]), "training cases")
