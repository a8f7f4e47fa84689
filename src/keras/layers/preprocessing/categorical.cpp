// keras.layers.CategoryEncoding and keras.layers.Discretization, with the TensorFlow backend's encoding rules
// (keras/src/utils/numerical_utils.py: TensorFlow's bincount for multi_hot/count over rank 1 and 2, one-hot rows
// reduced over axis 1 above that) and Keras's approximate quantiles for Discretization.adapt()
// (keras/src/layers/preprocessing/discretization.py: summaries of 1 / epsilon weighted values, merged and
// compressed with NumPy's interp; reproduced here in the same float32 and double steps). Both compute on the host:
// they are data layers, their inputs are ids or raw features, and no gradient flows through them.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "keras/layers/preprocessing/categorical_common.h"
#include "keras/saving/serialization.h"
#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/preprocessing.h"
#include "osprey/ops.h"
#include "runtime/device_manager.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using json = ser::json;

namespace categorical {

std::vector<double> host_values(const Tensor& x) {
  const Tensor h = x.device_ref().host_memory() ? x : x.to("CPU:0");
  return (h.dtype() == DType::float64 ? h : h.cast(DType::float64)).to_vector<double>();
}

Tensor on_device_of(const Tensor& t, const Tensor& like) {
  return &t.device_ref() == &like.device_ref() ? t : t.to(like.device_ref());
}

std::string canonical_mode(std::string mode, bool discretization) {
  if (!discretization && mode == "binary") mode = "multi_hot";
  const bool ok = mode == "one_hot" || mode == "multi_hot" || mode == "count" || (discretization && mode == "int");
  if (!ok) {
    throw ValueError(fmt::format("{}: unknown output_mode '{}'; it takes {}", discretization ? "Discretization" : "CategoryEncoding",
                                 mode, discretization ? "'int', 'one_hot', 'multi_hot' or 'count'"
                                                      : "'one_hot', 'multi_hot' (or 'binary') or 'count'"));
  }
  return mode;
}

void no_sparse(bool sparse, const char* layer) {
  if (sparse) {
    throw ValueError(fmt::format("{}: sparse=True needs sparse tensors, which Osprey does not have; leave sparse "
                                 "False for dense outputs",
                                 layer));
  }
}

// The output's sample shape (no batch axis) for inputs of sample shape `in` under Keras's rules: one_hot appends
// the depth (replacing a last axis of 1), multi_hot/count replace axis 1 of the batched shape by a last depth.
Shape encoded_shape(const Shape& in, const std::string& mode, int64_t depth, const std::string& layer,
                    const char* cls) {
  std::vector<int64_t> d(in.dims().begin(), in.dims().end());
  if (mode == "int") return in;
  if (mode == "one_hot") {
    if (!d.empty() && d.back() == 1) d.back() = depth;
    else d.push_back(depth);
    return Shape(d);
  }
  if (d.empty()) {
    throw ValueError(fmt::format(
        "Layer '{}' ({}): output_mode '{}' encodes inputs of shape (batch,) as one sample, an output of shape ({},) "
        "without a batch axis (TensorFlow's bincount), which Osprey's layers do not produce; give each sample its "
        "ids along a last axis ((batch, 1) for one id per sample)",
        layer, cls, mode, depth));
  }
  d.erase(d.begin());
  d.push_back(depth);
  return Shape(d);
}

// ids (any shape, values truncated toward zero as TensorFlow's casts) encoded by `mode` over `depth` values; weights
// (the ids' shape) for "count". Rows are float32 (the weights' dtype for weighted counts).
Tensor encode(const std::vector<double>& ids, std::vector<int64_t> dims, const std::string& mode, int64_t depth,
              const std::vector<double>* weights, const std::string& layer, const char* cls) {
  if (dims.empty()) dims.push_back(1);  // a scalar is one sample
  const int64_t n = static_cast<int64_t>(ids.size());
  if (depth > 0 && std::max<int64_t>(n, 1) > (int64_t{1} << 32) / depth) {
    throw ValueError(fmt::format("Layer '{}' ({}): encoding {} ids over {} values would make more than 2^32 values; "
                                 "lower num_tokens or encode smaller batches",
                                 layer, cls, n, depth));
  }
  auto id_at = [&](int64_t i) {
    const double v = ids[static_cast<std::size_t>(i)];
    return std::isfinite(v) ? static_cast<int64_t>(std::trunc(v)) : int64_t{-1};
  };
  auto weight_at = [&](int64_t i) { return weights ? (*weights)[static_cast<std::size_t>(i)] : 1.0; };
  std::vector<float> out;
  std::vector<int64_t> out_dims;
  if (mode == "one_hot") {
    if (dims.size() > 1 && dims.back() == 1) dims.pop_back();
    out_dims = dims;
    out_dims.push_back(depth);
    out.assign(static_cast<std::size_t>(n * depth), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = id_at(i);
      if (k >= 0 && k < depth) out[static_cast<std::size_t>(i * depth + k)] = 1.0f;
    }
  } else if (dims.size() <= 2) {  // TensorFlow's bincount: one row per sample, a rank-1 input one sample
    const int64_t rows = dims.size() == 1 ? 1 : dims[0], width = n / std::max<int64_t>(rows, 1);
    out_dims = dims.size() == 1 ? std::vector<int64_t>{depth} : std::vector<int64_t>{rows, depth};
    std::vector<double> acc(static_cast<std::size_t>(rows * depth), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = id_at(i);
      if (k < 0) {
        throw InvalidArgumentError(fmt::format(
            "Layer '{}' ({}): input must be non-negative (TensorFlow's bincount); found {} at position {}", layer,
            cls, ids[static_cast<std::size_t>(i)], i));
      }
      if (k >= depth) continue;  // bincount's maxlength leaves it out
      double& a = acc[static_cast<std::size_t>(i / width * depth + k)];
      a = mode == "multi_hot" ? 1.0 : a + weight_at(i);
    }
    out.assign(acc.begin(), acc.end());
  } else {  // one-hot rows reduced over axis 1: max (multi_hot) or weighted sums (count)
    const int64_t d0 = dims[0], d1 = dims[1], inner = n / (d0 * d1);
    out_dims = {d0};
    out_dims.insert(out_dims.end(), dims.begin() + 2, dims.end());
    out_dims.push_back(depth);
    std::vector<double> acc(static_cast<std::size_t>(d0 * inner * depth), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = id_at(i);
      if (k < 0 || k >= depth) continue;
      const int64_t a = i / (d1 * inner), c = i % inner;
      double& v = acc[static_cast<std::size_t>((a * inner + c) * depth + k)];
      v = mode == "multi_hot" ? 1.0 : v + weight_at(i);
    }
    out.assign(acc.begin(), acc.end());
  }
  return Tensor::from_vector(out, Shape(out_dims));
}

std::pair<uint64_t, uint64_t> salt_from(const json& salt, const char* layer) {
  auto part = [&](const json& v) {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer()) return static_cast<uint64_t>(v.get<int64_t>());
    throw ValueError(fmt::format("The `salt` argument for `{}` can only be a tuple of size 2 integers, or a single "
                                 "integer. Received: salt={}.",
                                 layer, salt.dump()));
  };
  if (salt.is_array() && salt.size() == 2) return {part(salt[0]), part(salt[1])};
  const uint64_t k = part(salt);
  return {k, k};
}

}  // namespace categorical

namespace {

using categorical::canonical_mode;
using categorical::encode;
using categorical::encoded_shape;
using categorical::host_values;
using categorical::no_sparse;
using categorical::on_device_of;

// ---- Discretization.adapt(): Keras's summaries ----

// A summary: values ascending and their weights, float32 as Keras keeps them.
struct Summary {
  std::vector<float> values, weights;
};

// numpy.interp(x, xp, fp) for increasing xp (ties allowed): the largest j with xp[j] <= x, linear between j and j+1.
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp) {
  const std::size_t len = xp.size();
  if (std::isnan(x)) return x;
  if (len == 1) return fp[0];  // left and right default to fp[0] = fp[-1]
  if (x > xp[len - 1]) return fp[len - 1];
  if (x < xp[0]) return fp[0];
  const auto j = static_cast<std::size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
  if (j == len - 1) return fp[j];
  if (xp[j] == x) return fp[j];
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  double r = slope * (x - xp[j]) + fp[j];
  if (std::isnan(r)) {
    r = slope * (x - xp[j + 1]) + fp[j + 1];
    if (std::isnan(r) && fp[j] == fp[j + 1]) r = fp[j];
  }
  return r;
}

// compress_summary: the summary at the cumulative-weight fractions epsilon, 2·epsilon, ... < 1 + epsilon (NumPy's
// arange), unless it has fewer than 1 / epsilon entries.
Summary compress(const Summary& s, double epsilon) {
  const std::size_t k = s.values.size();
  if (static_cast<double>(k) * epsilon < 1) return s;
  const auto count = static_cast<std::size_t>(std::max(0.0, std::ceil((1.0 - 0.0) / epsilon)));
  std::vector<double> cum(k), frac(k), values(k);
  float running = 0.0f;  // float32 cumsum
  std::vector<float> cum32(k);
  for (std::size_t i = 0; i < k; ++i) running += s.weights[i], cum32[i] = running;
  for (std::size_t i = 0; i < k; ++i) {
    cum[i] = cum32[i];
    frac[i] = static_cast<double>(cum32[i] / cum32[k - 1]);
    values[i] = s.values[i];
  }
  Summary out;
  double previous = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const double p = epsilon + (0.0 + static_cast<double>(i) * epsilon);
    const double bin = interp(p, frac, values), c = interp(p, frac, cum);
    out.values.push_back(static_cast<float>(bin));
    out.weights.push_back(static_cast<float>(c - previous));
    previous = c;
  }
  return out;
}

// summarize(): the float32 values sorted, every int(step)-th from int(step - 1) on, each of weight step.
Summary summarize(std::vector<float> v, double epsilon) {
  std::sort(v.begin(), v.end(), [](float a, float b) { return a < b || (!std::isnan(a) && std::isnan(b)); });
  const double increment = static_cast<double>(v.size()) / (1.0 / epsilon);
  const double step = std::max(increment, 1.0), start = step - 1;
  Summary s;
  const auto stride = static_cast<std::size_t>(step);
  for (auto i = static_cast<std::size_t>(start); i < v.size(); i += stride) {
    s.values.push_back(v[i]);
    s.weights.push_back(static_cast<float>(step));
  }
  return s;
}

Summary merge(const Summary& next, const Summary& previous, double epsilon) {
  std::vector<std::pair<float, float>> all;
  for (const Summary* s : {&next, &previous}) {
    for (std::size_t i = 0; i < s->values.size(); ++i) all.emplace_back(s->values[i], s->weights[i]);
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Summary m;
  for (const auto& [v, w] : all) m.values.push_back(v), m.weights.push_back(w);
  return compress(m, epsilon);
}

}  // namespace

// ---- CategoryEncoding ----

CategoryEncoding::CategoryEncoding(int64_t num_tokens, CategoryEncodingOptions options)
    : Layer(options.name, "category_encoding", options.dtype), num_tokens_(num_tokens), o_(std::move(options)) {
  o_.output_mode = canonical_mode(o_.output_mode, false);
  if (num_tokens_ < 1) throw ValueError(fmt::format("`num_tokens` must be >= 1. Received: num_tokens={}.", num_tokens_));
  no_sparse(o_.sparse, "CategoryEncoding");
}

Shape CategoryEncoding::build(const Shape& input_shape) {
  return finish_build(encoded_shape(input_shape, o_.output_mode, num_tokens_, name_, "CategoryEncoding"));
}

Shape CategoryEncoding::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.size() == 2 && input_shapes[1] != input_shapes[0]) {
    throw ValueError(fmt::format("Layer '{}' (CategoryEncoding): count_weights {} must have the ids' shape {}", name_,
                                 input_shapes[1].to_string(), input_shapes[0].to_string()));
  }
  if (input_shapes.empty() || input_shapes.size() > 2) {
    throw ValueError(fmt::format("Layer '{}' (CategoryEncoding) takes the ids and optionally count_weights; it was "
                                 "called on {} inputs",
                                 name_, input_shapes.size()));
  }
  return build(input_shapes[0]);
}

Tensor CategoryEncoding::call(const Tensor& inputs, bool training) { return call(std::vector<Tensor>{inputs}, training); }

Tensor CategoryEncoding::call(const std::vector<Tensor>& inputs, bool) {
  if (inputs.empty() || inputs.size() > 2) {
    throw ValueError(fmt::format("Layer '{}' (CategoryEncoding) takes the ids and optionally count_weights; it was "
                                 "called on {} inputs",
                                 name_, inputs.size()));
  }
  const Tensor& ids = inputs[0];
  std::vector<double> w;
  if (inputs.size() == 2) {
    if (o_.output_mode != "count") {
      throw ValueError(fmt::format("`count_weights` is not used when `output_mode` is not `'count'`. Received "
                                   "`count_weights` of shape {} (layer '{}', output_mode '{}')",
                                   inputs[1].shape().to_string(), name_, o_.output_mode));
    }
    if (inputs[1].shape() != ids.shape()) {
      throw ValueError(fmt::format("Layer '{}' (CategoryEncoding): count_weights {} must have the ids' shape {}", name_,
                                   inputs[1].shape().to_string(), ids.shape().to_string()));
    }
    w = host_values(inputs[1]);
  }
  const auto d = ids.shape().dims();
  return on_device_of(encode(host_values(ids), std::vector<int64_t>(d.begin(), d.end()), o_.output_mode, num_tokens_,
                             inputs.size() == 2 ? &w : nullptr, name_, "CategoryEncoding"),
                      ids);
}

std::string CategoryEncoding::get_config() const {
  return ser::config_text(*this, {{"num_tokens", num_tokens_}, {"output_mode", o_.output_mode}, {"sparse", false}});
}

// ---- Discretization ----

Discretization::Discretization(DiscretizationOptions options)
    : Layer(options.name, "discretization", options.dtype), o_(std::move(options)) {
  o_.output_mode = canonical_mode(o_.output_mode, true);
  no_sparse(o_.sparse, "Discretization");
  if (o_.num_bins && *o_.num_bins < 0) {
    throw ValueError(fmt::format("`num_bins` must be greater than or equal to 0. Received: `num_bins={}`", *o_.num_bins));
  }
  if (o_.num_bins && o_.bin_boundaries) {
    throw ValueError(fmt::format("Both `num_bins` and `bin_boundaries` should not be set. Received: `num_bins={}` and "
                                 "`bin_boundaries=[{}]`",
                                 *o_.num_bins, fmt::join(*o_.bin_boundaries, ", ")));
  }
  if (!o_.num_bins && !o_.bin_boundaries) throw ValueError("You need to set either `num_bins` or `bin_boundaries`.");
  if (!(o_.epsilon > 0.0 && o_.epsilon <= 1.0)) {
    throw ValueError(fmt::format("Discretization: `epsilon` must be in (0, 1]; received {}", o_.epsilon));
  }
  if (o_.bin_boundaries) set_bin_boundaries(*o_.bin_boundaries);
}

void Discretization::set_bin_boundaries(std::vector<double> boundaries) {
  for (std::size_t i = 1; i < boundaries.size(); ++i) {
    if (!(boundaries[i - 1] <= boundaries[i])) {
      throw ValueError(fmt::format("Discretization: `bin_boundaries` must be sorted; received [{}]",
                                   fmt::join(boundaries, ", ")));
    }
  }
  boundaries_ = std::move(boundaries);
  has_boundaries_ = true;
}

Shape Discretization::build(const Shape& input_shape) {
  const int64_t depth = has_boundaries_ ? static_cast<int64_t>(boundaries_.size()) + 1 : o_.num_bins.value_or(1);
  return finish_build(encoded_shape(input_shape, o_.output_mode, depth, name_, "Discretization"));
}

Tensor Discretization::call(const Tensor& inputs, bool) {
  if (!has_boundaries_) {
    throw ValueError(fmt::format("You need to either pass the `bin_boundaries` argument at construction time or call "
                                 "`adapt(dataset)` before you can start using the `Discretization` layer ('{}').",
                                 name_));
  }
  // TensorFlow's Bucketize: float32 values against float32 boundaries, the index of the first boundary above.
  std::vector<float> bounds(boundaries_.begin(), boundaries_.end());
  std::vector<double> index;
  const auto values = host_values(inputs);
  index.reserve(values.size());
  for (double v : values) {
    const float f = static_cast<float>(v);
    index.push_back(static_cast<double>(std::upper_bound(bounds.begin(), bounds.end(), f) - bounds.begin()));
  }
  const auto d = inputs.shape().dims();
  std::vector<int64_t> dims(d.begin(), d.end());
  if (o_.output_mode == "int") {
    std::vector<int32_t> out(index.begin(), index.end());
    return on_device_of(Tensor::from_vector(out, inputs.shape()), inputs);
  }
  return on_device_of(encode(index, dims, o_.output_mode, static_cast<int64_t>(bounds.size()) + 1, nullptr, name_,
                             "Discretization"),
                      inputs);
}

void Discretization::adapt(const Tensor& data) { adapt(std::vector<Tensor>{data}); }

void Discretization::adapt(const std::vector<Tensor>& batches) {
  if (!o_.num_bins) {
    throw ValueError("Cannot adapt a Discretization layer that has been initialized with `bin_boundaries`, use "
                     "`num_bins` instead.");
  }
  Summary summary;
  for (const Tensor& b : batches) {
    const auto v = host_values(b);
    summary = merge(summarize(std::vector<float>(v.begin(), v.end()), o_.epsilon), summary, o_.epsilon);
  }
  const Summary bins = compress(summary, 1.0 / static_cast<double>(*o_.num_bins));
  std::vector<double> boundaries(bins.values.begin(), bins.values.end());
  if (!boundaries.empty()) boundaries.pop_back();
  boundaries_ = std::move(boundaries);
  has_boundaries_ = true;
}

// Keras's own keys only (its __init__ takes no `trainable`; its dtype is the policy's name).
std::string Discretization::get_config() const {
  json c;
  c["bin_boundaries"] = has_boundaries_ ? json(boundaries_) : json(nullptr);
  c["num_bins"] = o_.num_bins ? json(*o_.num_bins) : json(nullptr);
  c["epsilon"] = o_.epsilon;
  c["output_mode"] = o_.output_mode;
  c["sparse"] = false;
  c["name"] = name_;
  c["dtype"] = dtype_policy().name();
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(preprocessing_categorical) {
  ser::register_layer_class("CategoryEncoding", {true, [](const json& c) -> std::shared_ptr<Layer> {
    CategoryEncodingOptions o;
    o.name = ser::name_of(c);
    o.output_mode = ser::value_or<std::string>(c, "output_mode", "multi_hot");
    o.sparse = ser::value_or(c, "sparse", false);
    if (!c.contains("num_tokens") || c["num_tokens"].is_null()) {
      throw ValueError("num_tokens must be set to use this layer. If the number of tokens is not known beforehand, "
                       "use the IntegerLookup layer instead.");
    }
    return std::make_shared<CategoryEncoding>(ser::integer(c, "num_tokens", 1, int64_t{1} << 31, "CategoryEncoding"),
                                              std::move(o));
  }});
  ser::register_layer_class("Discretization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    DiscretizationOptions o;
    o.name = ser::name_of(c);
    o.output_mode = ser::value_or<std::string>(c, "output_mode", "int");
    o.sparse = ser::value_or(c, "sparse", false);
    o.epsilon = ser::value_or(c, "epsilon", 0.01);
    std::optional<std::vector<double>> bounds;
    if (c.contains("bin_boundaries") && !c["bin_boundaries"].is_null()) {
      const json& b = c["bin_boundaries"];
      if (!b.is_array() || b.size() > (std::size_t{1} << 24)) {
        throw ValueError("Discretization: `bin_boundaries` must be a list of at most 2^24 numbers");
      }
      bounds.emplace();
      for (const auto& e : b) {
        if (!e.is_number()) throw ValueError(fmt::format("Discretization: `bin_boundaries` holds {}", e.dump()));
        bounds->push_back(e.get<double>());
      }
    }
    if (c.contains("num_bins") && !c["num_bins"].is_null()) {
      o.num_bins = ser::integer(c, "num_bins", 0, int64_t{1} << 24, "Discretization");
    }
    // An adapted layer's config has both (Keras's from_config: num_bins to make it, then its boundaries).
    const bool adapted = o.num_bins && bounds;
    if (!o.num_bins) o.bin_boundaries = bounds;
    auto layer = std::make_shared<Discretization>(std::move(o));
    if (adapted) layer->set_bin_boundaries(*bounds);
    return layer;
  }});
}

}  // namespace osprey::keras::layers
