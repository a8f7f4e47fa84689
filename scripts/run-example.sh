#!/usr/bin/env bash
# The main job: install what is missing, build, and train the first seed's model (devices, summary, progress).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
cmake --preset release >/dev/null
cmake --build --preset release --target seed_train
exec build/release/examples/seed_train
