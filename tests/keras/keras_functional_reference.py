# Regenerates tests/data/keras_functional.json: functional models built, predicted and trained with Keras 3, the
# values tests/keras/test_functional.cpp checks Osprey against (same layers, names, initial weights and batches).
# Run: python3 tests/keras/keras_functional_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from keras import layers as L

keras.utils.set_random_seed(7)
rng = np.random.default_rng(11)
N = 32

def arr(*shape):
    return rng.uniform(-1, 1, shape).astype("float32")

def weights_of(model):
    out = {}
    for layer in model.layers:
        if isinstance(layer, keras.Model):  # nested: its layers by name
            out.update(weights_of(layer))
        elif layer.weights:
            out[layer.name] = [w.numpy().tolist() for w in layer.weights]
    return out

def case(name, model, x, y, compile_kwargs, epochs=2, batch_size=8):
    first = weights_of(model)
    pred0 = model.predict(x, verbose=0)
    model.compile(**compile_kwargs)
    hist = model.fit(x, y, epochs=epochs, batch_size=batch_size, shuffle=False, verbose=0)
    pred1 = model.predict(x, verbose=0)
    ev = model.evaluate(x, y, verbose=0, return_dict=True)
    listify = lambda v: [a.tolist() for a in v] if isinstance(v, (list, tuple)) else v.tolist()
    cases[name] = {"x": listify(x), "y": listify(y), "initial_weights": first, "predict_before": listify(pred0),
                   "history": {k: [float(v) for v in vs] for k, vs in hist.history.items()},
                   "final_weights": weights_of(model), "predict_after": listify(pred1),
                   "evaluate": {k: float(v) for k, v in ev.items()},
                   "trainable_params": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
                   "non_trainable_params": int(sum(np.prod(w.shape) for w in model.non_trainable_weights))}

cases = {}

# 1. Two inputs joined by Concatenate.
a = keras.Input((4,), name="a"); b = keras.Input((3,), name="b")
h = L.Concatenate(name="concat")([a, b])
h = L.Dense(5, activation="relu", name="hidden")(h)
out = L.Dense(1, activation="sigmoid", name="out")(h)
case("two_input_concat", keras.Model([a, b], out, name="two_inputs"), [arr(N, 4), arr(N, 3)],
     rng.integers(0, 2, (N, 1)).astype("float32"),
     dict(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy", metrics=["accuracy"]))

# 2. A residual MLP: h + Dense(h).
x = keras.Input((6,), name="x")
h = L.Dense(8, activation="relu", name="d1")(x)
r = L.Dense(8, activation="relu", name="d2")(h)
h = L.Add(name="residual")([h, r])
out = L.Dense(3, activation="softmax", name="out")(h)
case("residual_mlp", keras.Model(x, out, name="residual"), arr(N, 6), rng.integers(0, 3, (N,)).astype("float32"),
     dict(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy", metrics=["accuracy"]))

# 3. One Dense shared by two inputs (a siamese pair), their difference regressed.
a = keras.Input((5,), name="left"); b = keras.Input((5,), name="right")
shared = L.Dense(4, activation="tanh", name="shared")
d = L.Subtract(name="diff")([shared(a), shared(b)])
out = L.Dense(1, name="out")(d)
case("shared_layer", keras.Model([a, b], out, name="siamese"), [arr(N, 5), arr(N, 5)], arr(N, 1),
     dict(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse"))

# 4. A model used as a layer of another.
i = keras.Input((4,), name="inner_in")
inner = keras.Model(i, L.Dense(3, name="inner_out")(L.Dense(6, activation="relu", name="inner_hidden")(i)), name="inner")
x = keras.Input((4,), name="outer_in")
out = L.Dense(2, activation="softmax", name="out")(inner(x))
y = np.eye(2, dtype="float32")[rng.integers(0, 2, N)]
case("nested_model", keras.Model(x, out, name="outer"), arr(N, 4), y,
     dict(optimizer=keras.optimizers.RMSprop(0.01), loss="categorical_crossentropy", metrics=["accuracy"]))

# 5. Two outputs with their own losses, loss_weights and metrics.
x = keras.Input((5,), name="x")
h = L.Dense(8, activation="relu", name="trunk")(x)
oa = L.Dense(1, activation="sigmoid", name="out_a")(h)
ob = L.Dense(2, name="out_b")(h)
case("two_outputs", keras.Model(x, [oa, ob], name="two_outputs"), arr(N, 5),
     [rng.integers(0, 2, (N, 1)).astype("float32"), arr(N, 2)],
     dict(optimizer=keras.optimizers.Adam(0.01), loss=["binary_crossentropy", "mse"], loss_weights=[0.5, 2.0],
          metrics={"out_a": ["accuracy"], "out_b": ["mae"]}))

# 6. Fine-tuning: a frozen base (Dense + BatchNormalization, which then runs in inference mode) and a new head.
x = keras.Input((6,), name="x")
base_dense = L.Dense(8, activation="relu", name="base")
base_bn = L.BatchNormalization(name="base_bn")
h = base_bn(base_dense(x))
out = L.Dense(1, name="head")(h)
model = keras.Model(x, out, name="finetune")
model.get_layer("base_bn").moving_mean.assign(rng.uniform(-0.5, 0.5, 8).astype("float32"))
model.get_layer("base_bn").moving_variance.assign(rng.uniform(0.5, 1.5, 8).astype("float32"))
base_dense.trainable = False
base_bn.trainable = False
case("frozen_base", model, arr(N, 6), arr(N, 1), dict(optimizer=keras.optimizers.Adam(0.01), loss="mse"))

# 7. Every merge, each trained through: Add, Subtract, Multiply, Average, Maximum, Minimum, Dot (cosine),
# Concatenate.
a = keras.Input((4,), name="a"); b = keras.Input((4,), name="b")
pa = L.Dense(4, name="pa")(a); pb = L.Dense(4, name="pb")(b)
merged = [L.Add(name="add")([pa, pb]), L.Subtract(name="sub")([pa, pb]), L.Multiply(name="mul")([pa, pb]),
          L.Average(name="avg")([pa, pb]), L.Maximum(name="max")([pa, pb]), L.Minimum(name="min")([pa, pb]),
          L.Dot(axes=1, normalize=True, name="cos")([pa, pb]), L.Dot(axes=1, name="dot")([pa, pb])]
out = L.Dense(1, name="out")(L.Concatenate(name="all")(merged))
case("merges", keras.Model([a, b], out, name="merges"), [arr(N, 4), arr(N, 4)], arr(N, 1),
     dict(optimizer=keras.optimizers.SGD(0.05), loss="mse"))

# 8. Dense on the last axis of a rank-3 input (sequence-shaped data), then Flatten.
x = keras.Input((4, 6), name="x")
h = L.Dense(3, activation="relu", name="per_step")(x)
out = L.Dense(1, name="out")(L.Flatten(name="flat")(h))
case("dense_rank3", keras.Model(x, out, name="rank3"), arr(N, 4, 6), arr(N, 1),
     dict(optimizer=keras.optimizers.SGD(0.05), loss="mse"))

# 9. Dot over rank-3 inputs (Keras's batch_dot): two sequences' scores (axes=2), their cosines (axes (2, 2),
# normalize), a pooled vector against a sequence (axes (1, 2)).
q = keras.Input((3, 4), name="q"); k = keras.Input((5, 4), name="k")
pq = L.Dense(4, name="pq")(q); pk = L.Dense(4, name="pk")(k)
scores = L.Dot(axes=2, name="scores")([pq, pk])
cosines = L.Dot(axes=(2, 2), normalize=True, name="cos")([pq, pk])
vec = L.Dot(axes=(1, 2), name="vec")([L.GlobalAveragePooling1D(name="gq")(pq), pk])
h = L.Concatenate(name="all")([L.Flatten(name="fs")(scores), L.Flatten(name="fc")(cosines), vec])
case("dot_rank3", keras.Model([q, k], L.Dense(1, name="out")(h), name="dots"), [arr(N, 3, 4), arr(N, 5, 4)],
     arr(N, 1), dict(optimizer=keras.optimizers.SGD(0.05), loss="mse"))

path = os.path.join(os.path.dirname(__file__), "..", "data", "keras_functional.json")
with open(path, "w") as f:
    json.dump({"keras_version": keras.__version__, "cases": cases}, f)
print("wrote", os.path.normpath(path), "keras", keras.__version__)
