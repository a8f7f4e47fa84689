"""Expected values for dynamic loss scaling (tests/keras/test_loss_scale.cpp) from real Keras 3 (TensorFlow backend):
compile() under "mixed_float16" wrapping the optimizer in a LossScaleOptimizer; train_on_batch steps whose scaled
float16 gradients overflow (skipped steps, the scale halved) and steps that grow the scale again
(dynamic_growth_steps); a float32 model with an explicit LossScaleOptimizer; and
tests/data/keras_files/loss_scale.keras, saved by Keras after such training.
`python3 tests/keras/keras_loss_scale_reference.py` (pip tensorflow-cpu keras) writes
tests/data/keras_loss_scale.json and that file."""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)
out = {"keras": keras.__version__, "tensorflow": tf.__version__}

x = rng.uniform(-1, 1, size=(8, 6)).astype("float32")
y = rng.uniform(-1, 1, size=(8, 3)).astype("float32")
weights = [rng.uniform(-0.5, 0.5, size=s).astype("float32") for s in [(6, 12), (12,), (12, 3), (3,)]]
out["x"], out["y"] = x.tolist(), y.tolist()
out["weights"] = [w.astype("float64").tolist() for w in weights]


def make_model():
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(12, activation="tanh", name="hidden"),
                             keras.layers.Dense(3, name="out")], name="regressor")


def state(model):
    opt = model.optimizer
    return {"dynamic_scale": float(opt.dynamic_scale.numpy()), "step_counter": int(opt.step_counter.numpy()),
            "iterations": int(opt.iterations.numpy())}


def run(policy, optimizer, steps):
    keras.mixed_precision.set_global_policy(policy)
    model = make_model()
    model.set_weights(weights)
    model.compile(optimizer=optimizer, loss="mse")
    rec = {"policy": policy, "optimizer_class": type(model.optimizer).__name__, "steps": []}
    for _ in range(steps):
        loss = model.train_on_batch(x, y)
        rec["steps"].append(dict(state(model), loss=float(loss)))
    rec["weights_after"] = [w.astype("float64").tolist() for w in model.get_weights()]
    keras.mixed_precision.set_global_policy("float32")
    return model, rec


# compile() wraps Adam in a LossScaleOptimizer under mixed_float16 (initial scale 2^15, growth every 2000 steps).
_, out["auto"] = run("mixed_float16", keras.optimizers.Adam(0.01), 4)
# A scale far too large: the float16 gradients overflow, steps are skipped and the scale halves until they fit;
# then every 2 finite steps double it again.
model, out["overflow"] = run(
    "mixed_float16",
    keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.05), initial_scale=2.0**24, dynamic_growth_steps=2),
    24)
# An explicit LossScaleOptimizer in float32: the gradients never overflow, the scale doubles every 3 steps.
_, out["float32"] = run(
    "float32",
    keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(0.01), initial_scale=4.0, dynamic_growth_steps=3), 7)

# The overflow model saved (its optimizer's state in the file), then one more step from the file.
keras.mixed_precision.set_global_policy("mixed_float16")
path = os.path.join(HERE, "..", "data", "keras_files", "loss_scale.keras")
model.save(path)
loaded = keras.saving.load_model(path)
loss = loaded.train_on_batch(x, y)
out["from_file"] = {"before": state(model), "after_step": dict(state(loaded), loss=float(loss)),
                    "weights_after": [w.astype("float64").tolist() for w in loaded.get_weights()]}
keras.mixed_precision.set_global_policy("float32")

with open(os.path.join(HERE, "..", "data", "keras_loss_scale.json"), "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"), allow_nan=False)
    f.write("\n")
print(f"wrote tests/data/keras_loss_scale.json and {path} (Keras {keras.__version__}, TensorFlow {tf.__version__})")
