#!/usr/bin/env bash
# The CPU test suites on the test platform's simulated GPU, each test in its own process (as ctest runs them): a
# way to find, without a GPU, what breaks when models run on a device that is not host memory. On the first H200
# run two such bugs showed up (a step that is never replayed ran on host copies; recurrent layers over their steps
# lost the mixed dtype); both reproduced here exactly.
#
#   scripts/simulated-gpu-suites.sh [BUILD_DIR] [SUITE...]   (default build/release; the suites that do not set up
#                                                             their own devices: keras, keras_ops, ops, pipeline,
#                                                             distribute, summary and core tests)
#
# Links each suite's object files with tests/support/simulated_gpu_main.cpp (no rebuild of the suites), lists the
# tests that fail with the simulated GPU installed. Tests that reset the runtime run without it (they set up their
# own devices). Not part of CI (minutes); a developer's check after changing the device path.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
shift || true
suites=("$@")
((${#suites[@]})) || suites=(keras_tests keras_ops_tests ops_tests pipeline_tests distribute_tests summary_tests core_tests)
out=$build/simulated-gpu
mkdir -p "$out"
cxx=$(grep -E '^CMAKE_CXX_COMPILER:' "$build/CMakeCache.txt" | cut -d= -f2)
"$cxx" -std=c++20 -O1 -Iinclude -Isrc -Itests -c tests/support/simulated_gpu_main.cpp -o "$out/main.o" || exit 1
failed=0
for suite in "${suites[@]}"; do
  objects=("$build/tests/CMakeFiles/$suite.dir"/*/*.o)
  "$cxx" -o "$out/$suite" "$out/main.o" "${objects[@]}" "$build/tests/libosprey_test_support.a" -L"$build" -losprey \
    -lfmt -lgmock -lgtest -lpthread -Wl,-rpath,"$PWD/$build" || { echo "$suite: link failed"; failed=1; continue; }
  "$out/$suite" --gtest_list_tests | awk '/^[^ ]/{s=$1} /^  /{print s $1}' >"$out/$suite.tests"
  # One process per test; its log named after it ('/' of parameterised tests as '_').
  fails=$(xargs -P "$(nproc)" -I{} sh -c 'log="$3/$(printf "%s" "$1" | tr / _).log"
    OSPREY_TEST_SIMULATED_GPU=1 timeout 300 "$2" --gtest_filter="$1" >"$log" 2>&1 || echo "$1"' _ {} "$out/$suite" "$out" \
    <"$out/$suite.tests")
  echo "$suite: $(wc -l <"$out/$suite.tests") tests, $(echo "$fails" | grep -c .) failed on the simulated GPU"
  [ -n "$fails" ] && { echo "$fails" | awk -v o="$out" '{f = $0; gsub("/", "_", f); print "  " $0 " (" o "/" f ".log)"}'; failed=1; }
done
exit $failed
