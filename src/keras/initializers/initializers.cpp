// Keras's initializers (keras.initializers) with their options: variance scaling with Keras's fans, constants,
// random, orthogonal, identity. An initializer keeps its Keras config as given (written back unchanged).
#include "keras/initializers/initializers.h"

#include <cmath>
#include <map>
#include <new>

#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/layer.h"
#include "osprey/random.h"
#include "runtime/device_manager.h"

namespace osprey::keras {

namespace ser = serialization;
using ser::json;

namespace {

thread_local int t_weights_follow = 0;

// Keras's names (keras.initializers.get) and the class each stands for.
const std::map<std::string, std::string>& names() {
  static const std::map<std::string, std::string> m = {
      {"glorot_uniform", "GlorotUniform"}, {"glorot_normal", "GlorotNormal"}, {"he_uniform", "HeUniform"},
      {"he_normal", "HeNormal"},           {"lecun_uniform", "LecunUniform"}, {"lecun_normal", "LecunNormal"},
      {"zeros", "Zeros"},                  {"ones", "Ones"},                  {"random_normal", "RandomNormal"},
      {"random_uniform", "RandomUniform"}, {"truncated_normal", "TruncatedNormal"}, {"constant", "Constant"},
      {"variance_scaling", "VarianceScaling"}, {"orthogonal", "Orthogonal"}, {"identity", "Identity"},
      {"uniform", "RandomUniform"},        {"normal", "RandomNormal"}};
  return m;
}

// Keras 3's initializer classes and their default configs (what Keras writes for each).
const std::map<std::string, json>& defaults() {
  static const std::map<std::string, json> m = {
      {"Zeros", json::object()},
      {"Ones", json::object()},
      {"Constant", {{"value", 0.0}}},
      {"RandomNormal", {{"seed", nullptr}, {"mean", 0.0}, {"stddev", 0.05}}},
      {"RandomUniform", {{"seed", nullptr}, {"minval", -0.05}, {"maxval", 0.05}}},
      {"TruncatedNormal", {{"seed", nullptr}, {"mean", 0.0}, {"stddev", 0.05}}},
      {"VarianceScaling",
       {{"seed", nullptr}, {"scale", 1.0}, {"mode", "fan_in"}, {"distribution", "truncated_normal"},
        {"input_axes", nullptr}, {"output_axes", nullptr}}},
      {"GlorotUniform", {{"seed", nullptr}, {"input_axes", nullptr}, {"output_axes", nullptr}}},
      {"GlorotNormal", {{"seed", nullptr}, {"input_axes", nullptr}, {"output_axes", nullptr}}},
      {"HeUniform", {{"seed", nullptr}, {"input_axes", nullptr}, {"output_axes", nullptr}}},
      {"HeNormal", {{"seed", nullptr}, {"input_axes", nullptr}, {"output_axes", nullptr}}},
      {"LecunUniform", {{"seed", nullptr}, {"input_axes", nullptr}, {"output_axes", nullptr}}},
      {"LecunNormal", {{"seed", nullptr}, {"input_axes", nullptr}, {"output_axes", nullptr}}},
      {"Orthogonal", {{"seed", nullptr}, {"gain", 1.0}}},
      {"Identity", json::object()},
      // Kept and written back, not sampled (STFT needs scipy's windows): its weights must come from a file.
      {"STFT", json::object()},
  };
  return m;
}

std::string canonical_class(const std::string& cls) {
  if (cls == "OrthogonalInitializer") return "Orthogonal";
  if (cls == "IdentityInitializer") return "Identity";
  if (cls == "STFTInitializer") return "STFT";
  return cls;
}

double num(const json& c, const char* key, double fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_number() || !std::isfinite(c[key].get<double>())) {
    throw ValueError(fmt::format("initializer option \"{}\" must be a finite number, got {}", key,
                                 c[key].dump().substr(0, 80)));
  }
  return c[key].get<double>();
}

std::string str(const json& c, const char* key, const std::string& fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_string()) throw ValueError(fmt::format("initializer option \"{}\" must be a string", key));
  return c[key].get<std::string>();
}

// Checks the options Osprey samples with, so that a bad config fails when the layer is made.
void validate(const std::string& cls, const json& c) {
  if (!c.is_object()) throw ValueError(fmt::format("initializer {}: its config must be an object", cls));
  if (cls == "VarianceScaling") {
    const double scale = num(c, "scale", 1.0);
    const std::string mode = str(c, "mode", "fan_in"), dist = str(c, "distribution", "truncated_normal");
    if (!(scale > 0)) throw ValueError(fmt::format("VarianceScaling: `scale` must be positive, got {}", scale));
    if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg") {
      throw ValueError(fmt::format("VarianceScaling: invalid `mode` '{}' (fan_in, fan_out, fan_avg)", mode));
    }
    if (dist != "truncated_normal" && dist != "untruncated_normal" && dist != "normal" && dist != "uniform") {
      throw ValueError(fmt::format("VarianceScaling: invalid `distribution` '{}' (truncated_normal, "
                                   "untruncated_normal, uniform)",
                                   dist));
    }
    for (const char* key : {"input_axes", "output_axes"}) {
      if (c.contains(key) && !c[key].is_null()) ser::unsupported("VarianceScaling option", key, "the default fans");
    }
  } else if (cls == "RandomNormal" || cls == "TruncatedNormal") {
    num(c, "mean", 0.0);
    if (num(c, "stddev", 0.05) < 0) throw ValueError(fmt::format("{}: stddev must be >= 0", cls));
  } else if (cls == "RandomUniform") {
    if (!(num(c, "minval", -0.05) <= num(c, "maxval", 0.05))) {
      throw ValueError("RandomUniform: minval must be <= maxval");
    }
  } else if (cls == "Constant") {
    num(c, "value", 0.0);
  } else if (cls == "Orthogonal" || cls == "Identity") {
    num(c, "gain", 1.0);
  }
}

// Keras's compute_fans: 2-D (in, out); 1-D (n, n); scalars 1; higher ranks with the receptive field.
std::pair<double, double> fans(const Shape& shape) {
  double fan_in = 1, fan_out = 1;
  if (shape.rank() == 1) {
    fan_in = fan_out = static_cast<double>(shape[0]);
  } else if (shape.rank() >= 2) {
    double receptive = 1;
    for (int i = 0; i < shape.rank() - 2; ++i) receptive *= static_cast<double>(shape[i]);
    fan_in = static_cast<double>(shape[-2]) * receptive;
    fan_out = static_cast<double>(shape[-1]) * receptive;
  }
  return {fan_in, fan_out};
}

Tensor variance_scaling(const Shape& shape, double scale, const std::string& mode, const std::string& dist) {
  const auto [fan_in, fan_out] = fans(shape);
  const double fan = mode == "fan_in" ? fan_in : mode == "fan_out" ? fan_out : (fan_in + fan_out) / 2;
  const double s = scale / std::max(1.0, fan);
  if (dist == "uniform") {
    const double limit = std::sqrt(3.0 * s);
    return random::uniform(shape, -limit, limit);
  }
  if (dist == "untruncated_normal" || dist == "normal") return random::normal(shape, 0.0, std::sqrt(s));
  return random::truncated_normal(shape, 0.0, std::sqrt(s) / 0.87962566103423978);
}

// Keras's Orthogonal: the Q of a QR decomposition of a normal (rows x cols) matrix, its columns' signs fixed by
// R's diagonal, times gain. Modified Gram-Schmidt in double precision on the host.
Tensor orthogonal(const Shape& shape, double gain) {
  if (shape.rank() < 2) {
    throw ValueError(fmt::format("The tensor to initialize must be at least two-dimensional, got shape {}",
                                 shape.to_string()));
  }
  const int64_t cols = shape[-1], rows = shape.num_elements() / cols;
  const int64_t m = std::max(rows, cols), n = std::min(rows, cols);
  auto& host = runtime::DeviceManager::get().host_device();
  const auto a = random::normal(Shape({m, n})).to(host).to_vector<float>();
  std::vector<double> q(a.begin(), a.end());  // m x n, row-major
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += q[i * n + k] * q[i * n + j];
      for (int64_t i = 0; i < m; ++i) q[i * n + j] -= dot * q[i * n + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += q[i * n + j] * q[i * n + j];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < m; ++i) q[i * n + j] = norm > 0 ? q[i * n + j] / norm : 0.0;  // R's diagonal > 0
  }
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const double v = rows >= cols ? q[r * n + c] : q[c * n + r];  // transposed when rows < cols
      out[static_cast<std::size_t>(r * cols + c)] = static_cast<float>(gain * v);
    }
  }
  return Tensor::from_vector(out, shape);
}

}  // namespace

namespace detail {
WeightsFollow::WeightsFollow() { ++t_weights_follow; }
WeightsFollow::~WeightsFollow() { --t_weights_follow; }
}  // namespace detail

namespace initializers {

Initializer::Initializer(const char* name) : Initializer(std::string(name ? name : "")) {}

Initializer::Initializer(const std::string& name) {
  auto it = names().find(name);
  const std::string cls = canonical_class(it != names().end() ? it->second : name);
  if (!defaults().count(cls)) {
    throw ValueError("Could not interpret initializer identifier: '" + name +
                     "'. Known: glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_uniform, lecun_normal, "
                     "zeros, ones, random_normal, random_uniform, truncated_normal, constant, variance_scaling, "
                     "orthogonal, identity (or their class names).");
  }
  class_name = cls;
  config = ser::dumps(defaults().at(cls));
}

Initializer Initializer::from_config(const std::string& cls_in, const std::string& config_json) {
  const std::string cls = canonical_class(cls_in);
  if (!defaults().count(cls)) {
    throw ValueError(fmt::format("Unknown initializer class '{}' (Keras 3 has: Zeros, Ones, Constant, RandomNormal, "
                                 "RandomUniform, TruncatedNormal, VarianceScaling, Glorot*, He*, Lecun*, "
                                 "Orthogonal, Identity, STFT)",
                                 cls_in));
  }
  const json c = ser::parse(config_json, "initializer " + cls + "'s config");
  validate(cls, c);
  Initializer out;
  out.class_name = cls;
  out.config = ser::dumps(c);
  return out;
}

Tensor Initializer::operator()(const Shape& shape) const {
  try {
    return sample(shape);
  } catch (const std::bad_alloc&) {  // a host buffer of Orthogonal's or Identity's: Osprey's error, with the sizes
    throw ResourceExhaustedError(fmt::format("{} initializer: out of memory for a weight of shape {} ({} elements)",
                                             class_name, shape.to_string(), shape.num_elements()));
  }
}

Tensor Initializer::sample(const Shape& shape) const {
  const json c = ser::parse(config, "initializer config");
  const std::string& cls = class_name;
  if (cls == "GlorotUniform") return variance_scaling(shape, 1.0, "fan_avg", "uniform");
  if (cls == "GlorotNormal") return variance_scaling(shape, 1.0, "fan_avg", "truncated_normal");
  if (cls == "HeUniform") return variance_scaling(shape, 2.0, "fan_in", "uniform");
  if (cls == "HeNormal") return variance_scaling(shape, 2.0, "fan_in", "truncated_normal");
  if (cls == "LecunUniform") return variance_scaling(shape, 1.0, "fan_in", "uniform");
  if (cls == "LecunNormal") return variance_scaling(shape, 1.0, "fan_in", "truncated_normal");
  if (cls == "VarianceScaling") {
    return variance_scaling(shape, num(c, "scale", 1.0), str(c, "mode", "fan_in"),
                            str(c, "distribution", "truncated_normal"));
  }
  if (cls == "Zeros") return Tensor::zeros(shape);
  if (cls == "Ones") return Tensor::ones(shape);
  if (cls == "Constant") return Tensor::full(shape, num(c, "value", 0.0));
  if (cls == "RandomNormal") return random::normal(shape, num(c, "mean", 0.0), num(c, "stddev", 0.05));
  if (cls == "RandomUniform") return random::uniform(shape, num(c, "minval", -0.05), num(c, "maxval", 0.05));
  if (cls == "TruncatedNormal") return random::truncated_normal(shape, num(c, "mean", 0.0), num(c, "stddev", 0.05));
  if (cls == "Orthogonal") return orthogonal(shape, num(c, "gain", 1.0));
  if (cls == "Identity") {
    if (shape.rank() != 2) {
      throw ValueError(fmt::format("Identity initializer can only be used for 2D matrices. Received: shape={}",
                                   shape.to_string()));
    }
    std::vector<float> v(static_cast<std::size_t>(shape.num_elements()), 0.0f);
    for (int64_t i = 0; i < std::min(shape[0], shape[1]); ++i) {
      v[static_cast<std::size_t>(i * shape[1] + i)] = static_cast<float>(num(c, "gain", 1.0));
    }
    return Tensor::from_vector(v, shape);
  }
  if (t_weights_follow > 0) return Tensor::zeros(shape);  // overwritten by the file's weights
  throw NotImplementedError(fmt::format("Osprey does not sample the {} initializer; a model using it can be loaded "
                                        "with its weights (load_model), not built afresh",
                                        cls));
}

Initializer RandomNormal(double mean, double stddev) {
  return Initializer::from_config("RandomNormal", ser::dumps(json{{"seed", nullptr}, {"mean", mean}, {"stddev", stddev}}));
}
Initializer RandomUniform(double minval, double maxval) {
  return Initializer::from_config("RandomUniform",
                                  ser::dumps(json{{"seed", nullptr}, {"minval", minval}, {"maxval", maxval}}));
}
Initializer TruncatedNormal(double mean, double stddev) {
  return Initializer::from_config("TruncatedNormal",
                                  ser::dumps(json{{"seed", nullptr}, {"mean", mean}, {"stddev", stddev}}));
}
Initializer Constant(double value) { return Initializer::from_config("Constant", ser::dumps(json{{"value", value}})); }
Initializer VarianceScaling(double scale, const std::string& mode, const std::string& distribution) {
  return Initializer::from_config("VarianceScaling",
                                  ser::dumps(json{{"seed", nullptr}, {"scale", scale}, {"mode", mode},
                                                  {"distribution", distribution}, {"input_axes", nullptr},
                                                  {"output_axes", nullptr}}));
}
Initializer Orthogonal(double gain) {
  return Initializer::from_config("Orthogonal", ser::dumps(json{{"seed", nullptr}, {"gain", gain}}));
}
Initializer Identity(double gain) { return Initializer::from_config("Identity", ser::dumps(json{{"gain", gain}})); }

}  // namespace initializers

Tensor initialize(const initializers::Initializer& init, const Shape& shape) { return init(shape); }

}  // namespace osprey::keras
