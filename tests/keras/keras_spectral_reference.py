# Regenerates tests/data/keras_spectral.json: Keras 3's SpectralNormalization around a Dense layer, a Conv2D (two
# power iterations) and an Embedding: a training call (the kernel and vector_u after it, the output, the gradients
# of sum(y · w) with respect to the trainable weights and the input), a second training call, an inference call,
# the variables' order and paths, configs, parameter counts.
# tests/keras/test_spectral_normalization.cpp checks Osprey's layer against it.
# Run: python3 tests/keras/keras_spectral_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import layers as L

rng = np.random.default_rng(61)
keras.utils.set_random_seed(3)
ref = {}


def tl(v):
    return np.asarray(v).tolist()


def run(name, layer, x, w_shape, floating=True):
    inp = keras.Input(x.shape[1:], dtype="float32" if floating else "int32")
    model = keras.Model(inp, layer(inp))
    weights = [rng.normal(0, 0.5, v.shape).astype("float32") for v in layer.weights]
    layer.set_weights(weights)
    w = rng.uniform(-1, 1, w_shape).astype("float32")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        if floating:
            tape.watch(xt)
        y = layer(xt, training=True)
        loss = tf.reduce_sum(y * w)
    sources = list(layer.trainable_weights) + ([xt] if floating else [])
    grads = tape.gradient(loss, sources)
    after = [v.numpy() for v in layer.weights]
    y2 = layer(xt, training=True)
    after2 = [v.numpy() for v in layer.weights]
    ref[name] = {"x": tl(x), "w": tl(w), "weights": [tl(v) for v in weights],
                 "paths": [v.path for v in model.weights], "y": tl(y), "weights_after": [tl(v) for v in after],
                 "grads": [tl(g) for g in grads], "y_second": tl(y2), "weights_second": [tl(v) for v in after2],
                 "y_inference": tl(layer(xt, training=False)), "params": int(model.count_params()),
                 "config": layer.get_config()}


run("dense", L.SpectralNormalization(L.Dense(3, name="d"), name="sn_dense"),
    rng.normal(0, 1, (5, 4)).astype("float32"), (5, 3))
run("conv", L.SpectralNormalization(L.Conv2D(2, 3, activation="relu", name="c"), power_iterations=2, name="sn_conv"),
    rng.normal(0, 1, (2, 5, 5, 3)).astype("float32"), (2, 3, 3, 2))
run("embedding", L.SpectralNormalization(L.Embedding(7, 4, name="e"), name="sn_embed"),
    rng.integers(0, 7, (3, 5)).astype("int32"), (3, 5, 4), floating=False)


def rejected(make):
    try:
        make()
        return False
    except (ValueError, AttributeError):
        return True


ref["rejected"] = {"power_iterations_0": rejected(lambda: L.SpectralNormalization(L.Dense(2), power_iterations=0)),
                   "no_kernel": rejected(lambda: L.SpectralNormalization(L.Flatten())(np.zeros((2, 3), "float32")))}

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_spectral.json"), "w") as f:
    json.dump(ref, f)
print("wrote keras_spectral.json")
