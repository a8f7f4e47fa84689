# Keras 3 loads a mixed_bfloat16 model, a model with per-layer policies (Keras's dtype argument) and a loss-scaled
# mixed_float16 model that Osprey saved (issue 20), run by
# ctest (keras.loads_osprey_mixed_precision_file): runs MixedPrecision.KerasSavedMixedBfloat16ModelLoadsWithItsPolicy
# and LossScale.KerasSavedLossScaleModelResumesAsKeras of the given keras_ops_tests binary, which load Keras's
# mixed_bf16.keras and loss_scale.keras and save them again; then Keras loads Osprey's files and checks every
# layer's policy and the predictions (bfloat16's precision), and the LossScaleOptimizer's state and its next
# training step. Exits 77 (skipped) when Keras is not installed.
#   python3 tests/keras/keras_load_osprey_mixed.py build/release/tests/keras_ops_tests
import json, os, subprocess, sys, tempfile

try:
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import keras
except Exception as e:  # noqa: BLE001 -- any import failure means: no Keras here
    print(f"SKIPPED: Keras is not installed ({type(e).__name__}: {e}); pip install tensorflow-cpu keras")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
out = tempfile.mkdtemp(prefix="osprey_mixed_")
env = dict(os.environ, OSPREY_KERAS_FILES_OUT=out)
subprocess.run([sys.argv[1], "--gtest_filter=MixedPrecision.KerasSavedMixedBfloat16ModelLoadsWithItsPolicy:"
                "LossScale.KerasSavedLossScaleModelResumesAsKeras:LayerDtype.KerasSavedPerLayerPoliciesLoadAndRoundTrip"],
               check=True, env=env, stdout=subprocess.DEVNULL)
ref = json.load(open(os.path.join(HERE, "..", "data", "keras_mixed_precision.json")))
model = keras.models.load_model(os.path.join(out, "mixed_bf16.keras"))
failures = [f"layer {l.name}: policy {l.dtype_policy.name}" for l in model.layers if l.dtype_policy.name != "mixed_bfloat16"]
got = np.asarray(keras.ops.cast(model(np.asarray(ref["x"], "float32")), "float32")).reshape(-1)
want = np.asarray(json.load(open(os.path.join(out, "mixed_bf16.json")))["predict"])
if got.shape != want.shape or not np.allclose(got, want, atol=4e-3, rtol=1e-2):
    failures.append(f"Keras's predictions of Osprey's file {got} differ from Osprey's {want}")

# Per-layer policies: mixed_bfloat16 layers and a float32 softmax, as Keras saved them (keras_layer_dtype.json).
ld = json.load(open(os.path.join(HERE, "..", "data", "keras_layer_dtype.json")))
per_layer = keras.models.load_model(os.path.join(out, "layer_dtype.keras"))
policies = {l.name: l.dtype_policy.name for l in per_layer.layers}
want_policies = {l["name"]: l["policy"] for l in ld["guide"]["layers"]}
if policies != want_policies:
    failures.append(f"Keras reads Osprey's per-layer policies as {policies}, expected {want_policies}")
got = per_layer(np.asarray(ld["x"], "float32"))
if keras.backend.standardize_dtype(got.dtype) != "float32":
    failures.append(f"Osprey's per-layer file: Keras's output dtype is {got.dtype}, expected float32")
want = np.asarray(json.load(open(os.path.join(out, "layer_dtype.json")))["predict"])
if not np.allclose(np.asarray(got).reshape(-1), want, atol=4e-3, rtol=1e-2):
    failures.append(f"Keras's predictions of Osprey's per-layer file {np.asarray(got)} differ from Osprey's {want}")

# The loss-scaled model: Keras finds its LossScaleOptimizer with the state Osprey saved, and trains on as Keras did.
ls = json.load(open(os.path.join(HERE, "..", "data", "keras_loss_scale.json")))
m = keras.models.load_model(os.path.join(out, "loss_scale.keras"))
o = m.optimizer
state = {"optimizer": type(o).__name__, "dynamic_scale": float(o.dynamic_scale.numpy()),
         "step_counter": int(o.step_counter.numpy()), "iterations": int(o.iterations.numpy()),
         "initial_scale": o.initial_scale, "dynamic_growth_steps": o.dynamic_growth_steps}
want_state = dict(ls["from_file"]["before"], optimizer="LossScaleOptimizer", initial_scale=2.0**24,
                  dynamic_growth_steps=2)
if state != want_state:
    failures.append(f"Keras reads Osprey's loss-scale state as {state}, expected {want_state}")
loss = float(m.train_on_batch(np.asarray(ls["x"], "float32"), np.asarray(ls["y"], "float32")))
after = ls["from_file"]["after_step"]
if abs(loss - after["loss"]) > 2e-3 or float(o.dynamic_scale.numpy()) != after["dynamic_scale"]:
    failures.append(f"Keras's step on Osprey's file: loss {loss}, scale {float(o.dynamic_scale.numpy())}; "
                    f"expected {after}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"Keras loads Osprey's mixed_bfloat16 file: policies {[l.dtype_policy.name for l in model.layers]}, "
      f"its per-layer file: {policies}, "
      f"predictions within bfloat16 of Osprey's; and Osprey's loss-scaled file: {state}, next step's loss {loss}")
