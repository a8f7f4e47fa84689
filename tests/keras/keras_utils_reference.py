"""Expected values for keras::utils' data helpers (tests/pipeline/test_data_utils.cpp): keras.utils.to_categorical,
keras.utils.normalize, keras.utils.split_dataset (sizes and which elements, unshuffled), tf.math.confusion_matrix and
keras.utils.pad_sequences,
from real Keras 3 / TensorFlow. `python3 tests/keras/keras_utils_reference.py` (pip tensorflow-cpu keras) writes
tests/data/keras_utils.json."""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

out = {"keras": keras.__version__, "tensorflow": tf.__version__}
labels = np.array([[1], [0], [3], [2], [3]])
out["to_categorical"] = {"y": labels.tolist(), "default": keras.utils.to_categorical(labels).tolist(),
                         "six": keras.utils.to_categorical(labels, 6).tolist()}
rng = np.random.default_rng(3)
x = rng.normal(size=(3, 4)).astype("float32")
x[1] = 0.0
out["normalize"] = {"x": x.tolist(),
                    "l2_last": keras.utils.normalize(x).tolist(),
                    # NumPy input with axis=0 fails in Keras 3.15 (`axis or -1`); a tensor takes ops.normalize
                    "l1_axis0": np.asarray(keras.utils.normalize(tf.constant(x), axis=0, order=1)).tolist()}
splits = []
data = np.arange(10, dtype="float32").reshape(10, 1)
for left, right in [(0.8, None), (None, 3), (4, 5), (0.25, 0.5), (0.35, None)]:
    a, b = keras.utils.split_dataset(data, left_size=left, right_size=right)
    splits.append({"left_size": left, "right_size": right,
                   "left": [float(e[0]) for e in a.as_numpy_iterator()],
                   "right": [float(e[0]) for e in b.as_numpy_iterator()]})
out["split_dataset"] = splits
y_true = [0, 1, 2, 2, 1, 0, 2]
y_pred = [0, 2, 2, 1, 1, 0, 0]
w = [1.0, 0.5, 2.0, 1.0, 1.0, 3.0, 0.25]
out["confusion_matrix"] = {"labels": y_true, "predictions": y_pred, "weights": w,
                           "counts": tf.math.confusion_matrix(y_true, y_pred).numpy().tolist(),
                           "counts_4": tf.math.confusion_matrix(y_true, y_pred, num_classes=4).numpy().tolist(),
                           "weighted": tf.math.confusion_matrix(y_true, y_pred, weights=w,
                                                                dtype=tf.float32).numpy().tolist()}
# pad_sequences: ragged token lists (one empty), every padding/truncating pair, maxlen none/shorter/longer, a float
# dtype with a fractional padding value, sequences of feature vectors; Keras's messages for bad arguments.
tokens = [[5, 1, 7], [], [2], [9, 8, 7, 6, 5, 4], [3, 3]]
pads = []
for maxlen in [None, 2, 4, 8]:
    for padding in ["pre", "post"]:
        for truncating in ["pre", "post"]:
            pads.append({"maxlen": maxlen, "padding": padding, "truncating": truncating, "value": 0.0,
                         "dtype": "int32", "x": keras.utils.pad_sequences(
                             tokens, maxlen=maxlen, padding=padding, truncating=truncating).tolist()})
pads.append({"maxlen": 5, "padding": "pre", "truncating": "pre", "value": -1.0, "dtype": "int64",
             "x": keras.utils.pad_sequences(tokens, maxlen=5, dtype="int64", value=-1).tolist()})
pads.append({"maxlen": 4, "padding": "post", "truncating": "pre", "value": 2.5, "dtype": "float32",
             "x": keras.utils.pad_sequences(tokens, maxlen=4, dtype="float32", padding="post", value=2.5).tolist()})
pads.append({"maxlen": 3, "padding": "pre", "truncating": "pre", "value": 1.5, "dtype": "int32",
             "x": keras.utils.pad_sequences(tokens, maxlen=3, value=1.5).tolist()})
vectors = [[[0.5, 1.0], [1.5, 2.0], [2.5, 3.0]], [[4.0, 5.0]]]
errors = {}
for name, kwargs, seqs in [("padding", {"padding": "mid"}, tokens), ("truncating", {"truncating": "end"}, tokens),
                           ("sample_shape", {"dtype": "float32"}, [[[1.0, 2.0]], [[1.0, 2.0, 3.0]]])]:
    try:
        keras.utils.pad_sequences(seqs, **kwargs)
    except ValueError as e:
        errors[name] = str(e)
out["pad_sequences"] = {"tokens": tokens, "cases": pads, "vectors": vectors,
                        "vectors_padded": keras.utils.pad_sequences(vectors, maxlen=2, dtype="float32",
                                                                    padding="post", truncating="post").tolist(),
                        "errors": errors}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_utils.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path)
