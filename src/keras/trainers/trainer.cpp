// The training engine every model shares (Keras's Trainer): compile, fit, evaluate, predict and the *_on_batch
// calls, over one or several inputs and outputs.
#include <chrono>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "core/logging.h"
#include "keras/trainers/data_adapters.h"
#include "keras/trainers/trainer.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::keras {

using namespace trainer;

namespace {

// True when every value is finite: x·0 is 0 for a finite x and NaN otherwise. Eight independent sums vectorise
// (train_on_batch checks every batch; the branchy scan below only runs to report what is wrong).
bool all_finite(const float* v, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += v[i + l] * 0.f;
  }
  float sum = 0.f;
  for (; i < n; ++i) sum += v[i] * 0.f;
  for (float a : acc) sum += a;
  return sum == 0.f;
}

// NaN or infinite values would silently turn the loss into NaN: say where they are instead.
void check_finite(const Tensor& t, const std::string& arg, const char* fn) {
  if (t.dtype() != DType::float32 && t.dtype() != DType::float64) return;
  std::vector<float> copy;
  const float* v = nullptr;
  if (t.dtype() == DType::float32 && t.device_ref().host_memory()) {
    v = t.data<float>();  // scanned in place: train_on_batch calls this every step
  } else {
    copy = (t.dtype() == DType::float32 ? t : t.cast(DType::float32)).to_vector<float>();
    v = copy.data();
  }
  const int64_t count = t.num_elements();
  if (all_finite(v, count)) return;
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(v[i])) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (!bad) return;
  const int64_t cols = t.shape()[0] ? count / t.shape()[0] : 1;
  throw ValueError(fmt::format("{}: `{}` contains {} NaN or infinite value(s), the first at sample {} (flat index {} "
                               "in the sample: {}); remove or impute them before training",
                               fn, arg, bad, first / cols, first % cols, v[first]));
}

// The names of a model's inputs or outputs, for maps and messages.
std::vector<std::string> names_of(Model& model, const State& s, bool inputs) {
  if (!inputs) return model.output_names();
  return s.graph ? s.graph->input_names : std::vector<std::string>{"input"};
}

// A model's x or y in the order of its inputs or outputs: a list of the right length (moved out of `a`), or a map
// whose keys are exactly their names. Names are looked up only for maps and errors (train_on_batch runs this
// every step).
std::vector<Tensor> resolve(Arrays&& a, Model& model, const State& s, bool inputs, const char* fn) {
  const char* what = inputs ? "input" : "output";
  const std::size_t count = static_cast<std::size_t>(inputs ? s.num_inputs() : s.num_outputs());
  if (a.keys.empty()) {
    if (a.tensors.size() != count) {
      const auto names = names_of(model, s, inputs);
      throw ValueError(fmt::format("{}: model '{}' has {} {}(s) ({}), but {} {} array(s) were given", fn, model.name(),
                                   names.size(), what, fmt::join(names, ", "), a.tensors.size(), what));
    }
    return std::move(a.tensors);
  }
  const auto names = names_of(model, s, inputs);
  std::vector<Tensor> out(names.size());
  for (std::size_t k = 0; k < a.keys.size(); ++k) {
    auto it = std::find(names.begin(), names.end(), a.keys[k]);
    if (it == names.end()) {
      throw ValueError(fmt::format("{}: unknown {} name '{}' in the map; model '{}' has the {}s {}", fn, what,
                                   a.keys[k], model.name(), what, fmt::join(names, ", ")));
    }
    out[static_cast<std::size_t>(it - names.begin())] = a.tensors[k];
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!out[i].defined()) {
      throw ValueError(fmt::format("{}: no array for {} '{}' of model '{}' in the map", fn, what, names[i],
                                   model.name()));
    }
  }
  return out;
}

}  // namespace

// x and y of a call, in the model's order, checked: defined, the same number of rows, finite values.
static std::pair<std::vector<Tensor>, std::vector<Tensor>> data_of(Model& model, State& s, Arrays x, Arrays* y,
                                                                   const char* fn) {
  auto xs = resolve(std::move(x), model, s, true, fn);
  std::vector<Tensor> ys;
  if (y) ys = resolve(std::move(*y), model, s, false, fn);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined() || (y && std::any_of(ys.begin(), ys.end(), [](auto& t) { return !t.defined(); }))) {
      throw ValueError(fmt::format("{}: x and y must both be given", fn));
    }
    if (xs[i].shape().rank() < 2) {
      throw ValueError(fmt::format("{}: x must have shape (samples, features), got {}", fn, xs[i].shape().to_string()));
    }
    if (xs[i].shape()[0] != xs[0].shape()[0]) {
      throw ValueError(fmt::format("{}: Data cardinality is ambiguous. Make sure all arrays contain the same number "
                                   "of samples. 'x' sizes: {}, {}",
                                   fn, xs[0].shape()[0], xs[i].shape()[0]));
    }
  }
  for (const auto& t : ys) {
    if (t.shape().rank() < 1 || t.shape()[0] != xs[0].shape()[0]) {
      throw ValueError(fmt::format("{}: Data cardinality is ambiguous. Make sure all arrays contain the same number "
                                   "of samples. 'x' sizes: {}, 'y' sizes: {}",
                                   fn, xs[0].shape()[0], t.shape().rank() ? t.shape()[0] : 0));
    }
  }
  if (xs[0].shape()[0] == 0) throw ValueError(fmt::format("{}: x and y are empty (0 samples); there is nothing to do", fn));
  for (std::size_t i = 0; i < xs.size(); ++i) check_finite(xs[i], xs.size() > 1 ? fmt::format("x[{}]", i) : "x", fn);
  for (std::size_t i = 0; i < ys.size(); ++i) check_finite(ys[i], ys.size() > 1 ? fmt::format("y[{}]", i) : "y", fn);
  check_inputs(model, s, xs);
  return {std::move(xs), std::move(ys)};
}

static int resolve_batch_size(const std::optional<int>& b, const char* fn) {
  const int v = b.value_or(32);
  if (v <= 0) throw ValueError(fmt::format("{}: batch_size must be a positive integer, got {}", fn, v));
  return v;
}

namespace {
struct CallbackList {
  std::vector<std::shared_ptr<Callback>> all;
  void each(const std::function<void(Callback&)>& f) {
    for (auto& c : all) f(*c);
  }
};
}  // namespace

// Writes the batch logs: the loss, the per-output losses of a multi-output model, the metrics. The entries of the
// previous batch are overwritten in place (no map nodes allocated per step) unless a callback changed the keys.
static void set_logs(Logs& logs, const State& s, const std::vector<std::string>& outputs, double loss,
                     const std::vector<double>& output_losses) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    logs["loss"] = loss;
    for (std::size_t o = 0; o < output_losses.size(); ++o) logs[outputs[o] + "_loss"] = output_losses[o];
    for (auto& m : s.metrics) logs[m.log_name] = m.metric->result();
    if (logs.size() == 1 + output_losses.size() + s.metrics.size()) return;
    logs.clear();
  }
}

// Running means over batches, weighted by their rows: the loss and, for multi-output models, each output's loss.
namespace {
struct LossMeans {
  double sum = 0.0, seen = 0.0;
  std::vector<double> outputs, output_means;
  void reset(int num_outputs) {
    sum = seen = 0.0;
    outputs.assign(num_outputs > 1 ? static_cast<std::size_t>(num_outputs) : 0, 0.0);
    output_means.assign(outputs.size(), 0.0);
  }
  void add(double loss, const std::vector<double>& per_output, double rows) {
    sum += loss * rows;
    seen += rows;
    for (std::size_t o = 0; o < outputs.size() && o < per_output.size(); ++o) {
      outputs[o] += per_output[o] * rows;
      output_means[o] = outputs[o] / seen;
    }
  }
  double mean() const { return sum / seen; }
};
}  // namespace

// Evaluates batches of (x, y) into `logs` (loss + metrics), calling test hooks.
static void run_evaluation(Model& model, State& s, const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                           int batch_size, CallbackList& cbs, Logs& logs) {
  const int64_t n = x[0].shape()[0];
  const int steps = static_cast<int>((n + batch_size - 1) / batch_size);
  for (auto& m : s.metrics) m.metric->reset_state();
  LossMeans means;
  means.reset(s.num_outputs());
  const auto outputs = model.output_names();
  Logs empty;
  cbs.each([&](Callback& c) { c.on_test_begin(empty); });
  auto rows = [](const std::vector<Tensor>& ts, int64_t b, int64_t e) {
    std::vector<Tensor> out;
    for (const auto& t : ts) out.push_back(t.slice_rows(b, e));
    return out;
  };
  std::vector<Tensor> per_output;
  std::vector<double> values;
  for (int step = 0; step < steps; ++step) {
    const int64_t b = step * static_cast<int64_t>(batch_size), e = std::min<int64_t>(n, b + batch_size);
    cbs.each([&](Callback& c) { c.on_test_batch_begin(step, empty); });
    const auto xb = rows(x, b, e);
    auto yb = rows(y, b, e);
    const double penalty = has_penalties(s) ? penalty_sum(s).item() : 0.0;  // Keras's evaluate loss includes them
    if (distributed(s)) {
      std::vector<std::vector<Tensor>> ys, preds, logits;
      distributed_forward(model, s, xb, &yb, ys, preds, &logits);
      for (size_t r = 0; r < preds.size(); ++r) {
        if (preds[r].empty()) continue;
        const double shard = static_cast<double>(preds[r][0].shape()[0]);
        const double loss = batch_loss(s, ys[r], preds[r], Tensor(), &logits[r], &per_output).item();
        values.assign(per_output.size(), 0.0);
        for (std::size_t o = 0; o < per_output.size(); ++o) values[o] = per_output[o].defined() ? per_output[o].item() : 0.0;
        means.add(loss + penalty, values, shard);
        for (auto& m : s.metrics) m.metric->update_state(ys[r][m.output], preds[r][m.output]);
      }
    } else {
      std::vector<Tensor> logits;
      const auto y_pred = forward(model, s, xb, false, &logits);
      for (std::size_t o = 0; o < yb.size(); ++o) {
        if (auto* d = &y_pred[o].device_ref(); &yb[o].device_ref() != d) yb[o] = yb[o].to(*d);
      }
      const double loss = batch_loss(s, yb, y_pred, Tensor(), &logits, &per_output).item();
      values.assign(per_output.size(), 0.0);
      for (std::size_t o = 0; o < per_output.size(); ++o) values[o] = per_output[o].defined() ? per_output[o].item() : 0.0;
      means.add(loss + penalty, values, static_cast<double>(e - b));
      for (auto& m : s.metrics) m.metric->update_state(yb[m.output], y_pred[m.output]);
    }
    logs.clear();
    set_logs(logs, s, outputs, means.mean(), means.output_means);
    cbs.each([&](Callback& c) { c.on_test_batch_end(step, logs); });
  }
  cbs.each([&](Callback& c) { c.on_test_end(logs); });
}

static void check_fit_options(const FitOptions& o) {
  if (o.epochs < 0) throw ValueError(fmt::format("fit: epochs must be >= 0, got {}", o.epochs));
  if (o.verbose < 0 || o.verbose > 2) throw ValueError(fmt::format("fit: verbose must be 0, 1 or 2, got {}", o.verbose));
  if (o.validation_split < 0.0 || o.validation_split >= 1.0) {
    throw ValueError(fmt::format("fit: validation_split must be in [0, 1), got {}", o.validation_split));
  }
}

using Validation = std::optional<std::pair<std::vector<Tensor>, std::vector<Tensor>>>;

// The epoch loop shared by both fit()s: callbacks in Keras's order, batch-size-weighted epoch loss, validation,
// and the time spent waiting for batches against the time spent training on them.
static FitHistory fit_loop(Model& model, State& s, BatchSource& source, const FitOptions& o, const Validation& val,
                           int val_batch_size) {
  const int64_t per_pass = source.batches_per_pass();
  const int steps = o.steps_per_epoch ? *o.steps_per_epoch : static_cast<int>(per_pass);
  if (steps <= 0) throw ValueError(fmt::format("fit: steps_per_epoch must be positive, got {}", steps));

  auto history = std::make_shared<History>();
  CallbackList cbs;
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(history);
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  TrainingParams params{o.verbose, o.epochs, steps};
  cbs.each([&](Callback& c) {
    c.set_model(&model);
    c.set_params(params);
  });
  FitHistory out;
  using clock = std::chrono::steady_clock;
  model.stop_training = false;
  const auto outputs = model.output_names();
  Logs logs;
  cbs.each([&](Callback& c) { c.on_train_begin(logs); });
  int64_t left_in_pass = 0;  // steps_per_epoch continues a pass across epochs
  LossMeans means;
  Batch batch;
  for (int epoch = o.initial_epoch; epoch < o.epochs && !model.stop_training; ++epoch) {
    if (!o.steps_per_epoch) left_in_pass = 0;  // without steps_per_epoch every epoch is one full pass
    logs.clear();
    cbs.each([&](Callback& c) { c.on_epoch_begin(epoch, logs); });
    for (auto& m : s.metrics) m.metric->reset_state();
    means.reset(s.num_outputs());
    double input_s = 0.0, step_s = 0.0;
    for (int step = 0; step < steps; ++step) {
      const auto t0 = clock::now();
      if (left_in_pass == 0) {
        source.begin_pass();
        left_in_pass = per_pass;
      }
      source.next(batch);
      --left_in_pass;
      const auto t1 = clock::now();
      Logs batch_logs;
      cbs.each([&](Callback& c) { c.on_train_batch_begin(step, batch_logs); });
      const auto t2 = clock::now();
      const auto rows = static_cast<double>(batch.size());
      const double loss_value = train_step(model, s, batch);
      input_s += std::chrono::duration<double>(t1 - t0).count();
      step_s += std::chrono::duration<double>(clock::now() - t2).count();
      means.add(loss_value, s.output_loss_values, rows);
      set_logs(logs, s, outputs, means.mean(), means.output_means);
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
      run_evaluation(model, s, val->first, val->second, val_batch_size, cbs, val_logs);
      for (const auto& [k, v] : val_logs) epoch_logs["val_" + k] = v;
    }
    cbs.each([&](Callback& c) { c.on_epoch_end(epoch, epoch_logs); });
  }
  Logs end_logs;
  cbs.each([&](Callback& c) { c.on_train_end(end_logs); });
  out.history = history->history;
  out.epoch = history->epoch;
  out.params = params;
  return out;
}

// The per-sample weights of fit: sample_weight times class_weight[label] (undefined when neither is given).
static Tensor sample_weights(int64_t n, const Tensor& y, const FitOptions& o) {
  std::vector<float> w(static_cast<size_t>(n), 1.0f);
  bool any = false;
  if (o.sample_weight) {
    const Tensor& sw = *o.sample_weight;
    if (!sw.defined() || sw.num_elements() != n || (sw.shape().rank() == 2 && sw.shape()[1] != 1) || sw.shape().rank() > 2) {
      throw ValueError(fmt::format("fit: sample_weight must have shape ({},) or ({}, 1), got {}", n, n,
                                   sw.defined() ? sw.shape().to_keras_string() : std::string("an undefined tensor")));
    }
    w = (sw.dtype() == DType::float32 ? sw : sw.cast(DType::float32)).to_vector<float>();
    any = true;
  }
  if (!o.class_weight.empty()) {
    const auto labels = (y.dtype() == DType::float32 ? y : y.cast(DType::float32)).to_vector<float>();
    const int64_t d = n ? static_cast<int64_t>(labels.size()) / n : 1;
    for (int64_t i = 0; i < n; ++i) {
      int64_t cls = 0;
      if (d == 1) {
        cls = static_cast<int64_t>(std::lround(labels[i]));
      } else {  // one-hot: the argmax
        for (int64_t j = 1; j < d; ++j) {
          if (labels[i * d + j] > labels[i * d + cls]) cls = j;
        }
      }
      auto it = o.class_weight.find(static_cast<int>(cls));
      if (it != o.class_weight.end()) w[i] *= static_cast<float>(it->second);
    }
    any = true;
  }
  if (!any) return Tensor();
  DeviceScope host("/CPU:0");
  return Tensor::from_vector(w, Shape({n}));
}

static void require_compiled(const State& s, const std::string& name, const char* fn) {
  if (!s.compiled) {
    throw FailedPreconditionError(fmt::format("You must call compile() before using the model ({}() on model '{}').",
                                              fn, name));
  }
}

static std::vector<Tensor> rows_of(const std::vector<Tensor>& ts, int64_t b, int64_t e) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t.slice_rows(b, e));
  return out;
}

FitHistory Model::fit(const Arrays& x_all, const Arrays& y_all, FitOptions o) {
  auto& s = state();
  require_compiled(s, name(), "fit");
  Arrays y_copy = y_all;
  auto [xs, ys] = data_of(*this, s, x_all, &y_copy, "fit");
  const int batch_size = resolve_batch_size(o.batch_size, "fit");
  check_fit_options(o);
  const int64_t n = xs[0].shape()[0];
  Tensor w = sample_weights(n, ys[0], o);
  Validation val;
  if (o.validation_data.given()) {
    val = data_of(*this, s, o.validation_data.x, &o.validation_data.y, "fit (validation_data)");
  } else if (o.validation_split > 0.0) {
    // The tail, before any shuffling (keras array_slicing.train_validation_split).
    const auto split_at = static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - o.validation_split)));
    if (split_at == 0 || split_at == n) {
      throw ValueError(fmt::format("Training data contains {} samples, which is not sufficient to split it into a "
                                   "validation and training set as specified by `validation_split={}`. Either provide "
                                   "more data, or a different value for the `validation_split` argument.",
                                   n, o.validation_split));
    }
    val = std::make_pair(rows_of(xs, split_at, n), rows_of(ys, split_at, n));
    xs = rows_of(xs, 0, split_at);
    ys = rows_of(ys, 0, split_at);
    if (w.defined()) w = w.slice_rows(0, split_at);
  }
  prepare_replicas(*this, s);
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  // A recorded step gathers its rows from the host arrays and copies them to its device itself (one copy per step).
  runtime::Device* copy_to = s.device && s.device != &host && !distributed(s) && !plannable(s) ? s.device : nullptr;
  ArraySource source(xs, ys, w, batch_size, o.shuffle, copy_to, plannable(s));
  return fit_loop(*this, s, source, o, val, batch_size);
}

FitHistory Model::fit(utils::PyDataset& dataset, FitOptions o) {
  auto& s = state();
  require_compiled(s, name(), "fit");
  check_fit_options(o);
  if (o.batch_size) {
    throw ValueError(fmt::format("fit: batch_size={} cannot be used with a PyDataset: its get_batch() makes the "
                                 "batches. Remove batch_size.",
                                 *o.batch_size));
  }
  if (o.validation_split > 0.0) {
    throw ValueError("fit: `validation_split` is only supported for Tensors, not for a PyDataset; pass "
                     "validation_data instead.");
  }
  if (dataset.num_batches() <= 0) {
    throw ValueError(fmt::format("fit: the PyDataset has {} batches; it needs at least one", dataset.num_batches()));
  }
  Validation val;
  if (o.validation_data.given()) {
    val = data_of(*this, s, o.validation_data.x, &o.validation_data.y, "fit (validation_data)");
  }
  if (s.graph ? false : !static_cast<Sequential&>(*this).built()) {  // build from the first batch's shape
    auto first = dataset.get_batch(0);
    check_inputs(*this, s, {first.first});
  }
  prepare_replicas(*this, s);
  DatasetSource source(dataset, o.shuffle);
  return fit_loop(*this, s, source, o, val, 32);
}

std::map<std::string, double> Model::evaluate_dict(const Arrays& x, const Arrays& y, EvaluateOptions o) {
  auto& s = state();
  require_compiled(s, name(), "evaluate");
  Arrays y_copy = y;
  const auto [xs, ys] = data_of(*this, s, x, &y_copy, "evaluate");
  const int batch_size = resolve_batch_size(o.batch_size, "evaluate");
  prepare_replicas(*this, s);
  CallbackList cbs;
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  const int steps = static_cast<int>((xs[0].shape()[0] + batch_size - 1) / batch_size);
  cbs.each([&](Callback& c) {
    c.set_model(this);
    c.set_params({o.verbose, 1, steps});
  });
  Logs logs;
  run_evaluation(*this, s, xs, ys, batch_size, cbs, logs);
  return {logs.begin(), logs.end()};
}

std::vector<double> Model::evaluate(const Arrays& x, const Arrays& y, EvaluateOptions o) {
  auto logs = evaluate_dict(x, y, std::move(o));
  std::vector<double> out;
  for (const auto& name : metrics_names()) out.push_back(logs.at(name));
  return out;
}

Tensor Model::regularization_loss() { return penalty_sum(state()); }

std::vector<double> Model::test_on_batch(Arrays x, Arrays y) {
  auto& s = state();
  require_compiled(s, name(), "test_on_batch");
  auto [xs, ys] = data_of(*this, s, std::move(x), &y, "test_on_batch");
  for (auto& m : s.metrics) m.metric->reset_state();
  std::vector<Tensor> logits, per_output;
  const auto y_pred = forward(*this, s, xs, false, &logits);
  for (std::size_t o = 0; o < ys.size(); ++o) {
    if (&ys[o].device_ref() != &y_pred[o].device_ref()) ys[o] = ys[o].to(y_pred[o].device_ref());
  }
  std::vector<double> out{with_penalties(s, batch_loss(s, ys, y_pred, Tensor(), &logits, &per_output)).item()};
  if (s.num_outputs() > 1) {
    for (const auto& l : per_output) out.push_back(l.defined() ? l.item() : 0.0);
  }
  for (auto& m : s.metrics) {
    m.metric->update_state(ys[m.output], y_pred[m.output]);
    out.push_back(m.metric->result());
  }
  return out;
}

Tensor Model::predict_on_batch(Arrays x) {
  auto& s = state();
  const auto xs = resolve(std::move(x), *this, s, true, "predict_on_batch");
  auto out = forward(*this, s, xs, false, nullptr);
  if (out.size() != 1) {
    throw ValueError(fmt::format("predict_on_batch: model '{}' has {} outputs; use predict_all()", name(), out.size()));
  }
  return out[0];
}

std::vector<Tensor> Model::predict_all(const Arrays& x, PredictOptions o) {
  auto& s = state();
  const auto [xs, unused] = data_of(*this, s, x, nullptr, "predict");
  prepare_replicas(*this, s);
  const int batch_size = resolve_batch_size(o.batch_size, "predict");
  const int64_t n = xs[0].shape()[0];
  const int steps = static_cast<int>((n + batch_size - 1) / batch_size);
  CallbackList cbs;  // user callbacks, then the progress bar (Keras's order)
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  cbs.each([&](Callback& c) {
    c.set_model(this);
    c.set_params({o.verbose, 1, steps});
  });
  Logs logs;
  cbs.each([&](Callback& c) { c.on_predict_begin(logs); });
  const int outputs = s.num_outputs();
  std::vector<std::vector<float>> values(static_cast<std::size_t>(outputs));
  std::vector<Shape> out_rows(static_cast<std::size_t>(outputs));
  for (int step = 0; step < steps; ++step) {
    const int64_t b = step * static_cast<int64_t>(batch_size), e = std::min<int64_t>(n, b + batch_size);
    cbs.each([&](Callback& c) { c.on_predict_batch_begin(step, logs); });
    std::vector<std::vector<Tensor>> parts;
    if (distributed(s)) {
      std::vector<std::vector<Tensor>> unused_ys;
      distributed_forward(*this, s, rows_of(xs, b, e), nullptr, unused_ys, parts);
    } else {
      parts.push_back(forward(*this, s, rows_of(xs, b, e), false, nullptr));
    }
    for (const auto& part : parts) {  // replica order is row order
      for (std::size_t o = 0; o < part.size(); ++o) {
        auto v = part[o].to_vector<float>();
        values[o].insert(values[o].end(), v.begin(), v.end());
        out_rows[o] = part[o].shape();
      }
    }
    cbs.each([&](Callback& c) { c.on_predict_batch_end(step, logs); });
  }
  cbs.each([&](Callback& c) { c.on_predict_end(logs); });
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  std::vector<Tensor> out;
  for (int o = 0; o < outputs; ++o) out.push_back(Tensor::from_host(values[o].data(), out_rows[o].with_dim(0, n)).to(host));
  return out;
}

Tensor Model::predict(const Arrays& x, PredictOptions o) {
  if (state().num_outputs() != 1) {
    throw ValueError(fmt::format("predict: model '{}' has {} outputs; use predict_all(), which returns one tensor per "
                                 "output",
                                 name(), state().num_outputs()));
  }
  return predict_all(x, std::move(o))[0];
}

std::vector<double> Model::train_on_batch(Arrays x, Arrays y) {
  auto& s = state();
  require_compiled(s, name(), "train_on_batch");
  auto [xs, ys] = data_of(*this, s, std::move(x), &y, "train_on_batch");
  for (auto& m : s.metrics) m.metric->reset_state();
  prepare_replicas(*this, s);
  Batch b{std::move(xs), std::move(ys), Tensor(), Tensor()};
  // A recorded step copies the batch to its device itself (one copy for x and y).
  if (s.device && !distributed(s) && !planned_takes(s, b)) {
    for (auto* ts : {&b.x, &b.y}) {
      for (auto& t : *ts) {
        if (&t.device_ref() != s.device) t = t.to(*s.device);
      }
    }
  }
  std::vector<double> out{train_step(*this, s, b)};
  if (s.num_outputs() > 1) out.insert(out.end(), s.output_loss_values.begin(), s.output_loss_values.end());
  for (auto& m : s.metrics) out.push_back(m.metric->result());
  return out;
}

}  // namespace osprey::keras
