// Keras 3's whole-model file (.keras): a ZIP holding metadata.json, config.json (model.to_json(): architecture
// and compile_config) and model.weights.h5 (weights_h5.cpp). Also model_from_json, the architecture alone.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "keras/saving/weights_h5.h"
#include "keras/saving/zip_store.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/osprey.h"

namespace osprey::keras {

using json = nlohmann::json;

namespace {

constexpr const char* kConfig = "config.json";
constexpr const char* kMetadata = "metadata.json";
constexpr const char* kWeights = "model.weights.h5";

/// A file in the temporary directory, removed when this goes out of scope (HDF5 reads and writes files).
class TempFile {
 public:
  TempFile() {
    std::random_device rd;
    path_ = (std::filesystem::temp_directory_path() / fmt::format("osprey-{:016x}.weights.h5",
                                                                  (uint64_t{rd()} << 32) | rd()))
                .string();
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InternalError(fmt::format("save: cannot read back '{}'", path));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---- from Keras's serialized objects ----

[[noreturn]] void unsupported(const std::string& what, const std::string& value, const std::string& supported) {
  throw ValueError(fmt::format("model_from_json: {} '{}' is not supported by Osprey (supported: {})", what, value,
                               supported));
}

const json& config_of(const json& object, const std::string& what) {
  if (!object.is_object() || !object.contains("config") || !object["config"].is_object()) {
    throw ValueError(fmt::format("model_from_json: {} is not a serialized Keras object (no \"config\"): {}", what,
                                 object.dump().substr(0, 200)));
  }
  return object["config"];
}

template <typename T>
T value_or(const json& cfg, const char* key, T fallback) {
  return cfg.contains(key) && !cfg[key].is_null() ? cfg[key].get<T>() : fallback;
}

std::optional<double> optional_number(const json& cfg, const char* key) {
  return cfg.contains(key) && !cfg[key].is_null() ? std::optional<double>(cfg[key].get<double>()) : std::nullopt;
}

std::string initializer_name(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  static const std::map<std::string, std::string> names = {
      {"GlorotUniform", "glorot_uniform"}, {"GlorotNormal", "glorot_normal"}, {"HeUniform", "he_uniform"},
      {"HeNormal", "he_normal"},           {"LecunUniform", "lecun_uniform"}, {"LecunNormal", "lecun_normal"},
      {"Zeros", "zeros"},                  {"Ones", "ones"},                  {"RandomNormal", "random_normal"},
      {"RandomUniform", "random_uniform"}, {"TruncatedNormal", "truncated_normal"}};
  const std::string cls = j.value("class_name", "");
  if (!names.count(cls)) unsupported("initializer", cls, "GlorotUniform, GlorotNormal, He*, Lecun*, Zeros, Ones, Random*, TruncatedNormal");
  return names.at(cls);
}

std::optional<layers::Regularizer> regularizer(const json& j) {
  if (j.is_null()) return std::nullopt;
  const std::string cls = j.value("class_name", "");
  const json& c = config_of(j, "a regularizer");
  if (cls == "L1") return layers::L1(c.value("l1", 0.01));
  if (cls == "L2") return layers::L2(c.value("l2", 0.01));
  if (cls == "L1L2") return layers::L1L2(c.value("l1", 0.0), c.value("l2", 0.0));
  unsupported("regularizer", cls, "L1, L2, L1L2");
}

std::optional<layers::Constraint> constraint(const json& j) {
  if (j.is_null()) return std::nullopt;
  const std::string cls = j.value("class_name", "");
  if (cls == "NonNeg") return layers::NonNeg();
  if (cls == "MaxNorm") {
    const json& c = config_of(j, "a constraint");
    if (c.value("axis", 0) != 0) unsupported("MaxNorm axis", c["axis"].dump(), "0");
    return layers::MaxNorm(c.value("max_value", 2.0));
  }
  unsupported("constraint", cls, "MaxNorm, NonNeg");
}

std::string activation(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "linear";
  unsupported("activation", j.dump().substr(0, 100), "activations given by name");
}

// An integer field exactly as written: JSON integers only (1.5 or true are not 1) within [lo, hi] (4294967297 units
// are not 1).
int64_t integer(const json& c, const char* key, int64_t lo, int64_t hi, const std::string& what) {
  const json& v = c.at(key);
  const bool is_int = v.is_number_integer() || v.is_number_unsigned();
  if (!is_int || (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) ||
      v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    throw ValueError(fmt::format("model_from_json: {} \"{}\" must be an integer in [{}, {}], got {}", what, key, lo,
                                 hi, v.dump()));
  }
  return v.get<int64_t>();
}

Shape shape_without_batch(const json& batch_shape, const std::string& what) {
  if (!batch_shape.is_array() || batch_shape.empty()) {
    throw ValueError(fmt::format("model_from_json: {} is not a shape with a batch dimension: {}", what,
                                 batch_shape.dump()));
  }
  std::vector<int64_t> dims;
  for (std::size_t i = 1; i < batch_shape.size(); ++i) {
    if (!batch_shape[i].is_number_integer() || batch_shape[i].get<int64_t>() < 1) {
      throw ValueError(fmt::format("model_from_json: {} has an unknown dimension ({}); Osprey needs fixed feature "
                                   "dimensions",
                                   what, batch_shape.dump()));
    }
    dims.push_back(batch_shape[i].get<int64_t>());
  }
  return Shape(dims);
}

LayerRef layer_from(const json& j) {
  const std::string cls = j.value("class_name", "");
  const json& c = config_of(j, "layer '" + cls + "'");
  const std::string name = c.value("name", "");
  if (cls == "InputLayer") {
    const json& shape = c.contains("batch_shape") ? c["batch_shape"] : c.value("batch_input_shape", json());
    return layers::Input(shape_without_batch(shape, "InputLayer batch_shape"));
  }
  if (cls == "Dense") {
    layers::DenseOptions o;
    o.use_bias = c.value("use_bias", true);
    if (c.contains("kernel_initializer")) o.kernel_initializer = initializer_name(c["kernel_initializer"]);
    if (c.contains("bias_initializer")) o.bias_initializer = initializer_name(c["bias_initializer"]);
    o.name = name;
    o.kernel_regularizer = regularizer(c.value("kernel_regularizer", json()));
    o.bias_regularizer = regularizer(c.value("bias_regularizer", json()));
    o.kernel_constraint = constraint(c.value("kernel_constraint", json()));
    o.bias_constraint = constraint(c.value("bias_constraint", json()));
    if (c.contains("activity_regularizer") && !c["activity_regularizer"].is_null()) {
      unsupported("Dense option", "activity_regularizer", "kernel/bias regularizers and constraints");
    }
    const auto units = static_cast<int>(integer(c, "units", 1, std::numeric_limits<int>::max(), "Dense " + name));
    return layers::Dense(units, activation(c.value("activation", json("linear"))), o);
  }
  if (cls == "Activation") return layers::Activation(activation(c.at("activation")), name);
  if (cls == "LeakyReLU") return layers::LeakyReLU(value_or(c, "negative_slope", 0.3), name);
  if (cls == "Dropout") {
    if (c.contains("noise_shape") && !c["noise_shape"].is_null()) unsupported("Dropout option", "noise_shape", "rate");
    return layers::Dropout(c.at("rate").get<double>(), name);
  }
  if (cls == "Flatten") return layers::Flatten(name);
  if (cls == "Reshape") return layers::Reshape(c.at("target_shape").get<std::vector<int64_t>>(), name);
  if (cls == "BatchNormalization" || cls == "LayerNormalization") {
    const json axis = c.value("axis", json(-1));
    if (!(axis == json(-1) || axis == json::array({-1}))) unsupported(cls + " axis", axis.dump(), "-1");
    for (const char* key : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) {
      if (c.contains(key) && !c[key].is_null()) unsupported(cls + " option", key, "momentum, epsilon, center, scale");
    }
    if (cls == "BatchNormalization") {
      if (value_or(c, "renorm", false) || value_or(c, "synchronized", false)) {
        unsupported("BatchNormalization option", "renorm/synchronized", "momentum, epsilon, center, scale");
      }
      return layers::BatchNormalization({.momentum = value_or(c, "momentum", 0.99),
                                         .epsilon = value_or(c, "epsilon", 1e-3),
                                         .center = value_or(c, "center", true),
                                         .scale = value_or(c, "scale", true),
                                         .name = name});
    }
    if (value_or(c, "rms_scaling", false)) unsupported("LayerNormalization option", "rms_scaling", "epsilon, center, scale");
    return layers::LayerNormalization({.epsilon = value_or(c, "epsilon", 1e-3),
                                       .center = value_or(c, "center", true),
                                       .scale = value_or(c, "scale", true),
                                       .name = name});
  }
  unsupported("layer", cls,
              "InputLayer, Dense, Activation, LeakyReLU, Dropout, Flatten, Reshape, BatchNormalization, "
              "LayerNormalization");
}

Sequential sequential_from(const json& model) {
  const std::string cls = model.value("class_name", "");
  if (cls != "Sequential") {
    unsupported("model class", cls.empty() ? model.dump().substr(0, 80) : cls, "Sequential");
  }
  const json& c = config_of(model, "the model");
  std::vector<LayerRef> layers;
  const json& list = c.value("layers", json::array());
  bool has_input = false;
  for (const auto& l : list) has_input = has_input || l.value("class_name", "") == "InputLayer";
  // A model saved without an InputLayer but built on a known shape (Keras's build_input_shape).
  if (!has_input && c.contains("build_input_shape") && !c["build_input_shape"].is_null()) {
    layers.push_back(layers::Input(shape_without_batch(c["build_input_shape"], "build_input_shape")));
  }
  for (const auto& l : list) layers.push_back(layer_from(l));
  return Sequential(std::move(layers), c.value("name", ""));
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
                           .warmup_steps = value_or<int64_t>(c, "warmup_steps", 0)});
  }
  unsupported("learning-rate schedule", cls, "ExponentialDecay, InverseTimeDecay, PiecewiseConstantDecay, CosineDecay");
}

OptimizerRef optimizer_from(const json& j) {
  namespace o = optimizers;
  if (j.is_string()) return j.get<std::string>();
  const std::string cls = j.value("class_name", "");
  const json& c = config_of(j, "the optimizer");
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

LossRef loss_from(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  const std::string cls = j.value("class_name", "");
  const json& c = config_of(j, "the loss");
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

// A metric object of a Keras compile_config, with the options Osprey's metrics have; the rest must be defaults.
MetricRef metric_object(const json& m) {
  namespace mt = metrics;
  const std::string cls = m.value("class_name", "");
  const json& c = config_of(m, "metric '" + cls + "'");
  const std::string snake = detail::to_snake_case(cls);
  const std::string name = c.value("name", snake);
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

// Keras's configs nest a few levels deep (a model in a model in a layer list); deeper is a crafted file.
constexpr int kMaxJsonDepth = 64;

json parse(const std::string& text, const std::string& what) {
  int deepest = 0;
  const json::parser_callback_t depth_guard = [&](int depth, json::parse_event_t, json&) {
    deepest = std::max(deepest, depth);
    if (depth > kMaxJsonDepth) {
      throw ValueError(fmt::format("{} nests deeper than {} levels; a Keras config never does (a damaged or "
                                   "crafted file)",
                                   what, kMaxJsonDepth));
    }
    return true;
  };
  try {
    return json::parse(text, depth_guard);
  } catch (const json::exception& e) {
    throw ValueError(fmt::format("{} is not valid JSON: {}", what, e.what()));
  }
}

}  // namespace

namespace models {

Sequential model_from_json(const std::string& json_text) {
  try {
    return sequential_from(parse(json_text, "model_from_json: the text"));
  } catch (const json::exception& e) {
    throw ValueError(fmt::format("model_from_json: a field has the wrong type or is missing: {}", e.what()));
  }
}

Sequential load_model(const std::string& path, LoadModelOptions options) {
  if (!path.ends_with(".keras")) {
    throw ValueError(fmt::format("File format not supported: filepath={}. Osprey loads the native Keras format "
                                 "(`.keras`); weights alone are read by `model.load_weights()` (`.weights.h5`).",
                                 path));
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw NotFoundError(fmt::format("File not found: filepath={}. Please ensure the file is an accessible `.keras` "
                                    "zip file.",
                                    path));
  }
  const auto entries = detail::read_zip(path);
  for (const char* name : {kConfig, kWeights}) {
    if (!entries.count(name)) {
      throw ValueError(fmt::format("load_model: '{}' has no {} (not a Keras 3 model file)", path, name));
    }
  }
  try {
    const json config = parse(entries.at(kConfig), "load_model: " + path + "'s config.json");
    Sequential model = sequential_from(config);
    if (options.compile && config.contains("compile_config") && !config["compile_config"].is_null()) {
      const json& cc = config["compile_config"];
      for (const char* key : {"loss_weights", "weighted_metrics"}) {
        if (cc.contains(key) && !cc[key].is_null()) unsupported("compile option", key, "optimizer, loss, metrics");
      }
      model.compile({.optimizer = optimizer_from(cc.at("optimizer")),
                     .loss = cc.contains("loss") && !cc["loss"].is_null() ? loss_from(cc["loss"]) : LossRef(),
                     .metrics = metrics_from(cc.value("metrics", json())),
                     .run_eagerly = value_or(cc, "run_eagerly", false)});
    }
    TempFile weights;
    {
      std::ofstream out(weights.path(), std::ios::binary);
      out << entries.at(kWeights);
      if (!out) throw InternalError(fmt::format("load_model: cannot write '{}'", weights.path()));
    }
    detail::load_weights_h5(model, weights.path());
    return model;
  } catch (const json::exception& e) {
    throw ValueError(fmt::format("load_model: '{}': a config field has the wrong type or is missing: {}", path,
                                 e.what()));
  }
}

}  // namespace models

void Model::save(const std::string& path) const {
  throw ValueError(fmt::format("Saving a {} model ('{}') as `{}` is not supported yet (Sequential models are); "
                               "save_weights(\"*.weights.osp\") keeps its weights",
                               class_name(), name(), path));
}

void Sequential::save(const std::string& path) const {
  if (!path.ends_with(".keras")) {
    throw ValueError(fmt::format("Invalid filepath extension for saving. Please add a `.keras` extension for the "
                                 "native Keras format (Osprey writes that one; `save_weights()` writes "
                                 "`.weights.h5`). Received: filepath={}",
                                 path));
  }
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d@%H:%M:%S", &local);
  // keras_version: the Keras release whose format this is (Keras checks it when loading).
  const std::string metadata = fmt::format(R"({{"keras_version": "3.15.1", "date_saved": "{}", "osprey_version": "{}"}})",
                                           date, osprey::version());
  const std::string config = to_json();  // first: a model that cannot be described fails before anything is written
  TempFile weights;
  detail::save_weights_h5(*this, weights.path());
  detail::write_zip(path, {{kMetadata, metadata}, {kConfig, config}, {kWeights, read_file(weights.path())}});
}

}  // namespace osprey::keras
