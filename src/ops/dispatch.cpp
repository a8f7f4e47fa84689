#include <fmt/format.h>

#include "core/env.h"
#include "core/logging.h"
#include "ops/attrs.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "runtime/device_scope_state.h"
#include "runtime/executing_device.h"
#include "runtime/kernel_table.h"
#include "runtime/placement.h"
#include "tensor/tensor_impl.h"

namespace osprey::ops {

// The half dtypes each (op, device type) kernel takes natively (HalfTypes bits).
static uint8_t g_half[runtime::kMaxOps][2] = {};

void register_kernel(OpId op, runtime::DeviceType type, KernelFn kernel, HalfTypes half) {
  runtime::set_kernel(static_cast<int>(op), type, reinterpret_cast<runtime::ErasedKernel>(kernel));
  g_half[static_cast<int>(op)][static_cast<int>(type)] = half;
}

HalfTypes half_types(OpId op, runtime::DeviceType type) {
  return static_cast<HalfTypes>(g_half[static_cast<int>(op)][static_cast<int>(type)]);
}

static uint8_t half_bit(DType t) { return t == DType::float16 ? kFloat16 : t == DType::bfloat16 ? kBFloat16 : 0; }

// Whether a tensor of a half dtype the kernel does not take is among the op's inputs or outputs.
static bool needs_float32(OpId op, runtime::DeviceType type, std::span<const Tensor> inputs,
                          std::span<const Tensor> outputs) {
  if (op == OpId::Cast) return false;  // the fallback's own op: every backend's Cast takes the half types
  const uint8_t ok = g_half[static_cast<int>(op)][static_cast<int>(type)];
  for (auto span : {inputs, outputs}) {
    for (const Tensor& t : span) {
      if (t.defined() && (half_bit(t.dtype()) & ~ok)) return true;
    }
  }
  return false;
}

static bool updates_inputs_in_place(OpId op) {
  return op == OpId::ApplySgd || op == OpId::ApplyAdam || op == OpId::ApplyRmsprop || op == OpId::ApplyAdamMany;
}

static KernelFn lookup(OpId op, runtime::DeviceType type) {
  return reinterpret_cast<KernelFn>(runtime::get_kernel(static_cast<int>(op), type));
}

bool has_kernel(OpId op, runtime::DeviceType type) { return lookup(op, type) != nullptr; }

static WorkspaceFn g_workspace[runtime::kMaxOps][2] = {};

void register_workspace(OpId op, runtime::DeviceType type, WorkspaceFn fn) {
  g_workspace[static_cast<int>(op)][static_cast<int>(type)] = fn;
}

int64_t workspace_bytes(OpId op, runtime::Device& device, const void* attrs) {
  const WorkspaceFn fn = g_workspace[static_cast<int>(op)][static_cast<int>(device.type())];
  return fn ? fn(attrs, device) : 0;
}

static AcceptsFn g_accepts[runtime::kMaxOps][2] = {};

void register_accepts(OpId op, runtime::DeviceType type, AcceptsFn fn) {
  g_accepts[static_cast<int>(op)][static_cast<int>(type)] = fn;
}

bool kernel_accepts(OpId op, runtime::DeviceType type, const void* attrs) {
  const AcceptsFn fn = g_accepts[static_cast<int>(op)][static_cast<int>(type)];
  return has_kernel(op, type) && (!fn || fn(attrs));
}

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

// The op in float32: half inputs cast to float32 copies, the kernel on them with float32 outputs where the op's
// are half, those cast back into the op's outputs. Each of these is a launch of its own (a recorded step keeps them).
static void run_in_float32(OpId op, runtime::Device& device, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                           const void* attrs, std::size_t attrs_size) {
  if (updates_inputs_in_place(op)) {
    throw InvalidArgumentError("An optimizer update on float16/bfloat16 variables: variables stay float32 under "
                               "mixed precision (Keras's variable_dtype); only the computation runs in half precision");
  }
  const CastAttrs to_float{DType::float32};
  std::vector<Tensor> in(inputs.begin(), inputs.end());
  for (Tensor& t : in) {
    if (!t.defined() || !is_half(t.dtype())) continue;
    Tensor f = Tensor::empty(t.shape(), DType::float32, &device);
    run(OpId::Cast, device, {&t, 1}, {&f, 1}, &to_float);
    t = std::move(f);
  }
  std::vector<Tensor> out(outputs.begin(), outputs.end());
  for (Tensor& t : out) {
    if (t.defined() && is_half(t.dtype())) t = Tensor::empty(t.shape(), DType::float32, &device);
  }
  run(op, device, in, out, attrs, attrs_size);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!outputs[i].defined() || !is_half(outputs[i].dtype())) continue;
    const CastAttrs back{outputs[i].dtype()};
    run(OpId::Cast, device, {&out[i], 1}, {&outputs[i], 1}, &back);
  }
}

void run(OpId op, runtime::Device& device, std::span<const Tensor> inputs, std::span<Tensor> outputs,
         const void* attrs, std::size_t attrs_size) {
  if (needs_float32(op, device.type(), inputs, outputs)) {
    return run_in_float32(op, device, inputs, outputs, attrs, attrs_size);
  }
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

InvalidArgumentError ctc_input_error(const char* op, int problem, int64_t sample, int64_t where, int64_t value,
                                     int64_t max_label, int64_t frames, int64_t classes) {
  switch (problem) {
    case 1:
      return InvalidArgumentError(fmt::format("{}: label_length[{}] = {} is not in [0, {}] (the labels' second axis)",
                                              op, sample, value, max_label));
    case 2:
      return InvalidArgumentError(fmt::format("{}: the length of sequence {} is {}, not in [0, {}] (the logits' time "
                                              "axis)",
                                              op, sample, value, frames));
    case 3:
      return InvalidArgumentError(fmt::format("{}: labels[{}, {}] = {} is not a class in [0, {})", op, sample, where,
                                              value, classes));
    default:
      return InvalidArgumentError(fmt::format("{}: labels[{}, {}] = {} is the blank (mask) index; the labels within "
                                              "label_length must be other classes (pad after them)",
                                              op, sample, where, value));
  }
}

}  // namespace osprey::ops
