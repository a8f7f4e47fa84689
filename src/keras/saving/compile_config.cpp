// A model's compile_config both ways: the optimizer (with its learning-rate schedule), the losses and metrics as
// they were given (strings stay strings, objects keep their options), per output for multi-output models, and
// loss_weights (keras/src/trainers/compile_utils.py, Trainer.get_compile_config / compile_from_config).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "keras/metrics/metric_helpers.h"
#include "keras/models/model_state.h"
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

// A registered function as Keras serializes one: {"module": "builtins", "class_name": "function", "config":
// "package>name", "registered_name": "function"}; nullptr for any other object.
saving::Function function_from(const json& j, std::string& registered) {
  if (!j.is_object() || j.value("class_name", "") != "function") return nullptr;
  const json c = j.value("config", json());
  if (!c.is_string()) throw ValueError("model_from_json: a serialized function's config must be its registered name");
  auto fn = saving::detail::find_function(c.get<std::string>(), &registered);
  if (!fn) {
    throw ValueError(fmt::format("model_from_json: the function '{}' is not registered; register it first with "
                                 "keras::saving::register_keras_serializable(\"package\", \"name\", fn)",
                                 c.get<std::string>()));
  }
  return fn;
}

// Dice's and Tversky's `axis`: None (every axis), one axis or a list of at most 8.
std::vector<int> overlap_axes(const json& c, const std::string& cls) {
  const json a = c.value("axis", json());
  if (a.is_null()) return {};
  if (a.is_number_integer()) return {static_cast<int>(integer(c, "axis", -8, 8, cls + "'s"))};
  const auto v = integers(c, "axis", -8, 8, cls + "'s", 8);
  return {v.begin(), v.end()};
}

LossRef loss_from(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  std::string registered;
  if (auto fn = function_from(j, registered)) {
    losses::LossFunctionWrapper w(fn, registered.substr(registered.find('>') + 1));
    w.set_registered_name(registered);
    return w;
  }
  const std::string cls = j.value("class_name", "");
  const json& c = config_of(j, "the loss");
  const json reg = j.value("registered_name", json());
  if (reg.is_string() && reg.get<std::string>().find('>') != std::string::npos) {  // a class of the user's
    auto loss = saving::detail::make_loss(reg.get<std::string>(), dumps(c));
    if (!loss) {
      throw ValueError(fmt::format("model_from_json: the loss class '{}' ('{}') is not registered; register it with "
                                   "keras::saving::register_keras_serializable<YourLoss>(\"package\", \"name\")",
                                   cls, reg.get<std::string>()));
    }
    return LossRef(loss);
  }
  const std::string reduction = c.value("reduction", "sum_over_batch_size");
  if (reduction != "sum_over_batch_size") unsupported("loss reduction in a saved model", reduction, "sum_over_batch_size");
  const losses::CrossentropyOptions ce{.label_smoothing = value_or(c, "label_smoothing", 0.0),
                                       .from_logits = value_or(c, "from_logits", false)};
  if (cls == "BinaryCrossentropy") return losses::BinaryCrossentropy(ce);
  if (cls == "CategoricalCrossentropy") return losses::CategoricalCrossentropy(ce);
  if (cls == "SparseCategoricalCrossentropy") {
    return losses::SparseCategoricalCrossentropy({.from_logits = value_or(c, "from_logits", false)});
  }
  if (cls == "Huber") return losses::Huber(value_or(c, "delta", 1.0));
  if (cls == "CTC") return losses::CTC();
  if (cls == "CosineSimilarity") return losses::CosineSimilarity(value_or(c, "axis", -1));
  if (cls == "BinaryFocalCrossentropy" || cls == "CategoricalFocalCrossentropy") {
    if (value_or(c, "axis", -1) != -1) unsupported(cls + " axis", c["axis"].dump(), "-1");
    const losses::FocalOptions f{.apply_class_balancing = value_or(c, "apply_class_balancing", false),
                                 .alpha = value_or(c, "alpha", 0.25),
                                 .gamma = value_or(c, "gamma", 2.0),
                                 .from_logits = ce.from_logits,
                                 .label_smoothing = ce.label_smoothing};
    if (cls == "BinaryFocalCrossentropy") return losses::BinaryFocalCrossentropy(f);
    return losses::CategoricalFocalCrossentropy(f);
  }
  if (cls == "CategoricalGeneralizedCrossEntropy") return losses::CategoricalGeneralizedCrossEntropy(value_or(c, "q", 0.5));
  if (cls == "Dice") return losses::Dice(overlap_axes(c, cls));
  if (cls == "Tversky") return losses::Tversky(value_or(c, "alpha", 0.5), value_or(c, "beta", 0.5), overlap_axes(c, cls));
  if (cls == "Circle") unsupported("loss", cls, "the others of keras.losses");
  return detail::to_snake_case(cls);  // the option-less losses by name (MeanSquaredError -> mean_squared_error)
}

// One threshold from a Precision/Recall config (None: 0.5; a number or a one-element list).
double single_threshold(const json& c, const std::string& cls) {
  const json t = c.value("thresholds", json());
  if (t.is_null()) return 0.5;
  if (t.is_number()) return t.get<double>();
  if (t.is_array() && t.size() == 1 && t[0].is_number()) return t[0].get<double>();
  unsupported(cls + " thresholds", t.dump(), "one threshold");
}

std::optional<double> optional_threshold(const json& c, const char* key, const std::string& cls) {
  const json t = c.value(key, json());
  if (t.is_null()) return std::nullopt;
  if (t.is_number()) return t.get<double>();
  if (t.is_array() && t.size() == 1 && t[0].is_number()) return t[0].get<double>();
  unsupported(cls + " " + key, t.dump().substr(0, 80), "one threshold (a list of several logs several values)");
}
std::string optional_string(const json& c, const char* key) {
  const json v = c.value(key, json());
  return v.is_string() ? v.get<std::string>() : "";
}
std::optional<int64_t> optional_class(const json& c, const std::string& cls) {
  const json v = c.value("ignore_class", json());
  if (v.is_null()) return std::nullopt;
  return integer(c, "ignore_class", -(int64_t{1} << 31), int64_t{1} << 31, cls + "'s");
}

// The metrics of Keras's probabilistic, regression, hinge, correlation, confusion-count, F-score, R² and IoU
// families, with their options; nullptr for other classes.
std::shared_ptr<metrics::Metric> more_metric_object(const std::string& cls, const json& c, const std::string& name) {
  namespace mt = metrics;
  const bool logits = value_or(c, "from_logits", false);
  const double smoothing = value_or(c, "label_smoothing", 0.0);
  const int axis = value_or(c, "axis", -1);
  const int thresholds = c.contains("num_thresholds") ? static_cast<int>(integer(c, "num_thresholds", 1, 1 << 20, cls + "'s")) : 200;
  auto ids = [&](const char* key) { return integers(c, key, 0, 4096, cls + "'s", 4096); };
  const int64_t classes = c.contains("num_classes") ? integer(c, "num_classes", 1, 4096, cls + "'s") : 0;
  std::shared_ptr<mt::Metric> m;
  if (cls == "BinaryCrossentropy") m = std::make_shared<mt::BinaryCrossentropy>(mt::CrossentropyMetricOptions{logits, smoothing}, name);
  else if (cls == "CategoricalCrossentropy")
    m = std::make_shared<mt::CategoricalCrossentropy>(mt::CrossentropyMetricOptions{logits, smoothing}, name);
  else if (cls == "SparseCategoricalCrossentropy") {
    if (c.contains("ignore_class") && !c["ignore_class"].is_null()) unsupported(cls + " option", "ignore_class", "the defaults");
    m = std::make_shared<mt::SparseCategoricalCrossentropy>(logits, name);
  } else if (cls == "CosineSimilarity") m = std::make_shared<mt::CosineSimilarity>(name, axis);
  else if (cls == "PearsonCorrelation") m = std::make_shared<mt::PearsonCorrelation>(name, axis);
  else if (cls == "ConcordanceCorrelation") m = std::make_shared<mt::ConcordanceCorrelation>(name, axis);
  else if (cls == "TruePositives") m = std::make_shared<mt::TruePositives>(optional_threshold(c, "thresholds", cls), name);
  else if (cls == "FalsePositives") m = std::make_shared<mt::FalsePositives>(optional_threshold(c, "thresholds", cls), name);
  else if (cls == "TrueNegatives") m = std::make_shared<mt::TrueNegatives>(optional_threshold(c, "thresholds", cls), name);
  else if (cls == "FalseNegatives") m = std::make_shared<mt::FalseNegatives>(optional_threshold(c, "thresholds", cls), name);
  else if (cls == "F1Score") m = std::make_shared<mt::F1Score>(optional_string(c, "average"), optional_threshold(c, "threshold", cls), name);
  else if (cls == "FBetaScore")
    m = std::make_shared<mt::FBetaScore>(optional_string(c, "average"), value_or(c, "beta", 1.0),
                                         optional_threshold(c, "threshold", cls), name);
  else if (cls == "R2Score")
    m = std::make_shared<mt::R2Score>(optional_string(c, "class_aggregation"),
                                      static_cast<int>(value_or<int64_t>(c, "num_regressors", 0)), name);
  else if (cls == "IoU")
    m = std::make_shared<mt::IoU>(classes, mt::IoU::Options{.target_class_ids = ids("target_class_ids"),
                                                            .ignore_class = optional_class(c, cls),
                                                            .sparse_y_true = value_or(c, "sparse_y_true", true),
                                                            .sparse_y_pred = value_or(c, "sparse_y_pred", true),
                                                            .axis = axis},
                                  name);
  else if (cls == "MeanIoU")
    m = std::make_shared<mt::MeanIoU>(classes, name, optional_class(c, cls), value_or(c, "sparse_y_true", true),
                                      value_or(c, "sparse_y_pred", true), axis);
  else if (cls == "BinaryIoU")
    m = std::make_shared<mt::BinaryIoU>(c.contains("target_class_ids") ? ids("target_class_ids") : std::vector<int64_t>{0, 1},
                                        value_or(c, "threshold", 0.5), name);
  else if (cls == "OneHotIoU")
    m = std::make_shared<mt::OneHotIoU>(classes, ids("target_class_ids"), name, optional_class(c, cls),
                                        value_or(c, "sparse_y_pred", false), axis);
  else if (cls == "OneHotMeanIoU")
    m = std::make_shared<mt::OneHotMeanIoU>(classes, name, optional_class(c, cls), value_or(c, "sparse_y_pred", false), axis);
  else if (cls == "SensitivityAtSpecificity")
    m = std::make_shared<mt::SensitivityAtSpecificity>(number(c, "specificity", 0, 1, cls + "'s"), thresholds, name);
  else if (cls == "SpecificityAtSensitivity")
    m = std::make_shared<mt::SpecificityAtSensitivity>(number(c, "sensitivity", 0, 1, cls + "'s"), thresholds, name);
  else if (cls == "PrecisionAtRecall")
    m = std::make_shared<mt::PrecisionAtRecall>(number(c, "recall", 0, 1, cls + "'s"), thresholds, name);
  else if (cls == "RecallAtPrecision")
    m = std::make_shared<mt::RecallAtPrecision>(number(c, "precision", 0, 1, cls + "'s"), thresholds, name);
  else if (cls == "Accuracy" || cls == "Poisson" || cls == "KLDivergence" || cls == "MeanAbsolutePercentageError" ||
           cls == "MeanSquaredLogarithmicError" || cls == "LogCoshError" || cls == "Hinge" || cls == "SquaredHinge" ||
           cls == "CategoricalHinge")
    m = metrics::detail::more_metrics_by_name(cls);
  if (!m) return nullptr;
  if (c.contains("class_id") && !c["class_id"].is_null()) unsupported(cls + " option", "class_id", "the defaults");
  m->set_name(name);
  return m;
}

// A metric object of a Keras compile_config, with the options Osprey's metrics have; the rest must be defaults.
MetricRef metric_object(const json& m) {
  namespace mt = metrics;
  std::string registered;
  if (auto fn = function_from(m, registered)) {
    mt::MeanMetricWrapper w(fn, registered.substr(registered.find('>') + 1));
    w.set_registered_name(registered);
    return w;
  }
  const std::string cls = m.value("class_name", "");
  const json& c = config_of(m, "metric '" + cls + "'");
  const json reg = m.value("registered_name", json());
  if (reg.is_string() && reg.get<std::string>().find('>') != std::string::npos) {
    auto metric = saving::detail::make_metric(reg.get<std::string>(), dumps(c));
    if (!metric) {
      throw ValueError(fmt::format("model_from_json: the metric class '{}' ('{}') is not registered; register it "
                                   "with keras::saving::register_keras_serializable<YourMetric>(\"package\", "
                                   "\"name\")",
                                   cls, reg.get<std::string>()));
    }
    return MetricRef(metric);
  }
  const std::string snake = detail::to_snake_case(cls);
  const std::string name = c.value("name", snake);
  if (auto more = more_metric_object(cls, c, name)) return MetricRef(more);
  for (const char* key : {"top_k", "class_id", "label_weights", "num_labels"}) {
    if (c.contains(key) && !c[key].is_null()) unsupported(cls + " option", key, "the defaults");
  }
  for (const char* key : {"multi_label", "from_logits"}) {
    if (value_or(c, key, false)) unsupported(cls + " option", key, "the defaults");
  }
  if (cls == "AUC") {
    if (c.value("summation_method", "interpolation") != "interpolation") {
      unsupported("AUC summation_method", c["summation_method"].dump(), "interpolation");
    }
    const std::string curve = c.value("curve", "ROC");
    if (curve != "ROC" && curve != "PR") unsupported("AUC curve", curve, "ROC, PR");
    return mt::AUC(value_or(c, "num_thresholds", 200), curve == "PR" ? mt::AUC::Curve::PR : mt::AUC::Curve::ROC, name);
  }
  if (cls == "Precision") return mt::Precision(single_threshold(c, cls), name);
  if (cls == "Recall") return mt::Recall(single_threshold(c, cls), name);
  if (cls == "BinaryAccuracy") return mt::BinaryAccuracy(value_or(c, "threshold", 0.5), name);
  if (cls == "TopKCategoricalAccuracy") return mt::TopKCategoricalAccuracy(value_or(c, "k", 5), name);
  if (cls == "SparseTopKCategoricalAccuracy") return mt::SparseTopKCategoricalAccuracy(value_or(c, "k", 5), name);
  return snake;  // option-less metrics by name (MeanSquaredError -> mean_squared_error)
}

std::vector<MetricRef> metrics_from(const json& j) {
  std::vector<MetricRef> out;
  if (j.is_null()) return out;
  for (const auto& m : j) {
    if (m.is_string()) {
      out.emplace_back(m.get<std::string>());
    } else if (m.is_object()) {
      out.push_back(metric_object(m));
    } else {
      unsupported("metric", m.dump().substr(0, 80), "metrics by name or class");
    }
  }
  return out;
}

}  // namespace

namespace {

json function_json(const std::string& registered) {
  return json{{"module", "builtins"}, {"class_name", "function"}, {"config", registered}, {"registered_name", "function"}};
}

json loss_json(const LossRef& l, const std::string& where) {
  if (!l.get()) return nullptr;
  const auto& loss = *l.get();
  auto* wrapper = dynamic_cast<const losses::LossFunctionWrapper*>(&loss);
  if (wrapper && !wrapper->registered_name().empty()) return function_json(wrapper->registered_name());
  if (!l.spelled().empty()) return l.spelled();
  const std::string registered = saving::detail::registered_loss_name(loss.class_name());
  if (!registered.empty()) {
    json o = object("", loss.class_name(), parse(loss.get_config(), "loss '" + loss.name() + "''s config"));
    o["module"] = nullptr;
    o["registered_name"] = registered;
    return o;
  }
  if (wrapper) {
    throw ValueError(fmt::format("Cannot save the compile settings of {}: loss '{}' is a C++ function, which a Keras "
                                 "file cannot hold. Register it (keras::saving::register_keras_serializable(\"package\", "
                                 "\"name\", fn), then .loss = \"name\") or use a Keras loss (by name or object).",
                                 where, loss.name()));
  }
  return object("keras.losses", loss.class_name(), parse(loss.get_config(), "loss '" + loss.name() + "''s config"));
}

json metric_json(const MetricRef& m, const std::string& where) {
  const auto& metric = *m.get();
  auto* wrapper = dynamic_cast<const metrics::MeanMetricWrapper*>(&metric);
  if (wrapper && !wrapper->registered_name().empty()) return function_json(wrapper->registered_name());
  if (!m.spelled().empty()) return m.spelled();
  const std::string cls = metric.class_name();
  const std::string registered = cls.empty() ? "" : saving::detail::registered_metric_name(cls);
  if (!registered.empty()) {
    json o = object("", cls, parse(metric.get_config(), "metric '" + metric.name() + "''s config"));
    o["module"] = nullptr;
    o["registered_name"] = registered;
    return o;
  }
  if (cls.empty()) {
    throw ValueError(fmt::format("Cannot save the compile settings of {}: metric '{}' is a C++ function (or has no "
                                 "Keras class), which a Keras file cannot hold; register it "
                                 "(keras::saving::register_keras_serializable) or use a Keras metric (by name or "
                                 "object).",
                                 where, metric.name()));
  }
  return object("keras.metrics", cls, parse(metric.get_config(), "metric '" + metric.name() + "''s config"));
}

json metric_list(const std::vector<MetricRef>& list, const std::string& where) {
  json out = json::array();
  for (const auto& m : list) out.push_back(metric_json(m, where));
  return out;
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
  json metrics = nullptr;
  if (!o.metrics.by_output.empty() && o.metrics.by_position) {
    metrics = json::array();
    for (const auto& out : model.output_names()) {
      const auto it = o.metrics.by_output.find(out);
      metrics.push_back(it == o.metrics.by_output.end() ? json(nullptr) : metric_list(it->second, where));
    }
  } else if (!o.metrics.by_output.empty()) {
    metrics = json::object();
    for (const auto& [k, list] : o.metrics.by_output) metrics[k] = metric_list(list, where);
  } else if (!o.metrics.list.empty()) {
    metrics = metric_list(o.metrics.list, where);
  }
  return json{{"optimizer", optimizer_json(*s.optimizer)},
              {"loss", loss},
              {"loss_weights", loss_weights},
              {"metrics", metrics},
              {"weighted_metrics", nullptr},
              {"run_eagerly", s.run_eagerly},
              {"steps_per_execution", 1},
              {"jit_compile", false}};
}

void compile_from_config(Model& model, const json& cc, bool tf_logits_shortcut) {
  if (!cc.is_object() || cc.empty()) return;  // saved uncompiled
  refuse_set(cc, {"weighted_metrics"}, "compile", "optimizer, loss, loss_weights, metrics");
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
  const json metrics = cc.value("metrics", json());
  if (metrics.is_object() && !metrics.contains("class_name")) {
    std::map<std::string, std::vector<MetricRef>> named;
    for (const auto& [k, v] : metrics.items()) named[k] = metrics_from(v.is_array() ? v : json::array({v}));
    o.metrics = MetricSpec(std::move(named));
  } else if (metrics.is_array() && !metrics.empty() &&
             std::all_of(metrics.begin(), metrics.end(), [](const json& v) { return v.is_array() || v.is_null(); })) {
    // A list per output, in the model's output order (Keras's metrics=[[...], [...]]).
    const auto outputs = model.output_names();
    if (metrics.size() != outputs.size()) {
      throw ValueError(fmt::format("load_model: the compile_config gives metrics for {} outputs; model '{}' has {} ({})",
                                   metrics.size(), model.name(), outputs.size(), fmt::join(outputs, ", ")));
    }
    std::map<std::string, std::vector<MetricRef>> named;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (!metrics[i].is_null()) named[outputs[i]] = metrics_from(metrics[i]);
    }
    o.metrics = MetricSpec(std::move(named));
    o.metrics.by_position = true;
  } else if (!metrics.is_null()) {
    o.metrics = MetricSpec(metrics_from(metrics.is_array() ? metrics : json::array({metrics})));
  }
  o.run_eagerly = value_or(cc, "run_eagerly", false);
  o.tf_logits_shortcut = tf_logits_shortcut;
  if (o.loss.list.empty()) {
    throw ValueError("load_model: the file's compile_config has no loss; load it with {.compile = false} and "
                     "compile() it yourself");
  }
  model.compile(std::move(o));
}

}  // namespace osprey::keras::serialization
