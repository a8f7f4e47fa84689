#!/usr/bin/env bash
# MultiWorkerMirroredStrategy across processes (issue 19), run by ctest: Open MPI over loopback on this machine,
# as root where CI runs (with the flags Open MPI needs for that), oversubscribed.
#   multi_worker_test.sh <multi_worker_check> <scratch dir> <case> [examples/multi_worker, for the case "example"]
# cases: same_as_one_process (2 workers x 1 logical CPU == 1 process x 2 logical CPUs, bit for bit; == one device
# within 1e-5), dataset (the same with a data::Dataset: every worker reads all of it, auto-shard DATA), shard_off
# (auto-shard OFF: each worker its own copy, against one process; experimental_distribute_dataset's pieces; copies
# of different lengths; FILE refused), four_replicas (2 workers x 2 logical CPUs == 1 process x 4, within 1e-6), progress_on_chief,
# hang (a worker that stops taking part: the other's DeadlineExceededError names it, in bounded time), killed (a
# worker SIGKILLed mid-epoch: the job ends in bounded time and the launcher names it), tf_config (TF_CONFIG that
# does not match the launch, or a cluster started alone: clear errors), backup_resume / backup_resume_workers
# (killed with SIGKILL, started again with the same command: BackupAndRestore resumes to the same final weights,
# bit for bit).
set -uo pipefail
check="$1"; dir="$2"; case_="$3"
mkdir -p "$dir"; rm -rf "$dir/$case_".*
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Loopback only, shared memory between the processes; no warnings about this container's missing single-copy.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_oob_tcp_if_include=lo
unset TF_CONFIG
mpirun_() { timeout "${MPI_TIMEOUT:-240}" mpirun --bind-to none "$@"; }
fail() { echo "FAILED: $*"; exit 1; }

case "$case_" in
  same_as_one_process)
    "$check" train 2 mirrored "$dir/$case_.mirrored2" || fail "MirroredStrategy on 2 logical CPUs"
    "$check" train 1 none "$dir/$case_.single" || fail "one device"
    mpirun_ -np 2 "$check" train 1 workers "$dir/$case_.workers" || fail "mpirun -np 2"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.workers.rank1" 0 || fail "the two workers differ"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.mirrored2" 0 || fail "2 workers != 1 process x 2 CPUs"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.single" 1e-5 || fail "2 workers vs one device"
    [ -f "$dir/$case_.workers.worker0.weights.osp" ] || fail "the chief did not save its weights"
    [ ! -e "$dir/$case_.workers.worker1.weights.osp" ] || fail "worker 1 saved a file: only the chief writes"
    ;;
  dataset)
    "$check" train 2 mirrored "$dir/$case_.mirrored2" dataset || fail "MirroredStrategy on 2 logical CPUs"
    "$check" train 1 none "$dir/$case_.single" dataset || fail "one device"
    mpirun_ -np 2 "$check" train 1 workers "$dir/$case_.workers" dataset || fail "mpirun -np 2"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.workers.rank1" 0 || fail "the two workers differ"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.mirrored2" 0 || fail "2 workers != 1 process x 2 CPUs"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.single" 1e-5 || fail "2 workers vs one device"
    ;;
  shard_off)
    # AutoShardPolicy OFF: each worker trains on 16-row pieces of its own copy; one process on 2 logical CPUs
    # with each piece twice is the same computation, bit for bit (fit, evaluate and predict on the datasets).
    # off_w: the same with a weight per sample (each worker's rows weighed by weights only it holds: the loss,
    # weighted_metrics in training and evaluation).
    for d in off off_end off_w; do
      "$check" train 2 mirrored "$dir/$case_.$d.ref" ${d}_ref || fail "MirroredStrategy on ${d}_ref"
      mpirun_ -np 2 "$check" train 1 workers "$dir/$case_.$d" $d || fail "mpirun -np 2 ($d)"
      "$check" compare "$dir/$case_.$d" "$dir/$case_.$d.rank1" 0 || fail "the two workers differ ($d)"
      "$check" compare "$dir/$case_.$d" "$dir/$case_.$d.ref" 0 || fail "2 workers ($d) != 1 process on ${d}_ref"
    done
    out=$(OSPREY_COLLECTIVE_TIMEOUT=30 mpirun_ -np 2 "$check" off_checks "$dir/$case_.checks" 2>&1); rc=$?; echo "$out"
    [ "$rc" = 0 ] || fail "off_checks exited with $rc"
    [ "$(grep -c 'off checks passed' <<<"$out")" = 2 ] || fail "off_checks on both workers"
    "$check" compare "$dir/$case_.checks" "$dir/$case_.checks.rank1" 0 || fail "uneven copies: the workers differ"
    ;;
  masked_output)
    # A tagger whose output carries a mask: each replica's loss is its real steps' sum over the global batch's
    # real steps (added up across workers first), so 2 workers = 1 process x 2 CPUs = one device.
    "$check" masked 2 mirrored "$dir/$case_.mirrored2" || fail "MirroredStrategy on 2 logical CPUs"
    "$check" masked 1 none "$dir/$case_.single" || fail "one device"
    mpirun_ -np 2 "$check" masked 1 workers "$dir/$case_.workers" || fail "mpirun -np 2"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.workers.rank1" 0 || fail "the two workers differ"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.mirrored2" 1e-6 || fail "2 workers vs 1 process x 2 CPUs"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.single" 1e-5 || fail "2 workers vs one device"
    ;;
  four_replicas)
    "$check" train 4 mirrored "$dir/$case_.mirrored4" || fail "MirroredStrategy on 4 logical CPUs"
    mpirun_ -np 2 "$check" train 2 workers "$dir/$case_.workers" || fail "mpirun -np 2 (2 CPUs each)"
    "$check" compare "$dir/$case_.workers" "$dir/$case_.workers.rank1" 0 || fail "the two workers differ"
    # ((g0 + g1) + (g2 + g3)) across workers against ((g0 + g1) + g2) + g3 in one process: not the same bits.
    "$check" compare "$dir/$case_.workers" "$dir/$case_.mirrored4" 1e-6 || fail "2x2 workers vs 1 process x 4 CPUs"
    ;;
  progress_on_chief)
    out=$(mpirun_ -np 2 "$check" train 1 workers "$dir/$case_.workers" 2>&1) || fail "mpirun -np 2: $out"
    echo "$out"
    n=$(grep -c "^Epoch 1/3" <<<"$out")
    [ "$n" = 1 ] || fail "expected the chief's progress only (one 'Epoch 1/3'), got $n"
    grep -q "MultiWorkerMirroredStrategy with cluster_spec = " <<<"$out" || fail "no strategy log line"
    ;;
  hang)
    start=$(date +%s)
    out=$(OSPREY_COLLECTIVE_TIMEOUT=3 mpirun_ -np 2 "$check" hang 2>&1); rc=$?
    took=$(( $(date +%s) - start ))
    echo "$out"; echo "exit $rc after $took s"
    [ "$rc" != 0 ] || fail "the job should fail"
    grep -q "worker 0: DeadlineExceededError" <<<"$out" || fail "worker 0 did not report the time-out"
    grep -q "Worker(s) 1 did not answer" <<<"$out" || fail "the error does not name worker 1"
    [ "$took" -lt 60 ] || fail "took $took s"
    ;;
  killed)
    start=$(date +%s)
    out=$(OSPREY_COLLECTIVE_TIMEOUT=20 mpirun_ -np 2 "$check" die 2>&1); rc=$?
    took=$(( $(date +%s) - start ))
    echo "$out"; echo "exit $rc after $took s"
    [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "the job should fail on its own (rc $rc)"
    grep -Eq "rank 1 .*(signal 9|Killed)|worker 0: DeadlineExceededError.*Worker\(s\) 1" <<<"$out" || fail "worker 1 is not named"
    [ "$took" -lt 60 ] || fail "took $took s"
    ;;
  backup_resume)
    # One process: killed before global step 13 (last backup after 12 batches: epoch 1, batch 2), run again.
    rm -rf "$dir/$case_".*
    "$check" backup 1 none "$dir/$case_.dirA" "$dir/$case_.a" || fail "uninterrupted run"
    [ ! -e "$dir/$case_.dirA" ] || fail "delete_checkpoint left $dir/$case_.dirA"
    "$check" backup 1 none "$dir/$case_.dirB" "$dir/$case_.b" 13; rc=$?
    [ "$rc" = 137 ] || fail "the first run should die of SIGKILL (rc $rc)"
    [ -f "$dir/$case_.dirB/training_metadata.json" ] || fail "no backup after the kill"
    cat "$dir/$case_.dirB/training_metadata.json"; echo
    out=$("$check" backup 1 none "$dir/$case_.dirB" "$dir/$case_.b" 13) || fail "the resumed run: $out"
    echo "$out"
    grep -q "ran 18 steps, epochs 1 2" <<<"$out" || fail "the resumed run should run epoch 1's last 8 batches and epoch 2"
    "$check" compare "$dir/$case_.b" "$dir/$case_.a" 0 || fail "resumed != uninterrupted"
    # Killed right after an epoch's last backup-carrying step (global step 21: backups after 20 = epoch 1's end).
    "$check" backup 1 none "$dir/$case_.dirC" "$dir/$case_.c" 21; [ $? = 137 ] || fail "the run should die"
    "$check" backup 1 none "$dir/$case_.dirC" "$dir/$case_.c" || fail "resumed run C"
    "$check" compare "$dir/$case_.c" "$dir/$case_.a" 0 || fail "resumed at an epoch boundary != uninterrupted"
    ;;
  backup_resume_workers)
    rm -rf "$dir/$case_".*
    mpirun_ -np 2 "$check" backup 1 workers "$dir/$case_.dirA" "$dir/$case_.a" || fail "uninterrupted workers"
    out=$(mpirun_ -np 2 "$check" backup 1 workers "$dir/$case_.dirB" "$dir/$case_.b" 13 2>&1); rc=$?
    echo "$out"; [ "$rc" != 0 ] || fail "the job should fail when worker 1 is killed"
    [ -f "$dir/$case_.dirB/training_metadata.json" ] || fail "no backup after the kill"
    mpirun_ -np 2 "$check" backup 1 workers "$dir/$case_.dirB" "$dir/$case_.b" 13 || fail "the resumed job"
    "$check" compare "$dir/$case_.b" "$dir/$case_.a" 0 || fail "resumed workers != uninterrupted"
    "$check" compare "$dir/$case_.b.rank1" "$dir/$case_.a" 0 || fail "worker 1 differs after resuming"
    ;;
  model_mismatch)
    out=$(mpirun_ -np 2 "$check" mismatch 2>&1); rc=$?; echo "$out"
    [ "$rc" != 0 ] || fail "the job should fail"
    grep -q "must build the same model" <<<"$out" || fail "no error about the models"
    ! grep -q "trained a mismatched model" <<<"$out" || fail "a worker trained anyway"
    ;;
  example)  # the README's command: examples/multi_worker (4th argument) under mpirun -np 2
    out=$(cd "$dir" && mpirun_ -np 2 "$4" 2>&1); rc=$?; echo "$out"
    [ "$rc" = 0 ] || fail "mpirun -np 2 examples/multi_worker exited with $rc"
    grep -q "^Workers: 2, replicas in sync: 2" <<<"$out" || fail "the chief's first line"
    grep -q "^final loss " <<<"$out" || fail "the chief's last line"
    [ "$(grep -c '^Epoch 3/3' <<<"$out")" = 1 ] || fail "progress from the chief only"
    ;;
  tf_config)
    two='{"cluster": {"worker": ["localhost:1", "localhost:2"]}, "task": {"type": "worker", "index": 0}}'
    out=$(TF_CONFIG="$two" "$check" cluster 2>&1); echo "$out"
    grep -q "describes a cluster of 2 workers, but this process was started alone" <<<"$out" || fail "alone"
    three='{"cluster": {"chief": ["h:1"], "worker": ["h:2", "h:3"]}, "task": {"type": "worker", "index": 0}}'
    out=$(mpirun_ -np 2 -x TF_CONFIG="$three" "$check" cluster 2>&1); echo "$out"
    grep -q "cluster has 3 worker(s) (chief + worker jobs), but an MPI launch of 2 process(es)" <<<"$out" || fail "size"
    out=$(mpirun_ -np 2 -x TF_CONFIG="$two" "$check" cluster 2>&1); echo "$out"
    grep -q "TF_CONFIG says this process is worker 0 (worker 0 of 2" <<<"$out" || fail "rank 1 given task 0"
    out=$(mpirun_ -np 2 -x TF_CONFIG='{"cluster": ' "$check" cluster 2>&1); echo "$out"
    grep -q "TF_CONFIG is not valid JSON" <<<"$out" || fail "malformed"
    out=$(mpirun_ -np 2 "$check" cluster 2>&1); echo "$out"
    grep -q "task worker 1, worker 1 of 2" <<<"$out" || fail "the MPI world as the cluster"
    ;;
  *) fail "unknown case $case_" ;;
esac
echo "passed: $case_"
