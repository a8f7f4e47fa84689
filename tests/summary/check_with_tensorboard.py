"""Reads the run Osprey's TensorBoard callback wrote (tests/summary/tensorboard_run.cpp) with the real `tensorboard`
package's event reader, and checks it against Keras 3's layout (tests/data/keras_tensorboard.json: tags, plugins,
dtypes, shapes, steps) and Osprey's own numbers (History, final weights). Exit 77 (skipped) without tensorboard.
Usage: check_with_tensorboard.py <tensorboard_run binary> <work dir> <keras_tensorboard.json>"""
import json
import os
import shutil
import subprocess
import sys

try:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.util import tensor_util
except ImportError as e:
    print(f"skipped: the tensorboard package is not installed ({e}); pip install tensorboard numpy")
    sys.exit(77)

binary, work, reference = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
subprocess.run([binary, work], check=True)
expected = json.load(open(os.path.join(work, "expected.json")))
layout = json.load(open(reference))["runs"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


for run in ("epoch", "batch"):
    check(sorted(os.listdir(os.path.join(work, run))) == ["train", "validation"], f"{run}: folders")
    for sub in ("train", "validation"):
        acc = event_accumulator.EventAccumulator(os.path.join(work, run, sub),
                                                 size_guidance={event_accumulator.TENSORS: 0})
        acc.Reload()
        tags = acc.Tags()["tensors"]
        theirs = layout[run][sub]
        check(sorted(tags) == sorted(theirs), f"{run}/{sub}: tags {sorted(tags)} != Keras's {sorted(theirs)}")
        for tag in tags:
            events = acc.Tensors(tag)
            meta = acc.SummaryMetadata(tag)
            ref = theirs.get(tag)
            if ref is None:
                continue
            arr = tensor_util.make_ndarray(events[0].tensor_proto)
            check(meta.plugin_data.plugin_name == ref["plugin"], f"{run}/{sub}/{tag}: plugin")
            check([e.step for e in events] == ref["steps"], f"{run}/{sub}/{tag}: steps {[e.step for e in events]}")
            check(list(arr.shape) == ref["shape"], f"{run}/{sub}/{tag}: shape {arr.shape}")
            check(str(arr.dtype) == {"string": "object"}.get(ref["dtype"], ref["dtype"]), f"{run}/{sub}/{tag}: dtype {arr.dtype}")
            history = expected[run]["history"]
            if tag.startswith("epoch_") and tag[6:] not in ("learning_rate", "steps_per_second"):
                key = ("val_" if sub == "validation" else "") + tag[6:]
                got = [float(tensor_util.make_ndarray(e.tensor_proto)) for e in events]
                want = [float(np.float32(v)) for v in history[key]]
                check(got == want, f"{run}/{sub}/{tag}: values {got} != History's {want}")
            if tag.endswith("/histogram"):
                w = np.asarray(expected[run]["weights"][tag[: -len("/histogram")]], dtype=np.float64)
                last = tensor_util.make_ndarray(events[-1].tensor_proto)
                check(last[:, 2].sum() == w.size, f"{tag}: counts sum {last[:, 2].sum()} != {w.size} weights")
                check(last[0, 0] == w.min() and last[-1, 1] == w.max(), f"{tag}: edges")
            if tag == "keras":
                check(json.loads(arr.item().decode())["class_name"] == "Sequential", "keras graph config")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("tensorboard's reader: every tag, step, shape and value as expected")
