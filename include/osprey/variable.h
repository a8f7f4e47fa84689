// A named, mutable tensor that stays on the device it was created on (tf.Variable).
#pragma once

#include <string>
#include <vector>

#include "osprey/tensor.h"

namespace osprey {

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
  /// On a given device (optimizer slots next to their variable).
  Variable(const Tensor& initial_value, std::string name, bool trainable, runtime::Device& device);

  /// The current value (shares the variable's buffer: in-place updates are visible through it). For a mirrored
  /// variable, the component of the current replica.
  const Tensor& value() const { return component(current_replica_id()); }
  Tensor& value() { return const_cast<Tensor&>(component(current_replica_id())); }
  /// Copies new values in (same shape and dtype); the variable keeps its device. In replica context only the
  /// replica's component changes; outside it every component does.
  void assign(const Tensor& value);

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
}  // namespace osprey::detail
