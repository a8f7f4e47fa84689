# Regenerates tests/data/images/ (a few small PNG and JPEG files in class folders, one nested, one grayscale, one
# with alpha) and tests/data/keras_images.json: what Keras 3's image_dataset_from_directory gives for them
# (shuffle off; resized to 6x4 bilinear, nearest, mitchellcubic and area, grayscale, crop_to_aspect_ratio). tests/keras/test_image_dataset.cpp
# checks Osprey's against it. Run: python3 tests/keras/keras_images_reference.py   (pip tensorflow-cpu keras)
import json, os, shutil
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf, keras

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "data", "images")
shutil.rmtree(ROOT, ignore_errors=True)
rng = np.random.default_rng(4)


def write(path, h, w, c, jpeg=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    img = rng.integers(0, 256, (h, w, c)).astype("uint8")
    if jpeg:  # smooth content: JPEG's blocks then decode to stable values
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([(yy * 20 + xx * 7 + 30 * k) % 256 for k in range(c)], -1).astype("uint8")
    data = tf.io.encode_jpeg(img, quality=95) if jpeg else tf.io.encode_png(img)
    tf.io.write_file(path, data)


write(os.path.join(ROOT, "cat", "a.png"), 7, 5, 3)
write(os.path.join(ROOT, "cat", "b.png"), 9, 9, 3)
write(os.path.join(ROOT, "cat", "nested", "c.png"), 5, 8, 1)      # grayscale, in a sub-folder
write(os.path.join(ROOT, "dog", "d.jpg"), 8, 6, 3, jpeg=True)
write(os.path.join(ROOT, "dog", "e.png"), 6, 4, 4)                # with alpha
write(os.path.join(ROOT, "owl", "f.PNG"), 4, 7, 3)                # upper-case extension
with open(os.path.join(ROOT, "owl", "notes.txt"), "w") as f:
    f.write("not an image: skipped by its extension\n")

ref = {}
for name, kwargs in {"bilinear": dict(), "nearest": dict(interpolation="nearest"),
                     "grayscale": dict(color_mode="grayscale", label_mode="categorical"),
                     "crop": dict(crop_to_aspect_ratio=True),
                     "mitchellcubic": dict(interpolation="mitchellcubic"),
                     "area": dict(interpolation="area", crop_to_aspect_ratio=True)}.items():
    ds = keras.utils.image_dataset_from_directory(ROOT, image_size=(6, 4), shuffle=False, batch_size=4, **kwargs)
    xs, ys = [], []
    for x, y in ds:
        xs.append(x.numpy())
        ys.append(y.numpy())
    ref[name] = {"images": np.concatenate(xs).tolist(), "labels": np.concatenate(ys).tolist(),
                 "class_names": ds.class_names,
                 "files": [os.path.relpath(p, ROOT) for p in ds.file_paths]}
with open(os.path.join(HERE, "..", "data", "keras_images.json"), "w") as f:
    json.dump(ref, f)
print("wrote", sorted(ref))
