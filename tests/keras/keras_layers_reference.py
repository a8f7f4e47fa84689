# Regenerates tests/data/keras_layers.json: the layers functional models need beyond Dense (Identity, Lambda,
# ReLU/ELU/Softmax/PReLU, ActivityRegularization, RepeatVector, Permute, UnitNormalization, GroupNormalization,
# RMSNormalization) in one Keras 3 model, predicted and trained; tests/keras/test_layers_graph.cpp checks Osprey.
# Run: python3 tests/keras/keras_layers_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from keras import layers as L

keras.utils.set_random_seed(5)
rng = np.random.default_rng(3)
N = 24
x_in = keras.Input((6,), name="x")
d = L.Dense(8, name="d")(x_in)
seq = L.Dense(4, name="seq_in")(L.RepeatVector(3, name="repeat")(d))  # (N, 3, 4): per-step Dense
branches = [
    L.ReLU(name="relu")(d),
    L.ReLU(max_value=0.5, negative_slope=0.1, threshold=0.2, name="relu_custom")(d),
    L.ELU(alpha=0.5, name="elu")(d),
    L.Softmax(name="softmax")(d),
    L.PReLU(alpha_initializer=keras.initializers.Constant(0.25), name="prelu")(d),
    L.UnitNormalization(name="unit")(d),
    L.GroupNormalization(groups=2, name="group")(d),
    L.RMSNormalization(name="rms")(d),
    L.ActivityRegularization(l1=0.01, l2=0.02, name="act_reg")(d),
    L.Identity(name="identity")(d),
    L.Lambda(lambda t: t * t, name="square")(d),
    L.Flatten(name="flat_seq")(L.Permute((2, 1), name="permute")(seq)),
    L.Flatten(name="flat_group3")(L.GroupNormalization(groups=2, name="group3")(seq)),
]
out = L.Dense(1, name="out")(L.Concatenate(name="cat")(branches))
model = keras.Model(x_in, out, name="layers")
x = rng.uniform(-1, 1, (N, 6)).astype("float32")
y = rng.uniform(-1, 1, (N, 1)).astype("float32")

def weights_of(m):
    return {l.name: [w.numpy().tolist() for w in l.weights] for l in m.layers if l.weights}

ref = {"x": x.tolist(), "y": y.tolist(), "initial_weights": weights_of(model),
       "branches": [keras.Model(x_in, b)(x).numpy().tolist() for b in branches[:11]],
       "predict_before": model.predict(x, verbose=0).tolist()}
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
ref["evaluate_before"] = float(model.evaluate(x, y, verbose=0))
hist = model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
ref["history"] = [float(v) for v in hist.history["loss"]]
ref["final_weights"] = weights_of(model)
ref["predict_after"] = model.predict(x, verbose=0).tolist()

# Softmax and UnitNormalization over several axes (or one other than the last), with a mask for the Softmax:
# outputs, configs and the gradients of sum(y * w) for the input.
import tensorflow as tf  # noqa: E402  (the gradients)
arng = np.random.default_rng(29)
axes_cases = {}
for name, layer, shape, mask_shape in [
        ("softmax_12", L.Softmax(axis=(1, 2)), (2, 3, 4, 5), None),
        ("softmax_13_masked", L.Softmax(axis=(1, 3)), (2, 3, 4, 5), (4, 5)),
        ("softmax_1_masked", L.Softmax(axis=1), (2, 3, 4), (2, 3, 4)),
        ("unit_12", L.UnitNormalization(axis=(1, 2)), (2, 3, 4, 5), None),
        ("unit_1", L.UnitNormalization(axis=1), (2, 3, 4), None),
        ("unit_neg", L.UnitNormalization(axis=[-1, -3]), (2, 3, 4, 5), None)]:
    xa = arng.uniform(-2, 2, shape).astype("float32")
    ma = None if mask_shape is None else arng.uniform(0, 1, mask_shape) > 0.3
    xt = tf.constant(xa)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        ya = layer(xt, mask=tf.constant(ma)) if ma is not None else layer(xt)
        wa = arng.uniform(-1, 1, shape).astype("float32")
        loss = tf.reduce_sum(ya * wa)
    axes_cases[name] = {"x": xa.tolist(), "mask": None if ma is None else ma.astype("float32").tolist(),
                        "config": layer.get_config(), "y": np.asarray(ya).tolist(), "w": wa.tolist(),
                        "grad": np.asarray(tape.gradient(loss, xt)).tolist()}
path = os.path.join(os.path.dirname(__file__), "..", "data", "keras_layers.json")
with open(path, "w") as f:
    json.dump({"keras_version": keras.__version__, "reference": ref, "several_axes": axes_cases}, f)
print("wrote", os.path.normpath(path), "keras", keras.__version__)
