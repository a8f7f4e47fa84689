"""tf.data + Keras 3 anchor for bench/dataset_pipeline.cpp (pip tensorflow-cpu): the wide MLP (784->512->512->10,
Adam, sparse CE, batch 128) fit on from_tensor_slices(x, y).batch(128).map(f).prefetch(AUTOTUNE), f waiting 2 ms
per batch (time.sleep in tf.py_function, which releases the GIL) or computing for 2 ms (a NumPy loop). Keras does
not report input wait, so each case reports its epoch against the same epoch without map (the floor):
excess_over_floor = (epoch - floor) / epoch, the share of the epoch the pipeline adds. Best of five epochs.
Usage: tf_dataset.py [batches] [map_ms]"""
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
batches = int(sys.argv[1]) if len(sys.argv) > 1 else 200
map_ms = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

keras.utils.set_random_seed(0)
n = 128 * batches
x = np.random.rand(n, 784).astype("float32")
y = np.random.randint(0, 10, (n,)).astype("float32")


def sleeping(xb, yb):
    def wait(a):
        time.sleep(map_ms / 1e3)
        return a
    xb = tf.py_function(wait, [xb], tf.float32)
    xb.set_shape([None, 784])
    return xb, yb


def computing(xb, yb):
    def work(a):
        end = time.perf_counter() + map_ms / 1e3
        s = 0.0
        while time.perf_counter() < end:
            s += 1e-9
        return a
    xb = tf.py_function(work, [xb], tf.float32)
    xb.set_shape([None, 784])
    return xb, yb


def epoch(ds):
    model = keras.Sequential([layers.Input(shape=(784,)), layers.Dense(512, activation="relu"),
                              layers.Dense(512, activation="relu"), layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(ds, epochs=1, verbose=0)  # trace and warm up
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        model.fit(ds, epochs=1, verbose=0)
        best = min(best, time.perf_counter() - t0)
    return best


base = tf.data.Dataset.from_tensor_slices((x, y)).batch(128)
floor = epoch(base)
print(json.dumps({"framework": f"tf.data + keras (tf {tf.__version__})", "case": "no map (the floor)",
                  "epoch_s": round(floor, 4)}))
cases = [("map sleep, no prefetch", base.map(sleeping)),
         ("map sleep + prefetch", base.map(sleeping).prefetch(tf.data.AUTOTUNE)),
         ("map sleep, num_parallel_calls=AUTOTUNE + prefetch",
          base.map(sleeping, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)),
         ("map busy + prefetch", base.map(computing).prefetch(tf.data.AUTOTUNE))]
for name, ds in cases:
    s = epoch(ds)
    print(json.dumps({"framework": f"tf.data + keras (tf {tf.__version__})",
                      "case": f"{name} ({map_ms} ms per batch of 128, {batches} batches)", "epoch_s": round(s, 4),
                      "excess_over_floor": round((s - floor) / s, 3)}))
