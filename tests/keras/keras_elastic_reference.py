# keras.ops.image.elastic_transform and keras.layers.RandomElasticTransform against Keras 3 on TensorFlow with a given
# noise field: tf.random.stateless_normal (the backend's only draw for the displacement, used for both axes) is
# replaced by a function returning recorded standard normal values, so Keras's own code computes the rest (the
# Gaussian blur, the grid, map_coordinates, the layer's alpha and sigma, its choice per image and its clip).
# Also a model Keras saves with the layer (tests/data/keras_elastic.keras: identity in inference) and the layer's
# configs. Regenerates tests/data/keras_elastic.json, read by tests/keras/test_elastic.cpp.
# Run: python3 tests/keras/keras_elastic_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf, keras
from keras import layers as L

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
rng = np.random.default_rng(331)
NOISE = {}
real_normal = tf.random.stateless_normal


def fake_normal(shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None, **kw):
    return tf.constant(NOISE["value"], dtype=dtype)


tf.random.stateless_normal = fake_normal


def tl(v):
    return np.asarray(v).tolist()


imgs = rng.uniform(0, 255, (3, 12, 10, 2)).astype("float32")
cases = []
for alpha, sigma, interp, mode, fill in ((20.0, 5.0, "bilinear", "reflect", 0.0), (6.0, 1.7, "bilinear", "constant", 9.0),
                                         (4.0, 2.2, "nearest", "wrap", 0.0), (8.0, 0.8, "bilinear", "nearest", 0.0)):
    noise = rng.normal(0, 1, (3, 12, 10)).astype("float32")
    NOISE["value"] = noise
    out = keras.ops.image.elastic_transform(imgs, alpha=alpha, sigma=sigma, interpolation=interp, fill_mode=mode,
                                            fill_value=fill, seed=1)
    cases.append({"alpha": alpha, "sigma": sigma, "interpolation": interp, "fill_mode": mode, "fill_value": fill,
                  "noise": tl(noise), "out": tl(out)})
# channels_first, one image.
noise1 = rng.normal(0, 1, (1, 12, 10)).astype("float32")
NOISE["value"] = noise1
first = keras.ops.image.elastic_transform(np.transpose(imgs[0], (2, 0, 1)), alpha=10.0, sigma=3.0,
                                          data_format="channels_first", seed=1)
ref = {"images": tl(imgs), "ops": cases, "first": {"noise": tl(noise1), "out": tl(first)}}

# The layer: its transform_images under a given draw (which images, the distortion) and noise.
layer = L.RandomElasticTransform(factor=(0.2, 0.9), scale=0.7, fill_mode="constant", fill_value=5.0,
                                 value_range=(0, 200), name="elastic")
noise = rng.normal(0, 1, (3, 12, 10)).astype("float32")
NOISE["value"] = noise
apply = np.array([True, False, True])
out = layer.transform_images(imgs, {"apply_transform": tf.constant(apply), "distortion_factor": tf.constant(0.6),
                                    "seed": 7}, training=True)
ref["layer"] = {"config": layer.get_config(), "noise": tl(noise), "apply": tl(apply), "distortion": 0.6,
                "out": tl(out)}
ref["default_config"] = L.RandomElasticTransform().get_config()

tf.random.stateless_normal = real_normal
inp = keras.Input((12, 10, 2), name="image")
h = L.RandomElasticTransform(scale=0.5, seed=3, name="elastic")(inp)
model = keras.Model(inp, L.Dense(2, name="out")(L.GlobalAveragePooling2D(name="pool")(h)), name="elastic_model")
model.save(os.path.join(DATA, "keras_elastic.keras"))
ref["model"] = {"predict": tl(model.predict(imgs, verbose=0)), "config": model.get_layer("elastic").get_config()}
with open(os.path.join(DATA, "keras_elastic.json"), "w") as f:
    json.dump(ref, f, separators=(",", ":"))
    f.write("\n")
print("wrote keras_elastic.json and keras_elastic.keras")
