// Symbolic tensors, keras::Input, calling layers on them, and the functional graph's order and forward pass.
#include "keras/models/graph.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "keras/utils/naming.h"
#include "osprey/errors.h"
#include "osprey/keras/layers.h"
#include "osprey/ops.h"

namespace osprey::keras {

static const Node& node_of(const KerasTensor& t) {
  if (!t.defined()) throw ValueError("This KerasTensor is undefined (default-constructed); use keras::Input(...) "
                                     "or a layer's output.");
  return *t.node();
}
const Shape& KerasTensor::shape() const { return node_of(*this).shapes.at(static_cast<std::size_t>(index_)); }
DType KerasTensor::dtype() const { return node_of(*this).dtype; }
const std::string& KerasTensor::name() const { return node_of(*this).name; }

// "(None, 20)": the batch dimension first, None unless the Input fixed it.
static std::string keras_shape(const KerasTensor& t) {
  const Node& n = node_of(t);
  std::string out = n.batch_size ? std::to_string(*n.batch_size) : "None";
  for (auto d : t.shape().dims()) out += ", " + std::to_string(d);
  return "(" + out + (t.shape().rank() == 0 ? ",)" : ")");
}

std::string KerasTensor::to_string() const {
  const Node& n = node_of(*this);
  return fmt::format("<KerasTensor shape={}, dtype={}, name={}>", keras_shape(*this), dtype_name(n.dtype), n.name);
}

KerasTensors::KerasTensors(const std::map<std::string, KerasTensor>& named) {
  for (const auto& [k, t] : named) {
    keys.push_back(k);
    tensors.push_back(t);
  }
}

KerasTensor Input(const Shape& shape, InputOptions options) {
  for (auto d : shape.dims()) {
    if (d <= 0) {
      throw ValueError(fmt::format("keras::Input: every dimension of `shape` must be positive (the batch dimension "
                                   "is not part of it), got {}",
                                   shape.to_keras_string()));
    }
  }
  if (options.batch_size && *options.batch_size <= 0) {
    throw ValueError(fmt::format("keras::Input: batch_size must be positive, got {}", *options.batch_size));
  }
  auto node = std::make_shared<Node>();
  auto layer = std::make_shared<layers::Input>(shape, options.name);
  node->name = layer->name();
  node->layer = std::move(layer);
  node->shapes = {shape};
  node->dtype = options.dtype;
  node->batch_size = options.batch_size;
  return KerasTensor(std::move(node), 0);
}

// ---- Layer calls ------------------------------------------------------------------------------------------------

Shape Layer::build(const std::vector<Shape>& input_shapes) {
  if (input_shapes.size() != 1) {
    throw ValueError(fmt::format("Layer '{}' ({}) takes one input, but it was called on {} inputs", name_,
                                 class_name(), input_shapes.size()));
  }
  return build(input_shapes[0]);
}

Tensor Layer::call(const std::vector<Tensor>& inputs, bool training) {
  if (inputs.size() != 1) {
    throw ValueError(fmt::format("Layer '{}' ({}) takes one input, but it was called on {} inputs", name_,
                                 class_name(), inputs.size()));
  }
  return call(inputs[0], training);
}

[[noreturn]] static void masks_not_implemented(const Layer& layer) {
  throw ValueError(fmt::format("Layer '{}' ({}) received inputs with masks, which Osprey does not implement for it "
                               "yet. Consume the masks before it (GlobalAveragePooling1D) or drop them.",
                               layer.name(), layer.class_name()));
}

Tensor Layer::call_masked_list(const std::vector<Tensor>&, bool, const std::vector<Tensor>&) {
  masks_not_implemented(*this);
}

Tensor Layer::compute_mask_list(const std::vector<Tensor>&, const std::vector<Tensor>&) { masks_not_implemented(*this); }

static Shape sample_shape(const Tensor& t, const std::string& layer) {
  if (!t.defined() || t.shape().rank() < 1) {
    throw ValueError(fmt::format("Layer '{}' was called on {}; it expects a batch (a tensor of rank >= 1 whose first "
                                 "dimension is the batch)",
                                 layer, t.defined() ? "a scalar" : "an undefined tensor"));
  }
  const auto dims = t.shape().dims();
  return Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
}

Tensor Layer::operator()(const Tensor& inputs, bool training) {
  if (!built_) build(sample_shape(inputs, name_));
  return call(autocast_input(inputs), training);
}

Tensor Layer::operator()(const std::vector<Tensor>& inputs, bool training) {
  if (!built_) {
    std::vector<Shape> shapes;
    for (const auto& t : inputs) shapes.push_back(sample_shape(t, name_));
    build(shapes);
  }
  std::vector<Tensor> cast;
  for (const auto& t : inputs) cast.push_back(autocast_input(t));
  return call(cast, training);
}

std::shared_ptr<Layer> Layer::owner(bool temporary) {
  if (auto self = weak_from_this().lock()) return self;
  if (temporary) {
    if (auto moved = move_to_shared()) return moved;
  }
  throw ValueError(fmt::format(
      "Layer '{}' ({}) was called on symbolic tensors but is not owned by a std::shared_ptr, so a model could not "
      "keep it alive. Call a temporary (`layers::Dense(8)(x)`), or make the layer with std::make_shared to call it "
      "at several places: `auto shared = std::make_shared<layers::Dense>(8); auto a = (*shared)(x1);`",
      name_, class_name()));
}

KerasTensor Layer::operator()(const KerasTensor& input) & { return call_symbolic_one(owner(false), {input}); }
KerasTensor Layer::operator()(const std::vector<KerasTensor>& inputs) & {
  return call_symbolic_one(owner(false), inputs);
}
KerasTensor Layer::operator()(const KerasTensor& input) && { return call_symbolic_one(owner(true), {input}); }
KerasTensor Layer::operator()(const std::vector<KerasTensor>& inputs) && {
  return call_symbolic_one(owner(true), inputs);
}
std::vector<KerasTensor> Layer::call_all(const KerasTensor& input) & { return call_symbolic(owner(false), {input}); }
std::vector<KerasTensor> Layer::call_all(const std::vector<KerasTensor>& inputs) & {
  return call_symbolic(owner(false), inputs);
}
std::vector<KerasTensor> Layer::call_all(const KerasTensor& input) && { return call_symbolic(owner(true), {input}); }
std::vector<KerasTensor> Layer::call_all(const std::vector<KerasTensor>& inputs) && {
  return call_symbolic(owner(true), inputs);
}

KerasTensor Layer::call_symbolic_one(std::shared_ptr<Layer> self, const std::vector<KerasTensor>& inputs) {
  auto outs = call_symbolic(std::move(self), inputs);
  if (outs.size() != 1) {
    throw ValueError(fmt::format("Layer '{}' ({}) has {} outputs here (Keras would return them as a list): call "
                                 "layer.call_all(...) to get them all as a std::vector<KerasTensor>",
                                 name_, class_name(), outs.size()));
  }
  return outs[0];
}

Shape Layer::build_with(const std::vector<Shape>& input_shapes, const CallArguments& arguments) {
  if (!arguments.empty()) {
    throw ValueError(fmt::format("Layer '{}' ({}) takes no keyword argument '{}'", name_, class_name(),
                                 arguments.begin()->first));
  }
  return build(input_shapes);
}

Tensor Layer::call_with(const std::vector<Tensor>& inputs, bool training, const CallArguments& arguments) {
  if (!arguments.empty()) {
    throw ValueError(fmt::format("Layer '{}' ({}) takes no keyword argument '{}'", name_, class_name(),
                                 arguments.begin()->first));
  }
  return call_all(inputs, training).at(0);
}

KerasTensor Layer::call_with(const KerasTensor& input, const CallArguments& arguments) & {
  return call_with(std::vector<KerasTensor>{input}, arguments);
}

KerasTensor Layer::call_with(const std::vector<KerasTensor>& inputs, const CallArguments& arguments) & {
  auto outs = call_symbolic(owner(false), inputs, arguments);
  if (outs.size() != 1) {
    throw ValueError(fmt::format("Layer '{}' ({}) has {} outputs here: call_with gives one", name_, class_name(),
                                 outs.size()));
  }
  return outs[0];
}

std::vector<KerasTensor> Layer::call_symbolic(std::shared_ptr<Layer> self, const std::vector<KerasTensor>& inputs,
                                              const CallArguments& given) {
  if (inputs.empty()) throw ValueError(fmt::format("Layer '{}' was called on an empty list of tensors", name_));
  CallArguments arguments;  // the true ones: a call argument defaults to false, so a false one is the plain call
  for (const auto& [key, value] : given) {
    if (!self->takes_call_argument(key)) {
      throw ValueError(fmt::format("Layer '{}' ({}) takes no keyword argument '{}' (given {})", name_, class_name(),
                                   key, value));
    }
    if (value) arguments.emplace(key, true);
  }
  std::vector<Shape> shapes;
  std::string shown;
  for (const auto& t : inputs) {
    shapes.push_back(t.shape());
    shown += (shown.empty() ? "" : ", ") + keras_shape(t);
  }
  auto node = std::make_shared<Node>();
  try {
    // Builds once; a built layer checks the shapes against its weights.
    Shape first = arguments.empty() ? self->build(shapes) : self->build_with(shapes, arguments);
    node->shapes = self->num_outputs() > 1 && arguments.empty() ? self->output_shapes()
                                                                 : std::vector<Shape>{std::move(first)};
    if (node->shapes.size() != static_cast<std::size_t>(self->num_outputs())) {
      throw ValueError(fmt::format("the layer declares {} outputs, but output_shapes() gives {} shapes (override "
                                   "output_shapes() with one shape per output)",
                                   self->num_outputs(), node->shapes.size()));
    }
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("Exception encountered when calling {}.call() of layer '{}' on input(s) {}: {}",
                                 self->class_name(), self->name(), shown, e.what()));
  }
  // A layer's output has its compute dtype, as Keras's KerasTensor (bfloat16 under mixed_bfloat16); float32 where
  // the policy's compute dtype is float64, which Osprey computes in float32.
  const DType compute = self->dtype_policy().compute_dtype();
  node->layer = std::move(self);
  node->inputs = inputs;
  node->arguments = arguments;
  node->dtype = is_half(compute) ? compute : DType::float32;
  node->name = node->layer->name();
  node->batch_size = inputs[0].node()->batch_size;
  std::vector<KerasTensor> outs;
  for (std::size_t i = 0; i < node->shapes.size(); ++i) outs.emplace_back(node, static_cast<int>(i));
  return outs;
}

std::vector<Tensor> Layer::call_outputs(const std::vector<Tensor>& inputs, bool training) {
  return {inputs.size() == 1 && num_inputs() == 1 ? call(inputs[0], training) : call(inputs, training)};
}

std::vector<Tensor> Layer::call_outputs_masked(const std::vector<Tensor>&, bool, const std::vector<Tensor>&,
                                               std::vector<Tensor>&) {
  masks_not_implemented(*this);
}

std::vector<Tensor> Layer::call_all(const std::vector<Tensor>& inputs, bool training) {
  if (!built_) {
    std::vector<Shape> shapes;
    for (const auto& t : inputs) shapes.push_back(sample_shape(t, name_));
    build(shapes);
  }
  return call_outputs(inputs, training);
}

// ---- The graph --------------------------------------------------------------------------------------------------

namespace {

// Keras's Function._map_graph: a search from each output in turn numbers the layers as it first meets them and
// lists the nodes children-last; each node's depth is the longest path to an output, a layer's the largest of its
// nodes'; the layers go by depth, the deepest first, ties by their number (inputs no output needs: depth 0, first).
void order_layers_as_keras(Graph& g) {
  std::map<const Layer*, int> index;
  std::vector<const Node*> post_order;
  std::set<const Node*> finished;
  std::set<const Node*> inputs;
  for (const auto& t : g.inputs) inputs.insert(t.node().get());
  for (const auto& out : g.outputs) {
    std::vector<std::pair<const Node*, std::size_t>> stack{{out.node().get(), 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == 0) {
        if (finished.count(node)) {
          stack.pop_back();
          continue;
        }
        index.emplace(node->layer.get(), static_cast<int>(index.size()));
      }
      if (!inputs.count(node) && next < node->inputs.size()) {
        const Node* parent = node->inputs[next++].node().get();
        stack.emplace_back(parent, 0);
        continue;
      }
      finished.insert(node);
      post_order.push_back(node);
      stack.pop_back();
    }
  }
  std::map<const Node*, int> node_depth;
  std::map<const Layer*, int> layer_depth;
  for (auto it = post_order.rbegin(); it != post_order.rend(); ++it) {
    const Node* node = *it;
    int depth = std::max(node_depth[node], layer_depth[node->layer.get()]);
    layer_depth[node->layer.get()] = depth;
    node_depth[node] = depth;
    if (inputs.count(node)) continue;
    for (const auto& t : node->inputs) {
      int& d = node_depth[t.node().get()];
      d = std::max(d, depth + 1);
    }
  }
  for (const auto& t : g.inputs) {
    if (layer_depth.emplace(t.node()->layer.get(), 0).second) index[t.node()->layer.get()] = -1;
  }
  std::map<const Layer*, std::shared_ptr<Layer>> owner;
  std::set<const Layer*> input_layers;
  for (const auto& step : g.steps) {
    owner.emplace(step.node->layer.get(), step.node->layer);
    if (step.node->is_input()) input_layers.insert(step.node->layer.get());
  }
  std::vector<const Layer*> order;
  for (const auto& [layer, depth] : layer_depth) order.push_back(layer);
  std::sort(order.begin(), order.end(), [&](const Layer* a, const Layer* b) {
    const int da = layer_depth.at(a), db = layer_depth.at(b);
    return da != db ? da > db : index.at(a) < index.at(b);
  });
  for (const Layer* l : order) {
    g.all_layers.push_back(owner.at(l));
    if (!input_layers.count(l)) g.layers.push_back(owner.at(l));
  }
}

}  // namespace

std::unique_ptr<Graph> build_graph(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs,
                                   const std::string& model_name) {
  if (inputs.empty() || outputs.empty()) {
    throw ValueError(fmt::format("Model '{}' needs at least one input and one output; got {} input(s) and {} "
                                 "output(s)",
                                 model_name, inputs.size(), outputs.size()));
  }
  auto g = std::make_unique<Graph>();
  g->inputs = inputs;
  g->outputs = outputs;
  std::map<const Node*, int> position;
  for (const auto& in : inputs) {
    const Node& n = node_of(in);
    if (!n.is_input()) {
      throw ValueError(fmt::format("Model '{}': every input must be a keras::Input, but '{}' is the output of layer "
                                   "'{}'",
                                   model_name, n.name, n.layer->name()));
    }
    if (position.count(&n)) {
      throw ValueError(fmt::format("Model '{}': input '{}' is given twice", model_name, n.name));
    }
    position[&n] = static_cast<int>(g->steps.size());
    g->steps.push_back({in.node().get(), {}, g->num_slots++});
    g->input_names.push_back(n.name);
  }
  auto slot_of = [&](const KerasTensor& t) { return g->steps[position.at(t.node().get())].slot + t.index(); };
  // Depth-first from each output, with an explicit stack (no recursion on graph depth).
  for (const auto& out : outputs) {
    const Node* root = &node_of(out);
    std::vector<std::pair<const Node*, std::size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (position.count(node)) {
        stack.pop_back();
        continue;
      }
      if (node->is_input()) {
        throw ValueError(fmt::format("Model '{}': output '{}' depends on input '{}', which is not one of the model's "
                                     "inputs ({}). Pass every keras::Input the outputs are computed from.",
                                     model_name, root->name, node->name, fmt::join(g->input_names, ", ")));
      }
      if (next < node->inputs.size()) {
        const Node* parent = node->inputs[next++].node().get();
        if (!position.count(parent)) stack.emplace_back(parent, 0);
        continue;
      }
      Graph::Step step{const_cast<Node*>(node), {}, g->num_slots};
      for (const auto& t : node->inputs) step.parents.push_back(slot_of(t));
      g->num_slots += static_cast<int>(node->shapes.size());
      position[node] = static_cast<int>(g->steps.size());
      g->steps.push_back(std::move(step));
    }
    g->output_slots.push_back(slot_of(out));
    g->output_names.push_back(root->name);
  }
  // Distinct layers must have distinct names.
  std::map<std::string, const Layer*> by_name;
  for (const auto& step : g->steps) {
    const auto& layer = step.node->layer;
    auto [it, inserted] = by_name.emplace(layer->name(), layer.get());
    if (!inserted && it->second != layer.get()) {
      throw ValueError(fmt::format("Model '{}': the name \"{}\" is used 2 times in the model. All layer names should "
                                   "be unique.",
                                   model_name, layer->name()));
    }
    g->masked = g->masked || layer->produces_mask();
  }
  order_layers_as_keras(*g);
  return g;
}

namespace {

// Keras's warning, once per layer: a mask reached a layer that does not support masking.
void warn_dropped_mask(const Layer& layer) {
  static std::mutex mu;
  static std::set<const Layer*> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(&layer).second) return;
  std::fprintf(stderr,
               "UserWarning: Layer '%s' (of type %s) was passed an input with a mask attached to it. However, this "
               "layer does not support masking and will therefore destroy the mask information. Downstream layers "
               "will not see the mask.\n",
               layer.name().c_str(), layer.class_name().c_str());
}

}  // namespace

std::vector<Tensor> Graph::run(const std::vector<Tensor>& xs, bool training, const std::vector<bool>* shortcut,
                               std::vector<Tensor>* logits, std::vector<Tensor>* output_masks) const {
  std::vector<Tensor> values(static_cast<std::size_t>(num_slots));
  std::vector<Tensor> masks(masked ? values.size() : 0);  // none at all in a model without mask-making layers
  for (std::size_t i = 0; i < xs.size(); ++i) {
    // Keras converts each input to its Input's dtype: ids given as floats reach an int64 Input as int64.
    const DType want = steps[i].node->dtype;
    const bool to_ids = (want == DType::int32 || want == DType::int64) && xs[i].defined() && xs[i].dtype() != want;
    values[static_cast<std::size_t>(steps[i].slot)] = to_ids ? osprey::ops::cast(xs[i], want) : xs[i];
  }
  std::vector<int> shortcut_at(values.size(), -1);  // the output index whose Dense gives its logits
  if (shortcut && logits) {
    logits->assign(output_slots.size(), Tensor());
    for (std::size_t o = 0; o < output_slots.size(); ++o) {
      if ((*shortcut)[o]) shortcut_at[output_slots[o]] = static_cast<int>(o);
    }
  }
  std::vector<Tensor> args, arg_masks, out_masks;
  // A node's inputs and their masks into args and arg_masks; whether any has a mask.
  auto gather = [&](const Step& step) {
    args.clear();
    arg_masks.clear();
    bool any_mask = false;
    for (int p : step.parents) {
      args.push_back(step.node->layer->autocast_input(values[p]));
      if (masked) arg_masks.push_back(masks[p]);
      any_mask = any_mask || (masked && masks[p].defined());
    }
    return any_mask;
  };
  for (std::size_t i = xs.size(); i < steps.size(); ++i) {
    const Step& step = steps[i];
    const auto at = static_cast<std::size_t>(step.slot);
    Layer& layer = *step.node->layer;
    if (!step.node->arguments.empty()) {  // a call with keyword arguments: its output has no mask
      if (gather(step) && !layer.supports_masking()) warn_dropped_mask(layer);
      values[at] = layer.call_with(args, training, step.node->arguments);
      continue;
    }
    if (step.node->shapes.size() > 1) {  // a node of several outputs: all of them at once
      const bool any_mask = gather(step);
      std::vector<Tensor> outs;
      if (any_mask && layer.supports_masking()) {
        out_masks.clear();
        outs = layer.call_outputs_masked(args, training, arg_masks, out_masks);
        for (std::size_t k = 0; k < out_masks.size() && k < step.node->shapes.size(); ++k) masks[at + k] = out_masks[k];
      } else {
        if (any_mask) warn_dropped_mask(layer);
        outs = layer.call_outputs(args, training);
      }
      if (outs.size() != step.node->shapes.size()) {
        throw InternalError(fmt::format("Layer '{}' gave {} outputs; its node in the model has {}", layer.name(),
                                        outs.size(), step.node->shapes.size()));
      }
      for (std::size_t k = 0; k < outs.size(); ++k) values[at + k] = std::move(outs[k]);
      continue;
    }
    if (shortcut_at[at] >= 0 && values[step.parents[0]].shape().rank() == 2) {
      auto& dense = static_cast<layers::Dense&>(layer);
      Tensor& z = (*logits)[shortcut_at[at]];
      z = osprey::ops::dense(layer.autocast_input(values[step.parents[0]]), layer.autocast_variable(*dense.kernel()),
                     dense.bias() ? layer.autocast_variable(*dense.bias()) : Tensor(), osprey::ops::Activation::linear);
      values[at] = osprey::ops::activation(z, dense.activation());
      if (masked) masks[at] = masks[step.parents[0]];  // Dense keeps its input's mask
      continue;
    }
    if (step.parents.size() == 1 && layer.num_inputs() == 1) {
      const Tensor x = layer.autocast_input(values[step.parents[0]]);
      if (!masked) {
        values[at] = layer.call(x, training);
      } else if (layer.supports_masking()) {
        const Tensor& m = masks[step.parents[0]];
        values[at] = layer.call_masked(x, training, m);
        masks[at] = layer.compute_mask(x, m);
      } else {
        if (masks[step.parents[0]].defined()) warn_dropped_mask(layer);
        values[at] = layer.call(x, training);
      }
    } else {
      const bool any_mask = gather(step);
      if (any_mask && layer.supports_masking()) {
        values[at] = layer.call_masked_list(args, training, arg_masks);
        masks[at] = layer.compute_mask_list(args, arg_masks);
        continue;
      }
      if (any_mask) warn_dropped_mask(layer);
      values[at] = layer.call(args, training);
    }
  }
  std::vector<Tensor> out;
  out.reserve(output_slots.size());
  for (int s : output_slots) out.push_back(values[s]);
  if (output_masks) {
    output_masks->assign(output_slots.size(), Tensor());
    if (masked) {
      for (std::size_t o = 0; o < output_slots.size(); ++o) (*output_masks)[o] = masks[output_slots[o]];
    }
  }
  return out;
}

}  // namespace osprey::keras
