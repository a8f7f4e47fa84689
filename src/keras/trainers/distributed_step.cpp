// Training and inference steps under a strategy: each replica runs its shard of the global batch. Under a
// MultiWorkerMirroredStrategy every worker holds the whole global batch and runs the shards of its replicas (global
// replica ids worker × local replicas + r); the predictions and losses of every replica are then gathered from the
// workers, so that losses, metrics and predictions cover the whole global batch, in replica order, on every worker.
#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "distribute/worker_group.h"
#include "keras/trainers/trainer.h"
#include "osprey/autodiff.h"
#include "osprey/ops.h"
#include "tensor/tensor_impl.h"

namespace osprey::keras::trainer {

namespace {

runtime::Device& host() { return runtime::DeviceManager::get().host_device(); }

// Tensors of each replica of this worker, as bytes: per replica its count, then per tensor (defined, dtype, rank,
// dims..., bytes padded to 8).
void put(std::vector<int64_t>& out, const std::vector<Tensor>& ts) {
  out.push_back(static_cast<int64_t>(ts.size()));
  for (const auto& t0 : ts) {
    out.push_back(t0.defined());
    if (!t0.defined()) continue;
    const Tensor t = &t0.device_ref() == &host() ? t0 : t0.to(host());
    out.push_back(static_cast<int64_t>(t.dtype()));
    out.push_back(t.shape().rank());
    for (int64_t d : t.shape().dims()) out.push_back(d);
    const auto words = static_cast<std::size_t>((t.nbytes() + 7) / 8);
    const std::size_t at = out.size();
    out.resize(at + words, 0);
    if (t.nbytes()) std::memcpy(out.data() + at, t.impl()->data(), static_cast<std::size_t>(t.nbytes()));
  }
}

std::vector<Tensor> take(const int64_t*& p, const int64_t* end) {
  auto next = [&] {
    if (p >= end) throw InternalError("a worker's gathered tensors ended early");
    return *p++;
  };
  std::vector<Tensor> out(static_cast<std::size_t>(next()));
  for (auto& t : out) {
    if (!next()) continue;
    const auto dtype = static_cast<DType>(next());
    std::vector<int64_t> dims(static_cast<std::size_t>(next()));
    for (auto& d : dims) d = next();
    t = Tensor::empty(Shape(dims), dtype, &host());
    const auto words = (t.nbytes() + 7) / 8;
    if (end - p < words) throw InternalError("a worker's gathered tensors ended early");
    if (t.nbytes()) std::memcpy(t.impl()->data(), p, static_cast<std::size_t>(t.nbytes()));
    p += words;
  }
  return out;
}

}  // namespace

// Every worker's replicas' tensors: `all` has one entry per replica in sync; this worker's entries are filled, the
// others are filled here (host tensors), in the order the workers hold them.
static void gather_from_workers(distribute::StrategyImpl& st, std::vector<std::vector<Tensor>>& all) {
  auto& group = *st.workers();
  const int n = st.num_replicas(), off = st.replica_offset();
  std::vector<int64_t> mine;
  for (int r = 0; r < n; ++r) put(mine, all[static_cast<std::size_t>(off + r)]);
  const auto sizes = group.all_gather(std::vector<int64_t>{static_cast<int64_t>(mine.size())});
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (int64_t words : sizes) {
    counts.push_back(words * 8);
    total += words;
  }
  std::vector<int64_t> everything(static_cast<std::size_t>(total));
  group.all_gather(mine.data(), everything.data(), counts);
  const int64_t* p = everything.data();
  for (int w = 0; w < group.size(); ++w) {
    const int64_t* end = p + sizes[static_cast<std::size_t>(w)];
    for (int r = 0; r < n; ++r) {
      auto ts = take(p, end);
      if (w != group.rank()) all[static_cast<std::size_t>(w * n + r)] = std::move(ts);
    }
    p = end;
  }
}

void prepare_replicas(Model& model, State& s) {
  if (!distributed(s)) return;
  s.strategy->mirror(model.variables());
  if (s.strategy->num_workers() > 1 && !s.weights_from_chief) {
    auto& group = *s.strategy->workers();
    // Every worker must have built the same model: its variables' count, sizes and shapes (hashed) compared first,
    // so that a mismatch is an error here and not a mangled all-reduce.
    const auto vars = model.variables();
    uint64_t hash = 1469598103934665603ull;  // FNV-1a over the shapes
    int64_t elements = 0;
    for (auto* v : vars) {
      elements += v->num_elements();
      for (int64_t d : v->shape().dims()) hash = (hash ^ static_cast<uint64_t>(d + 1)) * 1099511628211ull;
      hash = (hash ^ 0xffu) * 1099511628211ull;
    }
    const auto all = group.all_gather(std::vector<int64_t>{static_cast<int64_t>(vars.size()), elements,
                                                           static_cast<int64_t>(hash)});
    for (int w = 0; w < group.size(); ++w) {
      const int64_t* theirs = all.data() + 3 * w;
      if (theirs[0] != static_cast<int64_t>(vars.size()) || theirs[1] != elements ||
          theirs[2] != static_cast<int64_t>(hash)) {
        throw ValueError(fmt::format("Worker {}'s model '{}' has {} variables ({} weights), and worker {}'s has {} "
                                     "variables ({} weights){}: every worker of a MultiWorkerMirroredStrategy must "
                                     "build the same model",
                                     group.rank(), model.name(), vars.size(), elements, w, theirs[0], theirs[1],
                                     theirs[0] == static_cast<int64_t>(vars.size()) && theirs[1] == elements
                                         ? " of other shapes"
                                         : ""));
      }
    }
    // The chief's values in every component of every variable (TensorFlow broadcasts initial values the same way).
    for (auto* v : model.variables()) {
      Tensor value = v->component(0).to(host());
      group.broadcast(value.impl()->data(), value.nbytes(), 0);
      for (int c = 0; c < v->num_components(); ++c) {
        const Tensor& component = v->component(c);
        runtime::Device& d = component.device_ref();
        if (component.impl()->data() == value.impl()->data()) continue;  // broadcast into it already
        if (d.host_memory()) {
          std::memcpy(component.impl()->data(), value.impl()->data(), static_cast<std::size_t>(value.nbytes()));
        } else {
          d.platform().copy(d, component.impl()->data(), true, value.impl()->data(), false,
                            static_cast<std::size_t>(value.nbytes()));
        }
      }
    }
    s.weights_from_chief = true;
  }
}

// The rows of a global batch of B that replica r gets: ceil(B/N) each, the last ones short or empty
// (tf.distribute's rebatching: 4 rows on 3 replicas are 2|2|0).
using distribute::replica_rows;

// The rows local replica r takes of the batch this worker holds: its pieces of a worker-local batch (`local`), or
// its share of the whole global batch.
static std::pair<int64_t, int64_t> rows_for(const std::vector<int64_t>* local, int64_t batch, const State& s, int r) {
  if (local) return {(*local)[static_cast<std::size_t>(r)], (*local)[static_cast<std::size_t>(r) + 1]};
  return replica_rows(batch, s.strategy->num_replicas_in_sync(), s.strategy->replica_offset() + r);
}

// Another worker's replica's weights: the tensors [at, end) it sent after its labels (a worker-local batch's
// weights travel with them), as many as this worker's `like` holds (every worker's copy of the dataset gives the
// same structure); ValueError when the counts say otherwise.
static Weights weights_sent(std::vector<Tensor>::const_iterator at, std::vector<Tensor>::const_iterator end,
                            const Weights& like, int q) {
  if (end - at != static_cast<std::ptrdiff_t>(like.size())) {
    throw ValueError(fmt::format("Replica {} of a worker-local batch (auto_shard_policy OFF) sent {} sample weight "
                                 "tensor(s), this worker's batch has {}: every worker's copy of the dataset must give "
                                 "the same (x, y, sample_weight) elements",
                                 q, end - at, like.size()));
  }
  return Weights(at, end);
}

// A masked model's replica sends one tensor per output: its mask as float32, or undefined where it has none.
static void append_masks(std::vector<Tensor>& out, const std::vector<Tensor>& masks, std::size_t outputs) {
  for (std::size_t o = 0; o < outputs; ++o) {
    const Tensor m = o < masks.size() ? masks[o] : Tensor();
    out.push_back(!m.defined() || m.dtype() == DType::float32 ? m : osprey::ops::cast(m, DType::float32));
  }
}

// The masks another replica sent (append_masks), from `at`.
static std::vector<Tensor> masks_sent(std::vector<Tensor>::const_iterator at, std::size_t outputs) {
  return std::vector<Tensor>(at, at + static_cast<std::ptrdiff_t>(outputs));
}


static std::vector<Tensor> shard(const std::vector<Tensor>& ts, int64_t b, int64_t e, runtime::Device& device) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t.slice_rows(b, e).to(device));
  return out;
}

// The divisors of a global batch's masked losses, per output: every replica's (0 for an empty shard, or an output
// without a mask) added up across the replicas and workers. Every replica calls this (a collective).
static std::vector<double> global_divisors(distribute::StrategyImpl& st, int r, const std::vector<LossPart>& parts,
                                           std::size_t outputs) {
  std::vector<float> mine(outputs, 0.0f);
  for (std::size_t o = 0; o < parts.size() && o < outputs; ++o) {
    if (parts[o].divisor.defined()) mine[o] = static_cast<float>(parts[o].divisor.item());
  }
  const Tensor total = st.merge(r, Tensor::from_vector(mine, Shape({static_cast<int64_t>(outputs)})),
                                VariableAggregation::SUM);
  Tensor h = total.to(host());
  if (h.dtype() != DType::float64) h = h.cast(DType::float64);
  return h.to_vector<double>();
}

// One training step under a strategy: each replica computes the loss of its shard scaled by the global batch
// (sum of per-sample losses / B), its gradients, the SUM all-reduce, and the same optimizer update on its
// components. Metrics see every shard, in replica order. Returns the global batch's mean loss.
double distributed_train_step(Model& model, State& s, const Batch& batch_in) {
  auto& st = *s.strategy;
  const int n = st.num_replicas(), in_sync = st.num_replicas_in_sync(), off = st.replica_offset();
  const int64_t batch = batch_in.x[0].shape()[0];
  const std::vector<int64_t>* local = batch_in.local() ? &batch_in.replica_offsets : nullptr;
  // What the replicas' mean losses are shares of: the global batch (over every worker's local rows).
  const int64_t global = local ? batch_in.global_rows : batch;
  const auto vars = model.trainable_variables();
  s.optimizer->build_slots(vars);  // cross-replica: slots mirrored like the variables
  std::vector<std::vector<Tensor>> xs(n), ys(n), preds(n);
  std::vector<std::vector<Tensor>> grads(n);
  std::vector<double> losses(n, 0.0);
  // With loss scaling, the update waits until every replica knows whether the all-reduced gradients are finite
  // (the same answer everywhere): the replicas reduce, then apply in a second round, or the step is skipped.
  const bool scaled = s.optimizer->loss_scale() != nullptr;
  std::vector<char> finite(static_cast<std::size_t>(n), 1);
  const bool sharded = !scaled && st.reduces_on_host() && s.optimizer->shardable() && st.num_workers() == 1;
  if (!sharded) s.optimizer->sync_slots();  // whole-variable updates read every slice of their slots
  if (!scaled) s.optimizer->begin_step();  // once per step: the schedule's rate, per-step state
  // A multi-output model logs each output's loss: the replicas' shares of it, added up as the total is.
  const auto outputs = static_cast<std::size_t>(s.num_outputs());
  const std::size_t logged = outputs > 1 ? outputs : 0;
  std::vector<std::vector<double>> output_losses(static_cast<std::size_t>(n), std::vector<double>(logged, 0.0));
  // A model whose outputs may carry masks (Embedding's mask_zero): each replica's masked losses are sums over the
  // divisors of the whole global batch (its unmasked steps), which the replicas add up first (merge).
  const bool masked = s.graph && s.graph->masked;
  std::vector<std::vector<Tensor>> masks(static_cast<std::size_t>(n));
  std::vector<Weights> weights(static_cast<std::size_t>(n));  // each local replica's rows of the batch's weights
  st.run_replicas([&](int r) {
    const auto [b, e] = rows_for(local, batch, s, r);
    auto& device = *st.devices()[r];
    grads[r].resize(vars.size());
    const auto ri = static_cast<std::size_t>(r);
    std::optional<GradientTape> tape;
    std::vector<Tensor> logits;
    std::vector<LossPart> parts;
    if (e > b) {
      xs[r] = shard(batch_in.x, b, e, device);
      ys[r] = shard(batch_in.y, b, e, device);
      tape.emplace();
      preds[r] = forward(model, s, xs[r], true, &logits, masked ? &masks[ri] : nullptr);
      weights[ri] = weight_rows(batch_in.w, b, e, &device);
      parts = loss_parts(s, ys[r], preds[r], weights[ri], &logits, masks[ri]);
    }
    const std::vector<double> divisors = masked ? global_divisors(st, r, parts, outputs) : std::vector<double>{};
    if (e > b) {
      // The replica's share of the global batch's loss, plus 1/N of the penalties (so that the SUM of the replicas'
      // gradients is the single-device one): a mean loss times the replica's rows over the global batch's, a "sum"
      // as it is, a masked output's sum over the global batch's divisor.
      std::vector<Tensor> per_output;
      Tensor loss = combine_parts(s, parts, divisors, static_cast<double>(e - b) / global, logged ? &per_output : nullptr);
      for (std::size_t o = 0; o < logged; ++o) {
        if (per_output[o].defined()) output_losses[ri][o] = per_output[o].item();
      }
      if (has_penalties(s)) {
        loss = osprey::ops::add(loss, osprey::ops::mul(penalty_sum(s), Tensor::scalar(1.0 / in_sync)));
      }
      grads[r] = tape->gradient(s.optimizer->scale_loss(loss), vars);
      losses[r] = loss.item();
    }
    for (size_t j = 0; j < vars.size(); ++j) {  // an empty shard (or an unused variable) contributes zeros
      if (!grads[r][j].defined()) grads[r][j] = Tensor::zeros(vars[j]->shape());
    }
    if (sharded) {  // logical CPUs: each replica reduces and updates its slice of every variable, once
      st.reduce_own_slices(grads, r);
      s.optimizer->apply_sharded_gradients(grads[0], vars, r, n);
    } else {
      st.all_reduce_sum(grads, r);
      if (scaled) {
        std::vector<Tensor> unscaled;
        finite[static_cast<std::size_t>(r)] = s.optimizer->unscale_gradients(grads[r], unscaled);
        grads[r] = std::move(unscaled);
      } else {
        s.optimizer->apply_replica_gradients(grads[r], vars);
      }
    }
  });
  if (scaled) {
    const bool ok = std::all_of(finite.begin(), finite.end(), [](char f) { return f != 0; });
    if (ok) {
      s.optimizer->begin_step();
      st.run_replicas([&](int r) { s.optimizer->apply_replica_gradients(grads[r], vars); });
      s.optimizer->finish_replica_step();
    }
    s.optimizer->update_loss_scale(ok);
  } else {
    s.optimizer->finish_replica_step();
  }
  // The slots' other replica components are copied when something reads them (a replica only reads its own slice
  // of its own component), not every step.
  if (sharded) s.optimizer->defer_slot_sync(n);
  for (auto& l : s.layers) l->apply_constraints();
  double total = 0.0;
  s.output_loss_values.assign(logged, 0.0);
  const bool any_weighted = std::any_of(s.metrics.begin(), s.metrics.end(), [](auto& m) { return m.weighted; });
  if (st.num_workers() == 1) {
    for (int r = 0; r < n; ++r) {
      total += losses[r];
      for (std::size_t o = 0; o < logged; ++o) s.output_loss_values[o] += output_losses[static_cast<std::size_t>(r)][o];
      if (preds[r].empty()) continue;
      const auto& mr = masks[static_cast<std::size_t>(r)];
      for (auto& m : s.metrics) {
        const auto o = static_cast<std::size_t>(m.output);
        update_metric(m, ys[r][o], preds[r][o], o < mr.size() ? mr[o] : Tensor(), weight_of(weights[r], o));
      }
    }
    return total;
  }
  // Several workers: every replica's predictions and loss (a multi-output model's per-output losses after it, a
  // masked model's masks per output, and with worker-local batches, labels), in replica order, on every worker.
  std::vector<std::vector<Tensor>> all(static_cast<std::size_t>(in_sync));
  for (int r = 0; r < n; ++r) {
    auto& mine = all[static_cast<std::size_t>(off + r)];
    if (preds[r].empty()) continue;
    mine = preds[r];
    mine.push_back(Tensor::scalar(losses[r], DType::float64));
    for (double v : output_losses[static_cast<std::size_t>(r)]) mine.push_back(Tensor::scalar(v, DType::float64));
    if (masked) append_masks(mine, masks[static_cast<std::size_t>(r)], outputs);
    if (local) {
      mine.insert(mine.end(), ys[r].begin(), ys[r].end());
      // (weighted_metrics need every replica's weights; a worker-local batch's are only on its worker)
      if (any_weighted) mine.insert(mine.end(), weights[r].begin(), weights[r].end());
    }
  }
  gather_from_workers(st, all);
  for (int q = 0; q < in_sync; ++q) {
    auto& p = all[static_cast<std::size_t>(q)];
    if (p.empty()) continue;
    total += p[outputs].item();
    for (std::size_t o = 0; o < logged; ++o) s.output_loss_values[o] += p[outputs + 1 + o].item();
    const bool mine = q >= off && q < off + n;
    const auto masks_at = p.begin() + static_cast<std::ptrdiff_t>(outputs + 1 + logged);
    const std::vector<Tensor> mq = masked ? masks_sent(masks_at, outputs) : std::vector<Tensor>{};
    std::vector<Tensor> y;
    Weights wq;
    if (mine) {
      y = ys[q - off];
      wq = weights[static_cast<std::size_t>(q - off)];
    } else if (local) {
      const auto y_at = masks_at + static_cast<std::ptrdiff_t>(masked ? outputs : 0);
      const auto w_at = y_at + static_cast<std::ptrdiff_t>(outputs);
      y.assign(y_at, w_at);
      if (any_weighted) wq = weights_sent(w_at, p.end(), batch_in.w, q);
    } else {
      const auto [b, e] = replica_rows(batch, in_sync, q);
      y = shard(batch_in.y, b, e, host());
      wq = weight_rows(batch_in.w, b, e);
    }
    for (auto& m : s.metrics) {
      const auto o = static_cast<std::size_t>(m.output);
      update_metric(m, y[o], p[o], masked ? mq[o] : Tensor(), weight_of(wq, o));
    }
  }
  return total;
}

void distributed_forward(Model& model, State& s, const std::vector<Tensor>& x, const std::vector<Tensor>* y,
                         std::vector<std::vector<Tensor>>& ys, std::vector<std::vector<Tensor>>& preds,
                         std::vector<std::vector<Tensor>>* logits, const std::vector<int64_t>* local,
                         const Weights* w, std::vector<Weights>* ws, std::vector<std::vector<Tensor>>* masks) {
  auto& st = *s.strategy;
  const int n = st.num_replicas(), in_sync = st.num_replicas_in_sync(), off = st.replica_offset();
  const int64_t batch = x[0].shape()[0];
  ys.assign(in_sync, {});
  preds.assign(in_sync, {});
  if (logits) logits->assign(in_sync, {});
  const bool weights = w && ws && weighted(*w);
  if (ws) ws->assign(in_sync, {});
  if (masks) masks->assign(in_sync, {});
  st.run_replicas([&](int r) {
    const auto [b, e] = rows_for(local, batch, s, r);
    if (e == b) return;
    auto& device = *st.devices()[r];
    preds[off + r] = forward(model, s, shard(x, b, e, device), false, logits ? &(*logits)[off + r] : nullptr,
                             masks ? &(*masks)[static_cast<std::size_t>(off + r)] : nullptr);
    if (y) ys[off + r] = shard(*y, b, e, device);
    if (weights) (*ws)[off + r] = weight_rows(*w, b, e);
  });
  if (weights && !local) {  // every worker holds the global batch: each replica's rows of its weights
    for (int q = 0; q < in_sync; ++q) {
      const auto [b, e] = replica_rows(batch, in_sync, q);
      if (e > b) (*ws)[static_cast<std::size_t>(q)] = weight_rows(*w, b, e);
    }
  }
  if (st.num_workers() == 1) return;
  // Several workers: the other workers' predictions (and logits, masks); their labels from the global batch, or with
  // worker-local batches gathered too.
  const auto outputs = static_cast<std::size_t>(s.num_outputs());
  const bool send_y = y && local;
  if (logits || masks || send_y) {
    for (int r = 0; r < n; ++r) {
      auto& p = preds[static_cast<std::size_t>(off + r)];
      if (p.empty()) continue;
      if (logits) {
        auto& l = (*logits)[static_cast<std::size_t>(off + r)];
        l.resize(outputs);
        p.insert(p.end(), l.begin(), l.end());
      }
      if (masks) append_masks(p, (*masks)[static_cast<std::size_t>(off + r)], outputs);
      if (send_y) p.insert(p.end(), ys[static_cast<std::size_t>(off + r)].begin(), ys[static_cast<std::size_t>(off + r)].end());
      if (send_y && weights) {  // a worker-local batch's weights travel with its labels
        const Weights& mine = (*ws)[static_cast<std::size_t>(off + r)];
        p.insert(p.end(), mine.begin(), mine.end());
      }
    }
  }
  gather_from_workers(st, preds);
  for (int q = 0; q < in_sync; ++q) {
    auto& p = preds[static_cast<std::size_t>(q)];
    if (p.empty()) continue;
    const auto at = [&](std::size_t k) { return p.begin() + static_cast<std::ptrdiff_t>(k); };
    const std::size_t masks_at = logits ? 2 * outputs : outputs;
    const std::size_t y_at = masks ? masks_at + outputs : masks_at;
    const bool theirs = q < off || q >= off + n;
    if (masks && theirs) (*masks)[static_cast<std::size_t>(q)] = masks_sent(at(masks_at), outputs);
    if (send_y) {
      const auto y_end = weights ? at(y_at + outputs) : p.end();
      ys[static_cast<std::size_t>(q)].assign(at(y_at), y_end);
      if (weights && theirs) (*ws)[static_cast<std::size_t>(q)] = weights_sent(y_end, p.end(), *w, q);
    }
    if (logits) (*logits)[static_cast<std::size_t>(q)].assign(at(outputs), at(2 * outputs));
    p.resize(outputs);
    if (y && !local && (q < off || q >= off + n)) {
      const auto [b, e] = replica_rows(batch, in_sync, q);
      ys[static_cast<std::size_t>(q)] = shard(*y, b, e, host());
    }
  }
}

}  // namespace osprey::keras::trainer
