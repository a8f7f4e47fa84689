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

void Sequential::summary(std::ostream& out) const {
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
    out << "│" << cell(l->name() + " (" + l->class_name() + ")", w[0], false) << "│" << cell(shown, w[1], false) << "│"
        << cell(params, w[2], true) << "│\n";
    if (i + 1 < ls.size()) out << "├" << repeat("─", w[0]) << "┼" << repeat("─", w[1]) << "┼" << repeat("─", w[2]) << "┤\n";
  }
  out << "└" << repeat("─", w[0]) << "┴" << repeat("─", w[1]) << "┴" << repeat("─", w[2]) << "┘\n";
  int64_t trainable = 0, total = 0;
  for (auto* v : variables()) {
    total += v->num_elements();
    if (v->trainable()) trainable += v->num_elements();
  }
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
