#!/usr/bin/env bash
# One run on a GPU machine (H200, 16 cores, CUDA 13, no network): configure, build with all cores, run every test
# (tests/cuda included), show `osprey doctor`, train the first seed's model on GPU:0 with placement logging (a
# sample of the log), time the seed model and the wide MLP on CPU and GPU (batch 8192 also against cuBLAS's GEMMs
# alone: bench/gpu_gemm_floor), and print a short table last.
# Designed to finish in well under 6 minutes. On a machine without a GPU it runs as far as it can (a dry run).
set -uo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
section() { printf '\n=== %s (%ss)\n' "$*" "$(($(date +%s) - t0))"; }
results=()

section "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
nproc

section "configure and build (all cores)"
for tool in cmake ninja; do command -v "$tool" >/dev/null || { echo "missing: $tool (run scripts/bootstrap.sh)"; exit 1; }; done
if ! cmake --preset release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" >/tmp/osprey-configure.log 2>&1; then
  tail -30 /tmp/osprey-configure.log
  echo "configure failed (missing packages? see scripts/bootstrap.sh)"
  exit 1
fi
grep -E "Osprey:" /tmp/osprey-configure.log
if cmake --build build/release -j "$(nproc)" >/tmp/osprey-build.log 2>&1; then
  results+=("| build | ok |")
else
  tail -30 /tmp/osprey-build.log
  echo "build failed"
  exit 1
fi

section "osprey doctor"
build/release/tools/osprey/osprey doctor
doctor_rc=$?
build/release/tools/osprey/osprey devices
results+=("| osprey doctor | $([ $doctor_rc -eq 0 ] && echo 'GPU usable' || echo "no GPU (exit $doctor_rc)") |")

section "tests (ctest, all)"
ctest --preset release -j 8 >/tmp/osprey-ctest.log 2>&1
ctest_rc=$?
tail -8 /tmp/osprey-ctest.log
results+=("| ctest | $(grep -E 'tests passed' /tmp/osprey-ctest.log | head -1) |")

section "tests/cuda (every op on the GPU against the CPU)"
build/release/tests/cuda_tests >/tmp/osprey-cuda-tests.log 2>&1
cuda_rc=$?
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]|no GPU|Failure' /tmp/osprey-cuda-tests.log | head -20
results+=("| tests/cuda | $(grep -cE '^\[ +OK +\] .*\(' /tmp/osprey-cuda-tests.log) ok, $(grep -cE '^\[ +SKIPPED +\] .*\(' /tmp/osprey-cuda-tests.log) skipped, rc $cuda_rc |")

section "first seed's model on GPU:0 with placement logging (sample)"
build/release/examples/gpu_select >/tmp/osprey-gpu-select.log 2>&1
grep -m 12 "Executing op" /tmp/osprey-gpu-select.log
grep -E "Physical GPUs|lives on|memory on" /tmp/osprey-gpu-select.log
on_gpu=$(grep -c "Executing op .*device:GPU:0" /tmp/osprey-gpu-select.log)
on_cpu=$(grep -c "Executing op .*device:CPU:0" /tmp/osprey-gpu-select.log)
results+=("| seed on GPU:0, placement log | $on_gpu ops on GPU:0, $on_cpu on CPU:0 |")

section "MirroredStrategy example (every logical GPU a replica)"
build/release/examples/mirrored_strategy >/tmp/osprey-mirrored.log 2>&1
mirrored_rc=$?
grep -E "Using MirroredStrategy|nccl|NCCL|Number of devices|replicas, on" /tmp/osprey-mirrored.log | head -6
results+=("| MirroredStrategy example | rc $mirrored_rc, $(grep -m1 'Number of devices' /tmp/osprey-mirrored.log) |")

section "step times (train_on_batch, µs/step)"
timings=()
for spec in "seed 64 200" "wide 128 100" "wide 4096 20" "wide 8192 10"; do
  set -- $spec
  for dev in /CPU:0 /GPU:0; do
    steps=$3
    [ "$dev" = /GPU:0 ] && steps=200
    log="/tmp/osprey-step-$1-$2-${dev//\//}.log"
    timings+=("$(timeout 120 build/release/bench/device_step "$1" "$2" "$dev" "$steps" 2>"$log" || echo "| $1 | $2 | $dev | failed: $(tail -1 "$log") |")")
  done
done
# Whether the GPU steps replayed as CUDA graphs (the plug-in says why not, once per recorded step).
for spec in "seed 64" "wide 128"; do
  set -- $spec
  row=$(printf '%s\n' "${timings[@]}" | grep "| $1 | $2 | /GPU:0 |")
  why=$(grep -m1 -o "replayed launch by launch.*" "/tmp/osprey-step-$1-$2-GPU:0.log" 2>/dev/null)
  if [[ "$row" =~ \|\ [0-9.]+\ \|$ ]]; then
    results+=("| $1 b$2 GPU step as a CUDA graph | ${why:-yes (no fallback reported)} |")
  else
    results+=("| $1 b$2 GPU step as a CUDA graph | not run: $row |")
  fi
done
# The recorded step replays as a CUDA graph where it can: the same steps with graphs off, to see what they give.
for spec in "seed 64" "wide 128"; do
  set -- $spec
  row=$(OSPREY_CUDA_GRAPHS=0 timeout 120 build/release/bench/device_step "$1" "$2" /GPU:0 200 2>/dev/null || echo "| $1 | $2 | /GPU:0 | failed |")
  timings+=("${row/\/GPU:0 |//GPU:0, no CUDA graphs |}")
done
printf '%s\n' "${timings[@]}"

section "wide MLP at batch 8192 on GPU:0 against cuBLAS's GEMMs alone (target: >= 60 % of their throughput)"
floor_line=$(timeout 120 build/release/bench/gpu_gemm_floor 8192 20 2>/dev/null || echo '{"skipped": "gpu_gemm_floor failed"}')
echo "$floor_line"
floor_us=$(echo "$floor_line" | grep -o '"gemm_floor_us": [0-9.]*' | grep -o '[0-9.]*$')
step_us=$(printf '%s\n' "${timings[@]}" | grep '| wide | 8192 | /GPU:0 |' | awk -F'|' '{gsub(/ /, "", $5); print $5}')
if [ -n "$floor_us" ] && [[ "$step_us" =~ ^[0-9.]+$ ]]; then
  ratio=$(awk -v f="$floor_us" -v s="$step_us" 'BEGIN { printf "%.1f", 100 * f / s }')
  results+=("| wide b8192 GPU step vs cuBLAS GEMMs | step $step_us µs, GEMMs $floor_us µs: $ratio % (target >= 60) |")
else
  results+=("| wide b8192 GPU step vs cuBLAS GEMMs | not measured: ${floor_line} |")
fi
seed_gpu=$(printf '%s\n' "${timings[@]}" | grep '| seed | 64 | /GPU:0 |' | awk -F'|' '{gsub(/ /, "", $5); print $5}')
seed_nograph=$(printf '%s\n' "${timings[@]}" | grep '| seed | 64 | /GPU:0, no CUDA graphs |' | awk -F'|' '{gsub(/ /, "", $5); print $5}')
results+=("| seed step on GPU:0 (recorded step as a CUDA graph) | ${seed_gpu:-not measured} µs (target <= 20); without graphs ${seed_nograph:-not measured} µs |")

section "summary"
echo "| check | result |"
echo "|---|---|"
printf '%s\n' "${results[@]}"
echo
echo "| model | batch | device | µs/step |"
echo "|---|---|---|---|"
printf '%s\n' "${timings[@]}"
echo "total: $(($(date +%s) - t0)) s"
[ $ctest_rc -eq 0 ] && [ $cuda_rc -eq 0 ]
