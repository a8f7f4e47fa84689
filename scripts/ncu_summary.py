"""Kernel time per training step from an Nsight Compute CSV (scripts/gpu-check.sh's profiles):

    ncu --clock-control none --metrics gpu__time_duration.sum --csv PROGRAM ... > profile.csv
    python3 scripts/ncu_summary.py profile.csv STEPS NAME [TOP]

STEPS is how many training steps the program ran (warm-ups included): the kernels' time is divided by it, so the
first step's one-time kernels count a little. Prints a Markdown row: the kernels' µs per step and the TOP (default
4) kernels by time, each with its share.
"""
import collections
import csv
import io
import sys


def main():
    path, steps, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    lines = open(path, errors="replace").read().split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        why = next((l for l in lines if "No kernels" in l or "ERROR" in l), "no CSV rows")
        print(f"| {name} | no kernels profiled: {why.strip()[:100]} |")
        return
    per_kernel = collections.defaultdict(float)
    count = 0
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "nsecond": 1e-3, "ms": 1e3, "msecond": 1e3}
        per_kernel[row["Kernel Name"].split("(")[0][:70]] += value * scale.get(row["Metric Unit"], 1e-3)
        count += 1
    total = sum(per_kernel.values())
    ranked = sorted(per_kernel.items(), key=lambda kv: -kv[1])[:top]
    parts = ", ".join(f"{k} {100 * v / total:.0f} %" for k, v in ranked)
    print(f"| {name} | {total / steps:.1f} µs of kernels per step ({count} kernels over {steps} steps): {parts} |")


if __name__ == "__main__":
    main()
