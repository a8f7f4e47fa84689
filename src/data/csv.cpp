// make_csv_dataset (tf.data.experimental.make_csv_dataset): the column types come from the first
// num_rows_for_inference rows when the dataset is made (every file's header is checked then too); each pass then
// reads the files a line at a time into chunks of rows (CsvDataset), so a file larger than memory streams through,
// num_parallel_reads files at once through interleave.
// Untrusted input: a line is read into a bounded buffer (kMaxLine), never whole into memory first.
#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "data/pipeline.h"
#include "osprey/errors.h"

namespace osprey::data {

namespace {

constexpr std::size_t kMaxLine = std::size_t{16} << 20;
constexpr int64_t kChunkRows = 4096;

std::vector<std::string> split_csv_line(const std::string& line, char delim) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == delim) {
      out.push_back(std::move(field));
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  out.push_back(std::move(field));
  return out;
}

std::vector<std::string> expand(const std::vector<std::string>& patterns) {
  std::vector<std::string> files;
  for (const auto& p : patterns) {
    glob_t g{};
    const int rc = glob(p.c_str(), 0, nullptr, &g);
    if (rc == 0) {
      for (std::size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
  }
  if (files.empty()) {
    std::string all;
    for (const auto& p : patterns) all += (all.empty() ? "" : ", ") + p;
    throw ValueError(fmt::format("make_csv_dataset: no files match `file_pattern` [{}]", all));
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool integral_value(double v) { return v == std::floor(v) && std::abs(v) <= 9.0e15; }

// What making the dataset settles: the files, the columns, which become elements and each one's type.
struct Layout {
  CsvOptions o;
  std::vector<std::string> files, names;
  std::vector<std::size_t> keep;  // the columns in the elements
  std::vector<bool> integral;     // per column: int64, else float32
};

// One file being read: its lines, counted from 1.
class CsvFile {
 public:
  CsvFile(const std::string& path, const Layout& layout) : path_(path), layout_(layout), in_(path, std::ios::binary) {
    if (!in_) throw NotFoundError(fmt::format("make_csv_dataset: cannot open '{}': {}", path, std::strerror(errno)));
  }
  // The header's names (header files only).
  std::vector<std::string> header() {
    std::string line;
    if (!read_line(line)) throw ValueError(fmt::format("make_csv_dataset: '{}' is empty; it has no header line", path_));
    return split_csv_line(line, layout_.o.field_delim);
  }
  // The next data row's values, one per column (column_defaults fill empty fields); false at the end.
  bool row(std::vector<double>& values) {
    std::string line;
    do {
      if (!read_line(line)) return false;
    } while (line.empty() || line == "\r");
    const auto fields = split_csv_line(line, layout_.o.field_delim);
    const auto& names = layout_.names;
    if (fields.size() != names.size()) {
      throw ValueError(fmt::format("make_csv_dataset: '{}' line {} has {} fields, the header {} columns", path_,
                                   line_no_, fields.size(), names.size()));
    }
    values.resize(fields.size());
    for (std::size_t c = 0; c < fields.size(); ++c) {
      const std::string& f = fields[c];
      if (f.empty()) {
        if (layout_.o.column_defaults.empty()) {
          throw ValueError(fmt::format("make_csv_dataset: '{}' line {} column '{}' is empty and no column_defaults "
                                       "were given",
                                       path_, line_no_, names[c]));
        }
        values[c] = layout_.o.column_defaults[c];
        continue;
      }
      char* end = nullptr;
      values[c] = std::strtod(f.c_str(), &end);
      if (end == f.c_str() || *end != '\0') {
        throw ValueError(fmt::format("make_csv_dataset: '{}' line {} column '{}' is '{}', not a number (Osprey's "
                                     "tensors are numeric: encode text columns before reading them)",
                                     path_, line_no_, names[c], f));
      }
    }
    return true;
  }
  int64_t line_no() const { return line_no_; }
  const std::string& path() const { return path_; }

 private:
  // One line without its '\n'; false at the end of the file. A line longer than kMaxLine is a ValueError.
  bool read_line(std::string& line) {
    line.clear();
    std::streambuf* buf = in_.rdbuf();
    bool any = false;
    for (;;) {
      const int c = buf->sbumpc();
      if (c == std::char_traits<char>::eof()) {
        if (any) ++line_no_;
        return any;
      }
      any = true;
      if (c == '\n') break;
      if (line.size() == kMaxLine) {
        throw ValueError(fmt::format("make_csv_dataset: '{}' line {} is longer than {} bytes; is it a CSV file?",
                                     path_, line_no_ + 1, kMaxLine));
      }
      line.push_back(static_cast<char>(c));
    }
    ++line_no_;
    return true;
  }

  std::string path_;
  const Layout& layout_;
  std::ifstream in_;
  int64_t line_no_ = 0;
};

// The rows' kept columns as the element make_csv_dataset gives: ({name: column}, label) or the map alone.
Element to_element(const Layout& l, const std::vector<std::vector<double>>& columns) {
  std::map<std::string, Element> features;
  Tensor label;
  for (std::size_t k = 0; k < l.keep.size(); ++k) {
    const std::size_t c = l.keep[k];
    const auto& v = columns[k];
    const Shape shape{static_cast<int64_t>(v.size())};
    Tensor t;
    if (l.integral[c]) {
      t = Tensor::empty(shape, int64, &detail::host());
      std::transform(v.begin(), v.end(), t.data<int64_t>(), [](double x) { return static_cast<int64_t>(x); });
    } else {
      t = Tensor::empty(shape, float32, &detail::host());
      std::transform(v.begin(), v.end(), t.data<float>(), [](double x) { return static_cast<float>(x); });
    }
    if (l.names[c] == l.o.label_name) label = t;
    else features.emplace(l.names[c], Element(t));
  }
  Element e = Element::named(std::move(features));
  if (label.defined()) e = Element{e, Element(label)};
  return e;
}

// tf.data's CsvDataset here: each element up to kChunkRows rows of the files, in order.
class CsvNode : public detail::Node {
 public:
  explicit CsvNode(std::shared_ptr<const Layout> layout) : layout_(std::move(layout)) {}
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    struct It : detail::IteratorImpl {
      std::shared_ptr<const Layout> l;
      std::size_t next_file = 0;
      std::unique_ptr<CsvFile> file;
      std::vector<double> values;
      std::optional<Element> next() override {
        std::vector<std::vector<double>> columns(l->keep.size());
        int64_t rows = 0;
        while (rows < kChunkRows) {
          if (!file) {
            if (next_file == l->files.size()) break;
            file = std::make_unique<CsvFile>(l->files[next_file++], *l);
            if (l->o.header) file->header();  // checked when the dataset was made
          }
          if (!file->row(values)) {
            file.reset();
            continue;
          }
          for (std::size_t k = 0; k < l->keep.size(); ++k) {
            const std::size_t c = l->keep[k];
            if (l->integral[c] && !integral_value(values[c])) {
              throw ValueError(fmt::format(
                  "make_csv_dataset: '{}' line {} column '{}' is {}, not an integer: the first {} rows made the "
                  "column int64 (set num_rows_for_inference to std::nullopt to take the types from every row, or "
                  "give the column a non-integer column_defaults value)",
                  file->path(), file->line_no(), l->names[c], values[c],
                  l->o.num_rows_for_inference.value_or(0)));
            }
            columns[k].push_back(values[c]);
          }
          ++rows;
        }
        if (rows == 0) return std::nullopt;
        return to_element(*l, columns);
      }
    };
    auto it = std::make_unique<It>();
    it->l = layout_;
    return it;
  }
  int64_t cardinality() const override { return UNKNOWN_CARDINALITY; }
  std::string name() const override { return "CsvDataset"; }

 private:
  std::shared_ptr<const Layout> layout_;
};

}  // namespace

Dataset make_csv_dataset(const std::vector<std::string>& file_patterns, CsvOptions o) {
  if (o.batch_size <= 0) throw ValueError(fmt::format("make_csv_dataset: batch_size must be positive, got {}", o.batch_size));
  if (o.num_epochs < -1 || o.num_epochs == 0) {
    throw ValueError(fmt::format("make_csv_dataset: num_epochs must be positive or -1 (for ever), got {}", o.num_epochs));
  }
  if (o.num_parallel_reads <= 0 && o.num_parallel_reads != AUTOTUNE) {
    throw ValueError(fmt::format("make_csv_dataset: num_parallel_reads must be positive or AUTOTUNE (-1), got {}",
                                 o.num_parallel_reads));
  }
  if (o.num_rows_for_inference && *o.num_rows_for_inference <= 0) {
    throw ValueError(fmt::format("make_csv_dataset: num_rows_for_inference must be positive, or std::nullopt for "
                                 "every row; got {}",
                                 *o.num_rows_for_inference));
  }
  auto l = std::make_shared<Layout>();
  l->o = o;
  l->files = expand(file_patterns);
  l->names = o.column_names;
  // Every file's header; the types from the first num_rows_for_inference rows of the files in turn.
  int64_t inferred = 0;
  std::vector<double> values;
  for (const auto& path : l->files) {
    CsvFile file(path, *l);
    if (o.header) {
      auto header = file.header();
      if (l->names.empty()) l->names = header;
      else if (o.column_names.empty() && header != l->names) {
        throw ValueError(fmt::format("make_csv_dataset: '{}' has other columns than the first file", path));
      }
    }
    if (l->names.empty()) throw ValueError("make_csv_dataset: column_names are needed when header is false");
    if (l->integral.empty()) {
      if (!o.column_defaults.empty() && o.column_defaults.size() != l->names.size()) {
        throw ValueError(fmt::format("make_csv_dataset: column_defaults has {} values for {} columns",
                                     o.column_defaults.size(), l->names.size()));
      }
      l->integral.assign(l->names.size(), true);
      // A default that is not an integer makes its column float32 (tf.data: the defaults' dtypes).
      for (std::size_t c = 0; c < o.column_defaults.size(); ++c) {
        if (!integral_value(o.column_defaults[c])) l->integral[c] = false;
      }
    }
    while ((!o.num_rows_for_inference || inferred < *o.num_rows_for_inference) && file.row(values)) {
      ++inferred;
      for (std::size_t c = 0; c < values.size(); ++c) {
        if (!integral_value(values[c])) l->integral[c] = false;
      }
    }
  }
  for (std::size_t c = 0; c < l->names.size(); ++c) {
    const auto& name = l->names[c];
    if (o.select_columns.empty() || std::find(o.select_columns.begin(), o.select_columns.end(), name) != o.select_columns.end() ||
        name == o.label_name) {
      l->keep.push_back(c);
    }
  }
  for (const auto& s : o.select_columns) {
    if (std::find(l->names.begin(), l->names.end(), s) == l->names.end()) {
      throw ValueError(fmt::format("make_csv_dataset: select_columns names '{}', which is not a column", s));
    }
  }
  if (!o.label_name.empty() && std::find(l->names.begin(), l->names.end(), o.label_name) == l->names.end()) {
    throw ValueError(fmt::format("make_csv_dataset: label_name '{}' is not a column", o.label_name));
  }
  if (inferred == 0) throw ValueError("make_csv_dataset: the files have no data rows");
  // tf.data's pipeline: the files (shuffled each pass when shuffling), read num_parallel_reads at a time and
  // interleaved a row at a time, the rows shuffled, repeated and batched. One file at a time in order needs no
  // rows apart: the chunks of every file are cut into batches (no row copies).
  const int64_t reads = o.num_parallel_reads == AUTOTUNE ? detail::autotuned_threads() : o.num_parallel_reads;
  if (!o.shuffle && reads == 1) {
    Dataset d(std::make_shared<CsvNode>(std::move(l)));
    if (o.num_epochs != 1) d = d.repeat(o.num_epochs);
    return d.rebatch(o.batch_size, o.drop_remainder).prefetch(AUTOTUNE);
  }
  std::vector<std::shared_ptr<const Layout>> one_file;
  for (const auto& path : l->files) {
    auto f = std::make_shared<Layout>(*l);
    f->files = {path};
    one_file.push_back(std::move(f));
  }
  const auto n = static_cast<int64_t>(one_file.size());
  Dataset files = Dataset::range(n);
  if (o.shuffle) files = files.shuffle(n, o.shuffle_seed);
  // Several files: each parses its chunks ahead on its own thread (prefetch), and the rows are taken in turn on the
  // iterating thread (a thread's hand-over a row, interleave's num_parallel_calls, measured 10x slower).
  auto open = [one_file, reads](const Element& e) {
    Dataset chunks(std::make_shared<CsvNode>(one_file[static_cast<std::size_t>(e.tensor().item())]));
    return reads == 1 ? chunks : chunks.prefetch(2).unbatch();  // one file at a time: unbatched after
  };
  Dataset d = files.interleave(open, reads, 1);
  if (reads == 1) d = d.unbatch();
  if (o.shuffle) d = d.shuffle(o.shuffle_buffer_size, o.shuffle_seed);
  if (o.num_epochs != 1) d = d.repeat(o.num_epochs);
  d = d.batch(o.batch_size, o.drop_remainder);
  return d.prefetch(AUTOTUNE);
}

}  // namespace osprey::data
