// The training engine every model shares (Keras's Trainer): compile, fit, evaluate, predict and the *_on_batch
// calls, over one or several inputs and outputs.
#include <chrono>
#include <climits>
#include <cmath>
#include <functional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/logging.h"
#include "keras/trainers/data_adapters.h"
#include "keras/trainers/trainer.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::keras {

using namespace trainer;


// Gives the evaluation's next batch; false at the end.
using NextBatch = std::function<bool(Batch&)>;

// Evaluates batches with test_step into `logs` (loss + metrics), calling test hooks: `steps` of them, or (-1)
// until next() ends.
static void run_evaluation(Model& model, State& s, int steps, const NextBatch& next, CallbackList& cbs, Logs& logs) {
  s.reset_metrics();
  Logs empty;
  cbs.each([&](Callback& c) { c.on_test_begin(empty); });
  Batch batch;
  for (int step = 0; steps < 0 || step < steps; ++step) {
    if (!next(batch)) {
      if (step == 0) throw ValueError("evaluate: the data gave no batches; there is nothing to evaluate");
      break;
    }
    cbs.each([&](Callback& c) { c.on_test_batch_begin(step, empty); });
    const StepData data(batch);
    logs.clear();
    model.test_step(data, logs);
    cbs.each([&](Callback& c) { c.on_test_batch_end(step, logs); });
  }
  cbs.each([&](Callback& c) { c.on_test_end(logs); });
}

// Batches of `batch_size` rows of x, y (and the sample weights w, when defined), in order.
static NextBatch array_batches(const std::vector<Tensor>& x, const std::vector<Tensor>& y, int batch_size,
                               const Weights& w = {}) {
  return [&x, &y, w, batch_size, at = int64_t{0}](Batch& b) mutable {
    const int64_t n = x[0].shape()[0];
    if (at >= n) return false;
    const int64_t e = std::min<int64_t>(n, at + batch_size);
    b = Batch{rows_of(x, at, e), rows_of(y, at, e), weight_rows(w, at, e), Tensor()};
    at = e;
    return true;
  };
}

int trainer::steps_of(int64_t n, int batch_size) { return static_cast<int>((n + batch_size - 1) / batch_size); }

int trainer::dataset_steps(const data::Dataset& d, const std::optional<int>& steps, const char* fn) {
  if (steps) {
    if (*steps <= 0) throw ValueError(fmt::format("{}: steps must be positive, got {}", fn, *steps));
    return *steps;
  }
  const int64_t c = d.cardinality();
  if (c == data::INFINITE_CARDINALITY) {
    throw ValueError(fmt::format("{}: the dataset repeats for ever ({}); give `steps`, the number of batches to use",
                                 fn, d.describe()));
  }
  return c >= 0 ? static_cast<int>(std::min<int64_t>(c, INT_MAX)) : -1;
}

// batch_size and validation_split slice arrays; a source that makes its own batches (`what`) takes neither.
static void reject_array_options(const FitOptions& o, const char* what) {
  if (o.batch_size) {
    throw ValueError(fmt::format("fit: batch_size={} cannot be used with a {}: it makes the batches. Remove "
                                 "batch_size.",
                                 *o.batch_size, what));
  }
  if (o.validation_split > 0.0) {
    throw ValueError(fmt::format("fit: `validation_split` is only supported for Tensors, not for a {}; pass "
                                 "validation_data instead.",
                                 what));
  }
}

// A source that makes its batches gives their sample weights with them (Keras's ValueError for sample_weight=).
static void reject_sample_weight(const FitOptions& o, const char* what, const char* where) {
  if (o.sample_weight) {
    throw ValueError(fmt::format("fit: the `sample_weight` argument is not supported when the data is a {}: give "
                                 "each batch's weights with it ({}), as Keras's (x, y, sample_weight) batches",
                                 what, where));
  }
}

static void check_fit_options(const FitOptions& o) {
  if (o.epochs < 0) throw ValueError(fmt::format("fit: epochs must be >= 0, got {}", o.epochs));
  if (o.verbose < 0 || o.verbose > 2) throw ValueError(fmt::format("fit: verbose must be 0, 1 or 2, got {}", o.verbose));
  if (!(o.validation_split >= 0.0 && o.validation_split < 1.0)) {  // NaN too
    throw ValueError(fmt::format("fit: validation_split must be in [0, 1), got {}", o.validation_split));
  }
}

// fit()'s validation data: arrays, or a dataset with validation_steps.
struct Validation {
  std::optional<std::pair<std::vector<Tensor>, std::vector<Tensor>>> arrays;
  Weights w;  // the arrays' sample weights (empty: none)
  std::optional<data::Dataset> dataset;
  std::optional<int> steps;
  explicit operator bool() const { return arrays || dataset; }
};

static Validation validation_of(Model& model, State& s, FitOptions& o) {
  Validation val;
  val.steps = o.validation_steps;
  if (o.validation_data.dataset) val.dataset = o.validation_data.dataset;
  else if (o.validation_data.given()) {
    val.arrays = data_of(model, s, o.validation_data.x, &o.validation_data.y, "fit (validation_data)");
    val.w = sample_weights(model, val.arrays->first[0].shape()[0], val.arrays->second, o.validation_data.sample_weight,
                           {}, "fit (validation_data)");
  } else if (!o.validation_data.sample_weight.tensors.empty()) {
    throw ValueError("fit: validation_data's sample_weight needs validation arrays (a Dataset gives its weights as "
                     "its elements' third item)");
  }
  return val;
}

runtime::Device* trainer::copy_target(const State& s) {
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  return s.device && s.device != &host && !distributed(s) ? s.device : nullptr;
}

static void validate(Model& model, State& s, const Validation& val, int batch_size, CallbackList& cbs, Logs& logs) {
  if (val.arrays) {
    const auto& [x, y] = *val.arrays;
    const int steps = steps_of(x[0].shape()[0], batch_size);
    run_evaluation(model, s, val.steps ? std::min(*val.steps, steps) : steps, array_batches(x, y, batch_size, val.w),
                   cbs, logs);
    return;
  }
  PipelineSource source(*val.dataset, model, s, "fit (validation_data)", true, nullptr, copy_target(s));
  source.begin_pass();
  run_evaluation(model, s, val.steps ? *val.steps : -1, [&](Batch& b) { return source.next(b); }, cbs, logs);
}

// A subclassed model's layers make their variables at its first call: Keras builds the model on the first batch
// before any train_step, so that an overriding step finds its trainable_variables(). An inference pass does it.
static void build_subclass(Model& model, State& s, const StepData& data) {
  if (!s.subclassed || s.subclass_built) return;
  (void)model.call_all(data.x(), false);
  s.subclass_built = true;
}

// The epoch loop every fit() shares (arrays, PyDataset, generator): callbacks in Keras's order, batch-size-weighted epoch loss, validation,
// and the time spent waiting for batches against the time spent training on them.
static FitHistory fit_loop(Model& model, State& s, BatchSource& source, const FitOptions& o, const Validation& val,
                           int val_batch_size) {
  const int64_t per_pass = source.batches_per_pass();
  // A pass of unknown length without steps_per_epoch: each epoch runs until the data ends (Keras's "Unknown").
  const bool until_end = !o.steps_per_epoch && source.ends_pass_itself();
  const int steps = o.steps_per_epoch ? *o.steps_per_epoch
                    : until_end       ? INT_MAX
                                      : static_cast<int>(std::min<int64_t>(per_pass, INT_MAX));
  if (steps <= 0) throw ValueError(fmt::format("fit: steps_per_epoch must be positive, got {}", steps));

  auto history = std::make_shared<History>();
  CallbackList cbs;
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(history);
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  TrainingParams params{prints_progress(s) ? o.verbose : 0, o.epochs, until_end ? -1 : steps};
  cbs.each([&](Callback& c) {
    c.set_model(&model);
    c.set_params(params);
  });
  FitHistory out;
  using clock = std::chrono::steady_clock;
  model.stop_training = false;
  Logs logs;
  s.resume_from.reset();
  s.fit_position = {};
  cbs.each([&](Callback& c) { c.on_train_begin(logs); });
  int64_t left_in_pass = 0;  // steps_per_epoch continues a pass across epochs
  auto& at = s.fit_position;
  // A new pass: its order is drawn from the global generator, whose state before it is kept (BackupAndRestore).
  auto begin_pass = [&] {
    std::tie(at.pass_seed, at.pass_stream) = random::global_state();
    source.begin_pass();
    left_in_pass = per_pass;
    at.pass_used = 0;
  };
  // BackupAndRestore's position: the pass's order drawn again from the same state, its used batches passed over,
  // the generator as it was at the backup.
  const std::optional<State::FitPosition> resume = std::exchange(s.resume_from, std::nullopt);
  const int first_epoch = resume ? resume->epoch : o.initial_epoch;
  Batch batch;
  for (int epoch = first_epoch; epoch < o.epochs && !model.stop_training; ++epoch) {
    if (!o.steps_per_epoch) left_in_pass = 0;  // without steps_per_epoch every epoch is one full pass
    int first_step = 0;
    if (resume && epoch == first_epoch) {
      if (resume->pass_used > 0) {
        random::set_global_state(resume->pass_seed, resume->pass_stream);
        begin_pass();
        if (!source.skip(resume->pass_used)) {
          throw ValueError(fmt::format("BackupAndRestore: the backup was taken after {} batches of a pass, but this "
                                       "fit's data has fewer: resume with the data and batch size of the run that "
                                       "made the backup",
                                       resume->pass_used));
        }
        left_in_pass -= resume->pass_used;
        at.pass_used = resume->pass_used;
      }
      random::set_global_state(resume->seed, resume->stream);
      first_step = static_cast<int>(resume->step);
    }
    at.epoch = epoch;
    at.step = first_step;
    logs.clear();
    cbs.each([&](Callback& c) { c.on_epoch_begin(epoch, logs); });
    s.reset_metrics();
    double input_s = 0.0, step_s = 0.0;
    for (int step = first_step; step < steps; ++step) {
      const auto t0 = clock::now();
      if (left_in_pass == 0) begin_pass();
      if (!source.next(batch)) {
        if (until_end && step > 0) break;  // the pass's end is the epoch's
        // Keras's words for a generator that ended
        log::warning(fmt::format("Your input ran out of data; interrupting training. Make sure that your dataset or "
                                 "generator can generate at least `steps_per_epoch * epochs` batches. You may need "
                                 "to use the `.repeat()` function when building your dataset (here: {} of {} steps "
                                 "of epoch {} ran).",
                                 step, steps, epoch + 1));
        model.stop_training = true;
        break;
      }
      --left_in_pass;
      ++at.pass_used;
      const auto t1 = clock::now();
      Logs batch_logs;
      cbs.each([&](Callback& c) { c.on_train_batch_begin(step, batch_logs); });
      const auto t2 = clock::now();
      const StepData data(batch);
      build_subclass(model, s, data);
      model.train_step(data, logs);
      input_s += std::chrono::duration<double>(t1 - t0).count();
      step_s += std::chrono::duration<double>(clock::now() - t2).count();
      at.step = step + 1;
      if (at.step == steps) {  // the epoch's last step: a backup here resumes at the next epoch
        at.epoch = epoch + 1;
        at.step = 0;
        if (!o.steps_per_epoch || left_in_pass == 0) at.pass_used = 0;
      }
      cbs.each([&](Callback& c) { c.on_train_batch_end(step, logs); });
      if (model.stop_training) break;
    }
    source.end_epoch();
    out.input_seconds.push_back(input_s);
    out.step_seconds.push_back(step_s);
    if (input_s > step_s && input_s + step_s > 0.05) {  // the seeds' "the bottleneck may be in data loading"
      log::warning(fmt::format("Epoch {}: {:.0f}% of the time went to waiting for input batches ({:.2f} s waiting, "
                               "{:.2f} s training): the input pipeline is the bottleneck. Prepare batches ahead of "
                               "the training step (PyDataset workers > 1), cache decoded data, or make "
                               "get_batch() cheaper.",
                               epoch + 1, 100.0 * input_s / (input_s + step_s), input_s, step_s));
    }
    Logs epoch_logs = logs;
    if (val) {
      Logs val_logs;
      validate(model, s, val, val_batch_size, cbs, val_logs);
      for (const auto& [k, v] : val_logs) epoch_logs["val_" + k] = v;
      for (const auto& [k, v] : val_logs.arrays) epoch_logs.arrays["val_" + k] = v;
    }
    // The next position: the next epoch's first step, in the same pass only where steps_per_epoch continues it.
    at.epoch = epoch + 1;
    at.step = 0;
    if (!o.steps_per_epoch || left_in_pass == 0) at.pass_used = 0;
    cbs.each([&](Callback& c) { c.on_epoch_end(epoch, epoch_logs); });
  }
  Logs end_logs;
  cbs.each([&](Callback& c) { c.on_train_end(end_logs); });
  out.history = history->history;
  out.arrays = history->arrays;
  out.epoch = history->epoch;
  out.params = params;
  return out;
}

static void require_compiled(const State& s, const std::string& name, const char* fn) {
  if (!s.compiled) {
    throw FailedPreconditionError(fmt::format("You must call compile() before using the model ({}() on model '{}').",
                                              fn, name));
  }
}

FitHistory Model::fit(const Arrays& x_all, const Arrays& y_all, FitOptions o) {
  auto& s = state();
  require_compiled(s, name(), "fit");
  Arrays y_copy = y_all;
  auto [xs, ys] = data_of(*this, s, x_all, &y_copy, "fit");
  const int batch_size = resolve_batch_size(o.batch_size, "fit");
  check_fit_options(o);
  const int64_t n = xs[0].shape()[0];
  Weights w = sample_weights(*this, n, ys, o.sample_weight, o.class_weight);
  Validation val = validation_of(*this, s, o);
  if (!val && o.validation_split > 0.0) {
    // The tail, before any shuffling (keras array_slicing.train_validation_split).
    const auto split_at = static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - o.validation_split)));
    if (split_at == 0 || split_at == n) {
      throw ValueError(fmt::format("Training data contains {} samples, which is not sufficient to split it into a "
                                   "validation and training set as specified by `validation_split={}`. Either provide "
                                   "more data, or a different value for the `validation_split` argument.",
                                   n, o.validation_split));
    }
    val.arrays = std::make_pair(rows_of(xs, split_at, n), rows_of(ys, split_at, n));
    // Keras splits sample_weight with x and y (class_weight applies to the training rows only).
    if (o.sample_weight) val.w = weight_rows(sample_weights(*this, n, ys, o.sample_weight), split_at, n);
    xs = rows_of(xs, 0, split_at);
    ys = rows_of(ys, 0, split_at);
    w = weight_rows(w, 0, split_at);
  }
  prepare_replicas(*this, s);
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  // A recorded step gathers its rows from the host arrays and copies them to its device itself (one copy per step).
  runtime::Device* copy_to = s.device && s.device != &host && !distributed(s) && !plannable(s) ? s.device : nullptr;
  ArraySource source(xs, ys, w, batch_size, o.shuffle, copy_to, plannable(s));
  return fit_loop(*this, s, source, o, val, batch_size);
}

FitHistory Model::fit(Generator generator, FitOptions o) {
  auto& s = state();
  require_compiled(s, name(), "fit");
  check_fit_options(o);
  if (!generator) throw ValueError("fit: the generator is empty (a default-constructed std::function)");
  if (!o.steps_per_epoch) {
    throw ValueError("fit: a generator needs `steps_per_epoch` (how many of its batches make an epoch), e.g. "
                     "{.epochs = 5, .steps_per_epoch = 100}");
  }
  if (o.batch_size || o.validation_split > 0.0) {
    throw ValueError("fit: batch_size and validation_split do not apply to a generator: it makes the batches; pass "
                     "validation_data instead");
  }
  reject_sample_weight(o, "generator", "GeneratorBatch::sample_weight");
  Validation val = validation_of(*this, s, o);
  prepare_replicas(*this, s);
  GeneratorSource source(*this, s, std::move(generator), &o.class_weight);
  return fit_loop(*this, s, source, o, val, 32);
}

FitHistory Model::fit(utils::PyDataset& dataset, FitOptions o) {
  auto& s = state();
  require_compiled(s, name(), "fit");
  check_fit_options(o);
  reject_array_options(o, "PyDataset");
  reject_sample_weight(o, "PyDataset", "PyDataset::get_weighted_batch");
  if (dataset.num_batches() <= 0) {
    throw ValueError(fmt::format("fit: the PyDataset has {} batches; it needs at least one", dataset.num_batches()));
  }
  Validation val = validation_of(*this, s, o);
  if (s.sequential && !static_cast<Sequential&>(*this).built()) {  // build from the first batch
    check_inputs(*this, s, dataset.get_weighted_batch(0).x);
  }
  prepare_replicas(*this, s);
  DatasetSource source(dataset, o.shuffle, *this, &o.class_weight);
  return fit_loop(*this, s, source, o, val, 32);
}

FitHistory Model::fit(const data::Dataset& dataset, FitOptions o) {
  auto& s = state();
  require_compiled(s, name(), "fit");
  check_fit_options(o);
  reject_array_options(o, "Dataset");
  if (o.sample_weight) {
    throw ValueError("fit: `sample_weight` is not supported with a Dataset: give the sample weights as the third "
                     "item of its elements, (x, y, sample_weight).");
  }
  const int64_t c = dataset.cardinality();
  if (c == data::INFINITE_CARDINALITY && !o.steps_per_epoch) {
    throw ValueError(fmt::format("fit: When passing an infinitely repeating dataset, please specify a `steps_per_epoch` "
                                 "value so that epoch level callbacks continue to work. The value can be arbitrary, or "
                                 "a number that you think correctly defines the size of an epoch. ({})",
                                 dataset.describe()));
  }
  if (c == 0) throw ValueError(fmt::format("fit: the dataset is empty ({}); it needs at least one batch", dataset.describe()));
  Validation val = validation_of(*this, s, o);
  if (s.sequential && !static_cast<Sequential&>(*this).built() && distributed(s)) {  // replicas need the weights
    PipelineSource first(dataset.take(1), *this, s, "fit", true, nullptr, nullptr);
    Batch b;
    first.next(b);  // data_of builds the model from the first batch
  }
  prepare_replicas(*this, s);
  PipelineSource source(dataset, *this, s, "fit", true, &o.class_weight, copy_target(s));
  return fit_loop(*this, s, source, o, val, 32);
}

Logs Model::evaluate_dict(const Arrays& x, const Arrays& y, EvaluateOptions o) {
  auto& s = state();
  require_compiled(s, name(), "evaluate");
  Arrays y_copy = y;
  const auto [xs, ys] = data_of(*this, s, x, &y_copy, "evaluate");
  const int batch_size = resolve_batch_size(o.batch_size, "evaluate");
  prepare_replicas(*this, s);
  CallbackList cbs;
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  const int steps = steps_of(xs[0].shape()[0], batch_size);
  cbs.each([&](Callback& c) {
    c.set_model(this);
    c.set_params({prints_progress(s) ? o.verbose : 0, 1, steps});
  });
  const Weights w = sample_weights(*this, xs[0].shape()[0], ys, o.sample_weight, {}, "evaluate");
  Logs logs;
  run_evaluation(*this, s, steps, array_batches(xs, ys, batch_size, w), cbs, logs);
  return logs;
}

Logs Model::evaluate_dict(const data::Dataset& dataset, EvaluateOptions o) {
  auto& s = state();
  require_compiled(s, name(), "evaluate");
  if (o.batch_size) {
    throw ValueError(fmt::format("evaluate: batch_size={} cannot be used with a Dataset: it makes the batches. Remove "
                                 "batch_size.",
                                 *o.batch_size));
  }
  if (o.sample_weight) {
    throw ValueError("evaluate: `sample_weight` is not supported with a Dataset: give the sample weights as the "
                     "third item of its elements, (x, y, sample_weight).");
  }
  const int steps = dataset_steps(dataset, o.steps, "evaluate");
  prepare_replicas(*this, s);
  CallbackList cbs;
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  cbs.each([&](Callback& c) {
    c.set_model(this);
    c.set_params({prints_progress(s) ? o.verbose : 0, 1, steps});
  });
  PipelineSource source(dataset, *this, s, "evaluate", true, nullptr, copy_target(s));
  source.begin_pass();
  Logs logs;
  run_evaluation(*this, s, steps, [&](Batch& b) { return source.next(b); }, cbs, logs);
  return logs;
}

// The list forms (evaluate(), *_on_batch) give one number per value: a metric with one value per class or threshold
// (Keras puts its array in the list) is refused before anything runs.
static void require_scalar_results(const State& s, const char* fn, const char* dict_form) {
  for (const auto& m : s.metrics) {
    if (m.metric->scalar_result()) continue;
    throw ValueError(fmt::format("{}(): metric '{}' gives one value per class or threshold, which a list of one "
                                 "number per metric cannot hold: call {}() (its Logs::arrays[\"{}\"] holds the "
                                 "values), or give the metric an average or one threshold",
                                 fn, m.log_name, dict_form, m.log_name));
  }
}

std::vector<double> Model::evaluate(const data::Dataset& dataset, EvaluateOptions o) {
  require_scalar_results(state(), "evaluate", "evaluate_dict");
  auto logs = evaluate_dict(dataset, std::move(o));
  std::vector<double> out;
  for (const auto& name : metrics_names()) out.push_back(logs.at(name));
  return out;
}

std::vector<double> Model::evaluate(const Arrays& x, const Arrays& y, EvaluateOptions o) {
  require_scalar_results(state(), "evaluate", "evaluate_dict");
  auto logs = evaluate_dict(x, y, std::move(o));
  std::vector<double> out;
  for (const auto& name : metrics_names()) out.push_back(logs.at(name));
  return out;
}

Tensor Model::regularization_loss() { return penalty_sum(state()); }

// [loss, per-output losses, metrics] (what *_on_batch return): from the loss means and the metrics when the
// default step ran (it writes no logs here), else from what the overriding step logged.
static std::vector<double> batch_results(const State& s, const Logs& logs) {
  std::vector<double> out{s.loss_means.mean()};
  out.insert(out.end(), s.loss_means.output_means.begin(), s.loss_means.output_means.end());
  for (auto& m : s.metrics) {
    auto it = logs.empty() ? logs.end() : logs.find(m.log_name);
    out.push_back(it != logs.end() ? it->second : m.metric->result());
  }
  if (auto it = logs.find("loss"); it != logs.end()) out[0] = it->second;  // a custom step's own loss
  return out;
}

// A step for *_on_batch: no callbacks read its logs, so the default steps skip writing them (s.batch_logs keeps
// what an overriding step wrote).
template <typename Step>
static void on_batch(State& s, Step step) {
  s.batch_logs.clear();
  s.step_logs = false;
  try {
    step(s.batch_logs);
  } catch (...) {
    s.step_logs = true;
    throw;
  }
  s.step_logs = true;
}

// Keras's return_dict=True: what an overriding step logged, or the default step's logs.
static Logs batch_dict(const State& s) {
  Logs logs = s.batch_logs;
  if (logs.empty() && logs.arrays.empty()) set_logs(logs, s);
  return logs;
}

static void run_test_on_batch(Model& model, Arrays x, Arrays y, Arrays sample_weight) {
  auto& s = model.state();
  require_compiled(s, model.name(), "test_on_batch");
  auto [xs, ys] = data_of(model, s, std::move(x), &y, "test_on_batch");
  s.reset_metrics();
  Weights w = sample_weights(model, xs[0].shape()[0], ys, std::move(sample_weight), {}, "test_on_batch");
  const Batch b{std::move(xs), std::move(ys), std::move(w), Tensor()};
  const StepData data(b);
  build_subclass(model, s, data);
  on_batch(s, [&](Logs& logs) { model.test_step(data, logs); });
}

std::vector<double> Model::test_on_batch(Arrays x, Arrays y, Arrays sample_weight) {
  require_scalar_results(state(), "test_on_batch", "test_on_batch_dict");
  run_test_on_batch(*this, std::move(x), std::move(y), std::move(sample_weight));
  return batch_results(state(), state().batch_logs);
}

Logs Model::test_on_batch_dict(Arrays x, Arrays y, Arrays sample_weight) {
  run_test_on_batch(*this, std::move(x), std::move(y), std::move(sample_weight));
  return batch_dict(state());
}

Tensor Model::predict_on_batch(Arrays x) {
  auto& s = state();
  auto out = predict_step(StepData(resolve(std::move(x), *this, s, true, "predict_on_batch")));
  if (out.size() != 1) {
    throw ValueError(fmt::format("predict_on_batch: model '{}' has {} outputs; use predict_all()", name(), out.size()));
  }
  return out[0];
}

static void run_train_on_batch(Model& model, Arrays x, Arrays y, Arrays sample_weight,
                               const std::map<int, double>& class_weight) {
  auto& s = model.state();
  require_compiled(s, model.name(), "train_on_batch");
  auto [xs, ys] = data_of(model, s, std::move(x), &y, "train_on_batch");
  s.reset_metrics();
  prepare_replicas(model, s);
  Weights w = sample_weights(model, xs[0].shape()[0], ys, std::move(sample_weight), class_weight, "train_on_batch");
  Batch b{std::move(xs), std::move(ys), std::move(w), Tensor()};
  // A recorded step copies the batch to its device itself (one copy for x, y and the weights).
  if (s.device && !distributed(s) && !planned_takes(s, b)) {
    for (auto* ts : {&b.x, &b.y}) {
      for (auto& t : *ts) {
        if (&t.device_ref() != s.device) t = t.to(*s.device);
      }
    }
    for (auto& t : b.w) {
      if (t.defined() && &t.device_ref() != s.device) t = t.to(*s.device);
    }
  }
  const StepData data(b);
  build_subclass(model, s, data);
  on_batch(s, [&](Logs& logs) { model.train_step(data, logs); });
}

std::vector<double> Model::train_on_batch(Arrays x, Arrays y, Arrays sample_weight, std::map<int, double> class_weight) {
  require_scalar_results(state(), "train_on_batch", "train_on_batch_dict");
  run_train_on_batch(*this, std::move(x), std::move(y), std::move(sample_weight), class_weight);
  return batch_results(state(), state().batch_logs);
}

Logs Model::train_on_batch_dict(Arrays x, Arrays y, Arrays sample_weight, std::map<int, double> class_weight) {
  run_train_on_batch(*this, std::move(x), std::move(y), std::move(sample_weight), class_weight);
  return batch_dict(state());
}

}  // namespace osprey::keras
