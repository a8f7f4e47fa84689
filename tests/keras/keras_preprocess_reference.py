# Regenerates tests/data/keras_preprocess.json: Keras 3's Normalization (adapt on an array and on batches, every axis
# form, given values, invert; the gradient through it), RandomContrast with a one-value range (a fixed factor, so the
# output is deterministic) and its factor parsing, RandomCrop's inference window (the documented largest centred
# window of the target's aspect ratio, resized: keras.ops.image.resize with crop_to_aspect_ratio), UpSampling2D's
# bilinear interpolation (forward and gradient) and Resizing's pad_to_aspect_ratio.
# tests/keras/test_preprocessing.cpp checks Osprey's layers against it.
# Run: python3 tests/keras/keras_preprocess_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import layers as L

rng = np.random.default_rng(23)
ref = {}


def grad(layer, x, w):
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt)
        loss = tf.reduce_sum(y * w)
    return np.asarray(y), tape.gradient(loss, xt).numpy()


# Normalization.
x = rng.normal(3.0, 2.0, (20, 4, 3)).astype("float32")
probe = rng.normal(0.0, 3.0, (5, 4, 3)).astype("float32")
norm = []
for axis in [-1, (1, 2), None, 1]:
    layer = L.Normalization(axis=axis)
    layer.adapt(x)
    w = rng.uniform(-1, 1, (5, 4, 3)).astype("float32")
    y, g = grad(layer, probe, w)
    batched = L.Normalization(axis=axis)
    batched.adapt([x[:7], x[7:16], x[16:]])
    norm.append({"axis": [] if axis is None else list(np.atleast_1d(axis).tolist()),
                 "mean": np.asarray(layer.adapt_mean).tolist(), "variance": np.asarray(layer.adapt_variance).tolist(),
                 "y": y.tolist(), "w": w.tolist(), "grad": g.tolist(),
                 "batched_mean": np.asarray(batched.adapt_mean).tolist(),
                 "batched_variance": np.asarray(batched.adapt_variance).tolist()})
given = L.Normalization(mean=[1.0, -2.0, 0.5], variance=[4.0, 0.25, 1e-16])
inverted = L.Normalization(axis=-1, mean=2.0, variance=9.0, invert=True)
ref["normalization"] = {"x": x.tolist(), "probe": probe.tolist(), "cases": norm,
                        "given": np.asarray(given(probe)).tolist(), "inverted": np.asarray(inverted(probe)).tolist(),
                        "given_config": {k: given.get_config()[k] for k in ["axis", "mean", "variance", "invert"]}}

# RandomContrast: factor (-0.3, 0.3) parses to (lower, upper) = (-0.3, 0.3), a factor of 1.3 for every image.
img = rng.uniform(0, 255, (3, 5, 6, 2)).astype("float32")
ref["contrast"] = {"x": img.tolist(),
                   "y": np.asarray(L.RandomContrast((-0.3, 0.3))(img, training=True)).tolist(),
                   "y_range": np.asarray(L.RandomContrast((-0.3, 0.3), value_range=(20, 200))(img, training=True)).tolist(),
                   "inference_identity": bool(np.array_equal(np.asarray(L.RandomContrast(0.5)(img, training=False)), img)),
                   "factor_single": list(L.RandomContrast(0.5).factor),
                   "factor_pair": list(L.RandomContrast((0.6, 0.2)).factor)}
bad = []
for f in [1.5, -0.1, (1.2, 1.5), (-0.5, -0.1)]:
    try:
        L.RandomContrast(f)
        bad.append(False)
    except ValueError:
        bad.append(True)
ref["contrast"]["bad_rejected"] = bad

# RandomCrop's window where it does not draw one (inference; training on a smaller image).
crop = rng.uniform(0, 255, (2, 6, 9, 3)).astype("float32")
small = rng.uniform(0, 255, (2, 3, 8, 3)).astype("float32")
ref["crop"] = {"x": crop.tolist(), "small": small.tolist(),
               "y_4x4": np.asarray(keras.ops.image.resize(crop, (4, 4), crop_to_aspect_ratio=True)).tolist(),
               "y_5x3": np.asarray(keras.ops.image.resize(crop, (5, 3), crop_to_aspect_ratio=True)).tolist(),
               "small_4x4": np.asarray(keras.ops.image.resize(small, (4, 4), crop_to_aspect_ratio=True)).tolist()}

# UpSampling2D bilinear, both data formats.
up = rng.uniform(-1, 1, (2, 3, 4, 2)).astype("float32")
w_up = rng.uniform(-1, 1, (2, 6, 12, 2)).astype("float32")
y, g = grad(L.UpSampling2D((2, 3), interpolation="bilinear"), up, w_up)
yf, gf = grad(L.UpSampling2D((2, 3), data_format="channels_first", interpolation="bilinear"),
              up.transpose(0, 3, 1, 2), w_up.transpose(0, 3, 1, 2))
ref["upsampling"] = {"x": up.tolist(), "w": w_up.tolist(), "y": y.tolist(), "grad": g.tolist(),
                     "y_first": yf.tolist(), "grad_first": gf.tolist()}

# Resizing with pad_to_aspect_ratio: a wide image padded above and below, a tall one left and right.
wide = rng.uniform(0, 255, (2, 4, 9, 3)).astype("float32")
tall = rng.uniform(0, 255, (2, 8, 3, 3)).astype("float32")
ref["pad"] = {"wide": wide.tolist(), "tall": tall.tolist(),
              "wide_6x6": np.asarray(L.Resizing(6, 6, pad_to_aspect_ratio=True, fill_value=3.0)(wide)).tolist(),
              "tall_5x7": np.asarray(L.Resizing(5, 7, pad_to_aspect_ratio=True, fill_value=-1.0)(tall)).tolist(),
              "tall_5x7_nearest": np.asarray(L.Resizing(5, 7, interpolation="nearest", pad_to_aspect_ratio=True)(tall)).tolist()}

# RandomBrightness: fixed factors (a one-point range) make the delta deterministic; its parsing and config.
brng = np.random.default_rng(83)
bimg = brng.uniform(0, 255, (3, 4, 5, 3)).astype("float32")
bright = L.RandomBrightness((0.3, -0.1), value_range=(255, 0), name="bright")
ref["brightness"] = {"x": bimg.tolist(),
                     "y_up": np.asarray(L.RandomBrightness((0.2, 0.2))(bimg, training=True)).tolist(),
                     "y_down_range": np.asarray(L.RandomBrightness((-0.5, -0.5), value_range=(20, 200))(
                         bimg, training=True)).tolist(),
                     "inference_identity": bool(np.array_equal(np.asarray(L.RandomBrightness(0.5)(bimg, training=False)),
                                                               bimg)),
                     "factor_single": list(L.RandomBrightness(0.4).factor),
                     "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in bright.get_config().items()
                                if k in ("name", "factor", "value_range", "seed", "data_format")}}
bad = []
for f in [1.5, (1.2, 1.5), (-1.5, -1.2)]:
    try:
        L.RandomBrightness(f)
        bad.append(False)
    except ValueError:
        bad.append(True)
ref["brightness"]["bad_rejected"] = bad

# RandomShear: one sign per image for both factors, so a fixed (0.3, 0.3) x_factor shears each image by +0.3 or
# -0.3; the two transforms as Keras applies them (its transform_images under given shear factors).
srng = np.random.default_rng(71)
shear_x = srng.uniform(0, 255, (2, 6, 7, 3)).astype("float32")
shear = L.RandomShear(x_factor=(0.3, 0.3))
sheared = {}
for sign in (1, -1):
    sheared[sign] = np.asarray(shear.transform_images(shear_x, {"shear_factor": np.array([[0.3 * sign, 0.0]] * 2,
                                                                                          "float32")}))
shear_y = L.RandomShear(x_factor=(0.1, 0.1), y_factor=(0.25, 0.25), fill_mode="constant", fill_value=9.0,
                        interpolation="nearest")
sheared_y = {sign: np.asarray(shear_y.transform_images(
    shear_x, {"shear_factor": np.array([[0.1 * sign, 0.25 * sign]] * 2, "float32")})) for sign in (1, -1)}
ref["shear"] = {"x": shear_x.tolist(), "plus": sheared[1].tolist(), "minus": sheared[-1].tolist(),
                "y_plus": sheared_y[1].tolist(), "y_minus": sheared_y[-1].tolist(),
                "inference_identity": bool(np.array_equal(np.asarray(shear(shear_x, training=False)), shear_x)),
                "config": L.RandomShear(x_factor=(0.1, 0.3), y_factor=(0.0, 0.2), fill_mode="wrap",
                                        name="shear").get_config()}

# keras.ops.image.perspective_transform (the homography solved for, applied by ImageProjectiveTransformV3) and
# RandomPerspective's parsing; the layer's own draws are Osprey's.
prng2 = np.random.default_rng(79)
persp_x = prng2.uniform(0, 255, (3, 9, 11, 2)).astype("float32")
corners = np.array([[0, 0], [10, 0], [0, 8], [10, 8]], "float32")
persp_start = np.stack([corners] * 3)
persp_end = (persp_start + persp_start * prng2.uniform(-0.25, 0.25, (3, 4, 2))).astype("float32")
ref["perspective"] = {
    "x": persp_x.tolist(), "start": persp_start.tolist(), "end": persp_end.tolist(),
    "y": np.asarray(keras.ops.image.perspective_transform(persp_x, persp_start, persp_end)).tolist(),
    "y_nearest": np.asarray(keras.ops.image.perspective_transform(persp_x, persp_start, persp_end,
                                                                  interpolation="nearest", fill_value=5.0)).tolist(),
    "y_first": np.asarray(keras.ops.image.perspective_transform(
        persp_x.transpose(0, 3, 1, 2), corners, persp_end[0], data_format="channels_first")).tolist(),
    "factor_single": list(L.RandomPerspective(0.4).factor),
    "config": L.RandomPerspective(factor=(0.2, 0.8), scale=0.6, interpolation="nearest", fill_value=2.0,
                                  name="persp").get_config(),
}

with open(os.path.join(os.path.dirname(__file__), "..", "data", "keras_preprocess.json"), "w") as f:
    json.dump(ref, f)
print("wrote", sorted(ref))
