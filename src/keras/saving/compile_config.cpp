// A model's compile_config both ways: the optimizer (with its learning-rate schedule), the losses and metrics as
// they were given (strings stay strings, objects keep their options: loss_metric_config.cpp), per output for
// multi-output models, and loss_weights (keras/src/trainers/compile_utils.py, Trainer.get_compile_config / compile_from_config).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "keras/models/model_state.h"
#include "keras/saving/loss_metric_config.h"
#include "keras/saving/serialization.h"
#include "keras/saving/weights_h5.h"
#include "osprey/errors.h"
#include "osprey/keras/model.h"
#include "osprey/keras/saving.h"

namespace osprey::keras::serialization {

namespace {

// A learning-rate schedule as Keras serializes it (its config keeps Keras's default names).
json schedule_json(const optimizers::schedules::LearningRateSchedule& s) {
  namespace sc = optimizers::schedules;
  const std::string module = "keras.optimizers.schedules";
  if (auto* e = dynamic_cast<const sc::ExponentialDecay*>(&s)) {
    const auto& o = e->options();
    return object(module, "ExponentialDecay",
                  json{{"initial_learning_rate", o.initial_learning_rate}, {"decay_steps", o.decay_steps},
                       {"decay_rate", o.decay_rate}, {"staircase", o.staircase}, {"name", "ExponentialDecay"}});
  }
  if (auto* i = dynamic_cast<const sc::InverseTimeDecay*>(&s)) {
    const auto& o = i->options();
    return object(module, "InverseTimeDecay",
                  json{{"initial_learning_rate", o.initial_learning_rate}, {"decay_steps", o.decay_steps},
                       {"decay_rate", o.decay_rate}, {"staircase", o.staircase}, {"name", "InverseTimeDecay"}});
  }
  if (auto* c = dynamic_cast<const sc::CosineDecay*>(&s)) {
    const auto& o = c->options();
    return object(module, "CosineDecay",
                  json{{"initial_learning_rate", o.initial_learning_rate}, {"decay_steps", o.decay_steps},
                       {"alpha", o.alpha}, {"name", "CosineDecay"},
                       {"warmup_target", o.warmup_target ? json(*o.warmup_target) : json(nullptr)},
                       {"warmup_steps", o.warmup_steps}});
  }
  if (auto* p = dynamic_cast<const sc::PiecewiseConstantDecay*>(&s)) {
    return object(module, "PiecewiseConstantDecay",
                  json{{"boundaries", p->boundaries()}, {"values", p->values()}, {"name", "PiecewiseConstant"}});
  }
  throw ValueError("to_json: this learning-rate schedule has no Keras serialization (a user-defined schedule)");
}

json optimizer_json(const optimizers::Optimizer& o) {
  namespace opt = optimizers;
  const auto& base = o.base_options();
  auto nullable = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  static const std::map<std::string, std::string> names = {{"SGD", "sgd"},       {"Adam", "adam"},
                                                           {"AdamW", "adam_w"},  {"RMSprop", "rm_sprop"},
                                                           {"Adagrad", "adagrad"}, {"Adamax", "adamax"},
                                                           {"Nadam", "nadam"}};
  const std::string cls = o.class_name();
  // The optimizer's own name when it was given one (a loaded file's "adam_2"), else Keras's default.
  json cfg{{"name", !o.name().empty() && o.name() != cls ? o.name() : names.count(cls) ? names.at(cls) : cls},
           {"learning_rate", o.schedule() ? schedule_json(*o.schedule()) : json(static_cast<double>(o.learning_rate()))},
           {"weight_decay", nullable(base.weight_decay)},
           {"clipnorm", nullable(base.clipnorm)},
           {"global_clipnorm", nullable(base.global_clipnorm)},
           {"clipvalue", nullable(base.clipvalue)},
           {"use_ema", false},
           {"ema_momentum", 0.99},
           {"ema_overwrite_frequency", nullptr},
           {"loss_scale_factor", nullptr},
           {"gradient_accumulation_steps", nullptr}};
  if (auto* s = dynamic_cast<const opt::SGD*>(&o)) {
    cfg["momentum"] = s->options().momentum;
    cfg["nesterov"] = s->options().nesterov;
  } else if (auto* a = dynamic_cast<const opt::Adam*>(&o)) {
    cfg["beta_1"] = a->options().beta_1;
    cfg["beta_2"] = a->options().beta_2;
    cfg["epsilon"] = a->options().epsilon;
    cfg["amsgrad"] = a->options().amsgrad;
  } else if (auto* r = dynamic_cast<const opt::RMSprop*>(&o)) {
    cfg["rho"] = r->options().rho;
    cfg["momentum"] = r->options().momentum;
    cfg["epsilon"] = r->options().epsilon;
    cfg["centered"] = r->options().centered;
  } else if (auto* g = dynamic_cast<const opt::Adagrad*>(&o)) {
    cfg["initial_accumulator_value"] = g->options().initial_accumulator_value;
    cfg["epsilon"] = g->options().epsilon;
  } else if (auto* x = dynamic_cast<const opt::Adamax*>(&o)) {
    cfg["beta_1"] = x->options().beta_1;
    cfg["beta_2"] = x->options().beta_2;
    cfg["epsilon"] = x->options().epsilon;
  } else if (auto* n = dynamic_cast<const opt::Nadam*>(&o)) {
    cfg["beta_1"] = n->options().beta_1;
    cfg["beta_2"] = n->options().beta_2;
    cfg["epsilon"] = n->options().epsilon;
  }
  const auto* ls = o.loss_scale();
  if (!ls || !ls->requested) return object("keras.optimizers", cls, cfg);
  // An explicit LossScaleOptimizer around it (compile()'s own wrapping under mixed_float16 is not recorded: Keras
  // records the optimizer given to compile, and wraps it again when the file is compiled).
  return object("keras.optimizers", "LossScaleOptimizer",
                json{{"name", ls->options.name},
                     {"inner_optimizer", object("keras.optimizers", cls, cfg)},
                     {"initial_scale", ls->options.initial_scale},
                     {"dynamic_growth_steps", ls->options.dynamic_growth_steps}});
}

optimizers::LearningRate learning_rate(const json& j) {
  namespace s = optimizers::schedules;
  if (j.is_number()) return j.get<double>();
  const std::string cls = j.value("class_name", "");
  const json& c = config_of(j, "the learning rate");
  if (cls == "ExponentialDecay") {
    return s::ExponentialDecay({.initial_learning_rate = c.at("initial_learning_rate").get<double>(),
                                .decay_steps = integer(c, "decay_steps", 1, int64_t{1} << 62, "a schedule's"),
                                .decay_rate = c.at("decay_rate").get<double>(),
                                .staircase = value_or(c, "staircase", false)});
  }
  if (cls == "InverseTimeDecay") {
    return s::InverseTimeDecay({.initial_learning_rate = c.at("initial_learning_rate").get<double>(),
                                .decay_steps = integer(c, "decay_steps", 1, int64_t{1} << 62, "a schedule's"),
                                .decay_rate = c.at("decay_rate").get<double>(),
                                .staircase = value_or(c, "staircase", false)});
  }
  if (cls == "PiecewiseConstantDecay") {
    return s::PiecewiseConstantDecay(c.at("boundaries").get<std::vector<int64_t>>(),
                                     c.at("values").get<std::vector<double>>());
  }
  if (cls == "CosineDecay") {
    return s::CosineDecay({.initial_learning_rate = c.at("initial_learning_rate").get<double>(),
                           .decay_steps = integer(c, "decay_steps", 1, int64_t{1} << 62, "a schedule's"),
                           .alpha = value_or(c, "alpha", 0.0),
                           .warmup_target = optional_number(c, "warmup_target"),
                           .warmup_steps = c.contains("warmup_steps") && !c["warmup_steps"].is_null()
                                               ? integer(c, "warmup_steps", 0, int64_t{1} << 62, "CosineDecay's")
                                               : 0});
  }
  unsupported("learning-rate schedule", cls, "ExponentialDecay, InverseTimeDecay, PiecewiseConstantDecay, CosineDecay");
}

static OptimizerRef plain_optimizer_from(const std::string& cls, const json& c);
OptimizerRef optimizer_from(const json& j);

// keras.optimizers.LossScaleOptimizer's config: its name, the inner optimizer, initial_scale, dynamic_growth_steps;
// the base options Keras still accepts at their defaults (older files), nothing else.
static OptimizerRef loss_scale_optimizer_from(const json& c) {
  if (c.contains("dynamic") && c["dynamic"] == json(false)) {
    throw ValueError("LossScaleOptimizer no longer supports `dynamic=False`. Instead, simply set `loss_scale_factor` "
                     "directly on the `inner_optimizer`.");
  }
  static const std::map<std::string, json> defaults = {
      {"weight_decay", nullptr},       {"clipnorm", nullptr},        {"global_clipnorm", nullptr},
      {"clipvalue", nullptr},          {"use_ema", false},           {"ema_momentum", 0.99},
      {"ema_overwrite_frequency", nullptr}, {"loss_scale_factor", nullptr}, {"gradient_accumulation_steps", nullptr}};
  for (const auto& [k, v] : c.items()) {
    if (k == "name" || k == "inner_optimizer" || k == "initial_scale" || k == "dynamic_growth_steps" || k == "dynamic") {
      continue;
    }
    const auto d = defaults.find(k);
    if (d == defaults.end()) throw ValueError(fmt::format("LossScaleOptimizer does not support arguments: `{}`.", k));
    if (v != d->second) {
      throw ValueError(fmt::format("LossScaleOptimizer does not support `{}`. Instead, set `{}` on the "
                                   "`inner_optimizer`.",
                                   k, k));
    }
  }
  if (!c.contains("inner_optimizer")) throw ValueError("LossScaleOptimizer's config has no `inner_optimizer`");
  optimizers::LossScaleOptions ls;
  if (c.contains("name") && c["name"].is_string()) ls.name = c["name"].get<std::string>();
  ls.initial_scale = value_or(c, "initial_scale", ls.initial_scale);
  if (c.contains("dynamic_growth_steps")) {
    ls.dynamic_growth_steps = integer(c, "dynamic_growth_steps", 1, int64_t{1} << 62, "LossScaleOptimizer's");
  }
  const json& inner = c["inner_optimizer"];
  if (inner.is_object() && inner.value("class_name", "") == "LossScaleOptimizer") {
    throw ValueError("LossScaleOptimizer: the inner optimizer is itself a LossScaleOptimizer");
  }
  return optimizers::LossScaleOptimizer(optimizer_from(inner), ls);
}

OptimizerRef optimizer_from(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  const std::string cls = j.value("class_name", "");
  const json& c = config_of(j, "the optimizer");
  if (cls == "LossScaleOptimizer") return loss_scale_optimizer_from(c);
  OptimizerRef o = plain_optimizer_from(cls, c);
  if (c.contains("name") && c["name"].is_string()) o.get()->set_name(c["name"].get<std::string>());
  return o;
}

static OptimizerRef plain_optimizer_from(const std::string& cls, const json& c) {
  namespace o = optimizers;
  for (const char* key : {"use_ema", "loss_scale_factor", "gradient_accumulation_steps"}) {
    if (c.contains(key) && !c[key].is_null() && c[key] != json(false)) unsupported("optimizer option", key, "the others");
  }
  o::BaseOptions base{.clipnorm = optional_number(c, "clipnorm"),
                      .clipvalue = optional_number(c, "clipvalue"),
                      .global_clipnorm = optional_number(c, "global_clipnorm"),
                      .weight_decay = optional_number(c, "weight_decay")};
  const auto lr = learning_rate(c.at("learning_rate"));
  const double eps = value_or(c, "epsilon", 1e-7), b1 = value_or(c, "beta_1", 0.9), b2 = value_or(c, "beta_2", 0.999);
  if (cls == "SGD") {
    return o::SGD({.learning_rate = lr, .momentum = value_or(c, "momentum", 0.0),
                   .nesterov = value_or(c, "nesterov", false), .base = base});
  }
  if (cls == "Adam") {
    return o::Adam({.learning_rate = lr, .beta_1 = b1, .beta_2 = b2, .epsilon = eps,
                    .amsgrad = value_or(c, "amsgrad", false), .base = base});
  }
  if (cls == "AdamW") {
    const double wd = base.weight_decay.value_or(0.004);
    base.weight_decay.reset();
    return o::AdamW({.learning_rate = lr, .weight_decay = wd, .beta_1 = b1, .beta_2 = b2, .epsilon = eps,
                     .amsgrad = value_or(c, "amsgrad", false), .base = base});
  }
  if (cls == "RMSprop") {
    return o::RMSprop({.learning_rate = lr, .rho = value_or(c, "rho", 0.9), .momentum = value_or(c, "momentum", 0.0),
                       .epsilon = eps, .centered = value_or(c, "centered", false), .base = base});
  }
  if (cls == "Adagrad") {
    return o::Adagrad({.learning_rate = lr,
                       .initial_accumulator_value = value_or(c, "initial_accumulator_value", 0.1),
                       .epsilon = eps,
                       .base = base});
  }
  if (cls == "Adamax") return o::Adamax({.learning_rate = lr, .beta_1 = b1, .beta_2 = b2, .epsilon = eps, .base = base});
  if (cls == "Nadam") return o::Nadam({.learning_rate = lr, .beta_1 = b1, .beta_2 = b2, .epsilon = eps, .base = base});
  unsupported("optimizer", cls, "SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, Nadam");
}

}  // namespace


json compile_config(const Model& model) {
  if (!model.compiled()) return json::object();
  const auto& s = model.state();
  const CompileOptions& o = *s.compile_options;
  const std::string where = "model '" + model.name() + "'";
  json loss = nullptr;
  if (!o.loss.keys.empty()) {
    loss = json::object();
    for (std::size_t i = 0; i < o.loss.list.size(); ++i) loss[o.loss.keys[i]] = loss_json(o.loss.list[i], where);
  } else if (o.loss.list.size() == 1) {
    loss = loss_json(o.loss.list[0], where);
  } else if (!o.loss.list.empty()) {
    loss = json::array();
    for (const auto& l : o.loss.list) loss.push_back(loss_json(l, where));
  }
  json loss_weights = nullptr;
  if (!o.loss_weights.by_output.empty()) {
    loss_weights = json::object();
    for (const auto& [k, w] : o.loss_weights.by_output) loss_weights[k] = w;
  } else if (!o.loss_weights.list.empty()) {
    loss_weights = o.loss_weights.list;
  }
  // metrics and weighted_metrics: a list, a map by output name, or a list per output (by_position).
  auto metrics_json = [&](const MetricSpec& spec) {
    json out = nullptr;
    if (!spec.by_output.empty() && spec.by_position) {
      out = json::array();
      for (const auto& name : model.output_names()) {
        const auto it = spec.by_output.find(name);
        out.push_back(it == spec.by_output.end() ? json(nullptr) : metric_list(it->second, where));
      }
    } else if (!spec.by_output.empty()) {
      out = json::object();
      for (const auto& [k, list] : spec.by_output) out[k] = metric_list(list, where);
    } else if (!spec.list.empty()) {
      out = metric_list(spec.list, where);
    }
    return out;
  };
  const json metrics = metrics_json(o.metrics), weighted = metrics_json(o.weighted_metrics);
  return json{{"optimizer", optimizer_json(*s.optimizer)},
              {"loss", loss},
              {"loss_weights", loss_weights},
              {"metrics", metrics},
              {"weighted_metrics", weighted},
              {"run_eagerly", s.run_eagerly},
              {"steps_per_execution", 1},
              {"jit_compile", false}};
}

void compile_from_config(Model& model, const json& cc, bool tf_logits_shortcut) {
  if (!cc.is_object() || cc.empty()) return;  // saved uncompiled
  const json steps = cc.value("steps_per_execution", json(1));
  if (steps != json(1) && !steps.is_null()) unsupported("compile option steps_per_execution", steps.dump(), "1");
  CompileOptions o;
  o.optimizer = optimizer_from(cc.at("optimizer"));
  const json loss = cc.value("loss", json());
  if (loss.is_object() && !loss.contains("class_name")) {  // per output, by name
    std::map<std::string, LossRef> named;
    for (const auto& [k, v] : loss.items()) named.emplace(k, loss_from(v));
    o.loss = LossSpec(named);
  } else if (loss.is_array()) {
    for (const auto& v : loss) o.loss.list.push_back(loss_from(v));
  } else if (!loss.is_null()) {
    o.loss = LossSpec(loss_from(loss));
  }
  const json weights = cc.value("loss_weights", json());
  if (weights.is_object()) {
    for (const auto& [k, v] : weights.items()) o.loss_weights.by_output[k] = v.get<double>();
  } else if (weights.is_array()) {
    for (const auto& v : weights) o.loss_weights.list.push_back(v.get<double>());
  } else if (weights.is_number()) {
    o.loss_weights.list.push_back(weights.get<double>());
  }
  // metrics and weighted_metrics as Keras writes them: a list, a map by output name, or a list per output.
  auto spec_from = [&](const json& metrics, const char* key) {
    MetricSpec spec;
    if (metrics.is_object() && !metrics.contains("class_name")) {
      std::map<std::string, std::vector<MetricRef>> named;
      for (const auto& [k, v] : metrics.items()) named[k] = metrics_from(v.is_array() ? v : json::array({v}));
      spec = MetricSpec(std::move(named));
    } else if (metrics.is_array() && !metrics.empty() &&
               std::all_of(metrics.begin(), metrics.end(), [](const json& v) { return v.is_array() || v.is_null(); })) {
      // A list per output, in the model's output order (Keras's metrics=[[...], [...]]).
      const auto outputs = model.output_names();
      if (metrics.size() != outputs.size()) {
        throw ValueError(fmt::format("load_model: the compile_config gives {} for {} outputs; model '{}' has {} ({})",
                                     key, metrics.size(), model.name(), outputs.size(), fmt::join(outputs, ", ")));
      }
      std::map<std::string, std::vector<MetricRef>> named;
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (!metrics[i].is_null()) named[outputs[i]] = metrics_from(metrics[i]);
      }
      spec = MetricSpec(std::move(named));
      spec.by_position = true;
    } else if (!metrics.is_null()) {
      spec = MetricSpec(metrics_from(metrics.is_array() ? metrics : json::array({metrics})));
    }
    return spec;
  };
  o.metrics = spec_from(cc.value("metrics", json()), "metrics");
  o.weighted_metrics = spec_from(cc.value("weighted_metrics", json()), "weighted_metrics");
  o.run_eagerly = value_or(cc, "run_eagerly", false);
  o.tf_logits_shortcut = tf_logits_shortcut;
  if (o.loss.list.empty()) {
    throw ValueError("load_model: the file's compile_config has no loss; load it with {.compile = false} and "
                     "compile() it yourself");
  }
  model.compile(std::move(o));
}

}  // namespace osprey::keras::serialization
