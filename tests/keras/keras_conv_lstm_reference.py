"""Expected values for keras.layers.ConvLSTM1D/2D/3D (tests/keras/test_conv_lstm.cpp) from real Keras 3 on the
TensorFlow backend: for each case the layer's arguments, its inputs (and initial states), its weights, its outputs
and the gradients of a weighted sum of the outputs for the inputs and every weight, and the layer's config.
`python3 tests/keras/keras_conv_lstm_reference.py` (pip tensorflow-cpu keras) writes tests/data/keras_conv_lstm.json."""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(51)
L = keras.layers


def arr(*shape, scale=1.0):
    return rng.uniform(-scale, scale, size=shape).astype("float32")


def listed(a):
    return np.asarray(a).astype("float64").tolist()


cases = []
for cls, kwargs, x_shape, with_states in [
        ("ConvLSTM2D", dict(filters=3, kernel_size=2), (2, 4, 5, 5, 2), False),
        ("ConvLSTM2D", dict(filters=2, kernel_size=3, padding="same", return_sequences=True, return_state=True,
                            go_backwards=True), (2, 3, 4, 5, 2), False),
        ("ConvLSTM1D", dict(filters=3, kernel_size=2, strides=2, data_format="channels_first", return_state=True),
         (2, 3, 2, 7), False),
        ("ConvLSTM3D", dict(filters=2, kernel_size=(2, 1, 2), padding="same", dilation_rate=(1, 2, 1),
                            return_sequences=True), (1, 3, 3, 4, 4, 1), False),
        ("ConvLSTM2D", dict(filters=2, kernel_size=(1, 2), activation="relu", recurrent_activation="hard_sigmoid",
                            use_bias=False), (3, 3, 3, 4, 2), False),
        ("ConvLSTM2D", dict(filters=2, kernel_size=2, padding="same", return_sequences=True,
                            data_format="channels_first"), (2, 3, 1, 4, 3), True),
]:
    layer = getattr(L, cls)(**kwargs)
    x = arr(*x_shape)
    layer.build(x_shape)
    weights = [arr(*w.shape, scale=0.5) for w in layer.get_weights()]
    layer.set_weights(weights)
    states = None
    if with_states:
        spec = layer.compute_output_shape(x_shape)
        state_shape = (x_shape[0],) + tuple(spec[1:]) if not kwargs.get("return_sequences") else \
            (x_shape[0],) + tuple(spec[2:])
        states = [arr(*state_shape), arr(*state_shape)]
    xv = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xv)
        out = layer(xv, initial_state=states) if states else layer(xv)
        outs = out if isinstance(out, (list, tuple)) else [out]
        wo = [arr(*o.shape) for o in outs]
        loss = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outs, wo)])
    grads = tape.gradient(loss, [xv] + layer.trainable_variables)
    cases.append({"class": cls, "kwargs": kwargs, "x": listed(x), "x_shape": list(x_shape),
                  "initial_states": None if states is None else [listed(s) for s in states],
                  "weights": [listed(w) for w in weights], "weight_shapes": [list(w.shape) for w in weights],
                  "output_weights": [listed(w) for w in wo], "outputs": [listed(o) for o in outs],
                  "output_shapes": [list(o.shape) for o in outs], "loss": float(loss),
                  "gradients": [listed(g) for g in grads],
                  "paths": [v.path for v in layer.weights], "config": layer.get_config()})

path = os.path.join(HERE, "..", "data", "keras_conv_lstm.json")
with open(path, "w") as f:
    json.dump({"keras": keras.__version__, "tensorflow": tf.__version__, "cases": cases}, f,
              separators=(",", ":"), allow_nan=False)
    f.write("\n")
print(f"wrote {path} (Keras {keras.__version__}, TensorFlow {tf.__version__})")
