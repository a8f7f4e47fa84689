// tf.distribute.MultiWorkerMirroredStrategy: MirroredStrategy's replicas in every worker process, the workers
// joined by MPI (distribute/worker_group.h). The trainer's distributed step handles both (keras/trainers/
// distributed_step.cpp); here the cluster is set up and checked, and run/reduce work across workers.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/env.h"
#include "core/logging.h"
#include "distribute/strategy_impl.h"
#include "distribute/worker_group.h"
#include "osprey/device.h"
#include "osprey/distribute.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::distribute {

using runtime::Device;
using runtime::DeviceManager;
using runtime::DeviceType;

namespace {

const char* implementation_name(CommunicationImplementation c) {
  switch (c) {
    case CommunicationImplementation::AUTO: return "AUTO";
    case CommunicationImplementation::RING: return "RING";
    case CommunicationImplementation::NCCL: return "NCCL";
  }
  return "?";
}

double timeout_of(const CommunicationOptions& o) {
  auto v = env::get("OSPREY_COLLECTIVE_TIMEOUT");
  if (!v || v->empty()) return o.timeout_seconds;
  char* end = nullptr;
  const double t = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || t != t) {
    throw ValueError(fmt::format("OSPREY_COLLECTIVE_TIMEOUT must be a number of seconds, got '{}'", *v));
  }
  return t;
}

std::string cluster_repr(const std::map<std::string, std::vector<std::string>>& cluster) {
  std::string s;
  for (const auto& [job, tasks] : cluster) {
    std::string list;
    for (const auto& t : tasks) list += (list.empty() ? "'" : ", '") + t + "'";
    s += fmt::format("{}'{}': [{}]", s.empty() ? "" : ", ", job, list);
  }
  return "{" + s + "}";
}

}  // namespace

// ---- StrategyImpl across workers (the rest of StrategyImpl is in mirrored_strategy.cpp) ----

int StrategyImpl::num_workers() const { return workers_ ? workers_->size() : 1; }
int StrategyImpl::worker_index() const { return workers_ ? workers_->rank() : 0; }

// Replica 0's (local) sums added across the workers and written into every local replica's gradients: in place
// when they are in host memory and not packed (no copies), else packed into one host buffer.
void StrategyImpl::reduce_across_workers(std::vector<std::vector<Tensor>>& grads) {
  const bool on_host = std::all_of(grads[0].begin(), grads[0].end(),
                                   [](const Tensor& g) { return g.device_ref().host_memory(); });
  if (on_host && bytes_per_pack_ == 0) {
    std::vector<float*> data;
    std::vector<int64_t> counts;
    for (auto& g : grads[0]) {  // each buffer once: two variables' gradients may be one tensor
      if (std::find(data.begin(), data.end(), g.data<float>()) != data.end()) continue;
      data.push_back(g.data<float>());
      counts.push_back(g.num_elements());
    }
    workers_->all_reduce_sum(data, counts);
    for (int q = 1; q < num_replicas(); ++q) {
      for (std::size_t j = 0; j < grads[0].size(); ++j) {
        std::memcpy(grads[q][j].data<float>(), grads[0][j].data<float>(), static_cast<std::size_t>(grads[0][j].nbytes()));
      }
    }
    return;
  }
  int64_t total = 0;
  for (const auto& g : grads[0]) total += g.num_elements();
  std::vector<float> buffer(static_cast<std::size_t>(total));
  int64_t at = 0;
  for (const auto& g : grads[0]) {
    const Tensor h = g.device_ref().host_memory() ? g : g.to(DeviceManager::get().host_device());
    std::memcpy(buffer.data() + at, h.data<float>(), static_cast<std::size_t>(g.nbytes()));
    at += g.num_elements();
  }
  // One message, or buckets of bytes_per_pack (CommunicationOptions).
  const int64_t chunk = bytes_per_pack_ > 0 ? std::max<int64_t>(1, bytes_per_pack_ / 4) : std::max<int64_t>(1, total);
  for (int64_t b = 0; b < total; b += chunk) workers_->all_reduce_sum(buffer.data() + b, std::min(chunk, total - b));
  for (int q = 0; q < num_replicas(); ++q) {
    at = 0;
    for (auto& g : grads[q]) {
      if (g.device_ref().host_memory()) {
        std::memcpy(g.data<float>(), buffer.data() + at, static_cast<std::size_t>(g.nbytes()));
      } else {
        g = Tensor::from_host(buffer.data() + at, g.shape()).to(*devices_[q]);
      }
      at += g.num_elements();
    }
  }
}

// The merge of a multi-worker strategy: replica 0 combines the local values with the other workers' (SUM and
// MEAN over every replica in sync, ONLY_FIRST_REPLICA the chief's replica 0), every local replica reads the result.
Tensor StrategyImpl::merge_across_workers(int r, const Tensor& value, VariableAggregation aggregation) {
  Device& device = *devices_[r];
  if (r == 0) {
    Device& host = DeviceManager::get().host_device();
    Tensor local = merge_slots_[0].to(host).cast(DType::float64);
    if (aggregation != VariableAggregation::ONLY_FIRST_REPLICA) {
      for (int q = 1; q < num_replicas(); ++q) local = ops::add(local, merge_slots_[q].to(host).cast(DType::float64));
    }
    Tensor mine = Tensor::from_host(local.data<double>(), local.shape());  // a buffer of its own to reduce into
    if (aggregation == VariableAggregation::ONLY_FIRST_REPLICA) {
      workers_->broadcast(mine.data<double>(), mine.nbytes(), 0);
    } else {
      workers_->all_reduce_sum(mine.data<double>(), mine.num_elements());
      if (aggregation == VariableAggregation::MEAN) {
        mine = ops::div(mine, Tensor::scalar(static_cast<double>(num_replicas_in_sync()), DType::float64));
      }
    }
    merged_ = mine.cast(value.dtype());
  }
  barrier_.arrive_and_wait();  // replica 0 has the result
  Tensor out = merged_.to(device);
  barrier_.arrive_and_wait();  // every replica has read it
  return out;
}

// ---- MultiWorkerMirroredStrategy ----

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(CommunicationOptions o) : options_(o) {
  if (o.bytes_per_pack < 0) throw ValueError(fmt::format("bytes_per_pack must be non-negative, got {}", o.bytes_per_pack));
  WorkerGroup& group = WorkerGroup::get();
  group.set_timeout(timeout_of(o));
  const std::vector<Device*> devices = default_devices();
  const bool all_gpu = std::all_of(devices.begin(), devices.end(), [](Device* d) { return d->type() == DeviceType::GPU; });
  if (o.implementation == CommunicationImplementation::NCCL && !all_gpu) {
    throw ValueError("CommunicationImplementation::NCCL needs GPUs, and this worker's devices are CPUs: use AUTO or "
                     "RING (MPI's all-reduce)");
  }
  // Every worker must bring as many replicas (TensorFlow: the same devices on every worker).
  const auto counts = group.all_gather(std::vector<int64_t>{static_cast<int64_t>(devices.size())});
  for (int w = 0; w < group.size(); ++w) {
    if (counts[static_cast<std::size_t>(w)] != static_cast<int64_t>(devices.size())) {
      throw ValueError(fmt::format("Worker {} has {} local device(s) and worker {} has {}: every worker of a "
                                   "MultiWorkerMirroredStrategy needs the same number (set the same logical devices "
                                   "and CUDA_VISIBLE_DEVICES on each)",
                                   group.rank(), devices.size(), w, counts[static_cast<std::size_t>(w)]));
    }
  }
  // The chief's random generator is every worker's: the same initial weights, shuffles and draws.
  auto [seed, stream] = random::global_state();
  uint64_t state[2] = {seed, stream};
  group.broadcast(state, sizeof state, 0);
  random::set_global_state(state[0], state[1]);

  std::optional<CrossDeviceOps> cdo;
  if (o.bytes_per_pack > 0) {
    if (all_gpu) cdo = NcclAllReduce{1, o.bytes_per_pack};
    else cdo = ReductionToOneDevice{"", 1, o.bytes_per_pack};
  }
  impl_ = std::make_shared<StrategyImpl>(devices, cdo, &group);
  log::info(fmt::format("MultiWorkerMirroredStrategy with cluster_spec = {}, task_type = '{}', task_id = {}, "
                        "num_workers = {}, local_devices = {}, communication = CommunicationImplementation.{}",
                        cluster_repr(cluster_spec()), task_type(), task_id(), num_workers(), tuple_repr(this->devices()),
                        implementation_name(o.implementation)));
}

int MultiWorkerMirroredStrategy::num_replicas_in_sync() const { return impl_->num_replicas_in_sync(); }
int MultiWorkerMirroredStrategy::num_workers() const { return impl_->num_workers(); }
int MultiWorkerMirroredStrategy::worker_index() const { return impl_->worker_index(); }
std::string MultiWorkerMirroredStrategy::task_type() const { return WorkerGroup::get().cluster().task_type; }
int MultiWorkerMirroredStrategy::task_id() const { return WorkerGroup::get().cluster().task_id; }
bool MultiWorkerMirroredStrategy::is_chief() const { return impl_->is_chief(); }
std::map<std::string, std::vector<std::string>> MultiWorkerMirroredStrategy::cluster_spec() const {
  return WorkerGroup::get().cluster().cluster;
}

std::vector<std::string> MultiWorkerMirroredStrategy::devices() const {
  std::vector<std::string> out;
  for (auto* d : impl_->devices()) {
    const std::string full = d->full_name();
    const auto at = full.find("/device:");
    out.push_back(fmt::format("/job:{}/replica:0/task:{}{}", task_type(), task_id(),
                              at == std::string::npos ? "/device:" + full : full.substr(at)));
  }
  return out;
}

StrategyScope MultiWorkerMirroredStrategy::scope() const { return StrategyScope(impl_); }

PerReplica MultiWorkerMirroredStrategy::run(const std::function<Tensor(const ReplicaContext&)>& fn) const {
  PerReplica out;
  out.values.resize(static_cast<std::size_t>(impl_->num_replicas()));
  impl_->run_replicas([&](int r) {
    out.values[static_cast<std::size_t>(r)] =
        fn({impl_->replica_offset() + r, impl_->num_replicas_in_sync(), impl_->devices()[r]->full_name()});
  });
  return out;
}

Tensor MultiWorkerMirroredStrategy::reduce(ReduceOp op, const PerReplica& values, std::optional<int> axis) const {
  if (values.values.size() != static_cast<size_t>(impl_->num_replicas())) {
    throw ValueError(fmt::format("reduce: {} values for this worker's {} replicas", values.values.size(),
                                 impl_->num_replicas()));
  }
  if (axis && *axis != 0) throw ValueError(fmt::format("reduce: only axis=0 or no axis is supported, got {}", *axis));
  Device& host = DeviceManager::get().host_device();
  DeviceScope on(host.name());
  Tensor total;
  int64_t count = 0;
  for (const auto& v : values.values) {  // this worker's sum, in replica order
    if (!v.defined()) continue;
    Tensor x = v.to(host).cast(DType::float64);
    if (axis) {
      count += x.shape().rank() ? x.shape()[0] : 1;
      x = x.shape().rank() >= 2 ? ops::reduce_sum(x, 0) : ops::reduce_sum(x);
    }
    total = total.defined() ? ops::add(total, x) : x;
  }
  // The workers agree on the result's shape (a worker whose replicas all had nothing adds zeros).
  WorkerGroup& group = WorkerGroup::get();
  std::vector<int64_t> header(10, 0);
  header[0] = total.defined();
  header[1] = count;
  if (total.defined()) {
    header[2] = total.shape().rank();
    if (header[2] > 7) throw ValueError("reduce: values of rank > 7 are not supported across workers");
    for (int i = 0; i < total.shape().rank(); ++i) header[static_cast<std::size_t>(3 + i)] = total.shape()[i];
  }
  const auto all = group.all_gather(header);
  Shape shape;
  int64_t global_count = 0;
  bool any = false;
  for (int w = 0; w < group.size(); ++w) {
    const int64_t* h = all.data() + 10 * w;
    global_count += h[1];
    if (!h[0]) continue;
    std::vector<int64_t> dims(h + 3, h + 3 + h[2]);
    if (any && Shape(dims) != shape) {
      throw ValueError(fmt::format("reduce: worker {} has values of shape {} and another worker {}", w,
                                   Shape(dims).to_string(), shape.to_string()));
    }
    shape = Shape(dims);
    any = true;
  }
  if (!any) throw ValueError("reduce: every replica's value is undefined on every worker");
  const DType dtype = [&] {
    for (const auto& v : values.values) {
      if (v.defined()) return v.dtype();
    }
    return DType::float32;
  }();
  if (total.defined() && total.dtype() != DType::float64) total = total.cast(DType::float64);
  Tensor sum = total.defined() ? Tensor::from_host(total.data<double>(), shape) : Tensor::zeros(shape, DType::float64);
  group.all_reduce_sum(sum.data<double>(), sum.num_elements());
  if (op == ReduceOp::MEAN) {
    const double n = axis ? static_cast<double>(global_count) : static_cast<double>(impl_->num_replicas_in_sync());
    sum = ops::div(sum, Tensor::scalar(n, DType::float64));
  }
  return sum.cast(dtype).to(*impl_->devices().front());
}

void MultiWorkerMirroredStrategy::barrier() const { WorkerGroup::get().barrier(); }

}  // namespace osprey::distribute
