# Regenerates tests/data/keras_fft.json: keras.ops.fft, fft2, ifft2, rfft and irfft (Keras 3 on TensorFlow) on
# power-of-two and other lengths (odd, prime, Bluestein-sized), rfft's and irfft's cropping and zero-padding by
# fft_length, float64, and each op's gradient of sum(real · wr + imag · wi) (irfft: sum(y · w)) with respect to
# its inputs. tests/keras/test_fft.cpp checks Osprey's ops against it.
# Run: python3 tests/keras/keras_fft_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import ops

rng = np.random.default_rng(2026)
out = {"keras": keras.__version__, "tensorflow": tf.__version__}


def tl(v):
    return np.asarray(v).tolist()


def complex_case(fn, shape, dtype="float32"):
    re = rng.normal(0, 1, shape).astype(dtype)
    im = rng.normal(0, 1, shape).astype(dtype)
    a, b = tf.constant(re), tf.constant(im)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        yr, yi = fn((a, b))
        wr = rng.uniform(-1, 1, yr.shape).astype(dtype)
        wi = rng.uniform(-1, 1, yi.shape).astype(dtype)
        loss = tf.reduce_sum(yr * wr) + tf.reduce_sum(yi * wi)
    ga, gb = tape.gradient(loss, [a, b])
    return {"real": tl(re), "imag": tl(im), "dtype": dtype, "out_real": tl(yr), "out_imag": tl(yi),
            "w_real": tl(wr), "w_imag": tl(wi), "grad_real": tl(ga), "grad_imag": tl(gb)}


def rfft_case(shape, fft_length, dtype="float32"):
    x = rng.normal(0, 1, shape).astype(dtype)
    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        yr, yi = ops.rfft(t, fft_length)
        wr = rng.uniform(-1, 1, yr.shape).astype(dtype)
        wi = rng.uniform(-1, 1, yi.shape).astype(dtype)
        loss = tf.reduce_sum(yr * wr) + tf.reduce_sum(yi * wi)
    # TensorFlow's gradient where fft_length crops the input fails or broadcasts wrongly (rfft of 5 samples at
    # fft_length 1 gives every sample the same gradient): none is stored, the test checks Osprey's by its own rule.
    grad = tl(tape.gradient(loss, t)) if fft_length is None or fft_length >= shape[-1] else None
    return {"x": tl(x), "fft_length": fft_length, "dtype": dtype, "out_real": tl(yr), "out_imag": tl(yi),
            "w_real": tl(wr), "w_imag": tl(wi), "grad": grad}


def irfft_case(shape, fft_length, dtype="float32"):
    re = rng.normal(0, 1, shape).astype(dtype)
    im = rng.normal(0, 1, shape).astype(dtype)
    a, b = tf.constant(re), tf.constant(im)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = ops.irfft((a, b), fft_length)
        w = rng.uniform(-1, 1, y.shape).astype(dtype)
        loss = tf.reduce_sum(y * w)
    ga = gb = None  # as rfft's: none where fft_length crops the bins
    if fft_length is None or fft_length // 2 + 1 >= shape[-1]:
        ga, gb = (tl(g) for g in tape.gradient(loss, [a, b]))
    return {"real": tl(re), "imag": tl(im), "fft_length": fft_length, "dtype": dtype, "out": tl(y), "w": tl(w),
            "grad_real": ga, "grad_imag": gb}


out["fft"] = [complex_case(ops.fft, s, d) for s, d in [
    ((3, 8), "float32"), ((2, 3, 12), "float32"), ((4, 5), "float32"), ((2, 1), "float32"), ((2, 7), "float32"),
    ((2, 97), "float32"), ((1, 2048), "float32"), ((3, 10), "float64"), ((16,), "float32")]]
out["fft2"] = [complex_case(ops.fft2, s, d) for s, d in [((2, 4, 8), "float32"), ((3, 6, 5), "float32"),
                                                           ((2, 2, 3, 7), "float64")]]
out["ifft2"] = [complex_case(ops.ifft2, s, d) for s, d in [((2, 4, 8), "float32"), ((3, 6, 5), "float32")]]
out["rfft"] = [rfft_case(s, n, d) for s, n, d in [
    ((4, 16), None, "float32"), ((3, 10), None, "float32"), ((3, 9), None, "float32"), ((2, 10), 12, "float32"),
    ((2, 10), 6, "float32"), ((2, 10), 7, "float32"), ((2, 3, 1000), None, "float32"), ((2, 512), None, "float32"),
    ((3, 11), None, "float64"), ((5,), 1, "float32")]]
out["irfft"] = [irfft_case(s, n, d) for s, n, d in [
    ((3, 9), None, "float32"), ((3, 9), 15, "float32"), ((3, 9), 17, "float32"), ((3, 9), 10, "float32"),
    ((2, 9), 40, "float32"), ((2, 2, 6), 11, "float32"), ((2, 257), None, "float32"), ((2, 301), 600, "float32"),
    ((3, 6), None, "float64"), ((2, 4), 1, "float32")]]
# keras.ops' docstring example: rfft of 0..4 and rfft with fft_length 3.
out["doc_rfft"] = [tl(v) for v in ops.rfft(np.arange(5.0, dtype="float32"))]

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_fft.json"), "w") as f:
    json.dump(out, f)
print("wrote keras_fft.json")
