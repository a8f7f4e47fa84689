"""TensorFlow 2 + Keras 3 CPU reference (pip tensorflow-cpu): model.fit per-step time for the seed model (2048x20,
batch 64, Adam, BCE, accuracy) and the wide MLP (784->512->512->10, sparse CE, one repeated batch), plus the time
from interpreter start to the first completed training step. One JSON line per case.
"cnn" is bench/cnn_step's VGG-style CNN on 32x32x3 (one repeated batch); "lstm" bench/lstm_step's LSTM(256) over
100 steps of 128 inputs, then Dense(1), Adam, mse (batch 64).
A 4th argument sets Keras's global dtype policy ("mixed_bfloat16": bfloat16 compute on TensorFlow's CPU kernels).
"gru" the same with GRU(256). "text" bench/text_step's classifier: Embedding(10000, 128, mask_zero) +
Bidirectional(LSTM(128)) + Dense(1, sigmoid) over 100 right-padded token ids (the same ids), Adam, BCE;
"text_pre" the same ids left-padded (keras.utils.pad_sequences's default).
"mel" bench/audio_step's MelSpectrogram forward pass over one-second 16 kHz signals (5th and 6th arguments:
fft_length, sequence_stride).
"resize" bench/resize_step's cases: keras.ops.image.resize of (batch, 128, 128, 3) images per method (tf.function,
best of 20, the result read into NumPy), one JSON line each.
Usage: keras_bench.py <seed|wide|cnn|lstm|gru|text|text_pre|mel|resize|first_step> [batch] [threads] [policy] [fft] [stride]"""
import json
import os
import sys
import time

t_start = time.perf_counter()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
case = sys.argv[1] if len(sys.argv) > 1 else "seed"
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 64
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 0
policy = sys.argv[4] if len(sys.argv) > 4 else "float32"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

def best_call(f, x, repeats=20):
    """Seconds of the fastest of `repeats` calls f(x) read into NumPy, after one warm-up call (tracing)."""
    f(x).numpy()
    best = 1e30
    for _ in range(repeats):
        t0 = time.perf_counter()
        f(x).numpy()
        best = min(best, time.perf_counter() - t0)
    return best


# bench/resize_step.cpp's cases: (method, antialias, output side).
RESIZE_CASES = [("bilinear", False, 64), ("bicubic", False, 64), ("bicubic", False, 256), ("area", False, 64),
                ("lanczos3", True, 64), ("bilinear", True, 32)]

if threads:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
keras.utils.set_random_seed(0)
keras.mixed_precision.set_global_policy(policy)

if case in ("seed", "first_step"):
    x = np.random.rand(2048, 20).astype("float32")
    y = np.random.randint(0, 2, (2048, 1)).astype("float32")
    model = keras.Sequential([layers.Input(shape=(20,)), layers.Dense(64, activation="relu"),
                              layers.Dense(32, activation="relu"), layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    if case == "first_step":
        model.fit(x[:64], y[:64], epochs=1, batch_size=64, verbose=0)
        print(json.dumps({"framework": "tensorflow-keras", "case": f"start to first step, tf {tf.__version__}, "
                          f"keras {keras.__version__}", "ms": round((time.perf_counter() - t_start) * 1e3, 1)}))
        sys.exit(0)
    model.fit(x, y, epochs=1, batch_size=batch, verbose=0)  # trace and warm up
    epochs = 10
    t0 = time.perf_counter()
    model.fit(x, y, epochs=epochs, batch_size=batch, verbose=0)
    us = (time.perf_counter() - t0) / (epochs * 2048 / batch) * 1e6
    name = f"seed model fit batch {batch}"
elif case == "cnn":
    x = np.random.rand(batch, 32, 32, 3).astype("float32")
    y = np.random.randint(0, 10, (batch,)).astype("float32")
    same = dict(padding="same", activation="relu")
    model = keras.Sequential([layers.Input(shape=(32, 32, 3)), layers.Conv2D(32, 3, **same),
                              layers.Conv2D(32, 3, **same), layers.MaxPooling2D(2), layers.Conv2D(64, 3, **same),
                              layers.Conv2D(64, 3, **same), layers.MaxPooling2D(2), layers.Flatten(),
                              layers.Dense(128, activation="relu"), layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    xs, ys = np.tile(x, (5, 1, 1, 1)), np.tile(y, 5)  # 5 steps per epoch on the same batch
    model.fit(xs, ys, epochs=1, batch_size=batch, verbose=0, shuffle=False)
    t0 = time.perf_counter()
    model.fit(xs, ys, epochs=2, batch_size=batch, verbose=0, shuffle=False)
    us = (time.perf_counter() - t0) / 10 * 1e6
    name = f"VGG-style CNN fit batch {batch}"
elif case in ("lstm", "gru"):
    x = np.random.rand(batch, 100, 128).astype("float32")
    y = np.random.rand(batch, 1).astype("float32")
    rnn = layers.GRU(256) if case == "gru" else layers.LSTM(256)
    model = keras.Sequential([layers.Input(shape=(100, 128)), rnn, layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    xs, ys = np.tile(x, (3, 1, 1)), np.tile(y, (3, 1))  # 3 steps per epoch on the same batch
    model.fit(xs, ys, epochs=1, batch_size=batch, verbose=0, shuffle=False)
    t0 = time.perf_counter()
    model.fit(xs, ys, epochs=2, batch_size=batch, verbose=0, shuffle=False)
    us = (time.perf_counter() - t0) / 6 * 1e6
    name = f"{case.upper()}(256) over 100 steps fit batch {batch}"
elif case in ("text", "text_pre"):
    state = 12345  # bench/text_step's linear congruential sequence: the same lengths, ids and labels

    def nxt():
        global state
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return state >> 33

    lists = []
    y = np.zeros((batch, 1), dtype="float32")
    for b in range(batch):
        n = 20 + nxt() % 81
        lists.append([1 + nxt() % 9999 for _ in range(n)])
        y[b, 0] = nxt() % 2
    # "text_pre": pad_sequences's default padding (before the tokens), as bench/text_step's "pre"
    x = keras.utils.pad_sequences(lists, maxlen=100, padding="pre" if case == "text_pre" else "post")
    model = keras.Sequential([layers.Input(shape=(100,), dtype="int32"), layers.Embedding(10000, 128, mask_zero=True),
                              layers.Bidirectional(layers.LSTM(128)), layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="adam", loss="binary_crossentropy")
    xs, ys = np.tile(x, (3, 1)), np.tile(y, (3, 1))  # 3 steps per epoch on the same batch
    model.fit(xs, ys, epochs=1, batch_size=batch, verbose=0, shuffle=False)
    t0 = time.perf_counter()
    model.fit(xs, ys, epochs=2, batch_size=batch, verbose=0, shuffle=False)
    us = (time.perf_counter() - t0) / 6 * 1e6
    side = "left" if case == "text_pre" else "right"
    name = f"Embedding + Bidirectional(LSTM(128)) text classifier, 100 {side}-padded tokens, fit batch {batch}"
elif case == "resize":
    x = tf.constant(np.random.uniform(0, 1, (batch, 128, 128, 3)).astype("float32"))
    for method, aa, size in RESIZE_CASES:
        f = tf.function(lambda v, m=method, a=aa, s=size: keras.ops.image.resize(v, (s, s), interpolation=m,
                                                                                 antialias=a))
        print(json.dumps({"framework": "tensorflow-keras", "case": f"resize ({batch}, 128, 128, 3) to {size}x{size} "
                          f"{method}{' antialias' if aa else ''}", "ms": round(best_call(f, x) * 1e3, 3)}))
    sys.exit(0)
elif case == "mel":
    fft = int(sys.argv[5]) if len(sys.argv) > 5 else 512
    stride = int(sys.argv[6]) if len(sys.argv) > 6 else 160
    x = tf.constant(np.random.uniform(-1, 1, (batch, 16000)).astype("float32"))
    layer = layers.MelSpectrogram(fft_length=fft, sequence_stride=stride)
    us = best_call(tf.function(lambda v: layer(v)), x) * 1e6
    name = f"MelSpectrogram forward (tf.function, best of 20) batch {batch}, fft_length {fft}, stride {stride}"
else:
    x = np.random.rand(batch, 784).astype("float32")
    y = np.random.randint(0, 10, (batch,)).astype("float32")
    model = keras.Sequential([layers.Input(shape=(784,)), layers.Dense(512, activation="relu"),
                              layers.Dense(512, activation="relu"), layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    xs, ys = np.tile(x, (20, 1)), np.tile(y, 20)  # 20 steps per epoch on the same batch
    model.fit(xs, ys, epochs=1, batch_size=batch, verbose=0, shuffle=False)
    t0 = time.perf_counter()
    model.fit(xs, ys, epochs=3, batch_size=batch, verbose=0, shuffle=False)
    us = (time.perf_counter() - t0) / 60 * 1e6
    name = f"wide MLP fit batch {batch}"
print(json.dumps({"framework": "tensorflow-keras", "case": f"{name}, threads={threads or 'default'}, {policy}, "
                  f"tf {tf.__version__}, keras {keras.__version__}", "us_per_step": round(us, 1)}))
