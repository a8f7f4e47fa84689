// The engine's forward pass and losses: input checks, the model's graph (or a subclass's call), per-output losses
// and weights.
#include <algorithm>

#include <fmt/format.h>

#include "keras/losses/loss_helpers.h"
#include "keras/trainers/trainer.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::keras::trainer {

// Whether a batch's shape is `sample` after its batch axis (no allocation: train_on_batch checks every step).
static bool has_sample_shape(const Shape& batch, const Shape& sample) {
  if (batch.rank() != sample.rank() + 1) return false;
  for (int i = 0; i < sample.rank(); ++i) {
    if (batch[i + 1] != sample[i]) return false;
  }
  return true;
}
static Shape sample_of(const Shape& batch) {
  const auto dims = batch.dims();
  return Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
}

void check_inputs(Model& model, State& s, const std::vector<Tensor>& xs) {
  const std::string& name = model.name();
  if (s.num_inputs() >= 0 && xs.size() != static_cast<std::size_t>(s.num_inputs())) {
    throw ValueError(fmt::format("Model '{}' expects {} input(s), but it received {} input tensors", name,
                                 s.num_inputs(), xs.size()));
  }
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    if (!x.defined() || x.shape().rank() < 2) {
      throw ValueError(fmt::format("Model '{}' expects a batch of inputs with shape (batch, features) for input {}, "
                                   "got {}",
                                   name, i, x.defined() ? "shape " + x.shape().to_string() : "an undefined tensor"));
    }
  }
  if (s.subclassed) return;  // its call() checks what it takes
  if (s.sequential) {  // built from the first batch's per-sample shape
    auto& seq = static_cast<Sequential&>(model);
    const Tensor& x = xs[0];
    if (!seq.built()) seq.build(sample_of(x.shape()));
    if (!has_sample_shape(x.shape(), *s.input_shape)) {
      const Shape sample = sample_of(x.shape());
      const std::string first = s.layers.empty() ? name : s.layers.front()->name();
      std::vector<int64_t> expected{0};
      for (auto d : s.input_shape->dims()) expected.push_back(d);
      if (sample.rank() == s.input_shape->rank() && x.shape()[-1] != (*s.input_shape)[-1]) {
        throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected axis -1 of "
                                     "input shape to have value {}, but received input with shape {}",
                                     first, (*s.input_shape)[-1], x.shape().to_keras_string()));
      }
      throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected shape={}, found "
                                   "shape={}",
                                   first, Shape(expected).to_keras_string(), x.shape().to_keras_string()));
    }
    return;
  }
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Shape& want = s.graph->inputs[i].shape();
    if (!has_sample_shape(xs[i].shape(), want)) {
      std::vector<int64_t> expected{0};
      for (auto d : want.dims()) expected.push_back(d);
      throw ValueError(fmt::format("Input {} ('{}') of model '{}' is incompatible: expected shape {}, but received "
                                   "input with shape {}",
                                   i, s.graph->input_names[i], name, Shape(expected).to_keras_string(),
                                   xs[i].shape().to_keras_string()));
    }
  }
}

static const std::string& name_of(const Model& model) { return model.name(); }

// A top-level forward pass starts a new detail::forward_pass() (nested models' passes are part of it).
namespace {
thread_local int t_forward_depth = 0;
struct ForwardPass {
  ForwardPass() {
    if (t_forward_depth++ == 0) detail::begin_forward_pass();
  }
  ~ForwardPass() { --t_forward_depth; }
  ForwardPass(const ForwardPass&) = delete;
  ForwardPass& operator=(const ForwardPass&) = delete;
};
}  // namespace

// Half-precision outputs as float32 (see forward()).
static void to_float32(std::vector<Tensor>& ts) {
  for (auto& t : ts) {
    if (t.defined() && is_half(t.dtype())) t = osprey::ops::cast(t, DType::float32);
  }
}

std::vector<Tensor> forward(Model& model, State& s, const std::vector<Tensor>& xs_in, bool training,
                            std::vector<Tensor>* logits, std::vector<Tensor>* output_masks, bool float32_outputs) {
  const ForwardPass pass;
  check_inputs(model, s, xs_in);
  runtime::Device* device = s.device;
  if (s.strategy && current_replica_id() >= 0) device = s.strategy->devices()[current_replica_id()];
  std::vector<Tensor> xs(xs_in);
  for (auto& h : xs) {
    if (device && &h.device_ref() != device) h = h.to(*device);
    if (h.dtype() != DType::float32) h = h.cast(DType::float32);
  }
  if (s.subclassed) {
    if (s.subclass_input_shapes.empty()) {
      for (const auto& x : xs) {
        const auto d = x.shape().dims();
        s.subclass_input_shapes.push_back(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
      }
    }
    auto out = model.call_outputs(xs, training);
    if (out.size() != static_cast<std::size_t>(s.num_outputs())) {
      throw ValueError(fmt::format("Model '{}' declared {} output(s), but its call gave {}; pass num_outputs to the "
                                   "Model constructor",
                                   name_of(model), s.num_outputs(), out.size()));
    }
    if (!s.device) {  // its layers were built by this first call
      for (auto* v : model.variables()) {
        s.device = &v->value().device_ref();
        break;
      }
    }
    if (output_masks) output_masks->assign(out.size(), Tensor());
    if (float32_outputs) to_float32(out);
    return out;
  }
  std::vector<Tensor> masks;
  std::vector<Tensor> out;
  if (!logits || s.logits_losses.empty()) {
    out = s.graph->run(xs, training, nullptr, nullptr, s.graph->masked ? &masks : nullptr);
  } else {
    std::vector<bool> which;
    for (const auto& l : s.logits_losses) which.push_back(l != nullptr);
    out = s.graph->run(xs, training, &which, logits, s.graph->masked ? &masks : nullptr);
  }
  if (logits) {  // a loss follows (fit, evaluate): Keras weights it by an output's mask
    const bool any = std::any_of(masks.begin(), masks.end(), [](const Tensor& m) { return m.defined(); });
    if (s.graph->masked) s.output_masks = any ? 1 : 0;
    if (any && !output_masks) {
      for (std::size_t o = 0; o < masks.size(); ++o) {
        if (!masks[o].defined()) continue;
        // (Every training and evaluation pass takes the masks: the loss weighs each time step by its output's.)
        throw InternalError(fmt::format("Model '{}': output '{}' carries a mask, but this pass has no place for it",
                                        name_of(model), s.graph->output_names[o]));
      }
    }
  }
  if (output_masks) {
    *output_masks = std::move(masks);
    output_masks->resize(out.size());
  }
  if (float32_outputs) to_float32(out);
  if (logits) to_float32(*logits);
  return out;
}

}  // namespace osprey::keras::trainer

namespace osprey::keras {
std::vector<Tensor> Model::call_all(const std::vector<Tensor>& inputs, bool training) {
  return trainer::forward(*this, state(), inputs, training, nullptr, nullptr, /*float32_outputs=*/false);
}
}  // namespace osprey::keras

namespace osprey::keras::trainer {

bool has_penalties(State& s) {
  for (auto& l : s.layers) {
    if (l->has_regularization()) return true;
  }
  return false;
}

Tensor penalty_sum(State& s) {
  Tensor total;
  for (auto& l : s.layers) {
    for (auto& p : l->regularization_losses()) total = total.defined() ? osprey::ops::add(total, p) : p;
  }
  return total.defined() ? total : Tensor::scalar(0.0);
}

Tensor with_penalties(State& s, const Tensor& loss) { return has_penalties(s) ? osprey::ops::add(loss, penalty_sum(s)) : loss; }

namespace {

// (batch, steps, rest...) as (batch · steps, rest...): each step a row. ValueError unless `t` has the mask's
// (batch, steps) first.
Tensor steps_as_rows(const Tensor& t, const Tensor& mask, const char* what, const std::string& output) {
  const auto d = t.shape().dims();
  const int64_t n = mask.shape()[0], steps = mask.shape()[1];
  if (d.size() < 2 || d[0] != n || d[1] != steps) {
    throw ValueError(fmt::format("Output '{}' carries a mask of shape {} (batch, steps), but its {} has shape {}: "
                                 "Keras weights the loss of each step by the mask, so the {} must have the steps "
                                 "too",
                                 output, mask.shape().to_string(), what, t.shape().to_string(), what));
  }
  std::vector<int64_t> rows{n * steps};
  rows.insert(rows.end(), d.begin() + 2, d.end());
  return osprey::ops::reshape(t, Shape(rows));
}

// Whether `w` holds a weight per step of the output's mask (batch, steps) (else one per sample); ValueError when it
// weighs positions that are not the mask's steps.
bool step_weights(const Tensor& w, const Tensor& mask, const std::string& output) {
  if (!losses::detail::weighs_positions(w)) return false;
  if (w.num_elements() != mask.num_elements() || w.shape()[0] != mask.shape()[0] || w.shape()[1] != mask.shape()[1]) {
    throw ValueError(fmt::format("Output '{}' carries a mask of shape {} (batch, steps), but sample_weight has shape "
                                 "{}: weights of more than one value per sample must have one per step, (batch, "
                                 "steps)",
                                 output, mask.shape().to_string(), w.shape().to_string()));
  }
  return true;
}

// An output's steps' losses weighted by its mask (and the loss's own mask) and the sample weights (`weighted`, one
// per step, batch · steps), the mask (`m`) and the mask times the weights (`weights`).
struct MaskedValues {
  Tensor weighted, m, weights;
};

MaskedValues masked_values(const losses::Loss& loss, const Tensor& y, const Tensor& pred, const Tensor& mask_in,
                           const Tensor& w, const std::string& output) {
  const Tensor mask = mask_in.dtype() == DType::float32 ? mask_in : osprey::ops::cast(mask_in, DType::float32);
  const int64_t n = mask.shape()[0], steps = mask.shape()[1];
  const Tensor rows_y = steps_as_rows(y, mask, "target", output), rows_pred = steps_as_rows(pred, mask, "prediction", output);
  const Tensor values = loss.per_sample(rows_y, rows_pred);
  Tensor m = osprey::ops::reshape(mask.to(values.device_ref()), Shape({n * steps}));
  // The loss's own mask (ignore_class) and the output's, both (Keras: in_mask & out_mask).
  // (per_sample above took one label per row, so the loss's mask has one value per step.)
  if (const Tensor own = loss.loss_mask(rows_y, rows_pred, values); own.defined()) {
    m = osprey::ops::mul(m, osprey::ops::reshape(own, Shape({n * steps})));
  }
  Tensor weights = m;
  if (w.defined()) {  // each sample's weight on all of its steps, or a weight per step
    const Tensor wd = &w.device_ref() == &values.device_ref() ? w : w.to(values.device_ref());
    const Tensor per_step = step_weights(wd, mask, output)
                                ? wd
                                : osprey::ops::matmul(osprey::ops::reshape(wd, Shape({n, 1})), Tensor::ones(Shape({1, steps})));
    weights = osprey::ops::mul(m, osprey::ops::reshape(per_step, Shape({n * steps})));
  }
  return {osprey::ops::mul(values, weights), m, weights};
}

// What a masked loss's sum is divided by: the unmasked steps' count (sum_over_batch_size), the weights' sum
// (mean_with_sample_weight); undefined for sum (and none).
Tensor masked_divisor(const losses::Loss& loss, const MaskedValues& v) {
  switch (loss.reduction()) {
    case losses::Reduction::sum_over_batch_size:
      return osprey::ops::reduce_sum(v.m);
    case losses::Reduction::mean_with_sample_weight:
      return osprey::ops::reduce_sum(v.weights);
    default:
      return Tensor();
  }
}

}  // namespace

std::pair<Tensor, Tensor> metric_inputs(const metrics::Metric& metric, const Tensor& y, const Tensor& y_pred,
                                        const Tensor& mask, Tensor* w) {
  if (!mask.defined() || !metric.weighs_by_mask()) return {y, y_pred};
  const auto keep = (mask.dtype() == DType::float32 ? mask : osprey::ops::cast(mask, DType::float32)).to_vector<float>();
  std::vector<int64_t> rows;
  for (std::size_t i = 0; i < keep.size(); ++i) {
    if (keep[i] != 0.0f) rows.push_back(static_cast<int64_t>(i));
  }
  const Tensor p = steps_as_rows(y_pred, mask, "prediction", metric.name());
  const Tensor t = steps_as_rows(y, mask, "target", metric.name());
  const Tensor index = Tensor::from_vector(rows, Shape({static_cast<int64_t>(rows.size())})).to(p.device_ref());
  auto pick = [&](const Tensor& r) {  // gather_rows takes rows of rank >= 2: a rank-1 target as a column
    if (r.shape().rank() >= 2) return osprey::ops::gather_rows(r, index.to(r.device_ref()));
    const Tensor col = osprey::ops::gather_rows(osprey::ops::reshape(r, Shape({r.shape()[0], 1})), index.to(r.device_ref()));
    return osprey::ops::reshape(col, Shape({static_cast<int64_t>(rows.size())}));
  };
  if (w && w->defined()) {  // each sample's weight on each of its unmasked steps, or each step's own
    const auto weights = (w->dtype() == DType::float32 ? *w : osprey::ops::cast(*w, DType::float32)).to_vector<float>();
    const auto per = step_weights(*w, mask, metric.name()) ? 1 : static_cast<std::size_t>(mask.shape()[1]);
    std::vector<float> picked;
    for (int64_t r : rows) picked.push_back(weights.at(static_cast<std::size_t>(r) / per));
    *w = Tensor::from_vector(picked, Shape({static_cast<int64_t>(picked.size())}));
  }
  return {pick(t), pick(p)};
}

void update_metric(const CompiledMetric& m, const Tensor& y, const Tensor& y_pred, const Tensor& w) {
  if (m.weighted && w.defined()) {
    m.metric->update_state(y, y_pred, w);
  } else {
    m.metric->update_state(y, y_pred);
  }
}

void update_metric(const CompiledMetric& m, const Tensor& y, const Tensor& y_pred, const Tensor& mask, const Tensor& w) {
  Tensor weights = m.weighted ? w : Tensor();
  const auto [t, p] = metric_inputs(*m.metric, y, y_pred, mask, &weights);
  update_metric(m, t, p, weights);
}

// Output o's part of a batch's loss (LossPart): with the TF logits shortcut, the loss from logits of the Dense's
// logits, else the compiled loss of its prediction; with the output's mask (undefined: none), Keras's masked loss
// (losses.loss.apply_mask) as its weighted sum and divisor.
static LossPart output_part(const State& s, std::size_t o, const Tensor& y, const std::vector<Tensor>& y_pred,
                            const Tensor& w, const std::vector<Tensor>* logits, const Tensor& mask) {
  const bool from_logits = logits && o < logits->size() && (*logits)[o].defined() && s.logits_losses[o];
  const losses::Loss& loss = from_logits ? *s.logits_losses[o] : *s.losses[o];
  const Tensor& pred = from_logits ? (*logits)[o] : y_pred[o];
  LossPart part;
  part.sum_reduction = loss.reduction() == losses::Reduction::sum;
  if (mask.defined()) {
    const MaskedValues v = masked_values(loss, y, pred, mask, w, s.graph ? s.graph->output_names[o] : loss.name());
    part.masked = true;
    part.value = osprey::ops::reduce_sum(v.weighted);
    part.divisor = masked_divisor(loss, v);
  } else {
    // No copy when already there: a recorded plan reads the weights from its buffer.
    part.value = w.defined() ? loss(y, pred, w) : loss(y, pred);
  }
  return part;
}

// total += loss_weight[o] · value, and value (before its loss weight) into per_output[o].
static void add_output(const State& s, std::size_t o, Tensor value, Tensor& total, std::vector<Tensor>* per_output) {
  if (per_output) (*per_output)[o] = value;
  if (s.loss_weights[o] != 1.0) value = osprey::ops::mul(value, Tensor::scalar(s.loss_weights[o]));
  total = total.defined() ? osprey::ops::add(total, value) : value;
}

// Keras divides a weighted loss by the element count, not by Σw; a masked output's by its own unmasked steps.
Tensor batch_loss(State& s, const std::vector<Tensor>& y, const std::vector<Tensor>& y_pred, const Weights& weights,
                  const std::vector<Tensor>* logits, std::vector<Tensor>* per_output, const std::vector<Tensor>* masks) {
  Tensor total;
  if (per_output) per_output->assign(s.losses.size(), Tensor());
  for (std::size_t o = 0; o < s.losses.size(); ++o) {
    if (!s.losses[o]) continue;
    const Tensor mask = masks && o < masks->size() ? (*masks)[o] : Tensor();
    LossPart p = output_part(s, o, y[o], y_pred, weight_of(weights, o), logits, mask);
    if (p.divisor.defined()) {  // divide_no_nan: nothing unmasked gives 0
      p.value = osprey::ops::div(p.value, osprey::ops::maximum(p.divisor, Tensor::scalar(1e-30)));
    }
    add_output(s, o, std::move(p.value), total, per_output);
  }
  return total;
}

std::vector<LossPart> loss_parts(State& s, const std::vector<Tensor>& y, const std::vector<Tensor>& y_pred,
                                 const Weights& weights, const std::vector<Tensor>* logits,
                                 const std::vector<Tensor>& masks) {
  std::vector<LossPart> parts(s.losses.size());
  for (std::size_t o = 0; o < s.losses.size(); ++o) {
    if (!s.losses[o]) continue;
    parts[o] = output_part(s, o, y[o], y_pred, weight_of(weights, o), logits, o < masks.size() ? masks[o] : Tensor());
  }
  return parts;
}

Tensor combine_parts(const State& s, const std::vector<LossPart>& parts, const std::vector<double>& divisors,
                     double share, std::vector<Tensor>* per_output) {
  Tensor total;
  if (per_output) per_output->assign(parts.size(), Tensor());
  for (std::size_t o = 0; o < parts.size(); ++o) {
    const LossPart& p = parts[o];
    if (!p.value.defined()) continue;
    Tensor value = p.value;
    if (p.divisor.defined()) {
      value = osprey::ops::div(p.value, Tensor::scalar(std::max(divisors.at(o), 1e-30)));
    } else if (!p.masked && !p.sum_reduction && share != 1.0) {
      value = osprey::ops::mul(p.value, Tensor::scalar(share));
    }
    add_output(s, o, value, total, per_output);
  }
  return total;
}

}  // namespace osprey::keras::trainer
