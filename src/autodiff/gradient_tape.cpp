#include <unordered_map>
#include <unordered_set>

#include "ops/gradient_recorder.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "tensor/tensor_impl.h"

namespace osprey {

namespace ops {
static thread_local GradientRecorder* t_active = nullptr;
GradientRecorder* active_recorder() { return t_active; }
void set_active_recorder(GradientRecorder* r) { t_active = r; }
}  // namespace ops

namespace {
struct Entry {
  std::vector<Tensor> inputs, outputs;
  ops::BackwardFn backward;
};
}  // namespace

struct GradientTape::Impl : ops::GradientRecorder {
  bool persistent;
  bool used = false;
  ops::GradientRecorder* previous = nullptr;
  std::vector<Tensor> watched_tensors;  // keeps watched impls alive so their addresses stay unique
  std::unordered_set<const TensorImpl*> tracked;
  std::vector<Entry> entries;

  bool is_tracked(const Tensor& t) const {
    return t.defined() && (t.impl()->trainable_variable || tracked.count(t.impl()));
  }
  bool should_record(std::span<const Tensor> inputs) const override {
    for (const auto& t : inputs) {
      if (is_tracked(t)) return true;
    }
    return previous && previous->should_record(inputs);
  }
  void record(const char* name, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
              ops::BackwardFn backward) override {
    bool mine = false;
    for (const auto& t : inputs) mine |= is_tracked(t);
    if (previous && previous->should_record(inputs)) previous->record(name, inputs, outputs, backward);
    if (!mine) return;
    Entry e{{inputs.begin(), inputs.end()}, {outputs.begin(), outputs.end()}, std::move(backward)};
    for (const auto& t : e.outputs) {
      if (t.defined()) tracked.insert(t.impl());
    }
    entries.push_back(std::move(e));
  }
};

GradientTape::GradientTape(bool persistent) : impl_(std::make_unique<Impl>()) {
  impl_->persistent = persistent;
  impl_->previous = ops::active_recorder();
  ops::set_active_recorder(impl_.get());
}

GradientTape::~GradientTape() {
  if (ops::active_recorder() == impl_.get()) ops::set_active_recorder(impl_->previous);
}

void GradientTape::watch(const Tensor& tensor) {
  impl_->watched_tensors.push_back(tensor);
  impl_->tracked.insert(tensor.impl());
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources) {
  if (impl_->used && !impl_->persistent) {
    throw RuntimeError("A non-persistent GradientTape can only be used to compute one set of gradients (or "
                       "jacobians); create it with persistent=true to call gradient() more than once.");
  }
  impl_->used = true;
  // Gradient computation itself is not recorded.
  ops::GradientRecorder* saved = ops::active_recorder();
  ops::set_active_recorder(nullptr);
  struct Restore {
    ops::GradientRecorder* r;
    ~Restore() { ops::set_active_recorder(r); }
  } restore{saved};

  std::unordered_map<const TensorImpl*, Tensor> grads;
  Tensor seed = Tensor::ones(target.shape(), target.dtype());
  if (&seed.device_ref() != &target.device_ref()) seed = seed.to(target.device_ref());  // no copy when already there
  grads[target.impl()] = seed;
  for (auto it = impl_->entries.rbegin(); it != impl_->entries.rend(); ++it) {
    std::vector<Tensor> out_grads;
    bool any = false;
    for (const auto& o : it->outputs) {
      auto g = o.defined() ? grads.find(o.impl()) : grads.end();
      out_grads.push_back(g == grads.end() ? Tensor() : g->second);
      any |= g != grads.end();
    }
    if (!any) continue;
    for (size_t i = 0; i < out_grads.size(); ++i) {
      if (!out_grads[i].defined() && it->outputs[i].defined()) {
        Tensor zero = Tensor::zeros(it->outputs[i].shape());
        if (&zero.device_ref() != &it->outputs[i].device_ref()) zero = zero.to(it->outputs[i].device_ref());
        out_grads[i] = zero;
      }
    }
    std::vector<Tensor> in_grads = it->backward(out_grads);
    for (size_t i = 0; i < it->inputs.size() && i < in_grads.size(); ++i) {
      const Tensor& in = it->inputs[i];
      if (!in.defined() || !in_grads[i].defined()) continue;
      auto [slot, inserted] = grads.try_emplace(in.impl(), in_grads[i]);
      if (inserted) continue;
      // A half tensor's gradients may come in float32 from some ops (a half Dense's parameter gradients): summed
      // in float32.
      if (slot->second.dtype() != in_grads[i].dtype()) {
        slot->second = ops::add(ops::cast(slot->second, DType::float32), ops::cast(in_grads[i], DType::float32));
      } else {
        slot->second = ops::add(slot->second, in_grads[i]);
      }
    }
  }
  std::vector<Tensor> out;
  out.reserve(sources.size());
  for (const auto& s : sources) {
    auto g = grads.find(s.impl());
    out.push_back(g == grads.end() ? Tensor() : g->second);
    // A source's gradient in its own dtype (a half source's float32 gradient rounded), as TensorFlow returns it.
    const Tensor& got = out.back();
    if (got.defined() && got.dtype() != s.dtype() && is_floating(got.dtype()) && is_floating(s.dtype())) {
      out.back() = ops::cast(got, s.dtype());
    }
  }
  if (!impl_->persistent) impl_->entries.clear();
  return out;
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Variable*>& sources) {
  std::vector<Tensor> values;
  values.reserve(sources.size());
  for (auto* v : sources) values.push_back(v->value());
  return gradient(target, values);
}

}  // namespace osprey
