// model.summary(): Keras 3's rich table as printed when stdout is not a terminal (width 76).
#include <fmt/format.h>

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

static std::string cell(const std::string& text, int width, bool right) {
  const int inner = width - 2;
  const int pad = std::max(0, inner - static_cast<int>(text.size()));
  return right ? fmt::format(" {}{} ", std::string(pad, ' '), text) : fmt::format(" {}{} ", text, std::string(pad, ' '));
}

// rich's word wrap of a cell: words on lines of at most `width` characters, longer words cut.
static std::vector<std::string> wrap(const std::string& text, int width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    std::string word = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    while (static_cast<int>(word.size()) > width) {
      if (!line.empty()) lines.push_back(line), line.clear();
      lines.push_back(word.substr(0, static_cast<std::size_t>(width)));
      word = word.substr(static_cast<std::size_t>(width));
    }
    if (!line.empty() && static_cast<int>(line.size() + 1 + word.size()) > width) lines.push_back(line), line.clear();
    line += (line.empty() ? "" : " ") + word;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

void Model::summary(std::ostream& out) const {
  // Columns at 0.45 / 0.80 / 1.0 of a 76-character line, as rich lays them out.
  const int w[3] = {33, 24, 15};
  out << "Model: \"" << name() << "\"\n";
  out << "┏" << repeat("━", w[0]) << "┳" << repeat("━", w[1]) << "┳" << repeat("━", w[2]) << "┓\n";
  out << "┃" << cell("Layer (type)", w[0], false) << "┃" << cell("Output Shape", w[1], false) << "┃"
      << cell("Param #", w[2], true) << "┃\n";
  out << "┡" << repeat("━", w[0]) << "╇" << repeat("━", w[1]) << "╇" << repeat("━", w[2]) << "┩\n";
  const auto ls = layers();
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const auto& l = ls[i];
    std::string shown = "?";
    if (l->built()) {
      std::vector<int64_t> dims{0};
      for (auto d : l->output_shape().dims()) dims.push_back(d);
      shown = Shape(dims).to_keras_string();
    }
    const std::string params = l->built() ? with_commas(l->count_params()) : "0 (unbuilt)";
    const auto label = wrap(l->name() + " (" + l->class_name() + ")", w[0] - 2);
    for (std::size_t k = 0; k < label.size(); ++k) {
      out << "│" << cell(label[k], w[0], false) << "│" << cell(k ? "" : shown, w[1], false) << "│"
          << cell(k ? "" : params, w[2], true) << "│\n";
    }
    if (i + 1 < ls.size()) out << "├" << repeat("─", w[0]) << "┼" << repeat("─", w[1]) << "┼" << repeat("─", w[2]) << "┤\n";
  }
  out << "└" << repeat("─", w[0]) << "┴" << repeat("─", w[1]) << "┴" << repeat("─", w[2]) << "┘\n";
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
