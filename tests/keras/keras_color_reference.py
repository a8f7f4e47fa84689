# Regenerates tests/data/keras_color.json: Keras 3's color image ops (keras.ops.image.rgb_to_grayscale, rgb_to_hsv,
# hsv_to_rgb: values and gradients) and its color augmentation layers (RandomGrayscale, RandomInvert, AutoContrast,
# Solarization, RandomPosterization, RandomColorDegeneration, RandomSaturation, RandomHue, RandomSharpness,
# Equalization, RandomColorJitter): each random layer's transform_images under a given transformation (the
# numbers a draw gives), the deterministic ones called as in fit, the parsed factors, configs and rejections.
# tests/keras/test_color_layers.cpp checks Osprey's layers against it.
# Run: python3 tests/keras/keras_color_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import layers as L

rng = np.random.default_rng(53)
ref = {}


def tl(v):
    return np.asarray(v).tolist()


def first(x):  # channels_last -> channels_first
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))


img = rng.uniform(0, 255, (4, 5, 6, 3)).astype("float32")
# Pixels at the hue's branch points: black, gray, the primaries, yellow, two equal maxima.
img[0, 0] = [[0, 0, 0], [100, 100, 100], [255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0]]
img[1, 0, :2] = [[200, 200, 30], [30, 200, 200]]
unit = img / np.float32(255.0)
ref["img"] = tl(img)

# The ops, and their gradients on a random image (no ties between channels).
smooth = rng.uniform(0.05, 0.95, (2, 3, 4, 3)).astype("float32")
w3 = rng.uniform(-1, 1, (2, 3, 4, 3)).astype("float32")
w1 = rng.uniform(-1, 1, (2, 3, 4, 1)).astype("float32")


def grad(f, x, w):
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(f(xt) * w)
    return tape.gradient(loss, xt).numpy()


hsv_in = rng.uniform(0, 1, (3, 4, 5, 3)).astype("float32")
hsv_in[0, 0, :3, 1] = 0.0  # no saturation
hsv_in[0, 1, :3, 0] = [0.0, 1.0, 0.999]  # hue at the ends
ref["ops"] = {
    "gray": tl(keras.ops.image.rgb_to_grayscale(img)),
    "gray_first": tl(keras.ops.image.rgb_to_grayscale(first(img), data_format="channels_first")),
    "gray_single": tl(keras.ops.image.rgb_to_grayscale(img[0])),
    "hsv": tl(keras.ops.image.rgb_to_hsv(unit)),
    "hsv_first": tl(keras.ops.image.rgb_to_hsv(first(unit), data_format="channels_first")),
    "hsv_in": tl(hsv_in),
    "rgb": tl(keras.ops.image.hsv_to_rgb(hsv_in)),
    "smooth": tl(smooth), "w3": tl(w3), "w1": tl(w1),
    "gray_grad": tl(grad(keras.ops.image.rgb_to_grayscale, smooth, w1)),
    "hsv_grad": tl(grad(keras.ops.image.rgb_to_hsv, smooth, w3)),
}

N = img.shape[0]


def col(v, dtype="float32"):
    return np.asarray(v, dtype).reshape(-1, 1, 1, 1)


apply = np.array([True, False, True, False])
ref["grayscale"] = {
    "apply": tl(apply),
    "y": tl(L.RandomGrayscale(0.5).transform_images(img, col(apply, bool))),
    "y_first": tl(L.RandomGrayscale(0.5, data_format="channels_first").transform_images(first(img), col(apply, bool))),
    "config": L.RandomGrayscale(0.3, name="gray").get_config(),
}

inv = np.array([True, False, False, True])
ref["invert"] = {
    "apply": tl(inv),
    "y": tl(L.RandomInvert().transform_images(img, {"apply_inversion": inv})),
    "y_unit": tl(L.RandomInvert(value_range=(-1, 1)).transform_images(unit, {"apply_inversion": inv})),
    "factor_single": list(L.RandomInvert(0.4).factor), "factor_pair": list(L.RandomInvert((0.8, 0.2)).factor),
    "config": L.RandomInvert((0.2, 0.6), value_range=(0, 1), seed=7, name="inv").get_config(),
}

flat = img.copy()
flat[0, :, :, 1] = 42.0  # one channel of one image constant: Keras leaves it as it is (NaN scale)
ref["autocontrast"] = {
    "flat": tl(flat),
    "y": tl(L.AutoContrast()(flat, training=True)),
    "y_inference": tl(L.AutoContrast()(flat, training=False)),
    "y_unit": tl(L.AutoContrast(value_range=(1, 0))(unit * 0.5 + 0.2)),
    "config": L.AutoContrast(value_range=(1, 0), name="ac").get_config(),
}

additions = np.array([0.0, 20.0, 60.0, 5.0], "float32")
thresholds = np.array([128.0, 200.0, 50.0, 255.0], "float32")
sol = {"additions": col(additions), "thresholds": col(thresholds)}
ref["solarization"] = {
    "additions": tl(additions), "thresholds": tl(thresholds),
    "y": tl(L.Solarization().transform_images(img, sol)),
    "y_unit": tl(L.Solarization(value_range=(0, 1)).transform_images(unit, sol)),
    "y_zero": tl(L.Solarization()(img, training=True)),
    "y_inference": tl(L.Solarization(addition_factor=0.5)(img, training=False)),
    "addition_single": list(L.Solarization(addition_factor=0.3).addition_factor),
    "threshold_pair": list(L.Solarization(threshold_factor=(0.9, 0.1)).threshold_factor),
    "config": L.Solarization(addition_factor=(0.1, 0.2), threshold_factor=0.5, value_range=(0, 1), seed=3,
                             name="sol").get_config(),
}

shifts = np.array([7, 4, 1, 0], "uint8")
ref["posterization"] = {
    "shifts": tl(shifts),
    "y": tl(L.RandomPosterization(4).transform_images(img, {"shift_factor": shifts})),
    "y_unit": tl(L.RandomPosterization(4, value_range=(0, 1)).transform_images(unit, {"shift_factor": shifts})),
    "factor_single": list(L.RandomPosterization(5).factor), "factor_pair": list(L.RandomPosterization((6, 2)).factor),
    "config": L.RandomPosterization((2, 6), value_range=(0, 1), name="post").get_config(),
}

degen = np.array([0.0, 0.4, 1.0, -0.5], "float32")
ref["degeneration"] = {
    "factors": tl(degen),
    "y": tl(L.RandomColorDegeneration(0.5).transform_images(img, {"factor": col(degen)})),
    "y_first": tl(L.RandomColorDegeneration(0.5, data_format="channels_first").transform_images(
        first(img), {"factor": col(degen)})),
    "factor_single": list(L.RandomColorDegeneration(0.3).factor),
    "config": L.RandomColorDegeneration((0.1, 0.4), value_range=(0, 1), name="degen").get_config(),
}

raw = np.array([0.1, 0.5, 0.9, -0.3], "float32")
sat = raw / (1 - raw + keras.config.epsilon())
ref["saturation"] = {
    "factors": tl(sat),
    "y": tl(L.RandomSaturation(0.5).transform_images(img, {"factor": sat})),
    "y_unit": tl(L.RandomSaturation(0.5, value_range=(0, 1)).transform_images(unit, {"factor": sat})),
    "y_first": tl(L.RandomSaturation(0.5, data_format="channels_first").transform_images(first(unit), {"factor": sat})),
    "factor_single": list(L.RandomSaturation(0.4).factor),
    "config": L.RandomSaturation((0.2, 0.7), name="sat").get_config(),
}

hue = np.array([0.1, -0.25, 0.45, 0.0], "float32")
ref["hue"] = {
    "factors": tl(hue),
    "y": tl(L.RandomHue(0.5).transform_images(img, {"factor": hue})),
    "y_unit": tl(L.RandomHue(0.5, value_range=(0, 1)).transform_images(unit, {"factor": hue})),
    "y_first": tl(L.RandomHue(0.5, data_format="channels_first").transform_images(first(img), {"factor": hue})),
    "factor_single": list(L.RandomHue(0.3).factor),
    "config": L.RandomHue((0.1, 0.3), value_range=(0, 1), name="hue").get_config(),
}

sharp = np.array([0.0, 0.3, 0.8, 1.0], "float32")
ref["sharpness"] = {
    "factors": tl(sharp),
    "y": tl(L.RandomSharpness(0.5).transform_images(img, {"factor": sharp})),
    "y_first": tl(L.RandomSharpness(0.5, data_format="channels_first").transform_images(first(img), {"factor": sharp})),
    "y_unit": tl(L.RandomSharpness(0.5, value_range=(0, 1)).transform_images(unit, {"factor": sharp})),
    "factor_single": list(L.RandomSharpness(0.6).factor),
    "config": L.RandomSharpness((0.2, 0.9), name="sharp").get_config(),
}

eq_in = np.round(img * 0.6 + 30.0)
eq_in[2, :, :, 0] = 77.0  # one image's channel constant (the channel's histogram is over the batch)
one_bin = img.copy()
one_bin[:, :, :, 2] = 9.0  # a channel with one bin: left as it is
ref["equalization"] = {
    "x": tl(eq_in), "one_bin": tl(one_bin),
    "y": tl(L.Equalization()(eq_in, training=True)),
    "y_inference": tl(L.Equalization()(eq_in, training=False)),
    "y_bins": tl(L.Equalization(bins=16)(eq_in, training=True)),
    "y_one_bin": tl(L.Equalization()(one_bin, training=True)),
    "y_unit": tl(L.Equalization(value_range=(0, 1))(unit, training=True)),
    "y_first": tl(L.Equalization(data_format="channels_first")(first(eq_in), training=True)),
    "config": L.Equalization(value_range=(0, 1), bins=64, name="eq").get_config(),
}

# RandomColorJitter with fixed draws: a brightness delta of 0.1·255, a contrast factor of 1.3, a saturation factor
# of 0.6 / 0.4.
jitter = L.RandomColorJitter(brightness_factor=(0.1, 0.1), contrast_factor=(-0.3, 0.3),
                             saturation_factor=(0.6, 0.6))
ref["jitter"] = {
    "y": tl(jitter(img, training=True)),
    "y_inference": tl(jitter(img, training=False)),
    "config": L.RandomColorJitter(value_range=(0, 1), brightness_factor=0.2, contrast_factor=(0.1, 0.3),
                                  saturation_factor=0.5, hue_factor=0.1, seed=4, name="jit").get_config(),
}


# RandomGaussianBlur (and keras.ops.image.gaussian_blur): one pair of sigmas per batch, a choice per image, the
# whole batch clipped to value_range.
brng = np.random.default_rng(73)
blur_apply = np.array([True, False, True, True])
blur = {"should_apply_blur": blur_apply, "blur_factor": np.array([0.8, 1.3], "float32")}
ref["blur"] = {
    "apply": tl(blur_apply), "sigma": [0.8, 1.3],
    "op": tl(keras.ops.image.gaussian_blur(img, kernel_size=(3, 3), sigma=(0.8, 1.3))),
    "op_wide": tl(keras.ops.image.gaussian_blur(img, kernel_size=(3, 5), sigma=(0.5, 2.0))),
    "op_first": tl(keras.ops.image.gaussian_blur(first(img), kernel_size=(5, 5), sigma=(1.0, 1.0),
                                                 data_format="channels_first")),
    "y": tl(L.RandomGaussianBlur().transform_images(img, blur)),
    "y_clipped": tl(L.RandomGaussianBlur(kernel_size=5, value_range=(20, 200)).transform_images(img, blur)),
    "y_first": tl(L.RandomGaussianBlur(data_format="channels_first").transform_images(first(img), blur)),
    "factor_single": list(L.RandomGaussianBlur(0.4).factor), "sigma_single": list(L.RandomGaussianBlur(sigma=0.7).sigma),
    "config": L.RandomGaussianBlur(factor=(0.2, 0.6), kernel_size=(3, 5), sigma=(0.1, 0.9), value_range=(0, 1),
                                   seed=2, name="blur").get_config(),
}

# RandomErasing under given draws: per image the box's sides (sqrt of a scale draw, times the width / height) and
# its start (a uniform draw times the room left), computed in float32 as Keras computes them, and whether to erase.
erase_apply = np.array([True, True, False, True])
mix = np.sqrt(np.array([[0.1, 0.3], [0.05, 0.2], [0.2, 0.2], [0.33, 0.02]], "float32"))
starts = np.array([[0.2, 0.7], [0.9, 0.1], [0.5, 0.5], [0.0, 0.99]], "float32")


def bounds(length, ratio, start):
    crop = (ratio * np.float32(length)).astype("float32")
    begin = (start * (np.float32(length) - crop)).astype("float32")
    return begin, (begin + crop).astype("float32")


x0, x1 = bounds(img.shape[2], mix[:, 0], starts[:, 0])
y0, y1 = bounds(img.shape[1], mix[:, 1], starts[:, 1])
eraser = L.RandomErasing(fill_value=7.0)
masks = eraser._generate_batch_mask(img.shape, (x0, x1, y0, y1))
fill = eraser._get_fill_value(img, img.shape, None)
eraser_rgb = L.RandomErasing(fill_value=[10.0, 300.0, -5.0], value_range=(0, 255))
ref["erasing"] = {
    "apply": tl(erase_apply), "mix": tl(mix), "starts": tl(starts),
    "y": tl(eraser.transform_images(img, {"apply_erasing": erase_apply, "batch_masks": masks, "fill_value": fill})),
    "y_rgb": tl(eraser_rgb.transform_images(img, {"apply_erasing": erase_apply, "batch_masks": masks,
                                                  "fill_value": eraser_rgb._get_fill_value(img, img.shape, None)})),
    "y_inference": tl(L.RandomErasing()(img, training=False)),
    "factor_single": list(L.RandomErasing(0.4).factor), "scale_single": list(L.RandomErasing(scale=0.5).scale),
    "config": L.RandomErasing(factor=(0.2, 0.6), scale=(0.1, 0.4), fill_value=3.0, value_range=(0, 1), seed=5,
                              name="erase").get_config(),
}

def rejected(make):
    try:
        make()
        return False
    except ValueError:
        return True


ref["rejected"] = {
    "grayscale_1.5": rejected(lambda: L.RandomGrayscale(1.5)),
    "invert_1.5": rejected(lambda: L.RandomInvert(1.5)),
    "posterization_9": rejected(lambda: L.RandomPosterization(9)),
    "posterization_0": rejected(lambda: L.RandomPosterization(0)),
    "solarization_1.5": rejected(lambda: L.Solarization(addition_factor=1.5)),
    "solarization_-0.1": rejected(lambda: L.Solarization(threshold_factor=(-0.1, 0.5))),
    "sharpness_2": rejected(lambda: L.RandomSharpness(2.0)),
    "hue_-0.5": rejected(lambda: L.RandomHue(-0.5)),
    "blur_even_kernel": rejected(lambda: L.RandomGaussianBlur(kernel_size=4)),
    "blur_sigma_2": rejected(lambda: L.RandomGaussianBlur(sigma=2.0)),
    "erasing_scale_2": rejected(lambda: L.RandomErasing(scale=2.0)),
}

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_color.json"), "w") as f:
    json.dump(ref, f)
print("wrote keras_color.json")
