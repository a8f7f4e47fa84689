// One training step: eagerly, as a replay of its recorded kernel launches (bit-identical), split in two halves on
// two threads for small models, or across the replicas of a strategy.
#include <algorithm>
#include <cstring>

#include "core/row_copy.h"
#include "keras/trainers/trainer.h"
#include "osprey/autodiff.h"
#include "osprey/ops.h"
#include "runtime/pair_runner.h"
#include "tensor/tensor_impl.h"

namespace osprey::keras::trainer {

using Part = State::StepPlan::Part;

static void apply_constraints(State& s) {
  for (auto& l : s.layers) l->apply_constraints();
}

// A step can be recorded and replayed when nothing in it depends on host-side decisions or randomness: layers
// that are ops only (Dense, merges, activations, reshapes; nested models of them), in a stack or any graph, on one
// device, without a strategy. A subclass's call() may decide things on the host per batch: it runs eagerly.
static bool recordable_on_one_device(const State& s) {
  if (s.recordable < 0) {
    s.recordable = !distributed(s) && s.device && !s.subclassed &&
                   std::all_of(s.layers.begin(), s.layers.end(), [](const auto& l) { return l->recordable(); });
  }
  // An output's mask makes its mean metrics pick the unmasked steps on the host: such steps run eagerly (and so
  // does the first step of a model with mask-making layers, which finds out).
  return s.recordable && (s.output_masks == 0 || !(s.graph && s.graph->masked));
}
bool plannable(const State& s) { return !s.run_eagerly && recordable_on_one_device(s); }

// Batches from this many rows (even) are split in two halves when the model is small enough (kSplitMaxParams).
static constexpr int64_t kSplitMinRows = 32;
// Parameters (about the forward pass's multiply-adds per batch row) up to which halves pay: beyond it the
// products are large enough for the intra-op threads to share each of them (the wide MLP has 670 k).
static constexpr int64_t kSplitMaxParams = int64_t{1} << 14;

// Where a training step of this model on this batch splits into two halves, or 0 (no split). With two intra-op
// threads, a small Dense-only model's step is two half-batch passes, run at once on two threads, whose gradients
// are averaged; eager steps split the same way, so a recorded step stays the eager step bit for bit. Keras's
// sum_over_batch_size loss of the batch is exactly the mean of the halves' (even batches): only the rounding
// differs from one pass over the batch (as it does between thread counts in TensorFlow). Not split: one intra-op
// thread (two passes would only add launches), weight penalties (they would count twice), other reductions and
// losses that mask their values.
// One output only: the halves' labels and predictions are put side by side for the metrics of one output.
static int64_t split_rows(const Model& model, State& s, int64_t rows) {
  if (rows < kSplitMinRows || rows % 2 != 0 || !runtime::pair_available() || !recordable_on_one_device(s) ||
      !s.device->host_memory() || s.num_outputs() != 1 || has_penalties(s) ||
      std::any_of(s.layers.begin(), s.layers.end(), [](const auto& l) { return l->mixes_samples(); })) {
    return 0;
  }
  // (A loss that masks its values, ignore_class, divides by the batch's unmasked count: not the halves' mean.)
  if (s.losses[0]->reduction() != losses::Reduction::sum_over_batch_size || s.losses[0]->masks_values() ||
      s.losses[0]->mixes_samples()) {
    return 0;
  }
  return model.count_params() <= kSplitMaxParams ? rows / 2 : 0;
}

// A tensor shaped like `like` at `offset` bytes into `storage`.
static Tensor view_of(const std::shared_ptr<Storage>& storage, std::size_t offset, const Tensor& like) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage;
  impl->offset = offset;
  impl->shape = like.shape();
  impl->dtype = like.dtype();
  return Tensor(std::move(impl));
}
static std::size_t row_bytes(const Tensor& t) {
  return static_cast<std::size_t>(t.nbytes() / std::max<int64_t>(t.shape()[0], 1));
}

// A part's input buffer `dst` refilled from the batch `src`: its rows order[begin, begin + dst rows) when `order`
// is given (fit's shuffled rows of the whole arrays), else rows [begin, begin + dst rows).
static void load_rows(Tensor& dst, const Tensor& src, const int64_t* order, int64_t begin) {
  if (!dst.defined()) return;
  if (order) {
    gather_host_rows(dst.raw_data(), src.raw_data(), order + begin, dst.shape()[0], row_bytes(src));
  } else {
    std::memcpy(dst.raw_data(), static_cast<const char*>(src.raw_data()) + row_bytes(src) * begin,
                static_cast<std::size_t>(dst.nbytes()));
  }
}

// Calls f(buffer, source, i) for the part's input buffers and the batch's tensors, in the order x..., y..., w...
// (the layout of its device block), without building lists (this runs every step).
template <typename F>
static void each_input(Part& part, const Batch* b, F f) {
  std::size_t i = 0;
  for (std::size_t k = 0; k < part.x.size(); ++k, ++i) f(part.x[k], b ? &b->x[k] : nullptr, i);
  for (std::size_t k = 0; k < part.y.size(); ++k, ++i) f(part.y[k], b ? &b->y[k] : nullptr, i);
  for (std::size_t k = 0; k < part.w.size(); ++k, ++i) f(part.w[k], b ? &b->w[k] : nullptr, i);
}

// Gives a part its own input buffers, shaped like its rows of the batch: on the host, one for each tensor; on a
// device, one device block for all of them and its host staging block. load_part() fills them.
static void own_inputs(Part& part, runtime::Device& device) {
  if (device.host_memory()) {
    each_input(part, nullptr, [&](Tensor& t, const Tensor*, std::size_t) {
      if (t.defined()) t = Tensor::empty(t.shape(), t.dtype(), &device);
    });
    return;
  }
  std::vector<Tensor*> tensors;
  each_input(part, nullptr, [&](Tensor& t, const Tensor*, std::size_t) { tensors.push_back(&t); });
  constexpr std::size_t kAlign = 256;  // what cudaMalloc gives: vector loads and cuBLASLt's best alignment
  std::vector<std::size_t> offsets(tensors.size());
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    offsets[i] = bytes;
    if (tensors[i]->defined()) bytes += (static_cast<std::size_t>(tensors[i]->nbytes()) + kAlign - 1) / kAlign * kAlign;
  }
  part.inputs = std::make_shared<Storage>(device, bytes);
  part.staging = std::make_shared<Storage>(runtime::DeviceManager::get().host_device(), bytes);
  part.staged.assign(tensors.size(), Tensor());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i]->defined()) continue;
    part.staged[i] = view_of(part.staging, offsets[i], *tensors[i]);
    *tensors[i] = view_of(part.inputs, offsets[i], *tensors[i]);
  }
}

bool planned_takes(const State& s, const Batch& b) {
  auto usable = [&](const Tensor& t) {
    return !t.defined() || t.device_ref().host_memory() || &t.device_ref() == s.device;
  };
  if (!plannable(s) || !std::all_of(b.w.begin(), b.w.end(), usable)) return false;
  return std::all_of(b.x.begin(), b.x.end(), usable) && std::all_of(b.y.begin(), b.y.end(), usable);
}

// Fills a part's input buffers with its rows of the batch (fit's shuffled rows `order` of them when given; then
// they are host tensors). On the host the rows go straight into the buffers; on a device, host rows go through the
// staging block (one copy for all of them) and rows already on the device are copied there.
static void load_part(Part& part, runtime::Device& device, const Batch& b, const int64_t* order) {
  if (!part.staging) {
    each_input(part, &b, [&](Tensor& dst, const Tensor* src, std::size_t) { load_rows(dst, *src, order, part.begin); });
    return;
  }
  bool from_host = false;
  each_input(part, &b, [&](Tensor& dst, const Tensor* src, std::size_t i) {
    if (dst.defined() && src->device_ref().host_memory()) {
      load_rows(part.staged[i], *src, order, part.begin);
      from_host = true;
    }
  });
  if (from_host) device.platform().copy(device, part.inputs->data, true, part.staging->data, false, part.staging->bytes);
  each_input(part, &b, [&](Tensor& dst, const Tensor* src, std::size_t) {
    if (!dst.defined() || src->device_ref().host_memory()) return;
    device.platform().copy(device, dst.impl()->data(), true,
                           static_cast<const char*>(src->impl()->data()) + row_bytes(*src) * part.begin, true,
                           static_cast<std::size_t>(dst.nbytes()));
  });
}

// The forward and backward pass of rows [begin, end) of the batch, eagerly: the part's predictions, loss and
// gradients (Keras's loss of those rows).
static void part_pass(Model& model, State& s, Part& part, const std::vector<Variable*>& vars) {
  {
    GradientTape tape;
    std::vector<Tensor> logits;
    const std::vector<Tensor> x(part.x.begin(), part.x.end()), y(part.y.begin(), part.y.end());
    part.y_pred = forward(model, s, x, true, &logits, &part.masks);
    part.loss = with_penalties(s, batch_loss(s, y, part.y_pred, part.w, &logits,
                                             s.num_outputs() > 1 ? &part.output_losses : nullptr, &part.masks));
    // With loss scaling, the gradients of loss × scale (the optimizer divides them again).
    part.grads = tape.gradient(s.optimizer->scale_loss(part.loss), vars);
  }
  // Counting metrics count inside the part (with the halves of a split step: on both threads at once). With an
  // output's mask, a mean metric counts the unmasked steps (eager steps only: the rows are picked on the host).
  part.metric_counts.clear();
  part.metric_samples.clear();
  for (auto& m : s.metrics) {
    if (m.weighted && weight_of(part.w, m.output).defined()) {  // weighted in finish_step, over the whole batch
      part.metric_counts.emplace_back();
      part.metric_samples.push_back(0.0);
      continue;
    }
    const auto [t, p] = metric_inputs(*m.metric, part.y[m.output], part.y_pred[m.output], part.masks[m.output]);
    part.metric_counts.push_back(m.metric->batch_count(t, p));
    part.metric_samples.push_back(static_cast<double>(p.shape()[0]));
  }
}

// out = a's rows then b's (host memory; allocated when its shape or dtype changes).
static void concat_rows(Tensor& out, const Tensor& a, const Tensor& b) {
  const Shape shape = a.shape().with_dim(0, a.shape()[0] + b.shape()[0]);
  if (!out.defined() || out.shape() != shape || out.dtype() != a.dtype()) {
    out = Tensor::empty(shape, a.dtype(), &a.device_ref());
  }
  const auto first = static_cast<std::size_t>(a.nbytes());
  std::memcpy(out.raw_data(), a.raw_data(), first);
  std::memcpy(static_cast<char*>(out.raw_data()) + first, b.raw_data(), static_cast<std::size_t>(b.nbytes()));
}

// Applies the step's gradients and metrics and returns its loss: one part, or the average of two halves. The
// metrics see the whole batch once: counting metrics add the parts' counts; the others see the halves' labels
// and predictions copied side by side into `labels` and `predictions` (host memory; single-output models split).
static double finish_step(State& s, std::vector<Part>& parts, std::vector<Tensor>& averaged,
                          const std::vector<Variable*>& vars, Tensor& labels, Tensor& predictions, Tensor& weights) {
  double loss;
  if (parts.size() == 2) {
    s.optimizer->apply_gradient_halves(parts[0].grads, parts[1].grads, vars, averaged);
    loss = (parts[0].loss.item() + parts[1].loss.item()) / 2;
  } else {
    s.optimizer->apply_gradients(parts[0].grads, vars);
    loss = parts[0].loss.item();
    s.output_loss_values.resize(parts[0].output_losses.size());
    for (std::size_t o = 0; o < parts[0].output_losses.size(); ++o) {
      s.output_loss_values[o] = parts[0].output_losses[o].defined() ? parts[0].output_losses[o].item() : 0.0;
    }
  }
  apply_constraints(s);
  bool whole_batch = false;
  for (std::size_t i = 0; i < s.metrics.size(); ++i) {
    if (!parts[0].metric_counts[i].defined()) {
      whole_batch = true;
      continue;
    }
    double count = 0.0, samples = 0.0;
    for (auto& part : parts) {
      count += part.metric_counts[i].item();
      samples += part.metric_samples[i];
    }
    s.metrics[i].metric->add_count(count, samples);
  }
  if (!whole_batch) return loss;
  if (parts.size() == 1) {
    for (std::size_t i = 0; i < s.metrics.size(); ++i) {
      const int o = s.metrics[i].output;
      if (parts[0].metric_counts[i].defined()) continue;
      update_metric(s.metrics[i], parts[0].y[o], parts[0].y_pred[o], parts[0].masks[o], weight_of(parts[0].w, o));
    }
    return loss;
  }
  concat_rows(labels, parts[0].y[0], parts[1].y[0]);
  concat_rows(predictions, parts[0].y_pred[0], parts[1].y_pred[0]);
  const bool halves_weighted = weight_of(parts[0].w, 0).defined();
  if (halves_weighted) concat_rows(weights, parts[0].w[0], parts[1].w[0]);
  for (std::size_t i = 0; i < s.metrics.size(); ++i) {
    if (!parts[0].metric_counts[i].defined()) {
      update_metric(s.metrics[i], labels, predictions, halves_weighted ? weights : Tensor());
    }
  }
  return loss;
}

// After an error in one half of a split step: the forward pass and loss of the whole batch (no update), so that
// the error raised names the shapes the user passed, not a half's. Returns if only the halves fail.
static void repeat_unsplit(Model& model, State& s, const Batch& b) {
  std::vector<Tensor> logits, masks;
  const auto y_pred = forward(model, s, b.x, true, &logits, &masks);
  (void)batch_loss(s, b.y, y_pred, b.w, &logits, nullptr, &masks);
}

static void part_passes(Model& model, State& s, std::vector<Part>& parts, const std::vector<Variable*>& vars,
                        const Batch& b) {
  try {
    for (auto& part : parts) part_pass(model, s, part, vars);
  } catch (const Error&) {
    if (parts.size() == 2) repeat_unsplit(model, s, b);
    throw;
  }
}

static std::vector<Part> make_parts(const Batch& b, int64_t split) {
  const int64_t rows = b.x[0].shape()[0];
  std::vector<Part> parts(split ? 2 : 1);
  parts[0].begin = 0;
  parts[0].end = split ? split : rows;
  if (split) {
    parts[1].begin = split;
    parts[1].end = rows;
  }
  auto rows_of = [](const Tensor& t, const Part& p) { return t.defined() ? t.slice_rows(p.begin, p.end) : Tensor(); };
  for (auto& p : parts) {
    p.x.clear();
    p.y.clear();
    for (const auto& t : b.x) p.x.push_back(split ? rows_of(t, p) : t);
    for (const auto& t : b.y) p.y.push_back(split ? rows_of(t, p) : t);
    p.w.clear();
    for (const auto& t : b.w) p.w.push_back(split ? rows_of(t, p) : t);
  }
  return parts;
}

static double eager_train_step(Model& model, State& s, const Batch& b) {
  const auto vars = model.trainable_variables();
  auto parts = make_parts(b, split_rows(model, s, b.x[0].shape()[0]));
  part_passes(model, s, parts, vars, b);
  std::vector<Tensor> averaged;
  Tensor labels, predictions, weights;
  return finish_step(s, parts, averaged, vars, labels, predictions, weights);
}

// The batch on the model's device: an eager step reads its inputs there (train_on_batch and fit copy them for
// eager steps; a planned step copies them itself, so a plan that turns out not replayable hands host rows here).
static Batch on_device(const Batch& b, runtime::Device& device) {
  Batch out = b;
  auto move = [&](Tensor& t) {
    if (t.defined() && &t.device_ref() != &device) t = t.to(device);
  };
  for (auto& t : out.x) move(t);
  for (auto& t : out.y) move(t);
  for (auto& t : out.w) move(t);
  return out;
}

static Batch gathered(const Batch& b) {
  Batch out;
  for (const auto& t : b.x) out.x.push_back(osprey::ops::gather_rows(t, b.rows));
  for (const auto& t : b.y) out.y.push_back(osprey::ops::gather_rows(t, b.rows));
  for (const auto& t : b.w) out.w.push_back(t.defined() ? osprey::ops::gather_rows(t, b.rows) : Tensor());
  return out;
}

static bool plan_fits(const State::StepPlan& p, const Batch& b, int64_t batch) {
  auto same = [batch](const std::vector<Shape>& shapes, const std::vector<DType>& dtypes, const std::vector<Tensor>& ts) {
    if (shapes.size() != ts.size()) return false;
    for (std::size_t i = 0; i < ts.size(); ++i) {
      if (shapes[i][0] != batch || shapes[i].with_dim(0, ts[i].shape()[0]) != ts[i].shape() || dtypes[i] != ts[i].dtype()) {
        return false;
      }
    }
    return true;
  };
  // The weights: one per sample, or per position (the same positions every batch), for every output or each.
  const auto& w = p.parts[0].w;
  if (w.size() != b.w.size()) return false;
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (w[k].defined() != b.w[k].defined() ||
        (w[k].defined() && w[k].shape().with_dim(0, b.w[k].shape()[0]) != b.w[k].shape())) {
      return false;
    }
  }
  return same(p.x_shapes, p.x_dtypes, b.x) && same(p.y_shapes, p.y_dtypes, b.y);
}

// The step as a replay of the launches recorded at its first run for this batch shape: the batch is copied into
// the plan's input buffers, the forward and backward kernels run again on their recorded buffers (the two halves
// of a split step at once, on the calling thread and the helper thread), then the optimizer (its attributes change
// every step) and the metrics run eagerly on the recorded results. With b.rows, the batch is those rows of the
// arrays (fit's shuffled order), gathered by each part straight into its input buffers.
static double planned_train_step(Model& model, State& s, const Batch& b) {
  // Which variables are trainable can change between steps (layer.trainable): listed again every step, into a
  // vector that keeps its memory.
  std::vector<Variable*>& vars = s.step_variables;
  vars.clear();
  model.append_trainable_variables(vars);
  const int64_t batch = b.size();
  State::StepPlan* plan = nullptr;
  for (auto& p : s.plans) {
    if (plan_fits(*p, b, batch)) plan = p.get();
  }
  if (b.rows.defined() && (!plan || !plan->replayable)) return planned_train_step(model, s, gathered(b));
  // (On a GPU with host rows before this, the eager step ran on the host copies: the tape saw no path to the
  // variables and the model stopped training after its first step, e.g. with an OrthogonalRegularizer.)
  if (plan && !plan->replayable) return eager_train_step(model, s, on_device(b, *s.device));
  if (plan) {
    // Each part copies (or gathers) its rows in and replays, the two halves of a split step on two threads (each
    // thread then writes the input buffers its kernels read).
    const int64_t* order = b.rows.defined() ? b.rows.data<int64_t>() : nullptr;
    auto run_part = [&](Part& part) {
      load_part(part, *s.device, b, order);
      part.recording.replay();
    };
    if (plan->parts.size() == 1 ||
        !runtime::run_pair([&](int half) { run_part(plan->parts[static_cast<std::size_t>(half)]); })) {
      for (auto& part : plan->parts) run_part(part);
    }
  } else {
    if (s.plans.size() >= 4) s.plans.erase(s.plans.begin());
    auto p = std::make_unique<State::StepPlan>();
    for (const auto& t : b.x) {
      p->x_shapes.push_back(t.shape());
      p->x_dtypes.push_back(t.dtype());
    }
    for (const auto& t : b.y) {
      p->y_shapes.push_back(t.shape());
      p->y_dtypes.push_back(t.dtype());
    }
    p->parts = make_parts(b, split_rows(model, s, batch));
    for (auto& part : p->parts) {
      own_inputs(part, *s.device);
      load_part(part, *s.device, b, nullptr);
    }
    const uint64_t copies_inside = tensor_copies_on_this_thread();
    try {
      for (auto& part : p->parts) {
        osprey::ops::RecordingScope record(part.recording);
        part_pass(model, s, part, vars);
      }
    } catch (const Error&) {
      if (p->parts.size() == 2) repeat_unsplit(model, s, b);
      throw;
    }
    // A copy inside the step (not a kernel) would be frozen in the plan: such a step is never replayed.
    p->replayable = tensor_copies_on_this_thread() == copies_inside;
    plan = p.get();
    s.plans.push_back(std::move(p));
  }
  return finish_step(s, plan->parts, plan->grads, vars, plan->labels, plan->predictions, plan->weights);
}

double distributed_train_step(Model& model, State& s, const Batch& b);

double train_step(Model& model, State& s, const Batch& b) {
  if (b.rows.defined() && !(plannable(s) && !distributed(s))) return train_step(model, s, gathered(b));
  if (distributed(s)) return distributed_train_step(model, s, b);
  if (planned_takes(s, b)) return planned_train_step(model, s, b);
  return eager_train_step(model, s, b);
}

}  // namespace osprey::keras::trainer
