// The merging layers: element-wise merges, Concatenate and Dot, over ops with gradients.
#include "osprey/keras/layers/merging.h"

#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace ops = osprey::ops;  // the kernels' ops (keras::ops::concatenate for Concatenate's promotion)

static std::string shapes_text(const std::vector<Shape>& shapes) {
  std::vector<std::string> out;
  for (const auto& s : shapes) {
    std::vector<int64_t> dims{0};
    for (auto d : s.dims()) dims.push_back(d);
    out.push_back(Shape(dims).to_keras_string());
  }
  return fmt::format("[{}]", fmt::join(out, ", "));
}

ElementwiseMerge::ElementwiseMerge(std::string name, const std::string& prefix, std::size_t min_inputs,
                                   std::size_t max_inputs)
    : Layer(name, prefix), min_inputs_(min_inputs), max_inputs_(max_inputs) {}

Shape ElementwiseMerge::build(const std::vector<Shape>& shapes) {
  if (shapes.size() < min_inputs_ || (max_inputs_ && shapes.size() > max_inputs_)) {
    throw ValueError(fmt::format("A `{}` layer should be called on {} {} inputs. Received: {} input(s) with shapes {}",
                                 class_name(), max_inputs_ == min_inputs_ ? "exactly" : "at least", min_inputs_,
                                 shapes.size(), shapes_text(shapes)));
  }
  // Keras's _compute_elemwise_op_output_shape: per-sample shapes aligned at the last axis, each pair of dimensions
  // equal or one of them 1 (an input of lower rank gets axes after the batch axis in call()).
  std::vector<int64_t> out = shapes[0].dims_vector();
  for (std::size_t k = 1; k < shapes.size(); ++k) {
    std::vector<int64_t> a = out, b = shapes[k].dims_vector();
    if (a.size() < b.size()) std::swap(a, b);
    std::vector<int64_t> merged(a.begin(), a.end() - static_cast<std::ptrdiff_t>(b.size()));
    for (std::size_t i = 0; i < b.size(); ++i) {
      const int64_t x = a[a.size() - b.size() + i], y = b[i];
      if (x != y && x != 1 && y != 1) {
        throw ValueError(fmt::format("Layer '{}' ({}): inputs have incompatible shapes. Received shapes {}", name_,
                                     class_name(), shapes_text(shapes)));
      }
      merged.push_back(x == 1 ? y : x);
    }
    out = merged;
  }
  if (built_ && Shape(out) != output_shape_) {
    throw ValueError(fmt::format("Layer '{}' ({}) was built for inputs of shape {}, but it was called on {}", name_,
                                 class_name(), shapes_text({output_shape_}), shapes_text(shapes)));
  }
  return finish_build(Shape(out));
}

Tensor ElementwiseMerge::call(const std::vector<Tensor>& inputs, bool) {
  if (inputs.size() < min_inputs_ || (max_inputs_ && inputs.size() > max_inputs_)) {
    throw ValueError(fmt::format("Layer '{}' ({}) needs {} {} inputs, got {}", name_, class_name(),
                                 max_inputs_ == min_inputs_ ? "exactly" : "at least", min_inputs_, inputs.size()));
  }
  int rank = 0;
  for (const auto& t : inputs) {
    if (t.shape().rank() < 1 || t.shape()[0] != inputs[0].shape()[0]) {
      throw ValueError(fmt::format("Layer '{}' ({}): cannot merge tensors with different batch sizes: shapes {} and {}",
                                   name_, class_name(), inputs[0].shape().to_string(), t.shape().to_string()));
    }
    rank = std::max(rank, t.shape().rank());
  }
  // Inputs of lower rank get axes of 1 after the batch axis (Keras's Merge); then NumPy broadcasting.
  std::vector<Tensor> xs;
  for (const auto& t : inputs) {
    if (t.shape().rank() == rank) {
      xs.push_back(t);
      continue;
    }
    std::vector<int64_t> dims = t.shape().dims_vector();
    dims.insert(dims.begin() + 1, static_cast<std::size_t>(rank - t.shape().rank()), int64_t{1});
    xs.push_back(ops::reshape(t, Shape(dims)));
  }
  for (const auto& t : xs) {
    try {
      (void)ops::broadcast_shapes(xs[0].shape(), t.shape());
    } catch (const InvalidArgumentError&) {
      throw ValueError(fmt::format("Layer '{}' ({}): inputs have incompatible shapes {} and {}", name_, class_name(),
                                   inputs[0].shape().to_string(), t.shape().to_string()));
    }
  }
  return merge(xs);
}

Tensor ElementwiseMerge::call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>&) {
  return call(inputs, training);
}

Tensor ElementwiseMerge::compute_mask_list(const std::vector<Tensor>&, const std::vector<Tensor>& masks) {
  Tensor out;
  for (const auto& m : masks) {
    if (!m.defined()) return Tensor();
    out = out.defined() ? ops::maximum(out, m) : m;  // masks are 1/0: the maximum is the logical or
  }
  return out;
}

template <typename F>
static Tensor fold(const std::vector<Tensor>& xs, F f) {
  Tensor out = xs[0];
  for (std::size_t i = 1; i < xs.size(); ++i) out = f(out, xs[i]);
  return out;
}

Tensor Add::merge(const std::vector<Tensor>& xs) const { return fold(xs, ops::add); }
Tensor Subtract::merge(const std::vector<Tensor>& xs) const { return ops::sub(xs[0], xs[1]); }
Tensor Multiply::merge(const std::vector<Tensor>& xs) const { return fold(xs, ops::mul); }
Tensor Average::merge(const std::vector<Tensor>& xs) const {
  const Tensor sum = fold(xs, ops::add);
  return ops::div(sum, Tensor::scalar(static_cast<double>(xs.size()), sum.dtype()));
}
Tensor Maximum::merge(const std::vector<Tensor>& xs) const { return fold(xs, ops::maximum); }
Tensor Minimum::merge(const std::vector<Tensor>& xs) const { return fold(xs, ops::minimum); }

Concatenate::Concatenate(int axis, std::string name) : Layer(name, "concatenate"), axis_(axis) {
  if (axis == 0) {
    throw ValueError("Concatenate: axis 0 is the batch axis; concatenate along a feature axis (1, ..., or -1)");
  }
}

Shape Concatenate::build(const std::vector<Shape>& shapes) {
  if (shapes.size() < 2) {
    throw ValueError(fmt::format("A `Concatenate` layer should be called on a list of at least 2 inputs. Received: "
                                 "input_shape={}",
                                 shapes_text(shapes)));
  }
  const int rank = shapes[0].rank();  // per sample
  const int ax = axis_ < 0 ? axis_ + rank : axis_ - 1;
  bool ok = ax >= 0 && ax < rank;
  int64_t total = 0;
  for (const auto& s : shapes) {
    ok = ok && s.rank() == rank;
    for (int d = 0; ok && d < rank; ++d) ok = d == ax || s[d] == shapes[0][d];
    if (ok) total += s[ax];
  }
  if (!ok) {
    throw ValueError(fmt::format("A `Concatenate` layer ('{}') requires inputs with matching shapes except for the "
                                 "concatenation axis ({}). Received: input_shape={}",
                                 name_, axis_, shapes_text(shapes)));
  }
  sample_axis_ = ax;
  return finish_build(shapes[0].with_dim(ax, total));
}

Tensor Concatenate::call(const std::vector<Tensor>& inputs, bool) {
  if (inputs.size() < 2) {
    throw ValueError(fmt::format("Layer '{}' (Concatenate) needs at least 2 inputs, got {}", name_, inputs.size()));
  }
  // Inputs of several dtypes (float features beside a lookup's int64 counts) promote as Keras's do.
  return keras::ops::concatenate(inputs, sample_axis_ + 1);
}

Tensor Concatenate::call_masked_list(const std::vector<Tensor>& inputs, bool training, const std::vector<Tensor>&) {
  return call(inputs, training);
}

Tensor Concatenate::compute_mask_list(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks) {
  bool any = false;
  for (const auto& m : masks) any = any || m.defined();
  if (!any) return Tensor();
  std::vector<Tensor> full;  // each input's mask, or ones, of the input's shape without its last axis
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto d = inputs[i].shape().dims();
    const Shape mask_shape(std::vector<int64_t>(d.begin(), d.end() - 1));
    const Tensor& m = i < masks.size() ? masks[i] : Tensor();
    if (m.defined() && m.shape() != mask_shape) {
      throw ValueError(fmt::format("Layer '{}' (Concatenate): input {}'s mask has shape {}; Osprey merges masks of the "
                                   "input's shape without its last axis ({})",
                                   name_, i, m.shape().to_string(), mask_shape.to_string()));
    }
    full.push_back(m.defined() ? m : Tensor::ones(mask_shape));
  }
  const int full_axis = sample_axis_ + 1;
  if (full_axis == inputs[0].shape().rank() - 1) {  // along the features: any input kept
    Tensor out = full[0];
    for (std::size_t i = 1; i < full.size(); ++i) out = ops::maximum(out, full[i]);
    return out;
  }
  return ops::concat(full, full_axis);
}

Dot::Dot(int axes, bool normalize, std::string name) : Dot(std::pair{axes, axes}, normalize, std::move(name)) {
  pair_ = false;
}
Dot::Dot(std::pair<int, int> axes, bool normalize, std::string name)
    : Layer(name, "dot"), axes_(axes), pair_(true), normalize_(normalize) {}

// Keras's axes for inputs of full ranks rx, ry (batch included): negative ones counted from the end; the batch
// axis 0 cannot be one.
std::pair<int, int> Dot::resolved(int rx, int ry) const {
  const int ax = axes_.first < 0 ? ((axes_.first % rx) + rx) % rx : axes_.first;
  const int ay = axes_.second < 0 ? ((axes_.second % ry) + ry) % ry : axes_.second;
  if (ax < 1 || ax >= rx || ay < 1 || ay >= ry) {
    throw ValueError(fmt::format("Layer '{}' (Dot): axes ({}, {}) are out of range for inputs of rank {} and {} (the "
                                 "batch axis 0 cannot be summed over)",
                                 name_, axes_.first, axes_.second, rx, ry));
  }
  return {ax, ay};
}

// keras.layers.Dot: batch_dot of the two inputs, their axes summed over (each L2-normalised along it first with
// `normalize`): the output is x's shape less its axis, then y's less its batch and axis ((batch, 1) when nothing
// is left).
Shape Dot::build(const std::vector<Shape>& shapes) {
  if (shapes.size() != 2) {
    throw ValueError(fmt::format("A `Dot` layer should be called on a list of 2 inputs. Received: input_shape={}",
                                 shapes_text(shapes)));
  }
  const int rx = shapes[0].rank() + 1, ry = shapes[1].rank() + 1;
  if (rx < 2 || ry < 2) {
    throw ValueError(fmt::format("Cannot do batch_dot on inputs with rank < 2. Received: input_shape={}",
                                 shapes_text(shapes)));
  }
  const auto [ax, ay] = resolved(rx, ry);
  if (shapes[0][ax - 1] != shapes[1][ay - 1]) {
    throw ValueError(fmt::format("Incompatible input shapes: axis values {} (at {}) != {} (at {}). Full input shapes: "
                                 "{} (layer '{}')",
                                 shapes[0][ax - 1], ax, shapes[1][ay - 1], ay, shapes_text(shapes), name_));
  }
  std::vector<int64_t> out;
  for (int i = 0; i < rx - 1; ++i) if (i != ax - 1) out.push_back(shapes[0][i]);
  for (int i = 0; i < ry - 1; ++i) if (i != ay - 1) out.push_back(shapes[1][i]);
  if (out.empty()) out.push_back(1);
  return finish_build(Shape(out));
}

// x as (batch, rest, k) with its axis `ax` last (first: as (batch, k, rest)).
static Tensor contracted_last(const Tensor& x, int ax, bool first) {
  const int r = x.shape().rank();
  std::vector<int> perm{0};
  if (first) perm.push_back(ax);
  for (int i = 1; i < r; ++i) if (i != ax) perm.push_back(i);
  if (!first) perm.push_back(ax);
  const Tensor t = ops::transpose(x, perm);
  const int64_t k = x.shape()[ax], rest = x.num_elements() / std::max<int64_t>(x.shape()[0] * k, 1);
  return ops::reshape(t, first ? Shape{x.shape()[0], k, rest} : Shape{x.shape()[0], rest, k});
}

Tensor Dot::call(const std::vector<Tensor>& inputs, bool) {
  if (inputs.size() != 2) throw ValueError(fmt::format("Layer '{}' (Dot) needs 2 inputs, got {}", name_, inputs.size()));
  Tensor a = inputs[0], b = inputs[1];
  const auto [ax, ay] = resolved(a.shape().rank(), b.shape().rank());
  if (normalize_) {  // x / √max(Σx², 1e-12) along the axis (TensorFlow's l2_normalize)
    auto unit = [](const Tensor& x, int axis) {
      const Tensor sq = ops::reduce_axes(ops::square(x), ops::ReduceOp::sum, {axis}, true);
      return ops::div(x, ops::sqrt(ops::maximum(sq, Tensor::scalar(1e-12))));
    };
    a = unit(a, ax);
    b = unit(b, ay);
  }
  const int64_t n = a.shape()[0];
  const Tensor product = ops::matmul(contracted_last(a, ax, false), contracted_last(b, ay, true));
  std::vector<int64_t> out{n};
  for (int i = 1; i < a.shape().rank(); ++i) if (i != ax) out.push_back(a.shape()[i]);
  for (int i = 1; i < b.shape().rank(); ++i) if (i != ay) out.push_back(b.shape()[i]);
  if (out.size() == 1) out.push_back(1);
  return ops::reshape(product, Shape(out));
}

// ---- Keras configs (layer.get_config()) and from_config ----

namespace ser = serialization;
using ser::json;

std::string Concatenate::get_config() const { return ser::config_text(*this, {{"axis", axis_}}); }
std::string Dot::get_config() const {
  const json axes = pair_ ? json::array({axes_.first, axes_.second}) : json(axes_.first);
  return ser::config_text(*this, {{"axes", axes}, {"normalize", normalize_}});
}

template <typename L>
static ser::LayerClass merge_class() {
  return {true, [](const json& c) -> std::shared_ptr<Layer> { return std::make_shared<L>(ser::name_of(c)); }};
}

OSPREY_REGISTER_LAYERS(merging) {
  ser::register_layer_class("Add", merge_class<Add>());
  ser::register_layer_class("Subtract", merge_class<Subtract>());
  ser::register_layer_class("Multiply", merge_class<Multiply>());
  ser::register_layer_class("Average", merge_class<Average>());
  ser::register_layer_class("Maximum", merge_class<Maximum>());
  ser::register_layer_class("Minimum", merge_class<Minimum>());
  ser::register_layer_class("Concatenate", {true, [](const json& c) -> std::shared_ptr<Layer> {
    return std::make_shared<Concatenate>(static_cast<int>(ser::integer(c, "axis", -64, 64, "Concatenate")),
                                         ser::name_of(c));
  }});
  ser::register_layer_class("Dot", {true, [](const json& c) -> std::shared_ptr<Layer> {
    const json axes = c.at("axes");
    const bool normalize = ser::value_or(c, "normalize", false);
    if (axes.is_array() && axes.size() == 2 && axes[0].is_number_integer() && axes[1].is_number_integer() &&
        std::abs(axes[0].get<int64_t>()) <= 64 && std::abs(axes[1].get<int64_t>()) <= 64) {
      return std::make_shared<Dot>(std::pair{axes[0].get<int>(), axes[1].get<int>()}, normalize, ser::name_of(c));
    }
    if (!axes.is_number_integer()) ser::unsupported("Dot axes", axes.dump(), "an axis or a pair of axes");
    return std::make_shared<Dot>(static_cast<int>(ser::integer(c, "axes", -64, 64, "Dot")), normalize,
                                 ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
