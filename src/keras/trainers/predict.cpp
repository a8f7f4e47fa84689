// predict() and predict_all() on arrays and datasets (Keras's Trainer.predict): batches through predict_step, each
// output's rows concatenated on the host.
#include <climits>
#include <iostream>

#include <fmt/format.h>

#include "keras/trainers/data_adapters.h"
#include "keras/trainers/trainer.h"
#include "osprey/errors.h"

namespace osprey::keras {

using namespace trainer;

// Gives predict's next batch (its x); false at the end.
using NextInputs = std::function<bool(Batch&)>;

// Runs predict_step on `steps` batches (-1: until next() ends) and concatenates each output's rows on the host.
static std::vector<Tensor> predict_loop(Model& model, State& s, int steps, const NextInputs& next,
                                        const PredictOptions& o) {
  CallbackList cbs;  // user callbacks, then the progress bar (Keras's order)
  for (auto& c : o.callbacks) cbs.all.push_back(c.get());
  cbs.all.push_back(std::make_shared<ProgbarLogger>(std::cout));
  cbs.each([&](Callback& c) {
    c.set_model(&model);
    c.set_params({prints_progress(s) ? o.verbose : 0, 1, steps});
  });
  Logs logs;
  cbs.each([&](Callback& c) { c.on_predict_begin(logs); });
  const int outputs = s.num_outputs();
  std::vector<std::vector<float>> values(static_cast<std::size_t>(outputs));
  std::vector<Shape> out_rows(static_cast<std::size_t>(outputs));
  int64_t n = 0;
  Batch x;
  for (int step = 0; steps < 0 || step < steps; ++step) {
    if (!next(x)) {
      if (step == 0) throw ValueError("predict: the data gave no batches; there is nothing to predict");
      break;
    }
    cbs.each([&](Callback& c) { c.on_predict_batch_begin(step, logs); });
    const auto part = model.predict_step(StepData(x));
    x = Batch{};
    if (part.size() != static_cast<std::size_t>(outputs)) {
      throw ValueError(fmt::format("predict_step() of model '{}' returned {} tensor(s) for its {} output(s)",
                                   model.name(), part.size(), outputs));
    }
    for (std::size_t i = 0; i < part.size(); ++i) {
      auto v = part[i].to_vector<float>();
      values[i].insert(values[i].end(), v.begin(), v.end());
      out_rows[i] = part[i].shape();
    }
    n += part.empty() ? 0 : part[0].shape()[0];
    cbs.each([&](Callback& c) { c.on_predict_batch_end(step, logs); });
  }
  cbs.each([&](Callback& c) { c.on_predict_end(logs); });
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  std::vector<Tensor> out;
  for (int i = 0; i < outputs; ++i) out.push_back(Tensor::from_host(values[i].data(), out_rows[i].with_dim(0, n)).to(host));
  return out;
}

std::vector<Tensor> Model::predict_all(const Arrays& x, PredictOptions o) {
  auto& s = state();
  const auto [xs, unused] = data_of(*this, s, x, nullptr, "predict");
  prepare_replicas(*this, s);
  const int batch_size = resolve_batch_size(o.batch_size, "predict");
  const int64_t n = xs[0].shape()[0];
  int64_t at = 0;
  return predict_loop(*this, s, steps_of(n, batch_size), [&](Batch& batch) {
    if (at >= n) return false;
    const int64_t e = std::min<int64_t>(n, at + batch_size);
    batch.x = rows_of(xs, at, e);
    at = e;
    return true;
  }, o);
}

std::vector<Tensor> Model::predict_all(const data::Dataset& dataset, PredictOptions o) {
  auto& s = state();
  if (o.batch_size) {
    throw ValueError(fmt::format("predict: batch_size={} cannot be used with a Dataset: it makes the batches. Remove "
                                 "batch_size.",
                                 *o.batch_size));
  }
  const int steps = dataset_steps(dataset, o.steps, "predict");
  prepare_replicas(*this, s);
  PipelineSource source(dataset, *this, s, "predict", false, nullptr, copy_target(s));
  source.begin_pass();
  return predict_loop(*this, s, steps, [&](Batch& batch) { return source.next(batch); }, o);
}

Tensor Model::predict(const data::Dataset& dataset, PredictOptions o) {
  if (state().num_outputs() != 1) {
    throw ValueError(fmt::format("predict: model '{}' has {} outputs; use predict_all(), which returns one tensor per "
                                 "output",
                                 name(), state().num_outputs()));
  }
  return predict_all(dataset, std::move(o))[0];
}

Tensor Model::predict(const Arrays& x, PredictOptions o) {
  if (state().num_outputs() != 1) {
    throw ValueError(fmt::format("predict: model '{}' has {} outputs; use predict_all(), which returns one tensor per "
                                 "output",
                                 name(), state().num_outputs()));
  }
  return predict_all(x, std::move(o))[0];
}

}  // namespace osprey::keras
