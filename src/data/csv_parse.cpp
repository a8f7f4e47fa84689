// CSV records and values as tf.data's CsvDataset reads them (its rules, checked against TensorFlow 2.21 in
// tests/pipeline/make_csv_reference.py): a quoted field may hold the delimiter, doubled quotes and line breaks; a
// quote inside an unquoted field, or text after a closing quote, makes the record malformed.
#include "data/csv_parse.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "osprey/errors.h"

namespace osprey::data::detail {

namespace {

bool only_spaces(const char* p) {
  while (std::isspace(static_cast<unsigned char>(*p))) ++p;
  return *p == '\0';
}

bool parse_integer(const std::string& f, int64_t& out) {
  const char* s = f.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || errno == ERANGE || !only_spaces(end)) return false;
  out = v;
  return true;
}

// Whether `f` is a floating literal whose value `t` holds: an overflow to infinity is not (tf.data then takes the
// wider type); nan and inf written out are.
bool parse_floating(const std::string& f, bool single, double& out) {
  const char* s = f.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = single ? static_cast<double>(std::strtof(s, &end)) : std::strtod(s, &end);
  if (end == s || !only_spaces(end)) return false;
  if (errno == ERANGE && std::isinf(v)) return false;
  out = v;
  return true;
}

}  // namespace

bool read_record(LineReader& in, const CsvDialect& dialect, std::vector<std::string>& fields, std::size_t& n,
                 int64_t& first_line, std::string& error) {
  std::string line;
  n = 0;
  error.clear();
  do {
    if (!in.read_line(line)) return false;
  } while (line.empty());
  first_line = in.line_no();
  std::size_t record_bytes = line.size();
  std::size_t i = 0;
  const char delim = dialect.delim;
  for (;;) {
    if (n == fields.size()) fields.emplace_back();
    std::string& field = fields[n];
    field.clear();
    if (dialect.quotes && i < line.size() && line[i] == '"') {
      ++i;
      for (;;) {
        if (i == line.size()) {  // the quoted field goes on on the next line
          std::string more;
          if (!in.read_line(more)) {
            error = fmt::format("the file ends inside the quoted field {} (a '\"' is not closed)", n);
            return true;
          }
          record_bytes += more.size() + 1;
          if (record_bytes > dialect.max_record) {
            throw ValueError(fmt::format("{}: '{}' has a record from line {} longer than {} bytes (a quoted field "
                                         "that is never closed?)",
                                         in.who(), in.path(), first_line, dialect.max_record));
          }
          field += '\n';
          line = std::move(more);
          i = 0;
          continue;
        }
        const char c = line[i];
        if (c == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += c;
        ++i;
      }
      if (i < line.size() && line[i] != delim) {
        error = fmt::format("field {} has text after its closing quote", n);
        return true;
      }
    } else {
      std::size_t j = line.find(delim, i);
      if (j == std::string::npos) j = line.size();
      field.assign(line, i, j - i);
      i = j;
      if (dialect.quotes && field.find('"') != std::string::npos) {
        error = fmt::format("field {} is not quoted and has a '\"' inside (quote the field, or set "
                            "use_quote_delim=false)",
                            n);
        return true;
      }
    }
    ++n;
    if (i == line.size()) return true;
    ++i;  // the delimiter; a record ending in one has a last, empty field
  }
}

CsvType infer_csv_type(const std::string& field, CsvType prev) {
  int64_t i = 0;
  double d = 0;
  const bool integer = parse_integer(field, i);
  const CsvType order[] = {CsvType::int32, CsvType::int64, CsvType::float32, CsvType::float64};
  for (const CsvType t : order) {
    if (t < prev) continue;
    switch (t) {
      case CsvType::int32:
        if (integer && i >= INT32_MIN && i <= INT32_MAX) return t;
        break;
      case CsvType::int64:
        if (integer) return t;
        break;
      case CsvType::float32:
        if (parse_floating(field, true, d)) return t;
        break;
      default:
        if (parse_floating(field, false, d)) return t;
        break;
    }
  }
  return CsvType::text;
}

DType csv_dtype(CsvType t) {
  switch (t) {
    case CsvType::int32: return int32;
    case CsvType::int64: return int64;
    case CsvType::float64: return float64;
    default: return float32;  // a column with no values in the rows read: float32 (tf.data: text)
  }
}

const char* csv_type_name(CsvType t) {
  switch (t) {
    case CsvType::int32: return "int32";
    case CsvType::int64: return "int64";
    case CsvType::float32: return "float32";
    case CsvType::float64: return "float64";
    case CsvType::text: return "text";
    default: return "none";
  }
}

bool parse_csv_value(const std::string& field, DType dtype, int64_t& i, double& d) {
  switch (dtype) {
    case DType::int32: return parse_integer(field, i) && i >= INT32_MIN && i <= INT32_MAX;
    case DType::int64: return parse_integer(field, i);
    case DType::float32: return parse_floating(field, true, d);
    default: return parse_floating(field, false, d);
  }
}

}  // namespace osprey::data::detail
