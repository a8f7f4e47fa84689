# Keras 3's sample weights of more than one value per sample: a weight per step of a sequence (N, T) or per pixel
# of an image (N, H, W), multiplied into the loss's values at those positions (losses.loss.reduce_weighted_values)
# and into the metrics' (reduce_to_samplewise_values, the confusion metrics' broadcast). Losses with each reduction
# and their gradients, metrics, and fits of a per-step classifier, a masked recurrent tagger and a per-pixel
# classifier with such weights (history, weights after, evaluate).
# Regenerates tests/data/keras_position_weights.json, read by tests/keras/test_position_weights.cpp.
# Run: python3 tests/keras/keras_position_weights_reference.py (pip tensorflow-cpu keras; Keras 3.15.1 / TF 2.21).
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
import keras
from keras import losses as L
from keras import metrics as M

rng = np.random.default_rng(61)
out = {"keras": keras.__version__, "losses": [], "metrics": [], "training": []}


def lst(a):
    return np.asarray(a, dtype="float64").tolist()


def probs(shape):
    p = rng.uniform(0.05, 1.0, shape).astype("float32")
    return p / p.sum(-1, keepdims=True)


def add_loss(name, loss, y, p, w, sparse=False):
    v = tf.Variable(p)
    with tf.GradientTape() as tape:
        value = loss(y, v, sample_weight=w)
    grad = tape.gradient(value, v)
    out["losses"].append({"name": name, "class": loss.__class__.__name__, "config": loss.get_config(),
                          "sparse_labels": sparse, "y": lst(y), "y_pred": lst(p), "sample_weight": lst(w),
                          "loss": lst(value), "grad": lst(grad)})


N, T, C, D = 4, 5, 3, 2
seq_t = rng.integers(0, C, (N, T)).astype("int32")
seq_p = probs((N, T, C))
w_nt = rng.uniform(0.0, 2.0, (N, T)).astype("float32")
w_nt[0, 1] = 0.0
for r in ["sum_over_batch_size", "sum", "mean_with_sample_weight", "none"]:
    add_loss("sparse_ce_steps_" + r, L.SparseCategoricalCrossentropy(reduction=r), seq_t, seq_p, w_nt, True)
logits = rng.normal(size=(N, T, C)).astype("float32")
add_loss("sparse_ce_logits_ignore_class_steps", L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
         seq_t, logits, w_nt, True)
add_loss("sparse_ce_ignore_class_steps_mean_with_sample_weight",
         L.SparseCategoricalCrossentropy(ignore_class=1, reduction="mean_with_sample_weight"), seq_t, seq_p, w_nt,
         True)
reg_t = rng.normal(size=(N, T, D)).astype("float32")
reg_p = rng.normal(size=(N, T, D)).astype("float32")
add_loss("mse_steps", L.MeanSquaredError(), reg_t, reg_p, w_nt)
add_loss("huber_steps_mean_with_sample_weight", L.Huber(reduction="mean_with_sample_weight"), reg_t, reg_p, w_nt)
bin_t = rng.integers(0, 2, (N, T, 1)).astype("float32")
bin_p = rng.uniform(0.05, 0.95, (N, T, 1)).astype("float32")
add_loss("binary_ce_steps_weights_n_t_1", L.BinaryCrossentropy(), bin_t, bin_p, w_nt[..., None])
H, W = 3, 4
seg_t = np.eye(C, dtype="float32")[rng.integers(0, C, (N, H, W))]
seg_p = probs((N, H, W, C))
w_px = rng.uniform(0.0, 3.0, (N, H, W)).astype("float32")
add_loss("categorical_ce_pixels", L.CategoricalCrossentropy(), seg_t, seg_p, w_px)
add_loss("categorical_ce_pixels_none", L.CategoricalCrossentropy(reduction="none"), seg_t, seg_p, w_px)


def add_metric(name, metric, batches, sparse=False):
    for yt, yp, w in batches:
        metric.update_state(yt, yp, sample_weight=w)
    out["metrics"].append({"name": name, "class": metric.__class__.__name__, "config": metric.get_config(),
                           "sparse_labels": sparse,
                           "batches": [[lst(yt), lst(yp), lst(w)] for yt, yp, w in batches],
                           "result": float(metric.result())})


w2 = rng.uniform(0.0, 2.0, (N, T)).astype("float32")
seq_t2 = rng.integers(0, C, (N, T)).astype("int32")
seq_p2 = probs((N, T, C))
add_metric("sparse_categorical_accuracy_steps", M.SparseCategoricalAccuracy(),
           [(seq_t, seq_p, w_nt), (seq_t2, seq_p2, w2)], True)
add_metric("sparse_categorical_crossentropy_steps", M.SparseCategoricalCrossentropy(),
           [(seq_t, seq_p, w_nt), (seq_t2, seq_p2, w2)], True)
add_metric("mse_steps", M.MeanSquaredError(), [(reg_t, reg_p, w_nt)])
add_metric("mae_steps", M.MeanAbsoluteError(), [(reg_t, reg_p, w_nt)])
add_metric("binary_accuracy_steps_rank_2", M.BinaryAccuracy(), [(bin_t[..., 0], bin_p[..., 0], w_nt)])
add_metric("precision_steps", M.Precision(), [(bin_t, bin_p, w_nt)])
add_metric("recall_steps_weights_n_t_1", M.Recall(thresholds=0.4), [(bin_t, bin_p, w_nt[..., None])])
add_metric("auc_steps", M.AUC(num_thresholds=25), [(bin_t, bin_p, w_nt)])
add_metric("categorical_accuracy_pixels", M.CategoricalAccuracy(), [(seg_t, seg_p, w_px)])
iw = rng.integers(0, 3, (N, T)).astype("float32")
add_metric("mean_iou_steps", M.MeanIoU(num_classes=C),
           [(seq_t, np.argmax(seq_p, -1).astype("int32"), iw)], True)

# ---- training ----
n, t, f = 16, 6, 4


def record(name, model, x, y, w, data, batch_size=8):
    hist = model.fit(x, y, sample_weight=w, epochs=3, batch_size=batch_size, shuffle=False, verbose=0)
    ev = model.evaluate(x, y, sample_weight=w, batch_size=batch_size, verbose=0, return_dict=True)
    out["training"].append({"name": name, "data": data,
                            "history": {k: [float(v) for v in vs] for k, vs in hist.history.items()},
                            "weights_after": [lst(v) for v in model.get_weights()],
                            "evaluate": {k: float(v) for k, v in ev.items()}})


# A per-step classifier over (n, t, f): Dense layers act on each step.
x = rng.normal(size=(n, t, f)).astype("float32")
y = rng.integers(0, C, (n, t)).astype("int32")
sw = rng.uniform(0.0, 2.0, (n, t)).astype("float32")
sw[:, -1] = 0.0  # the last step never counts
k1 = rng.normal(scale=0.5, size=(f, 8)).astype("float32")
k2 = rng.normal(scale=0.5, size=(8, C)).astype("float32")


def per_step_dense():
    m = keras.Sequential([keras.Input((t, f)), keras.layers.Dense(8, activation="tanh"),
                          keras.layers.Dense(C, activation="softmax")])
    m.layers[0].set_weights([k1, np.zeros(8, "float32")])
    m.layers[1].set_weights([k2, np.zeros(C, "float32")])
    m.compile(optimizer=keras.optimizers.SGD(0.2, momentum=0.5), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"], weighted_metrics=["accuracy", M.SparseCategoricalCrossentropy(name="wce")])
    return m


m = per_step_dense()
record("per_step_dense", m, x, y, sw,
       {"x": lst(x), "y": lst(y), "sample_weight": lst(sw), "kernels": [lst(k1), lst(k2)]})

# The same model over batches of 32 (Osprey splits such a step in halves across its two threads).
rng2 = np.random.default_rng(62)
x32 = rng2.normal(size=(64, t, f)).astype("float32")
y32 = rng2.integers(0, C, (64, t)).astype("int32")
sw32 = rng2.uniform(0.0, 2.0, (64, t)).astype("float32")
m = per_step_dense()
record("per_step_dense_batch_32", m, x32, y32, sw32,
       {"x": lst(x32), "y": lst(y32), "sample_weight": lst(sw32), "kernels": [lst(k1), lst(k2)]}, batch_size=32)

# A masked tagger: Embedding(mask_zero) then SimpleRNN over padded sequences, a weight per step.
vocab = 7
tokens = rng.integers(1, vocab, (n, t)).astype("int32")
lengths = rng.integers(2, t + 1, n)
for i, length in enumerate(lengths):
    tokens[i, length:] = 0
tags = rng.integers(0, 2, (n, t)).astype("int32")
tw = rng.uniform(0.2, 2.0, (n, t)).astype("float32")
emb = rng.normal(scale=0.5, size=(vocab, 3)).astype("float32")
rk = rng.normal(scale=0.5, size=(3, 5)).astype("float32")
rr = rng.normal(scale=0.3, size=(5, 5)).astype("float32")
dk = rng.normal(scale=0.5, size=(5, 2)).astype("float32")
m = keras.Sequential([keras.Input((t,), dtype="int32"), keras.layers.Embedding(vocab, 3, mask_zero=True),
                      keras.layers.SimpleRNN(5, return_sequences=True),
                      keras.layers.Dense(2, activation="softmax")])
m.layers[0].set_weights([emb])
m.layers[1].set_weights([rk, rr, np.zeros(5, "float32")])
m.layers[2].set_weights([dk, np.zeros(2, "float32")])
# (SGD: with Adam, Keras's TensorFlow backend updates an Embedding's repeated ids per occurrence, IndexedSlices.)
m.compile(optimizer=keras.optimizers.SGD(0.5, momentum=0.5), loss="sparse_categorical_crossentropy",
          weighted_metrics=["accuracy"])
record("masked_rnn_tagger", m, tokens, tags, tw,
       {"x": lst(tokens), "y": lst(tags), "sample_weight": lst(tw),
        "kernels": [lst(emb), lst(rk), lst(rr), lst(dk)]})

# A per-pixel classifier: a 1x1 Conv2D's softmax over (n, 4, 4, 2) images, a weight per pixel,
# mean_with_sample_weight.
img = rng.normal(size=(n, 4, 4, 2)).astype("float32")
seg = np.eye(C, dtype="float32")[rng.integers(0, C, (n, 4, 4))]
pw = rng.uniform(0.0, 3.0, (n, 4, 4)).astype("float32")
ck = rng.normal(scale=0.5, size=(1, 1, 2, C)).astype("float32")
m = keras.Sequential([keras.Input((4, 4, 2)), keras.layers.Conv2D(C, 1, activation="softmax")])
m.layers[0].set_weights([ck, np.zeros(C, "float32")])
m.compile(optimizer=keras.optimizers.SGD(0.5),
          loss=L.CategoricalCrossentropy(reduction="mean_with_sample_weight"),
          weighted_metrics=["categorical_accuracy"])
record("per_pixel_conv", m, img, seg, pw,
       {"x": lst(img), "y": lst(seg), "sample_weight": lst(pw), "kernels": [lst(ck)]})

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_position_weights.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path, len(out["losses"]), "losses", len(out["metrics"]), "metrics", len(out["training"]), "fits")
