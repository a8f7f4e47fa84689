// make_csv_dataset against tf.data's: the cases of tests/pipeline/make_csv_reference.py (TensorFlow's batches or
// errors, in tests/data/csv_reference.json, over the files in tests/data/csv/), then streaming, inference past the
// first rows, parallel reads and hostile files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "osprey/data.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/ops.h"
#include "osprey/random.h"
#include "test_util.h"

using namespace osprey;
using ::testing::HasSubstr;
using json = nlohmann::json;

namespace {

struct CsvTempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("osprey_csv_" + std::to_string(::getpid()));
  CsvTempDir() { std::filesystem::create_directories(path); }
  ~CsvTempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& contents) const {
    const auto p = (path / name).string();
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }
};

// The reference case's options as CsvOptions (num_epochs=1, shuffle=False, as the script reads every case).
data::CsvOptions options_of(const json& o) {
  data::CsvOptions out;
  out.batch_size = o.value("batch_size", 4);
  out.num_epochs = 1;
  out.shuffle = false;
  out.label_name = o.value("label_name", "");
  out.na_value = o.value("na_value", "");
  out.use_quote_delim = o.value("use_quote_delim", true);
  out.header = o.value("header", true);
  out.compression_type = o.value("compression_type", "");
  out.ignore_errors = o.value("ignore_errors", false);
  if (o.contains("field_delim")) out.field_delim = o["field_delim"].get<std::string>().at(0);
  if (o.contains("column_names")) out.column_names = o["column_names"].get<std::vector<std::string>>();
  for (const auto& s : o.value("select_columns", json::array())) {
    if (s.is_string()) out.select_columns.emplace_back(s.get<std::string>());
    else out.select_columns.emplace_back(s.get<int64_t>());
  }
  for (const auto& d : o.value("column_defaults", json::array())) {
    const DType t = dtype_from_name(d["dtype"].get<std::string>());
    out.column_defaults.push_back(d.contains("value") ? data::CsvDefault::of(t, d["value"].get<double>())
                                                      : data::CsvDefault::required(t));
  }
  return out;
}

// A column as the reference writes it: its dtype and values (non-finite ones as "nan", "inf", "-inf").
json column_json(const Tensor& t) {
  json values = json::array();
  if (is_floating(t.dtype())) {
    for (const double v : t.cast(float64).to_vector<double>()) {
      if (std::isnan(v)) values.push_back("nan");
      else if (std::isinf(v)) values.push_back(v > 0 ? "inf" : "-inf");
      else values.push_back(v);
    }
  } else {
    for (const int64_t v : t.cast(int64).to_vector<int64_t>()) values.push_back(v);
  }
  return {{"dtype", dtype_name(t.dtype())}, {"values", values}};
}

json batches_json(const std::vector<data::Element>& batches) {
  json out = json::array();
  for (const auto& b : batches) {
    const bool labelled = b.kind() == data::Element::Kind::tuple;
    const data::Element& features = labelled ? b[0] : b;
    json f = json::object();
    for (const auto& k : features.keys()) f[k] = column_json(features[k].tensor());
    out.push_back({{"features", f}, {"label", labelled ? column_json(b[1].tensor()) : json(nullptr)}});
  }
  return out;
}

bool has_text_column(const json& c) {
  for (const auto& b : c.value("batches", json::array())) {
    for (const auto& [k, v] : b["features"].items()) {
      if (v["dtype"] == "string") return true;
    }
  }
  return false;
}

}  // namespace

// Each case as TensorFlow 2.21 read it: the same dtypes and values, or (where TensorFlow raised) a ValueError.
// Where Osprey goes beyond tf.data the case says so below.
TEST(Csv, MakeCsvDatasetMatchesTensorFlowCaseByCase) {
  std::ifstream in(osprey::testing::data_file("csv_reference.json"));
  const json ref = json::parse(in);
  // Osprey reads what tf.data refuses: types through ZLIB (tf.data cannot probe them), blank lines (skipped), and
  // with ignore_errors a ragged row among the rows the types come from (skipped there too, as later).
  const std::map<std::string, json> beyond_tf = {
      {"zlib_types_inferred", json::parse(R"([{"features": {"a": {"dtype": "int32", "values": [1, 3]},
                                                             "b": {"dtype": "float32", "values": [2.5, 4.0]}}, "label": null}])")},
      {"blank_line", json::parse(R"([{"features": {"a": {"dtype": "int32", "values": [1, 3]},
                                                    "b": {"dtype": "int32", "values": [2, 4]}}, "label": null}])")},
      {"ragged_row_while_inferring", json::parse(R"([{"features": {"a": {"dtype": "int32", "values": [1, 4]},
                                                                    "b": {"dtype": "int32", "values": [2, 5]}}, "label": null}])")},
  };
  int checked = 0;
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    std::vector<std::string> files;
    for (const auto& f : c["files"]) files.push_back(osprey::testing::data_file("csv/" + f.get<std::string>()));
    const data::CsvOptions o = options_of(c["options"]);
    const auto run = [&] { return batches_json(data::make_csv_dataset(files, o).collect()); };
    if (beyond_tf.count(name)) {
      ASSERT_TRUE(c.contains("error")) << "tf.data now reads this case: " << c.dump();
      EXPECT_EQ(run(), beyond_tf.at(name));
    } else if (c.contains("error") || has_text_column(c)) {
      // Osprey's tensors hold no text: a text column is an error (select_columns leaves it out).
      EXPECT_NE(osprey::testing::error_of<ValueError>(run), "<no exception>") << c.value("error", "a text column");
    } else {
      EXPECT_EQ(run(), c["batches"]);
    }
    ++checked;
  }
  EXPECT_GE(checked, 38);
}

// tf.data.experimental.CsvDataset's cases: a tuple of scalars per record, or (where TensorFlow raised) a ValueError.
TEST(Csv, CsvDatasetMatchesTensorFlowCaseByCase) {
  std::ifstream in(osprey::testing::data_file("csv_reference.json"));
  const json ref = json::parse(in);
  int checked = 0;
  for (const auto& c : ref["dataset_cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::vector<std::string> files;
    for (const auto& f : c["files"]) files.push_back(osprey::testing::data_file("csv/" + f.get<std::string>()));
    std::vector<data::CsvDefault> defaults;
    for (const auto& d : c["record_defaults"]) {
      const DType t = dtype_from_name(d["dtype"].get<std::string>());
      defaults.push_back(d.contains("value") ? data::CsvDefault::of(t, d["value"].get<double>()) : data::CsvDefault::required(t));
    }
    const json& o = c["options"];
    data::CsvDatasetOptions options{.compression_type = o.value("compression_type", ""), .header = o.value("header", false),
                                    .na_value = o.value("na_value", ""),
                                    .select_cols = o.value("select_cols", std::vector<int64_t>{}),
                                    .exclude_cols = o.value("exclude_cols", std::vector<int64_t>{})};
    const auto run = [&] {
      json records = json::array();
      for (const auto& e : data::CsvDataset(files, defaults, options).collect()) {
        json r = json::array();
        for (const auto& item : e.items()) {
          const json col = column_json(item.tensor().reshape(Shape({1})));
          r.push_back({{"dtype", col["dtype"]}, {"value", col["values"][0]}});
        }
        records.push_back(r);
      }
      return records;
    };
    if (c.contains("error")) EXPECT_NE(osprey::testing::error_of<ValueError>(run), "<no exception>") << c["error"];
    else EXPECT_EQ(run(), c["records"]);
    ++checked;
  }
  EXPECT_GE(checked, 11);
  // Osprey's messages.
  const auto error = [](const std::string& file, std::vector<data::CsvDefault> d, data::CsvDatasetOptions o) {
    return osprey::testing::error_of<Error>(
        [&] { data::CsvDataset({osprey::testing::data_file("csv/" + file)}, d, o).collect(); });
  };
  EXPECT_THAT(error("ragged3.csv", {0, 0}, {.header = true, .select_cols = {0, 2}}),
              HasSubstr("CsvDataset: '" + osprey::testing::data_file("csv/ragged3.csv") +
                        "' line 4 has 2 fields; select_cols reads field 2"));
  EXPECT_THAT(error("ragged3.csv", {0, 0, 0}, {.header = true}), HasSubstr("line 3 has 4 fields for the 3 of record_defaults"));
  EXPECT_THAT(error("plain3.csv", {0}, {.exclude_cols = {1}}), HasSubstr("line 1 has 3 fields for the 2 of record_defaults and exclude_cols"));
  EXPECT_THAT(error("gap3.csv", {0, data::CsvDefault::required(int32), 0}, {}),
              HasSubstr("line 1 field 1 is required (record_defaults) but missing"));
  EXPECT_THAT(error("plain3.csv", {0, 0}, {.select_cols = {2, 0}}),
              HasSubstr("select_cols must be strictly increasing field indices from 0, got 0 at position 1"));
  EXPECT_THAT(error("plain3.csv", {0}, {.select_cols = {0}, .exclude_cols = {1}}), HasSubstr("give select_cols or exclude_cols, not both"));
  EXPECT_THAT(error("plain3.csv", {0}, {.select_cols = {0, 1}}), HasSubstr("2 select_cols for 1 record_defaults"));
  EXPECT_THAT(error("plain3.csv", {0}, {.exclude_cols = {5}}), HasSubstr("exclude_cols leaves out field 5, but the records have 2 fields"));
  EXPECT_THAT(error("nope.csv", {0}, {}), HasSubstr("CsvDataset: no file '"));
  EXPECT_THAT(error("plain3.csv", {}, {}), HasSubstr("record_defaults is empty"));
  EXPECT_THAT(error("plain3.csv", {0, 0, 0}, {.buffer_size = 0}), HasSubstr("buffer_size must be positive (or -1), got 0"));
  EXPECT_EQ(data::CsvDataset({osprey::testing::data_file("csv/plain3.csv")}, {0, 0.0, int64_t{0}}).collect()[0].spec(),
            "(int32[], float32[], int64[])");
  // An int64 default is exact past 2^53.
  const auto gap = data::CsvDataset({osprey::testing::data_file("csv/gap3.csv")}, {0, int64_t{9007199254740993}, 0}).collect();
  EXPECT_EQ(gap[0][1].tensor().reshape(Shape({1})).to_vector<int64_t>()[0], int64_t{9007199254740993});
}

// Osprey's messages for the malformed cases: the file, the line, the column and what to do.
TEST(Csv, MalformedRowsAreValueErrorsNamingFileLineAndColumn) {
  const auto error = [](const std::string& file, data::CsvOptions o) {
    o.num_epochs = 1;
    o.shuffle = false;
    return osprey::testing::error_of<ValueError>(
        [&] { data::make_csv_dataset({osprey::testing::data_file("csv/" + file)}, o).collect(); });
  };
  const auto ints = std::vector<data::CsvDefault>{0, 0};
  EXPECT_THAT(error("errors.csv", {.column_defaults = ints}), HasSubstr("errors.csv' line 4 has 1 fields, the header 2 columns"));
  EXPECT_THAT(error("quote_inside.csv", {.column_defaults = ints}),
              HasSubstr("line 3 field 0 is not quoted and has a '\"' inside (quote the field, or set use_quote_delim=false)"));
  EXPECT_THAT(error("after_quote.csv", {.column_defaults = ints}), HasSubstr("line 3 field 0 has text after its closing quote"));
  EXPECT_THAT(error("fraction.csv", {.column_defaults = ints}),
              HasSubstr("line 3 column 'a' is '3.5', not a valid int32: its column_defaults value makes the column int32"));
  EXPECT_THAT(error("na.csv", {.column_defaults = {data::CsvDefault::required(int32), 0}, .na_value = "NA"}),
              HasSubstr("line 2 column 'a' is required (column_defaults) but missing"));
  EXPECT_THAT(error("text.csv", {}), HasSubstr("line 2 column 'name' is 'bob', not a number"));
  EXPECT_THAT(error("truncated.csv.gz", {.column_defaults = ints, .compression_type = "GZIP"}),
              HasSubstr("truncated.csv.gz' ends inside its GZIP stream (the file is truncated"));
  EXPECT_THAT(error("plain.csv", {.compression_type = "GZIP"}), HasSubstr("plain.csv' is not a valid GZIP stream"));
  EXPECT_THAT(error("plain.csv", {.compression_type = "gzip"}),
              HasSubstr("unknown compression_type 'gzip'; expected \"GZIP\", \"ZLIB\" or \"\" (none)"));
  EXPECT_THAT(error("abc.csv", {.select_columns = {0, "a"}}), HasSubstr("select_columns names column 'a' twice"));
  EXPECT_THAT(error("abc.csv", {.select_columns = {3}}),
              HasSubstr("select_columns index 3 is not a column: the files have 3 columns (a, b, c)"));
  EXPECT_THAT(error("abc.csv", {.label_name = "c", .select_columns = {"a"}}),
              HasSubstr("label_name 'c' is not among the columns read (a); add it to select_columns"));
  EXPECT_THAT(error("abc.csv", {.column_defaults = ints}), HasSubstr("column_defaults has 2 values for 3 columns (a, b, c)"));
  EXPECT_THAT(error("abc.csv", {.column_defaults = {data::CsvDefault::of(int32, 0.5), 0, 0}}),
              HasSubstr("column_defaults[0] is 0.5, which int32 does not hold"));
  EXPECT_THAT(error("abc.csv", {.column_defaults = {data::CsvDefault::required(bool_), 0, 0}}),
              HasSubstr("column_defaults[0]'s dtype must be int32, int64, float32 or float64, got bool"));
  EXPECT_THAT(error("dup.csv", {}), HasSubstr("the column names repeat a name (a, a)"));
  EXPECT_THAT(error("abc.csv", {.field_delim = '"'}), HasSubstr("field_delim cannot be a line break, nor '\"'"));
}

// A large gzip file streams through the inflater: every row, in order, in batches crossing the chunks.
TEST(Csv, CompressedFilesStreamThrough) {
  CsvTempDir dir;
  std::string text = "x,y\n";
  for (int i = 0; i < 20000; ++i) text += fmt::format("{},{}\n", i, i * 0.5);
  const auto plain = dir.file("big.csv", text);
  ASSERT_EQ(std::system(fmt::format("gzip -k -9 '{}'", plain).c_str()), 0);
  data::CsvOptions o{.batch_size = 5000, .num_epochs = 1, .shuffle = false, .compression_type = "GZIP"};
  const auto batches = data::make_csv_dataset({plain + ".gz"}, o).collect();
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].spec(), "{x: int32[5000], y: float32[5000]}");
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto x = batches[b]["x"].tensor().to_vector<int32_t>();
    const auto y = batches[b]["y"].tensor().to_vector<float>();
    EXPECT_EQ(x.front(), static_cast<int32_t>(b) * 5000);
    EXPECT_EQ(x.back(), static_cast<int32_t>(b) * 5000 + 4999);
    EXPECT_EQ(y.back(), x.back() * 0.5f);
  }
  // ignore_errors keeps going past bad rows of a long file; the sloppy parallel reads give every row once.
  std::string noisy = "x,y\n";
  for (int i = 0; i < 9000; ++i) noisy += i % 3 == 0 ? fmt::format("{},oops\n", i) : fmt::format("{},{}\n", i, i);
  dir.file("n1.csv", noisy);
  dir.file("n2.csv", noisy);
  data::CsvOptions sloppy{.batch_size = 1000, .column_defaults = {0, 0}, .num_epochs = 1, .shuffle = false,
                          .num_parallel_reads = 2, .sloppy = true, .ignore_errors = true};
  int64_t rows = 0, sum = 0;
  for (const auto& b : data::make_csv_dataset({(dir.path / "n*.csv").string()}, sloppy).collect()) {
    for (const int32_t v : b["x"].tensor().to_vector<int32_t>()) ++rows, sum += v;
  }
  EXPECT_EQ(rows, 2 * 6000);
  int64_t expected = 0;
  for (int i = 0; i < 9000; ++i) expected += i % 3 == 0 ? 0 : 2 * i;
  EXPECT_EQ(sum, expected);
}

TEST(Csv, MakeCsvDatasetGivesBatchesOfFeaturesByNameAndTheLabel) {
  CsvTempDir dir;
  dir.file("a.csv", "age,fare,survived\n22,7.25,0\n38,71.2833,1\n26,,1\n");
  dir.file("b.csv", "age,fare,survived\n35,53.1,1\n");
  data::CsvOptions o;
  o.batch_size = 2;
  o.label_name = "survived";
  o.num_epochs = 1;
  o.shuffle = false;
  o.column_defaults = {0, -1.0, 0};
  const auto batches = data::make_csv_dataset({(dir.path / "*.csv").string()}, o).collect();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].spec(), "({age: int32[2], fare: float32[2]}, int32[2])");
  EXPECT_EQ(batches[0][0]["age"].tensor().to_vector<int32_t>(), (std::vector<int32_t>{22, 38}));
  EXPECT_EQ(batches[1][0]["fare"].tensor().to_vector<float>(), (std::vector<float>{-1.0f, 53.1f}));
  EXPECT_EQ(batches[1][1].tensor().to_vector<int32_t>(), (std::vector<int32_t>{1, 1}));
  o.select_columns = {"fare", "survived"};  // the label among them, as tf.data
  o.column_defaults = {-1.0, 0};
  EXPECT_EQ(data::make_csv_dataset({(dir.path / "a.csv").string()}, o).collect()[0].spec(),
            "({fare: float32[2]}, int32[2])");
  // Without column_defaults an empty field is 0, as tf.data's inferred defaults; a required one is an error.
  o = {.num_epochs = 1, .shuffle = false};
  EXPECT_EQ(data::make_csv_dataset({(dir.path / "a.csv").string()}, o).collect()[0]["fare"].tensor().to_vector<float>(),
            (std::vector<float>{7.25f, 71.2833f, 0.0f}));
  o.column_defaults = {0, data::CsvDefault::required(float32), 0};
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({(dir.path / "a.csv").string()}, o).collect(); }),
              HasSubstr("line 4 column 'fare' is required (column_defaults) but missing"));
  // Bad input: no files, text, a ragged line, an unknown label.
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({(dir.path / "*.tsv").string()}); }),
              HasSubstr("no files match"));
  o = {};
  const auto text = dir.file("t.csv", "name,x\nbob,1\n");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({text}); }), HasSubstr("'bob', not a number"));
  const auto ragged = dir.file("r.csv", "x,y\n1,2\n3\n");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({ragged}); }), HasSubstr("line 3 has 1 fields"));
  o.label_name = "nope";
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({(dir.path / "b.csv").string()}, o); }),
              HasSubstr("label_name 'nope' is not among the columns read (age, fare, survived)"));
  // num_parallel_reads: files read at once, their rows in turn. TensorFlow 2.21 printed [[22, 35], [38, 26], [1, 2]]
  // for make_csv_dataset("*.csv", 2, label_name="survived", num_epochs=1, shuffle=False,
  // column_defaults=[0, -1.0, 0], num_parallel_reads=2) over these three files (1 gives the files one after another).
  std::filesystem::create_directories(dir.path / "par");
  dir.file("par/a.csv", "age,fare,survived\n22,7.25,0\n38,71.2833,1\n26,,1\n");
  dir.file("par/b.csv", "age,fare,survived\n35,53.1,1\n");
  dir.file("par/c.csv", "age,fare,survived\n1,1,1\n2,2,2\n");
  data::CsvOptions parallel;
  parallel.batch_size = 2;
  parallel.label_name = "survived";
  parallel.num_epochs = 1;
  parallel.shuffle = false;
  parallel.column_defaults = {0, -1.0, 0};
  parallel.num_parallel_reads = 2;
  const auto ages = [&](const data::CsvOptions& options) {
    std::vector<std::vector<int64_t>> out;
    for (const auto& b : data::make_csv_dataset({(dir.path / "par" / "*.csv").string()}, options).collect()) {
      out.push_back(b[0]["age"].tensor().cast(int64).to_vector<int64_t>());
    }
    return out;
  };
  EXPECT_EQ(ages(parallel), (std::vector<std::vector<int64_t>>{{22, 35}, {38, 26}, {1, 2}}));
  parallel.num_parallel_reads = 1;
  EXPECT_EQ(ages(parallel), (std::vector<std::vector<int64_t>>{{22, 38}, {26, 35}, {1, 2}}));
  parallel.num_parallel_reads = 3;  // TensorFlow: [[22, 35], [1, 38], [2, 26]]
  EXPECT_EQ(ages(parallel), (std::vector<std::vector<int64_t>>{{22, 35}, {1, 38}, {2, 26}}));
  parallel.num_parallel_reads = 0;
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { ages(parallel); }),
              HasSubstr("num_parallel_reads must be positive or AUTOTUNE (-1), got 0"));
  // shuffle: the files' order changes from pass to pass (a buffer of 1 keeps each file's rows in order).
  data::CsvOptions files_shuffled = parallel;
  files_shuffled.num_parallel_reads = 1;
  files_shuffled.shuffle = true;
  files_shuffled.shuffle_buffer_size = 1;
  files_shuffled.shuffle_seed = 7;
  files_shuffled.num_epochs = 12;
  files_shuffled.batch_size = 6;  // one pass a batch
  std::set<std::vector<int64_t>> orders;
  for (const auto& pass : ages(files_shuffled)) {
    std::vector<int64_t> sorted_pass = pass;
    std::sort(sorted_pass.begin(), sorted_pass.end());
    ASSERT_EQ(sorted_pass, (std::vector<int64_t>{1, 2, 22, 26, 35, 38}));
    orders.insert(pass);
    const auto at = [&](int64_t v) { return std::find(pass.begin(), pass.end(), v) - pass.begin(); };
    EXPECT_EQ(at(38), at(22) + 1) << "a file's rows stay together and in order";
  }
  EXPECT_GT(orders.size(), 1u);
  // The default repeats for ever, as tf.data's num_epochs=None.
  EXPECT_EQ(data::make_csv_dataset({(dir.path / "b.csv").string()}).cardinality(), data::INFINITE_CARDINALITY);
}

// Each pass reads the files a line at a time: 10,000 rows (more than one chunk) come back in order in batches that
// cross the chunks, every pass; the types come from the first num_rows_for_inference rows, and what lies past them
// is checked when the pass reaches it.
TEST(Csv, MakeCsvDatasetStreamsTheRowsAndInfersTypesFromTheFirstRows) {
  CsvTempDir dir;
  std::string text = "x,y\n";
  for (int i = 0; i < 10000; ++i) text += fmt::format("{},{}\n", i, i % 7);
  const auto big = dir.file("big.csv", text);
  data::CsvOptions o;
  o.batch_size = 1000;
  o.label_name = "y";
  o.shuffle = false;
  o.num_epochs = 2;
  const data::Dataset d = data::make_csv_dataset({big}, o);
  const auto batches = d.collect();
  ASSERT_EQ(batches.size(), 20u);
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto x = batches[b][0]["x"].tensor().to_vector<int32_t>();
    ASSERT_EQ(x.size(), 1000u);
    EXPECT_EQ(x.front(), static_cast<int32_t>(b % 10) * 1000);
    EXPECT_EQ(x.back(), static_cast<int32_t>(b % 10) * 1000 + 999);
    EXPECT_EQ(batches[b][1].tensor().to_vector<int32_t>()[3], (x[3]) % 7);
  }
  EXPECT_EQ(d.describe().substr(0, 10), "CsvDataset");
  // Shuffled: every row once per pass.
  o.shuffle = true;
  o.shuffle_seed = 3;
  o.num_epochs = 1;
  int64_t sum = 0, rows = 0;
  for (const auto& b : data::make_csv_dataset({big}, o).collect()) {
    for (int32_t v : b[0]["x"].tensor().to_vector<int32_t>()) sum += v, ++rows;
  }
  EXPECT_EQ(rows, 10000);
  EXPECT_EQ(sum, 9999LL * 10000 / 2);

  // Inference: a fraction on line 4 after two integer rows.
  const auto late = dir.file("late.csv", "a,b\n1,1\n2,2\n2.5,3\n");
  data::CsvOptions two;
  two.shuffle = false;
  two.num_epochs = 1;
  two.num_rows_for_inference = 2;
  const data::Dataset short_inference = data::make_csv_dataset({late}, two);  // made: the two rows are integers
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { short_inference.collect(); }),
              HasSubstr("'" + late + "' line 4 column 'a' is '2.5', not a valid int32: the first 2 rows made the column int32"));
  two.num_rows_for_inference = std::nullopt;  // every row
  EXPECT_EQ(data::make_csv_dataset({late}, two).collect()[0].spec(), "{a: float32[3], b: int32[3]}");
  two.num_rows_for_inference = 100;
  EXPECT_EQ(data::make_csv_dataset({late}, two).collect()[0].spec(), "{a: float32[3], b: int32[3]}");
  // column_defaults give the types (a floating value: float32), and no rows are read ahead.
  two.column_defaults = {0.0, 0.5};
  EXPECT_EQ(data::make_csv_dataset({late}, two).collect()[0].spec(), "{a: float32[3], b: float32[3]}");
  two.column_defaults = {};
  two.num_rows_for_inference = 0;
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({late}, two); }),
              HasSubstr("num_rows_for_inference must be positive"));

  // Bad rows past the inferred ones: an error of the pass, naming the file and line.
  std::string later = "x,y\n";
  for (int i = 0; i < 150; ++i) later += "1,2\n";
  later += "bob,2\n";
  const auto bad = dir.file("bad.csv", later);
  data::CsvOptions defaults;
  defaults.num_epochs = 1;
  const data::Dataset lazy = data::make_csv_dataset({bad}, defaults);
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { lazy.collect(); }),
              HasSubstr("'" + bad + "' line 152 column 'x' is 'bob', not a valid int32"));
  // A line of 17 MiB (no newline in a hostile file) is refused, not read into memory whole.
  const auto hostile = dir.file("hostile.csv", "x\n" + std::string(std::size_t{17} << 20, '7'));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({hostile}, defaults); }),
              HasSubstr("line 2 is longer than 16777216 bytes"));
  // Another file's header is checked when the dataset is made, though its rows are not needed for the types.
  dir.file("z1.csv", "x,y\n1,2\n");
  dir.file("z2.csv", "x,z\n1,2\n");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({(dir.path / "z*.csv").string()}, defaults); }),
              HasSubstr("z2.csv' has other columns than the first file"));
}

// What a tf.data user writes: make_csv_dataset, map() packing the feature columns into one tensor, fit and
// evaluate on the dataset; the int32 labels tf.data's inference gives train a binary classifier.
TEST(Csv, TrainsAModelFromACsvFile) {
  CsvTempDir dir;
  std::string text = "x1,x2,label\n";
  uint32_t s = 7;
  const auto uniform = [&] { return ((s = s * 1103515245u + 12345u) >> 8) % 20001 / 10000.0 - 1.0; };
  for (int i = 0; i < 600; ++i) {
    const double a = uniform(), b = uniform();
    text += fmt::format("{:.4f},{:.4f},{}\n", a, b, a + b > 0 ? 1 : 0);
  }
  const auto path = dir.file("points.csv", text);
  const auto pack = [](const data::Element& e) {
    return data::Element{keras::ops::stack({e[0]["x1"].tensor(), e[0]["x2"].tensor()}, 1), e[1]};
  };
  data::CsvOptions o{.batch_size = 32, .label_name = "label", .num_epochs = 1, .shuffle_seed = 3};
  const data::Dataset train = data::make_csv_dataset({path}, o).map(pack);
  EXPECT_EQ(train.collect()[0].spec(), "(float32[32, 2], int32[32])");
  osprey::random::set_seed(1);
  keras::Sequential model({keras::layers::Input({2}), keras::layers::Dense(8, "relu"), keras::layers::Dense(1, "sigmoid")});
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  model.fit(train, {.epochs = 100, .verbose = 0});
  const auto result = model.evaluate(data::make_csv_dataset({path}, {.batch_size = 100, .label_name = "label",
                                                                     .num_epochs = 1, .shuffle = false})
                                         .map(pack),
                                     {.verbose = 0});
  ASSERT_EQ(result.size(), 2u);
  EXPECT_GT(result[1], 0.95) << "loss " << result[0];
}
