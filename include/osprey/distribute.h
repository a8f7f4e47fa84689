// tf.distribute: MirroredStrategy (data parallelism over local devices, one thread per replica, gradients
// all-reduced with SUM, identical updates everywhere; spec/distribute.md §1) and MultiWorkerMirroredStrategy (the
// same over the worker processes of an MPI launch).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "osprey/data.h"
#include "osprey/tensor.h"

namespace osprey::distribute {

enum class ReduceOp { SUM, MEAN };

/// Copy every value to one device, add them there, copy the result back (tf.distribute.ReductionToOneDevice).
/// Works for any devices. `reduce_to_device` empty: the strategy's first device.
struct ReductionToOneDevice {
  std::string reduce_to_device{};
  int num_packs = 1;  ///< gradients are concatenated into this many buffers before reducing
  int64_t bytes_per_pack = 0;  ///< when > 0: buckets of at most this many bytes instead (whole gradients each)
};
/// NCCL all-reduce between physical GPUs (tf.distribute.NcclAllReduce). Needs a GPU platform with NCCL.
struct NcclAllReduce {
  int num_packs = 1;
  int64_t bytes_per_pack = 0;  ///< when > 0: buckets of at most this many bytes instead (whole gradients each)
};
using CrossDeviceOps = std::variant<ReductionToOneDevice, NcclAllReduce>;

/// Values of one tensor per replica (tf.distribute's PerReplica).
struct PerReplica {
  std::vector<Tensor> values;
};

/// What a replica function receives.
struct ReplicaContext {
  int replica_id_in_sync_group = 0;
  int num_replicas_in_sync = 1;
  std::string device;  ///< full name of the replica's device
};

class StrategyImpl;

/// What an input function learns about the input pipelines (tf.distribute.InputContext). On one machine there is
/// one pipeline feeding every replica; under a MultiWorkerMirroredStrategy one per worker.
struct InputContext {
  int num_input_pipelines = 1;
  int input_pipeline_id = 0;
  int num_replicas_in_sync = 1;
  /// global / replicas; ValueError when it does not divide evenly.
  int64_t get_per_replica_batch_size(int64_t global_batch_size) const;
};

/// A source of per-replica batches: each call returns the next batch (x, y, ...), or nothing at the end.
using BatchGenerator = std::function<std::optional<std::vector<Tensor>>()>;
/// The elements of one pass over `dataset`, each flattened (tf.nest.flatten), as a BatchGenerator.
BatchGenerator generator_of(const data::Dataset& dataset);

/// tf.distribute's batch_sizes_for_worker: the sizes of the workers × replicas_per_worker pieces a global batch is
/// cut into for worker `worker_index` (tf.data's rebatch then takes them in turn). floor(G/N) or ceil(G/N) rows each
/// (the ceil ones first for worker 0), rotated by worker_index × replicas_per_worker, so that every step (each
/// worker taking replicas_per_worker pieces) sums to G over the workers. E.g. G = 7, 2 workers × 2 replicas:
/// worker 0 [2, 2, 2, 1], worker 1 [2, 1, 2, 2]. ValueError for non-positive counts or an index out of range.
std::vector<int64_t> batch_sizes_for_worker(int64_t global_batch_size, int num_workers, int num_replicas_per_worker,
                                            int worker_index);

/// Batches handed to the replicas as they come, not rebatched: each step gives replica r the next batch of the
/// generator (replicas past the end of the data get undefined tensors). From distribute_datasets_from_function().
/// Under a MultiWorkerMirroredStrategy every next() is collective: the workers agree whether any of them still has
/// data (TensorFlow's get_next_as_optional across workers), so a worker whose data ended gets steps of undefined
/// values until every worker's has.
class DistributedDataset {
 public:
  DistributedDataset(std::shared_ptr<StrategyImpl> strategy, BatchGenerator generator);
  /// The next step's values, one PerReplica per tensor of a batch (each on its replica's device); nothing when
  /// the generator is exhausted (on every worker).
  std::optional<std::vector<PerReplica>> next();

 private:
  std::shared_ptr<StrategyImpl> strategy_;
  BatchGenerator generator_;
  bool done_ = false, finished_ = false;
  std::size_t width_ = 0;  // tensors per batch, once known
};

/// Keeps a strategy current on this thread: variables created meanwhile are mirrored, and Keras models created
/// or compiled meanwhile train with the strategy. Returned by MirroredStrategy::scope().
class StrategyScope {
 public:
  explicit StrategyScope(std::shared_ptr<StrategyImpl> impl);
  ~StrategyScope();
  StrategyScope(StrategyScope&&) noexcept;
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;

 private:
  std::shared_ptr<StrategyImpl> impl_, previous_;
  bool active_ = false;
};

class MirroredStrategy {
 public:
  /// All logical GPUs, or else all logical CPUs (one unless the CPU was split with
  /// set_logical_device_configuration). Logs "Using MirroredStrategy with devices (...)". Initialises the runtime.
  MirroredStrategy();
  /// Explicit devices ("/gpu:0", "/cpu:1", ...). Throws ValueError for an empty list, duplicates or devices that
  /// do not exist. `cross_device_ops` overrides the automatic choice.
  explicit MirroredStrategy(const std::vector<std::string>& devices,
                            std::optional<CrossDeviceOps> cross_device_ops = std::nullopt);

  int num_replicas_in_sync() const;
  /// Canonical full names, e.g. "/job:localhost/replica:0/task:0/device:CPU:1".
  std::vector<std::string> devices() const;
  /// "NcclAllReduce" or "ReductionToOneDevice": what gradients are reduced with.
  std::string cross_device_ops_name() const;

  /// `with strategy.scope():` — create the model, optimizer and metrics inside it.
  StrategyScope scope() const;

  /// Runs `fn` once per replica, concurrently (one thread per device, each inside a DeviceScope of its device);
  /// the first exception is re-thrown after every replica finished.
  PerReplica run(const std::function<Tensor(const ReplicaContext&)>& fn) const;
  /// SUM or MEAN over the replicas' values, on the first device. With `axis` (0) the values are reduced over
  /// that axis too, as TensorFlow's strategy.reduce(..., axis=0).
  Tensor reduce(ReduceOp op, const PerReplica& values, std::optional<int> axis = std::nullopt) const;

  /// tf.distribute's distribute_datasets_from_function: `fn` is called once per input pipeline (once here) with
  /// its InputContext and must batch per replica itself; its batches are not rebatched.
  DistributedDataset distribute_datasets_from_function(const std::function<BatchGenerator(const InputContext&)>& fn) const;
  /// The same with `fn` returning a data::Dataset of per-replica batches (TensorFlow's usual form:
  /// `ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id).batch(ctx.get_per_replica_batch_size(64))`); each
  /// element, flattened, is one replica's batch.
  DistributedDataset distribute_datasets_from_function(const std::function<data::Dataset(const InputContext&)>& fn) const;
  /// tf.distribute's experimental_distribute_dataset: each element of `dataset` is a global batch, and each step
  /// gives every replica its rows of the next one (ceil(batch / replicas) each, as fit splits batches), one
  /// PerReplica per tensor of the element (flattened).
  DistributedDataset experimental_distribute_dataset(const data::Dataset& dataset) const;

  const std::shared_ptr<StrategyImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<StrategyImpl> impl_;
};

/// tf.distribute.experimental.CommunicationImplementation: how gradients travel between workers. AUTO and RING:
/// MPI's all-reduce (Open MPI picks ring or tree algorithms by size); NCCL: asks for NCCL, which needs GPUs.
enum class CommunicationImplementation { AUTO, RING, NCCL };

/// tf.distribute.experimental.CommunicationOptions.
struct CommunicationOptions {
  int64_t bytes_per_pack = 0;  ///< local packing of gradients before they are reduced (0: one pack)
  /// Each collective waits at most this long for the other workers (TensorFlow's default is no limit; Osprey's is
  /// 300 s): a worker that died, hangs or never joined is a DeadlineExceededError naming it, not a hang. <= 0: no
  /// limit. The environment variable OSPREY_COLLECTIVE_TIMEOUT (seconds) overrides it.
  double timeout_seconds = 300.0;
  CommunicationImplementation implementation = CommunicationImplementation::AUTO;
};

/// tf.distribute.MultiWorkerMirroredStrategy: synchronous data parallelism over the replicas of several worker
/// processes, each mirroring its local devices as MirroredStrategy does (all GPUs, else all logical CPUs). The
/// workers are the processes of one MPI launch (`mpirun -np 2 ./train`, `srun -n 2 ./train`); TF_CONFIG, when set,
/// must describe the same cluster (worker i is MPI rank i, the chief first). A process started alone without
/// TF_CONFIG is a cluster of one worker. fit/evaluate/predict under its scope split each global batch over all
/// replicas (worker w's replicas take the rows after workers 0..w-1's), sum gradients across every replica (MPI's
/// all-reduce between workers), report metrics and losses over the whole global batch on every worker, and print
/// progress on the chief only; ModelCheckpoint writes on the chief only. The chief's random seed is every worker's
/// (the same initial weights and shuffles), and the chief's weights are broadcast before the first step.
class MultiWorkerMirroredStrategy {
 public:
  explicit MultiWorkerMirroredStrategy(CommunicationOptions communication_options = {});

  int num_replicas_in_sync() const;  ///< workers × local replicas
  int num_workers() const;
  /// This worker's number (0 is the chief; MPI rank), its TF_CONFIG task type ("chief" / "worker") and index.
  int worker_index() const;
  std::string task_type() const;
  int task_id() const;
  bool is_chief() const;
  /// Job name -> task addresses (TF_CONFIG's, or this launch's host names under "worker").
  std::map<std::string, std::vector<std::string>> cluster_spec() const;
  /// This worker's replica devices, e.g. "/job:worker/replica:0/task:1/device:CPU:0".
  std::vector<std::string> devices() const;
  const CommunicationOptions& communication_options() const { return options_; }

  StrategyScope scope() const;
  /// Runs `fn` once per local replica (their ReplicaContext ids are global: worker × local replicas + r).
  PerReplica run(const std::function<Tensor(const ReplicaContext&)>& fn) const;
  /// SUM or MEAN over every worker's replicas (`values` are this worker's); every worker gets the result.
  Tensor reduce(ReduceOp op, const PerReplica& values, std::optional<int> axis = std::nullopt) const;
  /// Waits until every worker arrived (within the time limit).
  void barrier() const;
  /// experimental_distribute_dataset, by the dataset's auto-shard policy (data::Options; AUTO is DATA):
  ///  - DATA: every worker reads the whole dataset (iterate it in the same order everywhere: seeded shuffles) and
  ///    its replicas take their rows of each global batch;
  ///  - OFF: every worker reads its own copy, cut into batch_sizes_for_worker's pieces, one per replica per step;
  ///  - FILE: NotFoundError (no Osprey source reads files lazily).
  DistributedDataset experimental_distribute_dataset(const data::Dataset& dataset) const;
  /// tf.distribute's distribute_datasets_from_function: `fn` is called once in each worker with its InputContext
  /// (num_input_pipelines = workers, input_pipeline_id = this worker, num_replicas_in_sync) and must shard and batch
  /// per replica itself; its batches feed this worker's replicas.
  DistributedDataset distribute_datasets_from_function(const std::function<BatchGenerator(const InputContext&)>& fn) const;
  /// The same with `fn` returning a data::Dataset of per-replica batches (see MirroredStrategy's).
  DistributedDataset distribute_datasets_from_function(const std::function<data::Dataset(const InputContext&)>& fn) const;

  const std::shared_ptr<StrategyImpl>& impl() const { return impl_; }

 private:
  CommunicationOptions options_;
  std::shared_ptr<StrategyImpl> impl_;
};

/// tf.nn.compute_average_loss: Σ per_example_loss / global batch. The global batch defaults to the number of
/// examples times the replicas in sync (inside strategy.run: the strategy's). An empty replica gives 0, not NaN.
Tensor compute_average_loss(const Tensor& per_example_loss, std::optional<int64_t> global_batch_size = std::nullopt);
/// tf.nn.scale_regularization_loss: the loss divided by the replicas in sync.
Tensor scale_regularization_loss(const Tensor& regularization_loss);

}  // namespace osprey::distribute
