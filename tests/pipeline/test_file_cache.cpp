// data::Dataset::cache(filename) streams: its first pass is written to the file element by element, later passes
// read the file one element at a time, and neither holds the pass in memory (tf.data's file cache, for datasets
// larger than memory). A pass that stops early leaves no file and no temporary behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "osprey/config.h"
#include "osprey/data.h"
#include "osprey/errors.h"
#include "test_util.h"

using namespace osprey;
using data::Dataset;
using data::Element;

namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

constexpr int64_t kElements = 48;
constexpr int64_t kFloats = 256 * 1024;  // 1 MiB a tensor
constexpr uint64_t kMiB = 1024 * 1024;

// 48 elements of 1 MiB each: element i is the tensor of kFloats values i.
Dataset megabytes() {
  return Dataset::range(kElements).map([](const Element& e) {
    return Element(Tensor::full(Shape{kFloats}, e.tensor().item()));
  });
}

// One pass, each element dropped once read; the host memory it took above what was in use before, and the first
// value of every element.
std::pair<uint64_t, std::vector<double>> one_pass(const Dataset& d) {
  const auto before = config::experimental::get_memory_info("CPU:0").current;
  config::experimental::reset_memory_stats("CPU:0");
  std::vector<double> firsts;
  auto it = d.make_iterator();
  while (auto e = it.next()) firsts.push_back(e->tensor().to_vector<float>()[0]);
  const auto peak = config::experimental::get_memory_info("CPU:0").peak;
  return {peak > before ? peak - before : 0, firsts};
}

std::vector<double> values(int64_t from, int64_t to) {
  std::vector<double> v;
  for (int64_t i = from; i < to; ++i) v.push_back(static_cast<double>(i));
  return v;
}

}  // namespace

TEST(FileCache, PassesStreamThroughTheFileWithoutHoldingThePassInMemory) {
  TempDir dir("osprey_file_cache_stream");
  const std::string file = (dir.path / "big.cache").string();
  const Dataset cached = megabytes().cache(file);
  const auto [written, first] = one_pass(cached);
  EXPECT_EQ(first, values(0, kElements));
  ASSERT_TRUE(fs::exists(file));
  EXPECT_GT(fs::file_size(file), kElements * kMiB);
  EXPECT_LT(written, 8 * kMiB) << "the first pass held its elements instead of writing them out";
  const auto [read, again] = one_pass(cached);
  EXPECT_EQ(again, values(0, kElements));
  EXPECT_LT(read, 8 * kMiB) << "a later pass read the file whole";
  // A new pipeline over the existing file (another run of the program) checks it, then streams it too.
  const auto [reopened, from_file] = one_pass(megabytes().cache(file));
  EXPECT_EQ(from_file, values(0, kElements));
  EXPECT_LT(reopened, 8 * kMiB) << "an existing cache file was read whole";
  // The same pass through a memory cache keeps every element: the measurement above sees what is held.
  const auto [kept, in_memory] = one_pass(megabytes().cache());
  EXPECT_EQ(in_memory, values(0, kElements));
  EXPECT_GE(kept, kElements * kMiB);
}

TEST(FileCache, LaterPassesOfTheSameDatasetReadTheFile) {
  TempDir dir("osprey_file_cache_reread");
  const std::string file = (dir.path / "a.cache").string(), other = (dir.path / "b.cache").string();
  const Dataset d = Dataset::range(3).cache(file);
  EXPECT_EQ(d.collect().size(), 3u);
  (void)Dataset::range(100, 104).cache(other).collect();
  fs::copy_file(other, file, fs::copy_options::overwrite_existing);
  std::vector<double> got;
  for (const auto& e : d.collect()) got.push_back(e.tensor().item());
  EXPECT_EQ(got, values(100, 104)) << "the pass came from memory, not from the file";
}

TEST(FileCache, APassThatStopsEarlyOrFailsLeavesNoFileNorTemporary) {
  TempDir dir("osprey_file_cache_partial");
  const std::string file = (dir.path / "p.cache").string();
  int calls = 0;
  const Dataset d = Dataset::range(5)
                        .map([&](const Element& e) {
                          if (++calls == 6) throw ValueError("a bad record");
                          return e;
                        })
                        .cache(file);
  {
    auto it = d.make_iterator();
    it.next();
    it.next();
  }
  EXPECT_TRUE(dir.entries().empty()) << ::testing::PrintToString(dir.entries());
  // The pipeline fails in the middle of the next pass (its 4th element, the 6th call): nothing is named either.
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { d.collect(); }), ::testing::HasSubstr("a bad record"));
  EXPECT_TRUE(dir.entries().empty()) << ::testing::PrintToString(dir.entries());
  EXPECT_EQ(d.collect().size(), 5u);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"p.cache"});
  EXPECT_EQ(d.collect().size(), 5u);  // read back from the file
  EXPECT_EQ(calls, 2 + 4 + 5);
}
