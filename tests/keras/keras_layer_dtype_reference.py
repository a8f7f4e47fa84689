"""Expected values for Keras's per-layer `dtype` argument (tests/keras/test_layer_dtype.cpp) from real Keras 3
(TensorFlow backend): a model under the global "mixed_bfloat16" policy whose last layer is
Activation("softmax", dtype="float32") (the Keras mixed-precision guide's pattern: layer dtypes, float32 output,
predictions, loss, gradients, one SGD step), saved as tests/data/keras_files/layer_dtype.keras; a float32 model with
one Dense(dtype="mixed_bfloat16"); the sublayers Keras gives a layer's policy (an LSTM's cell, MultiHeadAttention's
projections); a MultiHeadAttention computing in bfloat16; LSTM, GRU (both reset_after forms) and SimpleRNN under
mixed_bfloat16 (outputs, states, gradients). `python3 tests/keras/keras_layer_dtype_reference.py` (pip tensorflow-cpu keras) writes
tests/data/keras_layer_dtype.json and that file."""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(21)
out = {"keras": keras.__version__, "tensorflow": tf.__version__}
x = rng.uniform(-1, 1, size=(5, 8)).astype("float32")
y = np.array([0, 3, 1, 2, 3], dtype="int32")
weights = [rng.uniform(-0.5, 0.5, size=s).astype("float32") for s in [(8, 16), (16,), (16, 4), (4,)]]
out["x"], out["y"] = x.tolist(), y.tolist()
out["weights"] = [w.astype("float64").tolist() for w in weights]


def dtypes(model):
    return [{"name": l.name, "policy": l.dtype_policy.name, "compute_dtype": l.compute_dtype,
             "variable_dtype": l.variable_dtype} for l in model.layers]


def name(d):
    return d.name if hasattr(d, "name") else str(d)


# A: mixed_bfloat16 everywhere but the float32 softmax.
keras.mixed_precision.set_global_policy("mixed_bfloat16")
def make_a():
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu", name="hidden"),
                             keras.layers.Dense(4, name="logits"),
                             keras.layers.Activation("softmax", dtype="float32", name="probs")], name="guide")
a = make_a()
a.set_weights(weights)
rec = {"layers": dtypes(a)}
# The symbolic outputs' dtypes (KerasTensor.dtype) of the same layers called on a keras.Input.
sym = keras.Input((8,), name="symbolic")  # named: the auto-named inputs after it keep their names
rec["symbolic_dtypes"] = [name(sym.dtype)]
for layer in a.layers:
    sym = layer(sym)
    rec["symbolic_dtypes"].append(name(sym.dtype))
pred = a(x, training=False)
rec["output_dtype"] = name(pred.dtype)
rec["predict"] = np.asarray(pred).tolist()
with tf.GradientTape() as tape:
    loss = keras.losses.SparseCategoricalCrossentropy()(y, a(x, training=True))
grads = tape.gradient(loss, a.trainable_variables)
rec["loss"] = float(loss)
rec["grads"] = [np.asarray(g).astype("float64").tolist() for g in grads]
a.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
a.train_on_batch(x, y)
rec["after_sgd_step"] = [w.astype("float64").tolist() for w in a.get_weights()]
out["guide"] = rec
saved = make_a()
saved.set_weights(weights)
os.makedirs(os.path.join(HERE, "..", "data", "keras_files"), exist_ok=True)
saved.save(os.path.join(HERE, "..", "data", "keras_files", "layer_dtype.keras"))

# B: float32 everywhere but one mixed_bfloat16 Dense.
keras.mixed_precision.set_global_policy("float32")
inp = keras.Input((8,))
h = keras.layers.Dense(16, activation="relu", dtype="mixed_bfloat16", name="hidden")(inp)
b = keras.Model(inp, keras.layers.Dense(4, activation="softmax", name="probs")(h), name="one_mixed")
b.set_weights(weights)
hidden = keras.Model(inp, h)
rec = {"layers": dtypes(b), "hidden_dtype": name(hidden(x).dtype), "output_dtype": name(b(x).dtype),
       "predict": np.asarray(b(x)).tolist()}
out["one_mixed"] = rec

# Sublayers that take their layer's policy.
lstm = keras.layers.LSTM(4, dtype="mixed_bfloat16")
lstm.build((None, 3, 2))
keras.mixed_precision.set_global_policy("mixed_bfloat16")
mha = keras.layers.MultiHeadAttention(2, 3, dtype="float32")
mha.build((None, 4, 6), (None, 4, 6))
out["sublayers"] = {"lstm": lstm.dtype_policy.name, "lstm_cell": lstm.cell.dtype_policy.name,
                    "mha": mha.dtype_policy.name, "mha_query": mha._query_dense.dtype_policy.name,
                    "mha_output": mha._output_dense.dtype_policy.name}
keras.mixed_precision.set_global_policy("float32")

# MultiHeadAttention(dtype="mixed_bfloat16"): its projections and the attention between them in bfloat16; the output
# (dot_product_attention's path) and, called with return_attention_scores, the Softmax path's output and scores.
q = rng.uniform(-1, 1, size=(3, 5, 8)).astype("float32")
mha = keras.layers.MultiHeadAttention(2, 4, dtype="mixed_bfloat16")
mha(q, q)
mha_weights = [rng.uniform(-0.5, 0.5, size=w.shape).astype("float32") for w in mha.get_weights()]
mha.set_weights(mha_weights)
y = mha(q, q)
y_scored, scores = mha(q, q, return_attention_scores=True)
out["mha_bf16"] = {"x": q.tolist(), "weights": [w.astype("float64").tolist() for w in mha_weights],
                   "compute_dtype": mha.compute_dtype, "output_dtype": name(y.dtype),
                   "scores_dtype": name(scores.dtype),
                   "output": np.asarray(y).astype("float64").tolist(),
                   "output_scored": np.asarray(y_scored).astype("float64").tolist(),
                   "scores": np.asarray(scores).astype("float64").tolist()}

# Recurrent layers under mixed_bfloat16 (Osprey computes them on oneDNN's bfloat16 RNNs): every output and state in
# bfloat16, and the gradients of a weighted sum of them for x and the float32 weights.
rrng = np.random.default_rng(22)
xr = rrng.uniform(-1, 1, size=(3, 7, 4)).astype("float32")
rnn_cases = {}
for kind, layer in [("lstm", keras.layers.LSTM(6, return_sequences=True, return_state=True, dtype="mixed_bfloat16")),
                    ("gru", keras.layers.GRU(6, return_sequences=True, return_state=True, dtype="mixed_bfloat16")),
                    ("gru_reset_before", keras.layers.GRU(6, return_sequences=True, return_state=True,
                                                          reset_after=False, dtype="mixed_bfloat16")),
                    ("simple", keras.layers.SimpleRNN(6, return_sequences=True, return_state=True,
                                                      dtype="mixed_bfloat16"))]:
    layer.build((None, 7, 4))
    ws = [rrng.uniform(-0.5, 0.5, size=w.shape).astype("float32") for w in layer.get_weights()]
    layer.set_weights(ws)
    outs = layer(xr)
    wo = [rrng.uniform(-1, 1, size=o.shape).astype("float32") for o in outs]
    xv = tf.constant(xr)
    with tf.GradientTape() as tape:
        tape.watch(xv)
        res = layer(xv)
        loss = tf.add_n([tf.reduce_sum(tf.cast(o, "float32") * w) for o, w in zip(res, wo)])
    grads = tape.gradient(loss, [xv] + layer.trainable_variables)
    rnn_cases[kind] = {"weights": [w.astype("float64").tolist() for w in ws],
                       "output_weights": [w.astype("float64").tolist() for w in wo],
                       "dtypes": [name(o.dtype) for o in outs],
                       "outputs": [np.asarray(tf.cast(o, "float32")).astype("float64").tolist() for o in outs],
                       "loss": float(loss),
                       "gradients": [np.asarray(g).astype("float64").tolist() for g in grads]}
out["rnn_bf16"] = {"x": xr.astype("float64").tolist(), "cases": rnn_cases}

path = os.path.join(HERE, "..", "data", "keras_layer_dtype.json")
with open(path, "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"), allow_nan=False)
    f.write("\n")
print(f"wrote {path} (Keras {keras.__version__}, TensorFlow {tf.__version__})")
