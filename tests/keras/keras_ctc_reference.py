# Regenerates tests/data/keras_ctc.json: keras.ops.ctc_loss (Keras 3 on TensorFlow: tf.nn.ctc_loss with dense labels)
# and its gradient for the logits, on full and shorter sequences, empty label rows, repeated labels, blanks first,
# last and in the middle, an impossible alignment, float64; keras.losses.CTC; keras.ops.ctc_decode greedy (merging
# repeats or not) and beam search (beam widths, top paths, blank positions, lengths); a small model trained with the
# CTC loss. tests/keras/test_ctc.cpp checks Osprey against it.
# Run: python3 tests/keras/keras_ctc_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import ops, layers

rng = np.random.default_rng(31)
out = {"keras": keras.__version__, "tensorflow": tf.__version__}


def tl(v):
    return np.asarray(v).tolist()


def labels_for(batch, max_label, lengths, classes, mask, pad=0, repeats=False):
    choices = [c for c in range(classes) if c != (mask % classes)]
    lab = np.full((batch, max_label), pad, dtype="int32")
    for b in range(batch):
        for i in range(lengths[b]):
            if repeats and i > 0 and rng.uniform() < 0.4:
                lab[b, i] = lab[b, i - 1]
            else:
                lab[b, i] = rng.choice(choices)
    return lab


def loss_case(batch, frames, classes, max_label, label_lengths, logit_lengths, mask=0, dtype="float32", pad=0,
              repeats=False, labels=None):
    logits = rng.normal(0, 1.5, (batch, frames, classes)).astype(dtype)
    lab = labels if labels is not None else labels_for(batch, max_label, label_lengths, classes, mask, pad, repeats)
    x = tf.constant(logits)
    w = rng.uniform(0.5, 1.5, (batch,)).astype(dtype)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = ops.ctc_loss(lab, x, np.array(label_lengths, "int32"), np.array(logit_lengths, "int32"), mask)
        total = tf.reduce_sum(loss * w)
    grad = tape.gradient(total, x)
    return {"logits": tl(logits), "labels": tl(lab), "label_length": list(label_lengths),
            "logit_length": list(logit_lengths), "mask_index": mask, "dtype": dtype, "w": tl(w),
            "loss": tl(loss), "loss_dtype": str(loss.dtype.name), "grad": tl(grad)}


out["loss"] = {
    "full_lengths": loss_case(4, 12, 6, 5, [5, 3, 1, 4], [12, 12, 12, 12]),
    "short_frames_and_empty_labels": loss_case(5, 10, 5, 4, [4, 0, 2, 3, 0], [10, 7, 3, 9, 0]),
    "repeated_labels": loss_case(4, 9, 4, 4, [4, 3, 4, 2], [9, 9, 8, 9], repeats=True),
    "tight_repeats": loss_case(2, 5, 3, 3, [3, 3], [5, 5], labels=np.array([[1, 1, 1], [2, 1, 2]], "int32")),
    "blank_last": loss_case(3, 8, 5, 3, [3, 2, 1], [8, 6, 8], mask=4),
    "blank_minus_one": loss_case(3, 8, 5, 3, [3, 2, 1], [8, 6, 8], mask=-1),
    "blank_in_the_middle": loss_case(3, 8, 6, 4, [4, 2, 3], [8, 8, 5], mask=2),
    "padding_minus_one": loss_case(3, 8, 5, 4, [2, 4, 1], [8, 8, 8], pad=-1),
    "impossible_alignment": loss_case(2, 3, 4, 5, [5, 2], [3, 3]),
    "float64": loss_case(3, 7, 5, 3, [3, 1, 2], [7, 5, 7], dtype="float64"),
    "one_class_and_blank": loss_case(2, 6, 2, 3, [3, 1], [6, 6]),
}

# keras.losses.CTC: zeros pad the labels (0 is the blank), every frame counts; the mean over the batch.
logits = rng.normal(0, 1, (4, 10, 6)).astype("float32")
y_true = labels_for(4, 5, [5, 2, 3, 1], 6, 0)
loss_obj = keras.losses.CTC()
x = tf.constant(logits)
with tf.GradientTape() as tape:
    tape.watch(x)
    value = loss_obj(y_true, x)
out["ctc_loss_object"] = {"y_true": tl(y_true), "y_pred": tl(logits), "loss": float(value),
                          "per_sample": tl(keras.losses.ctc(y_true, logits)), "grad": tl(tape.gradient(value, x)),
                          "config": loss_obj.get_config()}


def decode_case(batch, frames, classes, lengths, strategy, mask=0, merge_repeated=True, beam_width=100, top_paths=1,
                dtype="float32", logits=None):
    x = logits if logits is not None else rng.normal(0, 1.5, (batch, frames, classes)).astype(dtype)
    kwargs = dict(strategy=strategy, merge_repeated=merge_repeated, mask_index=mask)
    if strategy == "beam_search":
        kwargs.update(beam_width=beam_width, top_paths=top_paths)
    decoded, scores = ops.ctc_decode(x, np.array(lengths, "int32"), **kwargs)
    return {"logits": tl(x), "lengths": list(lengths), "strategy": strategy, "mask_index": mask,
            "merge_repeated": merge_repeated, "beam_width": beam_width, "top_paths": top_paths, "dtype": dtype,
            "decoded": tl(decoded), "scores": tl(scores), "scores_dtype": str(scores.dtype.name)}


# Graves's example: best path "--" but the label "a" is the more probable (beam search finds it, greedy does not).
graves = np.log(np.array([[[0.3, 0.7], [0.4, 0.6]]], "float32"))
# Repeats: a frame sequence with runs of one class.
runs = np.full((1, 8, 4), -3.0, "float32")
for t, c in enumerate([1, 1, 0, 1, 2, 2, 3, 3]):
    runs[0, t, c] = 2.0
out["decode"] = {
    "greedy": decode_case(4, 10, 5, [10, 7, 0, 3], "greedy"),
    "greedy_no_merge": decode_case(1, 8, 4, [8], "greedy", merge_repeated=False, logits=runs),
    "greedy_merge": decode_case(1, 8, 4, [8], "greedy", logits=runs),
    "greedy_mask_none": decode_case(3, 9, 5, [9, 9, 4], "greedy", mask=None),
    "greedy_mask_middle": decode_case(3, 9, 5, [9, 6, 9], "greedy", mask=2),
    "graves_greedy": decode_case(1, 2, 2, [2], "greedy", mask=1, logits=graves),
    "graves_beam": decode_case(1, 2, 2, [2], "beam_search", mask=1, beam_width=2, logits=graves),
    "beam": decode_case(4, 10, 5, [10, 7, 1, 3], "beam_search", beam_width=10, top_paths=3),
    "beam_width_1": decode_case(3, 8, 4, [8, 5, 8], "beam_search", beam_width=1),
    "beam_default_width": decode_case(2, 12, 6, [12, 9], "beam_search", top_paths=4),
    "beam_mask_none": decode_case(3, 8, 5, [8, 8, 6], "beam_search", mask=None, beam_width=5, top_paths=2),
    "beam_mask_middle": decode_case(3, 8, 5, [8, 4, 8], "beam_search", mask=2, beam_width=6, top_paths=2),
    "beam_float64": decode_case(2, 7, 4, [7, 6], "beam_search", beam_width=4, top_paths=2, dtype="float64"),
    "beam_runs": decode_case(1, 8, 4, [8], "beam_search", beam_width=8, top_paths=3, logits=runs),
}

# A small model trained with the CTC loss: frames (8, 5) -> Dense(16, tanh) -> Dense(5) logits, Adam, 2 epochs.
keras.utils.set_random_seed(7)
n, frames, feat, classes = 12, 8, 5, 5
xs = rng.normal(0, 1, (n, frames, feat)).astype("float32")
ys = labels_for(n, 3, rng.integers(1, 4, n), classes, 0)
inp = keras.Input((frames, feat), name="frames")
h = layers.Dense(16, activation="tanh", name="hidden")(inp)
model = keras.Model(inp, layers.Dense(classes, name="logits")(h))
init = [tl(w) for w in model.get_weights()]
model.compile(optimizer=keras.optimizers.Adam(0.05), loss=keras.losses.CTC())
hist = model.fit(xs, ys, epochs=2, batch_size=4, shuffle=False, verbose=0)
out["train"] = {"x": tl(xs), "y": tl(ys), "init": init, "history": {"loss": hist.history["loss"]},
                "weights_after": [tl(w) for w in model.get_weights()],
                "evaluate": float(model.evaluate(xs, ys, batch_size=4, verbose=0))}

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_ctc.json")
with open(path, "w") as f:
    json.dump(out, f)
print("wrote", path)
