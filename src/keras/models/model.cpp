// keras::Model: functional models from a graph of symbolic tensors, compile(), and what every model has (layers,
// variables, names). The training engine is in src/keras/trainers/.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "keras/models/model_state.h"
#include "keras/utils/naming.h"
#include "osprey/errors.h"

namespace osprey::keras {

Arrays::Arrays(const std::map<std::string, Tensor>& named) {
  for (const auto& [k, t] : named) {
    keys.push_back(k);
    tensors.push_back(t);
  }
}

LossSpec::LossSpec(const std::map<std::string, LossRef>& named) {
  for (const auto& [k, l] : named) {
    keys.push_back(k);
    list.push_back(l);
  }
}

const std::string& LossSpec::spelled() const {
  static const std::string none;
  return list.empty() ? none : list[0].spelled();
}

Model::Model(std::string name, const std::string& prefix, bool defer_name)
    : Layer(name, defer_name ? std::string() : prefix), s_(std::make_unique<State>()) {
  s_->strategy = distribute::current_strategy();
}

Model::Model(const KerasTensors& inputs, const KerasTensors& outputs, std::string name)
    : Layer(name, "functional"), s_(std::make_unique<State>()) {
  s_->strategy = distribute::current_strategy();
  s_->graph = build_graph(inputs.tensors, outputs.tensors, name_);
  if (!outputs.keys.empty()) s_->graph->output_names = outputs.keys;
  if (!inputs.keys.empty()) s_->graph->input_names = inputs.keys;
  s_->graph->outputs_named = !outputs.keys.empty();
  s_->graph->inputs_named = !inputs.keys.empty();
  s_->graph->outputs_single = outputs.single;
  s_->graph->inputs_single = inputs.single;
  s_->layers = s_->graph->layers;
  for (auto& l : s_->layers) {
    for (auto* v : l->variables()) {
      if (!s_->device) s_->device = &v->value().device_ref();
    }
  }
  output_shape_ = s_->graph->outputs[0].shape();
  built_ = true;
}

Model::Model(std::string name, int num_outputs) : Layer(name, "model"), s_(std::make_unique<State>()) {
  if (num_outputs < 1) throw ValueError(fmt::format("Model '{}': num_outputs must be >= 1, got {}", name_, num_outputs));
  s_->strategy = distribute::current_strategy();
  s_->subclassed = true;
  s_->subclass_outputs = num_outputs;
  built_ = true;
}

void Model::track_layer(std::shared_ptr<Layer> layer, const std::string& attribute) {
  auto& s = state();
  if (!layer) throw ValueError(fmt::format("Model '{}': track_layer() was given no layer (a null pointer)", name_));
  for (std::size_t i = 0; i < s.layers.size(); ++i) {
    if (s.layers[i] == layer) return;
    if (!attribute.empty() && s.attributes[i] == attribute) {
      throw ValueError(fmt::format("Model '{}': the attribute name '{}' is already used by layer '{}'", name_,
                                   attribute, s.layers[i]->name()));
    }
    if (s.layers[i]->name() == layer->name()) {
      throw ValueError(fmt::format("Model '{}': a layer named '{}' is already tracked; give each layer its own name",
                                   name_, layer->name()));
    }
  }
  s.layers.push_back(std::move(layer));
  s.attributes.push_back(attribute);
  s.recordable = -1;
}

int Model::num_outputs() const { return state().num_outputs(); }

std::vector<Shape> Model::output_shapes() const {
  const auto& s = state();
  if (!s.graph || s.sequential) return Layer::output_shapes();
  std::vector<Shape> out;
  for (const auto& t : s.graph->outputs) out.push_back(t.shape());
  return out;
}

std::vector<Tensor> Model::call_outputs(const std::vector<Tensor>& inputs, bool training) {
  if (!state().subclassed) return call_all(inputs, training);
  // Model::call() itself comes back here: a subclass that overrides neither has no forward pass.
  static thread_local const Model* in_default_call = nullptr;
  if (in_default_call == this) {
    in_default_call = nullptr;
    throw NotImplementedError(fmt::format("Model '{}' is a Model subclass without a call(): override call(const "
                                          "Tensor&, bool) (or call(const std::vector<Tensor>&, bool), or "
                                          "call_outputs() for several outputs)",
                                          name_));
  }
  const Model* previous = in_default_call;
  in_default_call = this;
  try {
    Tensor out = inputs.size() == 1 ? call(inputs[0], training) : call(inputs, training);
    in_default_call = previous;
    return {out};
  } catch (...) {
    in_default_call = previous;
    throw;
  }
}

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model::State& Model::state() const {
  if (!s_) throw FailedPreconditionError("This model is empty (moved from or default-constructed); assign a model first.");
  return *s_;
}

std::string Model::class_name() const { return "Functional"; }

Shape Model::build(const Shape& input_shape) { return build(std::vector<Shape>{input_shape}); }

Shape Model::build(const std::vector<Shape>& input_shapes) {
  auto& s = state();
  if (s.subclassed) {  // its call() says what it makes of inputs of these shapes: one sample of zeros through it
    std::vector<Tensor> zeros;
    for (const auto& shape : input_shapes) {
      std::vector<int64_t> dims{1};
      for (auto d : shape.dims()) dims.push_back(d);
      zeros.push_back(Tensor::zeros(Shape(dims)));
    }
    const auto out = call_all(zeros, false);
    const auto dims = out.at(0).shape().dims();
    output_shape_ = Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
    return output_shape_;
  }
  bool fits = s.graph && input_shapes.size() == s.graph->inputs.size();
  for (std::size_t i = 0; fits && i < input_shapes.size(); ++i) fits = input_shapes[i] == s.graph->inputs[i].shape();
  if (!fits) {
    std::vector<std::string> want, got;
    if (s.graph) {
      for (const auto& t : s.graph->inputs) want.push_back(t.shape().to_keras_string());
    }
    for (const auto& sh : input_shapes) got.push_back(sh.to_keras_string());
    throw ValueError(fmt::format("Model '{}' takes inputs of per-sample shape(s) [{}], but it was called on [{}]",
                                 name_, fmt::join(want, ", "), fmt::join(got, ", ")));
  }
  return output_shape_;
}

Tensor Model::call(const Tensor& inputs, bool training) { return call(std::vector<Tensor>{inputs}, training); }

Tensor Model::call(const std::vector<Tensor>& inputs, bool training) {
  auto out = call_all(inputs, training);
  if (out.size() != 1) {
    throw ValueError(fmt::format("Model '{}' has {} outputs; call call_all() to get them all", name_, out.size()));
  }
  return out[0];
}

bool Model::recordable() const {
  auto& s = state();
  return !s.subclassed && std::all_of(s.layers.begin(), s.layers.end(), [](auto& l) { return l->recordable(); });
}

bool Model::mixes_samples() const {
  auto& s = state();
  return s.subclassed || std::any_of(s.layers.begin(), s.layers.end(), [](auto& l) { return l->mixes_samples(); });
}

int Model::num_inputs() const { return std::max(state().num_inputs(), 0); }

const std::vector<KerasTensor>& Model::inputs() const {
  static const std::vector<KerasTensor> none;
  return s_ && s_->graph ? s_->graph->inputs : none;
}
const std::vector<KerasTensor>& Model::outputs() const {
  static const std::vector<KerasTensor> none;
  return s_ && s_->graph ? s_->graph->outputs : none;
}

std::vector<std::string> Model::output_names() const {
  auto& s = state();
  if (s.graph) return s.graph->output_names;
  if (s.subclassed && s.subclass_outputs > 1) {
    std::vector<std::string> names;
    for (int o = 0; o < s.subclass_outputs; ++o) names.push_back(fmt::format("output_{}", o));
    return names;
  }
  return {s.layers.empty() ? name_ : s.layers.back()->name()};
}

std::vector<std::shared_ptr<Layer>> Model::layers() const {
  auto& s = state();
  if (!s.graph || s.sequential) return s.layers;  // Keras's Sequential.layers leaves its Input out
  return s.graph->all_layers;
}

std::shared_ptr<Layer> Model::get_layer(const std::string& layer_name) const {
  std::vector<std::string> names;
  for (auto& l : layers()) {
    if (l->name() == layer_name) return l;
    names.push_back(l->name());
  }
  throw ValueError(fmt::format("No such layer: {}. Existing layers are: [{}].", layer_name, fmt::join(names, ", ")));
}

std::vector<Variable*> Model::variables() const {
  std::vector<Variable*> out;
  for (auto& l : state().layers) {
    for (auto* v : l->variables()) out.push_back(v);
  }
  return out;
}
std::vector<Variable*> Model::variables() { return std::as_const(*this).variables(); }

void Model::append_trainable_variables(std::vector<Variable*>& out) {
  if (!trainable) return;
  for (auto& l : state().layers) {
    if (l->trainable) l->append_trainable_variables(out);
  }
}

std::vector<Variable*> Model::trainable_variables() const {
  std::vector<Variable*> out;
  const_cast<Model&>(*this).append_trainable_variables(out);
  return out;
}

int64_t Model::count_params() const {
  int64_t n = 0;
  for (auto& l : state().layers) n += l->count_params();
  return n;
}

std::vector<Tensor> Model::regularization_losses() {
  std::vector<Tensor> out;
  for (auto& l : state().layers) {
    for (auto& p : l->regularization_losses()) out.push_back(p);
  }
  return out;
}
bool Model::has_regularization() const {
  return std::any_of(state().layers.begin(), state().layers.end(), [](auto& l) { return l->has_regularization(); });
}
void Model::apply_constraints() {
  for (auto& l : state().layers) l->apply_constraints();
}

std::optional<Shape> Model::input_shape() const {
  auto& s = state();
  if (s.graph) return s.graph->inputs[0].shape();
  return s.input_shape;
}
bool Model::compiled() const { return state().compiled; }
const std::string& Model::compiled_loss_name() const {
  static const std::string none;
  const auto& o = state().compile_options;
  return o ? o->loss.spelled() : none;
}
std::vector<std::string> Model::compiled_metric_names() const {
  std::vector<std::string> out;
  for (auto& m : state().metrics) out.push_back(m.log_name);
  return out;
}
bool Model::run_eagerly() const { return state().run_eagerly; }
std::shared_ptr<optimizers::Optimizer> Model::optimizer() const { return state().optimizer; }

std::vector<std::string> Model::metrics_names() const {
  auto& s = state();
  std::vector<std::string> names{"loss"};
  if (s.num_outputs() > 1) {
    for (const auto& o : output_names()) names.push_back(o + "_loss");
  }
  for (auto& m : s.metrics) names.push_back(m.log_name);
  return names;
}

// The from_logits form of a probability loss when the output's layer is a Dense with the matching activation
// (TensorFlow-backend Keras's shortcut), else nullptr.
static std::shared_ptr<losses::Loss> logits_form(const Layer* output_layer, const std::shared_ptr<losses::Loss>& loss) {
  auto* dense = dynamic_cast<const layers::Dense*>(output_layer);
  const auto act = dense ? dense->activation() : osprey::ops::Activation::linear;
  std::shared_ptr<losses::Loss> out;
  if (auto* bce = dynamic_cast<losses::BinaryCrossentropy*>(loss.get());
      bce && act == osprey::ops::Activation::sigmoid && !bce->options().from_logits) {
    out = std::make_shared<losses::BinaryCrossentropy>(losses::CrossentropyOptions{bce->options().label_smoothing, true});
  } else if (auto* cce = dynamic_cast<losses::CategoricalCrossentropy*>(loss.get());
             cce && act == osprey::ops::Activation::softmax && !cce->options().from_logits) {
    out = std::make_shared<losses::CategoricalCrossentropy>(
        losses::CrossentropyOptions{cce->options().label_smoothing, true});
  } else if (auto* scce = dynamic_cast<losses::SparseCategoricalCrossentropy*>(loss.get());
             scce && act == osprey::ops::Activation::softmax && !scce->options().from_logits &&
             !scce->options().ignore_class) {  // ignore_class's where(valid, y_pred, 0) drops TF's logits: clipped
    out = std::make_shared<losses::SparseCategoricalCrossentropy>(losses::SparseCategoricalCrossentropy::Options{true});
  }
  if (out) out->set_reduction(loss->reduction());
  return out;
}

// Per output, in the outputs' order: a list of the outputs' count, or a map with exactly their names (Keras 3.15
// requires every output in a loss map).
template <typename T>
static std::vector<T> per_output(const std::vector<T>& list, const std::vector<std::string>& keys,
                                 const std::vector<std::string>& outputs, const char* what, const std::string& model,
                                 bool every_key) {
  if (keys.empty()) {
    if (list.size() != outputs.size()) {
      throw ValueError(fmt::format("compile(): model '{}' has {} output(s) ({}), but `{}` has {} entries; give one per "
                                   "output or a map by output name",
                                   model, outputs.size(), fmt::join(outputs, ", "), what, list.size()));
    }
    return list;
  }
  std::vector<T> out(outputs.size());
  std::vector<bool> seen(outputs.size(), false);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    auto it = std::find(outputs.begin(), outputs.end(), keys[k]);
    if (it == outputs.end()) {
      throw ValueError(fmt::format("compile(): `{}` names '{}', which is not an output of model '{}' (outputs: {})",
                                   what, keys[k], model, fmt::join(outputs, ", ")));
    }
    out[static_cast<std::size_t>(it - outputs.begin())] = list[k];
    seen[static_cast<std::size_t>(it - outputs.begin())] = true;
  }
  if (every_key && std::count(seen.begin(), seen.end(), false)) {
    std::vector<std::string> found(keys);
    throw ValueError(fmt::format("Expected keys [{}] in {} dict, but found {}.keys()=[{}]", fmt::join(outputs, ", "),
                                 what, what, fmt::join(found, ", ")));
  }
  return out;
}

void Model::compile(CompileOptions options) {
  auto& s = state();
  const auto outputs = output_names();
  const std::size_t n = outputs.size();
  if (options.loss.list.empty()) {
    throw ValueError("compile() needs a loss, e.g. .loss = \"binary_crossentropy\" or \"mse\".");
  }
  std::vector<LossRef> losses_in = options.loss.list;
  if (n > 1 && options.loss.keys.empty() && losses_in.size() == 1) losses_in.assign(n, losses_in[0]);  // one for all
  losses_in = per_output(losses_in, options.loss.keys, outputs, "loss", name_, true);
  std::vector<double> weights(n, 1.0);
  if (!options.loss_weights.list.empty()) {
    weights = per_output(options.loss_weights.list, {}, outputs, "loss_weights", name_, false);
  } else if (!options.loss_weights.by_output.empty()) {
    std::vector<double> list;
    std::vector<std::string> keys;
    for (const auto& [k, v] : options.loss_weights.by_output) {
      keys.push_back(k);
      list.push_back(v);
    }
    weights = per_output(list, keys, outputs, "loss_weights", name_, false);
    for (std::size_t o = 0; o < n; ++o) {
      if (std::find(keys.begin(), keys.end(), outputs[o]) == keys.end()) weights[o] = 1.0;
    }
  }
  for (const auto& l : losses_in) {
    if (l.get() && l.get()->reduction() == losses::Reduction::none) {
      throw ValueError("compile(): a loss with reduction \"none\" gives one value per sample; training needs a scalar. "
                       "Use \"sum_over_batch_size\" (the default), \"sum\" or \"mean_with_sample_weight\".");
    }
  }
  // Keras's CompileMetrics: `metrics`, then `weighted_metrics`, each in output order.
  std::vector<CompiledMetric> metrics;
  auto add_metrics = [&](const MetricSpec& spec, bool weighted) {
    const char* arg = weighted ? "weighted_metrics" : "metrics";
    std::vector<CompiledMetric> added;
    if (!spec.by_output.empty()) {
      for (const auto& [key, list] : spec.by_output) {
        auto it = std::find(outputs.begin(), outputs.end(), key);
        if (it == outputs.end()) {
          throw ValueError(fmt::format("compile(): `{}` names '{}', which is not an output of model '{}' (outputs: "
                                       "{})",
                                       arg, key, name_, fmt::join(outputs, ", ")));
        }
        for (const auto& m : list) {
          added.push_back({m.get(), static_cast<int>(it - outputs.begin()),
                           n > 1 ? key + "_" + m.get()->name() : m.get()->name(), weighted});
        }
      }
      std::stable_sort(added.begin(), added.end(), [](auto& a, auto& b) { return a.output < b.output; });
    } else if (!spec.list.empty()) {
      if (n > 1) {
        throw ValueError(fmt::format("Invalid `{}`: model '{}' has {} outputs ({}); give the metrics as a map by "
                                     "output name, e.g. .{} = {{{{\"{}\", {{\"accuracy\"}}}}}}",
                                     arg, name_, n, fmt::join(outputs, ", "), arg, outputs[0]));
      }
      for (const auto& m : spec.list) added.push_back({m.get(), 0, m.get()->name(), weighted});
    }
    for (const auto& m : added) {
      for (const auto& earlier : metrics) {
        if (weighted && !earlier.weighted && earlier.metric == m.metric) {  // it would count every batch twice
          throw ValueError(fmt::format("compile(): metric object '{}' is in both `metrics` and `weighted_metrics`: "
                                       "give each list its own metric object",
                                       m.metric->name()));
        }
      }
      metrics.push_back(m);
    }
  };
  add_metrics(options.metrics, false);
  add_metrics(options.weighted_metrics, true);
  // Keras's log names: a name met again gets "_1", "_2", ...; a weighted metric whose name is taken is
  // "weighted_<name>" (after the output's prefix) first.
  std::map<std::string, int> taken;
  for (auto& m : metrics) {
    if (m.weighted && taken.count(m.log_name)) {
      const std::string prefix = m.log_name.substr(0, m.log_name.size() - m.metric->name().size());
      m.log_name = prefix + "weighted_" + m.metric->name();
    }
    if (int& seen = taken[m.log_name]; seen++ > 0) m.log_name += fmt::format("_{}", seen - 1);
  }
  if (!s.strategy) s.strategy = distribute::current_strategy();
  s.plans.clear();
  s.recordable = -1;
  s.run_eagerly = options.run_eagerly;
  s.optimizer = options.optimizer.get();
  // Keras wraps the optimizer in a LossScaleOptimizer for a model under mixed_float16 (auto_scale_loss).
  if (options.auto_scale_loss && s.optimizer && !s.optimizer->loss_scale() &&
      dtype_policy().name() == "mixed_float16") {
    s.optimizer->enable_loss_scaling({}, false);
  }
  s.losses.clear();
  s.logits_losses.assign(n, nullptr);
  for (std::size_t o = 0; o < n; ++o) {
    s.losses.push_back(losses_in[o].get());
    if (!options.tf_logits_shortcut || !s.losses[o]) continue;
    const Layer* out_layer = s.graph ? s.graph->outputs[o].node()->layer.get()
                                     : (s.layers.empty() ? nullptr : s.layers.back().get());
    s.logits_losses[o] = logits_form(out_layer, s.losses[o]);
  }
  if (std::none_of(s.logits_losses.begin(), s.logits_losses.end(), [](auto& l) { return l != nullptr; })) {
    s.logits_losses.clear();
  }
  s.loss_weights = weights;
  s.metrics = std::move(metrics);
  s.output_loss_values.assign(n > 1 ? n : 0, 0.0);
  s.compile_options = std::move(options);
  s.compiled = true;
}

}  // namespace osprey::keras
