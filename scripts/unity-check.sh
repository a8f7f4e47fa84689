#!/usr/bin/env bash
# Before landing: checks that the library's sources still compile in the sanitizer build's unity units
# (scripts/sanitize.sh builds the library 8 sources to a unit; the release build does not, so two files' file-scope
# helpers of the same name only clash there, late in CI). Configures build/unitycheck as sanitize.sh batches the
# library (no sanitizers, no CUDA plug-in) and runs the compiler with -fsyntax-only on each unit that holds one of
# the given sources, or of the sources changed against `git merge-base HEAD origin/main` (or HEAD~1) by default;
# every unit when a source was added or removed (the sources after it then fall into other units), or with --all.
# Usage: scripts/unity-check.sh [--all | src/path.cpp ...]   Exit status 1 when a unit does not compile.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/unitycheck
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOSPREY_BUILD_CUDA_PLUGIN=OFF \
  -DOSPREY_BUILD_BENCH=OFF -DOSPREY_UNITY_BUILD=ON -DOSPREY_UNITY_BUILD_LIBRARY=ON >/dev/null
# The generated protocol-buffer code the TensorBoard sources include (when Osprey is built with it).
if [ -n "$(ninja -C "$dir" -t query osprey_tensorboard_pb 2>/dev/null)" ]; then
  cmake --build "$dir" --target osprey_tensorboard_pb >/dev/null
fi
all=0
if [ "${1:-}" = --all ]; then
  all=1
  files=(all)
elif (($#)); then
  files=("$@")
else
  base=$(git merge-base HEAD origin/main 2>/dev/null || git rev-parse HEAD~1)
  mapfile -t files < <({ git diff --name-only "$base"; git ls-files --others --exclude-standard; } | grep -E '^src/.*\.cpp$' | sort -u)
  if { git diff --name-only --diff-filter=AD "$base"; git ls-files --others --exclude-standard; } | grep -qE '^src/.*\.cpp$'; then
    all=1
  fi
fi
if ((${#files[@]} == 0)); then
  echo "unity-check: no library source changed"
  exit 0
fi
units=()
if ((all)); then
  mapfile -t units < <(grep -l -F "\"$PWD/src/" "$dir"/CMakeFiles/*.dir/Unity/unity_*_cxx.cxx)  # not generated code
else
  for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    while IFS= read -r u; do units+=("$u"); done < <(grep -l -F "\"$PWD/$f\"" "$dir"/CMakeFiles/*.dir/Unity/unity_*_cxx.cxx 2>/dev/null || true)
  done
  mapfile -t units < <(printf '%s\n' "${units[@]}" | sort -u | sed '/^$/d')
fi
check() {  # one unit: its compile command with -fsyntax-only in place of the object
  local u=$1 obj cmd
  obj=${u#"$dir"/}.o
  cmd=$(cd "$dir" && ninja -t commands "$obj" | tail -1 | sed 's/ -o [^ ]* -c / -fsyntax-only /')
  if (cd "$dir" && eval "$cmd"); then
    echo "unity-check: ok   $obj"
  else
    echo "unity-check: FAIL $obj ($(sed -n 's|#include "'"$PWD"'/||p' "$u" | tr -d '"' | tr '\n' ' '))"
    return 1
  fi
}
export -f check
export dir PWD
printf '%s\n' "${units[@]}" | xargs -r -P "$(nproc)" -I{} bash -c 'check "$@"' _ {}
