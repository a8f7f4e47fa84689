#include <algorithm>
#include <cstring>

#include "osprey/variable.h"

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/ops.h"
#include "tensor/tensor_impl.h"

namespace osprey {

static thread_local int t_replica = -1;
static thread_local const std::vector<runtime::Device*>* t_mirror_devices = nullptr;
static thread_local const detail::ReplicaMerge* t_merge = nullptr;

int current_replica_id() { return t_replica; }

namespace detail {
ReplicaIdScope::ReplicaIdScope(int replica) : previous_(t_replica) { t_replica = replica; }
ReplicaIdScope::~ReplicaIdScope() { t_replica = previous_; }
const std::vector<runtime::Device*>* variable_mirror_devices() { return t_mirror_devices; }
void set_variable_mirror_devices(const std::vector<runtime::Device*>* devices) { t_mirror_devices = devices; }
void set_replica_merge(const ReplicaMerge* merge) { t_merge = merge; }
}  // namespace detail

// A private copy of `t` on `device` (never sharing the source's buffer).
static Tensor fresh_copy(const Tensor& t, runtime::Device& device) {
  if (&t.device_ref() != &device) return t.to(device);
  Tensor out = Tensor::empty(t.shape(), t.dtype(), &device);
  if (device.host_memory()) {
    std::memcpy(out.raw_data(), t.raw_data(), static_cast<std::size_t>(t.nbytes()));
  } else {
    device.platform().copy(device, out.impl()->data(), true, t.impl()->data(), true, static_cast<std::size_t>(t.nbytes()));
  }
  return out;
}

Variable::Variable(const Tensor& initial_value, std::string name, bool trainable)
    : name_(std::move(name)), path_(name_), trainable_(trainable) {
  const auto* mirror_devices = detail::variable_mirror_devices();
  value_ = initial_value.to(mirror_devices ? *mirror_devices->front() : runtime::current_device());
  if (value_.impl() == initial_value.impl()) value_ = fresh_copy(initial_value, value_.device_ref());
  value_.impl()->trainable_variable = trainable;
  if (mirror_devices) mirror(*mirror_devices);
}

Variable::Variable(const Tensor& initial_value, std::string name, VariableOptions o)
    : name_(std::move(name)), path_(name_), trainable_(o.trainable), sync_(o.synchronization),
      aggregation_(o.aggregation) {
  const auto* mirror_devices = detail::variable_mirror_devices();
  if (mirror_devices) {
    if (sync_ == VariableSynchronization::NONE) {
      throw ValueError("`NONE` variable synchronization mode is not supported with tf.distribute strategy. Please "
                       "change the `synchronization` for variable: " + name_);
    }
    if (sync_ == VariableSynchronization::AUTO) sync_ = VariableSynchronization::ON_WRITE;
  }
  if (sync_ == VariableSynchronization::ON_READ && trainable_) {
    throw ValueError("Synchronization value can be set to VariableSynchronization.ON_READ only for non-trainable "
                     "variables. You have specified trainable=True and synchronization=VariableSynchronization.ON_READ.");
  }
  value_ = initial_value.to(mirror_devices ? *mirror_devices->front() : runtime::current_device());
  if (value_.impl() == initial_value.impl()) value_ = fresh_copy(initial_value, value_.device_ref());
  value_.impl()->trainable_variable = trainable_;
  if (mirror_devices) mirror(*mirror_devices);
}

Variable::Variable(const Tensor& initial_value, std::string name, bool trainable, runtime::Device& device)
    : name_(std::move(name)), path_(name_), trainable_(trainable) {
  value_ = fresh_copy(initial_value, device);
  value_.impl()->trainable_variable = trainable;
}

void Variable::mirror(const std::vector<runtime::Device*>& devices) {
  if (devices.empty() || devices.front() != &value_.device_ref()) {
    throw InvalidArgumentError(fmt::format("Variable '{}' lives on {}, not on the first mirror device", path_,
                                           value_.device_ref().name()));
  }
  if (num_components() > 1) {
    bool same = num_components() == static_cast<int>(devices.size());
    for (size_t i = 1; same && i < devices.size(); ++i) same = &extra_[i - 1].device_ref() == devices[i];
    if (same) return;
    throw InvalidArgumentError(fmt::format("Variable '{}' is already mirrored over other devices", path_));
  }
  for (size_t i = 1; i < devices.size(); ++i) {
    Tensor c = fresh_copy(value_, *devices[i]);  // every replica starts from replica 0's value
    c.impl()->trainable_variable = trainable_;
    extra_.push_back(std::move(c));
  }
}

void Variable::assign(const Tensor& value) {
  if (value.shape() != value_.shape() || value.dtype() != value_.dtype()) {
    throw InvalidArgumentError(fmt::format("Cannot assign a value of shape {} and dtype {} to variable '{}' of shape {} "
                                           "and dtype {}",
                                           value.shape().to_string(), dtype_name(value.dtype()), path_,
                                           value_.shape().to_string(), dtype_name(value_.dtype())));
  }
  const int r = current_replica_id();
  const int n = num_components();
  if (n == 1) {
    write_component(0, value);
    return;
  }
  if (r < 0) {  // cross-replica: every component
    Tensor v = value;
    if (sync_ == VariableSynchronization::ON_READ && aggregation_ == VariableAggregation::SUM) {
      v = ops::div(value, Tensor::scalar(static_cast<double>(n), value.dtype()));  // reading sums back to value
    }
    for (int c = 0; c < n; ++c) write_component(c, v);
    return;
  }
  if (sync_ == VariableSynchronization::ON_READ) {  // replica-local
    write_component(std::min(r, n - 1), value);
    return;
  }
  if (aggregation_ == VariableAggregation::NONE || !t_merge) {
    throw ValueError("You must specify an aggregation method to update a MirroredVariable in Replica Context. You "
                     "can do so by passing an explicit value for argument `aggregation` to tf.Variable(..).e.g. "
                     "`tf.Variable(..., aggregation=tf.VariableAggregation.SUM)`. `tf.VariableAggregation` lists "
                     "the possible aggregation methods. This is required because MirroredVariable should always be "
                     "kept in sync. When updating them or assigning to them in the replica context, we "
                     "automatically try to aggregate the values before updating the variable. For this "
                     "aggregation, we need to know the aggregation method. Also, for variables of type: " + path_);
  }
  const Tensor merged = (*t_merge)(value, aggregation_);
  write_component(std::min(r, n - 1), merged);  // every replica writes its own component with the same value
}

void Variable::write_component(int c, const Tensor& value) {
  Tensor& dst = const_cast<Tensor&>(component(c));
  Tensor src = value.to(dst.device_ref());
  auto& d = dst.device_ref();
  if (d.host_memory()) {
    std::memcpy(dst.raw_data(), src.raw_data(), static_cast<std::size_t>(dst.nbytes()));
  } else {
    d.platform().copy(d, dst.impl()->data(), true, src.impl()->data(), true, static_cast<std::size_t>(dst.nbytes()));
  }
}

void Variable::assign_add(const Tensor& delta) {
  const int r = current_replica_id();
  const int n = num_components();
  if (n > 1 && r < 0) {
    if (sync_ == VariableSynchronization::ON_READ && aggregation_ == VariableAggregation::SUM) {
      throw ValueError("SyncOnReadVariable does not support `assign_add` in cross-replica context when aggregation "
                       "is set to `tf.VariableAggregation.SUM`.");
    }
    for (int c = 0; c < n; ++c) write_component(c, ops::add(component(c), delta.to(component(c).device_ref())));
    return;
  }
  if (n > 1 && sync_ == VariableSynchronization::ON_WRITE) {
    if (aggregation_ == VariableAggregation::NONE || !t_merge) {
      assign(delta);  // raises the aggregation error
      return;
    }
    const Tensor merged = (*t_merge)(delta, aggregation_);
    const int c = std::min(r, n - 1);
    write_component(c, ops::add(component(c), merged));
    return;
  }
  const int c = std::max(0, std::min(r, n - 1));
  write_component(c, ops::add(component(c), delta.to(component(c).device_ref())));
}

Tensor Variable::read_value() const {
  const int n = num_components();
  if (n == 1 || sync_ != VariableSynchronization::ON_READ || current_replica_id() >= 0) return value();
  auto& home = value_.device_ref();
  Tensor total = value_;
  for (int c = 1; c < n; ++c) total = ops::add(total, component(c).to(home));
  if (aggregation_ == VariableAggregation::MEAN) total = ops::div(total, Tensor::scalar(n, total.dtype()));
  if (aggregation_ == VariableAggregation::ONLY_FIRST_REPLICA) return value_;
  return total;
}

}  // namespace osprey
