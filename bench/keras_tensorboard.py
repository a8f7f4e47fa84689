"""The anchor for bench/tensorboard_overhead: what keras.callbacks.TensorBoard adds to TensorFlow 2 + Keras 3's
fit of the seed model (2048x20 -> 64 -> 32 -> 1, Adam, BCE, batch 64, accuracy): fits of `epochs` epochs without
it, with update_freq="epoch" and with update_freq="batch", rotated round by round; the median time per epoch of
each and its overhead against none. One JSON line per case.
Usage: keras_tensorboard.py [rounds=5] [epochs=6]"""
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 6

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

keras.utils.set_random_seed(0)
x = np.random.rand(2048, 20).astype("float32")
y = np.random.randint(0, 2, (2048, 1)).astype("float32")
model = keras.Sequential([layers.Input(shape=(20,)), layers.Dense(64, activation="relu"),
                          layers.Dense(32, activation="relu"), layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
model.fit(x, y, epochs=1, batch_size=64, verbose=0)  # trace and warm up
root = tempfile.mkdtemp()
names = ["none", "update_freq=epoch", "update_freq=batch"]
per_epoch = {n: [] for n in names}
run = 0
for r in range(rounds):
    for k in range(3):
        v = (r + k) % 3
        callbacks = []
        if v:
            run += 1
            callbacks = [keras.callbacks.TensorBoard(os.path.join(root, str(run)),
                                                     update_freq="epoch" if v == 1 else "batch")]
        t0 = time.perf_counter()
        model.fit(x, y, epochs=epochs, batch_size=64, verbose=0, callbacks=callbacks)
        per_epoch[names[v]].append((time.perf_counter() - t0) / epochs * 1e6)
shutil.rmtree(root, ignore_errors=True)
base = statistics.median(per_epoch["none"])
for n in names:
    m = statistics.median(per_epoch[n])
    print(json.dumps({"framework": "tensorflow-keras", "case": f"seed fit, TensorBoard {n}, tf {tf.__version__}, "
                      f"keras {keras.__version__}", "us_per_epoch": round(m), "overhead_pct": round(100 * (m - base) / base, 1)}))
