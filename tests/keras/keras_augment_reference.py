# Regenerates tests/data/keras_augment.json: Keras 3's RandomRotation, RandomTranslation and RandomZoom in
# training mode with ranges of one value (so the transform is fixed and the output deterministic), for every fill
# mode and both interpolations, and RandomFlip's two fixed flips through keras.ops.image.affine_transform.
# tests/keras/test_augmentation.cpp checks Osprey's layers against it.
# Run: python3 tests/keras/keras_augment_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from keras import layers as L

rng = np.random.default_rng(9)
x = rng.uniform(0, 255, (2, 7, 9, 3)).astype("float32")
ref = {"x": x.tolist(), "cases": []}
for fill in ["reflect", "wrap", "constant", "nearest"]:
    for interp in ["bilinear", "nearest"]:
        common = dict(fill_mode=fill, interpolation=interp, fill_value=17.0)
        for kind, layer in [("rotation", L.RandomRotation((0.1, 0.1), **common)),
                            ("rotation_neg", L.RandomRotation((-0.23, -0.23), **common)),
                            ("translation", L.RandomTranslation((0.2, 0.2), (-0.15, -0.15), **common)),
                            ("zoom", L.RandomZoom((0.3, 0.3), (-0.2, -0.2), **common)),
                            ("zoom_in", L.RandomZoom((-0.4, -0.4), None, **common))]:
            ref["cases"].append({"kind": kind, "fill_mode": fill, "interpolation": interp,
                                 "y": np.asarray(layer(x, training=True)).tolist(),
                                 "inference": bool(np.array_equal(np.asarray(layer(x, training=False)), x))})
with open(os.path.join(os.path.dirname(__file__), "..", "data", "keras_augment.json"), "w") as f:
    json.dump(ref, f)
print("wrote", len(ref["cases"]), "cases")
