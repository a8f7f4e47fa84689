// The losses and metrics of a model's compile_config both ways: Keras's classes with their options, strings as
// given, registered functions and classes of the user's (keras/src/losses, keras/src/metrics, serialization_lib).
#include <fmt/format.h>

#include "keras/metrics/metric_helpers.h"
#include "keras/saving/loss_metric_config.h"
#include "keras/saving/serialization.h"
#include "keras/saving/weights_h5.h"
#include "osprey/errors.h"
#include "osprey/keras/saving.h"

namespace osprey::keras::serialization {

namespace {

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

// One threshold of a metric's config: None, a number or a one-element list (a confusion metric's list of several
// is threshold_list's).
std::optional<double> optional_threshold(const json& c, const char* key, const std::string& cls) {
  const json t = c.value(key, json());
  if (t.is_null()) return std::nullopt;
  if (t.is_number()) return t.get<double>();
  if (t.is_array() && t.size() == 1 && t[0].is_number()) return t[0].get<double>();
  unsupported(cls + " " + key, t.dump().substr(0, 80), "one threshold");
}
// An optional integer option (None: not given), within [lo, hi].
std::optional<int64_t> optional_int(const json& c, const char* key, int64_t lo, int64_t hi, const std::string& cls) {
  const json v = c.value(key, json());
  if (v.is_null()) return std::nullopt;
  return integer(c, key, lo, hi, cls + "'s");
}
std::string optional_string(const json& c, const char* key) {
  const json v = c.value(key, json());
  return v.is_string() ? v.get<std::string>() : "";
}
std::optional<int64_t> optional_class(const json& c, const std::string& cls) {
  return optional_int(c, "ignore_class", -(int64_t{1} << 31), int64_t{1} << 31, cls);
}

// A list of numbers (at most 2^20), as a JSON list or Keras's serialized tensor ({"class_name": "__tensor__",
// "config": {"value": [...]}}: AUC's label_weights); nullopt for None.
std::optional<std::vector<double>> optional_numbers(const json& c, const char* key, const std::string& cls) {
  json v = c.value(key, json());
  if (v.is_null()) return std::nullopt;
  if (v.is_object() && v.value("class_name", "") == "__tensor__") v = v.value("config", json()).value("value", json());
  if (!v.is_array() || v.size() > (std::size_t{1} << 20)) {
    unsupported(cls + " " + key, v.dump().substr(0, 80), "a list of numbers");
  }
  std::vector<double> out;
  for (const auto& x : v) {
    if (!x.is_number()) unsupported(cls + " " + key, x.dump().substr(0, 80), "numbers");
    out.push_back(x.get<double>());
  }
  return out;
}
// A confusion metric's thresholds given as a list (Keras's thresholds=[0.3, 0.5]: one value per threshold); none
// when the config has a number or None.
std::optional<std::vector<double>> threshold_list(const json& c, const std::string& cls) {
  const json t = c.value("thresholds", json());
  if (!t.is_array()) return std::nullopt;
  return optional_numbers(c, "thresholds", cls);
}
template <typename Count>
std::shared_ptr<metrics::Metric> confusion_count(const json& c, const std::string& cls, const std::string& name) {
  if (auto list = threshold_list(c, cls)) return std::make_shared<Count>(*list, name);
  return std::make_shared<Count>(optional_threshold(c, "thresholds", cls), name);
}
// keras.metrics.AUC from its config (curve and summation_method spelled as Keras's from_str takes them).
MetricRef auc_from(const json& c, const std::string& name) {
  namespace mt = metrics;
  const std::string curve = c.value("curve", "ROC"), sum = c.value("summation_method", "interpolation");
  mt::AUCOptions o{.name = name};
  if (curve == "ROC" || curve == "roc") o.curve = mt::AUCCurve::ROC;
  else if (curve == "PR" || curve == "pr") o.curve = mt::AUCCurve::PR;
  else if (curve == "PRGAIN" || curve == "prgain") o.curve = mt::AUCCurve::PRGAIN;
  else unsupported("AUC curve", curve, "PR, ROC, PRGAIN");
  if (sum == "interpolation" || sum == "Interpolation") o.summation_method = mt::AUCSummation::interpolation;
  else if (sum == "minoring" || sum == "Minoring") o.summation_method = mt::AUCSummation::minoring;
  else if (sum == "majoring" || sum == "Majoring") o.summation_method = mt::AUCSummation::majoring;
  else unsupported("AUC summation_method", sum, "interpolation, majoring, minoring");
  o.thresholds = optional_numbers(c, "thresholds", "AUC");
  if (!o.thresholds && c.contains("num_thresholds")) {
    o.num_thresholds = static_cast<int>(integer(c, "num_thresholds", 2, int64_t{1} << 20, "AUC's"));
  }
  o.multi_label = value_or(c, "multi_label", false);
  o.num_labels = optional_int(c, "num_labels", 1, int64_t{1} << 20, "AUC");
  o.label_weights = optional_numbers(c, "label_weights", "AUC");
  o.from_logits = value_or(c, "from_logits", false);
  return MetricRef(mt::AUC(std::move(o)));
}

// The metrics of Keras's probabilistic, regression, hinge, correlation, confusion-count, F-score, R² and IoU
// families, with their options; nullptr for other classes.
std::shared_ptr<metrics::Metric> more_metric_object(const std::string& cls, const json& c, const std::string& name) {
  namespace mt = metrics;
  const bool logits = value_or(c, "from_logits", false);
  const double smoothing = value_or(c, "label_smoothing", 0.0);
  const int axis = value_or(c, "axis", -1);
  const auto class_id = optional_int(c, "class_id", 0, int64_t{1} << 31, cls);
  const int thresholds = c.contains("num_thresholds") ? static_cast<int>(integer(c, "num_thresholds", 1, 1 << 20, cls + "'s")) : 200;
  auto ids = [&](const char* key) { return integers(c, key, 0, 4096, cls + "'s", 4096); };
  const int64_t classes = c.contains("num_classes") ? integer(c, "num_classes", 1, 4096, cls + "'s") : 0;
  std::shared_ptr<mt::Metric> m;
  if (cls == "BinaryCrossentropy") m = std::make_shared<mt::BinaryCrossentropy>(mt::CrossentropyMetricOptions{logits, smoothing}, name);
  else if (cls == "CategoricalCrossentropy")
    m = std::make_shared<mt::CategoricalCrossentropy>(mt::CrossentropyMetricOptions{logits, smoothing}, name);
  else if (cls == "SparseCategoricalCrossentropy") {
    if (axis != -1) unsupported(cls + " axis", c["axis"].dump(), "-1");
    m = std::make_shared<mt::SparseCategoricalCrossentropy>(logits, name, optional_class(c, cls));
  } else if (cls == "CosineSimilarity") m = std::make_shared<mt::CosineSimilarity>(name, axis);
  else if (cls == "PearsonCorrelation") m = std::make_shared<mt::PearsonCorrelation>(name, axis);
  else if (cls == "ConcordanceCorrelation") m = std::make_shared<mt::ConcordanceCorrelation>(name, axis);
  else if (cls == "TruePositives") m = confusion_count<mt::TruePositives>(c, cls, name);
  else if (cls == "FalsePositives") m = confusion_count<mt::FalsePositives>(c, cls, name);
  else if (cls == "TrueNegatives") m = confusion_count<mt::TrueNegatives>(c, cls, name);
  else if (cls == "FalseNegatives") m = confusion_count<mt::FalseNegatives>(c, cls, name);
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
    m = std::make_shared<mt::SensitivityAtSpecificity>(number(c, "specificity", 0, 1, cls + "'s"), thresholds, name, class_id);
  else if (cls == "SpecificityAtSensitivity")
    m = std::make_shared<mt::SpecificityAtSensitivity>(number(c, "sensitivity", 0, 1, cls + "'s"), thresholds, name, class_id);
  else if (cls == "PrecisionAtRecall")
    m = std::make_shared<mt::PrecisionAtRecall>(number(c, "recall", 0, 1, cls + "'s"), thresholds, name, class_id);
  else if (cls == "RecallAtPrecision")
    m = std::make_shared<mt::RecallAtPrecision>(number(c, "precision", 0, 1, cls + "'s"), thresholds, name, class_id);
  else if (cls == "Accuracy" || cls == "Poisson" || cls == "KLDivergence" || cls == "MeanAbsolutePercentageError" ||
           cls == "MeanSquaredLogarithmicError" || cls == "LogCoshError" || cls == "Hinge" || cls == "SquaredHinge" ||
           cls == "CategoricalHinge")
    m = metrics::detail::more_metrics_by_name(cls);
  if (!m) return nullptr;
  if (class_id && !dynamic_cast<mt::RateAtRate*>(m.get())) unsupported(cls + " option", "class_id", "the defaults");
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
  if (cls == "AUC") return auc_from(c, name);
  const bool top_k_class_id = cls == "Precision" || cls == "Recall";  // Keras's other classes here have neither
  auto refuse = [&](std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
      if (c.contains(key) && !c[key].is_null()) unsupported(cls + " option", key, "the defaults");
    }
  };
  refuse({"label_weights", "num_labels"});
  if (!top_k_class_id) refuse({"top_k", "class_id"});
  for (const char* key : {"multi_label", "from_logits"}) {
    if (value_or(c, key, false)) unsupported(cls + " option", key, "the defaults");
  }
  if (top_k_class_id) {
    const auto top_k = optional_int(c, "top_k", 1, int64_t{1} << 30, cls);
    const auto k = top_k ? std::optional<int>(static_cast<int>(*top_k)) : std::nullopt;
    const auto id = optional_int(c, "class_id", 0, int64_t{1} << 31, cls);
    if (auto list = threshold_list(c, cls)) {
      if (cls == "Precision") return mt::Precision(*list, name, k, id);
      return mt::Recall(*list, name, k, id);
    }
    const auto threshold = optional_threshold(c, "thresholds", cls);
    if (cls == "Precision") return mt::Precision(threshold, name, k, id);
    return mt::Recall(threshold, name, k, id);
  }
  if (cls == "BinaryAccuracy") return mt::BinaryAccuracy(value_or(c, "threshold", 0.5), name);
  if (cls == "TopKCategoricalAccuracy") return mt::TopKCategoricalAccuracy(value_or(c, "k", 5), name);
  if (cls == "SparseTopKCategoricalAccuracy") return mt::SparseTopKCategoricalAccuracy(value_or(c, "k", 5), name);
  return snake;  // option-less metrics by name (MeanSquaredError -> mean_squared_error)
}


json function_json(const std::string& registered) {
  return json{{"module", "builtins"}, {"class_name", "function"}, {"config", registered}, {"registered_name", "function"}};
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

// A Keras loss class's config as Osprey's loss (its reduction aside).
LossRef builtin_loss(const std::string& cls, const json& c) {
  const losses::CrossentropyOptions ce{.label_smoothing = value_or(c, "label_smoothing", 0.0),
                                       .from_logits = value_or(c, "from_logits", false)};
  if (cls == "BinaryCrossentropy") return losses::BinaryCrossentropy(ce);
  if (cls == "CategoricalCrossentropy") return losses::CategoricalCrossentropy(ce);
  if (cls == "SparseCategoricalCrossentropy") {
    return losses::SparseCategoricalCrossentropy(
        {.from_logits = value_or(c, "from_logits", false), .ignore_class = optional_class(c, cls)});
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
  if (cls == "Circle") {
    return losses::Circle(value_or(c, "gamma", 80.0), value_or(c, "margin", 0.4), value_or(c, "remove_diagonal", true),
                          c.value("name", std::string("circle")));
  }
  return detail::to_snake_case(cls);  // the option-less losses by name (MeanSquaredError -> mean_squared_error)
}

// A loss config's reduction as Keras's standardize_reduction reads it ("mean" is sum_over_batch_size, null "none").
losses::Reduction reduction_of(const json& c) {
  const json r = c.value("reduction", json("sum_over_batch_size"));
  if (r.is_null()) return losses::Reduction::none;
  const std::string name = r.is_string() ? r.get<std::string>() : r.dump();
  if (name == "sum_over_batch_size" || name == "mean") return losses::Reduction::sum_over_batch_size;
  if (name == "sum") return losses::Reduction::sum;
  if (name == "mean_with_sample_weight") return losses::Reduction::mean_with_sample_weight;
  if (name == "none") return losses::Reduction::none;
  unsupported("loss reduction", name, "sum_over_batch_size, mean, sum, mean_with_sample_weight, none");
}

}  // namespace

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
  const losses::Reduction reduction = reduction_of(c);
  LossRef loss = builtin_loss(cls, c);
  if (reduction == losses::Reduction::sum_over_batch_size) return loss;
  // Not by name: a name would be saved again without its reduction.
  std::shared_ptr<losses::Loss> object = loss.get();
  object->set_reduction(reduction);
  return LossRef(std::move(object));
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

json metric_list(const std::vector<MetricRef>& list, const std::string& where) {
  json out = json::array();
  for (const auto& m : list) out.push_back(metric_json(m, where));
  return out;
}

}  // namespace osprey::keras::serialization
