// make_csv_dataset (tf.data.experimental.make_csv_dataset): without column_defaults the column types come from
// the first num_rows_for_inference rows when the dataset is made, as tf.data infers them (every file's header is
// checked then too); each pass then reads the files a record at a time into chunks of rows (CsvDataset), so a
// file larger than memory streams through, num_parallel_reads files at once through interleave. Records and
// values parse as in data/csv_parse.h; compressed files inflate as they are read (data/line_reader.h).
// Untrusted input: a line or record is read into a bounded buffer (kMaxLine), never whole into memory first.
#include <glob.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data/csv_parse.h"
#include "data/pipeline.h"
#include "osprey/errors.h"

namespace osprey::data {

namespace {

constexpr std::size_t kMaxLine = std::size_t{16} << 20;
constexpr int64_t kChunkRows = 4096;
constexpr const char* kWho = "make_csv_dataset";

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

// What making the dataset settles: the files, the columns, which become elements, their types and defaults.
struct Layout {
  std::string who = kWho;  // the start of every error: make_csv_dataset or CsvDataset
  CsvOptions o;
  detail::Compression compression = detail::Compression::none;
  detail::CsvDialect dialect;
  std::vector<std::string> files, names;  // every column's name
  std::vector<std::size_t> keep;          // the columns in the elements, in file order
  std::vector<DType> dtypes;              // per kept column
  std::vector<std::optional<double>> defaults;  // per kept column; std::nullopt: required
  std::vector<int64_t> int_defaults;            // per kept column: an integer column's default, exactly
  bool inferred = false;                  // the types came from the first rows (else from column_defaults)
  bool tuples = false;                    // CsvDataset's elements: a tuple of the kept columns, unnamed
  std::size_t min_fields = 0;             // CsvDataset's select_cols: at least this many fields; 0: names.size()
};

// A column as the errors name it: make_csv_dataset's by name, CsvDataset's by index.
std::string column_text(const Layout& l, std::size_t c) {
  return l.tuples ? fmt::format("field {}", c) : fmt::format("column '{}'", l.names[c]);
}

// One kept column's values of a chunk of rows.
struct Column {
  std::vector<int64_t> ints;
  std::vector<double> reals;
};

// One file being read, a record at a time.
class CsvFile {
 public:
  CsvFile(const std::string& path, const Layout& layout)
      : layout_(layout), in_(path, layout.compression, layout.who, kMaxLine) {}
  // The header's names (header files only).
  std::vector<std::string> header() {
    std::vector<std::string> fields;
    std::size_t n = 0;
    int64_t line = 0;
    std::string error;
    if (!detail::read_record(in_, layout_.dialect, fields, n, line, error)) {
      throw ValueError(fmt::format("{}: '{}' is empty; it has no header line", layout_.who, in_.path()));
    }
    if (!error.empty()) throw ValueError(fmt::format("{}: '{}' header line: {}", layout_.who, in_.path(), error));
    fields.resize(n);
    return fields;
  }
  // The next record's fields, checked against the columns; false at the end. A malformed record leaves `error`
  // saying why (with the file and line).
  bool record(std::string& error) {
    if (!detail::read_record(in_, layout_.dialect, fields_, n_, line_, error)) return false;
    const std::size_t want = layout_.names.size();
    if (error.empty() && layout_.min_fields && n_ < layout_.min_fields) {
      error = fmt::format("has {} fields; select_cols reads field {}", n_, layout_.min_fields - 1);
    } else if (error.empty() && !layout_.min_fields && n_ != want) {
      error = layout_.tuples ? fmt::format("has {} fields for the {} of record_defaults{}", n_, want,
                                           layout_.o.select_columns.empty() && want != layout_.keep.size()
                                               ? " and exclude_cols"
                                               : "")
                             : fmt::format("has {} fields, the header {} columns", n_, want);
    }
    if (!error.empty()) error = fmt::format("{}: '{}' line {} {}", layout_.who, in_.path(), line_, error);
    return true;
  }
  // The record's field of column c.
  const std::string& field(std::size_t c) const { return fields_[c]; }
  bool missing(std::size_t c) const { return fields_[c].empty() || fields_[c] == layout_.o.na_value; }
  int64_t line() const { return line_; }
  const std::string& path() const { return in_.path(); }

 private:
  const Layout& layout_;
  detail::LineReader in_;
  std::vector<std::string> fields_;
  std::size_t n_ = 0;
  int64_t line_ = 0;
};

// The record's kept columns appended to `columns`; false (nothing appended, `error` saying why) when a field is
// missing without a default or its column's type does not hold it.
bool take_row(const Layout& l, const CsvFile& f, std::vector<Column>& columns, std::string& error) {
  thread_local std::vector<int64_t> ints;
  thread_local std::vector<double> reals;
  ints.resize(l.keep.size());
  reals.resize(l.keep.size());
  for (std::size_t k = 0; k < l.keep.size(); ++k) {
    const std::size_t c = l.keep[k];
    const DType t = l.dtypes[k];
    if (f.missing(c)) {
      if (!l.defaults[k]) {
        error = fmt::format("{}: '{}' line {} {} is required ({}) but missing", l.who, f.path(), f.line(),
                            column_text(l, c), l.tuples ? "record_defaults" : "column_defaults");
        return false;
      }
      ints[k] = l.int_defaults[k];
      reals[k] = *l.defaults[k];
      continue;
    }
    if (!detail::parse_csv_value(f.field(c), t, ints[k], reals[k])) {
      const std::string why =
          l.inferred ? fmt::format("the first {} rows made the column {} (set num_rows_for_inference to std::nullopt "
                                   "to take the types from every row, or give column_defaults)",
                                   l.o.num_rows_for_inference.value_or(0), dtype_name(t))
                     : fmt::format("its {} value makes the column {}",
                                   l.tuples ? "record_defaults" : "column_defaults", dtype_name(t));
      error = fmt::format("{}: '{}' line {} {} is '{}', not a valid {}: {}", l.who, f.path(), f.line(),
                          column_text(l, c), f.field(c), dtype_name(t), why);
      return false;
    }
  }
  for (std::size_t k = 0; k < l.keep.size(); ++k) {
    if (is_floating(l.dtypes[k])) columns[k].reals.push_back(reals[k]);
    else columns[k].ints.push_back(ints[k]);
  }
  return true;
}

// The rows' kept columns as the element make_csv_dataset gives: ({name: column}, label) or the map alone;
// CsvDataset's: the columns' tuple.
Element to_element(const Layout& l, const std::vector<Column>& columns) {
  std::map<std::string, Element> features;
  std::vector<Element> items;
  Tensor label;
  for (std::size_t k = 0; k < l.keep.size(); ++k) {
    const DType t = l.dtypes[k];
    const auto& col = columns[k];
    const Shape shape{static_cast<int64_t>(is_floating(t) ? col.reals.size() : col.ints.size())};
    Tensor out = Tensor::empty(shape, t, &detail::host());
    switch (t) {
      case DType::int32: std::copy(col.ints.begin(), col.ints.end(), out.data<int32_t>()); break;
      case DType::int64: std::copy(col.ints.begin(), col.ints.end(), out.data<int64_t>()); break;
      case DType::float64: std::copy(col.reals.begin(), col.reals.end(), out.data<double>()); break;
      default:
        std::transform(col.reals.begin(), col.reals.end(), out.data<float>(), [](double x) { return static_cast<float>(x); });
        break;
    }
    const std::string& name = l.names[l.keep[k]];
    if (l.tuples) items.emplace_back(out);
    else if (!l.o.label_name.empty() && name == l.o.label_name) label = out;
    else features.emplace(name, Element(out));
  }
  if (l.tuples) return Element::tuple(std::move(items));
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
      std::string error;
      std::optional<Element> next() override {
        std::vector<Column> columns(l->keep.size());
        int64_t rows = 0;
        while (rows < kChunkRows) {
          if (!file) {
            if (next_file == l->files.size()) break;
            file = std::make_unique<CsvFile>(l->files[next_file++], *l);
            if (l->o.header) file->header();  // checked when the dataset was made
          }
          if (!file->record(error)) {
            file.reset();
            continue;
          }
          if (error.empty() && take_row(*l, *file, columns, error)) {
            ++rows;
          } else if (!l->o.ignore_errors) {
            throw ValueError(error);
          }
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

void check_defaults(const std::vector<CsvDefault>& defaults, const char* who, const char* what) {
  for (std::size_t k = 0; k < defaults.size(); ++k) {
    const auto& d = defaults[k];
    if (d.dtype != int32 && d.dtype != int64 && d.dtype != float32 && d.dtype != float64) {
      throw ValueError(fmt::format("{}: {}[{}]'s dtype must be int32, int64, float32 or float64, got {}", who, what, k,
                                   dtype_name(d.dtype)));
    }
    const double lo = d.dtype == int32 ? -2147483648.0 : -9223372036854775808.0;
    if (!is_floating(d.dtype) && d.value && (*d.value != std::floor(*d.value) || *d.value < lo || *d.value >= -lo)) {
      throw ValueError(fmt::format("{}: {}[{}] is {}, which {} does not hold", who, what, k, *d.value,
                                   dtype_name(d.dtype)));
    }
  }
}

void check_options(const CsvOptions& o) {
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
  if (o.field_delim == '\n' || o.field_delim == '\r' || (o.use_quote_delim && o.field_delim == '"')) {
    throw ValueError("make_csv_dataset: field_delim cannot be a line break, nor '\"' with use_quote_delim");
  }
  check_defaults(o.column_defaults, kWho, "column_defaults");
}

// The columns select_columns names (names or indices), sorted; every column without it.
std::vector<std::size_t> selected(const CsvOptions& o, const std::vector<std::string>& names) {
  std::vector<std::size_t> keep;
  for (const auto& s : o.select_columns) {
    if (s.name.empty()) {
      if (s.index < 0 || s.index >= static_cast<int64_t>(names.size())) {
        throw ValueError(fmt::format("make_csv_dataset: select_columns index {} is not a column: the files have {} "
                                     "columns ({})",
                                     s.index, names.size(), fmt::join(names, ", ")));
      }
      keep.push_back(static_cast<std::size_t>(s.index));
    } else {
      const auto at = std::find(names.begin(), names.end(), s.name);
      if (at == names.end()) {
        throw ValueError(fmt::format("make_csv_dataset: select_columns names '{}', which is not a column ({})", s.name,
                                     fmt::join(names, ", ")));
      }
      keep.push_back(static_cast<std::size_t>(at - names.begin()));
    }
  }
  std::sort(keep.begin(), keep.end());
  const auto dup = std::adjacent_find(keep.begin(), keep.end());
  if (dup != keep.end()) {
    throw ValueError(fmt::format("make_csv_dataset: select_columns names column '{}' twice", names[*dup]));
  }
  if (o.select_columns.empty()) {
    for (std::size_t c = 0; c < names.size(); ++c) keep.push_back(c);
  }
  return keep;
}

// The kept columns' types from the first num_rows_for_inference rows of the files in turn (tf.data's
// _infer_column_defaults); missing fields default to 0.
void infer_types(Layout& l) {
  const CsvOptions& o = l.o;
  std::vector<detail::CsvType> types(l.keep.size(), detail::CsvType::none);
  int64_t rows = 0;
  std::string error;
  for (const auto& path : l.files) {
    if (o.num_rows_for_inference && rows == *o.num_rows_for_inference) break;
    CsvFile file(path, l);
    if (o.header) file.header();
    while ((!o.num_rows_for_inference || rows < *o.num_rows_for_inference) && file.record(error)) {
      std::vector<detail::CsvType> row = types;
      for (std::size_t k = 0; k < l.keep.size() && error.empty(); ++k) {
        const std::size_t c = l.keep[k];
        if (file.missing(c)) continue;
        row[k] = detail::infer_csv_type(file.field(c), types[k]);
        if (row[k] == detail::CsvType::text) {
          error = fmt::format("make_csv_dataset: '{}' line {} column '{}' is '{}', not a number (Osprey's tensors are "
                              "numeric: encode text columns before reading them, or leave them out with "
                              "select_columns)",
                              path, file.line(), l.names[c], file.field(c));
        }
      }
      if (!error.empty()) {
        if (!o.ignore_errors) throw ValueError(error);
        continue;  // ignore_errors: the row is not read, nor taken into the types
      }
      types = std::move(row);
      ++rows;
    }
  }
  if (rows == 0) throw ValueError("make_csv_dataset: the files have no data rows");
  for (const auto t : types) l.dtypes.push_back(detail::csv_dtype(t));
  l.defaults.assign(l.keep.size(), 0.0);
  l.int_defaults.assign(l.keep.size(), 0);
  l.inferred = true;
}

}  // namespace

Dataset make_csv_dataset(const std::vector<std::string>& file_patterns, CsvOptions o) {
  check_options(o);
  auto l = std::make_shared<Layout>();
  l->o = o;
  l->compression = detail::compression_from(o.compression_type, kWho);
  l->dialect = {o.field_delim, o.use_quote_delim, kMaxLine};
  l->files = expand(file_patterns);
  l->names = o.column_names;
  if (o.header) {  // every file's header
    for (const auto& path : l->files) {
      auto header = CsvFile(path, *l).header();
      if (l->names.empty()) l->names = header;
      else if (o.column_names.empty() && header != l->names) {
        throw ValueError(fmt::format("make_csv_dataset: '{}' has other columns than the first file ({} against {})",
                                     path, fmt::join(header, ", "), fmt::join(l->names, ", ")));
      }
    }
  }
  if (l->names.empty()) throw ValueError("make_csv_dataset: column_names are needed when header is false");
  const std::set<std::string> unique(l->names.begin(), l->names.end());
  if (unique.size() != l->names.size()) {
    throw ValueError(fmt::format("make_csv_dataset: the column names repeat a name ({}); each column needs its own",
                                 fmt::join(l->names, ", ")));
  }
  l->keep = selected(o, l->names);
  std::vector<std::string> kept;
  for (const auto c : l->keep) kept.push_back(l->names[c]);
  if (!o.label_name.empty() && std::find(kept.begin(), kept.end(), o.label_name) == kept.end()) {
    throw ValueError(fmt::format("make_csv_dataset: label_name '{}' is not among the columns read ({}){}", o.label_name,
                                 fmt::join(kept, ", "), o.select_columns.empty() ? "" : "; add it to select_columns"));
  }
  if (o.column_defaults.empty()) {
    infer_types(*l);
  } else {
    if (o.column_defaults.size() != l->keep.size()) {
      throw ValueError(fmt::format("make_csv_dataset: column_defaults has {} values for {} {}columns ({})",
                                   o.column_defaults.size(), l->keep.size(),
                                   o.select_columns.empty() ? "" : "selected ", fmt::join(kept, ", ")));
    }
    for (const auto& d : o.column_defaults) {
      l->dtypes.push_back(d.dtype);
      l->defaults.push_back(d.value);
      l->int_defaults.push_back(d.int_value);
    }
  }
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
  auto chunks_of = [one_file](const Element& e) {
    return Dataset(std::make_shared<CsvNode>(one_file[static_cast<std::size_t>(e.tensor().item())]));
  };
  Dataset d = [&] {
    if (reads == 1) return files.interleave(chunks_of, 1, 1).unbatch();
    // sloppy: each file parses on its own thread and its chunks come as they are ready (a slow file holds up only
    // its own rows).
    if (o.sloppy) return files.interleave(chunks_of, reads, 1, reads, /*deterministic=*/false).unbatch();
    // Else each file parses its chunks ahead on its own thread (prefetch), and the rows are taken in turn on the
    // iterating thread (a thread's hand-over a row, interleave's num_parallel_calls, measured 10x slower).
    return files.interleave([chunks_of](const Element& e) { return chunks_of(e).prefetch(2).unbatch(); }, reads, 1);
  }();
  if (o.shuffle) d = d.shuffle(o.shuffle_buffer_size, o.shuffle_seed);
  if (o.num_epochs != 1) d = d.repeat(o.num_epochs);
  d = d.batch(o.batch_size, o.drop_remainder);
  return d.prefetch(AUTOTUNE);
}

Dataset CsvDataset(const std::vector<std::string>& filenames, std::vector<CsvDefault> record_defaults,
                   CsvDatasetOptions options) {
  constexpr const char* who = "CsvDataset";
  if (filenames.empty()) throw ValueError("CsvDataset: no filenames given");
  if (record_defaults.empty()) throw ValueError("CsvDataset: record_defaults is empty; give one per field read");
  check_defaults(record_defaults, who, "record_defaults");
  if (options.buffer_size <= 0 && options.buffer_size != -1) {
    throw ValueError(fmt::format("CsvDataset: buffer_size must be positive (or -1), got {}", options.buffer_size));
  }
  if (!options.select_cols.empty() && !options.exclude_cols.empty()) {
    throw ValueError("CsvDataset: give select_cols or exclude_cols, not both");
  }
  for (const auto* cols : {&options.select_cols, &options.exclude_cols}) {
    const char* what = cols == &options.select_cols ? "select_cols" : "exclude_cols";
    for (std::size_t i = 0; i < cols->size(); ++i) {
      if ((*cols)[i] < 0 || (i > 0 && (*cols)[i] <= (*cols)[i - 1])) {
        throw ValueError(fmt::format("CsvDataset: {} must be strictly increasing field indices from 0, got {} at "
                                     "position {}",
                                     what, (*cols)[i], i));
      }
    }
  }
  if (!options.select_cols.empty() && options.select_cols.size() != record_defaults.size()) {
    throw ValueError(fmt::format("CsvDataset: {} select_cols for {} record_defaults; give one default per selected field",
                                 options.select_cols.size(), record_defaults.size()));
  }
  auto l = std::make_shared<Layout>();
  l->who = who;
  l->tuples = true;
  l->o.header = options.header;
  l->o.na_value = options.na_value;
  l->compression = detail::compression_from(options.compression_type, who);
  if (options.field_delim == '\n' || options.field_delim == '\r' || (options.use_quote_delim && options.field_delim == '"')) {
    throw ValueError("CsvDataset: field_delim cannot be a line break, nor '\"' with use_quote_delim");
  }
  l->dialect = {options.field_delim, options.use_quote_delim, kMaxLine};
  l->files = filenames;
  const std::size_t total = options.select_cols.empty()
                                ? record_defaults.size() + options.exclude_cols.size()
                                : static_cast<std::size_t>(options.select_cols.back()) + 1;
  for (std::size_t c = 0; c < total; ++c) l->names.push_back(std::to_string(c));
  if (!options.select_cols.empty()) {
    l->min_fields = total;
    for (const auto c : options.select_cols) l->keep.push_back(static_cast<std::size_t>(c));
    for (const auto c : options.select_cols) l->o.select_columns.emplace_back(c);
  } else {
    if (!options.exclude_cols.empty() && options.exclude_cols.back() >= static_cast<int64_t>(total)) {
      throw ValueError(fmt::format("CsvDataset: exclude_cols leaves out field {}, but the records have {} fields "
                                   "(record_defaults and exclude_cols together)",
                                   options.exclude_cols.back(), total));
    }
    for (std::size_t c = 0; c < total; ++c) {
      if (!std::binary_search(options.exclude_cols.begin(), options.exclude_cols.end(), static_cast<int64_t>(c))) {
        l->keep.push_back(c);
      }
    }
  }
  for (const auto& d : record_defaults) {
    l->dtypes.push_back(d.dtype);
    l->defaults.push_back(d.value);
    l->int_defaults.push_back(d.int_value);
  }
  for (const auto& path : filenames) {  // a missing file is an error now, as tf.data's when it is iterated
    if (!std::filesystem::exists(path)) throw NotFoundError(fmt::format("CsvDataset: no file '{}'", path));
  }
  return Dataset(std::make_shared<CsvNode>(std::move(l))).unbatch();
}

}  // namespace osprey::data
