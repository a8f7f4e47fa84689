"""tf.data anchor for bench/csv_read.cpp (pip tensorflow-cpu): one pass of make_csv_dataset over the files
csv_read wrote (rows.csv and rows.csv.gz in `dir`), batch 256, label "label", in order and shuffled (seed 1); the
best of three passes. Usage: tf_csv.py [dir]"""
import json
import os
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/osprey_csv_bench"
for gzip in (False, True):
    for shuffle in (False, True):
        ds = tf.data.experimental.make_csv_dataset(
            os.path.join(d, "rows.csv.gz" if gzip else "rows.csv"), 256, label_name="label", num_epochs=1,
            shuffle=shuffle, shuffle_seed=1, compression_type="GZIP" if gzip else None)
        best, seen = 1e9, 0
        for _ in range(3):
            t0 = time.perf_counter()
            n = 0
            for _, label in ds:
                n += int(label.shape[0])
            best = min(best, time.perf_counter() - t0)
            seen = n
        print(json.dumps({"bench": "csv_read", "framework": "tf.data", "tensorflow": tf.__version__, "rows": seen,
                          "compression": "GZIP" if gzip else "", "shuffle": shuffle, "pass_s": round(best, 3),
                          "rows_per_s": round(seen / best),
                          "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}),
              flush=True)
