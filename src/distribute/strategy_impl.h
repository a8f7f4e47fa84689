// MirroredStrategy's machinery: the replica devices, one worker thread per replica, an abortable barrier, and
// the gradient all-reduce (SUM) that every replica calls collectively. Used by Keras's fit/evaluate/predict.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "osprey/data.h"
#include "osprey/distribute.h"
#include "osprey/variable.h"
#include "runtime/device_manager.h"

namespace osprey::distribute {

/// The rows [begin, end) of a global batch that replica r of `replicas` (in sync, across workers) takes: ceil(batch
/// / replicas) each in order, the last ones shorter or empty.
inline std::pair<int64_t, int64_t> replica_rows(int64_t batch, int replicas, int r) {
  const int64_t per = (batch + replicas - 1) / replicas;
  const int64_t b = std::min(batch, per * r);
  return {b, std::min(batch, b + per)};
}

/// experimental_distribute_dataset's generator: each call gives the next local replica's rows of the dataset's
/// current global batch (a new one after the last local replica's), every component of the element flattened.
BatchGenerator rebatching_generator(std::shared_ptr<StrategyImpl> strategy, const data::Dataset& dataset);

/// The auto-shard policy a MultiWorkerMirroredStrategy applies to `dataset` under `fn` (fit, evaluate...): AUTO is
/// DATA; FILE is a NotFoundError naming the source (no Osprey source reads files lazily).
data::AutoShardPolicy shard_policy(const data::Dataset& dataset, const char* fn);
/// AutoShardPolicy::OFF: the dataset this worker iterates, its rows cut into batch_sizes_for_worker's pieces of
/// the first element's rows (the global batch), one piece per replica per step.
data::Dataset rebatched_for_worker(const StrategyImpl& strategy, const data::Dataset& dataset);

/// A barrier for the replica threads that can be broken: when one replica fails, the others stop waiting and
/// throw instead of hanging.
class ReplicaBarrier {
 public:
  explicit ReplicaBarrier(int count) : count_(count) {}
  /// Waits until every replica arrived; throws AbortedError when the barrier was broken.
  void arrive_and_wait();
  void break_barrier();
  void reset();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_, arrived_ = 0;
  long generation_ = 0;
  bool broken_ = false;
};

class WorkerGroup;

class StrategyImpl {
 public:
  /// `workers`: the process's worker group for a MultiWorkerMirroredStrategy (every worker must have as many local
  /// devices), null for a MirroredStrategy.
  StrategyImpl(std::vector<runtime::Device*> devices, std::optional<CrossDeviceOps> cross_device_ops,
               WorkerGroup* workers = nullptr);
  ~StrategyImpl();

  const std::vector<runtime::Device*>& devices() const { return devices_; }
  /// This process's replicas (one per local device, one thread each).
  int num_replicas() const { return static_cast<int>(devices_.size()); }
  /// Every worker's replicas: num_replicas() × workers.
  int num_replicas_in_sync() const { return num_replicas() * num_workers(); }
  int num_workers() const;
  int worker_index() const;
  bool is_chief() const { return worker_index() == 0; }
  /// The global id of this process's replica 0 (worker index × local replicas).
  int replica_offset() const { return worker_index() * num_replicas(); }
  WorkerGroup* workers() const { return workers_; }
  bool use_collective() const { return use_collective_; }
  int num_packs() const { return num_packs_; }

  /// Runs job(r) for every replica r at once, each on its own thread with its replica id and a DeviceScope of its
  /// device; returns when all finished and re-throws the first exception (the others are released).
  void run_replicas(const std::function<void(int)>& job);
  /// Collective, called by every replica inside run_replicas with its float32 gradients (all defined, on its
  /// device, same shapes on every replica): on return every replica's grads hold the SUM over replicas, bit for
  /// bit the same everywhere. The order of summation is fixed (replica 0, 1, ...), so runs are reproducible.
  /// With several workers the local sums are then added across the workers (MPI's all-reduce, the same on every
  /// worker: two workers' sums are the same bits in either order).
  void all_reduce_sum(std::vector<std::vector<Tensor>>& grads, int replica);
  /// True when the replicas share host memory and reduce by slices (logical CPUs, no collective).
  bool reduces_on_host() const;
  /// The host reduction without its copy-back: replica r sums slice r of every gradient (the split of
  /// keras::optimizers::shard_range) into replica 0's gradients and returns; replica 0's gradients then hold the
  /// sums of each slice once its replica returned. For the sharded optimizer update.
  void reduce_own_slices(std::vector<std::vector<Tensor>>& grads, int replica);
  /// Collective merge of one value per replica (a variable assigned in replica context): every replica gets the
  /// same combination (SUM, MEAN or replica 0's value) on its own device, over every worker's replicas.
  Tensor merge(int replica, const Tensor& value, VariableAggregation aggregation);
  /// Mirrors variables that are not yet mirrored onto the replica devices (they must live on the first one).
  void mirror(const std::vector<Variable*>& vars) const;

 private:
  void worker(int replica);
  void reduce_on_host(std::vector<std::vector<Tensor>>& grads, int replica, bool copy_back);
  void reduce_to_one_device(std::vector<std::vector<Tensor>>& grads);
  void reduce_collective(std::vector<std::vector<Tensor>>& grads);
  // Across workers (multi_worker_strategy.cpp).
  void reduce_across_workers(std::vector<std::vector<Tensor>>& grads);
  Tensor merge_across_workers(int r, const Tensor& value, VariableAggregation aggregation);

  std::vector<runtime::Device*> devices_;
  runtime::Device* reduce_device_ = nullptr;
  bool use_collective_ = false;
  bool host_memory_ = true;
  int num_packs_ = 1;
  int64_t bytes_per_pack_ = 0;
  int threads_per_replica_ = 1;

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  long generation_ = 0;
  int remaining_ = 0;
  bool stop_ = false;
  const std::function<void(int)>* job_ = nullptr;
  std::exception_ptr error_;
  ReplicaBarrier barrier_;
  std::vector<Tensor> merge_slots_;
  Tensor merged_;  // a cross-worker merge's result (set by replica 0)
  WorkerGroup* workers_ = nullptr;
};

/// A strategy's devices when none are named: all logical GPUs, else all logical CPUs.
std::vector<runtime::Device*> default_devices();
/// "'a', 'b'" as a Python tuple: "('a', 'b')", "('a',)".
std::string tuple_repr(const std::vector<std::string>& names);

/// The strategy whose scope() is active on this thread, or null.
std::shared_ptr<StrategyImpl> current_strategy();
/// The number of replicas in sync of the strategy this thread works for (every worker's): in a replica thread its
/// strategy's, else the one of the active scope(), else 1.
int replicas_in_sync();

}  // namespace osprey::distribute
