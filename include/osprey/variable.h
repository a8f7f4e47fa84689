// A named, mutable tensor that stays on the device it was created on (tf.Variable).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "osprey/tensor.h"

namespace osprey {

/// How a variable's replicas are kept in sync under a distribution strategy (tf.VariableSynchronization).
enum class VariableSynchronization { AUTO, NONE, ON_WRITE, ON_READ };
/// How replicas' values are combined when a distributed variable is written (ON_WRITE) or read (ON_READ).
enum class VariableAggregation { NONE, SUM, MEAN, ONLY_FIRST_REPLICA };

struct VariableOptions {
  bool trainable = true;
  VariableSynchronization synchronization = VariableSynchronization::AUTO;
  VariableAggregation aggregation = VariableAggregation::NONE;
};

/// The replica whose code runs on this thread under a distribution strategy (0..N-1), or -1 outside replica
/// context. A mirrored variable's value() is the component of this replica (replica 0's outside).
int current_replica_id();

class Variable {
 public:
  Variable() = default;
  /// Copies `initial_value` onto the current device (DeviceScope, else the default device).
  /// Trainable variables are watched by every GradientTape automatically.
  /// Inside a distribution strategy's scope it is created on the strategy's first device and mirrored onto
  /// every replica device.
  Variable(const Tensor& initial_value, std::string name, bool trainable = true);
  /// With tf.Variable's synchronization and aggregation. Inside a strategy's scope AUTO becomes ON_WRITE (a
  /// mirrored variable kept identical by identical updates) and NONE is a ValueError; ON_READ variables are
  /// replica-local and aggregated when read outside replica context (they cannot be trainable).
  Variable(const Tensor& initial_value, std::string name, VariableOptions options);
  /// On a given device (optimizer slots next to their variable).
  Variable(const Tensor& initial_value, std::string name, bool trainable, runtime::Device& device);

  /// The current value (shares the variable's buffer: in-place updates are visible through it). For a mirrored
  /// variable, the component of the current replica.
  const Tensor& value() const { return component(current_replica_id()); }
  Tensor& value() { return const_cast<Tensor&>(component(current_replica_id())); }
  /// Copies new values in (same shape and dtype); the variable keeps its device. Outside replica context every
  /// component is set (an ON_READ SUM variable stores value/N in each, so that reading sums back to value). In
  /// replica context an ON_WRITE variable needs an aggregation (SUM, MEAN or ONLY_FIRST_REPLICA): the replicas'
  /// values are combined and every component gets the result; an ON_READ one sets this replica's component.
  void assign(const Tensor& value);
  /// value += delta, with the same rules as assign(); outside replica context an ON_READ SUM variable refuses it.
  void assign_add(const Tensor& delta);
  /// The value as read here: for an ON_READ variable outside replica context the aggregation (sum or mean) over
  /// replicas, otherwise value().
  Tensor read_value() const;
  VariableSynchronization synchronization() const { return sync_; }
  VariableAggregation aggregation() const { return aggregation_; }

  /// Makes this a mirrored variable (tf.distribute's MirroredVariable): one component per device, the first
  /// being the current value (it must live on devices[0]) and the others copies of it. Re-mirroring over the same
  /// devices is a no-op; over others, an InvalidArgumentError.
  void mirror(const std::vector<runtime::Device*>& devices);
  /// 1 for an ordinary variable.
  int num_components() const { return 1 + static_cast<int>(extra_.size()); }
  /// Component `replica` (replica 0's for -1 or for replicas this variable has no component of).
  const Tensor& component(int replica) const {
    return replica <= 0 || replica > static_cast<int>(extra_.size()) ? value_ : extra_[replica - 1];
  }
  const std::string& name() const { return name_; }
  /// Keras's variable path, e.g. "sequential/dense/kernel".
  const std::string& path() const { return path_; }
  void set_path(std::string path) { path_ = std::move(path); }
  bool trainable() const { return trainable_; }
  const Shape& shape() const { return value_.shape(); }
  int64_t num_elements() const { return value_.num_elements(); }

 private:
  Tensor value_;
  std::vector<Tensor> extra_;  ///< components of replicas 1..N-1 (mirrored variables)
  std::string name_, path_;
  bool trainable_ = true;
  VariableSynchronization sync_ = VariableSynchronization::AUTO;
  VariableAggregation aggregation_ = VariableAggregation::NONE;

  void write_component(int c, const Tensor& value);
};

}  // namespace osprey

namespace osprey::detail {
/// Sets this thread's replica id for its lifetime (distribution strategies' replica threads).
class ReplicaIdScope {
 public:
  explicit ReplicaIdScope(int replica);
  ~ReplicaIdScope();
  ReplicaIdScope(const ReplicaIdScope&) = delete;
  ReplicaIdScope& operator=(const ReplicaIdScope&) = delete;

 private:
  int previous_;
};
/// While set on a thread, variables created there are mirrored onto these devices (a strategy's scope()).
const std::vector<runtime::Device*>* variable_mirror_devices();
void set_variable_mirror_devices(const std::vector<runtime::Device*>* devices);
/// A replica thread's merge: every replica passes its value, all get the same combination back (on their device).
using ReplicaMerge = std::function<Tensor(const Tensor&, VariableAggregation)>;
void set_replica_merge(const ReplicaMerge* merge);
}  // namespace osprey::detail
