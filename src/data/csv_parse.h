// make_csv_dataset's parsing, as tf.data's CsvDataset and its type inference: records (RFC 4180 quoting, quoted
// fields across lines) split into fields, and fields read as int32, int64, float32 or float64. Private.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/line_reader.h"
#include "osprey/dtype.h"

namespace osprey::data::detail {

/// How a CSV file's records split: the delimiter, and whether '"' quotes (tf.data's use_quote_delim).
struct CsvDialect {
  char delim = ',';
  bool quotes = true;
  std::size_t max_record = 0;  ///< a record (its lines together) longer than this is a ValueError
};

/// The next record of `in` that is not a blank line, split into fields[0, n) (the strings are reused from call to
/// call); false at the end of the file. A malformed record (a quote inside an unquoted field, text after a closing
/// quote, the file ending inside quotes) returns true with `error` saying why; else `error` is empty.
/// `first_line` is the record's first line number.
bool read_record(LineReader& in, const CsvDialect& dialect, std::vector<std::string>& fields, std::size_t& n,
                 int64_t& first_line, std::string& error);

/// tf.data's column types from narrowest to widest (its inference's order), and text: Osprey has no string
/// tensors, so a text column is an error (or its rows skipped, with ignore_errors).
enum class CsvType { none, int32, int64, float32, float64, text };

/// The narrowest type at or after `prev` that holds `field` (not missing), as tf.data's _infer_type. A literal
/// nan or inf is float32 (tf.data makes it text, which Osprey cannot hold).
CsvType infer_csv_type(const std::string& field, CsvType prev);
DType csv_dtype(CsvType t);
const char* csv_type_name(CsvType t);

/// `field` read as `dtype` (leading and trailing spaces allowed, as tf.data): an integer into `i`, a floating value
/// (float32: rounded once, as strtof) into `d`; false when the type does not hold it.
bool parse_csv_value(const std::string& field, DType dtype, int64_t& i, double& d);

}  // namespace osprey::data::detail
