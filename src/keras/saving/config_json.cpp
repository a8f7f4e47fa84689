// Keras's serialized configs (model.get_config(), model.to_json()), written exactly as Python's json.dumps prints
// them: ", " and ": " separators, floats as Python's repr (float32 values read back as Python floats).
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "osprey/errors.h"
#include "osprey/keras/model.h"

namespace osprey::keras {

using json = nlohmann::ordered_json;

namespace {

std::string py_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void dump(const json& j, std::string& out) {
  switch (j.type()) {
    case json::value_t::null: out += "null"; break;
    case json::value_t::boolean: out += j.get<bool>() ? "true" : "false"; break;
    case json::value_t::number_integer: out += std::to_string(j.get<int64_t>()); break;
    case json::value_t::number_unsigned: out += std::to_string(j.get<uint64_t>()); break;
    case json::value_t::number_float: out += py_float(j.get<double>()); break;
    case json::value_t::string: out += json(j.get<std::string>()).dump(-1, ' ', true); break;  // ensure_ascii
    case json::value_t::array: {
      out += "[";
      bool first = true;
      for (const auto& v : j) {
        if (!first) out += ", ";
        first = false;
        dump(v, out);
      }
      out += "]";
      break;
    }
    case json::value_t::object: {
      out += "{";
      bool first = true;
      for (const auto& [k, v] : j.items()) {
        if (!first) out += ", ";
        first = false;
        out += json(k).dump(-1, ' ', true) + ": ";
        dump(v, out);
      }
      out += "}";
      break;
    }
    default: out += "null"; break;
  }
}

json object(const std::string& module, const std::string& class_name, json config) {
  json o;
  o["module"] = module;
  o["class_name"] = class_name;
  o["config"] = std::move(config);
  o["registered_name"] = nullptr;
  return o;
}

json dtype_policy() { return object("keras", "DTypePolicy", json{{"name", "float32"}}); }

json shape_with_batch(const Shape& s) {
  json a = json::array({nullptr});
  for (int64_t d : s.dims()) a.push_back(d);
  return a;
}

json initializer(const std::string& name) {
  static const std::map<std::string, std::string> classes = {
      {"glorot_uniform", "GlorotUniform"}, {"glorot_normal", "GlorotNormal"}, {"he_uniform", "HeUniform"},
      {"he_normal", "HeNormal"},           {"lecun_uniform", "LecunUniform"}, {"lecun_normal", "LecunNormal"},
      {"zeros", "Zeros"},                  {"ones", "Ones"},                  {"random_normal", "RandomNormal"},
      {"random_uniform", "RandomUniform"}, {"truncated_normal", "TruncatedNormal"}};
  const std::string cls = classes.count(name) ? classes.at(name) : name;
  json cfg = json::object();
  if (cls == "RandomNormal" || cls == "TruncatedNormal") {
    cfg = {{"seed", nullptr}, {"mean", 0.0}, {"stddev", 0.05}};
  } else if (cls == "RandomUniform") {
    cfg = {{"seed", nullptr}, {"minval", -0.05}, {"maxval", 0.05}};
  } else if (cls != "Zeros" && cls != "Ones") {
    cfg = {{"seed", nullptr}, {"input_axes", nullptr}, {"output_axes", nullptr}};
  }
  return object("keras.initializers", cls, cfg);
}

json regularizer(const std::optional<layers::Regularizer>& r) {
  if (!r) return nullptr;
  if (r->l2 == 0.0 && r->l1 != 0.0) {  // Keras's L1 keeps its factor as float32
    return object("keras.regularizers", "L1", json{{"l1", static_cast<double>(static_cast<float>(r->l1))}});
  }
  if (r->l1 == 0.0) return object("keras.regularizers", "L2", json{{"l2", r->l2}});
  return object("keras.regularizers", "L1L2", json{{"l1", r->l1}, {"l2", r->l2}});
}

json constraint(const std::optional<layers::Constraint>& c) {
  if (!c) return nullptr;
  if (c->kind == layers::Constraint::Kind::non_neg) return object("keras.constraints", "NonNeg", json::object());
  return object("keras.constraints", "MaxNorm", json{{"max_value", c->max_value}, {"axis", 0}});
}

json base_layer(const Layer& l) {
  return json{{"name", l.name()}, {"trainable", l.trainable}, {"dtype", dtype_policy()}};
}

// Osprey's layers whose Keras config is not written yet (saving them is refused rather than written wrong).
static bool is_builtin_without_config(const Layer& l) {
  static const char* const kNames[] = {
      "Identity", "ReLU", "ELU", "Softmax", "PReLU", "ActivityRegularization", "GaussianNoise", "GaussianDropout",
      "AlphaDropout", "RepeatVector", "Permute", "UnitNormalization", "GroupNormalization", "RMSNormalization", "Add",
      "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "Dot", "Functional", "Sequential"};
  const std::string cls = l.class_name();
  for (const char* name : kNames) {
    if (cls == name) return true;
  }
  return false;
}

// One layer as Keras serializes it; build_config for the layers Keras records it for (those with a build()).
json layer_json(Layer& l, const Shape& input_shape) {
  json cfg = base_layer(l);
  bool build_config = false;
  if (auto* d = dynamic_cast<layers::Dense*>(&l)) {
    const auto& o = d->options();
    cfg["units"] = d->units();
    cfg["activation"] = d->activation_name();
    cfg["use_bias"] = o.use_bias;
    cfg["kernel_initializer"] = initializer(o.kernel_initializer);
    cfg["bias_initializer"] = initializer(o.bias_initializer);
    cfg["kernel_regularizer"] = regularizer(o.kernel_regularizer);
    cfg["bias_regularizer"] = regularizer(o.bias_regularizer);
    cfg["kernel_constraint"] = constraint(o.kernel_constraint);
    cfg["bias_constraint"] = constraint(o.bias_constraint);
    cfg["quantization_config"] = nullptr;
    build_config = true;
  } else if (auto* a = dynamic_cast<layers::Activation*>(&l)) {
    cfg["activation"] = a->activation_name();
  } else if (auto* lr = dynamic_cast<layers::LeakyReLU*>(&l)) {
    cfg["negative_slope"] = lr->negative_slope();
  } else if (auto* dr = dynamic_cast<layers::Dropout*>(&l)) {
    cfg["rate"] = dr->rate();
    cfg["seed"] = nullptr;
    cfg["noise_shape"] = nullptr;
  } else if (dynamic_cast<layers::Flatten*>(&l)) {
    cfg["data_format"] = "channels_last";
    build_config = true;
  } else if (auto* r = dynamic_cast<layers::Reshape*>(&l)) {
    cfg["target_shape"] = r->target_shape();
  } else if (auto* bn = dynamic_cast<layers::BatchNormalization*>(&l)) {
    const auto& o = bn->options();
    cfg["axis"] = -1;
    cfg["momentum"] = o.momentum;
    cfg["epsilon"] = o.epsilon;
    cfg["center"] = o.center;
    cfg["scale"] = o.scale;
    cfg["beta_initializer"] = initializer("zeros");
    cfg["gamma_initializer"] = initializer("ones");
    cfg["moving_mean_initializer"] = initializer("zeros");
    cfg["moving_variance_initializer"] = initializer("ones");
    cfg["beta_regularizer"] = nullptr;
    cfg["gamma_regularizer"] = nullptr;
    cfg["beta_constraint"] = nullptr;
    cfg["gamma_constraint"] = nullptr;
    cfg["synchronized"] = false;
    cfg["renorm"] = false;
    cfg["renorm_clipping"] = nullptr;
    cfg["renorm_momentum"] = 0.99;
    build_config = true;
  } else if (auto* ln = dynamic_cast<layers::LayerNormalization*>(&l)) {
    const auto& o = ln->options();
    cfg["axis"] = l.built() ? json::array({-1}) : json(-1);  // Keras stores the axis as a list once built
    cfg["epsilon"] = o.epsilon;
    cfg["center"] = o.center;
    cfg["scale"] = o.scale;
    cfg["rms_scaling"] = false;
    cfg["beta_initializer"] = initializer("zeros");
    cfg["gamma_initializer"] = initializer("ones");
    cfg["beta_regularizer"] = nullptr;
    cfg["gamma_regularizer"] = nullptr;
    cfg["beta_constraint"] = nullptr;
    cfg["gamma_constraint"] = nullptr;
    build_config = true;
  } else if (dynamic_cast<layers::Lambda*>(&l)) {
    throw ValueError(fmt::format("Layer '{}' is a Lambda: its C++ function cannot be written into a model's config "
                                 "(Keras too refuses to load a Lambda's code unless safe_mode is off). Rebuild the "
                                 "model in code and keep its weights with save_weights().",
                                 l.name()));
  } else if (is_builtin_without_config(l)) {
    throw ValueError(fmt::format("Saving a model with layer '{}' ({}) in Keras's format is not supported yet; "
                                 "save_weights(\"*.weights.osp\") keeps its weights",
                                 l.name(), l.class_name()));
  } else {  // a layer of the user's: its own get_config()
    cfg = json::parse(l.get_config());
  }
  json out = object("keras.layers", l.class_name(), cfg);
  if (build_config && l.built()) out["build_config"] = json{{"input_shape", shape_with_batch(input_shape)}};
  return out;
}

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
  json cfg{{"name", names.count(cls) ? names.at(cls) : cls},
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
  return object("keras.optimizers", cls, cfg);
}

json config_of(const Sequential& m) {
  json layers_json = json::array();
  const auto in = m.input_shape();
  if (in) {
    layers_json.push_back(object("keras.layers", "InputLayer",
                                 json{{"batch_shape", shape_with_batch(*in)},
                                      {"dtype", "float32"},
                                      {"sparse", false},
                                      {"ragged", false},
                                      {"name", "input_layer"},
                                      {"optional", false}}));
  }
  Shape shape = in.value_or(Shape{});
  for (const auto& l : m.layers()) {
    layers_json.push_back(layer_json(*l, shape));
    if (l->built()) shape = l->output_shape();
  }
  json cfg{{"name", m.name()}, {"trainable", true}, {"dtype", dtype_policy()}, {"layers", layers_json}};
  if (in) cfg["build_input_shape"] = shape_with_batch(*in);
  return cfg;
}

}  // namespace

std::string Layer::get_config() const {
  std::string out;
  dump(base_layer(*this), out);
  return out;
}

std::string config_with(const std::string& base_config, std::initializer_list<ConfigEntry> entries) {
  json cfg = json::parse(base_config);
  for (const auto& [key, value] : entries) {
    std::visit([&, k = key](const auto& v) { cfg[k] = v; }, value);
  }
  std::string out;
  dump(cfg, out);
  return out;
}

std::string Model::get_config() const {
  throw ValueError(fmt::format("get_config() of a {} model ('{}') is not supported yet (Sequential models are)",
                               class_name(), name()));
}
std::string Model::to_json() const {
  throw ValueError(fmt::format("to_json() of a {} model ('{}') is not supported yet (Sequential models are)",
                               class_name(), name()));
}

std::string Sequential::get_config() const {
  std::string out;
  dump(config_of(*this), out);
  return out;
}

std::string Sequential::to_json() const {
  json j = object("keras", "Sequential", config_of(*this));
  if (const auto in = input_shape()) j["build_config"] = json{{"input_shape", shape_with_batch(*in)}};
  if (compiled()) {
    json loss = compiled_loss_name().empty() ? json(nullptr) : json(compiled_loss_name());
    j["compile_config"] = json{{"optimizer", optimizer_json(*optimizer())},
                               {"loss", loss},
                               {"loss_weights", nullptr},
                               {"metrics", compiled_metric_names().empty() ? json(nullptr) : json(compiled_metric_names())},
                               {"weighted_metrics", nullptr},
                               {"run_eagerly", run_eagerly()},
                               {"steps_per_execution", 1},
                               {"jit_compile", false}};
  }
  std::string out;
  dump(j, out);
  return out;
}

}  // namespace osprey::keras
