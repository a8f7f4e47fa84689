# Regenerates tests/data/keras_attention.json: Keras 3's attention layers (issue 18) with weights fixed here --
# MultiHeadAttention in both of Keras 3's computations (dot_product_attention; the Softmax layer with dropout or
# scores), with input masks, a causal mask, an explicit mask with a fully masked query, a sliding window, a gate
# and an output shape; EinsumDense; the Softmax layer with a mask; Add's merge of masks -- forward values and the
# gradients of sum(output * w) for the inputs and every weight, and a masked self-attention classifier trained two
# epochs. tests/keras/test_attention_layers.cpp checks Osprey against it.
# Run: python3 tests/keras/keras_attention_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import layers as L
from keras.src import backend

rng = np.random.default_rng(53)
ref = {}


def arr(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype("float32")


def tolist(v):
    return None if v is None else np.asarray(tf.convert_to_tensor(v)).tolist()


def set_random_weights(layer):
    layer.set_weights([arr(*w.shape) for w in layer.get_weights()])
    return [w.tolist() for w in layer.get_weights()]


def mha_case(name, layer, query, value, key=None, call_kwargs=None, scores=False, masks=None):
    """Forward and gradients of one MultiHeadAttention call (masks: Keras masks attached to the inputs)."""
    call_kwargs = dict(call_kwargs or {})
    q, v = tf.constant(query), tf.constant(value)
    k = None if key is None else tf.constant(key)
    layer(q, v, key=k, **{kk: vv for kk, vv in call_kwargs.items() if kk != "training"})  # builds
    weights = set_random_weights(layer)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(q); tape.watch(v)
        if k is not None:
            tape.watch(k)
        # Keras masks travel on the tensors (Keras's call reads the query's from it and ignores a query_mask
        # argument); copies, so that the gradients still reach q and v.
        qq, vv = tf.identity(q), tf.identity(v)
        if masks:
            backend.set_keras_mask(qq, tf.constant(masks["query_mask"]))
            backend.set_keras_mask(vv, tf.constant(masks["value_mask"]))
        out = layer(qq, vv, key=k, return_attention_scores=scores, **call_kwargs)
        y, s = (out if scores else (out, None))
        w = arr(*y.shape)
        loss = tf.reduce_sum(y * w)
    grads = tape.gradient(loss, [q, v] + ([k] if k is not None else []) + layer.trainable_weights)
    ref[name] = {"query": query.tolist(), "value": value.tolist(), "key": None if key is None else key.tolist(),
                 "weights": weights, "weight_paths": [x.path for x in layer.weights], "w": w.tolist(),
                 "y": tolist(y), "scores": tolist(s), "grads": [tolist(g) for g in grads],
                 "config": layer.get_config(),
                 "masks": {kk: np.asarray(vv).astype("float32").tolist() for kk, vv in (masks or {}).items()},
                 "call": {kk: (np.asarray(vv).astype("float32").tolist() if kk == "attention_mask" else vv)
                          for kk, vv in call_kwargs.items()}}


B, T, S = 2, 4, 5
# 1. Self-attention, no masks (dot_product_attention).
x = arr(B, T, 6)
mha_case("self", L.MultiHeadAttention(num_heads=2, key_dim=3), x, x)
# 2. Cross-attention with a key, value_dim, output_shape, a gate; the Softmax path (scores returned).
mha_case("cross_scores", L.MultiHeadAttention(num_heads=3, key_dim=2, value_dim=4, output_shape=(7,), use_gate=True),
         arr(B, T, 6), arr(B, S, 5), arr(B, S, 3), scores=True)
# 3. An explicit mask in which query 1 of sample 0 attends to nothing, plus the causal band: both computations.
am = (rng.uniform(0, 1, (B, T, S)) > 0.3)
am[0, 1, :] = False
for scores in (False, True):
    mha_case("masked_scores" if scores else "masked", L.MultiHeadAttention(num_heads=2, key_dim=3),
             arr(B, T, 6), arr(B, S, 6), call_kwargs={"attention_mask": am, "use_causal_mask": True}, scores=scores)
# 4. Input masks (a padded query and value), as Embedding(mask_zero) gives them.
qm = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], bool)
vm = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 0]], bool)
mha_case("input_masks", L.MultiHeadAttention(num_heads=2, key_dim=3), arr(B, T, 6), arr(B, S, 6),
         masks={"query_mask": qm, "value_mask": vm})
# 5. Dropout at inference (the Softmax path, no scores asked), a sliding window, no bias.
mha_case("dropout_window", L.MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.3, sliding_window=2, use_bias=False),
         arr(B, T, 6), arr(B, T, 6), call_kwargs={"training": False})

# 6. GroupQueryAttention (4 query heads sharing 2 key/value heads): dot_product_attention with a causal mask; the
# Softmax path with scores and input masks.
mha_case("gqa_causal", L.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2), arr(B, T, 6),
         arr(B, S, 5), call_kwargs={"use_causal_mask": True})
mha_case("gqa_scores", L.GroupQueryAttention(head_dim=2, num_query_heads=6, num_key_value_heads=3, use_gate=True),
         arr(B, T, 6), arr(B, S, 6), scores=True, masks={"query_mask": qm, "value_mask": vm})

# Attention (dot with and without scale, concat) and AdditiveAttention: masks given as Keras's mask list, the causal
# band, scores returned.
def dense_attention_case(name, layer, query, value, key=None, masks=None, causal=False):
    q, v = tf.constant(query), tf.constant(value)
    inputs = [q, v] + ([tf.constant(key)] if key is not None else [])
    layer(inputs)
    weights = set_random_weights(layer) if layer.weights else []
    mask = [tf.constant(m) for m in masks] if masks else None
    with tf.GradientTape(persistent=True) as tape:
        for t in inputs:
            tape.watch(t)
        y, s = layer(inputs, mask=mask, return_attention_scores=True, use_causal_mask=causal)
        w = arr(*y.shape)
        loss = tf.reduce_sum(y * w)
    grads = tape.gradient(loss, inputs + layer.trainable_weights)
    ref[name] = {"query": query.tolist(), "value": value.tolist(), "key": None if key is None else key.tolist(),
                 "weights": weights, "w": w.tolist(), "y": tolist(y), "scores": tolist(s),
                 "grads": [tolist(g) for g in grads], "config": layer.get_config(), "causal": causal,
                 "masks": [np.asarray(m).astype("float32").tolist() for m in masks] if masks else None}


dense_attention_case("attention_dot", L.Attention(), arr(B, T, 6), arr(B, S, 6), masks=[qm, vm])
dense_attention_case("attention_scaled_causal", L.Attention(use_scale=True), arr(B, T, 6), arr(B, S, 3), arr(B, S, 6),
                     causal=True)
dense_attention_case("attention_concat", L.Attention(use_scale=True, score_mode="concat"), arr(B, T, 6), arr(B, S, 6),
                     masks=[qm, vm])
dense_attention_case("additive", L.AdditiveAttention(), arr(B, T, 6), arr(B, S, 6), masks=[qm, vm], causal=True)

# EinsumDense with a bias over part of the new axes and an activation.
ed = L.EinsumDense("abc,cde->abde", output_shape=(None, 3, 2), bias_axes="e", activation="tanh")
xe = arr(B, T, 5)
ed(xe)
ew = set_random_weights(ed)
with tf.GradientTape() as tape:
    xt = tf.constant(xe); tape.watch(xt)
    ye = ed(xt); we = arr(*ye.shape); le = tf.reduce_sum(ye * we)
ge = tape.gradient(le, [xt] + ed.trainable_weights)
ref["einsum_dense"] = {"x": xe.tolist(), "weights": ew, "w": we.tolist(), "y": tolist(ye), "grads": [tolist(g) for g in ge],
                       "config": ed.get_config()}

# The Softmax layer with a mask broadcast over the last axis's rows.
xs = arr(B, T, S, lo=-3, hi=3)
ms = rng.uniform(0, 1, (B, T, S)) > 0.4
ms[1, 2, :] = False
ref["softmax_mask"] = {"x": xs.tolist(), "mask": ms.astype("float32").tolist(),
                       "y": tolist(L.Softmax()(xs, mask=ms))}

# A masked self-attention classifier: Embedding(mask_zero) -> MHA (the query's mask passes on) -> residual Add of
# two masked tensors (the masks merge) -> LayerNormalization -> masked average -> Dense. Two epochs of SGD with
# momentum (with Adam, Keras's TensorFlow backend squares a repeated token id's gradients one by one: see
# keras_model_files_reference.py's case 13).
N, V = 16, 12
lengths = rng.integers(2, 7, N)
xt = np.where(np.arange(6)[None, :] < lengths[:, None], rng.integers(1, V, (N, 6)), 0).astype("int32")
yt = (xt.max(axis=1) > 8).astype("float32").reshape(N, 1)
tokens = keras.Input((6,), dtype="int32", name="tokens")
e = L.Embedding(V, 8, mask_zero=True, name="embed")(tokens)
a = L.MultiHeadAttention(num_heads=2, key_dim=4, name="mha")(e, e)
h = L.LayerNormalization(name="norm")(L.Add(name="residual")([e, a]))
out = L.Dense(1, activation="sigmoid", name="out")(L.GlobalAveragePooling1D(name="gap")(h))
model = keras.Model(tokens, out)
model.set_weights([rng.uniform(-0.5, 0.5, wt.shape).astype("float32") for wt in model.get_weights()])
init = [wt.tolist() for wt in model.get_weights()]
model.compile(optimizer=keras.optimizers.SGD(0.3, momentum=0.9), loss="binary_crossentropy", metrics=["accuracy"])
hist = model.fit(xt, yt, epochs=2, batch_size=8, shuffle=False, verbose=0)
ref["classifier"] = {"x": xt.tolist(), "y": yt.tolist(), "init": init, "history": hist.history,
                     "weights_after": [wt.tolist() for wt in model.get_weights()],
                     "predict": model.predict(xt, verbose=0).tolist()}

# Concatenate's merge of masks: along the features (kept where any input is; an unmasked input keeps everything)
# and along the steps (the masks joined), each seen by a masked average.
tok = keras.Input((6,), dtype="int32", name="tokens")
e1 = L.Embedding(V, 4, mask_zero=True, name="e1")(tok)
e2 = L.Embedding(V, 4, name="e2")(tok)
d1 = L.Dense(3, name="d1")(e1)
feat_masked = L.GlobalAveragePooling1D(name="g1")(L.Concatenate(name="c1")([e1, d1]))
feat_mixed = L.GlobalAveragePooling1D(name="g2")(L.Concatenate(name="c2")([e1, e2]))
steps = L.GlobalAveragePooling1D(name="g3")(L.Concatenate(axis=1, name="c3")([e1, e2]))
model = keras.Model(tok, [feat_masked, feat_mixed, steps])
model.set_weights([rng.uniform(-0.5, 0.5, wt.shape).astype("float32") for wt in model.get_weights()])
ref["concat_masks"] = {"x": xt[:5].tolist(), "weights": [wt.tolist() for wt in model.get_weights()],
                       "outputs": [o.tolist() for o in model.predict(xt[:5], verbose=0)]}

# Attention over other axes than the steps (attention_axes; Keras's Softmax path, since the projected query is not
# rank 4): images' rows (axis 2, axis 1 a batch axis), both axes jointly with scores, axis 1 of a rank-4 input with
# the causal band and an explicit mask, and a rank-5 input with its axes given out of order, cross-attention with a
# key and an output shape.
mha_case("axes_rows", L.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=(2,)), arr(B, 3, 4, 5),
         arr(B, 3, 4, 5))
mha_case("axes_joint_scores", L.MultiHeadAttention(num_heads=2, key_dim=2, value_dim=3, attention_axes=(1, 2),
                                                   use_gate=True),
         arr(B, 3, 2, 5), arr(B, 2, 4, 6), scores=True)
am4 = rng.uniform(0, 1, (B, 4, 3, 3)) > 0.3
am4[1, 2, 1, :] = False
mha_case("axes_first_causal_mask", L.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=(1,)),
         arr(B, 3, 4, 5), arr(B, 3, 4, 5), call_kwargs={"attention_mask": am4, "use_causal_mask": True},
         scores=True)
mha_case("axes_rank5_unordered", L.MultiHeadAttention(num_heads=3, key_dim=2, output_shape=(2, 3),
                                                      attention_axes=(-2, 1)),
         arr(B, 2, 3, 2, 4), arr(B, 3, 3, 2, 5), arr(B, 3, 3, 2, 4))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_attention.json"), "w") as f:
    json.dump(ref, f)
print("wrote", sorted(ref))
