// data::Dataset, transformation by transformation: the elements, their order and structure, cardinality, the
// background threads of map(num_parallel_calls) and prefetch(), errors with the element index, and cache().
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "osprey/data.h"
#include "osprey/errors.h"
#include "osprey/random.h"
#include "test_util.h"

using namespace osprey;
using data::Dataset;
using data::Element;
using ::testing::HasSubstr;

namespace {

Tensor iota(int64_t n, int64_t cols = 1) {
  std::vector<float> v(static_cast<std::size_t>(n * cols));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from_vector(v, cols == 1 ? Shape{n} : Shape{n, cols});
}

// The scalar value of each element (a tensor element, or the first tensor of a tuple).
std::vector<double> scalars(const Dataset& d) {
  std::vector<double> out;
  for (const auto& e : d.collect()) out.push_back(e.flatten()[0].item());
  return out;
}

std::vector<double> range_values(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i));
  return v;
}

}  // namespace

TEST(Dataset, FromTensorSlicesGivesRowsWithTheElementsStructure) {
  const Tensor x = iota(5, 2), y = iota(5);
  const Dataset d = Dataset::from_tensor_slices(Element{x, y});
  EXPECT_EQ(d.cardinality(), 5);
  const auto all = d.collect();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[3].spec(), "(float32[2], float32[])");
  EXPECT_EQ(all[3][0].tensor().to_vector<float>(), (std::vector<float>{6, 7}));
  EXPECT_EQ(all[3][1].tensor().item(), 3.0);

  const Dataset named = Dataset::from_tensor_slices(std::map<std::string, Tensor>{{"b", y}, {"a", x}});
  const auto first = named.collect()[0];
  EXPECT_EQ(first.spec(), "{a: float32[2], b: float32[]}");
  EXPECT_EQ(first["b"].tensor().item(), 0.0);
}

TEST(Dataset, RaggedSlicesAndScalarsAreValueErrors) {
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { Dataset::from_tensor_slices(Element{iota(5), iota(4)}); }),
              HasSubstr("component 0 has 5 rows and component 1 has 4"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { Dataset::from_tensor_slices(Element(Tensor::scalar(1.0))); }),
              HasSubstr("is a scalar"));
}

TEST(Dataset, BatchStacksRowsAndKnowsItsCardinality) {
  const Dataset d = Dataset::range(10).batch(4);
  EXPECT_EQ(d.cardinality(), 3);
  const auto b = d.collect();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].tensor().shape(), (Shape{4}));
  EXPECT_EQ(b[2].tensor().to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(Dataset::range(10).batch(4, true).cardinality(), 2);
  EXPECT_EQ(Dataset::range(10).batch(4, true).collect().size(), 2u);
  EXPECT_EQ(Dataset::from_tensor_slices(Element{iota(6, 3), iota(6)}).batch(4).collect()[0].spec(),
            "(float32[4, 3], float32[4])");
}

TEST(Dataset, BatchingDifferentShapesNamesTheComponentAndElement) {
  const Dataset d = Dataset::range(3).map([](const Element& e) {
    return Element(Tensor::zeros(Shape{e.tensor().item() < 1 ? 3 : 4}));
  });
  EXPECT_THAT(osprey::testing::error_of<InvalidArgumentError>([&] { d.batch(3).collect(); }),
              HasSubstr("Cannot batch tensors with different shapes in component 0. First element had shape [3] and "
                        "element 1 had shape [4]"));
}

TEST(Dataset, PaddedBatchPadsToTheLongestOrTheGivenShape) {
  // Element i is [1, 2, ..., i+1].
  const Dataset d = Dataset::range(3).map([](const Element& e) {
    const auto n = static_cast<int64_t>(e.tensor().item()) + 1;
    std::vector<float> v;
    for (int64_t i = 1; i <= n; ++i) v.push_back(static_cast<float>(i));
    return Element(Tensor::from_vector(v, Shape{n}));
  });
  const auto b = d.padded_batch(3).collect();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].tensor().shape(), (Shape{3, 3}));
  EXPECT_EQ(b[0].tensor().to_vector<float>(), (std::vector<float>{1, 0, 0, 1, 2, 0, 1, 2, 3}));
  data::PaddedBatchOptions o;
  o.padded_shapes = {{5}};
  o.padding_value = -1;
  const auto p = d.padded_batch(2, o).collect();
  EXPECT_EQ(p[0].tensor().to_vector<float>(), (std::vector<float>{1, -1, -1, -1, -1, 1, 2, -1, -1, -1}));
  o.padded_shapes = {{2}};
  EXPECT_THAT(osprey::testing::error_of<InvalidArgumentError>([&] { d.padded_batch(3, o).collect(); }),
              HasSubstr("Attempted to pad to a smaller size than the input element"));
}

TEST(Dataset, MapInOrderOnTheCallingThreadOrInParallel) {
  auto twice = [](const Element& e) { return Element(Tensor::scalar(2.0 * e.tensor().item(), int64)); };
  std::vector<double> want;
  for (int i = 0; i < 50; ++i) want.push_back(2.0 * i);
  EXPECT_EQ(scalars(Dataset::range(50).map(twice)), want);
  // Several calls at once: a slow function on 4 threads still gives the elements in order.
  std::atomic<int> running{0}, most{0};
  auto slow = [&](const Element& e) {
    const int now = ++running;
    for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    --running;
    return twice(e);
  };
  EXPECT_EQ(scalars(Dataset::range(50).map(slow, 4)), want);
  EXPECT_GT(most.load(), 1) << "map(num_parallel_calls=4) never ran two calls at once";
  EXPECT_EQ(scalars(Dataset::range(50).map(twice, data::AUTOTUNE)), want);
}

TEST(Dataset, AFailingMapFunctionNamesTheElementAndKeepsItsErrorClass) {
  auto fail_at_7 = [](const Element& e) {
    if (e.tensor().item() == 7) throw NotFoundError("no file for record 7");
    return e;
  };
  for (int64_t threads : {int64_t{0}, int64_t{3}}) {
    const Dataset d = Dataset::range(20).map(fail_at_7, threads).prefetch(2);
    auto it = d.make_iterator();
    for (int i = 0; i < 7; ++i) ASSERT_TRUE(it.next().has_value());
    EXPECT_THAT(osprey::testing::error_of<NotFoundError>([&] { it.next(); }),
                HasSubstr("map: the function failed on element 7: no file for record 7"))
        << "num_parallel_calls=" << threads;
  }
  // A pass dropped while its threads are busy on an endless input stops them (the test ends).
  auto it = Dataset::range(5).repeat().map([](const Element& e) { return e; }, 4).prefetch(8).make_iterator();
  EXPECT_TRUE(it.next().has_value());
}

TEST(Dataset, FilterRepeatTakeSkipShardConcatenateZipUnbatch) {
  const Dataset even = Dataset::range(10).filter([](const Element& e) { return static_cast<int64_t>(e.tensor().item()) % 2 == 0; });
  EXPECT_EQ(even.cardinality(), data::UNKNOWN_CARDINALITY);
  EXPECT_EQ(scalars(even), (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(Dataset::range(3).repeat(2).cardinality(), 6);
  EXPECT_EQ(scalars(Dataset::range(3).repeat(2)), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Dataset::range(3).repeat().cardinality(), data::INFINITE_CARDINALITY);
  EXPECT_EQ(scalars(Dataset::range(3).repeat().take(7)), (std::vector<double>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(Dataset::range(3).repeat().take(7).cardinality(), 7);
  EXPECT_EQ(scalars(Dataset::range(6).skip(4)), (std::vector<double>{4, 5}));
  EXPECT_EQ(scalars(Dataset::range(7).shard(3, 1)), (std::vector<double>{1, 4}));
  EXPECT_EQ(Dataset::range(7).shard(3, 0).cardinality(), 3);
  EXPECT_EQ(scalars(Dataset::range(2).concatenate(Dataset::range(5, 7))), (std::vector<double>{0, 1, 5, 6}));
  const auto z = Dataset::zip({Dataset::range(3), Dataset::range(10, 20)}).collect();
  ASSERT_EQ(z.size(), 3u);
  EXPECT_EQ(z[2][1].tensor().item(), 12.0);
  EXPECT_EQ(scalars(Dataset::range(5).batch(2).unbatch()), range_values(5));
  EXPECT_EQ(Dataset::range(0).repeat().cardinality(), 0);
  EXPECT_TRUE(Dataset::range(0).repeat().collect().empty());  // an empty input repeated is still empty
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { Dataset::range(3).repeat().collect(); }), HasSubstr("infinite"));
  EXPECT_THAT(osprey::testing::error_of<InvalidArgumentError>([] { Dataset::range(3).shard(2, 2); }),
              HasSubstr("index must be in [0, 2), got 2"));
  EXPECT_EQ(Dataset::range(4).map([](const Element& e) { return e; }, 2).batch(2).prefetch().describe(),
            "RangeDataset -> ParallelMapDataset(2) -> BatchDataset -> PrefetchDataset(2)");
}

TEST(Dataset, ShuffleIsAPermutationReproducibleFromItsSeed) {
  const Dataset d = Dataset::range(100).shuffle(100, 42);
  const auto a = scalars(d), b = scalars(d);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, range_values(100));
  EXPECT_NE(a, range_values(100));
  EXPECT_NE(a, b) << "reshuffle_each_iteration: each pass has a new order";
  EXPECT_EQ(a, scalars(Dataset::range(100).shuffle(100, 42))) << "the same seed, the same first order";
  const Dataset fixed = Dataset::range(100).shuffle(100, 42, false);
  EXPECT_EQ(scalars(fixed), scalars(fixed));
  EXPECT_EQ(scalars(Dataset::range(20).shuffle(1)), range_values(20)) << "a buffer of one keeps the order";
  // Without a seed, the global seed decides.
  random::set_seed(3);
  const auto g1 = scalars(Dataset::range(50).shuffle(50));
  random::set_seed(3);
  EXPECT_EQ(scalars(Dataset::range(50).shuffle(50)), g1);
  // A small buffer only moves elements a little ahead: element 0 is among the first 10 outputs.
  const auto local = scalars(Dataset::range(1000).shuffle(10, 1));
  EXPECT_LT(std::find(local.begin(), local.end(), 0.0) - local.begin(), 10);
}

TEST(Dataset, FromGeneratorStartsAFreshGeneratorEachPass) {
  int made = 0;
  const Dataset d = Dataset::from_generator([&made] {
    ++made;
    return [i = 0]() mutable -> std::optional<Element> {
      if (i == 3) return std::nullopt;
      return Element(Tensor::scalar(i++));
    };
  });
  EXPECT_EQ(d.cardinality(), data::UNKNOWN_CARDINALITY);
  EXPECT_EQ(scalars(d), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(scalars(d), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(made, 2);
  const Dataset bad = Dataset::from_generator([] {
    return [i = 0]() mutable -> std::optional<Element> {
      if (i == 2) throw ValueError("sensor offline");
      return Element(Tensor::scalar(i++));
    };
  });
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { bad.prefetch(1).collect(); }),
              HasSubstr("from_generator: the generator failed at element 2: sensor offline"));
}

TEST(Dataset, MemoryCacheRunsThePipelineOnceAndOnlyForACompletePass) {
  std::atomic<int> calls{0};
  const Dataset d = Dataset::range(6).map([&](const Element& e) {
                                        ++calls;
                                        return e;
                                      })
                        .cache();
  { auto it = d.make_iterator(); it.next(); }  // a partial pass keeps nothing
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(scalars(d), range_values(6));
  EXPECT_EQ(calls.load(), 7);
  EXPECT_EQ(scalars(d), range_values(6));
  EXPECT_EQ(calls.load(), 7) << "the second full pass reads the cache";
}

TEST(Dataset, FileCacheIsWrittenWholeAndReadByANewPipeline) {
  const auto dir = std::filesystem::temp_directory_path() / ("osprey_cache_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "train.cache").string();
  std::atomic<int> calls{0};
  auto pipeline = [&] {
    return Dataset::from_tensor_slices(Element::named({{"x", Element(iota(5, 2))}, {"y", Element(iota(5))}}))
        .map([&](const Element& e) {
          ++calls;
          return e;
        })
        .cache(file);
  };
  const auto first = pipeline().collect();
  EXPECT_EQ(calls.load(), 5);
  ASSERT_TRUE(std::filesystem::exists(file));
  const auto again = pipeline().collect();  // a new Dataset (a new process would do the same): read from the file
  EXPECT_EQ(calls.load(), 5);
  ASSERT_EQ(again.size(), 5u);
  EXPECT_EQ(again[4].spec(), "{x: float32[2], y: float32[]}");
  EXPECT_EQ(again[4]["x"].tensor().to_vector<float>(), (std::vector<float>{8, 9}));
  // Damage: a truncated file and a lying count are errors naming the file, not allocations or crashes.
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << bytes.substr(0, bytes.size() - 9);
  }
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { pipeline().collect(); }), HasSubstr("is not a valid cache file"));
  std::string lying = bytes;
  for (int i = 0; i < 8; ++i) lying[16 + static_cast<std::size_t>(i)] = '\x7f';
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << lying;
  }
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { pipeline().collect(); }), HasSubstr("elements in"));
  std::filesystem::remove_all(dir);
  EXPECT_THAT(osprey::testing::error_of<NotFoundError>([&] { Dataset::range(3).cache((dir / "no" / "such").string()); }),
              HasSubstr("does not exist"));
}

TEST(Dataset, ArgumentsOutOfRangeAreValueErrors) {
  const Dataset d = Dataset::range(3);
  EXPECT_THROW(d.batch(0), ValueError);
  EXPECT_THROW(d.shuffle(0), ValueError);
  EXPECT_THROW(d.repeat(-2), ValueError);
  EXPECT_THROW(d.take(-5), ValueError);
  EXPECT_THROW(d.prefetch(0), ValueError);
  EXPECT_THROW(d.map(nullptr), ValueError);
  EXPECT_THROW(d.map([](const Element& e) { return e; }, -3), ValueError);
  EXPECT_THROW(Dataset::range(0, 5, 0), InvalidArgumentError);
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { Element(Tensor::scalar(1.0))[0]; }), HasSubstr("out of range"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { (Element{Tensor::scalar(1.0)}).tensor(); }), HasSubstr("not a tensor"));
}

namespace {
std::vector<std::vector<int64_t>> int_batches(const Dataset& d) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& e : d.collect()) out.push_back(e.flatten()[0].to_vector<int64_t>());
  return out;
}
}  // namespace

TEST(Dataset, RebatchCutsTheRowsAcrossElementBoundariesAsTfData) {
  using V = std::vector<std::vector<int64_t>>;
  // tf.data.Dataset.rebatch's documented examples.
  EXPECT_EQ(int_batches(Dataset::range(6).batch(2).rebatch(3)), (V{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(int_batches(Dataset::range(7).batch(4).rebatch(3)), (V{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(int_batches(Dataset::range(7).batch(2).rebatch(3, true)), (V{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(int_batches(Dataset::range(8).batch(4).rebatch({2, 1, 1})), (V{{0, 1}, {2}, {3}, {4, 5}, {6}, {7}}));
  // A size of 0 gives an element of no rows; every component is cut alike and keeps the structure.
  EXPECT_EQ(int_batches(Dataset::range(5).batch(5).rebatch({0, 2})), (V{{}, {0, 1}, {}, {2, 3}, {}, {4}}));
  const auto pairs = Dataset::from_tensor_slices(Element{iota(5, 2), iota(5)}).batch(3).rebatch(2).collect();
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[1].spec(), "(float32[2, 2], float32[2])");
  EXPECT_EQ(pairs[1][0].tensor().to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(pairs[2][1].tensor().to_vector<float>(), (std::vector<float>{4}));
  EXPECT_EQ(Dataset::range(8).batch(4).rebatch(3).cardinality(), data::UNKNOWN_CARDINALITY);
  EXPECT_EQ(Dataset::range(8).batch(4).repeat().rebatch(3).cardinality(), data::INFINITE_CARDINALITY);
}

TEST(Dataset, RebatchRefusesScalarsMismatchedRowsAndNoSizes) {
  EXPECT_THAT(osprey::testing::error_of<InvalidArgumentError>([] { Dataset::range(3).rebatch(2).collect(); }),
              HasSubstr("rebatch: element 0 (int64[]) has a scalar component"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { Dataset::range(3).batch(2).rebatch({1, -1}); }),
              HasSubstr("batch sizes must be >= 0, got -1"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { Dataset::range(3).batch(2).rebatch({0, 0}); }),
              HasSubstr("are all 0"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { Dataset::range(3).batch(2).rebatch(0); }),
              HasSubstr("batch_size must be positive, got 0"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { Dataset::range(3).batch(2).rebatch(std::vector<int64_t>{}); }),
              HasSubstr("batch_sizes is empty"));
}

// deterministic=false: element 0's call waits until three later elements are mapped, so an unordered map hands one
// of those out first (an ordered one still waits for element 0); every element comes once either way. The
// pipeline's Options::deterministic decides for maps without their own argument, on every pass of a repeat.
TEST(Dataset, AnUnorderedMapHandsOutElementsAsTheyAreReady) {
  auto make = [](std::optional<bool> deterministic, int64_t n = 40) {
    auto mapped = std::make_shared<std::atomic<int>>(0), zeros = std::make_shared<std::atomic<int>>(0);
    return Dataset::range(n).map(
        [mapped, zeros, n](const Element& e) {
          if (e.tensor().item() == 0.0) {
            // Pass p of a repeat starts after the n - 1 other elements of each earlier pass were mapped.
            const int p = (*zeros)++;
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (mapped->load() < 3 + (n - 1) * p && std::chrono::steady_clock::now() < until) {
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            // Those elements were mapped, not yet handed on: give their workers time to queue them (on a loaded
            // 2-core machine element 0 could otherwise overtake them).
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          } else {
            ++*mapped;
          }
          return e;
        },
        4, deterministic);
  };
  auto sorted = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const std::vector<double> unordered = scalars(make(false));
  EXPECT_NE(unordered.front(), 0.0) << "deterministic=false waited for the slow element 0";
  EXPECT_EQ(sorted(unordered), range_values(40));
  EXPECT_EQ(scalars(make(true)), range_values(40));
  EXPECT_EQ(scalars(make(std::nullopt)), range_values(40));  // tf.data's default: in order
  data::Options any_order;
  any_order.deterministic = false;
  EXPECT_FALSE(data::Options().merge(any_order).deterministic.value_or(true));
  EXPECT_NE(scalars(make(std::nullopt).with_options(any_order)).front(), 0.0);
  EXPECT_EQ(scalars(make(true).with_options(any_order)), range_values(40));  // the map's own argument wins
  // A repeat makes its second pass's iterators with the pipeline's options too.
  const std::vector<double> twice = scalars(make(std::nullopt, 20).repeat(2).with_options(any_order));
  ASSERT_EQ(twice.size(), 40u);
  EXPECT_NE(twice[0], 0.0);
  EXPECT_NE(twice[20], 0.0) << "the repeat's second pass was in order";
  EXPECT_EQ(sorted(std::vector<double>(twice.begin() + 20, twice.end())), range_values(20));
}

TEST(Dataset, OptionsAreSetByWithOptionsAndMergedThroughThePipeline) {
  using data::AutoShardPolicy;
  data::Options off, file, none;
  off.experimental_distribute.auto_shard_policy = AutoShardPolicy::OFF;
  file.experimental_distribute.auto_shard_policy = AutoShardPolicy::FILE;
  const Dataset plain = Dataset::range(4);
  EXPECT_EQ(plain.options().auto_shard_policy(), AutoShardPolicy::AUTO);
  EXPECT_FALSE(plain.options().experimental_distribute.auto_shard_policy.has_value());
  // Kept through later transformations; a later with_options wins; unset fields do not override.
  const Dataset d = plain.with_options(off).map([](const Element& e) { return e; }).batch(2);
  EXPECT_EQ(d.options().auto_shard_policy(), AutoShardPolicy::OFF);
  EXPECT_EQ(d.with_options(file).options().auto_shard_policy(), AutoShardPolicy::FILE);
  EXPECT_EQ(d.with_options(none).options().auto_shard_policy(), AutoShardPolicy::OFF);
  // zip and concatenate merge their inputs' in order.
  EXPECT_EQ(Dataset::zip({plain, d}).options().auto_shard_policy(), AutoShardPolicy::OFF);
  EXPECT_EQ(Dataset::zip({plain.with_options(file), plain.with_options(off)}).options().auto_shard_policy(),
            AutoShardPolicy::OFF);
  EXPECT_EQ(plain.with_options(off).concatenate(plain.with_options(file)).options().auto_shard_policy(),
            AutoShardPolicy::FILE);
  // The elements pass through unchanged.
  EXPECT_EQ(scalars(plain.with_options(off)), range_values(4));
  EXPECT_EQ(plain.with_options(off).cardinality(), 4);
  EXPECT_EQ(plain.with_options(off).describe(), "RangeDataset -> OptionsDataset");
  EXPECT_STREQ(data::to_string(AutoShardPolicy::DATA), "DATA");
}

TEST(Dataset, InterleaveReadsCycleLengthDatasetsInBlocksAsTfData) {
  // Expected orders printed by TensorFlow 2 (tf.data.Dataset.interleave) for the same pipelines.
  const auto repeated = [](const Element& e) { return Dataset::from_tensors(e).repeat(6); };
  const std::vector<double> doc = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
  EXPECT_EQ(scalars(Dataset::range(1, 6).interleave(repeated, 2, 4)), doc);
  EXPECT_EQ(scalars(Dataset::range(1, 6).interleave(repeated, 2, 4, 2)), doc);  // threads, the same order
  EXPECT_EQ(scalars(Dataset::range(1, 6).interleave(repeated, 2, 4, data::AUTOTUNE)), doc);
  // Datasets of different lengths: one that ends leaves its place to the next input element's.
  const std::vector<std::vector<float>> lists = {{10, 11, 12}, {20}, {30, 31}, {40}};
  const auto open = [&lists](const Element& e) {
    const auto& l = lists[static_cast<std::size_t>(e.tensor().item())];
    return Dataset::from_tensor_slices(Element(Tensor::from_vector(l, {static_cast<int64_t>(l.size())})));
  };
  EXPECT_EQ(scalars(Dataset::range(4).interleave(open, 2, 1)), (std::vector<double>{10, 20, 11, 12, 30, 31, 40}));
  EXPECT_EQ(scalars(Dataset::range(4).interleave(open, 2, 1, 2)), (std::vector<double>{10, 20, 11, 12, 30, 31, 40}));
  EXPECT_EQ(scalars(Dataset::range(4).interleave(open, 3, 2)), (std::vector<double>{10, 11, 20, 30, 31, 12, 40}));
  EXPECT_EQ(Dataset::range(4).interleave(open, 2).cardinality(), data::UNKNOWN_CARDINALITY);
  EXPECT_EQ(Dataset::range(4).interleave(open, 2, 1, 2).describe(), "RangeDataset -> ParallelInterleaveDataset");
  // A pass can stop early and start again.
  auto it = Dataset::range(4).interleave(open, 2, 1, 2).make_iterator();
  EXPECT_EQ(it.next()->tensor().item(), 10.0);
  EXPECT_EQ(scalars(Dataset::range(4).interleave(open, 1)), (std::vector<double>{10, 11, 12, 20, 30, 31, 40}));
}

// deterministic=false with num_parallel_calls: input element 0's dataset makes its first element only after the
// other two made one each (or `patience` passed: the ordered orders open them only after it), so an unordered
// interleave hands one of theirs out first where the ordered one waits for element 0; every element comes once
// either way, and each dataset's own elements keep their order. The pipeline's Options::deterministic decides when
// the argument is unset; without num_parallel_calls the order is tf.data's.
TEST(Dataset, AnUnorderedInterleavePassesOverADatasetWithNothingReady) {
  using std::chrono::milliseconds;
  auto make = [](int64_t parallel, std::optional<bool> deterministic, milliseconds patience = milliseconds(300)) {
    auto made = std::make_shared<std::atomic<int>>(0);
    return Dataset::range(3).interleave(
        [made, patience](const Element& e) {
          const int first = static_cast<int>(e.tensor().item()) * 10;
          return Dataset::from_generator([made, first, patience] {
            auto at = std::make_shared<int>(0);
            return data::Dataset::GeneratorFn([made, first, at, patience]() -> std::optional<Element> {
              if (*at == 4) return std::nullopt;
              if (first == 0 && *at == 0) {
                const auto until = std::chrono::steady_clock::now() + patience;
                while (made->load() < 2 && std::chrono::steady_clock::now() < until) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(50));  // theirs reach their queues first
              } else if (first != 0) {
                ++*made;
              }
              return Element(Tensor::scalar(static_cast<float>(first + (*at)++)));
            });
          });
        },
        3, 1, parallel, deterministic);
  };
  const std::vector<double> in_turn = {0, 10, 20, 1, 11, 21, 2, 12, 22, 3, 13, 23};
  const milliseconds long_enough(20000);
  const std::vector<double> unordered = scalars(make(3, false, long_enough));
  ASSERT_EQ(unordered.size(), 12u);
  EXPECT_NE(unordered.front(), 0.0) << "deterministic=false waited for the slow dataset";
  for (double first : {0.0, 10.0, 20.0}) {  // each dataset's elements in their order
    std::vector<double> own;
    for (double v : unordered) {
      if (v >= first && v < first + 10) own.push_back(v);
    }
    EXPECT_EQ(own, (std::vector<double>{first, first + 1, first + 2, first + 3}));
  }
  EXPECT_EQ(scalars(make(3, true)), in_turn);
  EXPECT_EQ(scalars(make(3, std::nullopt)), in_turn);  // tf.data's default: in order
  EXPECT_EQ(scalars(make(0, false)), in_turn);         // no threads: nothing to pass over
  data::Options any_order;
  any_order.deterministic = false;
  EXPECT_NE(scalars(make(3, std::nullopt, long_enough).with_options(any_order)).front(), 0.0);
  EXPECT_EQ(scalars(make(3, true).with_options(any_order)), in_turn);  // the argument wins
  // Datasets of different lengths and an empty one still give every element once, and a pass can stop early.
  const std::vector<std::vector<float>> lists = {{10, 11, 12}, {}, {30, 31}, {40}};
  const auto open = [&lists](const Element& e) {
    const auto& l = lists[static_cast<std::size_t>(e.tensor().item())];
    return Dataset::from_tensor_slices(Element(Tensor::from_vector(l, {static_cast<int64_t>(l.size())})));
  };
  std::vector<double> all = scalars(Dataset::range(4).interleave(open, 2, 2, 2, false));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<double>{10, 11, 12, 30, 31, 40}));
  auto it = Dataset::range(4).interleave(open, 2, 1, 2, false).make_iterator();
  EXPECT_TRUE(it.next().has_value());
}

TEST(Dataset, InterleaveErrorsNameTheInputElement) {
  const auto failing = [](const Element& e) -> Dataset {
    if (e.tensor().item() == 2) throw ValueError("no file for 2");
    return Dataset::from_tensors(e);
  };
  for (const auto& mode : std::vector<std::pair<int64_t, bool>>{{0, true}, {2, true}, {2, false}}) {
    const int64_t parallel = mode.first;
    const bool deterministic = mode.second;
    EXPECT_THAT(osprey::testing::error_of<ValueError>(
                    [&] { Dataset::range(4).interleave(failing, 2, 1, parallel, deterministic).collect(); }),
                HasSubstr("interleave: the function failed on element 2: no file for 2"));
    const auto bad_inner = [](const Element& e) {
      return Dataset::from_tensors(e).map([](const Element& x) -> Element {
        if (x.tensor().item() == 1) throw InvalidArgumentError("bad row");
        return x;
      });
    };
    EXPECT_THAT(osprey::testing::error_of<InvalidArgumentError>(
                    [&] { Dataset::range(3).interleave(bad_inner, 2, 1, parallel, deterministic).collect(); }),
                HasSubstr("interleave: the dataset of element 1 failed: "));
  }
  const auto same = [](const Element& e) { return Dataset::from_tensors(e); };
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { Dataset::range(2).interleave(same, 0); }),
              HasSubstr("cycle_length must be positive or AUTOTUNE (-1), got 0"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { Dataset::range(2).interleave(same, 2, 0); }),
              HasSubstr("block_length must be positive, got 0"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { Dataset::range(2).interleave(same, 2, 1, -3); }),
              HasSubstr("num_parallel_calls must be >= 0 or AUTOTUNE (-1), got -3"));
}
