#!/usr/bin/env bash
# The test command: install what is missing, build everything, run every test (CTest + GoogleTest). CI runs exactly
# this (.ci/run); there (CI=true) it also runs every test under AddressSanitizer and UBSan (scripts/sanitize.sh)
# and proves the GPU machine's paths: the release build packed as a lent GPU gets it, within what one device call
# carries, and scripts/gpu-check.sh's dry run on that packed build unpacked (the way a GPU session runs it); the
# dependency bundle (for building there instead) downloaded, within its size, and configuring from its private
# prefix alone. The dry run does not compile Osprey a third time: the bundle's packages are the ones the release
# build compiled against.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release -j "$(nproc)"
if [ "${CI:-}" = true ]; then
  scripts/sanitize.sh
  scripts/gpu-prebuilt.sh pack
  scripts/gpu-prebuilt.sh dry-run build/gpu-check-results | tail -30
  scripts/gpu-bundle.sh
  scripts/gpu-bundle.sh configure
  # Every step above exits on a failure: reaching here means all of the release build's tests passed.
  total=$(ctest --preset release -N | sed -n 's/^Total Tests: //p')
  echo "ci: ${total} passed, 0 failed"
fi
