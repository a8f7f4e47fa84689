# Regenerates tests/data/png_depths/ (PNG files of every bit depth and colour type, written chunk by chunk here:
# 1/2/4/8/16-bit gray, gray+alpha, RGB and RGBA at 8 and 16 bits, palettes, tRNS colours, an Adam7-interlaced
# 16-bit file, a gAMA chunk; all 5x7 pixels, in two class folders, plus a larger 16-bit gray file in the root) and
# tests/data/keras_png.json: keras.utils.load_img's values for each (Pillow: a 16-bit gray file keeps its 16-bit
# values in grayscale), image_dataset_from_directory's (tf.io.decode_image's, at the files' own size) and load_img
# resizing the 16-bit gray file with each filter. tests/keras/test_png_depths.cpp checks Osprey's against it.
# Run: python3 tests/keras/keras_png_reference.py   (pip tensorflow-cpu keras pillow)
import json, os, shutil, struct, zlib
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "data", "png_depths")
shutil.rmtree(ROOT, ignore_errors=True)
rng = np.random.default_rng(16)


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def row_bytes(samples, depth):
    if depth == 16:
        return samples.astype(">u2").tobytes()
    if depth == 8:
        return samples.astype("u1").tobytes()
    per = 8 // depth
    vals = [int(v) for v in samples] + [0] * ((-len(samples)) % per)
    out = bytearray()
    for i in range(0, len(vals), per):
        byte = 0
        for v in vals[i:i + per]:
            byte = (byte << depth) | v
        out.append(byte)
    return bytes(out)


ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def png(samples, depth, ctype, extra=b"", plte=None, interlace=False):
    """samples: (h, w, channels) integers (palette indices for ctype 3); filter type 0 on every row."""
    h, w = samples.shape[:2]
    raw = bytearray()
    passes = ADAM7 if interlace else ((0, 0, 1, 1),)
    for x0, y0, dx, dy in passes:
        sub = samples[y0::dy, x0::dx]
        if sub.size == 0:
            continue
        for r in sub:
            raw += b"\0" + row_bytes(r.reshape(-1), depth)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, int(interlace)))
    if plte is not None:
        data += chunk(b"PLTE", plte)
    return data + extra + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b"")


def trns(*values):
    return chunk(b"tRNS", struct.pack(">" + "H" * len(values), *values))


H, W = 5, 7
files = {}


def add(rel, samples, depth, ctype, **kw):
    files[rel] = png(samples, depth, ctype, **kw)


def ints(high, c):
    return rng.integers(0, high, (H, W, c))


g16 = ints(65536, 1)
g16[0, :4, 0] = (0, 200, 255, 300)  # around the clip at 255 (Pillow's rgb of "I;16")
add("gray/g1.png", ints(2, 1), 1, 0)
add("gray/g1_trns.png", ints(2, 1), 1, 0, extra=trns(1))
add("gray/g2_trns.png", ints(4, 1), 2, 0, extra=trns(2))   # Pillow compares 2 with the scaled 0/85/170/255
add("gray/g4.png", ints(16, 1), 4, 0)
g8 = ints(256, 1)
g8[0, 0, 0] = 77
add("gray/g8_trns.png", g8, 8, 0, extra=trns(77))
add("gray/g16.png", g16, 16, 0)
add("gray/g16_trns200.png", g16, 16, 0, extra=trns(200))  # Pillow: clipped values against 200; TF: 16-bit values
add("gray/g16_trns255.png", g16, 16, 0, extra=trns(255))
add("gray/ga16.png", ints(65536, 2), 16, 4)
add("gray/ga8.png", ints(256, 2), 8, 4)
rgb16 = ints(65536, 3)
rgb16[0, 0] = (10, 20, 30)
rgb16[0, 1] = (10 * 256 + 5, 20 * 256, 30 * 256)
add("colour/rgb16.png", rgb16, 16, 2)
add("colour/rgb16_trns_small.png", rgb16, 16, 2, extra=trns(10, 20, 30))
add("colour/rgb16_trns_big.png", rgb16, 16, 2, extra=trns(10 * 256 + 5, 20 * 256, 30 * 256))
add("colour/rgba16.png", ints(65536, 4), 16, 6)
add("colour/rgb16_adam7.png", ints(65536, 3), 16, 2, interlace=True)
rgb8 = ints(256, 3)
rgb8[0, 0] = (1, 2, 3)
add("colour/rgb8_gamma1.png", rgb8, 8, 2, extra=chunk(b"gAMA", struct.pack(">I", 100000)))  # gamma 1.0: ignored
add("colour/rgb8_trns.png", rgb8, 8, 2, extra=trns(1, 2, 3))
palette = bytes(rng.integers(0, 256, 3 * 4).astype("u1"))
add("colour/p2_trns.png", ints(4, 1), 2, 3, plte=palette, extra=chunk(b"tRNS", bytes([0, 128])))
big = rng.integers(0, 65536, (17, 23, 1))
files["gray16_big.png"] = png(big, 16, 0)  # in the root: not in a class folder, so not in the dataset
for rel, data in files.items():
    os.makedirs(os.path.dirname(os.path.join(ROOT, rel)), exist_ok=True)
    with open(os.path.join(ROOT, rel), "wb") as f:
        f.write(data)

ref = {"load_img": {}, "load_img_resized": [], "dataset": {}}
for rel in files:
    for mode in ("grayscale", "rgb", "rgba"):
        arr = keras.utils.img_to_array(keras.utils.load_img(os.path.join(ROOT, rel), color_mode=mode))
        ref["load_img"][f"{rel}/{mode}"] = {"shape": list(arr.shape), "values": arr.astype("int64").ravel().tolist()}
for size in ((6, 9), (30, 11), (4, 23)):
    for interp in ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos"):
        for keep in (False, True):
            img = keras.utils.load_img(os.path.join(ROOT, "gray16_big.png"), color_mode="grayscale", target_size=size,
                                       interpolation=interp, keep_aspect_ratio=keep)
            arr = keras.utils.img_to_array(img)
            ref["load_img_resized"].append({"target_size": size, "interpolation": interp, "keep_aspect_ratio": keep,
                                            "shape": list(arr.shape), "values": arr.astype("int64").ravel().tolist()})
for mode in ("grayscale", "rgb", "rgba"):
    ds = keras.utils.image_dataset_from_directory(ROOT, image_size=(H, W), shuffle=False, batch_size=4,
                                                  color_mode=mode)
    xs = np.concatenate([x.numpy() for x, _ in ds])
    assert np.array_equal(xs, np.round(xs)), "a resize to the files' own size keeps the decoded values"
    ref["dataset"][mode] = {"files": [os.path.relpath(p, ROOT) for p in ds.file_paths],
                            "images": xs.astype("int64").tolist()}

with open(os.path.join(HERE, "..", "data", "keras_png.json"), "w") as f:
    json.dump(ref, f, separators=(",", ":"))
    f.write("\n")
print("wrote", len(files), "files,", len(ref["load_img"]), "load_img cases,", len(ref["load_img_resized"]), "resized")
