#!/usr/bin/env bash
# Every benchmark side by side in one run (bench/RESULTS.md records the output): Osprey, PyTorch CPU eager (Debian
# python3-torch), the libtorch C++ frontend (Debian libtorch-dev), TensorFlow 2 + Keras 3 (pip tensorflow-cpu) and
# the oneDNN GEMM floor; the seed model (also as a two-input functional model), the wide MLP at batch 128 and 1024,
# start to first step, and
# MirroredStrategy on 2 logical CPUs. References that are not installed are reported as skipped.
# Debian's torch uses the reference BLAS unless an optimised one is installed: `apt-get install libopenblas0-pthread`
# (its OpenMP build made PyTorch's two-thread LSTM 3x slower than its one-thread one in session 17).
# Usage: bench/run.sh [build-dir] [seed-epochs]
set -uo pipefail
build=${1:-build/release}
epochs=${2:-20}
cd "$(dirname "$0")/.."
echo "# $(date -u +%F) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
skip() { printf '{"framework": "%s", "skipped": "%s"}\n' "$1" "$2"; }
have_torch=0; /usr/bin/python3 -c 'import torch' 2>/dev/null && have_torch=1
have_tf=0; python3 -c 'import tensorflow, keras' 2>/dev/null && have_tf=1
libtorch=""
if [ -f /usr/include/torch/csrc/api/include/torch/torch.h ]; then
  libtorch=$build/bench/libtorch_step
  if [ ! -x "$libtorch" ] || [ bench/libtorch_step.cpp -nt "$libtorch" ]; then
    g++ -O2 -std=c++17 bench/libtorch_step.cpp -o "$libtorch" -I/usr/include/torch/csrc/api/include \
      -ltorch -ltorch_cpu -lc10 || libtorch=""
  fi
fi

echo "## seed model (2048x20 -> 64 -> 32 -> 1, Adam, BCE, batch 64)"
"$build/bench/seed_step" "$epochs" 0
"$build/bench/seed_step" "$epochs" 1
if ((have_torch)); then
  for t in 1 2; do /usr/bin/python3 bench/torch_seed.py "$epochs" "$t"; done
else skip pytorch-eager-cpu "python3-torch is not installed (apt-get install python3-torch)"; fi
if [ -n "$libtorch" ]; then for t in 1 2; do "$libtorch" seed 64 "$t" 300; done
else skip libtorch-cpp "libtorch-dev is not installed (apt-get install libtorch-dev)"; fi
if ((have_tf)); then python3 bench/keras_bench.py seed 64 0 2>/dev/null
else skip tensorflow-keras "tensorflow is not installed (pip install tensorflow-cpu)"; fi

echo "## the seed model as Sequential and as a two-input functional model of the same size (alternated)"
"$build/bench/functional_step" "$epochs" 0 3

echo "## wide MLP (784 -> 512 -> 512 -> 10, Adam, sparse CE)"
for b in 128 1024; do
  steps=$((b == 128 ? 30 : 8))
  "$build/bench/wide_step" "$b" "$steps" 0 2>/dev/null
  "$build/bench/wide_step" "$b" "$steps" 0 mixed_bfloat16 2>/dev/null
  if ((have_torch)); then for t in 1 2; do /usr/bin/python3 bench/torch_wide.py "$b" "$t" "$steps"; done; fi
  if [ -n "$libtorch" ]; then for t in 1 2; do "$libtorch" wide "$b" "$t" "$steps"; done; fi
  if ((have_tf)); then python3 bench/keras_bench.py wide "$b" 0 2>/dev/null; fi
done

echo "## CIFAR-shaped CNN (32x32x3, conv 32-32-pool-64-64-pool, dense 128-10, Adam, batch 128; issue 17)"
# float32, then each framework's bfloat16 mixed precision (Osprey's and Keras's mixed_bfloat16, torch.autocast).
for p in f32 bf16; do "$build/bench/conv_floor" 128 5 "$p"; done
for p in float32 mixed_bfloat16; do "$build/bench/cnn_step" 128 5 /CPU:0 json "$p"; done
if ((have_torch)); then
  for p in float32 bfloat16; do for t in 1 2; do /usr/bin/python3 bench/torch_cnn.py 128 "$t" 5 "$p"; done; done
fi
if ((have_tf)); then for p in float32 mixed_bfloat16; do python3 bench/keras_bench.py cnn 128 0 "$p" 2>/dev/null; done; fi

echo "## LSTM(256) over 100 steps of 128 inputs, Dense(1), Adam, batch 64 (issue 18)"
"$build/bench/lstm_step" 64 3
"$build/bench/lstm_floor" 5  # oneDNN's LSTM primitive alone, forward + backward
if ((have_torch)); then for t in 1 2; do /usr/bin/python3 bench/torch_lstm.py "$t" 3; done; fi
if ((have_tf)); then python3 bench/keras_bench.py lstm 64 0 2>/dev/null; fi
echo "## The same LSTM, each framework in bfloat16 mixed precision (issue 18 / issue 20)"
"$build/bench/lstm_step" 64 3 100 /CPU:0 json lstm auto mixed_bfloat16
"$build/bench/lstm_floor" 5 64 100 bf16  # oneDNN's bfloat16 LSTM alone
if ((have_torch)); then for t in 1 2; do /usr/bin/python3 bench/torch_lstm.py "$t" 3 lstm bf16; done; fi
if ((have_tf)); then python3 bench/keras_bench.py lstm 64 0 mixed_bfloat16 2>/dev/null; fi
echo "## GRU(256) (reset_after), the same shapes (issue 18)"
"$build/bench/lstm_step" 64 3 100 /CPU:0 json gru
if ((have_torch)); then for t in 1 2; do /usr/bin/python3 bench/torch_lstm.py "$t" 3 gru; done; fi
if ((have_tf)); then python3 bench/keras_bench.py gru 64 0 2>/dev/null; fi
echo "## Text classifier: Embedding(mask_zero) + Bidirectional(LSTM(128)), 100 right-padded tokens, batch 64 (issue 18)"
for m in auto steps; do "$build/bench/text_step" 64 3 "$m"; done  # oneDNN's primitive, then the steps
if ((have_torch)); then for m in text textpad; do for t in 1 2; do /usr/bin/python3 bench/torch_lstm.py "$t" 3 "$m"; done; done; fi
if ((have_tf)); then python3 bench/keras_bench.py text 64 0 2>/dev/null; fi

echo "## Transformer encoder block: MultiHeadAttention 4x64, width 256, 128 steps, FFN 1024, batch 32 (issue 18)"
for p in float32 mixed_bfloat16; do "$build/bench/transformer_step" 32 3 128 /CPU:0 json "$p"; done
if ((have_torch)); then
  for p in float32 bfloat16; do for t in 1 2; do /usr/bin/python3 bench/torch_transformer.py "$t" 3 "$p"; done; done
fi

echo "## MelSpectrogram forward over 32 one-second 16 kHz signals, 128 mel bins (issue 20: keras::ops's FFT)"
for fs in 512:160 2048:512; do
  fft=${fs%:*} stride=${fs#*:}
  "$build/bench/audio_step" 32 "$fft" "$stride"
  if ((have_tf)); then python3 bench/keras_bench.py mel 32 0 float32 "$fft" "$stride" 2>/dev/null; fi
done

echo "## start to first training step"
for i in 1 2 3; do "$build/bench/first_step" "$(date +%s%N)" 2>/dev/null; done
if ((have_tf)); then python3 bench/keras_bench.py first_step 2>/dev/null; fi

# MirroredStrategy on one CPU: the wide MLP (batch 256) on 2 logical CPUs (threads shared out) vs 1 device with
# every thread; three alternating runs (config is per process).
echo "## MirroredStrategy over 2 logical CPUs vs 1 device"
for i in 1 2 3; do
  "$build/bench/mirrored_step" single 2 30 2>/dev/null
  "$build/bench/mirrored_step" mirrored 2 30 2>/dev/null
done
for run in 1 2; do  # the same through fit() (one epoch of 30 batches)
  "$build/bench/mirrored_step" single 2 30 fit 2>/dev/null
  "$build/bench/mirrored_step" mirrored 2 30 fit 2>/dev/null
done

# MultiWorkerMirroredStrategy: 2 worker processes (mpirun, one core each) vs 1 process with both threads, and the
# gradients' all-reduce against a bare MPI_Allreduce (issue 19).
if command -v mpirun >/dev/null && [ -x "$build/bench/allreduce_step" ]; then
  echo "## MultiWorkerMirroredStrategy: 2 workers x 1 core vs 1 process x 2 threads (wide MLP, global batch 256)"
  mpi=(mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core)
  for i in 1 2 3; do
    "$build/bench/mirrored_step" single 1 30 2>/dev/null
    "${mpi[@]}" "$build/bench/mirrored_step" workers 1 30 2>/dev/null | grep '^{'
  done
  for run in 1 2; do
    "$build/bench/mirrored_step" single 1 30 fit 2>/dev/null
    "${mpi[@]}" "$build/bench/mirrored_step" workers 1 30 fit 2>/dev/null | grep '^{'
  done
  "${mpi[@]}" "$build/bench/allreduce_step" 200 2>/dev/null | grep '^{'
fi

echo "## input pipeline: a PyDataset taking 5 ms per batch, wide MLP batch 128"
"$build/bench/input_pipeline" 5 40 2>&1 | grep -E '^\{|bottleneck' | sed 's/^.*W [^]]*] /warning: /'
echo "## data::Dataset pipeline with a 2 ms map per batch (issue 20), against tf.data"
"$build/bench/dataset_pipeline" 200 2
if ((have_tf)); then python3 bench/tf_dataset.py 200 2 2>/dev/null | grep '^{'
else skip tf.data "tensorflow is not installed (pip install tensorflow-cpu)"; fi
echo "## make_csv_dataset: one pass over 1M rows x 5 columns, plain and gzip, in order and shuffled, against tf.data"
"$build/bench/csv_read" 1000000 /tmp/osprey_csv_bench
if ((have_tf)); then python3 bench/tf_csv.py /tmp/osprey_csv_bench 2>/dev/null | grep '^{'
else skip tf.data "tensorflow is not installed (pip install tensorflow-cpu)"; fi
echo "## the TensorBoard callback on the seed model (issue 20: update_freq=\"batch\" adds <= 3 % to the epoch)"
"$build/bench/tensorboard_overhead" 20 10
if ((have_tf)); then python3 bench/keras_tensorboard.py 5 6 2>/dev/null | grep '^{'
else skip tensorflow-keras "tensorflow is not installed (pip install tensorflow-cpu)"; fi
