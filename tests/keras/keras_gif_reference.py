# Regenerates tests/data/gif_frames/ (GIF files whose first frame is smaller than the logical screen, offset in it,
# reaching past it, with a transparent colour, a colour table shorter than the indices, no colour table, a gray-ramp
# table shorter than the indices, an interlaced frame, and an animation; written by Pillow and patched here) and tests/data/keras_gif.json:
# keras.utils.load_img's values for each (Pillow's first frame: the screen's size, uncovered pixels in the
# transparent colour or colour 0) in grayscale, rgb and rgba. tests/keras/test_gif_frames.cpp checks Osprey's.
# Run: python3 tests/keras/keras_gif_reference.py   (pip keras pillow)
import io, json, os, shutil
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "data", "gif_frames")
shutil.rmtree(ROOT, ignore_errors=True)
os.makedirs(ROOT)
rng = np.random.default_rng(89)


def pil_gif(h, w, colors, frames=1, **kw):
    imgs = [Image.fromarray(rng.integers(0, 256, (h, w, 3)).astype("uint8")).convert("P", palette=Image.ADAPTIVE,
                                                                                      colors=colors)
            for _ in range(frames)]
    out = io.BytesIO()
    if frames > 1:
        kw.update(save_all=True, append_images=imgs[1:], duration=40)
    imgs[0].save(out, "GIF", **kw)
    return bytearray(out.getvalue())


def first_descriptor(data):
    pos = 13 + ((3 << ((data[10] & 7) + 1)) if data[10] & 0x80 else 0)
    while data[pos] == 0x21:  # extensions before the first image descriptor
        pos += 2
        while data[pos]:
            pos += data[pos] + 1
        pos += 1
    assert data[pos] == 0x2C
    return pos


def patch(data, screen=None, offset=None):
    if screen:
        data[6:10] = screen[0].to_bytes(2, "little") + screen[1].to_bytes(2, "little")
    if offset:
        pos = first_descriptor(data)
        data[pos + 1:pos + 5] = offset[0].to_bytes(2, "little") + offset[1].to_bytes(2, "little")
    return data


def with_table_bits(data, bits, gray_ramp=False):
    """The global colour table cut to 2^bits entries (the frame's indices unchanged), or removed for bits=None;
    gray_ramp: its entries replaced by (i, i, i), which Pillow opens as mode "L" (the index is the gray value)."""
    assert data[10] & 0x80
    size = 3 << ((data[10] & 7) + 1)
    head, table, rest = data[:13], data[13:13 + size], data[13 + size:]
    if bits is None:
        head[10] &= 0x78
        return head + rest
    head[10] = (head[10] & ~7) | (bits - 1)
    table = bytes(v for i in range(1 << bits) for v in (i, i, i)) if gray_ramp else table[:3 << bits]
    return head + table + rest


files = {
    "inside_screen.gif": patch(pil_gif(4, 5, 8), screen=(8, 6), offset=(2, 1)),
    "inside_transparent.gif": patch(pil_gif(4, 5, 8, transparency=3), screen=(8, 6), offset=(2, 1)),
    "past_screen.gif": patch(pil_gif(4, 5, 8), screen=(4, 3), offset=(1, 1)),
    "short_table.gif": with_table_bits(pil_gif(4, 5, 8), 2),  # indices 4..7 past a 4-colour table
    "no_table.gif": with_table_bits(pil_gif(4, 5, 8), None),
    "interlaced_offset.gif": patch(pil_gif(11, 6, 16, interlace=True, transparency=0), screen=(9, 14), offset=(3, 2)),
    "animated_offset.gif": patch(pil_gif(5, 4, 8, frames=3, disposal=2), screen=(7, 7), offset=(1, 2)),
}
# A 4-entry gray ramp under indices up to 7: Pillow's mode "L" gives 4..7 as gray values (a palette gives black).
files["gray_ramp_table.gif"] = patch(with_table_bits(pil_gif(4, 5, 8), 2, gray_ramp=True), screen=(8, 5),
                                     offset=(1, 1))
for name, data in files.items():
    with open(os.path.join(ROOT, name), "wb") as f:
        f.write(data)

ref = {}
for name in files:
    for mode in ("grayscale", "rgb", "rgba"):
        arr = keras.utils.img_to_array(keras.utils.load_img(os.path.join(ROOT, name), color_mode=mode))
        ref[f"{name}/{mode}"] = {"shape": list(arr.shape), "values": arr.astype("int64").ravel().tolist()}
    with Image.open(os.path.join(ROOT, name)) as im:  # what the case is about, for a reader of the JSON
        ref[f"{name}/pillow"] = {"mode": im.mode, "size": list(im.size), "transparency": im.info.get("transparency")}

with open(os.path.join(HERE, "..", "data", "keras_gif.json"), "w") as f:
    json.dump(ref, f, separators=(",", ":"))
    f.write("\n")
print("wrote", len(files), "files,", len(ref), "entries")
