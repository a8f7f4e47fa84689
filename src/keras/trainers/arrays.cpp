// Checks and arrangement of the arrays a model is given: one per input and output, in the model's order, with the
// same number of rows and finite values; fit's sample weights.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "keras/losses/loss_helpers.h"
#include "keras/trainers/trainer.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::keras::trainer {

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
// `arg` names the array: "x", or "x[i]" when `several`.
void check_finite(const Tensor& t, const char* arg, std::size_t i, bool several, const char* fn) {
  if (t.dtype() != DType::float32 && t.dtype() != DType::float64) return;
  if (!t.device_ref().host_memory() && t.nbytes() >= (int64_t{64} << 10)) {
    // On a GPU, one reduction and one value read instead of the whole tensor copied to the host (train_on_batch
    // checks every step: at batch 8192 of the wide MLP the copy was 5.8 ms of a 6.2 ms step on an H200; small
    // tensors are cheaper copied). Σ x·0 is 0 exactly when no x is inf or NaN; only then is the tensor read, for
    // the message.
    const Tensor zero = Tensor::scalar(0.0, t.dtype()).to(t.device_ref());
    if (osprey::ops::reduce_sum(osprey::ops::mul(t, zero)).item() == 0.0) return;
  }
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
                               fn, several ? fmt::format("{}[{}]", arg, i) : std::string(arg), bad, first / cols,
                               first % cols, v[first]));
}

}  // namespace

// The names of a model's inputs or outputs, for maps and messages.
static std::vector<std::string> names_of(Model& model, const State& s, bool inputs) {
  if (!inputs) return model.output_names();
  return s.graph ? s.graph->input_names : std::vector<std::string>{"input"};
}

// A model's x or y in the order of its inputs or outputs: a list of the right length (moved out of `a`), or a map
// whose keys are exactly their names. Names are looked up only for maps and errors (train_on_batch runs this
// every step).
std::vector<Tensor> resolve(Arrays&& a, Model& model, const State& s, bool inputs, const char* fn) {
  const char* what = inputs ? "input" : "output";
  const int expected = inputs ? s.num_inputs() : s.num_outputs();
  if (a.keys.empty()) {
    if (expected >= 0 && a.tensors.size() != static_cast<std::size_t>(expected)) {
      const auto names = names_of(model, s, inputs);
      throw ValueError(fmt::format("{}: model '{}' has {} {}(s) ({}), but {} {} array(s) were given", fn, model.name(),
                                   names.size(), what, fmt::join(names, ", "), a.tensors.size(), what));
    }
    return std::move(a.tensors);
  }
  const auto names = names_of(model, s, inputs);
  if (expected < 0) {
    throw ValueError(fmt::format("{}: model '{}' is a subclass without input names; pass its inputs as a list", fn,
                                 model.name()));
  }
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

// x and y of a call, in the model's order, checked: defined, the same number of rows, finite values.
std::pair<std::vector<Tensor>, std::vector<Tensor>> data_of(Model& model, State& s, Arrays x, Arrays* y,
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
  for (std::size_t i = 0; i < xs.size(); ++i) check_finite(xs[i], "x", i, xs.size() > 1, fn);
  for (std::size_t i = 0; i < ys.size(); ++i) check_finite(ys[i], "y", i, ys.size() > 1, fn);
  check_inputs(model, s, xs);
  return {std::move(xs), std::move(ys)};
}

int resolve_batch_size(const std::optional<int>& b, const char* fn) {
  const int v = b.value_or(32);
  if (v <= 0) throw ValueError(fmt::format("{}: batch_size must be a positive integer, got {}", fn, v));
  return v;
}

// One tensor of sample weights for n rows, as float32 on the host: one weight per sample ((n,) or (n, 1): (n,)), or
// (n, d1, ..., dk) when it weighs positions (steps, pixels) as Keras's. `what` names it in errors.
static Tensor weight_tensor(int64_t n, const Tensor& sw, const std::string& what, const char* fn) {
  DeviceScope host("/CPU:0");
  if (sw.defined() && losses::detail::weighs_positions(sw) && sw.shape()[0] == n) {
    const Tensor f = sw.dtype() == DType::float32 ? sw : sw.cast(DType::float32);
    return Tensor::from_vector(f.to_vector<float>(), sw.shape());
  }
  if (!sw.defined() || sw.num_elements() != n || (sw.shape().rank() == 2 && sw.shape()[1] != 1) || sw.shape().rank() > 2) {
    throw ValueError(fmt::format("{}: {} must have shape ({},) or ({}, 1) (one weight per sample), or ({}, ...) with "
                                 "more axes (one per position of the outputs' values, as a sequence's steps), got {}",
                                 fn, what, n, n, n,
                                 sw.defined() ? sw.shape().to_keras_string() : std::string("an undefined tensor")));
  }
  const Tensor f = sw.dtype() == DType::float32 ? sw : sw.cast(DType::float32);
  return Tensor::from_vector(f.to_vector<float>(), Shape({n}));
}

// class_weight[label] per sample of y (an integer label, the argmax of one-hot labels, or 0/1 for binary), times w.
static Tensor with_class_weights(int64_t n, const Tensor& y, Tensor w, const std::map<int, double>& class_weight) {
  DeviceScope host("/CPU:0");
  std::vector<float> v = w.defined() ? w.to_vector<float>() : std::vector<float>(static_cast<size_t>(n), 1.0f);
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
    auto it = class_weight.find(static_cast<int>(cls));
    if (it != class_weight.end()) v[i] *= static_cast<float>(it->second);
  }
  return Tensor::from_vector(v, Shape({n}));
}

// The sample weights of n rows: sample_weight (one tensor for every output, or one per output, as Keras's
// ArrayDataAdapter takes them) times class_weight[label] (a single output's).
Weights sample_weights(Model& model, int64_t n, const std::vector<Tensor>& ys,
                       const std::optional<Arrays>& sample_weight, const std::map<int, double>& class_weight,
                       const char* fn) {
  const std::size_t outputs = ys.size();
  // (Nothing, an empty list or one undefined tensor: no weights.)
  const bool given = sample_weight && !sample_weight->tensors.empty() &&
                     !(sample_weight->tensors.size() == 1 && sample_weight->keys.empty() &&
                       !sample_weight->tensors[0].defined());
  if (!class_weight.empty() && outputs > 1) {
    throw ValueError(fmt::format("{}: `class_weight` is only supported for Models with a single output (model '{}' "
                                 "has {}); give the class weights as sample_weight, one array per output",
                                 fn, model.name(), outputs));
  }
  Weights w;
  if (given && sample_weight->keys.empty() && sample_weight->tensors.size() == 1) {  // one for every output
    const Tensor& sw = sample_weight->tensors[0];
    w.push_back(weight_tensor(n, sw, "sample_weight", fn));
    if (outputs > 1 && w[0].shape().rank() > 1) {
      throw ValueError(fmt::format("{}: For a model with multiple outputs, when providing a single `sample_weight` "
                                   "array, it should only have one scalar score per sample (i.e. shape `({},)`), "
                                   "got {}. If you want to use non-scalar sample weights, pass a `sample_weight` "
                                   "argument with one array per model output (model '{}' has {}).",
                                   fn, n, sw.shape().to_keras_string(), model.name(), outputs));
    }
  } else if (given) {  // one per output: a list in the outputs' order, or a map by their names
    const auto names = model.output_names();
    const bool named = !sample_weight->keys.empty();
    bool matches = named ? sample_weight->keys.size() == names.size() : sample_weight->tensors.size() == outputs;
    w.assign(outputs, Tensor());
    for (std::size_t k = 0; matches && named && k < sample_weight->keys.size(); ++k) {
      auto it = std::find(names.begin(), names.end(), sample_weight->keys[k]);
      if (it == names.end()) {
        matches = false;
      } else {
        w[static_cast<std::size_t>(it - names.begin())] = sample_weight->tensors[k];
      }
    }
    if (!named && matches) w = sample_weight->tensors;
    if (!matches) {
      throw ValueError(fmt::format(
          "{}: You should provide one `sample_weight` array per output in `y`: model '{}' has the outputs [{}], but "
          "sample_weight is {} {}",
          fn, model.name(), fmt::join(names, ", "), named ? "a map of the keys" : "a list of",
          named ? fmt::format("[{}]", fmt::join(sample_weight->keys, ", "))
                : fmt::format("{} array(s)", sample_weight->tensors.size())));
    }
    for (std::size_t o = 0; o < outputs; ++o) {
      if (w[o].defined()) w[o] = weight_tensor(n, w[o], fmt::format("sample_weight for output '{}'", names[o]), fn);
    }
    if (!weighted(w)) w.clear();
  }
  if (!class_weight.empty()) {
    if (!w.empty() && w[0].shape().rank() > 1) {
      throw ValueError(fmt::format("{}: class_weight with a sample_weight of shape {} (more than one weight per "
                                   "sample): Keras takes one or the other; multiply the class weights into "
                                   "sample_weight",
                                   fn, w[0].shape().to_string()));
    }
    w = {with_class_weights(n, ys.at(0), w.empty() ? Tensor() : w[0], class_weight)};
  }
  return w;
}

}  // namespace osprey::keras::trainer
