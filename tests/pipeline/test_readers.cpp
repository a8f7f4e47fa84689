// Files into tensors: .npy and .npz written by NumPy itself (tests/pipeline/make_npy_files.py made tests/data/npy/
// and the expected values), and damaged files (make_csv_dataset: test_csv.cpp).
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
