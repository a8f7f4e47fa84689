// Training and inference steps under a strategy: each replica runs its shard of the global batch.
#include <algorithm>

#include "keras/trainers/trainer.h"
#include "osprey/autodiff.h"
#include "osprey/ops.h"

namespace osprey::keras::trainer {

void prepare_replicas(Model& model, State& s) {
  if (distributed(s)) s.strategy->mirror(model.variables());
}

// The rows of a global batch of B that replica r gets: ceil(B/N) each, the last ones short or empty
// (tf.distribute's rebatching: 4 rows on 3 replicas are 2|2|0).
static std::pair<int64_t, int64_t> replica_rows(int64_t batch, int replicas, int r) {
  const int64_t per = (batch + replicas - 1) / replicas;
  const int64_t b = std::min(batch, per * r);
  return {b, std::min(batch, b + per)};
}

static std::vector<Tensor> shard(const std::vector<Tensor>& ts, int64_t b, int64_t e, runtime::Device& device) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t.slice_rows(b, e).to(device));
  return out;
}

// One training step under a strategy: each replica computes the loss of its shard scaled by the global batch
// (sum of per-sample losses / B), its gradients, the SUM all-reduce, and the same optimizer update on its
// components. Metrics see every shard, in replica order. Returns the global batch's mean loss.
double distributed_train_step(Model& model, State& s, const Batch& batch_in) {
  auto& st = *s.strategy;
  const int n = st.num_replicas();
  const int64_t batch = batch_in.x[0].shape()[0];
  const auto vars = model.trainable_variables();
  s.optimizer->build_slots(vars);  // cross-replica: slots mirrored like the variables
  std::vector<std::vector<Tensor>> xs(n), ys(n), preds(n);
  std::vector<std::vector<Tensor>> grads(n);
  std::vector<double> losses(n, 0.0);
  const bool sharded = st.reduces_on_host() && s.optimizer->shardable();
  if (!sharded) s.optimizer->sync_slots();  // whole-variable updates read every slice of their slots
  s.optimizer->begin_step();  // once per step: the schedule's rate, per-step state
  const bool sum_reduction = s.losses[0] && s.losses[0]->reduction() == losses::Reduction::sum;
  st.run_replicas([&](int r) {
    const auto [b, e] = replica_rows(batch, n, r);
    auto& device = *st.devices()[r];
    grads[r].resize(vars.size());
    if (e > b) {
      xs[r] = shard(batch_in.x, b, e, device);
      ys[r] = shard(batch_in.y, b, e, device);
      GradientTape tape;
      std::vector<Tensor> logits;
      preds[r] = forward(model, s, xs[r], true, &logits);
      // The replica's share of the global batch's mean loss, plus 1/N of the penalties (so that the SUM of the
      // replicas' gradients is the single-device one).
      const Tensor wr = batch_in.w.defined() ? batch_in.w.slice_rows(b, e).to(device) : Tensor();
      // A "sum" reduction adds up across replicas as it is; the means are weighted by the replica's share.
      const double share = sum_reduction ? 1.0 : static_cast<double>(e - b) / batch;
      Tensor loss = ops::mul(batch_loss(s, ys[r], preds[r], wr, &logits), Tensor::scalar(share));
      if (has_penalties(s)) {
        loss = ops::add(loss, ops::mul(penalty_sum(s), Tensor::scalar(1.0 / n)));
      }
      grads[r] = tape.gradient(loss, vars);
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
      s.optimizer->apply_replica_gradients(grads[r], vars);
    }
  });
  s.optimizer->finish_replica_step();
  // The slots' other replica components are copied when something reads them (a replica only reads its own slice
  // of its own component), not every step.
  if (sharded) s.optimizer->defer_slot_sync(n);
  for (auto& l : s.layers) l->apply_constraints();
  double total = 0.0;
  for (int r = 0; r < n; ++r) {
    total += losses[r];
    if (preds[r].empty()) continue;
    for (auto& m : s.metrics) m.metric->update_state(ys[r][m.output], preds[r][m.output]);
  }
  return total;
}

void distributed_forward(Model& model, State& s, const std::vector<Tensor>& x, const std::vector<Tensor>* y,
                         std::vector<std::vector<Tensor>>& ys, std::vector<std::vector<Tensor>>& preds,
                         std::vector<std::vector<Tensor>>* logits) {
  auto& st = *s.strategy;
  const int n = st.num_replicas();
  const int64_t batch = x[0].shape()[0];
  ys.assign(n, {});
  preds.assign(n, {});
  if (logits) logits->assign(n, {});
  st.run_replicas([&](int r) {
    const auto [b, e] = replica_rows(batch, n, r);
    if (e == b) return;
    auto& device = *st.devices()[r];
    preds[r] = forward(model, s, shard(x, b, e, device), false, logits ? &(*logits)[r] : nullptr);
    if (y) ys[r] = shard(*y, b, e, device);
  });
}

}  // namespace osprey::keras::trainer
