# keras.ops.image's pad_images, crop_images, extract_patches (2D and 3D), sobel_edges, ssim and map_coordinates
# against Keras 3 on TensorFlow: values for each option, the gradients of a weighted sum with respect to the inputs
# (and map_coordinates' coordinates), and Keras's errors. Regenerates tests/data/keras_image_ops.json, read by
# tests/keras/test_image_ops_more.cpp. Run: python3 tests/keras/keras_image_ops_reference.py (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf, keras
from keras import ops

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(307)
I = ops.image


def tl(v):
    return np.asarray(v).tolist()


def grad(f, *xs):
    """d/dx of sum(f(x) * w) for a fixed random w, for each x."""
    ts = [tf.Variable(x) for x in xs]
    with tf.GradientTape() as tape:
        y = f(*ts)
        w = tf.constant(np.random.default_rng(5).uniform(-1, 1, y.shape).astype("float32"))
        s = tf.reduce_sum(tf.cast(y, "float32") * w)
    return [tl(g) for g in tape.gradient(s, ts)], tl(w)


img = rng.uniform(0, 1, (2, 7, 9, 3)).astype("float32")
ref = {"img": tl(img)}
first = lambda x: np.transpose(x, (0, 3, 1, 2))  # noqa: E731

ref["pad"] = {
    "a": tl(I.pad_images(img, top_padding=1, left_padding=2, bottom_padding=0, right_padding=3)),
    "target": tl(I.pad_images(img, top_padding=2, target_height=12, right_padding=1, target_width=11)),
    "unbatched_first": tl(I.pad_images(first(img)[0], bottom_padding=2, target_height=10, left_padding=0,
                                       target_width=9, data_format="channels_first")),
}
ref["crop"] = {
    "a": tl(I.crop_images(img, top_cropping=1, left_cropping=2, bottom_cropping=2, right_cropping=3)),
    "target": tl(I.crop_images(img, top_cropping=2, target_height=3, right_cropping=1, target_width=5)),
    "unbatched_first": tl(I.crop_images(first(img)[0], bottom_cropping=2, target_height=4, left_cropping=1,
                                        target_width=6, data_format="channels_first")),
}
vol = rng.uniform(0, 1, (2, 5, 6, 7, 2)).astype("float32")
ref["vol"] = tl(vol)
ref["patches"] = {
    "size3": tl(I.extract_patches(img, 3)),
    "size_2_3_strides_1_2": tl(I.extract_patches(img, (2, 3), strides=(1, 2))),
    "same": tl(I.extract_patches(img, (3, 4), strides=(2, 2), padding="same")),
    "dilated": tl(I.extract_patches(img, 2, strides=1, dilation_rate=2)),
    "first": tl(I.extract_patches(first(img), 3, strides=2, data_format="channels_first")),
    "unbatched": tl(I.extract_patches(img[0], (3, 3), strides=(2, 3))),
    "3d": tl(I.extract_patches(vol, (2, 3, 2))),
    "3d_strides": tl(I.extract_patches(vol, (2, 2, 3), strides=(1, 2, 2), padding="same")),
}
ref["patches_grad"] = grad(lambda x: I.extract_patches(x, 3, strides=2), img)
ref["sobel"] = {"last": tl(I.sobel_edges(img)), "first": tl(I.sobel_edges(first(img), data_format="channels_first"))}
ref["sobel_grad"] = grad(lambda x: I.sobel_edges(x), img)
big1 = rng.uniform(0, 1, (3, 16, 14, 2)).astype("float32")
big2 = np.clip(big1 + rng.normal(0, 0.1, big1.shape), 0, 1).astype("float32")
ref["ssim_images"] = [tl(big1), tl(big2)]
ref["ssim"] = {
    "default": tl(I.ssim(big1, big2)),
    "options": tl(I.ssim(big1 * 255, big2 * 255, max_val=255.0, filter_size=5, filter_sigma=1.0, k1=0.02, k2=0.05)),
    "unbatched_first": tl(I.ssim(first(big1)[0], first(big2)[0], filter_size=7, data_format="channels_first")),
    "same": tl(I.ssim(big1, big1)),
}
ref["ssim_grad"] = grad(lambda a, b: I.ssim(a, b, filter_size=5), big1, big2)

# map_coordinates: a (5, 6) array and a (3, 4, 5) one, coordinates inside, on and outside the edges.
arr2 = rng.uniform(-1, 1, (5, 6)).astype("float32")
coords2 = np.stack(np.meshgrid(np.linspace(-2.7, 6.3, 7), np.linspace(-1.5, 7.5, 8), indexing="ij")).astype("float32")
coords2[0, 0, 0], coords2[1, 0, 0] = 2.5, 3.5   # halves: round half to even
arr3 = rng.uniform(-1, 1, (3, 4, 5)).astype("float32")
coords3 = rng.uniform(-1.5, 5.5, (3, 6, 2)).astype("float32")
iarr = rng.integers(0, 100, (5, 6)).astype("int32")
ref["map_inputs"] = {"arr2": tl(arr2), "coords2": tl(coords2), "arr3": tl(arr3), "coords3": tl(coords3),
                     "iarr": tl(iarr)}
maps = {}
for order in (0, 1):
    for mode in ("constant", "nearest", "wrap", "reflect"):
        maps[f"{order}/{mode}"] = tl(I.map_coordinates(arr2, coords2, order, fill_mode=mode, fill_value=-3.0))
        maps[f"{order}/{mode}/3d"] = tl(I.map_coordinates(arr3, coords3, order, fill_mode=mode))
    maps[f"{order}/int"] = tl(I.map_coordinates(iarr, coords2, order, fill_mode="nearest"))
# "mirror": Keras's TensorFlow backend maps an index equal to the size to itself, which gather_nd refuses on the CPU;
# coordinates that never reach it.
inside = np.clip(coords2, 0.0, 3.9).astype("float32")
ref["map_inputs"]["inside"] = tl(inside)
for order in (0, 1):
    maps[f"{order}/mirror"] = tl(I.map_coordinates(arr2, inside, order, fill_mode="mirror"))
ref["map"] = maps
ref["map_grad"] = grad(lambda a, c: I.map_coordinates(a, c, 1, fill_mode="constant", fill_value=0.5), arr2, coords2)
try:
    I.map_coordinates(arr2, np.full((2, 1, 1), 4.5, "float32"), 1, fill_mode="mirror")
    ref["mirror_edge_error"] = None
except Exception as e:  # noqa: BLE001
    ref["mirror_edge_error"] = type(e).__name__

with open(os.path.join(HERE, "..", "data", "keras_image_ops.json"), "w") as f:
    json.dump(ref, f, separators=(",", ":"))
    f.write("\n")
print("wrote", sorted(ref))
