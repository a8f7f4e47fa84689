"""Writes the NumPy files tests/pipeline/test_readers.cpp reads (tests/data/npy/), and their expected values as
JSON: `python3 tests/pipeline/make_npy_files.py` (pip numpy). Every file is what np.save / np.savez /
np.savez_compressed write, so that Osprey's reader is checked against NumPy's writer, not against itself."""
import json
import os

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "data", "npy")
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
arrays = {
    "f4": rng.normal(size=(2, 3)).astype("<f4"),
    "f8": rng.normal(size=(4,)).astype("<f8"),
    "i8": np.arange(-3, 3, dtype="<i8").reshape(2, 3),
    "u1": np.array([[0, 7, 255], [1, 2, 3]], dtype="u1"),
    "b1": np.array([True, False, True]),
    "i2": np.array([-32768, 5, 32767], dtype="<i2"),
    "u4": np.array([0, 4000000000], dtype="<u4"),
    "be_i4": np.array([1, -2, 300000], dtype=">i4"),
    "be_f8": np.array([[1.5, -2.25]], dtype=">f8"),
    "f2": np.array([0.5, -1.0, 65504.0, 6.1e-5], dtype="<f2"),
    "fortran": np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4)),
    "scalar": np.array(3.25, dtype="<f4"),
    "empty": np.zeros((0, 5), dtype="<f4"),
}
expected = {}
for name, a in arrays.items():
    np.save(os.path.join(out, name + ".npy"), a)
    expected[name] = {"shape": list(a.shape), "values": a.astype("f8").ravel(order="C").tolist()}
np.savez(os.path.join(out, "pair.npz"), x=arrays["f4"], y=arrays["i8"])
np.savez_compressed(os.path.join(out, "pair_compressed.npz"), x=arrays["f4"], y=arrays["i8"])
with open(os.path.join(out, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1)
print("wrote", sorted(os.listdir(out)))
