// The training engine's pieces shared by its files: the forward pass, losses, and one step of training. Private.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <memory>
#include <vector>

#include "keras/models/model_state.h"

namespace osprey::keras::trainer {

using State = Model::State;

/// A batch's sample weights: none (empty), one tensor weighing every output, or one per output in the outputs'
/// order (Keras's list or dict of them; an undefined one leaves its output unweighted).
using Weights = std::vector<Tensor>;
/// Output o's sample weights (undefined: none).
const Tensor& weight_of(const Weights& w, std::size_t o);
/// Whether any output is weighted.
bool weighted(const Weights& w);
/// Rows [b, e) of each weight tensor (undefined ones stay so); the same moved to `device` when given.
Weights weight_rows(const Weights& w, int64_t b, int64_t e, runtime::Device* device = nullptr);

/// One batch: x (one tensor per input), y (one per output) and w, or, when `rows` is defined, those rows of them
/// (host tensors: fit's shuffled order, gathered by the step itself).
struct Batch {
  std::vector<Tensor> x, y;
  Weights w;
  Tensor rows;
  /// Set when the batch holds this worker's rows only (a dataset with AutoShardPolicy::OFF under a
  /// MultiWorkerMirroredStrategy): local replica r takes rows [replica_offsets[r], replica_offsets[r + 1]), and the
  /// step's global batch has global_rows rows over every worker. Empty: the batch is the whole global batch.
  std::vector<int64_t> replica_offsets{};
  int64_t global_rows = 0;
  bool local() const { return !replica_offsets.empty(); }
  /// The global batch's rows.
  int64_t size() const { return local() ? global_rows : rows.defined() ? rows.shape()[0] : x[0].shape()[0]; }
};

/// True when steps run on several replicas (a strategy with more than one device, or several workers).
inline bool distributed(const State& s) { return s.strategy && s.strategy->num_replicas_in_sync() > 1; }
/// Whether this process prints progress (the chief of a multi-worker strategy, or any process without one).
inline bool prints_progress(const State& s) { return !s.strategy || s.strategy->is_chief(); }

/// Checks a batch of inputs (count, rank, per-sample shape) before any computation; builds a Sequential model on
/// first use.
void check_inputs(Model& model, State& s, const std::vector<Tensor>& xs);
/// The forward pass; with `logits` and the TF logits shortcut compiled in, each output's Dense also leaves its
/// pre-activation there.
/// With `masks`, each output's mask (undefined where it has none; a loss follows: without `masks`, an output mask is
/// a ValueError, as where Osprey does not weight losses by them yet).
/// Outputs computed in half precision (a mixed policy) come back as float32 for the losses, metrics and predict()
/// (Keras's losses and metrics cast them), unless `float32_outputs` is false (an eager model(x): the compute dtype).
std::vector<Tensor> forward(Model& model, State& s, const std::vector<Tensor>& xs, bool training,
                            std::vector<Tensor>* logits, std::vector<Tensor>* masks = nullptr,
                            bool float32_outputs = true);
/// The compiled loss of a batch, Σ loss_weight·loss per output (with sample weights when given: Σ(w·loss_i) / n).
/// `per_output`, when given, receives each output's unweighted loss (multi-output models log them). An output with
/// a mask in `masks` has Keras's masked loss: its steps' losses weighted by the mask, over the unmasked steps.
Tensor batch_loss(State& s, const std::vector<Tensor>& y, const std::vector<Tensor>& y_pred, const Weights& w,
                  const std::vector<Tensor>* logits, std::vector<Tensor>* per_output = nullptr,
                  const std::vector<Tensor>* masks = nullptr);
/// An output's part of a batch's loss when replicas share the batch: for an output carrying a mask, the weighted
/// sum of its steps' losses (`value`) and what the reduction divides it by (`divisor`: the unmasked steps, or the
/// weights' sum; undefined for "sum"), so that a strategy divides every replica's sum by the divisors added up over
/// the global batch (the single device's loss); for the other outputs the replica's loss itself.
struct LossPart {
  Tensor value, divisor;
  bool masked = false, sum_reduction = false;
};
/// The parts of a batch's compiled loss, per output (`masks`: each output's mask, undefined where none).
std::vector<LossPart> loss_parts(State& s, const std::vector<Tensor>& y, const std::vector<Tensor>& y_pred,
                                 const Weights& w, const std::vector<Tensor>* logits, const std::vector<Tensor>& masks);
/// Σ loss_weight · loss per output from the parts: a masked output's sum over `divisors[o]` (the global batch's),
/// another output's loss times `share` (the replica's rows over the global batch's; not for a "sum" reduction).
/// `per_output` receives each output's value before its loss weight.
Tensor combine_parts(const State& s, const std::vector<LossPart>& parts, const std::vector<double>& divisors,
                     double share, std::vector<Tensor>* per_output = nullptr);
/// What a metric sees of an output: (y, y_pred), or with the output's mask and a mean metric (Keras's
/// MeanMetricWrapper family weights them by the mask) only the unmasked steps, each step a row.
/// With `w` (one weight per sample, or one per step (batch, steps)), a picked step gets its sample's weight or its
/// own (`w` is replaced by the steps').
std::pair<Tensor, Tensor> metric_inputs(const metrics::Metric& metric, const Tensor& y, const Tensor& y_pred,
                                        const Tensor& mask, Tensor* w = nullptr);
/// Adds a batch to a compiled metric: a weighted one (compile's weighted_metrics) with the batch's sample weights
/// `w` (when defined), the others without.
void update_metric(const CompiledMetric& m, const Tensor& y, const Tensor& y_pred, const Tensor& w);
/// The same through metric_inputs: with the output's mask (undefined: none) a mean metric sees the unmasked steps.
void update_metric(const CompiledMetric& m, const Tensor& y, const Tensor& y_pred, const Tensor& mask, const Tensor& w);
bool has_penalties(State& s);
/// Σ of every layer's weight penalties (a scalar 0 without any).
Tensor penalty_sum(State& s);
/// The training loss Keras reports: the compiled loss plus the layers' regularization losses.
Tensor with_penalties(State& s, const Tensor& loss);
/// Whether training steps are recorded and replayed.
bool plannable(const State& s);
/// Whether a recorded step takes x, y and w as its batch.
bool planned_takes(const State& s, const Batch& b);
/// One training step: y_pred = model(x), the loss, its gradient and one optimizer update. Returns the batch loss.
double train_step(Model& model, State& s, const Batch& b);
/// The forward pass of a global batch under a strategy: each replica runs its shard. The shards' labels and
/// predictions (per output) in replica order; empty shards are left undefined.
/// `local`: the local replicas' row offsets when x and y hold this worker's rows only (Batch::replica_offsets).
/// With `w` (the batch's sample weights) and `ws`, ws[q] receives replica q's weights (a worker-local batch's from
/// the worker that holds them); with `masks`, masks[q] each output's mask of replica q (undefined where none).
void distributed_forward(Model& model, State& s, const std::vector<Tensor>& x, const std::vector<Tensor>* y,
                         std::vector<std::vector<Tensor>>& ys, std::vector<std::vector<Tensor>>& preds,
                         std::vector<std::vector<Tensor>>* logits = nullptr,
                         const std::vector<int64_t>* local = nullptr, const Weights* w = nullptr,
                         std::vector<Weights>* ws = nullptr, std::vector<std::vector<Tensor>>* masks = nullptr);
/// Makes every variable of the model one component per replica (created in scope() they already are).
void prepare_replicas(Model& model, State& s);
/// A model's x or y in the order of its inputs (`inputs`) or outputs: a list of the right length (moved out of
/// `a`), or a map whose keys are exactly their names. ValueError naming what the model takes otherwise.
std::vector<Tensor> resolve(Arrays&& a, Model& model, const State& s, bool inputs, const char* fn);
/// x and y of a call in the model's order, checked: defined, the same number of rows, finite values, inputs the
/// model takes. `y` may be null (predict).
std::pair<std::vector<Tensor>, std::vector<Tensor>> data_of(Model& model, State& s, Arrays x, Arrays* y,
                                                            const char* fn);
/// The batch size of fit/evaluate/predict (default 32; ValueError unless positive).
int resolve_batch_size(const std::optional<int>& b, const char* fn);
/// The sample weights of fit/evaluate's n rows, on the host: sample_weight times class_weight[label] (empty when
/// neither is given; an empty sample_weight, or one undefined tensor, is none). sample_weight: one tensor for every output (one weight per sample, or per position of a
/// single output's values), or one per output (a list in the outputs' order or a map by their names), as Keras's;
/// class_weight: single-output models only. ValueError naming the shapes otherwise.
Weights sample_weights(Model& model, int64_t n, const std::vector<Tensor>& ys, const std::optional<Arrays>& sample_weight,
                       const std::map<int, double>& class_weight = {}, const char* fn = "fit");
/// Writes a batch's logs: the loss, the per-output losses of a multi-output model, the metrics; the previous
/// batch's entries are overwritten in place unless a callback changed the keys.
void set_logs(Logs& logs, const State& s);
/// Callbacks in the order fit/evaluate/predict call them.
struct CallbackList {
  std::vector<std::shared_ptr<Callback>> all;
  void each(const std::function<void(Callback&)>& f) {
    for (auto& c : all) f(*c);
  }
};
/// Batches of batch_size in n rows.
int steps_of(int64_t n, int batch_size);
/// The batches evaluate/predict run on a dataset: `steps`, else its length (-1: until it ends); ValueError for a
/// dataset that repeats for ever without steps.
int dataset_steps(const data::Dataset& d, const std::optional<int>& steps, const char* fn);
/// The device batches are copied to ahead of the step: the model's, unless it is the host or replicas split them.
runtime::Device* copy_target(const State& s);
/// The whole rows [b, e) of each tensor.
std::vector<Tensor> rows_of(const std::vector<Tensor>& ts, int64_t b, int64_t e);

}  // namespace osprey::keras::trainer
