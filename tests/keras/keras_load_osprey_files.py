# Keras 3 loads the .keras files Osprey writes (issue 15), run by ctest (keras.loads_osprey_files): runs the
# ModelFiles.* tests of the given keras_tests binary, which load Keras's reference files, save them again with
# Osprey and record Osprey's evaluate(); then loads each of Osprey's files with keras.models.load_model and checks
# that Keras evaluates it to Osprey's numbers with the same compile settings (losses, metrics with their options,
# loss_weights, optimizer) as Keras's own file. Exits 77 (skipped) when Keras (or SciPy, which its STFTSpectrogram
# needs) is not installed.
#   python3 tests/keras/keras_load_osprey_files.py build/release/tests/keras_tests
import json, os, subprocess, sys, tempfile

try:
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import keras
    import scipy  # noqa: F401 -- Keras's STFTSpectrogram (in the audio model's file) needs it
except Exception as e:  # noqa: BLE001 -- any import failure means: no Keras here
    print(f"SKIPPED: Keras is not installed ({type(e).__name__}: {e}); pip install tensorflow-cpu keras scipy")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")


sys.path.insert(0, HERE)
from osprey_test_objects import PowerError, Scale, TwoLayer, scaled_mse  # noqa: E402,F401  (registers them)


def arrays(v, count):
    """The reference's data as the model takes it: a name map, a list of `count` arrays, or one array."""
    if isinstance(v, dict):
        return {k: np.asarray(x, "float32") for k, x in v.items()}
    if count > 1:
        return [np.asarray(x, "float32") for x in v]
    return np.asarray(v, "float32")


def settings(model):
    c = model.get_compile_config()
    loss = c["loss"]
    if isinstance(loss, dict) and "class_name" not in loss:  # per output: compare the classes and their options
        loss = {k: (v if isinstance(v, str) else {"class_name": v["class_name"],
                                                   "config": {k2: x for k2, x in v["config"].items() if k2 != "delta"}})
                for k, v in loss.items()}
    opt = {k: v for k, v in c["optimizer"]["config"].items() if k != "learning_rate"}
    return {"loss": loss, "metrics": c["metrics"], "weighted_metrics": c["weighted_metrics"],
            "loss_weights": c["loss_weights"], "optimizer": opt,
            "optimizer_class": c["optimizer"]["class_name"]}


def main():
    tests = sys.argv[1]
    out = tempfile.mkdtemp(prefix="osprey_keras_files_")
    env = dict(os.environ, OSPREY_KERAS_FILES_OUT=out)
    subprocess.run([tests, "--gtest_filter=ModelFiles.*"], check=True, env=env, stdout=subprocess.DEVNULL)
    reference = json.load(open(os.path.join(DATA, "keras_files.json")))
    failures = []
    for name, ref in sorted(reference.items()):
        if name == "penalties":
            continue
        osprey_file = os.path.join(out, name + ".keras")
        osprey_numbers = json.load(open(os.path.join(out, name + ".json")))["evaluate"]
        theirs = keras.models.load_model(osprey_file)
        ours = keras.models.load_model(os.path.join(DATA, "keras_files", name + ".keras"))
        count = lambda ts: len(ts) if isinstance(ts, (list, tuple)) else 1  # noqa: E731 (subclassed models: none)
        got = theirs.evaluate(arrays(ref["x"], count(getattr(theirs, "inputs", None))),
                              arrays(ref["y"], count(getattr(theirs, "outputs", None))),
                              batch_size=ref["batch_size"], verbose=0,
                              return_dict=True)
        for key, want in osprey_numbers.items():
            if key not in got or abs(got[key] - want) > 2e-5 * max(1.0, abs(want)):
                failures.append(f"{name}: Keras evaluates {key} of Osprey's file to {got.get(key)}, Osprey to {want}")
        # Osprey's .weights.h5 of the same model loads into Keras's model (layers and optimizer state).
        ours.load_weights(os.path.join(out, name + ".weights.h5"))
        for a, b in zip(ours.weights, theirs.weights):
            if a.shape != b.shape or not np.array_equal(np.asarray(a), np.asarray(b)):
                failures.append(f"{name}: weight {a.path} from Osprey's .weights.h5 differs from Osprey's .keras")
        if settings(theirs) != settings(ours):
            failures.append(f"{name}: compile settings differ:\n  Osprey's file: {settings(theirs)}\n"
                            f"  Keras's file:  {settings(ours)}")
        print(f"{name}: Keras loads Osprey's file; evaluate {got}")
    if failures:
        print("\n".join(failures))
        sys.exit(1)


main()
