// keras.layers.StackedRNNCells: cells one on top of the other at every step (keras/src/layers/rnn/
// stacked_rnn_cells.py): each cell's output is the next one's input, the states are all of theirs in order.
#include <map>

#include <fmt/format.h>

#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/rnn.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using ser::json;

namespace {

int64_t last_units(const std::vector<std::shared_ptr<RNNCell>>& cells) {
  if (cells.empty()) throw ValueError("StackedRNNCells needs at least one cell");
  for (const auto& c : cells) {
    if (!c) throw ValueError("StackedRNNCells: a cell is empty (a null pointer)");
  }
  return cells.back()->units();
}

}  // namespace

StackedRNNCells::StackedRNNCells(std::vector<std::shared_ptr<RNNCell>> cells, std::string name)
    : RNNCell(name, "stacked_rnn_cells", last_units(cells)), cells_(std::move(cells)) {}

Shape StackedRNNCells::build(const Shape& input_shape) {
  const bool first = !built_;
  Shape shape = input_shape;
  for (auto& c : cells_) shape = c->build(shape);
  if (first) {  // Keras's paths: "rnn/stacked_rnn_cells/lstm_cell/kernel"
    for (auto* v : variables()) v->set_path(name_ + "/" + v->path());
  }
  return finish_build(shape);
}

Tensor StackedRNNCells::call(const Tensor& inputs, bool training) {
  Tensor x = inputs;
  for (auto& c : cells_) x = (*c)(x, training);
  return x;
}

int StackedRNNCells::num_states() const {
  int n = 0;
  for (const auto& c : cells_) n += c->num_states();
  return n;
}

std::vector<int64_t> StackedRNNCells::state_sizes() const {
  std::vector<int64_t> out;
  for (const auto& c : cells_) {
    const auto s = c->state_sizes();
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

int StackedRNNCells::output_index() const { return num_states() - cells_.back()->num_states() + cells_.back()->output_index(); }

Tensor StackedRNNCells::project(const Tensor& inputs) const { return cells_.front()->project(inputs); }
Tensor StackedRNNCells::project(const std::vector<Tensor>& per_gate) const { return cells_.front()->project(per_gate); }

std::vector<Tensor> StackedRNNCells::input_dropout_masks(int64_t batch, int64_t features) {
  return cells_.front()->input_dropout_masks(batch, features);
}

// Cell by cell: its recurrent masks, then (above the first) its input masks -- the order in which a layer of that
// cell alone draws them, so that a stack equals the layers it replaces where only one cell has dropout.
std::vector<Tensor> StackedRNNCells::recurrent_dropout_masks(int64_t batch) {
  std::vector<Tensor> out;
  for (std::size_t k = 0; k < cells_.size(); ++k) {
    for (auto& m : cells_[k]->recurrent_dropout_masks(batch)) out.push_back(std::move(m));
    if (k == 0) continue;
    for (auto& m : cells_[k]->input_dropout_masks(batch, cells_[k - 1]->units())) out.push_back(std::move(m));
  }
  return out;
}

std::vector<Tensor> StackedRNNCells::step(const Tensor& projected, const std::vector<Tensor>& states,
                                          const std::vector<Tensor>& masks) const {
  std::vector<Tensor> out;
  out.reserve(states.size());
  Tensor below;  // the previous cell's output, this cell's input
  std::size_t at = 0, mask_at = 0;
  // In training, recurrent_dropout_masks()'s masks; none at inference.
  auto take = [&](int count) {
    std::vector<Tensor> mine;
    for (int i = 0; i < count && !masks.empty(); ++i) mine.push_back(masks.at(mask_at++));
    return mine;
  };
  for (std::size_t k = 0; k < cells_.size(); ++k) {
    const RNNCell& c = *cells_[k];
    const auto n = static_cast<std::size_t>(c.num_states());
    const std::vector<Tensor> mine(states.begin() + static_cast<std::ptrdiff_t>(at),
                                   states.begin() + static_cast<std::ptrdiff_t>(at + n));
    const std::vector<Tensor> recurrent = take(c.dropout_mask_count(true));
    Tensor in = projected;
    if (k > 0) {
      const std::vector<Tensor> input = take(c.dropout_mask_count(false));
      std::vector<Tensor> per_gate;
      for (const auto& m : input) per_gate.push_back(osprey::ops::mul(below, m));
      in = per_gate.empty() ? c.project(below) : c.project(per_gate);
    }
    auto next = c.step(in, mine, recurrent);
    below = next[static_cast<std::size_t>(c.output_index())];
    out.insert(out.end(), next.begin(), next.end());
    at += n;
  }
  return out;
}

std::vector<std::pair<std::string, Layer*>> StackedRNNCells::sublayers() {
  // A list in Keras's files: each cell under its class's snake-case name, "_1", "_2" for repeats.
  std::vector<std::pair<std::string, Layer*>> out;
  std::map<std::string, int> seen;
  for (auto& c : cells_) {
    const std::string cls = c->class_name();
    const char* key = cls == "LSTMCell" ? "lstm_cell" : cls == "GRUCell" ? "gru_cell" : "simple_rnn_cell";
    const int n = seen[key]++;
    out.emplace_back(n ? fmt::format("cells/{}_{}", key, n) : fmt::format("cells/{}", key), c.get());
  }
  return out;
}

std::vector<Variable*> StackedRNNCells::variables() {
  std::vector<Variable*> out;
  for (auto& c : cells_) {
    for (auto* v : c->variables()) out.push_back(v);
  }
  return out;
}

void StackedRNNCells::append_trainable_variables(std::vector<Variable*>& out) {
  if (!trainable) return;
  for (auto& c : cells_) {
    if (c->trainable) c->append_trainable_variables(out);
  }
}

int64_t StackedRNNCells::count_params() const {
  int64_t n = 0;
  for (const auto& c : cells_) n += c->count_params();
  return n;
}

std::vector<Tensor> StackedRNNCells::regularization_losses() {
  std::vector<Tensor> out;
  for (auto& c : cells_) {
    for (auto& p : c->regularization_losses()) out.push_back(p);
  }
  return out;
}

bool StackedRNNCells::has_regularization() const {
  for (const auto& c : cells_) {
    if (c->has_regularization()) return true;
  }
  return false;
}

void StackedRNNCells::apply_constraints() {
  for (auto& c : cells_) c->apply_constraints();
}

std::string StackedRNNCells::get_config() const {
  json c = ser::base_config(*this);
  json cells = json::array();
  for (const auto& cell : cells_) cells.push_back(ser::object("keras.layers", cell->class_name(), json::parse(cell->get_config())));
  c["cells"] = cells;
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(stacked_cells) {
  ser::register_layer_class("StackedRNNCells", {true, [](const json& c) -> std::shared_ptr<Layer> {
    if (!c.contains("cells") || !c["cells"].is_array() || c["cells"].empty() || c["cells"].size() > 64) {
      throw ValueError("StackedRNNCells: the config needs a list of 1 to 64 `cells`");
    }
    std::vector<std::shared_ptr<RNNCell>> cells;
    for (const auto& o : c["cells"]) {
      auto cell = std::dynamic_pointer_cast<RNNCell>(ser::layer_from_object(o));
      if (!cell || std::dynamic_pointer_cast<StackedRNNCells>(cell)) {
        throw ValueError("StackedRNNCells: each cell must be a SimpleRNNCell, LSTMCell or GRUCell in Osprey");
      }
      cells.push_back(std::move(cell));
    }
    return std::make_shared<StackedRNNCells>(std::move(cells), ser::name_of(c));
  }});
}

}  // namespace osprey::keras::layers
