// keras.Sequential: a Model whose layers form a stack, built from the first input shape it sees.
#include <algorithm>

#include <fmt/format.h>

#include "keras/models/model_state.h"
#include "keras/utils/naming.h"
#include "osprey/errors.h"

namespace osprey::keras {

Sequential::Sequential() : Model("", "sequential", true) { s_->sequential = true; }

Sequential::Sequential(std::vector<LayerRef> layers, std::string name) : Model(std::move(name), "sequential", false) {
  s_->sequential = true;
  for (auto& l : layers) add(std::move(l));
}
Sequential::Sequential(Sequential&&) noexcept = default;
Sequential& Sequential::operator=(Sequential&&) noexcept = default;
Sequential::~Sequential() = default;

void Sequential::add(LayerRef ref) {
  if (!s_) {
    s_ = std::make_unique<State>();
    s_->sequential = true;
  }
  if (name_.empty()) {
    name_ = auto_name("sequential");
    s_->strategy = distribute::current_strategy();
  }
  auto layer = ref.get();
  if (auto in = std::dynamic_pointer_cast<layers::Input>(layer)) {
    if (s_->input || !s_->layers.empty()) {
      throw ValueError("An Input can only be the first layer of a Sequential model; '" + in->name() +
                       "' was added after other layers.");
    }
    s_->input = in;
    s_->input_shape = in->shape();
    return;
  }
  for (const auto& l : s_->layers) {
    if (l->name() == layer->name()) {
      throw ValueError("All layers added to a Sequential model should have unique names. Name '" + layer->name() +
                       "' is already the name of a layer in this model.");
    }
  }
  s_->layers.push_back(layer);
  s_->recordable = -1;
  if (s_->input_shape) build(*s_->input_shape);
}

Shape Sequential::build(const Shape& input_shape) {
  auto& s = state();
  s.plans.clear();
  s.recordable = -1;
  // The stack as a graph, the way Keras 3's Sequential builds its Functional: its Input (or one of the input
  // shape), then each layer called on the previous output.
  auto node = std::make_shared<Node>();
  node->layer = s.input && s.input->shape() == input_shape
                    ? std::static_pointer_cast<Layer>(s.input)
                    : std::make_shared<layers::Input>(input_shape, "input_layer");
  node->shapes = {input_shape};
  node->name = node->layer->name();
  const KerasTensor input(std::move(node), 0);
  KerasTensor x = input;
  for (auto& l : s.layers) x = (*l)(x);
  s.graph = build_graph({input}, {x}, name_);
  s.input_shape = input_shape;
  const Shape shape = x.shape();
  for (auto& l : s.layers) {
    for (auto* v : l->variables()) {
      // "<model>/<layer>/..." keeping what the layer put after its name (an RNN's "lstm/lstm_cell/kernel").
      const std::string& p = v->path();
      const std::string head = l->name() + "/";
      const auto inner = p.find("/" + head);
      const std::string rel = p.starts_with(head) ? p
                              : inner != std::string::npos ? p.substr(inner + 1)
                                                           : head + v->name();
      v->set_path(name_ + "/" + rel);
      if (!s.device) s.device = &v->value().device_ref();
    }
  }
  return finish_build(shape);
}

bool Sequential::built() const {
  if (!s_ || !s_->input_shape) return false;
  return std::all_of(s_->layers.begin(), s_->layers.end(), [](auto& l) { return l->built(); });
}

}  // namespace osprey::keras
