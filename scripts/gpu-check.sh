#!/usr/bin/env bash
# The one run on a lent GPU machine (H200, 16 cores, CUDA 13, no package registry, none of our Debian packages):
#
#   scripts/gpu-check.sh RESULTS_DIR
#
# Unpacks the dependency bundle (scripts/gpu-bundle.sh, carried as .gpu-bundle) into a private prefix, configures
# and builds with every core, runs `osprey doctor`, every test (tests/cuda included: none may skip when a GPU is
# there), samples the placement log of the first seed's model on GPU:0, and times the seed model and the wide MLP
# on CPU and GPU (with and without CUDA graphs), the wide MLP at batch 8192 against cuBLAS's GEMMs alone, and
# PyTorch on the same GPU (eager and as a CUDA graph: bench/torch_gpu.py, the image's python3). Writes
# gpu-check.log and summary.md into RESULTS_DIR. Exit 0 only when everything passed; on a machine without a GPU it
# runs as far as it can (the dry run CI does), and then the GPU rows say why they did not run.
#
# From the development machine, with the device tool, carrying the release build made here (no compiling there;
# the first real run, 2026-12-04, took 6 minutes in all, 40 s of it the machine's start; with the suites on the GPU,
# PyTorch's rows and the kernel profiles added since, expect about 7):
#   cmake --build build/release && scripts/gpu-prebuilt.sh pack
#   run(command="OSPREY_GPU_PREBUILT=1 scripts/gpu-check.sh /tmp/r; tar czf $OUT/r.tgz -C /tmp r",
#       carry=[".gpu-prebuilt"], timeout_s=600)
# or building there from the dependency bundle (a third of a lease on 16 cores):
#   scripts/gpu-bundle.sh   # once: the packages into .gpu-bundle/debs
#   run(command="scripts/gpu-check.sh $OUT", carry=[".gpu-bundle"], timeout_s=600)
# Environment: OSPREY_GPU_SKIP_TIMINGS=1 leaves the step times out; OSPREY_GPU_CTEST_SECONDS and
# OSPREY_GPU_SUITE_SECONDS cap ctest and each shard of the suites run on the GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
results=${1:?usage: scripts/gpu-check.sh RESULTS_DIR}
mkdir -p "$results"
results=$(cd "$results" && pwd)
exec > >(tee "$results/gpu-check.log") 2>&1
build=${OSPREY_GPU_BUILD_DIR:-build/gpu}
t0=$(date +%s)
section() { printf '\n=== %s (%ss)\n' "$*" "$(($(date +%s) - t0))"; }
rows=()
failed=()
fail() { failed+=("$1"); }

section "machine"
gpu_present=0
if nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null; then gpu_present=1
else echo "nvidia-smi: no GPU (a dry run: the GPU rows will say so)"; fi
echo "cores: $(nproc)"
for tool in cmake ninja; do command -v "$tool" >/dev/null || { echo "missing: $tool"; exit 1; }; done

section "dependencies"
prefix_opts=()
prebuilt=${OSPREY_GPU_PREBUILT:-0}
if [ "$prebuilt" = 1 ]; then
  # The release build made on the development machine (scripts/gpu-prebuilt.sh), carried as .gpu-prebuilt.
  build=$(scripts/gpu-prebuilt.sh unpack) || { echo "the prebuilt build did not unpack"; exit 1; }
  echo "prebuilt build in $build, its libraries in /tmp/osprey-libs (last on LD_LIBRARY_PATH)"
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/tmp/osprey-libs"
elif [ -d .gpu-bundle/debs ]; then
  prefix=/tmp/osprey-prefix
  rm -rf "$prefix"
  prefix_opts=("$(scripts/gpu-bundle.sh unpack "$prefix")")
  echo "unpacked $(ls .gpu-bundle/debs | wc -l) packages into $prefix: ${prefix_opts[*]}"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # (That the bundle's prefix alone configures, with the system's /usr hidden, is proven by gpu-bundle.sh configure.)
else
  echo "no .gpu-bundle: using the system's packages (scripts/bootstrap.sh installs them where a registry is)"
fi

# cuDNN (the convolutions): libcudnn.so.9 from the system or the toolkit, else the one the image's Python wheel
# (nvidia-cudnn-cu13) brings; the plug-in opens it with dlopen, so its directory goes on LD_LIBRARY_PATH.
if ! ldconfig -p 2>/dev/null | grep -q 'libcudnn.so.9 ' && [ ! -e /usr/local/cuda/lib64/libcudnn.so.9 ]; then
  cudnn_dir=$(python3 -c 'import nvidia.cudnn as c, os; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null)
  if [ -n "$cudnn_dir" ] && [ -e "$cudnn_dir/libcudnn.so.9" ]; then
    export LD_LIBRARY_PATH="$cudnn_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "cuDNN: $cudnn_dir (Python wheel)"
  else
    echo "cuDNN: libcudnn.so.9 not found (GPU convolutions will fail with that reason)"
  fi
fi

# NCCL and cuBLASLt from the image's Python wheels where the system has none (appended: the system's win).
for mod in nccl cublas; do
  dir=$(python3 -c "import nvidia.$mod as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null)
  [ -n "$dir" ] && [ -d "$dir" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$dir"
done
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
for lib in libcuda.so.1 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2; do
  found=$(ldconfig -p 2>/dev/null | grep -m1 "$lib " | awk '{print $NF}')
  [ -z "$found" ] && for d in ${LD_LIBRARY_PATH//:/ } /usr/local/cuda/lib64; do [ -e "$d/$lib" ] && found="$d/$lib" && break; done
  echo "$lib: ${found:-not found}"
done

section "configure and build (all cores)"
if [ "$prebuilt" = 1 ]; then
  echo "skipped: prebuilt"
  ldd "$build/libosprey.so.0" "$build/libosprey_cuda.so" | grep "not found" || echo "every library found"
  rows+=("| build | prebuilt here, carried |")
else
# No -Werror here: another compiler may warn differently. HDF5 is not in the bundle (its tests skip).
if ! cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOSPREY_WARNINGS_AS_ERRORS=OFF \
     -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" -DCMAKE_DISABLE_FIND_PACKAGE_HDF5=ON "${prefix_opts[@]}" \
     >"$results/configure.log" 2>&1; then
  tail -30 "$results/configure.log"
  echo "configure failed"
  exit 1
fi
grep -E "Osprey:" "$results/configure.log"
if ! cmake --build "$build" -j "$(nproc)" >"$results/build.log" 2>&1; then
  tail -40 "$results/build.log"
  echo "build failed"
  exit 1
fi
rows+=("| build | ok ($(grep -c 'warning:' "$results/build.log") warnings) |")
fi
plugin=0
[ -f "$build/libosprey_cuda.so" ] && plugin=1
rows+=("| CUDA plug-in built | $([ $plugin = 1 ] && echo yes || echo no) |")
[ $gpu_present = 1 ] && [ $plugin = 0 ] && fail "a GPU is present but the CUDA plug-in was not built"

section "osprey doctor"
"$build/tools/osprey/osprey" doctor
doctor_rc=$?
"$build/tools/osprey/osprey" devices
rows+=("| osprey doctor | $([ $doctor_rc -eq 0 ] && echo 'GPU usable' || echo "no GPU usable (exit $doctor_rc)") |")
[ $gpu_present = 1 ] && [ $doctor_rc -ne 0 ] && fail "osprey doctor found no usable GPU"

section "tests/cuda (every op on the GPU against the CPU; none may skip with a GPU)"
timeout 300 "$build/tests/cuda_tests" >"$results/cuda-tests.log" 2>&1
cuda_rc=$?
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]|no GPU|Failure' "$results/cuda-tests.log" | head -30
cuda_ok=$(grep -cE '^\[ +OK +\] .*\(' "$results/cuda-tests.log")
cuda_skipped=$(grep -cE '^\[ +SKIPPED +\] .*\(' "$results/cuda-tests.log")
rows+=("| tests/cuda | $cuda_ok ok, $cuda_skipped skipped, exit $cuda_rc |")
[ $cuda_rc -ne 0 ] && fail "tests/cuda failed"
[ $gpu_present = 1 ] && [ "$cuda_skipped" -ne 0 ] && fail "$cuda_skipped real-GPU tests skipped with a GPU present"

section "tests (ctest, all; memory growth forced so that test processes share the GPU)"
# Half the cores with a GPU (the test processes share it); all of them in a dry run.
jobs=$(nproc); [ $gpu_present = 1 ] && jobs=$((jobs / 2))
# The prebuilt build's Keras-loads-Osprey tests name this machine's Python (with Keras), absent there; the fuzzers
# exercise no GPU code.
exclude=()
[ "$prebuilt" = 1 ] && exclude=(-E '^(keras\.loads_osprey|fuzz\.)')
TF_FORCE_GPU_ALLOW_GROWTH=true timeout "${OSPREY_GPU_CTEST_SECONDS:-1800}" ctest --test-dir "$build" -j "$jobs" --timeout "${OSPREY_GPU_TEST_TIMEOUT:-1500}" \
  --output-on-failure "${exclude[@]}" >"$results/ctest.log" 2>&1
ctest_rc=$?
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)" "$results/ctest.log" | head -20
rows+=("| ctest | $(grep -E 'tests passed' "$results/ctest.log" | head -1) |")
[ $ctest_rc -ne 0 ] && fail "ctest failed"

section "the CPU suites on the GPU in full float32 (NVIDIA_TF32_OVERRIDE=0; informational)"
# ctest runs these suites with the CUDA plug-in off (they specify the CPU). Here they run on the GPU, the default
# device, in float32, each in shards side by side: what fails is a lead to a GPU kernel (or a test that assumes the
# CPU), listed, not counted as a failure of this check.
if [ $gpu_present = 1 ]; then
  suite_pids=()
  for suite in keras_tests keras_ops_tests ops_tests pipeline_tests distribute_tests; do
    for shard in 0 1 2; do
      (cd "$build/tests" && NVIDIA_TF32_OVERRIDE=0 TF_FORCE_GPU_ALLOW_GROWTH=true GTEST_TOTAL_SHARDS=3 \
         GTEST_SHARD_INDEX=$shard timeout "${OSPREY_GPU_SUITE_SECONDS:-240}" "./$suite" \
         >"$results/gpu-suite-$suite-$shard.log" 2>&1; echo "exit $?" >>"$results/gpu-suite-$suite-$shard.log") &
      suite_pids+=($!)
    done
  done
  wait "${suite_pids[@]}"
  suite_failed=$(cat "$results"/gpu-suite-*.log | grep -E '^\[  FAILED  \] [A-Za-z].*\(' | sed -E 's/^\[  FAILED  \] ([^ ]+).*/\1/' | sort -u)
  crashed=$(grep -l -E '^exit ([1-9][0-9][0-9]|124)$' "$results"/gpu-suite-*.log | xargs -r -n1 basename | tr '\n' ' ')
  for log in $(grep -l -E '^exit ([1-9][0-9][0-9]|124)$' "$results"/gpu-suite-*.log); do
    echo "$(basename "$log"): $(tail -1 "$log"), last test started: $(grep -E '^\[ RUN +\]' "$log" | tail -1)"
  done
  echo "failed on the GPU ($(echo "$suite_failed" | grep -c .)):"
  echo "$suite_failed" | sed 's/^/  /'
  rows+=("| CPU suites on the GPU, float32 | $(echo "$suite_failed" | grep -c .) failed$([ -n "$crashed" ] && echo ", crashed or timed out: $crashed") (informational) |")
else
  echo "skipped: no GPU"
fi

section "first seed's model on GPU:0 with placement logging (sample)"
timeout 60 "$build/examples/gpu_select" >"$results/gpu-select.log" 2>&1
grep -m 12 "Executing op" "$results/gpu-select.log"
grep -E "Physical GPUs|lives on|memory on" "$results/gpu-select.log"
on_gpu=$(grep -c "Executing op .*device:GPU:0" "$results/gpu-select.log")
on_cpu=$(grep -c "Executing op .*device:CPU:0" "$results/gpu-select.log")
rows+=("| seed on GPU:0, placement log | $on_gpu ops on GPU:0, $on_cpu on CPU:0 |")

section "MirroredStrategy example (every logical GPU a replica)"
timeout 60 "$build/examples/mirrored_strategy" >"$results/mirrored.log" 2>&1
mirrored_rc=$?
grep -E "Using MirroredStrategy|nccl|NCCL|Number of devices|replicas, on" "$results/mirrored.log" | head -6
rows+=("| MirroredStrategy example | exit $mirrored_rc |")
[ $mirrored_rc -ne 0 ] && fail "the MirroredStrategy example failed"

timings=()
profiles=()
if [ "${OSPREY_GPU_SKIP_TIMINGS:-0}" != 1 ]; then
section "step times (train_on_batch and PyTorch on the same GPU, µs/step)"
step() {  # model batch device steps [env...]
  local log="$results/step-$1-$2-${3//\//}.log"
  timeout 120 env "${@:5}" "$build/bench/device_step" "$1" "$2" "$3" "$4" 2>"$log" ||
    echo "| $1 | $2 | $3 | failed: $(tail -1 "$log") |"
}
for spec in "seed 64 200" "wide 128 100" "wide 8192 10"; do
  set -- $spec
  timings+=("$(step "$1" "$2" /CPU:0 "$3")")
  timings+=("$(step "$1" "$2" /GPU:0 200)")
  row=$(step "$1" "$2" /GPU:0 200 OSPREY_CUDA_GRAPHS=0)
  timings+=("${row/\/GPU:0 |//GPU:0, no CUDA graphs |}")
  if command -v python3 >/dev/null && python3 -c 'import torch' 2>/dev/null; then
    while IFS= read -r line; do timings+=("$line"); done < <(timeout 120 python3 bench/torch_gpu.py "$1" "$2" 200 2>&1 | grep '^|')
  else
    timings+=("| $1 | $2 | torch cuda | skipped: no python3 with torch |")
  fi
done
# The CIFAR-shaped CNN of issue 17 (cuDNN convolutions) at batch 256 on the GPU and, for scale, the CPU at 128.
timings+=("$(timeout 180 "$build/bench/cnn_step" 256 20 /GPU:0 row 2>"$results/step-cnn-gpu.log" || echo "| cnn | 256 | /GPU:0 | failed: $(tail -1 "$results/step-cnn-gpu.log") |")")
timings+=("$(timeout 180 "$build/bench/cnn_step" 128 3 /CPU:0 row 2>/dev/null || echo "| cnn | 128 | /CPU:0 | failed |")")
# Issue 18's sequence models on the GPU (the LSTM and GRU as cuDNN's RNNs, and for scale the LSTM's steps as ops;
# attention's batched cuBLASLt products and masked softmax): the LSTM(256) and GRU(256) over 100 steps at batch 64
# and the Transformer encoder block at batch 32.
timings+=("$(timeout 120 "$build/bench/lstm_step" 64 3 100 /GPU:0 row 2>"$results/step-lstm-gpu.log" || echo "| lstm | 64 | /GPU:0 | failed: $(tail -1 "$results/step-lstm-gpu.log") |")")
timings+=("$(timeout 120 "$build/bench/lstm_step" 64 3 100 /GPU:0 row gru 2>"$results/step-gru-gpu.log" || echo "| gru | 64 | /GPU:0 | failed: $(tail -1 "$results/step-gru-gpu.log") |")")
timings+=("$(timeout 120 "$build/bench/lstm_step" 64 3 100 /GPU:0 row lstm steps 2>"$results/step-lstm-steps-gpu.log" || echo "| lstm steps | 64 | /GPU:0 | failed: $(tail -1 "$results/step-lstm-steps-gpu.log") |")")
timings+=("$(timeout 120 "$build/bench/transformer_step" 32 5 128 /GPU:0 row 2>"$results/step-transformer-gpu.log" || echo "| transformer | 32 | /GPU:0 | failed: $(tail -1 "$results/step-transformer-gpu.log") |")")
# Mixed precision on the tensor cores (issue 20): the wide MLP at batch 8192 and the CNN at 256 in bfloat16 and
# float16 (cuBLASLt's and cuDNN's half kernels), the Transformer block in bfloat16.
for policy in mixed_bfloat16 mixed_float16; do
  timings+=("$(timeout 120 "$build/bench/device_step" wide 8192 /GPU:0 10 "$policy" 2>"$results/step-wide-$policy.log" || echo "| wide | 8192 | /GPU:0, $policy | failed: $(tail -1 "$results/step-wide-$policy.log") |")")
  timings+=("$(timeout 180 "$build/bench/cnn_step" 256 20 /GPU:0 row "$policy" 2>"$results/step-cnn-$policy.log" || echo "| cnn | 256 | /GPU:0, $policy | failed: $(tail -1 "$results/step-cnn-$policy.log") |")")
done
timings+=("$(timeout 120 "$build/bench/transformer_step" 32 5 128 /GPU:0 row mixed_bfloat16 2>"$results/step-transformer-bf16.log" || echo "| transformer | 32 | /GPU:0, mixed_bfloat16 | failed: $(tail -1 "$results/step-transformer-bf16.log") |")")
# PyTorch on the same GPU for the CNN, the recurrent layers and the Transformer block (eager and as a CUDA graph).
if command -v python3 >/dev/null && python3 -c 'import torch' 2>/dev/null; then
  for spec in "cnn 256 20" "lstm 64 10" "gru 64 10" "transformer 32 10"; do
    while IFS= read -r line; do timings+=("$line"); done < <(timeout 150 python3 bench/torch_gpu.py $spec 2>&1 | grep '^|')
  done
fi
printf '%s\n' "${timings[@]}"

section "kernel profiles (ncu: each kernel's time, per training step)"
# Where the GPU time of a step goes: one profiled run per benchmark (every kernel of its warm-up and timed steps),
# summed per kernel by scripts/ncu_summary.py. A step much longer than its kernels is waiting on the host.
ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
profile() {  # name steps command...
  local name=$1 steps=$2 csv="$results/ncu-${1// /-}.csv"
  shift 2
  timeout 90 "$ncu_bin" --clock-control none --metrics gpu__time_duration.sum --csv "$@" >"$csv" 2>&1
  profiles+=("$(python3 scripts/ncu_summary.py "$csv" "$steps" "$name")")
}
if [ $gpu_present = 1 ] && [ -n "$ncu_bin" ] && command -v python3 >/dev/null; then
  # Steps run: device_step 10 warm-ups + 1; cnn_step 3 + 3 x 1; lstm_step and transformer_step 1 + 3 x 1.
  OSPREY_CUDA_GRAPHS=0 profile "wide b8192" 11 "$build/bench/device_step" wide 8192 /GPU:0 1
  profile "seed b64" 11 "$build/bench/device_step" seed 64 /GPU:0 1
  profile "cnn b256" 6 "$build/bench/cnn_step" 256 1 /GPU:0 row
  profile "lstm b64" 4 "$build/bench/lstm_step" 64 1 100 /GPU:0 row
  profile "transformer b32" 4 "$build/bench/transformer_step" 32 1 128 /GPU:0 row
  printf '%s\n' "${profiles[@]}"
else
  echo "skipped: $([ $gpu_present = 1 ] && echo "no ncu or python3" || echo "no GPU")"
fi
for spec in "seed 64" "wide 128"; do  # whether the GPU steps replayed as CUDA graphs (the plug-in says why not)
  set -- $spec
  why=$(grep -m1 -o "replayed launch by launch.*" "$results/step-$1-$2-GPU:0.log" 2>/dev/null)
  rows+=("| $1 b$2 GPU step as a CUDA graph | ${why:-no fallback reported} |")
done

section "wide MLP at batch 8192 on GPU:0 against cuBLAS's GEMMs alone (target: >= 60 %)"
floor_line=$(timeout 120 "$build/bench/gpu_gemm_floor" 8192 20 2>/dev/null || echo '{"skipped": "gpu_gemm_floor did not run"}')
echo "$floor_line"
value() { printf '%s\n' "${timings[@]}" | grep -E "^\| $1 \|" | head -1 | awk -F'|' '{gsub(/ /, "", $5); print $5}'; }
floor_us=$(echo "$floor_line" | grep -o '"gemm_floor_us": [0-9.]*' | grep -o '[0-9.]*$')
step_us=$(value "wide \| 8192 \| /GPU:0")
if [ -n "$floor_us" ] && [[ "$step_us" =~ ^[0-9.]+$ ]]; then
  ratio=$(awk -v f="$floor_us" -v s="$step_us" 'BEGIN { printf "%.1f", 100 * f / s }')
  rows+=("| wide b8192 GPU step vs cuBLAS GEMMs | step $step_us µs, GEMMs $floor_us µs: $ratio % (target >= 60) |")
else
  rows+=("| wide b8192 GPU step vs cuBLAS GEMMs | not measured: ${floor_line} |")
fi
rows+=("| seed step on GPU:0 | $(value "seed \| 64 \| /GPU:0") µs as a CUDA graph (target <= 20), $(value "seed \| 64 \| /GPU:0, no CUDA graphs") µs without; PyTorch $(value "seed \| 64 \| torch [^|]* cuda eager") µs eager, $(value "seed \| 64 \| torch [^|]* cuda graph") µs as a CUDA graph |")
fi

section "summary"
{
  echo "| check | result |"
  echo "|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "| model | batch | device | µs/step |"
  echo "|---|---|---|---|"
  printf '%s\n' "${timings[@]}"
  if ((${#profiles[@]})); then
    echo
    echo "| profiled step | kernels |"
    echo "|---|---|"
    printf '%s\n' "${profiles[@]}"
  fi
  echo
  if ((${#failed[@]})); then printf -- '- FAILED: %s\n' "${failed[@]}"; else echo "- all checks passed"; fi
  echo "- total: $(($(date +%s) - t0)) s"
} | tee "$results/summary.md"
((${#failed[@]} == 0))
