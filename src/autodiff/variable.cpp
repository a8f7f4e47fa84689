#include <algorithm>
#include <cstring>

#include "osprey/variable.h"

#include <fmt/format.h>

#include "osprey/errors.h"
#include "tensor/tensor_impl.h"

namespace osprey {

static thread_local int t_replica = -1;
static thread_local const std::vector<runtime::Device*>* t_mirror_devices = nullptr;

int current_replica_id() { return t_replica; }

namespace detail {
ReplicaIdScope::ReplicaIdScope(int replica) : previous_(t_replica) { t_replica = replica; }
ReplicaIdScope::~ReplicaIdScope() { t_replica = previous_; }
const std::vector<runtime::Device*>* variable_mirror_devices() { return t_mirror_devices; }
void set_variable_mirror_devices(const std::vector<runtime::Device*>* devices) { t_mirror_devices = devices; }
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
  for (int c = 0; c < num_components(); ++c) {
    if (r >= 0 && c != std::min(r, num_components() - 1) && num_components() > 1) continue;
    Tensor& dst = const_cast<Tensor&>(component(c));
    Tensor src = value.to(dst.device_ref());
    auto& d = dst.device_ref();
    if (d.host_memory()) {
      std::memcpy(dst.raw_data(), src.raw_data(), static_cast<std::size_t>(dst.nbytes()));
    } else {
      d.platform().copy(d, dst.impl()->data(), true, src.impl()->data(), true, static_cast<std::size_t>(dst.nbytes()));
    }
  }
}

}  // namespace osprey
