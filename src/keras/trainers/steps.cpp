// Keras's train_step / test_step / predict_step: what fit, evaluate and predict run for each batch, overridable
// by a model subclass; compute_loss and compute_metrics for such overrides.
#include <algorithm>

#include <fmt/format.h>

#include "keras/trainers/trainer.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::keras {

using namespace trainer;

StepData::StepData(std::vector<Tensor> x, std::vector<Tensor> y, Tensor sample_weight)
    : owned_(std::make_unique<Batch>(Batch{std::move(x), std::move(y),
                                           sample_weight.defined() ? Weights{std::move(sample_weight)} : Weights{},
                                           Tensor()})) {
  batch_ = owned_.get();
}
StepData::StepData(const Batch& batch) : batch_(&batch) {}
StepData::~StepData() = default;

// fit's recorded steps take whole arrays and the batch's row indices; anything else reads the gathered rows.
const Batch& StepData::resolved() const {
  if (!batch_->rows.defined()) return *batch_;
  if (!owned_) {
    Batch b;
    for (const auto& t : batch_->x) b.x.push_back(osprey::ops::gather_rows(t, batch_->rows));
    for (const auto& t : batch_->y) b.y.push_back(osprey::ops::gather_rows(t, batch_->rows));
    for (const auto& t : batch_->w) b.w.push_back(t.defined() ? osprey::ops::gather_rows(t, batch_->rows) : Tensor());
    owned_ = std::make_unique<Batch>(std::move(b));
  }
  return *owned_;
}
const std::vector<Tensor>& StepData::x() const { return resolved().x; }
const std::vector<Tensor>& StepData::y() const { return resolved().y; }
const Tensor& StepData::sample_weight() const {
  const auto& w = resolved().w;
  if (w.size() > 1) {
    throw ValueError(fmt::format("StepData::sample_weight(): this batch has sample weights per output ({} of them); "
                                 "read them with sample_weights()",
                                 w.size()));
  }
  return weight_of(w, 0);
}
const std::vector<Tensor>& StepData::sample_weights() const { return resolved().w; }
int64_t StepData::size() const { return batch_->size(); }

namespace trainer {

void set_logs(Logs& logs, const State& s) {
  const auto& per_output = s.loss_means.output_means;
  for (int attempt = 0; attempt < 2; ++attempt) {
    logs["loss"] = s.loss_means.mean();
    for (std::size_t o = 0; o < per_output.size(); ++o) {
      logs[s.graph ? s.graph->output_names[o] + "_loss" : fmt::format("output_{}_loss", o)] = per_output[o];
    }
    std::size_t arrays = 0;
    for (auto& m : s.metrics) {
      if (m.metric->scalar_result()) {
        logs[m.log_name] = m.metric->result();
      } else {  // one value per class or threshold: Keras logs an array
        logs.arrays[m.log_name] = m.metric->result_values();
        ++arrays;
      }
    }
    // Only these keys: a name left by another step (or in the other map) is dropped.
    if (logs.arrays.size() == arrays && logs.size() == 1 + per_output.size() + s.metrics.size() - arrays) return;
    logs.clear();
  }
}

const Tensor& weight_of(const Weights& w, std::size_t o) {
  static const Tensor none;
  return w.empty() ? none : w.size() == 1 ? w[0] : w[o];
}

bool weighted(const Weights& w) {
  return std::any_of(w.begin(), w.end(), [](const Tensor& t) { return t.defined(); });
}

Weights weight_rows(const Weights& w, int64_t b, int64_t e, runtime::Device* device) {
  Weights out;
  out.reserve(w.size());
  for (const auto& t : w) {
    if (!t.defined()) {
      out.emplace_back();
    } else {
      out.push_back(device ? t.slice_rows(b, e).to(*device) : t.slice_rows(b, e));
    }
  }
  return out;
}

std::vector<Tensor> rows_of(const std::vector<Tensor>& ts, int64_t b, int64_t e) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t.slice_rows(b, e));
  return out;
}

// Each output's loss as a number (0 where an output has none).
static const std::vector<double>& values_of(const std::vector<Tensor>& per_output, std::vector<double>& out) {
  out.assign(per_output.size(), 0.0);
  for (std::size_t o = 0; o < per_output.size(); ++o) out[o] = per_output[o].defined() ? per_output[o].item() : 0.0;
  return out;
}

}  // namespace trainer

void Model::train_step(const StepData& data, Logs& logs) {
  auto& s = state();
  const double loss = trainer::train_step(*this, s, data.batch());
  s.loss_means.add(loss, s.output_loss_values, static_cast<double>(data.size()));
  if (s.step_logs) set_logs(logs, s);
}

void Model::test_step(const StepData& data, Logs& logs) {
  auto& s = state();
  const auto& x = data.x();
  auto y = data.y();
  std::vector<Tensor> per_output;
  std::vector<double> values;
  if (distributed(s)) {
    std::vector<std::vector<Tensor>> ys, preds, logits, masks;
    std::vector<Weights> ws;
    const auto& b = data.batch();
    // A model whose outputs may carry masks: the masked losses of the whole batch, as on one device.
    const bool masked = s.graph && s.graph->masked;
    distributed_forward(*this, s, x, &y, ys, preds, &logits, b.local() ? &b.replica_offsets : nullptr,
                        &data.sample_weights(), &ws, masked ? &masks : nullptr);
    // Keras's evaluate loss includes the penalties (activity penalties of this pass: after the forward pass).
    const double penalty = has_penalties(s) ? penalty_sum(s).item() : 0.0;
    // Every replica's part of the batch's loss; a masked output's divisor is the whole batch's.
    std::vector<std::vector<LossPart>> parts(preds.size());
    std::vector<double> divisors(static_cast<std::size_t>(s.num_outputs()), 0.0);
    double rows = 0.0;
    for (size_t r = 0; r < preds.size(); ++r) {
      if (preds[r].empty()) continue;
      Weights& wr = ws[r];
      for (auto& t : wr) {
        if (t.defined()) t = t.to(preds[r][0].device_ref());
      }
      const std::vector<Tensor> no_masks;
      const auto& mr = masked ? masks[r] : no_masks;
      for (auto& m : s.metrics) {
        const auto o = static_cast<std::size_t>(m.output);
        update_metric(m, ys[r][o], preds[r][o], o < mr.size() ? mr[o] : Tensor(), weight_of(wr, o));
      }
      parts[r] = loss_parts(s, ys[r], preds[r], wr, &logits[r], mr);
      for (std::size_t o = 0; o < parts[r].size(); ++o) {
        if (parts[r][o].divisor.defined()) divisors[o] += parts[r][o].divisor.item();
      }
      rows += static_cast<double>(preds[r][0].shape()[0]);
    }
    if (rows > 0) {  // the replicas' shares added up: one entry for the batch
      double loss = 0.0;
      values.assign(static_cast<std::size_t>(s.num_outputs()), 0.0);
      for (size_t r = 0; r < preds.size(); ++r) {
        if (preds[r].empty()) continue;
        loss += combine_parts(s, parts[r], divisors, static_cast<double>(preds[r][0].shape()[0]) / rows, &per_output)
                    .item();
        for (std::size_t o = 0; o < values.size(); ++o) values[o] += per_output[o].defined() ? per_output[o].item() : 0.0;
      }
      s.loss_means.add(loss + penalty, values, rows);
    }
  } else {
    std::vector<Tensor> logits, masks;
    const auto y_pred = forward(*this, s, x, false, &logits, &masks);
    for (std::size_t o = 0; o < y.size(); ++o) {
      if (auto* d = &y_pred[o].device_ref(); &y[o].device_ref() != d) y[o] = y[o].to(*d);
    }
    // Keras's evaluate weighs the loss (and weighted_metrics) by the batch's sample weights.
    Weights w = data.sample_weights();
    for (auto& t : w) {
      if (t.defined() && &t.device_ref() != &y_pred[0].device_ref()) t = t.to(y_pred[0].device_ref());
    }
    const double penalty = has_penalties(s) ? penalty_sum(s).item() : 0.0;
    const double loss = batch_loss(s, y, y_pred, w, &logits, &per_output, &masks).item();
    s.loss_means.add(loss + penalty, values_of(per_output, values), static_cast<double>(data.size()));
    for (auto& m : s.metrics) update_metric(m, y[m.output], y_pred[m.output], masks[m.output], weight_of(w, m.output));
  }
  if (s.step_logs) set_logs(logs, s);
}

std::vector<Tensor> Model::predict_step(const StepData& data) {
  auto& s = state();
  if (!distributed(s)) return forward(*this, s, data.x(), false, nullptr);
  std::vector<std::vector<Tensor>> unused, parts;
  const auto& b = data.batch();
  distributed_forward(*this, s, data.x(), nullptr, unused, parts, nullptr, b.local() ? &b.replica_offsets : nullptr);
  // Replica order is row order: each output's shards joined on the host.
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  std::vector<Tensor> out;
  for (int o = 0; o < s.num_outputs(); ++o) {
    std::vector<Tensor> shards;
    for (const auto& p : parts) {
      if (!p.empty()) shards.push_back(p[o].to(host));
    }
    out.push_back(shards.size() == 1 ? shards[0] : osprey::ops::concat(shards, 0));
  }
  return out;
}

Tensor Model::compute_loss(const StepData& data, const std::vector<Tensor>& y_pred) {
  auto& s = state();
  if (!s.compiled) throw FailedPreconditionError("compute_loss() needs a compiled model: call compile() first.");
  if (y_pred.size() != static_cast<std::size_t>(s.num_outputs()) || data.y().size() != y_pred.size()) {
    throw ValueError(fmt::format("compute_loss(): model '{}' has {} output(s), but got {} prediction(s) and {} "
                                 "target(s)",
                                 name_, s.num_outputs(), y_pred.size(), data.y().size()));
  }
  return with_penalties(s, batch_loss(s, data.y(), y_pred, data.sample_weights(), nullptr));
}

void Model::compute_metrics(const StepData& data, const std::vector<Tensor>& y_pred, const Tensor& loss, Logs& logs) {
  auto& s = state();
  s.loss_means.add(loss.item(), {}, static_cast<double>(data.size()));
  for (auto& m : s.metrics) {
    update_metric(m, data.y()[m.output], y_pred[m.output], weight_of(data.sample_weights(), m.output));
  }
  set_logs(logs, s);
}

}  // namespace osprey::keras
