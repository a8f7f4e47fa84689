// model.summary(): Keras 3's rich table as printed when stdout is not a terminal (width 76).
#include <map>

#include <fmt/format.h>

#include "keras/models/model_state.h"
#include "osprey/keras/model.h"

namespace osprey::keras {

// "{:,}" of Python: thousands separated by commas.
static std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Keras's readable_memory_size: 1024-steps, two decimals.
static std::string readable_size(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:.2f} {}", bytes, units[u]);
}

static std::string repeat(const char* s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Characters on the screen (UTF-8 continuation bytes take none).
static int columns_of(const std::string& text) {
  int n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

static std::string cell(const std::string& text, int width, bool right) {
  const int inner = width - 2;
  const int pad = std::max(0, inner - columns_of(text));
  return right ? fmt::format(" {}{} ", std::string(pad, ' '), text) : fmt::format(" {}{} ", text, std::string(pad, ' '));
}

// rich's word wrap of a cell: words on lines of at most `width` characters; a longer word alone on its line, cut
// with an ellipsis (rich's default overflow).
static std::vector<std::string> wrap(const std::string& text, int width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    std::string word = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (static_cast<int>(word.size()) > width) {
      if (!line.empty()) lines.push_back(line), line.clear();
      lines.push_back(word.substr(0, static_cast<std::size_t>(width - 1)) + "\u2026");
    } else {
      if (!line.empty() && static_cast<int>(line.size() + 1 + word.size()) > width) lines.push_back(line), line.clear();
      line += (line.empty() ? "" : " ") + word;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

namespace {

// Keras's test for a functional model printed without "Connected to": one node at each depth from the outputs,
// none with several inputs, no layer called twice.
bool sequential_like(const Graph& g) {
  std::map<const Node*, int> depth;
  std::map<const Layer*, int> calls;
  for (auto it = g.steps.rbegin(); it != g.steps.rend(); ++it) {
    const Node* n = it->node;
    if (n->inputs.size() > 1 || ++calls[n->layer.get()] > 1) return false;
    const int d = depth[n];
    for (const auto& t : n->inputs) depth[t.node().get()] = std::max(depth[t.node().get()], d + 1);
  }
  std::map<int, int> at_depth;
  for (const auto& [node, d] : depth) {
    if (++at_depth[d] > 1) return false;
  }
  return true;
}

// Each layer's "Connected to": "name[node][tensor]" of its nodes' inputs in this model, or "-".
std::map<const Layer*, std::string> connections(const Graph& g) {
  std::map<const Node*, int> node_index;
  std::map<const Layer*, int> count;
  for (const auto& step : g.steps) node_index[step.node] = count[step.node->layer.get()]++;
  std::map<const Layer*, std::string> out;
  for (const auto& step : g.steps) {
    std::string& text = out[step.node->layer.get()];
    for (const auto& t : step.node->inputs) {
      text += fmt::format("{}{}[{}][{}]", text.empty() ? "" : ", ", t.node()->layer->name(),
                          node_index.at(t.node().get()), t.index());
    }
  }
  for (auto& [layer, text] : out) {
    if (text.empty()) text = "-";
  }
  return out;
}

}  // namespace

void Model::summary(std::ostream& out) const {
  // A functional model with branches, merges or shared layers gets Keras's fourth column, "Connected to".
  const Graph* g = dynamic_cast<const Sequential*>(this) ? nullptr : state().graph.get();
  const bool connected = g && !sequential_like(*g);
  const auto links = connected ? connections(*g) : std::map<const Layer*, std::string>{};
  // Columns at 0.45 / 0.80 / 1.0 of a 76-character line (with "Connected to": 0.3 / 0.56 / 0.74 / 1.0), as rich
  // lays them out when the output is not a terminal.
  const std::vector<int> w = connected ? std::vector<int>{21, 19, 12, 19} : std::vector<int>{33, 24, 15};
  auto rule = [&](const char* left, const char* line, const char* mid, const char* right) {
    out << left;
    for (std::size_t c = 0; c < w.size(); ++c) out << (c ? mid : "") << repeat(line, w[c]);
    out << right << "\n";
  };
  auto row = [&](const std::vector<std::string>& texts, const char* bar) {
    out << bar;
    for (std::size_t c = 0; c < w.size(); ++c) out << cell(texts[c], w[c], c == 2) << bar;
    out << "\n";
  };
  out << "Model: \"" << name() << "\"\n";
  rule("┏", "━", "┳", "┓");
  std::vector<std::string> header{"Layer (type)", "Output Shape", "Param #"};
  if (connected) header.push_back("Connected to");
  row(header, "┃");
  rule("┡", "━", "╇", "┩");
  // A layer called several times shows its last call's output shape, as Keras's summary does (a
  // ReversibleEmbedding's reverse call: the logits).
  std::map<const Layer*, const Shape*> last_shape;
  if (g) {
    for (const auto& step : g->steps) {
      if (!step.node->shapes.empty()) last_shape[step.node->layer.get()] = &step.node->shapes[0];
    }
  }
  const auto ls = layers();
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const auto& l = ls[i];
    std::string shown = "?";
    if (l->built()) {
      std::vector<int64_t> dims{0};
      const auto it = last_shape.find(l.get());
      for (auto d : (it != last_shape.end() ? *it->second : l->output_shape()).dims()) dims.push_back(d);
      shown = Shape(dims).to_keras_string();
    }
    const std::string params = l->built() ? with_commas(l->count_params()) : "0 (unbuilt)";
    std::vector<std::vector<std::string>> columns{wrap(l->name() + " (" + l->class_name() + ")", w[0] - 2),
                                                  wrap(shown, w[1] - 2), {params}};
    if (connected) {
      const auto it = links.find(l.get());
      columns.push_back(wrap(it == links.end() ? "-" : it->second, w[3] - 2));
    }
    std::size_t lines = 0;
    for (const auto& c : columns) lines = std::max(lines, c.size());
    for (std::size_t k = 0; k < lines; ++k) {
      std::vector<std::string> texts;
      for (const auto& c : columns) texts.push_back(k < c.size() ? c[k] : "");
      row(texts, "│");
    }
    if (i + 1 < ls.size()) rule("├", "─", "┼", "┤");
  }
  rule("└", "─", "┴", "┘");
  int64_t trainable = 0, total = 0;
  for (auto* v : variables()) total += v->num_elements();
  for (auto* v : trainable_variables()) trainable += v->num_elements();  // frozen layers' weights are not
  const auto opt = optimizer();
  const int64_t opt_params = opt && opt->built() ? opt->count_params() : 0;
  const int64_t all = total + opt_params;
  out << " Total params: " << with_commas(all) << " (" << readable_size(4.0 * static_cast<double>(all)) << ")\n";
  out << " Trainable params: " << with_commas(trainable) << " (" << readable_size(4.0 * static_cast<double>(trainable))
      << ")\n";
  out << " Non-trainable params: " << with_commas(total - trainable) << " ("
      << readable_size(4.0 * static_cast<double>(total - trainable)) << ")\n";
  if (opt_params) {
    out << " Optimizer params: " << with_commas(opt_params) << " ("
        << readable_size(4.0 * static_cast<double>(opt_params)) << ")\n";
  }
}

}  // namespace osprey::keras
