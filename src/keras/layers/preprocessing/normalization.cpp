// keras.layers.Normalization: adapt() computes the statistics on the host in double precision (one pass per batch,
// batches merged as Keras merges them); call() runs on ops, the kept axes moved last so that the mean and the
// standard deviation are row vectors.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>

#include "keras/saving/serialization.h"
#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/keras/data.h"
#include "osprey/keras/layers/convolutional.h"
#include "osprey/keras/layers/preprocessing.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace {

constexpr double kEpsilon = 1e-7;  // keras.backend.epsilon()

std::vector<double> as_double(const Tensor& x) {
  return (x.dtype() == DType::float64 ? x : x.cast(DType::float64)).to_vector<double>();
}

std::string dims_text(std::span<const int64_t> d) {
  return d.size() == 1 ? fmt::format("({},)", d[0]) : fmt::format("({})", fmt::join(d, ", "));
}

// Per position of the kept axes: the mean and (population) variance of `x` over the other axes, and how many values
// each position has.
struct Stats {
  std::vector<double> mean, var;
  int64_t count = 0;
};

Stats stats_of(const Tensor& x, const std::vector<int>& keep) {
  const auto dims = x.shape().dims();
  const int nd = static_cast<int>(dims.size());
  std::vector<int64_t> stride(static_cast<std::size_t>(nd), 0);  // of the kept position, per input axis
  int64_t kept = 1;
  for (int a = nd - 1; a >= 0; --a) {
    if (std::find(keep.begin(), keep.end(), a) != keep.end()) {
      stride[static_cast<std::size_t>(a)] = kept;
      kept *= dims[static_cast<std::size_t>(a)];
    }
  }
  // float32 values (as the layer computes) summed in double; the kept position of each value is walked along in
  // row-major order (no index array: adapt() may see a whole dataset at once).
  const Tensor f = x.dtype() == DType::float32 ? x : x.cast(DType::float32);
  const auto v = f.to_vector<float>();
  Stats s{std::vector<double>(static_cast<std::size_t>(kept), 0.0), std::vector<double>(static_cast<std::size_t>(kept), 0.0),
          static_cast<int64_t>(v.size()) / std::max<int64_t>(kept, 1)};
  auto each = [&](auto&& fn) {
    std::vector<int64_t> pos(static_cast<std::size_t>(nd), 0);
    int64_t k = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      fn(static_cast<std::size_t>(k), static_cast<double>(v[i]));
      for (int a = nd - 1; a >= 0; --a) {
        const auto ua = static_cast<std::size_t>(a);
        k += stride[ua];
        if (++pos[ua] < dims[ua]) break;
        k -= stride[ua] * pos[ua];
        pos[ua] = 0;
      }
    }
  };
  each([&](std::size_t k, double value) { s.mean[k] += value; });
  for (double& m : s.mean) m /= static_cast<double>(s.count);
  each([&](std::size_t k, double value) {
    const double d = value - s.mean[k];
    s.var[k] += d * d;
  });
  for (double& q : s.var) q /= static_cast<double>(s.count);
  return s;
}

}  // namespace

Normalization::Normalization(NormalizationOptions options) : Layer(options.name, "normalization", options.dtype), o_(std::move(options)) {
  if (o_.mean.has_value() != o_.variance.has_value()) {
    throw ValueError(fmt::format("When setting values directly, both `mean` and `variance` must be set. Received: "
                                 "mean={} and variance={}",
                                 o_.mean ? "a tensor" : "None", o_.variance ? "a tensor" : "None"));
  }
  if (o_.mean) {
    if (o_.mean->shape() != o_.variance->shape()) {
      throw ValueError(fmt::format("When setting values directly, `mean` and `variance` must have the same shape. "
                                   "Received: mean shape {} and variance shape {}",
                                   dims_text(o_.mean->shape().dims()), dims_text(o_.variance->shape().dims())));
    }
    if (o_.mean->shape().rank() > static_cast<int>(o_.axis.size())) {
      throw ValueError(fmt::format("The rank of `mean` must be less than or equal to the number of axes ({}). "
                                   "Received: mean shape {} for axis ({})",
                                   o_.axis.size(), dims_text(o_.mean->shape().dims()), fmt::join(o_.axis, ", ")));
    }
  }
}

void Normalization::prepare(const Shape& sample_shape) {
  const int nd = sample_shape.rank() + 1;
  std::vector<int> keep;
  for (int a : o_.axis) {
    if (a < -nd || a >= nd) {
      throw ValueError(fmt::format("All `axis` values must be in the range [-ndim, ndim). Received inputs with "
                                   "ndim={}, while axis=({})",
                                   nd, fmt::join(o_.axis, ", ")));
    }
    keep.push_back(a < 0 ? a + nd : a);
  }
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  if (!keep.empty() && keep[0] == 0) {
    throw ValueError(fmt::format("All `axis` values to be kept must have a known shape. Received axis=({}), "
                                 "inputs.shape={}, with unknown axis at index 0 (the batch axis)",
                                 fmt::join(o_.axis, ", "), detail::with_batch(sample_shape)));
  }
  keep_ = keep;
  ndim_ = nd;
  kept_.clear();
  for (int a : keep_) kept_.push_back(sample_shape[a - 1]);
}

Shape Normalization::build(const Shape& input_shape) {
  if (built_) {  // by adapt(), or an earlier call: the kept axes must agree
    bool ok = input_shape.rank() + 1 == ndim_;
    for (std::size_t i = 0; ok && i < keep_.size(); ++i) ok = input_shape[keep_[i] - 1] == kept_[i];
    if (!ok) {
      throw ValueError(fmt::format("The layer was built with kept axes ({}) of sizes {}, but is called on inputs "
                                   "of shape {}",
                                   fmt::join(keep_, ", "), dims_text(kept_), detail::with_batch(input_shape)));
    }
    return finish_build(input_shape);
  }
  prepare(input_shape);
  const Shape kept(kept_);
  if (!o_.mean) {
    mean_ = &add_weight("mean", Tensor::zeros(kept), false);
    variance_ = &add_weight("variance", Tensor::ones(kept), false);
    add_weight("count", Tensor::zeros(Shape(std::vector<int64_t>{}), DType::int64), false);
  } else {
    // Keras: a scalar broadcasts everywhere; otherwise the given axes align with the last kept ones.
    const auto g = o_.mean->shape().dims();
    const std::size_t off = kept_.size() - g.size();
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (g[i] != 1 && g[i] != kept_[off + i]) {
        throw ValueError(fmt::format("Normalization: `mean` of shape {} does not broadcast to the kept axes' shape "
                                     "{} of inputs {}",
                                     dims_text(g), dims_text(kept_), detail::with_batch(input_shape)));
      }
    }
    auto spread = [&](const Tensor& t) {
      const auto v = as_double(t);
      const int64_t n = Shape(kept_).num_elements();
      std::vector<float> out(static_cast<std::size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        int64_t rest = i, src = 0, src_stride = 1;
        for (std::size_t a = kept_.size(); a-- > 0;) {
          const int64_t c = rest % kept_[a];
          rest /= kept_[a];
          if (a >= off) {
            const int64_t gd = g[a - off];
            src += (gd == 1 ? 0 : c) * src_stride;
            src_stride *= gd;
          }
        }
        out[static_cast<std::size_t>(i)] = static_cast<float>(v[static_cast<std::size_t>(src)]);
      }
      return Tensor::from_vector(out, kept);
    };
    given_mean_ = spread(*o_.mean);
    given_variance_ = spread(*o_.variance);
  }
  return finish_build(input_shape);
}

Tensor Normalization::mean() const {
  if (!built_) throw ValueError(fmt::format("Normalization '{}' is not built: call adapt() or build it first", name_));
  return mean_ ? mean_->value() : given_mean_;
}
Tensor Normalization::variance() const {
  if (!built_) throw ValueError(fmt::format("Normalization '{}' is not built: call adapt() or build it first", name_));
  return variance_ ? variance_->value() : given_variance_;
}

Tensor Normalization::call(const Tensor& inputs, bool) {
  const auto d = inputs.shape().dims();
  if (!built_) build(Shape(std::vector<int64_t>(d.begin() + (d.empty() ? 0 : 1), d.end())));
  if (static_cast<int>(d.size()) != ndim_) {
    throw ValueError(fmt::format("Input 0 of layer \"{}\" is incompatible with the layer: expected ndim={}, found "
                                 "ndim={}. Full shape received: {}",
                                 name_, ndim_, d.size(), dims_text(d)));
  }
  for (std::size_t i = 0; i < keep_.size(); ++i) {
    if (d[static_cast<std::size_t>(keep_[i])] != kept_[i]) {
      throw ValueError(fmt::format("Normalization '{}': axis {} of the input has {} entries; the layer was built "
                                   "for {}. Full shape received: {}",
                                   name_, keep_[i], d[static_cast<std::size_t>(keep_[i])], kept_[i], dims_text(d)));
    }
  }
  const Tensor x = inputs.dtype() == DType::float32 ? inputs : inputs.cast(DType::float32);
  const int64_t k = Shape(kept_).num_elements();
  const Tensor m = osprey::ops::reshape(mean(), Shape({k}));
  const Tensor s = osprey::ops::maximum(osprey::ops::sqrt(osprey::ops::reshape(variance(), Shape({k}))), Tensor::scalar(kEpsilon));
  // The kept axes last, in order (no copy when they already are).
  std::vector<int> perm;
  for (int a = 0; a < ndim_; ++a) {
    if (std::find(keep_.begin(), keep_.end(), a) == keep_.end()) perm.push_back(a);
  }
  perm.insert(perm.end(), keep_.begin(), keep_.end());
  bool identity = true;
  for (int a = 0; a < ndim_; ++a) identity = identity && perm[static_cast<std::size_t>(a)] == a;
  const Tensor moved = identity ? x : osprey::ops::transpose(x, perm);
  const Tensor rows = osprey::ops::reshape(moved, Shape({moved.num_elements() / std::max<int64_t>(k, 1), k}));
  const Tensor y = o_.invert ? osprey::ops::add(osprey::ops::mul(rows, s), m) : osprey::ops::div(osprey::ops::sub(rows, m), s);
  const Tensor back = osprey::ops::reshape(y, moved.shape());
  if (identity) return back;
  std::vector<int> inverse(static_cast<std::size_t>(ndim_));
  for (int a = 0; a < ndim_; ++a) inverse[static_cast<std::size_t>(perm[static_cast<std::size_t>(a)])] = a;
  return osprey::ops::transpose(back, inverse);
}

void Normalization::adapt(const Tensor& data) { adapt(std::vector<Tensor>{data}); }

void Normalization::adapt(utils::PyDataset& dataset) {
  std::vector<Tensor> batches;
  for (int64_t i = 0; i < dataset.num_batches(); ++i) batches.push_back(dataset.get_weighted_batch(i).x.at(0));
  adapt(batches);
}

void Normalization::adapt(const std::vector<Tensor>& batches) {
  if (o_.mean) {
    throw ValueError(fmt::format("Normalization '{}' was given its `mean` and `variance`; adapt() computes them "
                                 "for a layer made without them",
                                 name_));
  }
  if (batches.empty()) {
    throw ValueError("adapt() received an empty iterable (no batches). Expected at least one batch. Pass a "
                     "non-empty list of tensors, e.g. layer.adapt(x).");
  }
  const auto first = batches[0].shape().dims();
  if (first.empty()) throw ValueError("Normalization.adapt(): the data needs a batch axis; received a scalar");
  if (!built_) build(Shape(std::vector<int64_t>(first.begin() + 1, first.end())));
  std::vector<double> mean(static_cast<std::size_t>(Shape(kept_).num_elements()), 0.0), var(mean.size(), 0.0);
  int64_t total = 0;
  for (const Tensor& b : batches) {
    const auto d = b.shape().dims();
    bool ok = static_cast<int>(d.size()) == ndim_;
    for (std::size_t i = 0; ok && i < keep_.size(); ++i) ok = d[static_cast<std::size_t>(keep_[i])] == kept_[i];
    if (!ok) {
      throw ValueError(fmt::format("adapt() yielded a batch with incompatible shape. The layer keeps axes ({}) of "
                                   "sizes {}; got a batch of shape {}",
                                   fmt::join(keep_, ", "), dims_text(kept_), dims_text(d)));
    }
    if (b.num_elements() == 0) continue;
    const Stats s = stats_of(b, keep_);
    total += s.count;
    const double bw = static_cast<double>(s.count) / static_cast<double>(total), ew = 1.0 - bw;
    for (std::size_t i = 0; i < mean.size(); ++i) {  // Keras's merge of a batch into the running totals
      const double nm = mean[i] * ew + s.mean[i] * bw;
      var[i] = (var[i] + (mean[i] - nm) * (mean[i] - nm)) * ew + (s.var[i] + (s.mean[i] - nm) * (s.mean[i] - nm)) * bw;
      mean[i] = nm;
    }
  }
  if (total == 0) throw ValueError("Normalization.adapt(): the data has no values");
  const Shape kept(kept_);
  mean_->assign(Tensor::from_vector(std::vector<float>(mean.begin(), mean.end()), kept));
  variance_->assign(Tensor::from_vector(std::vector<float>(var.begin(), var.end()), kept));
}

// ---- Keras config ----

namespace ser = serialization;
using ser::json;

namespace {

// A tensor as Keras's nested list (a number for a scalar).
json nested(const std::vector<double>& v, const std::vector<int64_t>& dims, std::size_t axis, std::size_t& at) {
  if (axis == dims.size()) return v[at++];
  json out = json::array();
  for (int64_t i = 0; i < dims[axis]; ++i) out.push_back(nested(v, dims, axis + 1, at));
  return out;
}

// A nested list (or a number) as a tensor: its shape from the nesting, which must be regular (depth at most 8).
Tensor from_nested(const json& j, const char* key) {
  std::vector<int64_t> dims;
  const json* p = &j;
  while (p->is_array()) {
    if (dims.size() == 8) throw ValueError(fmt::format("Normalization: `{}` is nested deeper than 8 levels", key));
    dims.push_back(static_cast<int64_t>(p->size()));
    if (p->empty()) break;
    p = &(*p)[0];
  }
  std::vector<float> values;
  const int64_t n = Shape(dims).num_elements();
  if (n > (int64_t{1} << 24)) throw ValueError(fmt::format("Normalization: `{}` has {} values (at most 2^24)", key, n));
  auto walk = [&](auto&& self, const json& e, std::size_t depth) -> void {
    if (depth == dims.size()) {
      if (!e.is_number()) throw ValueError(fmt::format("Normalization: `{}` must hold numbers; found {}", key, e.dump()));
      values.push_back(e.get<float>());
      return;
    }
    if (!e.is_array() || static_cast<int64_t>(e.size()) != dims[depth]) {
      throw ValueError(fmt::format("Normalization: `{}` is not a regular nested list", key));
    }
    for (const auto& c : e) self(self, c, depth + 1);
  };
  walk(walk, j, 0);
  return Tensor::from_vector(values, Shape(dims));
}

}  // namespace

std::string Normalization::get_config() const {
  json c = ser::base_config(*this);
  c["axis"] = o_.axis;
  c["invert"] = o_.invert;
  for (const char* key : {"mean", "variance"}) {
    const auto& t = std::string(key) == "mean" ? o_.mean : o_.variance;
    if (!t) {
      c[key] = nullptr;
      continue;
    }
    std::size_t at = 0;
    const auto dims = t->shape().dims();
    c[key] = nested(as_double(*t), std::vector<int64_t>(dims.begin(), dims.end()), 0, at);
  }
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(preprocessing_normalization) {
  ser::register_layer_class("Normalization", {true, [](const json& c) -> std::shared_ptr<Layer> {
    NormalizationOptions o;
    o.name = ser::name_of(c);
    o.invert = ser::value_or(c, "invert", false);
    if (c.contains("axis")) {
      const json& a = c["axis"];
      o.axis.clear();
      auto axis_of = [](const json& e) {
        if (!e.is_number_integer() || e.get<int64_t>() < -64 || e.get<int64_t>() > 64) {
          throw ValueError(fmt::format("Normalization: `axis` must hold integers in [-64, 64]; found {}", e.dump()));
        }
        return static_cast<int>(e.get<int64_t>());
      };
      if (a.is_array()) {
        if (a.size() > 64) throw ValueError("Normalization: `axis` lists more than 64 axes");
        for (const auto& e : a) o.axis.push_back(axis_of(e));
      } else if (!a.is_null()) {
        o.axis.push_back(axis_of(a));
      }
    }
    if (c.contains("mean") && !c["mean"].is_null()) o.mean = from_nested(c["mean"], "mean");
    if (c.contains("variance") && !c["variance"].is_null()) o.variance = from_nested(c["variance"], "variance");
    return std::make_shared<Normalization>(std::move(o));
  }});
}

}  // namespace osprey::keras::layers
