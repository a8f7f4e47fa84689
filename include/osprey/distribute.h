// tf.distribute for one machine: MirroredStrategy (data parallelism over local devices, one thread per replica,
// gradients all-reduced with SUM, identical updates everywhere). spec/distribute.md §1.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

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
/// one pipeline feeding every replica.
struct InputContext {
  int num_input_pipelines = 1;
  int input_pipeline_id = 0;
  int num_replicas_in_sync = 1;
  /// global / replicas; ValueError when it does not divide evenly.
  int64_t get_per_replica_batch_size(int64_t global_batch_size) const;
};

/// A source of per-replica batches: each call returns the next batch (x, y, ...), or nothing at the end.
using BatchGenerator = std::function<std::optional<std::vector<Tensor>>()>;

/// Batches handed to the replicas as they come, not rebatched: each step gives replica r the next batch of the
/// generator (replicas past the end of the data get undefined tensors). From distribute_datasets_from_function().
class DistributedDataset {
 public:
  DistributedDataset(std::shared_ptr<StrategyImpl> strategy, BatchGenerator generator);
  /// The next step's values, one PerReplica per tensor of a batch (each on its replica's device); nothing when
  /// the generator is exhausted.
  std::optional<std::vector<PerReplica>> next();

 private:
  std::shared_ptr<StrategyImpl> strategy_;
  BatchGenerator generator_;
  bool done_ = false;
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

  const std::shared_ptr<StrategyImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<StrategyImpl> impl_;
};

/// tf.nn.compute_average_loss: Σ per_example_loss / global batch. The global batch defaults to the number of
/// examples times the replicas in sync (inside strategy.run: the strategy's). An empty replica gives 0, not NaN.
Tensor compute_average_loss(const Tensor& per_example_loss, std::optional<int64_t> global_batch_size = std::nullopt);
/// tf.nn.scale_regularization_loss: the loss divided by the replicas in sync.
Tensor scale_regularization_loss(const Tensor& regularization_loss);

}  // namespace osprey::distribute
