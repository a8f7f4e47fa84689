#include <fmt/format.h>

#include "core/env.h"
#include "core/logging.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "runtime/device_scope_state.h"
#include "runtime/executing_device.h"
#include "runtime/kernel_table.h"
#include "runtime/placement.h"
#include "tensor/tensor_impl.h"

namespace osprey::ops {

void register_kernel(OpId op, runtime::DeviceType type, KernelFn kernel) {
  runtime::set_kernel(static_cast<int>(op), type, reinterpret_cast<runtime::ErasedKernel>(kernel));
}

static KernelFn lookup(OpId op, runtime::DeviceType type) {
  return reinterpret_cast<KernelFn>(runtime::get_kernel(static_cast<int>(op), type));
}

bool has_kernel(OpId op, runtime::DeviceType type) { return lookup(op, type) != nullptr; }

// TensorFlow's small-op pinning: an op whose inputs are all small (< 64 elements) int32/int64 tensors on the CPU
// stays on the CPU instead of being sent to the GPU. OSPREY_/TF_EAGER_ENABLE_SMALL_TENSOR_CPU_PINNING=0|false
// turns it off (read once).
static bool small_int_inputs_on_cpu(std::span<Tensor> inputs) {
  static const bool enabled = [] {
    auto v = env::get_first({"OSPREY_EAGER_ENABLE_SMALL_TENSOR_CPU_PINNING", "TF_EAGER_ENABLE_SMALL_TENSOR_CPU_PINNING"});
    return !(v && (*v == "0" || *v == "false"));
  }();
  if (!enabled || inputs.empty()) return false;
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    if (t.device_ref().type() != runtime::DeviceType::CPU) return false;
    if (t.dtype() != DType::int32 && t.dtype() != DType::int64) return false;
    if (t.num_elements() >= 64) return false;
  }
  return true;
}

runtime::Device& place(OpId op, const char* op_name, std::span<Tensor> inputs, bool pinned) {
  auto& dm = runtime::DeviceManager::get();
  dm.ensure_initialized();
  runtime::Device* preferred = nullptr;
  for (const auto& t : inputs) {
    if (t.defined()) {
      preferred = &t.device_ref();
      break;
    }
  }
  const auto& spec = runtime::current_device_spec();
  runtime::Device* device;
  if (pinned) {
    if (!lookup(op, preferred->type())) {
      throw NotFoundError(fmt::format("Op {} has no kernel for {}, where its variable lives ({}).", op_name,
                                      runtime::device_type_name(preferred->type()), preferred->name()));
    }
    device = preferred;
  } else if (!spec && preferred && lookup(op, preferred->type())) {
    device = preferred;  // fast path: stay where the data is
  } else if ((!spec || !spec->device_type) && preferred && lookup(op, runtime::DeviceType::CPU) &&
             small_int_inputs_on_cpu(inputs)) {
    device = preferred;
  } else {
    auto supported = [op](runtime::DeviceType t) { return lookup(op, t) != nullptr; };
    device = &runtime::select_device(spec, preferred, supported, op_name);
  }
  for (auto& t : inputs) {
    if (t.defined() && &t.device_ref() != device) t = t.to(*device);  // silent device policy
  }
  if (dm.log_placement.load(std::memory_order_relaxed)) {
    log::info(fmt::format("Executing op {} in device {}", op_name, device->full_name()));
  }
  return *device;
}

static thread_local StepRecording* t_recording = nullptr;

static thread_local uint64_t t_dispatched = 0;
uint64_t kernels_dispatched_on_this_thread() { return t_dispatched; }

void run(OpId op, runtime::Device& device, std::span<const Tensor> inputs, std::span<Tensor> outputs,
         const void* attrs, std::size_t attrs_size) {
  ++t_dispatched;
  KernelFn fn = lookup(op, device.type());
  if (!fn) throw InternalError("run(): no kernel for the device place() chose");
  const bool top_level = runtime::executing_device() == nullptr;
  {
    runtime::ExecutingDevice on(&device);
    fn(KernelContext{inputs, outputs, attrs, &device});
  }
  if (t_recording && top_level) {
    StepRecording::Launch l{fn, &device, {inputs.begin(), inputs.end()}, {outputs.begin(), outputs.end()}, {}};
    if (attrs) l.attrs.assign(static_cast<const unsigned char*>(attrs), static_cast<const unsigned char*>(attrs) + attrs_size);
    t_recording->add(std::move(l));
  }
}

StepRecording::StepRecording() = default;
StepRecording::~StepRecording() = default;
StepRecording::StepRecording(StepRecording&&) noexcept = default;
StepRecording& StepRecording::operator=(StepRecording&&) noexcept = default;

void StepRecording::clear() {
  launches_.clear();
  graph_.reset();
  graph_tried_ = false;
}

void StepRecording::add(Launch launch) {
  launches_.push_back(std::move(launch));
  graph_.reset();
  graph_tried_ = false;
}

void StepRecording::replay() {
  if (!graph_tried_) {
    graph_tried_ = true;
    runtime::Device* device = launches_.empty() ? nullptr : launches_.front().device;
    for (const auto& l : launches_) {
      if (l.device != device) device = nullptr;
    }
    // Host devices run kernels as calls: nothing to capture. The graph may keep the work: it names the launches'
    // heap array, which moves with the recording and lives until the next add() or clear(), which drop the graph.
    const std::span<const Launch> launches(launches_);
    if (device && !device->host_memory()) {
      graph_ = device->platform().capture(*device, [launches] { run_launches(launches); });
    }
  }
  if (graph_) {
    graph_->launch();
  } else {
    run_launches(launches_);
  }
}

void StepRecording::run_launches(std::span<const Launch> launches) {
  for (const auto& l : launches) {
    runtime::ExecutingDevice on(l.device);
    // The outputs are the recorded tensors: the kernels write into the same buffers again.
    l.fn(KernelContext{l.inputs, std::span<Tensor>(const_cast<Tensor*>(l.outputs.data()), l.outputs.size()),
                       l.attrs.empty() ? nullptr : l.attrs.data(), l.device});
  }
}

RecordingScope::RecordingScope(StepRecording& recording) : previous_(t_recording) { t_recording = &recording; }
RecordingScope::~RecordingScope() { t_recording = previous_; }

InvalidArgumentError index_out_of_range(int64_t position, int64_t index, int64_t rows) {
  return InvalidArgumentError(fmt::format("indices[{}] = {} is not in [0, {})", position, index, rows));
}

InvalidArgumentError sparse_label_out_of_range(float label, int64_t classes) {
  return InvalidArgumentError(fmt::format("Received a label value of {} which is outside the valid range of [0, {}). "
                                          "Sparse labels must be integers in [0, number of classes).",
                                          label, classes));
}

}  // namespace osprey::ops
