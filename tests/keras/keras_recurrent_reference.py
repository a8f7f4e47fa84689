# Regenerates tests/data/keras_recurrent.json: Keras 3's recurrent layers with states (issue 18): return_state and
# initial_state (forward values, and gradients for every weight and for the initial states), Bidirectional's states
# and merge_mode=None, stateful layers across batches and reset_states, an encoder-decoder (seq2seq) model trained
# by Keras, and inference of layers with dropout/recurrent_dropout (training draws random masks, which no two
# libraries share). tests/keras/test_recurrent_states.cpp checks Osprey against it.
# Run: python3 tests/keras/keras_recurrent_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import layers as L

rng = np.random.default_rng(47)
ref = {}


def lists(ts):
    return [np.asarray(t).tolist() for t in ts]


def set_random(layer):
    weights = [rng.uniform(-0.6, 0.6, w.shape).astype("float32") for w in layer.get_weights()]
    layer.set_weights(weights)
    return weights


# return_state and initial_state: y, states = layer(x, initial_state=s0, mask=m); the loss weighs every output.
x = rng.normal(0, 1, (3, 5, 3)).astype("float32")
mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], bool)
cases = []
for cls, kw, masked in [("SimpleRNN", {}, False), ("LSTM", {}, False), ("GRU", {}, False),
                        ("LSTM", {"return_sequences": True}, True), ("GRU", {"reset_after": False}, True),
                        ("LSTM", {"go_backwards": True}, True)]:
    layer = getattr(L, cls)(4, return_state=True, **kw)
    layer.build((None, 5, 3))
    weights = set_random(layer)
    n_states = 2 if cls == "LSTM" else 1
    s0 = [tf.Variable(rng.normal(0, 0.5, (3, 4)).astype("float32")) for _ in range(n_states)]
    with tf.GradientTape() as tape:
        outs = layer(x, initial_state=[tf.convert_to_tensor(s) for s in s0], mask=mask if masked else None)
        ws = [rng.uniform(-1, 1, o.shape).astype("float32") for o in outs]
        loss = sum(tf.reduce_sum(o * w) for o, w in zip(outs, ws))
    grads = tape.gradient(loss, layer.trainable_weights + s0)
    cases.append({"class": cls, "kwargs": kw, "masked": masked, "weights": lists(weights),
                  "initial_state": lists(s0), "ws": lists(ws), "outputs": lists(outs), "grads": lists(grads)})
ref["states"] = {"x": x.tolist(), "mask": mask.astype("float32").tolist(), "cases": cases}

# Bidirectional: return_state (forward states, then backward) with concat, and merge_mode=None (two outputs).
bi = []
for kw in [{"merge_mode": "concat"}, {"merge_mode": None}]:
    for cls in ["LSTM", "GRU"]:
        layer = L.Bidirectional(getattr(L, cls)(3, return_state=True, return_sequences=True), **kw)
        layer.build((None, 5, 3))
        weights = set_random(layer)
        n_states = 2 if cls == "LSTM" else 1
        s0 = [rng.normal(0, 0.5, (3, 3)).astype("float32") for _ in range(2 * n_states)]
        outs = layer(x, initial_state=s0, mask=mask)
        plain = layer(x)
        bi.append({"class": cls, "merge_mode": kw["merge_mode"], "weights": lists(weights), "initial_state": lists(s0),
                   "outputs": lists(outs), "outputs_without_state": lists(plain)})
ref["bidirectional"] = bi

# Stateful: batches continue from the last states; reset_states starts again from zeros.
model = keras.Sequential([keras.Input(batch_shape=(2, 4, 3)), L.LSTM(5, stateful=True, name="lstm"),
                          L.Dense(2, name="out")])
weights = [rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in model.get_weights()]
model.set_weights(weights)
b1 = rng.normal(0, 1, (2, 4, 3)).astype("float32")
b2 = rng.normal(0, 1, (2, 4, 3)).astype("float32")
p1 = model.predict_on_batch(b1)
p2 = model.predict_on_batch(b2)
model.layers[0].reset_states()
p3 = model.predict_on_batch(b2)
series = rng.normal(0, 1, (8, 4, 3)).astype("float32")
predict_series = model.predict(series, batch_size=2, verbose=0)  # after p3: continues from b2's states
model.layers[0].reset_states()
ys = rng.normal(0, 1, (8, 2)).astype("float32")
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
hist = model.fit(series, ys, epochs=2, batch_size=2, shuffle=False, verbose=0)
ref["stateful"] = {"weights": lists(weights), "b1": b1.tolist(), "b2": b2.tolist(), "p1": p1.tolist(),
                   "p2": p2.tolist(), "p3": p3.tolist(), "series": series.tolist(),
                   "predict_series": predict_series.tolist(), "y": ys.tolist(), "history": hist.history,
                   "weights_after": lists(model.get_weights()),
                   "states_after": lists(model.layers[0].states)}

# An encoder-decoder: the encoder's last states start the decoder (teacher forcing), a Dense per step.
N, TE, TD = 16, 6, 5
enc_x = rng.normal(0, 1, (N, TE, 3)).astype("float32")
dec_x = rng.normal(0, 1, (N, TD, 2)).astype("float32")
dec_y = np.tanh(np.cumsum(dec_x, axis=1) * 0.3 + enc_x[:, -1:, :2]).astype("float32")
enc_in = keras.Input((TE, 3), name="encoder_inputs")
dec_in = keras.Input((TD, 2), name="decoder_inputs")
_, h, c = L.LSTM(6, return_state=True, name="encoder")(enc_in)
d = L.LSTM(6, return_sequences=True, name="decoder")(dec_in, initial_state=[h, c])
model = keras.Model([enc_in, dec_in], L.Dense(2, name="out")(d), name="seq2seq")
model.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in model.get_weights()])
init = lists(model.get_weights())
model.compile(optimizer=keras.optimizers.SGD(0.2), loss="mse")
hist = model.fit([enc_x, dec_x], dec_y, epochs=2, batch_size=4, shuffle=False, verbose=0)
ref["seq2seq"] = {"enc_x": enc_x.tolist(), "dec_x": dec_x.tolist(), "y": dec_y.tolist(), "init": init,
                  "history": hist.history, "weights_after": lists(model.get_weights()),
                  "predict": model.predict([enc_x, dec_x], verbose=0).tolist(),
                  "config": json.loads(model.to_json())["config"]}

# Dropout inside the cells: inference is the plain computation (the masks apply in training only).
drop = []
for cls, kw in [("LSTM", {"dropout": 0.3}), ("LSTM", {"dropout": 0.3, "recurrent_dropout": 0.2}),
                ("GRU", {"recurrent_dropout": 0.4}), ("GRU", {"dropout": 0.2, "reset_after": False,
                                                              "recurrent_dropout": 0.1}),
                ("SimpleRNN", {"dropout": 0.5, "recurrent_dropout": 0.5})]:
    layer = getattr(L, cls)(4, **kw)
    layer.build((None, 5, 3))
    weights = set_random(layer)
    drop.append({"class": cls, "kwargs": kw, "weights": lists(weights), "y": np.asarray(layer(x)).tolist(),
                 "config": layer.get_config()})
ref["dropout"] = drop

# Losses and metrics of masked outputs: Keras weights each step by the output's mask (a token tagger on padded ids:
# sparse categorical crossentropy and accuracy per unmasked token; a masked regression per step. Keras 3.15 cannot
# combine a mask with per-sample weights of shape (N,) (apply_mask fails on (N,) * (N, steps)).
N, T, V = 16, 7, 12
lengths = rng.integers(1, T + 1, N)
ids = np.where(np.arange(T)[None, :] < lengths[:, None], rng.integers(1, V, (N, T)), 0).astype("int32")
tags = (ids % 3).astype("int32")
inp = keras.Input((T,), dtype="int32", name="tokens")
h = L.LSTM(6, return_sequences=True, name="lstm")(L.Embedding(V, 5, mask_zero=True, name="embed")(inp))
model = keras.Model(inp, L.Dense(3, activation="softmax", name="tags")(h), name="tagger")
model.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in model.get_weights()])
init = lists(model.get_weights())
model.compile(optimizer=keras.optimizers.SGD(0.5), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
hist = model.fit(ids, tags, epochs=2, batch_size=4, shuffle=False, verbose=0)
ref["masked_tagger"] = {"x": ids.tolist(), "y": tags.tolist(), "init": init, "history": hist.history,
                        "weights_after": lists(model.get_weights()),
                        "evaluate": model.evaluate(ids, tags, batch_size=4, verbose=0, return_dict=True)}
series = rng.normal(0, 1, (N, T, 2)).astype("float32")
series[np.arange(T)[None, :] >= lengths[:, None]] = 0.0
target = rng.normal(0, 1, (N, T, 1)).astype("float32")
inp = keras.Input((T, 2), name="series")
h = L.GRU(4, return_sequences=True, name="gru")(L.Masking(0.0, name="mask")(inp))
model = keras.Model(inp, L.Dense(1, name="out")(h), name="masked_regression")
model.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in model.get_weights()])
init = lists(model.get_weights())
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
hist = model.fit(series, target, epochs=2, batch_size=4, shuffle=False, verbose=0)
ref["masked_regression"] = {"x": series.tolist(), "y": target.tolist(), "init": init,
                            "history": hist.history, "weights_after": lists(model.get_weights()),
                            "evaluate": model.evaluate(series, target, batch_size=4, verbose=0, return_dict=True)}

# StackedRNNCells (keras.layers.RNN([cells])): an LSTM, a GRU and an LSTM cell stacked, every step and the states
# of each, over masked steps; values and every weight's gradient.
layer = L.RNN([L.LSTMCell(4), L.GRUCell(2), L.LSTMCell(3)], return_sequences=True, return_state=True)
layer.build((None, 5, 3))
weights = set_random(layer)
with tf.GradientTape() as tape:
    outs = keras.tree.flatten(layer(x, mask=mask))
    ws = [rng.uniform(-1, 1, o.shape).astype("float32") for o in outs]
    loss = sum(tf.reduce_sum(o * w) for o, w in zip(outs, ws))
grads = tape.gradient(loss, layer.trainable_weights)
ref["stacked"] = {"weights": lists(weights), "ws": lists(ws), "outputs": lists(outs), "grads": lists(grads),
                  "paths": [v.path for v in layer.trainable_weights], "config": layer.get_config()}

with open(os.path.join(os.path.dirname(__file__), "..", "data", "keras_recurrent.json"), "w") as f:
    json.dump(ref, f)
print("wrote", sorted(ref))
