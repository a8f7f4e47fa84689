# Regenerates tests/data/keras_resize.json: tf.image.resize's methods (bilinear, nearest, bicubic, area, lanczos3,
# lanczos5, gaussian, mitchellcubic), each with and without antialias, down, up and mixed, with the gradients
# TensorFlow has (none for area); keras.ops.image.resize's options (aspect-ratio crop and pad, channels_first, one
# image, integer images); keras.ops.image.scale_and_translate (Keras's own weights) with gradients; the Resizing
# and UpSampling2D layers with the new interpolations, and their configs.
# tests/keras/test_resize.cpp checks Osprey against it.
# Run: python3 tests/keras/keras_resize_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf

rng = np.random.default_rng(61)
ref = {}


def tl(v):  # float32 values with the 9 digits that keep them exact
    a = np.asarray(v)
    if a.dtype.kind == "f":
        return np.vectorize(lambda x: float(f"{x:.9g}"), otypes=[object])(a).tolist()
    return a.tolist()


def grad(f, x, w):
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(f(xt) * w)
    g = tape.gradient(loss, xt)
    return None if g is None else g.numpy()


img = rng.uniform(0, 1, (2, 7, 9, 2)).astype("float32")
ref["img"] = tl(img)
methods = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic"]
sizes = [(4, 5), (11, 13), (7, 20), (3, 3), (1, 1)]
cases = []
for m in methods:
    for aa in (False, True):
        for (h, w) in sizes:
            f = lambda x: tf.image.resize(x, (h, w), method=m, antialias=aa)
            out = f(img).numpy()
            wts = rng.uniform(-1, 1, out.shape).astype("float32")
            try:
                g = grad(f, img, wts)
            except LookupError:  # ResizeArea has no gradient in TensorFlow
                g = None
            cases.append({"method": m, "antialias": aa, "size": [h, w], "out": tl(out), "w": tl(wts),
                          "grad": None if g is None else tl(g)})
ref["resize"] = cases

# tf.raw_ops.ScaleAndTranslate with a translation (ops::scale_and_translate).
raw = []
for (kernel, aa) in [("lanczos3", True), ("box", False), ("keyscubic", False), ("mitchellcubic", True),
                     ("lanczos1", True), ("gaussian", False), ("triangle", True)]:
    out = tf.raw_ops.ScaleAndTranslate(images=img, size=[5, 11], scale=[0.8, 1.3], translation=[0.4, -0.7],
                                       kernel_type=kernel, antialias=aa)
    raw.append({"kernel": kernel, "antialias": aa, "out": tl(out)})
ref["raw_scale_and_translate"] = raw

# keras.ops.image.resize's options.
wide = rng.uniform(0, 255, (2, 6, 10, 3)).astype("float32")
ref["wide"] = tl(wide)
ops_cases = []
for kw in [dict(interpolation="bicubic", crop_to_aspect_ratio=True),
           dict(interpolation="lanczos3", pad_to_aspect_ratio=True, fill_value=7.0),
           dict(interpolation="area", antialias=True),
           dict(interpolation="bilinear", antialias=True, data_format="channels_first"),
           dict(interpolation="lanczos5", single=True)]:
    kw = dict(kw)
    single = kw.pop("single", False)
    x = wide[0] if single else wide
    if kw.get("data_format") == "channels_first":
        x = np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))
    out = keras.ops.image.resize(x, (5, 5), **kw)
    ops_cases.append({"kwargs": kw, "single": single, "out": tl(out)})
ref["ops_resize"] = ops_cases
ints = rng.integers(0, 256, (1, 5, 6, 1)).astype("int32")
ref["ints"] = tl(ints)
ref["ints_bicubic"] = tl(keras.ops.image.resize(ints, (7, 4), interpolation="bicubic"))
ref["ints_nearest"] = tl(keras.ops.image.resize(ints, (7, 4), interpolation="nearest"))
for bad in [dict(interpolation="gaussian"), dict(fill_mode="reflect")]:
    try:
        keras.ops.image.resize(wide, (5, 5), **bad)
    except ValueError as e:
        ref.setdefault("ops_errors", []).append({"kwargs": bad, "message": str(e)})

# keras.ops.image.scale_and_translate.
vol = rng.uniform(-1, 1, (2, 6, 8, 3)).astype("float32")
ref["vol"] = tl(vol)
st_cases = []
for (shape, scale, trans, dims, method, aa) in [
        ((2, 9, 5, 3), [1.5, 0.6], [0.5, -1.0], (1, 2), "linear", True),
        ((2, 9, 5, 3), [1.5, 0.6], [0.5, -1.0], (1, 2), "cubic", False),
        ((2, 4, 8, 3), [0.7, 1.0], [0.0, 2.5], (1, 2), "lanczos3", True),
        ((2, 12, 8, 3), [2.0, 1.0], [0.0, 0.0], (1,), "lanczos5", False),
        ((2, 6, 8, 5), [1.7], [0.3], (-1,), "bicubic", True),
        ((2, 3, 4, 3), [0.5, 0.5], [0.0, 0.0], (1, 2), "trilinear", True)]:
    f = lambda x: keras.ops.image.scale_and_translate(x, shape, np.array(scale, "float32"),
                                                       np.array(trans, "float32"), dims, method, antialias=aa)
    out = f(vol).numpy()
    wts = rng.uniform(-1, 1, out.shape).astype("float32")
    st_cases.append({"shape": list(shape), "scale": scale, "translation": trans, "dims": list(dims),
                     "method": method, "antialias": aa, "out": tl(out), "w": tl(wts), "grad": tl(grad(f, vol, wts))})
ref["scale_and_translate"] = st_cases
# (Keras 3.15's TensorFlow backend fails on integer images here: tf.clip_by_value of float and int32.)

# Layers: Resizing and UpSampling2D with the new interpolations, their configs.
layer_cases = []
for cfg in [dict(height=5, width=4, interpolation="bicubic", antialias=True),
            dict(height=9, width=12, interpolation="lanczos5"),
            dict(height=3, width=3, interpolation="area", crop_to_aspect_ratio=True)]:
    layer = keras.layers.Resizing(**cfg)
    layer_cases.append({"config": layer.get_config(), "out": tl(layer(wide))})
ref["resizing"] = layer_cases
up_cases = []
for interp in ["bicubic", "lanczos3", "area"]:
    layer = keras.layers.UpSampling2D(size=(2, 3), interpolation=interp)
    out = layer(img)
    up_cases.append({"config": layer.get_config(), "out": tl(out)})
ref["upsampling"] = up_cases

path = os.path.join(os.path.dirname(__file__), "..", "data", "keras_resize.json")
with open(path, "w") as f:
    json.dump(ref, f)
print("wrote", path, os.path.getsize(path), "bytes")
