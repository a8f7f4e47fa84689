#!/usr/bin/env bash
# The test command: install what is missing, build everything, run every test (CTest + GoogleTest). CI runs exactly
# this (.ci/run); there (CI=true) it also runs every test under AddressSanitizer and UBSan (scripts/sanitize.sh)
# and proves the GPU machine's path: the dependency bundle downloaded and within its size, and
# scripts/gpu-check.sh's dry run building against the bundle's private prefix alone.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release -j "$(nproc)"
if [ "${CI:-}" = true ]; then
  scripts/sanitize.sh
  scripts/gpu-bundle.sh
  OSPREY_PREFIX_ONLY=1 scripts/gpu-check.sh build/gpu-check-results | tail -30
  # Every step above exits on a failure: reaching here means all of the release build's tests passed.
  total=$(ctest --preset release -N | sed -n 's/^Total Tests: //p')
  echo "ci: ${total} passed, 0 failed"
fi
