// Files into tensors and datasets: .npy and .npz written by NumPy itself (tests/pipeline/make_npy_files.py made
// tests/data/npy/ and the expected values), damaged files, and make_csv_dataset.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "osprey/data.h"
#include "osprey/errors.h"
#include "test_util.h"

using namespace osprey;
using ::testing::HasSubstr;

namespace {

std::string npy(const std::string& name) { return osprey::testing::data_file("npy/" + name); }

nlohmann::json expected() {
  std::ifstream in(npy("expected.json"));
  return nlohmann::json::parse(in);
}

std::vector<double> values_of(const Tensor& t) {
  return (t.dtype() == float64 ? t : t.cast(float64)).to_vector<double>();
}

struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() / ("osprey_readers_" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& contents) const {
    const auto p = (path / name).string();
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }
};

}  // namespace

TEST(Npy, ReadsWhatNumPyWrites) {
  const auto want = expected();
  const std::map<std::string, DType> dtypes = {{"f4", float32}, {"f8", float64}, {"i8", int64},     {"u1", int32},
                                               {"b1", int32},   {"i2", int32},   {"u4", int64},     {"be_i4", int32},
                                               {"be_f8", float64}, {"f2", float32}, {"fortran", float32},
                                               {"scalar", float32}, {"empty", float32}};
  for (const auto& [name, dtype] : dtypes) {
    const Tensor t = data::load_npy(npy(name + ".npy"));
    const auto& w = want.at(name);
    EXPECT_EQ(t.dtype(), dtype) << name;
    EXPECT_EQ(t.shape().dims_vector(), w.at("shape").get<std::vector<int64_t>>()) << name;
    const auto v = values_of(t);
    const auto wv = w.at("values").get<std::vector<double>>();
    ASSERT_EQ(v.size(), wv.size()) << name;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (dtype == float32 && name != "f2") EXPECT_EQ(static_cast<float>(v[i]), static_cast<float>(wv[i])) << name << i;
      else EXPECT_EQ(v[i], wv[i]) << name << " " << i;
    }
  }
}

TEST(Npy, SaveNpyRoundTrips) {
  TempDir dir;
  const Tensor t = Tensor::from_vector(std::vector<int64_t>{1, -2, 3, 4, 5, 6}, Shape{3, 2});
  const auto p = (dir.path / "t.npy").string();
  data::save_npy(p, t);
  const Tensor back = data::load_npy(p);
  EXPECT_EQ(back.dtype(), int64);
  EXPECT_EQ(back.shape(), (Shape{3, 2}));
  EXPECT_EQ(back.to_vector<int64_t>(), t.to_vector<int64_t>());
  // NumPy's header is padded so that the data starts at a multiple of 64 bytes.
  EXPECT_EQ(std::filesystem::file_size(p) % 16, (6 * 8) % 16);
  EXPECT_EQ((std::filesystem::file_size(p) - 48) % 64, 0u);
}

TEST(Npz, ReadsSavezAndSavezCompressed) {
  const auto want = expected();
#if !OSPREY_HAVE_ZLIB  // a build without zlib (the GPU machine's, from its bundle) says so for deflated entries
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { data::load_npz(npy("pair_compressed.npz")); }),
              HasSubstr("built without zlib"));
#endif
  for (const char* file : {"pair.npz", OSPREY_HAVE_ZLIB ? "pair_compressed.npz" : "pair.npz"}) {
    const auto arrays = data::load_npz(npy(file));
    ASSERT_EQ(arrays.size(), 2u) << file;
    EXPECT_EQ(values_of(arrays.at("x")), want.at("f4").at("values").get<std::vector<double>>()) << file;
    EXPECT_EQ(arrays.at("y").dtype(), int64);
    EXPECT_EQ(values_of(arrays.at("y")), want.at("i8").at("values").get<std::vector<double>>()) << file;
  }
}

TEST(Npy, DamagedAndHostileFilesAreValueErrorsBeforeAnyAllocation) {
  TempDir dir;
  std::string good;
  {
    std::ifstream in(npy("f4.npy"), std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto error = [&](const std::string& bytes) {
    const auto p = dir.file("bad.npy", bytes);
    return osprey::testing::error_of<ValueError>([&] { data::load_npy(p); });
  };
  EXPECT_THAT(error(good.substr(0, good.size() - 3)), HasSubstr("needs 24 data bytes, the file has 21"));
  EXPECT_THAT(error("not numpy at all"), HasSubstr("does not start with the .npy magic"));
  auto with_header = [&](const std::string& h) {
    std::string header = h;
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string s = "\x93NUMPY\x01";
    s += '\0';
    s += static_cast<char>(header.size() & 0xff);
    s += static_cast<char>(header.size() >> 8);
    return s + header + std::string(16, '\0');
  };
  EXPECT_THAT(error(with_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }")),
              HasSubstr("is not read"));
  EXPECT_THAT(error(with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }")),
              HasSubstr("not a plain numeric dtype"));
  // A shape of 2^59 elements in a file of a few bytes: refused by size, not by a failed allocation.
  EXPECT_THAT(error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (576460752303423488,), }")),
              HasSubstr("the file has 16"));
  EXPECT_THAT(error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536, 65536, 65536), }")),
              HasSubstr("holds more than the file"));
  EXPECT_THAT(error(with_header("{'descr': '<f4', 'shape': (4,), }")), HasSubstr("no 'fortran_order'"));
  EXPECT_THROW(data::load_npy((dir.path / "missing.npy").string()), NotFoundError);
  const auto text_npz = dir.file("x.npz", "this is not a zip file at all, just text");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::load_npz(text_npz); }), HasSubstr("not a valid .npz (ZIP) file"));
}

TEST(Csv, MakeCsvDatasetGivesBatchesOfFeaturesByNameAndTheLabel) {
  TempDir dir;
  dir.file("a.csv", "age,fare,survived\n22,7.25,0\n38,71.2833,1\n26,,1\n");
  dir.file("b.csv", "age,fare,survived\n35,53.1,1\n");
  data::CsvOptions o;
  o.batch_size = 2;
  o.label_name = "survived";
  o.num_epochs = 1;
  o.shuffle = false;
  o.column_defaults = {0, -1, 0};
  const auto batches = data::make_csv_dataset({(dir.path / "*.csv").string()}, o).collect();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].spec(), "({age: int64[2], fare: float32[2]}, int64[2])");
  EXPECT_EQ(batches[0][0]["age"].tensor().to_vector<int64_t>(), (std::vector<int64_t>{22, 38}));
  EXPECT_EQ(batches[1][0]["fare"].tensor().to_vector<float>(), (std::vector<float>{-1.0f, 53.1f}));
  EXPECT_EQ(batches[1][1].tensor().to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  o.select_columns = {"fare"};
  EXPECT_EQ(data::make_csv_dataset({(dir.path / "a.csv").string()}, o).collect()[0].spec(),
            "({fare: float32[2]}, int64[2])");
  // Bad input: no files, an empty field without defaults, text, a ragged line, an unknown label.
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({(dir.path / "*.tsv").string()}); }),
              HasSubstr("no files match"));
  o = {};
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({(dir.path / "a.csv").string()}, o); }),
              HasSubstr("line 4 column 'fare' is empty"));
  const auto text = dir.file("t.csv", "name,x\nbob,1\n");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({text}); }), HasSubstr("'bob', not a number"));
  const auto ragged = dir.file("r.csv", "x,y\n1,2\n3\n");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({ragged}); }), HasSubstr("line 3 has 1 fields"));
  o.label_name = "nope";
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { data::make_csv_dataset({(dir.path / "b.csv").string()}, o); }),
              HasSubstr("label_name 'nope'"));
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
  parallel.column_defaults = {0, -1, 0};
  parallel.num_parallel_reads = 2;
  const auto ages = [&](const data::CsvOptions& options) {
    std::vector<std::vector<int64_t>> out;
    for (const auto& b : data::make_csv_dataset({(dir.path / "par" / "*.csv").string()}, options).collect()) {
      out.push_back(b[0]["age"].tensor().to_vector<int64_t>());
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
  TempDir dir;
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
    const auto x = batches[b][0]["x"].tensor().to_vector<int64_t>();
    ASSERT_EQ(x.size(), 1000u);
    EXPECT_EQ(x.front(), static_cast<int64_t>(b % 10) * 1000);
    EXPECT_EQ(x.back(), static_cast<int64_t>(b % 10) * 1000 + 999);
    EXPECT_EQ(batches[b][1].tensor().to_vector<int64_t>()[3], (x[3]) % 7);
  }
  EXPECT_EQ(d.describe().substr(0, 10), "CsvDataset");
  // Shuffled: every row once per pass.
  o.shuffle = true;
  o.shuffle_seed = 3;
  o.num_epochs = 1;
  int64_t sum = 0, rows = 0;
  for (const auto& b : data::make_csv_dataset({big}, o).collect()) {
    for (int64_t v : b[0]["x"].tensor().to_vector<int64_t>()) sum += v, ++rows;
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
              HasSubstr("'" + late + "' line 4 column 'a' is 2.5, not an integer: the first 2 rows made the column int64"));
  two.num_rows_for_inference = std::nullopt;  // every row
  EXPECT_EQ(data::make_csv_dataset({late}, two).collect()[0].spec(), "{a: float32[3], b: int64[3]}");
  two.num_rows_for_inference = 100;
  EXPECT_EQ(data::make_csv_dataset({late}, two).collect()[0].spec(), "{a: float32[3], b: int64[3]}");
  // A default that is not an integer makes its column float32 though no field is empty.
  two.column_defaults = {0, 0.5};
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
              HasSubstr("'" + bad + "' line 152 column 'x' is 'bob', not a number"));
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
