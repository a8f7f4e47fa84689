# Keras 3's losses and metrics beyond the first ones (poisson, msle, cosine similarity, the hinges, the focal
# crossentropies, dice, tversky, generalized crossentropy; the metrics wrapping them, confusion counts, F-scores,
# R2, IoUs, the sensitivity/specificity family): values, gradients, configs.
# Regenerates tests/data/keras_losses_metrics.json, read by tests/keras/test_losses_metrics.cpp.
# Run: python3 tests/keras/keras_losses_metrics_reference.py (pip tensorflow-cpu keras; Keras 3.15.1 / TF 2.21).
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
import keras
from keras import losses as L, metrics as M

rng = np.random.default_rng(7)
out = {"keras": keras.__version__, "losses": [], "metrics": []}


def lst(a):  # NaN as null (JSON has no NaN)
    a = np.asarray(a, dtype="float64")
    return None if a.ndim == 0 and np.isnan(a) else np.where(np.isnan(a), None, a).tolist() if a.ndim else float(a)


def probs(shape, gen=None):
    p = (gen or rng).uniform(0.05, 1.0, shape).astype("float32")
    return p / p.sum(-1, keepdims=True)


def onehot(n, k):
    return np.eye(k, dtype="float32")[rng.integers(0, k, n)]


def add_loss(name, loss, yt, yp, w=None):
    yp_var = tf.Variable(yp)
    with tf.GradientTape() as tape:
        value = loss(yt, yp_var)
    grad = tape.gradient(value, yp_var)
    # Keras 3.15's CosineSimilarity leaves its axis out of its config (a reloaded one computes along -1): the
    # function's arguments go in too, so that the case says what was computed.
    cfg = {**loss._fn_kwargs, **loss.get_config()}
    none = loss.__class__(**{**cfg, "reduction": None})(yt, yp)
    case = {"name": name, "class": loss.__class__.__name__, "config": cfg, "y_true": lst(yt), "y_pred": lst(yp),
            "loss": float(value), "grad": lst(grad), "per_sample": lst(none)}
    if w is not None:
        case["sample_weight"] = lst(w)
        case["weighted"] = float(loss(yt, yp, sample_weight=w))
    # One scalar weight for every sample, per reduction (mean_with_sample_weight divides by the scalar itself).
    case["scalar_weighted"] = {red: float(loss.__class__(**{**cfg, "reduction": red})(yt, yp, sample_weight=2.5))
                               for red in ("sum_over_batch_size", "sum", "mean_with_sample_weight")}
    out["losses"].append(case)


bin_t = rng.integers(0, 2, (6, 3)).astype("float32")
bin_p = rng.uniform(0.02, 0.98, (6, 3)).astype("float32")
reg_t = rng.uniform(0.0, 3.0, (5, 4)).astype("float32")
reg_p = rng.uniform(0.1, 3.0, (5, 4)).astype("float32")
w6 = rng.uniform(0.0, 2.0, 6).astype("float32")
w5 = rng.uniform(0.0, 2.0, 5).astype("float32")
cat_t, cat_p = onehot(5, 4), probs((5, 4))
logits = rng.normal(0, 2, (6, 3)).astype("float32")
seg_t = rng.integers(0, 2, (3, 4, 4, 2)).astype("float32")
seg_p = rng.uniform(0, 1, (3, 4, 4, 2)).astype("float32")

add_loss("poisson", L.Poisson(), reg_t, reg_p, w5)
add_loss("msle", L.MeanSquaredLogarithmicError(), reg_t, reg_p - 0.5, w5)  # some predictions below 0: clipped
add_loss("cosine_similarity", L.CosineSimilarity(), reg_t - 1.5, reg_p - 1.0, w5)
zero_rows = rng.normal(0, 1, (4, 3, 5)).astype("float32"); zero_rows[1, :, 2] = 0  # a zero vector: similarity 0
add_loss("cosine_similarity_axis1_zero_vector", L.CosineSimilarity(axis=1), zero_rows, rng.normal(0, 1, (4, 3, 5)).astype("float32"))
add_loss("squared_hinge_01", L.SquaredHinge(), bin_t, bin_p * 2 - 1, w6)
add_loss("squared_hinge_pm1", L.SquaredHinge(), bin_t * 2 - 1, bin_p * 2 - 1)
add_loss("categorical_hinge", L.CategoricalHinge(), cat_t, rng.normal(0, 1, (5, 4)).astype("float32"), w5)
add_loss("binary_focal", L.BinaryFocalCrossentropy(), bin_t, bin_p, w6)
add_loss("binary_focal_balanced_smoothed", L.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.3, gamma=1.5,
                                                                      label_smoothing=0.1), bin_t, bin_p)
add_loss("binary_focal_logits", L.BinaryFocalCrossentropy(from_logits=True, gamma=3.0), bin_t, logits)
add_loss("categorical_focal", L.CategoricalFocalCrossentropy(), cat_t, cat_p, w5)
add_loss("categorical_focal_logits_smoothed", L.CategoricalFocalCrossentropy(alpha=0.5, gamma=1.0, from_logits=True,
                                                                            label_smoothing=0.2),
         cat_t, rng.normal(0, 2, (5, 4)).astype("float32"))
add_loss("dice", L.Dice(), seg_t, seg_p, np.array([1.0, 0.5, 2.0], "float32"))
add_loss("dice_axis", L.Dice(axis=(1, 2, 3)), seg_t, seg_p, np.array([1.0, 0.5, 2.0], "float32"))
add_loss("tversky", L.Tversky(alpha=0.3, beta=0.7), seg_t, seg_p)
add_loss("tversky_axis", L.Tversky(alpha=0.7, beta=0.3, axis=(1, 2)), seg_t, seg_p)
sp5 = rng.integers(0, 4, 5)
add_loss("generalized_ce", L.CategoricalGeneralizedCrossEntropy(), sp5, cat_p, w5)
# (N, 1) labels: Keras 3.15 broadcasts their one-hot (N, 1, C) against every row, an (N, N) result; Osprey reads
# them as (N,) as Keras documents (tests/keras/test_losses_metrics.cpp checks that), so the case gives (N,) labels.
add_loss("generalized_ce_q", L.CategoricalGeneralizedCrossEntropy(q=0.8), sp5, cat_p)
# A loss over the last axis of sequence predictions (N, T, d): Keras's values are (N, T), its "sum" counts each.
seq_rng = np.random.default_rng(23)  # its own draws: the cases after these keep their inputs
add_loss("mse_sequence", L.MeanSquaredError(), seq_rng.normal(size=(2, 3, 4)).astype("float32"),
         seq_rng.normal(size=(2, 3, 4)).astype("float32"))
# ignore_class (a segmentation map's void label): ignored labels give no loss and no gradient, and the mean is over
# the others only; Keras's "sum" and "mean_with_sample_weight" reductions too (the mask weighs them as apply_mask).
ign_rng = np.random.default_rng(17)  # its own draws: the cases after these keep their inputs
ign_t = np.array([2, -1, 0, 3, -1, 1], "int32")
add_loss("scce_ignore_class", L.SparseCategoricalCrossentropy(ignore_class=-1), ign_t, probs((6, 4), ign_rng))
seg_labels = ign_rng.integers(0, 3, (3, 4, 4)).astype("int32")
seg_labels[0, :2] = 255
seg_labels[1] = 255  # a sample with every label ignored
seg_logits = ign_rng.normal(0, 2, (3, 4, 4, 3)).astype("float32")
tok_labels = np.array([[1, 0, 2, -1, -1], [-1, 2, 2, 1, 0], [0, -1, 1, -1, 2]], "int32")
tok_probs = probs((3, 5, 3), ign_rng)
w3 = np.array([1.0, 0.5, 2.0], "float32")
# One weight per sample on each of its labels: Keras 3.15 takes these as weights of the labels' shape (its mask and
# a (N,) weight do not broadcast), Osprey as (N,) weights.
add_loss("scce_ignore_class_segmentation_logits", L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=255),
         seg_labels, seg_logits)
add_loss("scce_ignore_class_tokens", L.SparseCategoricalCrossentropy(ignore_class=-1), tok_labels, tok_probs)
for case, yt, yp, w, kw in (("scce_ignore_class", ign_t, None, w6, {}),
                            ("scce_ignore_class_segmentation_logits", seg_labels, seg_logits, w3, {"from_logits": True}),
                            ("scce_ignore_class_tokens", tok_labels, tok_probs, w3, {})):
    c = next(x for x in out["losses"] if x["name"] == case)
    del c["config"]["axis"]  # a function argument only: SparseCategoricalCrossentropy's get_config has no axis
    yp = np.asarray(c["y_pred"], "float32")
    per_label = np.broadcast_to(w.reshape((-1,) + (1,) * (yt.ndim - 1)), yt.shape).astype("float32")
    c["sample_weight"] = lst(w)
    for red in ("sum_over_batch_size", "sum", "mean_with_sample_weight"):
        f = L.SparseCategoricalCrossentropy(ignore_class=c["config"]["ignore_class"], reduction=red, **kw)
        c[red] = float(f(yt, yp))
        c[red + "_weighted"] = float(f(yt, yp, sample_weight=per_label))
    c["weighted"] = c["sum_over_batch_size_weighted"]

def add_metric(name, metric, batches):
    for yt, yp in batches:
        metric.update_state(yt, yp)
    r = metric.result()
    out["metrics"].append({"name": name, "class": metric.__class__.__name__, "config": metric.get_config(),
                           "batches": [[lst(yt), lst(yp)] for yt, yp in batches], "result": lst(r)})


b1 = [(bin_t[:4], bin_p[:4]), (bin_t[4:], bin_p[4:])]
r1 = [(reg_t[:3], reg_p[:3]), (reg_t[3:], reg_p[3:])]
c1 = [(cat_t[:3], cat_p[:3]), (cat_t[3:], cat_p[3:])]
add_metric("poisson", M.Poisson(), r1)
add_metric("kl_divergence", M.KLDivergence(), c1)
add_metric("binary_crossentropy", M.BinaryCrossentropy(), b1)
add_metric("binary_crossentropy_logits_smoothed", M.BinaryCrossentropy(from_logits=True, label_smoothing=0.1),
           [(bin_t[:4], logits[:4]), (bin_t[4:], logits[4:])])
add_metric("categorical_crossentropy", M.CategoricalCrossentropy(), c1)
add_metric("categorical_crossentropy_logits", M.CategoricalCrossentropy(from_logits=True, label_smoothing=0.2),
           [(cat_t, rng.normal(0, 2, (5, 4)).astype("float32"))])
add_metric("sparse_categorical_crossentropy", M.SparseCategoricalCrossentropy(), [(sp5, cat_p)])
add_metric("sparse_categorical_crossentropy_ignore_class", M.SparseCategoricalCrossentropy(ignore_class=-1),
           [(ign_t[:4], probs((4, 4), ign_rng)), (ign_t[4:], probs((2, 4), ign_rng))])
add_metric("mape", M.MeanAbsolutePercentageError(), r1)
add_metric("msle", M.MeanSquaredLogarithmicError(), r1)
add_metric("cosine_similarity", M.CosineSimilarity(), [(reg_t - 1.5, reg_p - 1.0)])
add_metric("logcosh", M.LogCoshError(), r1)
add_metric("hinge", M.Hinge(), b1)
add_metric("squared_hinge", M.SquaredHinge(), b1)
add_metric("categorical_hinge", M.CategoricalHinge(), c1)
add_metric("accuracy_exact", M.Accuracy(), [(np.array([[1], [2], [3], [4]], "float32"), np.array([[0], [2], [3], [4]], "float32")),
                                            (np.array([[1], [2]], "float32"), np.array([[1], [0]], "float32"))])
for cls in (M.TruePositives, M.FalsePositives, M.TrueNegatives, M.FalseNegatives):
    add_metric(cls.__name__, cls(), b1)
    add_metric(cls.__name__ + "_0.3", cls(thresholds=0.3), b1)
multi_t = np.eye(3, dtype="float32")[rng.integers(0, 3, 8)]
multi_p = rng.uniform(0, 1, (8, 3)).astype("float32")
m1 = [(multi_t[:5], multi_p[:5]), (multi_t[5:], multi_p[5:])]
for avg in ("micro", "macro", "weighted"):
    add_metric("f1_" + avg, M.F1Score(average=avg), m1)
    add_metric("fbeta2_" + avg + "_thr", M.FBetaScore(average=avg, beta=2.0, threshold=0.4), m1)
add_metric("f1_per_class", M.F1Score(), m1)
add_metric("r2", M.R2Score(), r1)
add_metric("r2_variance_weighted", M.R2Score(class_aggregation="variance_weighted_average"), r1)
add_metric("r2_regressors", M.R2Score(num_regressors=1), r1)
add_metric("r2_single_output", M.R2Score(), [(reg_t[:, :1], reg_p[:, :1])])
iou_t = rng.integers(0, 3, 12).astype("float32")
iou_p = rng.integers(0, 3, 12).astype("float32")
add_metric("mean_iou", M.MeanIoU(num_classes=3), [(iou_t[:7], iou_p[:7]), (iou_t[7:], iou_p[7:])])
add_metric("iou", M.IoU(num_classes=3, target_class_ids=[0, 2]), [(iou_t, iou_p)])
add_metric("binary_iou", M.BinaryIoU(), b1)
add_metric("binary_iou_1", M.BinaryIoU(target_class_ids=[1], threshold=0.3), b1)
add_metric("one_hot_iou", M.OneHotIoU(num_classes=3, target_class_ids=[1]), [(multi_t, multi_p)])
add_metric("one_hot_mean_iou", M.OneHotMeanIoU(num_classes=3), [(multi_t, multi_p)])
add_metric("mean_iou_sparse_pred", M.MeanIoU(num_classes=3, sparse_y_pred=False), [(iou_t.reshape(4, 3)[:, :1].ravel(), multi_p[:4])])
add_metric("precision_at_recall", M.PrecisionAtRecall(0.6), b1)
add_metric("recall_at_precision", M.RecallAtPrecision(0.6), b1)
add_metric("sensitivity_at_specificity", M.SensitivityAtSpecificity(0.5), b1)
add_metric("specificity_at_sensitivity", M.SpecificityAtSensitivity(0.5, num_thresholds=50), b1)
add_metric("pearson", M.PearsonCorrelation(), r1)
add_metric("concordance", M.ConcordanceCorrelation(), r1)

# Metrics named by strings in compile: what each string gives and the value on one batch.
strings = ["binary_crossentropy", "bce", "poisson", "kl_divergence", "hinge", "squared_hinge", "categorical_hinge",
           "huber", "log_cosh", "logcosh", "mean_absolute_percentage_error", "msle", "mean_squared_logarithmic_error",
           "cosine_similarity", "binary_focal_crossentropy", "true_positives", "f1_score", "r2_score",
           "log_cosh_error", "categorical_crossentropy", "categorical_focal_crossentropy", "pearson_correlation"]
out["metric_strings"] = {}
for s in strings:
    try:
        m = M.get(s)
    except Exception as e:  # noqa
        out["metric_strings"][s] = {"error": str(e)}
        continue
    if not isinstance(m, M.Metric):
        m = M.MeanMetricWrapper(m)
        kind = "function"
    else:
        kind = m.__class__.__name__
    m.update_state(bin_t, bin_p)
    out["metric_strings"][s] = {"kind": kind, "result": lst(m.result())}
out["metric_strings_batch"] = [lst(bin_t), lst(bin_p)]

# fit with a "sum" loss over sequence outputs (N, T, d): each batch's loss sums all N·T of Keras's values.
fit_rng = np.random.default_rng(31)
fx = fit_rng.normal(size=(12, 3, 4)).astype("float32")
fy = fit_rng.normal(size=(12, 3, 2)).astype("float32")
fk = fit_rng.normal(scale=0.5, size=(4, 2)).astype("float32")
seq_model = keras.Sequential([keras.Input((3, 4)), keras.layers.Dense(2)])
seq_model.layers[0].set_weights([fk, np.zeros(2, "float32")])
seq_model.compile(optimizer=keras.optimizers.SGD(0.01), loss=L.MeanSquaredError(reduction="sum"))
fit_h = seq_model.fit(fx, fy, epochs=2, batch_size=5, shuffle=False, verbose=0)
out["fit_sum_sequence"] = {"x": lst(fx), "y": lst(fy), "kernel": lst(fk), "loss": fit_h.history["loss"],
                           "weights": [lst(v) for v in seq_model.get_weights()]}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_losses_metrics.json")
with open(path, "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"))
    f.write("\n")
print("wrote", path, len(out["losses"]), "losses", len(out["metrics"]), "metrics")
