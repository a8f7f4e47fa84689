# Regenerates tests/data/keras_files/*.keras and tests/data/keras_files.json: functional, nested and multi-output
# models with compile settings given as objects, made, trained and saved by Keras 3; the numbers
# tests/keras/test_model_files.cpp checks Osprey against after loading each file (predict, evaluate, one more epoch
# of training, the weights after it).
# Run: python3 tests/keras/keras_model_files_reference.py   (pip tensorflow-cpu keras)
#      python3 tests/keras/keras_model_files_reference.py NAME...   regenerates only those cases (their file and their
#      entry of the json; the other entries stay as they are). A case added later draws its data from its own
#      generator, so that this gives the numbers a full run gives.
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from keras import layers as L

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "keras_files")
os.makedirs(OUT, exist_ok=True)
keras.utils.set_random_seed(5)
rng = np.random.default_rng(17)
N = 24


def arr(*shape):
    return rng.uniform(-1, 1, shape).astype("float32")


sys.path.insert(0, HERE)
from osprey_test_objects import PowerError, Scale, TwoLayer, scaled_mse  # noqa: E402  (registers them)


def listify(v):
    if isinstance(v, dict):
        return {k: listify(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [listify(x) for x in v]
    return np.asarray(v).tolist()


ONLY = set(sys.argv[1:])


def case(name, model, x, y, compile_kwargs, batch_size=8):
    if ONLY and name not in ONLY:
        return
    model.compile(**compile_kwargs)
    model.fit(x, y, epochs=2, batch_size=batch_size, shuffle=False, verbose=0)  # optimizer state to save
    path = os.path.join(OUT, name + ".keras")
    model.save(path)
    # The numbers of the model as the file has it (Keras 3.15's Huber leaves its delta out of the file, so the
    # reloaded model differs from the one in memory there).
    model = keras.models.load_model(path)
    pred = model.predict(x, verbose=0)
    ev = model.evaluate(x, y, batch_size=batch_size, verbose=0, return_dict=True)
    hist = model.fit(x, y, epochs=1, batch_size=batch_size, shuffle=False, verbose=0)
    cases[name] = {"x": listify(x), "y": listify(y), "batch_size": batch_size, "predict": listify(pred),
                   "evaluate": {k: float(v) for k, v in ev.items()},
                   "history": {k: [float(v) for v in vs] for k, vs in hist.history.items()},
                   "weights_after": [w.numpy().tolist() for w in model.weights],
                   "metrics_names": list(ev.keys())}


cases = {}

# 1. Two inputs, a shared Dense on one of them twice (two nodes of one layer), metrics with options.
a = keras.Input((4,), name="a"); b = keras.Input((3,), name="b")
shared = L.Dense(4, activation="tanh", name="shared")
h = shared(shared(a))
h = L.Concatenate(name="concat")([h, L.Dense(4, name="from_b")(b)])
out = L.Dense(1, activation="sigmoid", name="out")(h)
case("two_input", keras.Model([a, b], out, name="two_input"), [arr(N, 4), arr(N, 3)],
     rng.integers(0, 2, (N, 1)).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss=keras.losses.BinaryCrossentropy(label_smoothing=0.1),
          metrics=[keras.metrics.BinaryAccuracy(threshold=0.3), keras.metrics.AUC(num_thresholds=50, curve="PR",
                                                                                  name="pr_auc")]))

# 2. A residual block with the newer layers: ReLU with options, Add, LayerNormalization, Softmax.
x = keras.Input((6,), name="x")
h = L.Dense(6, name="d1")(x)
h = L.ReLU(max_value=2.0, negative_slope=0.1, name="relu")(h)
h = L.Add(name="residual")([x, h])
h = L.LayerNormalization(name="norm")(h)
h = L.Dense(3, name="logits")(h)
out = L.Softmax(name="probs")(h)
case("residual", keras.Model(x, out, name="residual"), arr(N, 6), np.eye(3, dtype="float32")[rng.integers(0, 3, N)],
     dict(optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
          loss=keras.losses.CategoricalCrossentropy(label_smoothing=0.1),
          metrics=[keras.metrics.TopKCategoricalAccuracy(k=2), "categorical_accuracy"]))

# 3. Nested models: a functional block called twice (shared weights) and a Sequential inside a functional model.
bi = keras.Input((4,), name="block_in")
block = keras.Model(bi, L.Dense(4, name="block_dense2")(L.Dense(4, activation="relu", name="block_dense1")(bi)),
                    name="block")
head = keras.Sequential([keras.Input((4,)), L.Dense(3, activation="elu", name="head_dense"), L.Dense(1, name="head_out")],
                        name="head")
x = keras.Input((5,), name="features")
h = L.Dense(4, name="stem")(x)
h = block(block(h))
out = head(h)
case("nested", keras.Model(x, out, name="nested"), arr(N, 5), arr(N, 1),
     dict(optimizer=keras.optimizers.RMSprop(0.01), loss="mse", metrics=["mae"]))

# 4. Two outputs with per-output losses (an object with an option), loss_weights and metrics with options.
x = keras.Input((5,), name="x")
h = L.Dense(8, activation="relu", name="trunk")(x)
reg = L.Dense(2, name="reg")(h)
cls = L.Dense(1, activation="sigmoid", name="cls")(h)
case("two_output", keras.Model(x, {"reg": reg, "cls": cls}, name="two_output"), arr(N, 5),
     {"reg": arr(N, 2), "cls": rng.integers(0, 2, (N, 1)).astype("float32")},
     dict(optimizer=keras.optimizers.Adam(0.01), loss={"reg": keras.losses.Huber(0.5), "cls": "binary_crossentropy"},
          loss_weights={"reg": 1.0, "cls": 0.3},
          metrics={"reg": ["mae"], "cls": [keras.metrics.BinaryAccuracy(threshold=0.3),
                                           keras.metrics.Precision(thresholds=0.7)]}))

# 5. A custom layer (registered as "osprey_test>Scale") in a functional model, with a registered loss function and
# a registered metric class with an option.
x = keras.Input((3,), name="x")
h = Scale(init=1.5, name="scale")(x)
out = L.Dense(1, name="out")(h)
case("custom_layer", keras.Model(x, out, name="custom_layer"), arr(N, 3), arr(N, 1),
     dict(optimizer=keras.optimizers.Adam(0.01), loss=scaled_mse, metrics=["mae", PowerError(power=3.0)]))

# 6. A saturated sigmoid output: TensorFlow-backend Keras computes binary crossentropy from the Dense's logits (no
# clipping), so its loss differs from the clipped formula of the JAX and torch backends.
m = keras.Sequential([keras.Input((2,), name="x"),
                      L.Dense(1, activation="sigmoid", kernel_initializer=keras.initializers.Constant(30.0),
                              name="out")], name="saturated")
case("saturated", m, arr(N, 2), rng.integers(0, 2, (N, 1)).astype("float32"),
     dict(optimizer=keras.optimizers.SGD(0.01), loss="binary_crossentropy", metrics=["accuracy"]))

# 7. The initializers, regularizers and constraints beyond the Dense defaults: Orthogonal and VarianceScaling with
# options (their weights come from the file), OrthogonalRegularizer, MinMaxNorm, UnitNorm.
m = keras.Sequential([keras.Input((6,), name="x"),
                      L.Dense(5, activation="tanh", name="ortho",
                              kernel_initializer=keras.initializers.Orthogonal(gain=1.2, seed=3),
                              kernel_regularizer=keras.regularizers.OrthogonalRegularizer(0.1, mode="columns"),
                              kernel_constraint=keras.constraints.MinMaxNorm(0.5, 1.0, rate=0.8)),
                      L.Dense(1, name="out",
                              kernel_initializer=keras.initializers.VarianceScaling(2.0, "fan_out", "uniform"),
                              kernel_regularizer=keras.regularizers.OrthogonalRegularizer(0.05, mode="rows"),
                              kernel_constraint=keras.constraints.UnitNorm())], name="regularized")
case("regularized", m, arr(N, 6), arr(N, 1), dict(optimizer=keras.optimizers.SGD(0.1), loss="mse"))

# 8. A subclassed model registered with its config.
m = TwoLayer(5, name="two_layer")
m(np.zeros((1, 3), "float32"))
case("subclassed", m, arr(N, 3), arr(N, 1), dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# Each regularizer's penalty and each constraint's projection of one weight.
w = arr(4, 3)
wt = keras.ops.convert_to_tensor(w)
R, C = keras.regularizers, keras.constraints
cases["penalties"] = {
    "w": w.tolist(),
    "orthogonal_rows": float(R.OrthogonalRegularizer(0.1, mode="rows")(wt)),
    "orthogonal_columns": float(R.OrthogonalRegularizer(0.1, mode="columns")(wt)),
    "max_norm": np.asarray(C.MaxNorm(0.8)(wt)).tolist(),
    "unit_norm": np.asarray(C.UnitNorm()(wt)).tolist(),
    "min_max_norm": np.asarray(C.MinMaxNorm(0.5, 1.0, rate=0.8)(wt)).tolist(),
}

# 9-11. Convolutional models (issue 17): a small ResNet-style block with residual adds and BatchNormalization over
# feature maps; a depthwise-separable model; a Conv1D model over sequences.
x = keras.Input((8, 8, 3), name="image")
h = L.Conv2D(8, 3, padding="same", activation="relu", name="stem")(x)
h = L.BatchNormalization(name="stem_bn")(h)
r = L.Conv2D(8, 3, padding="same", activation="relu", name="block_a")(h)
r = L.Conv2D(8, 3, padding="same", name="block_b")(r)
h = L.ReLU(name="block_relu")(L.Add(name="block_add")([h, r]))
h = L.MaxPooling2D(2, name="pool")(h)
h = L.Conv2D(16, 3, strides=2, padding="same", activation="relu", name="down")(h)
h = L.GlobalAveragePooling2D(name="gap")(h)
out = L.Dense(3, activation="softmax", name="probs")(h)
case("cnn_residual", keras.Model(x, out, name="cnn_residual"), arr(N, 8, 8, 3),
     np.eye(3, dtype="float32")[rng.integers(0, 3, N)],
     dict(optimizer=keras.optimizers.Adam(0.01), loss="categorical_crossentropy", metrics=["accuracy"]))
m = keras.Sequential([keras.Input((9, 9, 2), name="image"),
                      L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="relu", name="dw"),
                      L.SeparableConv2D(6, 3, strides=2, activation="relu", name="sep"),
                      L.AveragePooling2D(2, padding="same", name="avg"),
                      L.ZeroPadding2D(1, name="pad"), L.Cropping2D(((1, 0), (0, 1)), name="crop"),
                      L.Flatten(name="flat"), L.Dense(1, activation="sigmoid", name="out")], name="cnn_separable")
case("cnn_separable", m, arr(N, 9, 9, 2), rng.integers(0, 2, (N, 1)).astype("float32"),
     dict(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="binary_crossentropy", metrics=["accuracy"]))
m = keras.Sequential([keras.Input((12, 3), name="series"),
                      L.Conv1D(6, 3, padding="causal", dilation_rate=2, activation="relu", name="causal"),
                      L.MaxPooling1D(2, name="pool"), L.UpSampling1D(2, name="up"),
                      L.Conv1D(4, 3, strides=2, padding="same", name="conv"),
                      L.GlobalAveragePooling1D(name="gap"), L.Dense(1, name="out")], name="cnn_conv1d")
case("cnn_conv1d", m, arr(N, 12, 3), arr(N, 1),
     dict(optimizer=keras.optimizers.RMSprop(0.01), loss="mse", metrics=["mae"]))

# 12. Preprocessing inside a model (issue 17): an adapted Normalization (its statistics are weights of the file),
# RandomContrast with a one-value range (a fixed factor of 1.3 in fit, the identity in predict), RandomCrop to the
# input's own size, UpSampling2D bilinear, Resizing with pad_to_aspect_ratio.
prng = np.random.default_rng(29)
xp = prng.normal(2.0, 3.0, (N, 8, 8, 3)).astype("float32")
norm = L.Normalization(name="norm")
norm.adapt(xp)
x = keras.Input((8, 8, 3), name="image")
h = L.RandomContrast((-0.3, 0.3), value_range=(-4, 4), name="contrast")(norm(x))
h = L.RandomCrop(8, 8, name="crop")(h)
h = L.Conv2D(4, 3, padding="same", activation="relu", name="conv")(h)
h = L.UpSampling2D(2, interpolation="bilinear", name="up")(h)
h = L.Resizing(10, 12, pad_to_aspect_ratio=True, fill_value=0.5, name="resize")(h)
out = L.Dense(1, name="out")(L.GlobalAveragePooling2D(name="gap")(h))
case("preprocess", keras.Model(x, out, name="preprocess"), xp, prng.uniform(-1, 1, (N, 1)).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# 13. A bag-of-embeddings text classifier (issue 18): int32 token ids, Embedding, GlobalAveragePooling1D. SGD with
# momentum: with Adam or RMSprop, Keras's TensorFlow backend squares each occurrence of a repeated id's gradient
# separately (a tf.IndexedSlices), where Osprey, like Keras on JAX or PyTorch, squares the gradient summed per row.
erng = np.random.default_rng(37)
xe = erng.integers(0, 30, (N, 7)).astype("int32")
tokens = keras.Input((7,), dtype="int32", name="tokens")
h = L.GlobalAveragePooling1D(name="gap")(L.Embedding(30, 6, name="embed")(tokens))
out = L.Dense(2, activation="softmax", name="probs")(L.Dense(8, activation="relu", name="hidden")(h))
case("embedding_bag", keras.Model(tokens, out, name="embedding_bag"), xe,
     (xe.sum(axis=1) % 2).astype("int32"),
     dict(optimizer=keras.optimizers.SGD(0.2, momentum=0.9), loss="sparse_categorical_crossentropy",
          metrics=["accuracy"]))

# 14-15. Recurrent models (issue 18): a text classifier on padded token ids (Embedding with mask_zero into an
# LSTM), and a GRU regressor on a time series (two GRUs, the first over every step). The cells' weights live
# under "cell" in the weights file.
trng = np.random.default_rng(41)
lengths = trng.integers(2, 9, N)
xt = np.where(np.arange(8)[None, :] < lengths[:, None], trng.integers(1, 25, (N, 8)), 0).astype("int32")
tokens = keras.Input((8,), dtype="int32", name="tokens")
h = L.LSTM(6, name="lstm")(L.Embedding(25, 5, mask_zero=True, name="embed")(tokens))
case("text_lstm", keras.Model(tokens, L.Dense(1, activation="sigmoid", name="out")(h), name="text_lstm"), xt,
     (xt.sum(axis=1) > lengths * 12).astype("float32").reshape(N, 1),
     dict(optimizer=keras.optimizers.SGD(0.3, momentum=0.8), loss="binary_crossentropy", metrics=["accuracy"]))
series = np.sin(np.linspace(0, 12, N * 10 + 1)).astype("float32")
xg = np.stack([series[i * 10:i * 10 + 10] for i in range(N)])[..., None] + trng.normal(0, 0.05, (N, 10, 1)).astype("float32")
yg = np.array([series[i * 10 + 10] for i in range(N)], "float32").reshape(N, 1)
m = keras.Sequential([keras.Input((10, 1), name="series"), L.GRU(5, return_sequences=True, name="gru_a"),
                      L.GRU(3, name="gru_b"), L.Dense(1, name="out")], name="gru_series")
case("gru_series", m, xg.astype("float32"), yg, dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# 16. Issue 18's text classifier: Embedding + Bidirectional LSTM + Dense (the masked token ids of case 14).
tokens = keras.Input((8,), dtype="int32", name="tokens")
h = L.Bidirectional(L.LSTM(4, name="lstm"), name="bi")(L.Embedding(25, 5, mask_zero=True, name="embed")(tokens))
case("text_bilstm", keras.Model(tokens, L.Dense(1, activation="sigmoid", name="out")(h), name="text_bilstm"), xt,
     (xt.sum(axis=1) > lengths * 12).astype("float32").reshape(N, 1),
     dict(optimizer=keras.optimizers.SGD(0.3, momentum=0.8), loss="binary_crossentropy", metrics=["accuracy"]))

# 17. Issue 18's small Transformer encoder: token and position embeddings (two int32 inputs), MultiHeadAttention,
# residual Adds, LayerNormalization, a feed-forward block, a pooled softmax classifier. SGD with momentum (case 13).
xrng = np.random.default_rng(43)
xtok = xrng.integers(0, 30, (N, 10)).astype("int32")
xpos = np.tile(np.arange(10, dtype="int32"), (N, 1))
tokens = keras.Input((10,), dtype="int32", name="tokens")
positions = keras.Input((10,), dtype="int32", name="positions")
h = L.Add(name="embed")([L.Embedding(30, 16, name="token_embed")(tokens), L.Embedding(10, 16, name="pos_embed")(positions)])
a = L.MultiHeadAttention(num_heads=2, key_dim=8, name="mha")(h, h)
h = L.LayerNormalization(epsilon=1e-6, name="norm1")(L.Add(name="res1")([h, a]))
f = L.Dense(16, name="ffn2")(L.Dense(32, activation="relu", name="ffn1")(h))
h = L.LayerNormalization(epsilon=1e-6, name="norm2")(L.Add(name="res2")([h, f]))
out = L.Dense(2, activation="softmax", name="probs")(L.GlobalAveragePooling1D(name="gap")(h))
case("transformer", keras.Model([tokens, positions], out, name="transformer"), [xtok, xpos],
     (xtok[:, :5].sum(axis=1) > xtok[:, 5:].sum(axis=1)).astype("int32"),
     dict(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="sparse_categorical_crossentropy",
          metrics=["accuracy"]))

# 18. A causal language model (issue 18): MultiHeadAttention with use_causal_mask (a call argument in the file),
# a softmax over the vocabulary at every step, sparse categorical crossentropy and accuracy over the tokens.
lrng = np.random.default_rng(47)
xl = lrng.integers(1, 20, (N, 9)).astype("int32")
tokens = keras.Input((8,), dtype="int32", name="tokens")
positions = keras.Input((8,), dtype="int32", name="positions")
h = L.Add(name="embed")([L.Embedding(20, 12, name="token_embed")(tokens), L.Embedding(8, 12, name="pos_embed")(positions)])
a = L.MultiHeadAttention(num_heads=2, key_dim=6, name="causal_mha")(h, h, use_causal_mask=True)
h = L.LayerNormalization(name="norm")(L.Add(name="res")([h, a]))
out = L.Dense(20, activation="softmax", name="next_token")(h)
case("causal_lm", keras.Model([tokens, positions], out, name="causal_lm"), [xl[:, :8], np.tile(np.arange(8, dtype="int32"), (N, 1))],
     xl[:, 1:], dict(optimizer=keras.optimizers.SGD(0.2, momentum=0.9), loss="sparse_categorical_crossentropy",
                     metrics=["accuracy"]))

# 19. Attention over recurrent states (issue 18): masked token ids into an LSTM over every step, Luong attention
# (scaled, causal) of the states over themselves and Bahdanau attention of the result over the states, pooled.
tokens = keras.Input((8,), dtype="int32", name="tokens")
h = L.LSTM(6, return_sequences=True, name="lstm")(L.Embedding(25, 5, mask_zero=True, name="embed")(tokens))
a = L.Attention(use_scale=True, name="luong")([h, h], use_causal_mask=True)
b = L.AdditiveAttention(name="bahdanau")([a, h])
out = L.Dense(1, activation="sigmoid", name="out")(L.GlobalAveragePooling1D(name="gap")(b))
case("rnn_attention", keras.Model(tokens, out, name="rnn_attention"), xt,
     (xt.sum(axis=1) > lengths * 12).astype("float32").reshape(N, 1),
     dict(optimizer=keras.optimizers.SGD(0.3, momentum=0.8), loss="binary_crossentropy", metrics=["accuracy"]))

# 20. GroupQueryAttention (issue 18): 4 query heads over 2 key/value heads, causal, on float sequences; Adam.
grng = np.random.default_rng(53)
xq = grng.normal(0, 1, (N, 6, 8)).astype("float32")
seq = keras.Input((6, 8), name="seq")
a = L.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2, name="gqa")(seq, seq, use_causal_mask=True)
out = L.Dense(2, name="out")(L.GlobalAveragePooling1D(name="gap")(L.Add(name="res")([seq, a])))
case("gqa", keras.Model(seq, out, name="gqa"), xq, grng.normal(0, 1, (N, 2)).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# 21. TimeDistributed (issue 18): a Dense over every step of a sequence, a BatchNormalization per step (each step's
# batch statistics apart, as Keras's loop over the steps), an LSTM.
drng = np.random.default_rng(59)
xd = drng.normal(0, 1, (N, 5, 3)).astype("float32")
seq = keras.Input((5, 3), name="seq")
h = L.TimeDistributed(L.Dense(6, activation="relu", name="per_step"), name="td_dense")(seq)
h = L.TimeDistributed(L.BatchNormalization(name="bn"), name="td_bn")(h)
out = L.Dense(1, name="out")(L.LSTM(4, name="lstm")(h))
case("time_distributed", keras.Model(seq, out, name="time_distributed"), xd, drng.normal(0, 1, (N, 1)).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# 22. An encoder-decoder (issue 18): a Bidirectional LSTM encoder's states (return_state: forward h, c, backward
# h, c), joined by Concatenate, start an LSTM decoder (initial_state) that a Dense reads at every step.
srng = np.random.default_rng(61)
xe = srng.normal(0, 1, (N, 6, 3)).astype("float32")
xdec = srng.normal(0, 1, (N, 4, 2)).astype("float32")
enc_in = keras.Input((6, 3), name="encoder_inputs")
dec_in = keras.Input((4, 2), name="decoder_inputs")
_, fh, fc, bh, bc = L.Bidirectional(L.LSTM(4, return_state=True, name="lstm"), name="encoder")(enc_in)
h0 = L.Concatenate(name="h0")([fh, bh])
c0 = L.Concatenate(name="c0")([fc, bc])
d = L.LSTM(8, return_sequences=True, name="decoder")(dec_in, initial_state=[h0, c0])
case("seq2seq", keras.Model([enc_in, dec_in], L.Dense(2, name="out")(d), name="seq2seq"), [xe, xdec],
     np.tanh(np.cumsum(xdec, axis=1) * 0.5 + xe[:, -1:, :2]).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# 23. StackedRNNCells (issue 18): keras.layers.RNN over an LSTMCell and a GRUCell, on masked token ids.
tokens = keras.Input((8,), dtype="int32", name="tokens")
h = L.RNN([L.LSTMCell(5, name="lower"), L.GRUCell(4, name="upper")], name="stacked")(
    L.Embedding(25, 5, mask_zero=True, name="embed")(tokens))
case("stacked_cells", keras.Model(tokens, L.Dense(1, activation="sigmoid", name="out")(h), name="stacked_cells"), xt,
     (xt.sum(axis=1) > lengths * 12).astype("float32").reshape(N, 1),
     dict(optimizer=keras.optimizers.SGD(0.3, momentum=0.8), loss="binary_crossentropy", metrics=["accuracy"]))

# 24. Masking before recurrent layers (issue 18): float sequences whose padded steps are all -1. Keras writes the
# mask as NotEqual and Any operation nodes and passes it to each RNN as its `mask` argument.
mrng = np.random.default_rng(67)
mlen = mrng.integers(2, 7, N)
valid = np.arange(6)[None, :] < mlen[:, None]
xm = np.where(valid[..., None], mrng.normal(0, 1, (N, 6, 3)), -1.0).astype("float32")
seq = keras.Input((6, 3), name="seq")
h = L.LSTM(5, return_sequences=True, name="lstm")(L.Masking(mask_value=-1.0, name="mask")(seq))
h = L.GRU(3, go_backwards=True, name="gru")(h)
case("masked_series", keras.Model(seq, L.Dense(1, name="out")(h), name="masked_series"), xm,
     (np.where(valid, xm.sum(axis=2), 0).sum(axis=1) / mlen).astype("float32").reshape(N, 1),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# 25. Attention over other axes (issue 18): axial attention over a grid of feature vectors, along its rows
# (attention_axes=(2,)) and then over the whole grid (attention_axes=(1, 2)), residual Adds, pooled; Adam.
arng = np.random.default_rng(71)
xg = arng.normal(0, 1, (N, 3, 4, 5)).astype("float32")
grid = keras.Input((3, 4, 5), name="grid")
h = L.Add(name="res1")([grid, L.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=(2,), name="rows")(grid, grid)])
h = L.Add(name="res2")([h, L.MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=(1, 2), name="whole")(h, h)])
case("axial_attention", keras.Model(grid, L.Dense(2, name="out")(L.GlobalAveragePooling2D(name="gap")(h)),
                                    name="axial_attention"),
     xg, np.stack([xg[:, :, :, 0].mean(axis=(1, 2)), xg.max(axis=(1, 2, 3))], axis=1).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# 26. An attention mask given as a model input (issue 18): MultiHeadAttention(seq, seq, attention_mask=mask), the
# mask a (steps, steps) input of 0 and 1 (Keras writes it as the call's attention_mask argument).
krng = np.random.default_rng(73)
xs = krng.normal(0, 1, (N, 6, 4)).astype("float32")
xmask = (krng.uniform(0, 1, (N, 6, 6)) > 0.4).astype("float32")
xmask[:, np.arange(6), np.arange(6)] = 1.0
seq = keras.Input((6, 4), name="seq")
mask_in = keras.Input((6, 6), name="attention_mask")
a = L.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")(seq, seq, attention_mask=mask_in)
out = L.Dense(1, name="out")(L.GlobalAveragePooling1D(name="gap")(L.Add(name="res")([seq, a])))
case("attention_mask_input", keras.Model([seq, mask_in], out, name="attention_mask_input"), [xs, xmask],
     (xs * xmask.mean(axis=2, keepdims=True)).sum(axis=(1, 2)).astype("float32").reshape(N, 1),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# 27. Adaptive pooling (issue 17): a feature map pooled to fixed sizes, average (3, 2) and max 2 (channels_first:
# the rows as channels), and the image as a sequence max-pooled to 5 steps; concatenated into a Dense. Adam.
prng = np.random.default_rng(79)
xi = prng.normal(0, 1, (N, 8, 9, 3)).astype("float32")
img = keras.Input((8, 9, 3), name="image")
feat = L.Conv2D(4, 3, padding="same", activation="relu", name="conv")(img)
pa = L.Flatten(name="flat_avg")(L.AdaptiveAveragePooling2D((3, 2), name="adaptive_avg")(feat))
pm = L.Flatten(name="flat_max")(L.AdaptiveMaxPooling2D(2, data_format="channels_first", name="adaptive_max")(feat))
ps = L.Flatten(name="flat_seq")(L.AdaptiveMaxPooling1D(5, name="adaptive_seq")(L.Reshape((72, 3), name="seq")(img)))
out = L.Dense(2, name="out")(L.Concatenate(name="cat")([pa, pm, ps]))
case("adaptive_pooling", keras.Model(img, out, name="adaptive_pooling"), xi,
     np.stack([xi.mean(axis=(1, 2, 3)), xi.max(axis=(1, 2, 3))], axis=1).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# Binned features: Discretization with given boundaries (int ids) counted by CategoryEncoding, and an adapted
# Discretization (its boundaries in the config) one-hot encoded.
crng = np.random.default_rng(41)
xc = crng.normal(0, 1, (N, 4)).astype("float32")
feats = keras.Input((4,), name="features")
ids = L.Discretization(bin_boundaries=[-0.5, 0.0, 0.5], name="bins")(feats)
counts = L.CategoryEncoding(4, output_mode="count", name="counts")(ids)
tertiles = L.Discretization(num_bins=3, output_mode="one_hot", name="tertiles")
tertiles.adapt(xc)
h = L.Concatenate(name="cat")([counts, L.Flatten(name="flat")(tertiles(feats))])
out = L.Dense(2, name="out")(h)
case("categorical", keras.Model(feats, out, name="categorical"), xc,
     np.stack([xc.sum(axis=1), (xc > 0).mean(axis=1)], axis=1).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.05), loss="mse", metrics=["mae"]))

# Frames through ConvLSTM2D (return_sequences, same padding) and ConvLSTM1D over each frame's rows (channels_first,
# strides) after a reshape, as Keras's next-frame example stacks them.
lrng = np.random.default_rng(43)
xl = lrng.uniform(0, 1, (N, 3, 5, 5, 1)).astype("float32")
frames = keras.Input((3, 5, 5, 1), name="frames")
h = L.ConvLSTM2D(3, 3, padding="same", return_sequences=True, name="conv_lstm_a")(frames)
h = L.Reshape((3, 5, 15), name="rows")(h)
h = L.ConvLSTM1D(2, 2, strides=2, data_format="channels_first", name="conv_lstm_b")(h)
out = L.Dense(1, name="out")(L.Flatten(name="flat")(h))
case("conv_lstm", keras.Model(frames, out, name="conv_lstm"), xl,
     xl.mean(axis=(1, 2, 3, 4)).reshape(N, 1).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# Color augmentations in front of a small CNN, each with draws that leave it one choice (fit applies them, predict
# and evaluate do not, AutoContrast does always): posterization first (on the file's exact values, as its rounding
# would magnify any difference), then AutoContrast, degeneration, saturation, sharpening, a blur, solarization,
# inversion and grayscale. (Keras 3.15's Equalization cannot be called on a symbolic tensor: its output spec is its input,
# which makes a cycle in a functional model.)
krng = np.random.default_rng(59)
xk = krng.uniform(0, 255, (N, 8, 8, 3)).astype("float32")
image = keras.Input((8, 8, 3), name="image")
h = L.RandomPosterization((4, 4), name="posterize")(image)
h = L.AutoContrast(name="autocontrast")(h)
h = L.RandomColorDegeneration((0.5, 0.5), name="degenerate")(h)
h = L.RandomSaturation((0.6, 0.6), name="saturate")(h)
h = L.RandomSharpness((0.8, 0.8), name="sharpen")(h)
h = L.RandomGaussianBlur(factor=(1, 1), sigma=(0.5, 0.5), name="blur")(h)
h = L.Solarization(name="solarize")(h)
h = L.RandomInvert((1, 1), name="invert")(h)
h = L.RandomGrayscale(1.0, name="gray")(h)
h = L.Conv2D(4, 3, activation="relu", name="conv")(L.Rescaling(1 / 255, name="scale")(h))
out = L.Dense(1, name="out")(L.GlobalAveragePooling2D(name="gap")(h))
case("color", keras.Model(image, out, name="color"), xk,
     (xk.mean(axis=(1, 2, 3)) / 255).reshape(N, 1).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"]))

# Spectral normalization (GANs' discriminators): a Conv2D and a Dense wrapped, their kernels divided by their
# largest singular value in every training step; vector_u saved beside the wrapped layer's weights.
srng = np.random.default_rng(67)
xs = srng.normal(0, 1, (N, 6, 6, 2)).astype("float32")
image = keras.Input((6, 6, 2), name="image")
h = L.SpectralNormalization(L.Conv2D(3, 3, activation="relu", name="conv"), power_iterations=2, name="sn_conv")(image)
h = L.SpectralNormalization(L.Dense(4, activation="tanh", name="hidden"), name="sn_hidden")(L.Flatten(name="flat")(h))
out = L.Dense(1, activation="sigmoid", name="out")(h)
case("spectral", keras.Model(image, out, name="spectral"), xs, (xs.mean(axis=(1, 2, 3)) > 0).astype("float32").reshape(N, 1),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy", metrics=["accuracy"]))

# Audio: a MelSpectrogram of the raw signal beside an STFTSpectrogram (its DFT kernels trained with the rest), a
# Conv1D over the spectrogram frames.
arng = np.random.default_rng(73)
xa = arng.normal(0, 0.5, (N, 256)).astype("float32")
xa[: N // 2] += np.sin(np.arange(256) * 0.8).astype("float32")
wave = keras.Input((256,), name="wave")
mel = L.MelSpectrogram(fft_length=64, sequence_stride=32, num_mel_bins=12, sampling_rate=8000, name="mel")(wave)
mel = L.GlobalAveragePooling1D(name="mel_pool")(mel)
spec = L.STFTSpectrogram(mode="log", frame_length=32, frame_step=16, window="hamming", name="stft")(
    L.Reshape((256, 1), name="channel")(wave))
spec = L.GlobalAveragePooling1D(name="spec_pool")(L.Conv1D(4, 3, activation="relu", name="conv")(spec))
out = L.Dense(1, activation="sigmoid", name="out")(L.Concatenate(name="both")([mel, spec]))
case("audio", keras.Model(wave, out, name="audio"), xa, (np.arange(N) < N // 2).astype("float32").reshape(N, 1),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy", metrics=["accuracy"]))

# Hashed categorical ids: the bins feed an Embedding, a salted multi-hot hashing beside it, and the one-hot cross of
# two more features.
hrng = np.random.default_rng(83)
hids = hrng.integers(0, 1000, (N, 3)).astype("int64")
ha = hrng.integers(0, 5, (N, 1)).astype("int64")
hb = hrng.integers(0, 3, (N, 1)).astype("int64")
feat = keras.Input((3,), dtype="int64", name="ids")
fa = keras.Input((1,), dtype="int64", name="a")
fb = keras.Input((1,), dtype="int64", name="b")
h = L.Flatten(name="flat")(L.Embedding(16, 3, name="embed")(L.Hashing(num_bins=16, name="hash")(feat)))
m = L.Hashing(num_bins=8, output_mode="multi_hot", salt=[5, 9], mask_value=0, name="hash_multi")(feat)
x = L.HashedCrossing(num_bins=6, output_mode="one_hot", name="cross")((fa, fb))
out = L.Dense(1, activation="sigmoid", name="out")(L.Concatenate(name="all")([h, m, x]))
case("hashing", keras.Model([feat, fa, fb], out, name="hashing"), [hids, ha, hb],
     ((hids.sum(axis=1) + ha[:, 0] * hb[:, 0]) % 2).astype("float32").reshape(N, 1),
     # SGD: Keras's Adam on TensorFlow squares an Embedding's IndexedSlices gradient per occurrence of an id, not
     # per row (sum of squares where an id repeats in a batch), which Osprey's dense gradients do not reproduce.
     dict(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="binary_crossentropy", metrics=["accuracy"]))

# Integer lookups: an adapted vocabulary (an asset of the file) into an Embedding, a given one as multi_hot counts
# (its vocabulary in the config), and adapted tf_idf weights (the layer's "idf_weights" in the weights file).
lrng = np.random.default_rng(97)
lids = lrng.integers(0, 30, (N, 4)).astype("int64")
lids[::5, 3] = 0  # the mask token
ids = keras.Input((4,), dtype="int64", name="ids")
lookup = L.IntegerLookup(mask_token=0, max_tokens=16, name="lookup")
lookup.adapt(lids)
tfidf = L.IntegerLookup(output_mode="tf_idf", name="tfidf")
tfidf.adapt(lids)
h = L.Flatten(name="flat")(L.Embedding(16, 3, name="embed")(lookup(ids)))
m = L.IntegerLookup(vocabulary=[3, 7, 11, 19, 23], output_mode="multi_hot", name="given")(ids)
out = L.Dense(1, activation="sigmoid", name="out")(
    L.Concatenate(name="all")([h, L.Dense(2, name="hot")(m), L.Dense(2, name="weighted")(tfidf(ids))]))
case("lookup", keras.Model(ids, out, name="lookup"), lids, (lids.sum(axis=1) % 2).astype("float32").reshape(N, 1),
     dict(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="binary_crossentropy", metrics=["accuracy"]))

# Transcription with the CTC loss: frames through a Conv1D and a bidirectional GRU into per-frame logits, integer
# label rows padded with the blank (0); the file's compile_config holds keras.losses.CTC.
crng = np.random.default_rng(131)
cx = crng.normal(0, 1, (N, 10, 6)).astype("float32")
cy = np.zeros((N, 4), "int32")
for i in range(N):
    n_labels = int(crng.integers(1, 5))
    cy[i, :n_labels] = crng.integers(1, 5, n_labels)
frames = keras.Input((10, 6), name="frames")
h = L.Conv1D(8, 3, padding="same", activation="relu", name="conv")(frames)
h = L.Bidirectional(L.GRU(8, return_sequences=True, name="gru"), name="bigru")(h)
case("ctc", keras.Model(frames, L.Dense(5, name="logits")(h), name="ctc"), cx, cy,
     dict(optimizer=keras.optimizers.Adam(0.01), loss=keras.losses.CTC()))

# Keras's other losses and metrics in compile_config: a two-output classifier (binary focal crossentropy with class
# balancing, categorical focal crossentropy; confusion counts, F-scores, IoUs, hinges), a Poisson regressor (R2,
# MSLE, cosine similarity, correlations, log-cosh, MAPE) and a Tversky-trained segmenter.
qrng = np.random.default_rng(151)
qx = qrng.normal(0, 1, (N, 6)).astype("float32")
qa = keras.Input((6,), name="features")
qh = L.Dense(8, activation="tanh", name="hidden")(qa)
q_bin = L.Dense(3, activation="sigmoid", name="tags")(qh)
q_cat = L.Dense(4, activation="softmax", name="kind")(qh)
M = keras.metrics
case("catalogue_classifier", keras.Model(qa, [q_bin, q_cat], name="catalogue_classifier"), qx,
     [qrng.integers(0, 2, (N, 3)).astype("float32"), np.eye(4, dtype="float32")[qrng.integers(0, 4, N)]],
     dict(optimizer=keras.optimizers.Adam(0.02),
          loss=[keras.losses.BinaryFocalCrossentropy(apply_class_balancing=True, gamma=1.5),
                keras.losses.CategoricalFocalCrossentropy(alpha=0.5)],
          loss_weights=[1.0, 0.5],
          metrics=[[M.TruePositives(), M.FalseNegatives(thresholds=0.3), M.F1Score(average="micro", threshold=0.5),
                    M.BinaryIoU(), "squared_hinge", M.RecallAtPrecision(0.5), M.BinaryCrossentropy(label_smoothing=0.1)],
                   [M.CategoricalHinge(), M.OneHotMeanIoU(num_classes=4), M.FBetaScore(average="weighted", beta=2.0),
                    M.F1Score(average="macro"), "categorical_crossentropy", M.KLDivergence()]]))
rx = qrng.normal(0, 1, (N, 5)).astype("float32")
ry = np.abs(qrng.normal(1, 1, (N, 3))).astype("float32")
ra = keras.Input((5,), name="x")
case("catalogue_regressor", keras.Model(ra, L.Dense(3, activation="softplus", name="rate")(L.Dense(6, activation="relu", name="h")(ra)),
                                        name="catalogue_regressor"), rx, ry,
     dict(optimizer=keras.optimizers.RMSprop(0.01), loss="poisson",
          metrics=[M.R2Score(), "msle", M.CosineSimilarity(), M.PearsonCorrelation(), M.ConcordanceCorrelation(),
                   M.LogCoshError(), "mape", M.R2Score(class_aggregation="variance_weighted_average", name="r2_vw"),
                   M.Poisson()]))
sx = qrng.uniform(0, 1, (N, 6, 6, 1)).astype("float32")
sy = (sx > 0.6).astype("float32")
sa = keras.Input((6, 6, 1), name="image")
sh = L.Conv2D(4, 3, padding="same", activation="relu", name="conv")(sa)
case("catalogue_segmenter", keras.Model(sa, L.Conv2D(1, 1, activation="sigmoid", name="mask")(sh), name="catalogue_segmenter"),
     sx, sy, dict(optimizer=keras.optimizers.Adam(0.02), loss=keras.losses.Tversky(alpha=0.7, beta=0.3, axis=(1, 2, 3)),
                  metrics=[M.BinaryIoU(target_class_ids=[1], threshold=0.5), M.MeanIoU(num_classes=2), M.Accuracy(),
                           M.SpecificityAtSensitivity(0.8, num_thresholds=20)]))
sd = qrng.uniform(0, 1, (N, 6, 6, 1)).astype("float32")
case("catalogue_dice", keras.Model(sa, L.Conv2D(1, 1, activation="sigmoid", name="mask")(sh), name="catalogue_dice"),
     sd, (sd > 0.5).astype("float32"), dict(optimizer="adam", loss=keras.losses.Dice(), metrics=[M.PrecisionAtRecall(0.7),
                                                                                                   M.SensitivityAtSpecificity(0.6)]))

# tf.image.resize's other methods inside a model: Resizing with bicubic and antialias (a downscale), UpSampling2D
# with lanczos3 and bicubic, gradients through them into the convolutions (TensorFlow has none for area).
ix = qrng.uniform(0, 1, (N, 10, 12, 2)).astype("float32")
ia = keras.Input((10, 12, 2), name="image")
ih = L.Resizing(5, 6, interpolation="bicubic", antialias=True, name="down")(ia)
ih = L.Conv2D(3, 3, padding="same", activation="tanh", name="conv")(ih)
ih = L.Add(name="up_sum")([L.UpSampling2D((2, 2), interpolation="lanczos3", name="up_lanczos")(ih),
                           L.UpSampling2D((2, 2), interpolation="bicubic", name="up_bicubic")(ih)])
ih = L.GlobalAveragePooling2D(name="pool")(L.Conv2D(2, 3, name="conv2")(ih))
case("resize_methods", keras.Model(ia, L.Dense(1, name="out")(ih), name="resize_methods"), ix,
     ix.mean(axis=(1, 2, 3))[:, None] * 2, dict(optimizer=keras.optimizers.Adam(0.01), loss="mse"))

# compile(weighted_metrics=...) and Precision/Recall with class_id and top_k in a file (their own generator).
wrng = np.random.default_rng(41)
wx = wrng.uniform(-1, 1, (N, 6)).astype("float32")
wy = np.eye(4, dtype="float32")[wrng.integers(0, 4, N)]
wa = keras.Input((6,), name="x")
wo = L.Dense(4, activation="softmax", name="probs")(L.Dense(8, activation="relu", name="hidden")(wa))
case("weighted_metrics", keras.Model(wa, wo, name="weighted_metrics"), wx, wy,
     dict(optimizer=keras.optimizers.SGD(0.1), loss="categorical_crossentropy",
          metrics=["accuracy", M.Precision(class_id=1, name="precision_1"), M.Recall(top_k=2, name="recall_top2")],
          weighted_metrics=["accuracy", M.AUC(num_thresholds=50, name="auc"),
                            M.PrecisionAtRecall(0.5, class_id=2, name="p_at_r_2")]))

# AUC's options in a file: multi_label, the PR and PR-gain curves, a summation method, thresholds of one's own
# (label_weights are left out: Keras 3.15 writes them as a tensor its own loader refuses).
arng = np.random.default_rng(43)
ax = arng.uniform(-1, 1, (N, 5)).astype("float32")
ay = (arng.uniform(size=(N, 3)) < 0.5).astype("float32")
aa = keras.Input((5,), name="x")
ao = L.Dense(3, activation="sigmoid", name="labels")(L.Dense(6, activation="tanh", name="hidden")(aa))
case("auc_options", keras.Model(aa, ao, name="auc_options"), ax, ay,
     dict(optimizer=keras.optimizers.SGD(0.2), loss="binary_crossentropy",
          metrics=[M.AUC(multi_label=True, num_labels=3, curve="PR", name="ml_pr_auc"),
                   M.AUC(curve="PRGAIN", summation_method="majoring", num_thresholds=30, name="prgain_auc"),
                   M.AUC(thresholds=[0.6, 0.2, 0.45], summation_method="minoring", name="own_thresholds")],
          weighted_metrics=[M.AUC(multi_label=True, name="w_ml_auc")]))

# A small language model whose output layer is its input embedding (keras.layers.ReversibleEmbedding called on the
# token ids and again with reverse=True on the hidden states): tied with a logit soft cap, and untied (its own
# reverse_embeddings) with mask_zero feeding a GRU. SGD: the embedding's gather gradient is an IndexedSlices on
# TensorFlow (see "hashing").
vrng = np.random.default_rng(167)
vids = vrng.integers(1, 12, (N, 6)).astype("int32")
vnext = np.roll(vids, -1, axis=1)
tokens = keras.Input((6,), dtype="int32", name="tokens")
tied = L.ReversibleEmbedding(12, 6, logit_soft_cap=4.0, name="tied")
vh = L.Dense(6, activation="tanh", name="mix")(tied(tokens))
case("reversible_tied", keras.Model(tokens, tied(vh, reverse=True), name="reversible_tied"), vids, vnext,
     dict(optimizer=keras.optimizers.SGD(0.5, momentum=0.9),
          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["sparse_categorical_accuracy"]))
vpad = vids.copy()
vpad[::3, 4:] = 0  # padding: masked for the GRU
untied = L.ReversibleEmbedding(12, 5, tie_weights=False, mask_zero=True, name="untied")
vh = L.GRU(5, return_sequences=True, name="gru")(untied(tokens))
case("reversible_untied", keras.Model(tokens, untied(vh, reverse=True), name="reversible_untied"), vpad,
     np.roll(vpad, -1, axis=1), dict(optimizer=keras.optimizers.SGD(0.5),
                                     loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)))

if ONLY:  # the other cases' entries as they were
    with open(os.path.join(HERE, "..", "data", "keras_files.json")) as f:
        cases = {**json.load(f), **{k: v for k, v in cases.items() if k in ONLY}}
with open(os.path.join(HERE, "..", "data", "keras_files.json"), "w") as f:
    json.dump(cases, f)
print("wrote", sorted(cases))
