# Regenerates tests/data/images/ (a few small PNG and JPEG files in class folders, one nested, one grayscale, one
# with alpha), tests/data/images_bmp_gif/ (BMP and GIF files written by Pillow), tests/data/load_img/ (two larger
# files) and tests/data/keras_images.json: what Keras 3's image_dataset_from_directory gives for them (shuffle off;
# resized to 6x4 bilinear, nearest, mitchellcubic and area, grayscale, crop_to_aspect_ratio), what tf.io.decode_image
# gives for each BMP and GIF, the files of Keras's seeded training/validation splits of a folder of empty files, and
# keras.utils.load_img's values (Pillow's decoding, conversions and resizing). tests/keras/test_image_dataset.cpp
# checks Osprey's against it. Run: python3 tests/keras/keras_images_reference.py   (pip tensorflow-cpu keras pillow)
import json, os, shutil
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf, keras
from PIL import Image

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

# BMP and GIF (Keras lists them; tf.io.decode_image decodes them), in a folder of their own: TensorFlow refuses
# grayscale for both and rgba for GIF, so the PNG folder's grayscale case cannot include them.
MORE = os.path.join(HERE, "..", "data", "images_bmp_gif")
shutil.rmtree(MORE, ignore_errors=True)


def pil_save(rel, img, **kw):
    path = os.path.join(MORE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    img.save(path, **kw)
    return path


def pixels(h, w, c):
    return rng.integers(0, 256, (h, w, c)).astype("uint8")


pil_save("bmp/rgb.bmp", Image.fromarray(pixels(5, 7, 3)))                   # 24 bits a pixel
pil_save("bmp/rgba.bmp", Image.fromarray(pixels(6, 3, 4)))                  # 32 bits, the 4th byte alpha
pil_save("bmp/gray.bmp", Image.fromarray(pixels(4, 5, 1)[:, :, 0]))         # 8 bits, a gray palette
pil_save("bmp/sub/late.bmp", Image.fromarray(pixels(3, 3, 3)))              # listed after bmp/z.BMP, as Keras walks
pil_save("bmp/z.BMP", Image.fromarray(pixels(4, 4, 3)))
palette = Image.fromarray(pixels(6, 6, 3)).convert("P", palette=Image.ADAPTIVE, colors=7)
pil_save("palette/colours.bmp", palette)                                    # 8 bits, a colour palette
pil_save("gif/small.gif", Image.fromarray(pixels(5, 6, 3)).convert("P", palette=Image.ADAPTIVE, colors=16))
pil_save("gif/interlaced.gif", Image.fromarray(pixels(17, 16, 3)).convert("P", palette=Image.ADAPTIVE, colors=32),
         interlace=True)
see_through = Image.fromarray(pixels(5, 5, 3)).convert("P", palette=Image.ADAPTIVE, colors=8)
pil_save("gif/transparent.gif", see_through, transparency=int(np.asarray(see_through)[1, 2]))
frames = [Image.fromarray(pixels(6, 5, 3)).convert("P", palette=Image.ADAPTIVE, colors=8) for _ in range(3)]
anim = pil_save("gif/animated.gif", frames[0], save_all=True, append_images=frames[1:], duration=50, disposal=1)
# The first frame moved 2 pixels right: TensorFlow's canvas is the largest frame, so its left 2 columns are black
# and the frame's right 2 columns fall outside.
data = bytearray(open(anim, "rb").read())
pos = 13 + (3 << ((data[10] & 7) + 1) if data[10] & 0x80 else 0)
while data[pos] == 0x21:  # extensions before the first image descriptor
    pos += 2
    while data[pos]:
        pos += data[pos] + 1
    pos += 1
assert data[pos] == 0x2C
data[pos + 1:pos + 3] = (2).to_bytes(2, "little")
with open(os.path.join(MORE, "gif", "offset.gif"), "wb") as f:
    f.write(bytes(data))

decoded = {}
for root, _, files in os.walk(MORE):
    for name in files:
        path = os.path.join(root, name)
        rel = os.path.relpath(path, MORE)
        raw = tf.io.read_file(path)
        entry = {"rgb": tf.io.decode_image(raw, channels=3, expand_animations=False).numpy().tolist()}
        if rel.endswith((".bmp", ".BMP")):
            entry["rgba"] = tf.io.decode_image(raw, channels=4, expand_animations=False).numpy().tolist()
        if rel == "palette/colours.bmp":  # TensorFlow passes the 8-bit indices through; Pillow applies the palette
            entry["tf_rgb"] = entry["rgb"]
            entry["rgb"] = np.asarray(Image.open(path).convert("RGB")).tolist()
            del entry["rgba"]
        if rel == "gif/transparent.gif":  # alpha as Osprey gives it for rgba: 0 at the transparent index
            reread = Image.open(path)
            entry["alpha"] = (np.asarray(reread) != reread.info["transparency"]).astype(int).tolist()
        decoded[rel] = entry
ref["bmp_gif_decoded"] = decoded
for name in ("bmp_gif_rgb", "bmp_gif_nearest"):
    ds = keras.utils.image_dataset_from_directory(MORE, image_size=(6, 4), shuffle=False, batch_size=3,
                                                  interpolation="nearest" if "nearest" in name else "bilinear")
    xs, ys = zip(*[(x.numpy(), y.numpy()) for x, y in ds])
    ref[name] = {"images": np.concatenate(xs).tolist(), "labels": np.concatenate(ys).tolist(),
                 "class_names": ds.class_names, "files": [os.path.relpath(p, MORE) for p in ds.file_paths]}

# Keras's seeded split: NumPy's RandomState(seed).shuffle of the listed files, validation from the end. Empty files
# suffice (nothing is decoded until the dataset is iterated).
import tempfile
with tempfile.TemporaryDirectory() as tmp:
    names = []
    for cls, count in (("apple", 7), ("kiwi", 12), ("pear", 4)):
        for i in range(count):
            rel = os.path.join(cls, "deep" if i % 5 == 4 else "", f"img{i:02d}.{'png' if i % 3 else 'jpg'}")
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            open(os.path.join(tmp, rel), "wb").close()
            names.append(os.path.normpath(rel))
    splits = {"files": sorted(names)}
    for seed in (0, 1, 1337, 123456, 2**32 - 1):
        for subset in ("training", "validation"):
            ds = keras.utils.image_dataset_from_directory(tmp, seed=seed, validation_split=0.3, subset=subset,
                                                          verbose=False)
            splits[f"{seed}/{subset}"] = [os.path.relpath(p, tmp) for p in ds.file_paths]
    ref["splits"] = splits

# keras.utils.load_img (Pillow: its decoders, its "L" and "RGBA" conversions, Image.resize with each filter and
# keep_aspect_ratio's crop box) on the files above and on a larger random RGBA PNG and a JPEG.
BIG = os.path.join(HERE, "..", "data", "load_img")
shutil.rmtree(BIG, ignore_errors=True)
os.makedirs(BIG)
tf.io.write_file(os.path.join(BIG, "noise.png"), tf.io.encode_png(pixels(31, 40, 4)))
yy, xx = np.mgrid[0:29, 0:37]
smooth = np.stack([(yy * 9 + xx * 5 + 40 * k) % 256 for k in range(3)], -1).astype("uint8")
tf.io.write_file(os.path.join(BIG, "smooth.jpg"), tf.io.encode_jpeg(smooth, quality=90))
load_cases = []
for rel, modes in (("images/cat/a.png", ("rgb", "grayscale")), ("images/cat/b.png", ("rgb",)),
                   ("images/cat/nested/c.png", ("rgb", "grayscale")), ("images/dog/d.jpg", ("rgb", "grayscale", "rgba")),
                   ("images/dog/e.png", ("rgb", "rgba")), ("images_bmp_gif/bmp/rgb.bmp", ("rgb",)),
                   ("load_img/noise.png", ("rgb", "rgba", "grayscale")),
                   ("load_img/smooth.jpg", ("rgb", "grayscale"))):
    large = rel.startswith("load_img/")
    for mode in modes:
        sizes = [None, (3, 4), (11, 13)] + ([(7, 5)] if large else []) + ([(19, 27)] if large and mode != "grayscale" else [])
        for size in sizes:
            for interp in (["nearest"] if size is None else ["nearest", "bilinear", "bicubic", "hamming", "box", "lanczos"]):
                for keep in ((False, True) if size is not None and interp in ("nearest", "bilinear", "lanczos") else (False,)):
                    img = keras.utils.load_img(os.path.join(HERE, "..", "data", rel), color_mode=mode, target_size=size,
                                               interpolation=interp, keep_aspect_ratio=keep)
                    arr = keras.utils.img_to_array(img).astype("int64")
                    load_cases.append({"file": rel, "color_mode": mode, "target_size": size, "interpolation": interp,
                                       "keep_aspect_ratio": keep, "shape": list(arr.shape),
                                       "values": arr.ravel().tolist()})
ref["load_img"] = load_cases

with open(os.path.join(HERE, "..", "data", "keras_images.json"), "w") as f:
    json.dump(ref, f)
print("wrote", sorted(ref))
