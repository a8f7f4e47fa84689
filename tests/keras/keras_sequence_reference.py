# Regenerates tests/data/keras_sequence.json: Keras 3's sequence layers (issue 18) with weights
# fixed here, forward values and the gradients of a loss for every weight, and two epochs of SGD on a small
# Embedding + GlobalAveragePooling1D + Dense classifier. tests/keras/test_sequence_layers.cpp checks Osprey against it.
# Run: python3 tests/keras/keras_sequence_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import layers as L

rng = np.random.default_rng(31)
ref = {}

# Embedding alone: ids of a rank-3 input (repeated ids add their rows' gradients).
table = rng.uniform(-1, 1, (11, 4)).astype("float32")
ids = rng.integers(0, 11, (3, 2, 5)).astype("int32")
w = rng.uniform(-1, 1, (3, 2, 5, 4)).astype("float32")
emb = L.Embedding(11, 4)
emb.build((None, 2, 5))
emb.set_weights([table])
with tf.GradientTape() as tape:
    y = emb(ids)
    loss = tf.reduce_sum(y * w)
ref["embedding"] = {"table": table.tolist(), "ids": ids.tolist(), "w": w.tolist(), "y": np.asarray(y).tolist(),
                    "grad": np.asarray(tf.convert_to_tensor(tape.gradient(loss, emb.embeddings))).tolist()}
try:
    emb(np.array([[1, 11]], "int32"))
    ref["embedding"]["bad_id_error"] = ""
except Exception as e:  # noqa: BLE001 (the message is what is kept)
    import re
    ref["embedding"]["bad_id_error"] = re.search(r"indices\[[0-9,]*\] = -?[0-9]+ is not in \[0, [0-9]+\)", str(e)).group(0)

# A bag-of-embeddings classifier trained by Keras.
N, T, V = 32, 6, 20
x = rng.integers(0, V, (N, T)).astype("int32")
y = (x.sum(axis=1) > T * V / 2).astype("float32").reshape(N, 1)
inp = keras.Input((T,), dtype="int32", name="tokens")
h = L.Embedding(V, 8, name="embed")(inp)
h = L.GlobalAveragePooling1D(name="gap")(h)
out = L.Dense(1, activation="sigmoid", name="out")(h)
model = keras.Model(inp, out)
model.set_weights([rng.uniform(-0.5, 0.5, wt.shape).astype("float32") for wt in model.get_weights()])
init = [wt.tolist() for wt in model.get_weights()]
model.compile(optimizer=keras.optimizers.SGD(0.5), loss="binary_crossentropy", metrics=["accuracy"])
hist = model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
ref["bag"] = {"x": x.tolist(), "y": y.tolist(), "init": init, "history": hist.history,
              "weights_after": [wt.tolist() for wt in model.get_weights()],
              "predict": model.predict(x, verbose=0).tolist()}


def trained(model, x, y, optimizer, loss, epochs=2, batch_size=8):
    model.set_weights([rng.uniform(-0.5, 0.5, wt.shape).astype("float32") for wt in model.get_weights()])
    init = [wt.tolist() for wt in model.get_weights()]
    model.compile(optimizer=optimizer, loss=loss)
    hist = model.fit(x, y, epochs=epochs, batch_size=batch_size, shuffle=False, verbose=0)
    return {"x": np.asarray(x).tolist(), "y": y.tolist(), "init": init, "history": hist.history,
            "weights_after": [wt.tolist() for wt in model.get_weights()],
            "predict": model.predict(x, verbose=0).tolist()}


# Masks: Embedding(mask_zero) on padded sequences through a Dense that keeps the mask to a masked average.
lengths = rng.integers(1, T + 1, N)
xp = np.where(np.arange(T)[None, :] < lengths[:, None], rng.integers(1, V, (N, T)), 0).astype("int32")
yp = (xp.sum(axis=1) > lengths * V / 2).astype("float32").reshape(N, 1)
inp = keras.Input((T,), dtype="int32", name="tokens")
h = L.Embedding(V, 5, mask_zero=True, name="embed")(inp)
h = L.Dense(4, activation="tanh", name="per_step")(h)
h = L.GlobalAveragePooling1D(name="gap")(h)
model = keras.Model(inp, L.Dense(1, activation="sigmoid", name="out")(h))
ref["mask_zero"] = trained(model, xp, yp, keras.optimizers.SGD(0.5), "binary_crossentropy")
# Masking on float sequences (steps of all -1 are padding), Adam.
xs = rng.normal(0, 1, (N, T, 3)).astype("float32")
xs[np.arange(T)[None, :] >= lengths[:, None]] = -1.0
ys = rng.normal(0, 1, (N, 2)).astype("float32")
inp = keras.Input((T, 3), name="series")
h = L.GlobalAveragePooling1D(name="gap")(L.Dense(4, activation="relu", name="per_step")(L.Masking(-1.0, name="mask")(inp)))
model = keras.Model(inp, L.Dense(2, name="out")(h))
ref["masking"] = trained(model, xs, ys, keras.optimizers.Adam(0.01), "mse")
ref["masking"]["masked_output"] = np.asarray(L.Masking(-1.0)(xs)).tolist()
ref["masking"]["build_config"] = "build_config" in json.loads(model.to_json())["config"]["layers"][1]

# Recurrent layers with weights set here: forward values and the gradient of sum(y * w) for every weight.
xr = rng.normal(0, 1, (3, 5, 3)).astype("float32")
rnn_cases = []
for cls, kw in [("SimpleRNN", {}), ("LSTM", {}), ("GRU", {}), ("GRU", {"reset_after": False}),
                ("LSTM", {"return_sequences": True}), ("GRU", {"return_sequences": True, "go_backwards": True}),
                ("SimpleRNN", {"go_backwards": True}), ("LSTM", {"activation": "relu", "use_bias": False})]:
    layer = getattr(L, cls)(4, **kw)
    layer.build((None, 5, 3))
    weights = [rng.uniform(-0.6, 0.6, wt.shape).astype("float32") for wt in layer.get_weights()]
    layer.set_weights(weights)
    out_shape = (3, 5, 4) if kw.get("return_sequences") else (3, 4)
    w = rng.uniform(-1, 1, out_shape).astype("float32")
    with tf.GradientTape() as tape:
        y = layer(xr)
        loss = tf.reduce_sum(y * w)
    grads = tape.gradient(loss, layer.trainable_weights)
    rnn_cases.append({"class": cls, "kwargs": kw, "weights": [wt.tolist() for wt in weights], "w": w.tolist(),
                      "y": np.asarray(y).tolist(), "grads": [np.asarray(g).tolist() for g in grads],
                      "paths": [v.path for v in layer.trainable_weights]})
ref["rnn"] = {"x": xr.tolist(), "cases": rnn_cases}

# Masked recurrent layers in training: Embedding(mask_zero) into an LSTM over every step, a backwards GRU.
for name, make in [("lstm_masked", lambda h: L.GlobalAveragePooling1D(name="gap")(
                        L.LSTM(4, return_sequences=True, name="rnn")(h))),
                   ("gru_backwards_masked", lambda h: L.GRU(4, go_backwards=True, name="rnn")(h))]:
    inp = keras.Input((T,), dtype="int32", name="tokens")
    h = make(L.Embedding(V, 5, mask_zero=True, name="embed")(inp))
    model = keras.Model(inp, L.Dense(1, activation="sigmoid", name="out")(h))
    ref[name] = trained(model, xp, yp, keras.optimizers.SGD(0.5), "binary_crossentropy")

# Bidirectional over masked sequences: an LSTM over every step (concat), then a GRU (sum).
inp = keras.Input((T,), dtype="int32", name="tokens")
h = L.Embedding(V, 5, mask_zero=True, name="embed")(inp)
h = L.Bidirectional(L.LSTM(3, return_sequences=True, name="lstm"), name="bi_lstm")(h)
h = L.Bidirectional(L.GRU(2, name="gru"), merge_mode="sum", name="bi_gru")(h)
model = keras.Model(inp, L.Dense(1, activation="sigmoid", name="out")(h))
ref["bidirectional"] = trained(model, xp, yp, keras.optimizers.SGD(0.5), "binary_crossentropy")
ref["bidirectional"]["paths"] = [v.path for v in model.weights]

# BatchNormalization of masked steps: the batch statistics over the kept steps only (the moving ones too); the
# padded steps are normalized with them. Masking on the float sequences of the "masking" case, Adam.
inp = keras.Input((T, 3), name="series")
h = L.Dense(4, activation="relu", name="per_step")(L.Masking(-1.0, name="mask")(inp))
h = L.GlobalAveragePooling1D(name="gap")(L.BatchNormalization(momentum=0.8, name="bn")(h))
model = keras.Model(inp, L.Dense(2, name="out")(h))
ref["masked_batchnorm"] = trained(model, xs, ys, keras.optimizers.Adam(0.01), "mse")
# Token lists padded by keras.utils.pad_sequences (its default: padding and truncating "pre", so the masks are
# left-padded; some lists are longer than T): Embedding(mask_zero) + Bidirectional(LSTM) (concat) + a GRU, trained.
lists = [rng.integers(1, V, int(n)).tolist() for n in rng.integers(0, T + 3, N)]
inp = keras.Input((T,), dtype="int32", name="tokens")
h = L.Embedding(V, 5, mask_zero=True, name="embed")(inp)
h = L.Bidirectional(L.LSTM(3, return_sequences=True, name="lstm"), name="bi_lstm")(h)
model = keras.Model(inp, L.Dense(1, activation="sigmoid", name="out")(L.GRU(2, name="gru")(h)))
xl = keras.utils.pad_sequences(lists, maxlen=T)
yl = (np.array([sum(t) for t in lists]) > np.array([len(t) for t in lists]) * V / 2).astype("float32").reshape(N, 1)
ref["pre_padded"] = trained(model, xl, yl, keras.optimizers.SGD(0.5), "binary_crossentropy")
ref["pre_padded"]["lists"] = lists
# A tagger (a label per token) trained with SparseCategoricalCrossentropy(ignore_class=-1): the loss's own mask
# (the -1 labels) and the output's (Embedding(mask_zero) through the LSTM) both weigh it, as Keras's in & out masks;
# the model is saved to .keras with that loss in its compile config.
xt = np.where(np.arange(T)[None, :] < lengths[:, None], rng.integers(1, V, (N, T)), 0).astype("int32")
yt = (xt % 3).astype("int32")
yt[rng.uniform(size=(N, T)) < 0.25] = -1  # some tokens unlabelled
inp = keras.Input((T,), dtype="int32", name="tokens")
h = L.LSTM(4, return_sequences=True, name="lstm")(L.Embedding(V, 5, mask_zero=True, name="embed")(inp))
model = keras.Model(inp, L.Dense(3, activation="softmax", name="tags")(h))
# (SGD: with Adam, TensorFlow's Keras squares a repeated token's gradients one by one, README "Not yet".)
ref["tagger_ignore_class"] = trained(model, xt, yt, keras.optimizers.SGD(1.0),
                                     keras.losses.SparseCategoricalCrossentropy(ignore_class=-1))
ref["tagger_ignore_class"]["compile_loss"] = model.get_compile_config()["loss"]
ref["tagger_ignore_class"]["evaluate"] = model.evaluate(xt, yt, batch_size=8, verbose=0)
model.save(os.path.join(os.path.dirname(__file__), "..", "data", "keras_tagger_ignore_class.keras"))

with open(os.path.join(os.path.dirname(__file__), "..", "data", "keras_sequence.json"), "w") as f:
    json.dump(ref, f)
print("wrote", sorted(ref), "bad id:", ref["embedding"]["bad_id_error"][:120])
