#!/usr/bin/env bash
# The test command: install what is missing, build everything, run every test (CTest + GoogleTest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release -j "$(nproc)"
