#include <omp.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/logging.h"
#include "distribute/strategy_impl.h"
#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "tensor/tensor_impl.h"

namespace osprey::distribute {

using runtime::Device;
using runtime::DeviceManager;
using runtime::DeviceType;

// ---- ReplicaBarrier ----

void ReplicaBarrier::arrive_and_wait() {
  std::unique_lock lock(mu_);
  if (broken_) throw AbortedError("A replica failed; the others stopped waiting for it.");
  const long gen = generation_;
  if (++arrived_ == count_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen || broken_; });
  if (generation_ == gen) throw AbortedError("A replica failed; the others stopped waiting for it.");
}

void ReplicaBarrier::break_barrier() {
  std::lock_guard lock(mu_);
  broken_ = true;
  cv_.notify_all();
}

void ReplicaBarrier::reset() {
  std::lock_guard lock(mu_);
  broken_ = false;
  arrived_ = 0;
}

// ---- Current strategy (scope) ----

static thread_local std::shared_ptr<StrategyImpl> t_current;
static thread_local std::vector<Device*> t_mirror_devices;

static thread_local StrategyImpl* t_replica_strategy = nullptr;

std::shared_ptr<StrategyImpl> current_strategy() { return t_current; }

int replicas_in_sync() {
  if (t_replica_strategy) return t_replica_strategy->num_replicas_in_sync();
  return t_current ? t_current->num_replicas_in_sync() : 1;
}

StrategyScope::StrategyScope(std::shared_ptr<StrategyImpl> impl) : impl_(std::move(impl)), previous_(t_current) {
  t_current = impl_;
  t_mirror_devices = impl_->devices();
  osprey::detail::set_variable_mirror_devices(&t_mirror_devices);
  active_ = true;
}

StrategyScope::StrategyScope(StrategyScope&& other) noexcept
    : impl_(std::move(other.impl_)), previous_(std::move(other.previous_)), active_(other.active_) {
  other.active_ = false;
}

StrategyScope::~StrategyScope() {
  if (!active_) return;
  t_current = previous_;
  if (previous_) {
    t_mirror_devices = previous_->devices();
    osprey::detail::set_variable_mirror_devices(&t_mirror_devices);
  } else {
    osprey::detail::set_variable_mirror_devices(nullptr);
  }
}

// ---- StrategyImpl ----

std::string tuple_repr(const std::vector<std::string>& names) {
  std::string s = "(";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + (names.size() == 1 ? ",)" : ")");
}

static std::string tuple_repr(const std::vector<Device*>& devices) {
  std::vector<std::string> names;
  for (auto* d : devices) names.push_back(d->full_name());
  return tuple_repr(names);
}

StrategyImpl::StrategyImpl(std::vector<Device*> devices, std::optional<CrossDeviceOps> cdo, WorkerGroup* workers)
    : devices_(std::move(devices)), barrier_(static_cast<int>(devices_.size())), merge_slots_(devices_.size()),
      workers_(workers) {
  log::info("Using MirroredStrategy with devices " + tuple_repr(devices_));
  for (auto* d : devices_) host_memory_ &= d->host_memory();

  // The cross-device reduction, chosen as TensorFlow's select_cross_device_ops does unless given.
  auto& dm = DeviceManager::get();
  const bool all_gpu = std::all_of(devices_.begin(), devices_.end(), [](Device* d) { return d->type() == DeviceType::GPU; });
  const bool collective = all_gpu && std::all_of(devices_.begin(), devices_.end(), [&](Device* d) {
    return &d->platform() == &devices_.front()->platform() && d->platform().has_collective_all_reduce();
  });
  if (cdo) {
    if (auto* nccl = std::get_if<NcclAllReduce>(&*cdo)) {
      if (!collective) {
        throw ValueError("NcclAllReduce needs every device to be a GPU of a platform with NCCL; use "
                         "ReductionToOneDevice for " + tuple_repr(devices_));
      }
      use_collective_ = true;
      num_packs_ = nccl->num_packs;
      bytes_per_pack_ = nccl->bytes_per_pack;
    } else {
      const auto& r = std::get<ReductionToOneDevice>(*cdo);
      num_packs_ = r.num_packs;
      bytes_per_pack_ = r.bytes_per_pack;
      if (!r.reduce_to_device.empty()) {
        const DeviceSpec spec = DeviceSpec::from_string(r.reduce_to_device);
        reduce_device_ = dm.find(spec.device_type.value_or("CPU"), spec.device_index.value_or(0));
        if (!reduce_device_) throw ValueError("reduce_to_device '" + r.reduce_to_device + "' is not a logical device");
      }
    }
  } else {
    int logical_gpus = 0, physical_gpus = 0;
    for (auto* d : dm.devices()) logical_gpus += d->type() == DeviceType::GPU;
    const auto visible = dm.visible();
    const auto& physical = dm.physical_devices();
    for (size_t i = 0; i < physical.size(); ++i) physical_gpus += physical[i].type == DeviceType::GPU && visible[i];
    if (logical_gpus != physical_gpus) {
      log::warning("NCCL is not supported when using virtual GPUs, falling back to reduction to one device");
    } else if (!all_gpu) {
      log::warning("There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce.");
    } else if (!collective) {
      log::warning("Nccl kernel is not found, not using nccl allreduce.");
    } else {
      use_collective_ = true;
    }
  }
  if (bytes_per_pack_ < 0) {
    throw ValueError(fmt::format("bytes_per_pack must be non-negative, got {}", bytes_per_pack_));
  }
  if (num_packs_ < 0) throw ValueError(fmt::format("num_packs must be greater than or equal to zero, got {}", num_packs_));
  if (!reduce_device_) reduce_device_ = devices_.front();

  // Logical CPUs share the cores: give each replica its share of the intra-op threads.
  const int total = dm.threads_for_intra_op();
  int cpu_replicas = 0;
  for (auto* d : devices_) cpu_replicas += d->type() == DeviceType::CPU;
  threads_per_replica_ = std::max(1, total / std::max(1, cpu_replicas));
  for (int r = 0; r < num_replicas(); ++r) threads_.emplace_back([this, r] { worker(r); });
}

StrategyImpl::~StrategyImpl() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void StrategyImpl::worker(int r) {
  omp_set_num_threads(threads_per_replica_);
  osprey::detail::ReplicaIdScope replica(r);
  t_replica_strategy = this;
  const osprey::detail::ReplicaMerge merge_fn = [this, r](const Tensor& v, VariableAggregation a) {
    return merge(r, v, a);
  };
  osprey::detail::set_replica_merge(&merge_fn);
  const std::string device = devices_[r]->name();
  long seen = 0;
  while (true) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    try {
      DeviceScope on(device);
      (*job)(r);
    } catch (...) {
      {
        std::lock_guard lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
      barrier_.break_barrier();
    }
    {
      std::lock_guard lock(mu_);
      if (--remaining_ == 0) done_cv_.notify_all();
    }
  }
}

void StrategyImpl::run_replicas(const std::function<void(int)>& job) {
  if (current_replica_id() >= 0) {
    throw RuntimeError("strategy.run() cannot be called from inside a replica function (nested replica context)");
  }
  std::unique_lock lock(mu_);
  barrier_.reset();
  error_ = nullptr;
  job_ = &job;
  remaining_ = num_replicas();
  ++generation_;
  cv_.notify_all();
  done_cv_.wait(lock, [&] { return remaining_ == 0; });
  job_ = nullptr;
  if (error_) {
    auto e = error_;
    error_ = nullptr;
    // An AbortedError is only the echo of another replica's failure; the first error is the one to report.
    std::rethrow_exception(e);
  }
}

void StrategyImpl::mirror(const std::vector<Variable*>& vars) const {
  for (auto* v : vars) {
    if (v->num_components() == num_replicas()) continue;
    if (&v->component(0).device_ref() != devices_.front()) {
      throw ValueError(fmt::format("Variable '{}' lives on {}, outside the strategy's devices {}: create the model "
                                   "(and its optimizer) inside strategy.scope().",
                                   v->path(), v->component(0).device_ref().name(), tuple_repr(devices_)));
    }
    v->mirror(devices_);
  }
}

// Shared memory: replica r sums its slice of every gradient over all replicas (in replica order) and writes the
// result into every replica's gradient. A reduce-scatter and all-gather in one pass, all replicas in parallel.
void StrategyImpl::reduce_on_host(std::vector<std::vector<Tensor>>& grads, int r, bool copy_back) {
  const int n_rep = num_replicas();
  const size_t n_vars = grads[0].size();
  for (size_t j = 0; j < n_vars; ++j) {
    const int64_t n = grads[0][j].num_elements();
    // The same split as keras::optimizers::shard_range (the sharded update relies on it).
    const int64_t begin = std::min(n, (n * r / n_rep) & ~int64_t{15});
    const int64_t end = r + 1 == n_rep ? n : std::min(n, (n * (r + 1) / n_rep) & ~int64_t{15});
    if (begin >= end) continue;
    // Sum into replica 0's slice in replica order ((g0 + g1) + g2 ...: the same as any other split), then copy it
    // to the other replicas. Plain loops over restrict pointers, so they vectorise.
    float* __restrict acc = grads[0][j].data<float>() + begin;
    for (int q = 1; q < n_rep; ++q) {
      const float* __restrict g = grads[q][j].data<float>() + begin;
      for (int64_t k = 0; k < end - begin; ++k) acc[k] += g[k];
    }
    if (!copy_back) continue;
    for (int q = 1; q < n_rep; ++q) {
      std::memcpy(grads[q][j].data<float>() + begin, acc, sizeof(float) * static_cast<std::size_t>(end - begin));
    }
  }
}

namespace {
// Gradients of one replica concatenated into `num_packs` flat buffers on its device (and split back).
struct Packs {
  std::vector<Tensor> buffers;
  std::vector<std::pair<int, int64_t>> where;  // (buffer, element offset) of each gradient
};

void copy_within(Device& d, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  if (d.host_memory()) {
    std::memcpy(dst, src, bytes);
  } else {
    d.platform().copy(d, dst, true, src, true, bytes);
  }
}

Packs pack(const std::vector<Tensor>& grads, int num_packs, int64_t bytes_per_pack, Device& device) {
  Packs p;
  int64_t total = 0;
  for (const auto& g : grads) total += g.num_elements();
  int packs = std::max(1, std::min<int>(num_packs, static_cast<int>(grads.size())));
  int64_t per_pack = (total + packs - 1) / packs;
  if (bytes_per_pack > 0) {  // buckets of a byte cap (a gradient larger than the cap is a bucket of its own)
    per_pack = std::max<int64_t>(1, bytes_per_pack / static_cast<int64_t>(sizeof(float)));
    packs = static_cast<int>(grads.size());
  }
  std::vector<int64_t> sizes;
  int64_t used = 0;
  for (const auto& g : grads) {  // whole gradients per pack, cut when the next one would pass the pack's share
    const bool full = bytes_per_pack > 0 ? used > 0 && used + g.num_elements() > per_pack : used >= per_pack;
    if (sizes.empty() || (full && static_cast<int>(sizes.size()) < packs)) {
      sizes.push_back(0);
      used = 0;
    }
    p.where.emplace_back(static_cast<int>(sizes.size()) - 1, sizes.back());
    sizes.back() += g.num_elements();
    used += g.num_elements();
  }
  for (int64_t s : sizes) p.buffers.push_back(Tensor::empty(Shape({s}), DType::float32, &device));
  for (size_t j = 0; j < grads.size(); ++j) {
    auto [b, off] = p.where[j];
    copy_within(device, static_cast<float*>(p.buffers[b].impl()->data()) + off, grads[j].impl()->data(),
                static_cast<std::size_t>(grads[j].nbytes()));
  }
  return p;
}

void unpack(const Packs& p, std::vector<Tensor>& grads, Device& device) {
  for (size_t j = 0; j < grads.size(); ++j) {
    auto [b, off] = p.where[j];
    Tensor out = Tensor::empty(grads[j].shape(), DType::float32, &device);
    copy_within(device, out.impl()->data(), static_cast<const float*>(p.buffers[b].impl()->data()) + off,
                static_cast<std::size_t>(out.nbytes()));
    grads[j] = out;
  }
}
}  // namespace

// Any devices: pack, copy every replica's packs to the reduce device, add in replica order, copy back, unpack.
void StrategyImpl::reduce_to_one_device(std::vector<std::vector<Tensor>>& grads) {
  const int n_rep = num_replicas();
  std::vector<Packs> packs;
  for (int q = 0; q < n_rep; ++q) packs.push_back(pack(grads[q], num_packs_, bytes_per_pack_, *devices_[q]));
  DeviceScope on(reduce_device_->name());
  for (size_t b = 0; b < packs[0].buffers.size(); ++b) {
    Tensor sum = packs[0].buffers[b].to(*reduce_device_);
    for (int q = 1; q < n_rep; ++q) sum = ops::add(sum, packs[q].buffers[b].to(*reduce_device_));
    for (int q = 0; q < n_rep; ++q) packs[q].buffers[b] = sum.to(*devices_[q]);
  }
  for (int q = 0; q < n_rep; ++q) unpack(packs[q], grads[q], *devices_[q]);
}

// The platform's collective (NCCL): one all-reduce per pack over all devices.
void StrategyImpl::reduce_collective(std::vector<std::vector<Tensor>>& grads) {
  const int n_rep = num_replicas();
  std::vector<Packs> packs;
  for (int q = 0; q < n_rep; ++q) packs.push_back(pack(grads[q], num_packs_, bytes_per_pack_, *devices_[q]));
  for (size_t b = 0; b < packs[0].buffers.size(); ++b) {
    std::vector<float*> buffers;
    for (int q = 0; q < n_rep; ++q) buffers.push_back(static_cast<float*>(packs[q].buffers[b].impl()->data()));
    devices_.front()->platform().all_reduce_sum(devices_, buffers,
                                                static_cast<std::size_t>(packs[0].buffers[b].num_elements()));
  }
  for (int q = 0; q < n_rep; ++q) unpack(packs[q], grads[q], *devices_[q]);
}

bool StrategyImpl::reduces_on_host() const {
  return !use_collective_ && host_memory_ && reduce_device_ == devices_.front();
}

void StrategyImpl::reduce_own_slices(std::vector<std::vector<Tensor>>& grads, int r) {
  barrier_.arrive_and_wait();  // every replica's gradients are ready
  if (num_replicas() > 1) reduce_on_host(grads, r, false);
}

void StrategyImpl::all_reduce_sum(std::vector<std::vector<Tensor>>& grads, int r) {
  const bool across = num_workers() > 1;
  if (num_replicas() == 1 && !across) return;  // identity: nothing to communicate
  if (num_replicas() > 1) {
    barrier_.arrive_and_wait();  // every replica's gradients are ready
    if (reduces_on_host()) {
      reduce_on_host(grads, r, !across);  // across workers: replica 0's gradients hold the local sums
      if (across) barrier_.arrive_and_wait();
    } else if (r == 0) {
      if (use_collective_) {
        reduce_collective(grads);
      } else {
        reduce_to_one_device(grads);
      }
    }
  }
  if (across && r == 0) reduce_across_workers(grads);
  if (num_replicas() > 1) barrier_.arrive_and_wait();  // every replica's gradients hold the sum
}

Tensor StrategyImpl::merge(int r, const Tensor& value, VariableAggregation aggregation) {
  merge_slots_[r] = value;
  barrier_.arrive_and_wait();  // every replica's value is there
  Device& device = *devices_[r];
  if (num_workers() > 1) return merge_across_workers(r, value, aggregation);
  Tensor out = merge_slots_[0].to(device);
  if (aggregation != VariableAggregation::ONLY_FIRST_REPLICA) {
    for (int q = 1; q < num_replicas(); ++q) out = ops::add(out, merge_slots_[q].to(device));  // fixed order
    if (aggregation == VariableAggregation::MEAN) {
      out = ops::div(out, Tensor::scalar(static_cast<double>(num_replicas()), out.dtype()));
    }
  }
  barrier_.arrive_and_wait();  // every replica has read the slots
  return out;
}

Tensor compute_average_loss(const Tensor& per_example_loss, std::optional<int64_t> global_batch_size) {
  const int64_t local = per_example_loss.shape().rank() ? per_example_loss.shape()[0] : 1;
  const int64_t global = global_batch_size.value_or(local * replicas_in_sync());
  if (global <= 0) {
    if (global_batch_size) throw ValueError(fmt::format("global_batch_size must be positive, got {}", global));
    return Tensor::scalar(0.0);  // an empty replica: nothing, never NaN
  }
  return ops::div(ops::reduce_sum(per_example_loss), Tensor::scalar(static_cast<double>(global)));
}

Tensor scale_regularization_loss(const Tensor& regularization_loss) {
  return ops::div(regularization_loss, Tensor::scalar(static_cast<double>(replicas_in_sync())));
}

// ---- MirroredStrategy ----

std::vector<Device*> default_devices() {
  auto& dm = DeviceManager::get();
  std::vector<Device*> gpus, cpus;
  for (auto* d : dm.devices()) (d->type() == DeviceType::GPU ? gpus : cpus).push_back(d);
  return gpus.empty() ? cpus : gpus;
}

MirroredStrategy::MirroredStrategy() : impl_(std::make_shared<StrategyImpl>(default_devices(), std::nullopt)) {}

static std::vector<Device*> resolve_devices(const std::vector<std::string>& names) {
  if (names.empty()) {
    throw ValueError("Got an empty `devices` list. Please make sure the `devices` you pass in is not empty.");
  }
  auto& dm = DeviceManager::get();
  std::vector<Device*> out;
  for (const auto& name : names) {
    const DeviceSpec spec = DeviceSpec::from_string(name);
    if (!spec.device_type) throw ValueError(fmt::format("Device '{}' names no device type (e.g. \"/gpu:0\")", name));
    Device* d = dm.find(*spec.device_type, spec.device_index.value_or(0));
    if (!d) {
      std::string all;
      for (auto* x : dm.devices()) all += (all.empty() ? "" : ", ") + x->name();
      throw ValueError(fmt::format("Device '{}' is not a logical device of this process; available devices: [{}]",
                                   name, all));
    }
    if (std::find(out.begin(), out.end(), d) != out.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
      throw ValueError(fmt::format("No duplicates allowed in `devices` argument: [{}]", list));
    }
    out.push_back(d);
  }
  return out;
}

MirroredStrategy::MirroredStrategy(const std::vector<std::string>& devices, std::optional<CrossDeviceOps> cdo)
    : impl_(std::make_shared<StrategyImpl>(resolve_devices(devices), std::move(cdo))) {}

int MirroredStrategy::num_replicas_in_sync() const { return impl_->num_replicas(); }

std::vector<std::string> MirroredStrategy::devices() const {
  std::vector<std::string> out;
  for (auto* d : impl_->devices()) out.push_back(d->full_name());
  return out;
}

std::string MirroredStrategy::cross_device_ops_name() const {
  return impl_->use_collective() ? "NcclAllReduce" : "ReductionToOneDevice";
}

StrategyScope MirroredStrategy::scope() const { return StrategyScope(impl_); }

PerReplica MirroredStrategy::run(const std::function<Tensor(const ReplicaContext&)>& fn) const {
  PerReplica out;
  out.values.resize(impl_->num_replicas());
  impl_->run_replicas([&](int r) {
    out.values[r] = fn({r, impl_->num_replicas(), impl_->devices()[r]->full_name()});
  });
  return out;
}

Tensor MirroredStrategy::reduce(ReduceOp op, const PerReplica& values, std::optional<int> axis) const {
  if (values.values.size() != static_cast<size_t>(impl_->num_replicas())) {
    throw ValueError(fmt::format("reduce: {} values for {} replicas", values.values.size(), impl_->num_replicas()));
  }
  if (axis && *axis != 0) throw ValueError(fmt::format("reduce: only axis=0 or no axis is supported, got {}", *axis));
  Device& first = *impl_->devices().front();
  DeviceScope on(first.name());
  Tensor total;
  int64_t count = 0;
  for (const auto& v : values.values) {
    if (!v.defined()) continue;
    Tensor x = v.to(first);
    if (axis) {
      count += x.shape().rank() ? x.shape()[0] : 1;
      x = x.shape().rank() >= 2 ? ops::reduce_sum(x, 0) : ops::reduce_sum(x);
    }
    total = total.defined() ? ops::add(total, x) : x;
  }
  if (!total.defined()) throw ValueError("reduce: every replica's value is undefined");
  if (op == ReduceOp::MEAN) {
    const double n = axis ? static_cast<double>(count) : static_cast<double>(impl_->num_replicas());
    total = ops::div(total, Tensor::scalar(n, total.dtype()));
  }
  return total;
}

}  // namespace osprey::distribute
