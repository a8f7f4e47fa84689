#!/usr/bin/env bash
# Side-by-side benchmark of the seed model's training step: Osprey and PyTorch CPU eager, one run.
# Usage: bench/run.sh [build-dir] [epochs]
set -euo pipefail
build=${1:-build/release}
epochs=${2:-20}
echo "# $(date -u +%F) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
"$build/bench/seed_step" "$epochs"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  for t in 1 2; do /usr/bin/python3 bench/torch_seed.py "$epochs" "$t"; done
else
  echo '{"framework": "pytorch-eager-cpu", "skipped": "python3-torch is not installed (apt-get install python3-torch)"}'
fi
# MirroredStrategy on one CPU: the wide MLP (batch 256) on 2 logical CPUs (threads shared out) vs 1 device with
# every thread; three alternating runs (config is per process).
for i in 1 2 3; do
  "$build/bench/mirrored_step" single 2 30 2>/dev/null
  "$build/bench/mirrored_step" mirrored 2 30 2>/dev/null
done
