"""What Keras 3's TensorBoard callback writes, read back with the real `tensorboard` package's event reader, for
tests/keras/test_tensorboard.cpp: the run's layout (which tags in train/ and validation/, their plugin, dtype,
shape and steps) for a small fit with validation, histograms, batch updates and steps per second; and the buckets
tf.summary.histogram makes of fixed vectors. `python3 tests/keras/keras_tensorboard_reference.py` (pip
tensorflow-cpu keras tensorboard) writes tests/data/keras_tensorboard.json."""
import glob
import json
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
import tensorboard  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402


def layout(run_dir):
    """{tag: {plugin, dtype, shape, steps}} of every tensor summary in run_dir (one run)."""
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.TENSORS: 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["tensors"]:
        events = acc.Tensors(tag)
        meta = acc.SummaryMetadata(tag)
        proto = events[0].tensor_proto
        out[tag] = {"plugin": meta.plugin_data.plugin_name, "data_class": int(meta.data_class),
                    "dtype": tf.dtypes.as_dtype(proto.dtype).name,
                    "shape": [d.size for d in proto.tensor_shape.dim],
                    "steps": [e.step for e in events]}
    return out


keras.utils.set_random_seed(1)
x = np.random.default_rng(0).normal(size=(12, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
runs = {}
for name, kwargs in [("epoch", dict(histogram_freq=1)),
                     ("batch", dict(update_freq="batch", write_steps_per_second=True))]:
    log_dir = tempfile.mkdtemp()
    model.fit(x, y, batch_size=4, epochs=2, validation_data=(x[:8], y[:8]), verbose=0,
              callbacks=[keras.callbacks.TensorBoard(log_dir=log_dir, **kwargs)])
    runs[name] = {"kwargs": {k: v for k, v in kwargs.items()},
                  "dirs": sorted(os.listdir(log_dir)),
                  "files": sorted(os.path.basename(f).split(".")[0:3][-1] for f in glob.glob(log_dir + "/*/*")),
                  "train": layout(os.path.join(log_dir, "train")),
                  "validation": layout(os.path.join(log_dir, "validation"))}

# tf.summary.histogram's buckets (30 by default) of fixed vectors, read back from its event file.
vectors = {"normal": np.random.default_rng(5).normal(size=257).astype("float32"),
           "constant": np.full(7, 0.25, dtype="float32"),
           "edges": np.array([-1.0, -1.0, 0.0, 0.5, 2.0, 2.0], dtype="float32"),
           "empty": np.zeros(0, dtype="float32")}
hist_dir = tempfile.mkdtemp()
with tf.summary.create_file_writer(hist_dir).as_default():
    for name, v in vectors.items():
        tf.summary.histogram(name, v, step=3)
acc = event_accumulator.EventAccumulator(hist_dir, size_guidance={event_accumulator.TENSORS: 0})
acc.Reload()
histograms = {name: {"values": v.tolist(), "buckets": tf.make_ndarray(acc.Tensors(name)[0].tensor_proto).tolist()}
              for name, v in vectors.items()}
out = {"keras": keras.__version__, "tensorflow": tf.__version__, "tensorboard": tensorboard.__version__,
       "runs": runs, "histograms": histograms}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_tensorboard.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print("wrote", path)
