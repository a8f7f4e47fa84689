// fit() from a PyDataset: the same training as from tensors, worker threads that prepare batches ahead, errors
// from get_batch(), and the input-time measurement that says when input is the bottleneck.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
namespace layers = osprey::keras::layers;
using keras::Sequential;

namespace {

// Batches of 10 rows sliced from fixed tensors, optionally slow, optionally failing at one index.
class Slices : public keras::utils::PyDataset {
 public:
  Slices(Tensor x, Tensor y, Options o = {}, int sleep_ms = 0, int64_t fail_at = -1)
      : PyDataset(o), x_(std::move(x)), y_(std::move(y)), sleep_ms_(sleep_ms), fail_at_(fail_at) {}
  int64_t num_batches() const override { return (x_.shape()[0] + 9) / 10; }
  std::pair<Tensor, Tensor> get_batch(int64_t i) override {
    if (sleep_ms_) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    if (i == fail_at_) throw ValueError("cannot read batch " + std::to_string(i));
    const int64_t e = std::min<int64_t>(x_.shape()[0], (i + 1) * 10);
    return {x_.slice_rows(i * 10, e), y_.slice_rows(i * 10, e)};
  }
  void on_epoch_end() override { ++epochs_ended; }
  int epochs_ended = 0;

 private:
  Tensor x_, y_;
  int sleep_ms_;
  int64_t fail_at_;
};

Sequential model() {
  Sequential m({layers::Input({4}), layers::Dense(8, "relu"), layers::Dense(1, "sigmoid")});
  m.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  return m;
}

}  // namespace

TEST(PyDataset, TrainsExactlyLikeTheSameBatchesFromTensors) {
  random::set_seed(1);
  Tensor x = random::uniform({95, 4}), y = random::randint(0, 2, {95, 1}).cast(DType::float32);
  for (int workers : {1, 3}) {
    random::set_seed(2);
    Sequential a = model();
    auto ha = a.fit(x, y, {.epochs = 3, .batch_size = 10, .verbose = 0, .shuffle = false});
    random::set_seed(2);
    Sequential b = model();
    Slices data(x, y, {.workers = workers, .max_queue_size = 2});
    auto hb = b.fit(data, {.epochs = 3, .verbose = 0, .shuffle = false});
    EXPECT_EQ(ha.history, hb.history) << workers << " workers";
    for (size_t i = 0; i < a.variables().size(); ++i) {
      EXPECT_EQ(a.variables()[i]->value().to_vector<float>(), b.variables()[i]->value().to_vector<float>());
    }
    EXPECT_EQ(data.epochs_ended, 3);
    EXPECT_EQ(hb.params.steps, 10);
  }
}

TEST(PyDataset, ShufflingVisitsEveryBatchOncePerEpoch) {
  random::set_seed(3);
  Tensor x = random::uniform({40, 4}), y = random::randint(0, 2, {40, 1}).cast(DType::float32);
  class Counting : public Slices {
   public:
    using Slices::Slices;
    std::pair<Tensor, Tensor> get_batch(int64_t i) override {
      seen.push_back(i);
      return Slices::get_batch(i);
    }
    std::vector<int64_t> seen;
  } data(x, y);
  Sequential m = model();
  m.fit(data, {.epochs = 2, .verbose = 0});
  ASSERT_EQ(data.seen.size(), 8u);
  std::vector<int64_t> first(data.seen.begin(), data.seen.begin() + 4);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(PyDataset, BadUsesAndFailingBatchesGetErrors) {
  random::set_seed(4);
  Tensor x = random::uniform({30, 4}), y = random::randint(0, 2, {30, 1}).cast(DType::float32);
  Sequential m = model();
  Slices data(x, y);
  EXPECT_THROW(m.fit(data, {.batch_size = 5, .verbose = 0}), ValueError);
  EXPECT_THROW(m.fit(data, {.verbose = 0, .validation_split = 0.2}), ValueError);
  for (int workers : {1, 2}) {
    Slices failing(x, y, {.workers = workers}, 0, 2);
    try {
      m.fit(failing, {.verbose = 0, .shuffle = false});
      FAIL() << "no exception";
    } catch (const ValueError& e) {
      EXPECT_STREQ(e.what(), "cannot read batch 2");
    }
  }
  Slices bad_workers(x, y, {.workers = 0});
  EXPECT_THROW(m.fit(bad_workers, {.verbose = 0}), ValueError);
}

TEST(PyDataset, SlowInputIsMeasuredAndReportedAndWorkersHideIt) {
  random::set_seed(5);
  Tensor x = random::uniform({80, 4}), y = random::randint(0, 2, {80, 1}).cast(DType::float32);
  Sequential m = model();
  Slices slow(x, y, {.workers = 1}, 10);  // 8 batches × 10 ms of "loading"
  ::testing::internal::CaptureStderr();
  auto h = m.fit(slow, {.epochs = 1, .verbose = 0});
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(h.input_seconds.size(), 1u);
  EXPECT_GE(h.input_seconds[0], 0.07);
  EXPECT_GT(h.input_seconds[0], h.step_seconds[0]);
  EXPECT_THAT(err, ::testing::HasSubstr("of the time went to waiting for input batches"));
  EXPECT_THAT(err, ::testing::HasSubstr("the input pipeline is the bottleneck"));

  // With workers the batches are made on worker threads, not on the training thread (how much that saves is
  // measured in bench/, not asserted here).
  class ThreadRecording : public Slices {
   public:
    using Slices::Slices;
    std::pair<Tensor, Tensor> get_batch(int64_t i) override {
      {
        std::lock_guard lock(mu);
        threads.insert(std::this_thread::get_id());
      }
      return Slices::get_batch(i);
    }
    std::mutex mu;
    std::set<std::thread::id> threads;
  } prefetched(x, y, {.workers = 4, .max_queue_size = 8}, 1);
  m.fit(prefetched, {.epochs = 1, .verbose = 0});
  EXPECT_EQ(prefetched.threads.count(std::this_thread::get_id()), 0u);
  EXPECT_GE(prefetched.threads.size(), 1u);
  auto ha = m.fit(x, y, {.epochs = 1, .batch_size = 10, .verbose = 0});
  EXPECT_EQ(ha.input_seconds.size(), 1u);  // tensors are measured too
}

TEST(Generator, TrainsOnItsBatchesAsOnTheSameArraysAndStopsWhenItRunsOut) {
  random::set_seed(21);
  const Tensor x = random::uniform({40, 3}), y = random::randint(0, 2, {40, 1}).cast(DType::float32);
  auto make = [] {
    random::set_seed(22);
    Sequential m({layers::Input({3}), layers::Dense(4, "relu"), layers::Dense(1, "sigmoid")});
    m.compile({.optimizer = "sgd", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
    return m;
  };
  // Batches of 10 in order, forever: two epochs of 4 steps are the arrays' two unshuffled epochs.
  int calls = 0;
  keras::Generator forever = [&]() -> std::optional<keras::GeneratorBatch> {
    const int64_t b = (calls++ % 4) * 10;
    return keras::GeneratorBatch{x.slice_rows(b, b + 10), y.slice_rows(b, b + 10)};
  };
  Sequential from_gen = make(), from_arrays = make();
  auto hg = from_gen.fit(forever, {.epochs = 2, .verbose = 0, .steps_per_epoch = 4});
  auto ha = from_arrays.fit(x, y, {.epochs = 2, .batch_size = 10, .verbose = 0, .shuffle = false});
  EXPECT_EQ(calls, 8);
  EXPECT_EQ(hg.history, ha.history);
  EXPECT_EQ(from_gen.get_weights()[0].to_vector<float>(), from_arrays.get_weights()[0].to_vector<float>());
  // A generator that ends: training stops after its last batch, with Keras's warning.
  int left = 5;
  keras::Generator finite = [&]() -> std::optional<keras::GeneratorBatch> {
    if (left-- <= 0) return std::nullopt;
    return keras::GeneratorBatch{x.slice_rows(0, 10), y.slice_rows(0, 10)};
  };
  ::testing::internal::CaptureStderr();
  auto h = make().fit(finite, {.epochs = 3, .verbose = 0, .steps_per_epoch = 4});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(h.epoch.size(), 2u);  // the second epoch ran one step, then the data ran out
  EXPECT_THAT(err, ::testing::HasSubstr("Your input ran out of data; interrupting training."));
  // steps_per_epoch is required; a batch of the wrong shape names the generator.
  Sequential m = make();
  EXPECT_THROW(m.fit(forever, {.epochs = 1, .verbose = 0}), ValueError);
  keras::Generator bad = [&]() -> std::optional<keras::GeneratorBatch> {
    return keras::GeneratorBatch{Tensor::zeros({10, 5}), y.slice_rows(0, 10)};
  };
  try {
    m.fit(bad, {.epochs = 1, .verbose = 0, .steps_per_epoch = 2});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("expected axis -1 of input shape to have value 3"));
  }
}

// A PyDataset for a two-input, two-output functional model: get_batch_lists.
TEST(PyDataset, BatchListsFeedAModelWithSeveralInputsAndOutputs) {
  random::set_seed(31);
  const Tensor xa = random::uniform({30, 2}), xb = random::uniform({30, 3});
  const Tensor ya = random::randint(0, 2, {30, 1}).cast(DType::float32), yb = random::uniform({30, 2});
  struct Lists : keras::utils::PyDataset {
    Tensor xa, xb, ya, yb;
    int64_t num_batches() const override { return 3; }
    std::pair<std::vector<Tensor>, std::vector<Tensor>> get_batch_lists(int64_t i) override {
      return {{xa.slice_rows(i * 10, i * 10 + 10), xb.slice_rows(i * 10, i * 10 + 10)},
              {ya.slice_rows(i * 10, i * 10 + 10), yb.slice_rows(i * 10, i * 10 + 10)}};
    }
  } data;
  data.xa = xa;
  data.xb = xb;
  data.ya = ya;
  data.yb = yb;
  auto make = [] {
    random::set_seed(32);
    auto a = keras::Input({2}), b = keras::Input({3});
    auto h = layers::Dense(4, "relu")(layers::Concatenate()({a, b}));
    keras::Model m({a, b}, {layers::Dense(1, "sigmoid", {.name = "p"})(h), layers::Dense(2, "", {.name = "q"})(h)});
    m.compile({.optimizer = "sgd", .loss = {"binary_crossentropy", "mse"}});
    return m;
  };
  keras::Model from_data = make(), from_arrays = make();
  auto hd = from_data.fit(data, {.epochs = 2, .verbose = 0, .shuffle = false});
  auto ha = from_arrays.fit({xa, xb}, {ya, yb}, {.epochs = 2, .batch_size = 10, .verbose = 0, .shuffle = false});
  EXPECT_EQ(hd.history, ha.history);
  EXPECT_EQ(hd.history.count("q_loss"), 1u);
  // A dataset overriding neither says what to override.
  struct Nothing : keras::utils::PyDataset {
    int64_t num_batches() const override { return 1; }
  } nothing;
  EXPECT_THROW(from_data.fit(nothing, {.verbose = 0}), NotImplementedError);
}

// Sample weights with the batches (Keras's (x, y, sample_weight) from __getitem__ or a generator), one per output
// of a two-output model, and class_weight per batch: the same training as the same arrays with the same weights.
TEST(PyDataset, WeightedBatchesTrainAsTheSameWeightedArrays) {
  random::set_seed(41);
  const Tensor x = random::uniform({30, 3}), ya = random::randint(0, 2, {30, 1}).cast(DType::float32);
  const Tensor yb = random::uniform({30, 2}), wa = random::uniform({30}, 0, 2), wb = random::uniform({30}, 0, 2);
  auto make = [] {
    random::set_seed(42);
    auto in = keras::Input({3}, {.name = "x"});
    auto h = layers::Dense(4, "tanh")(in);
    keras::Model m(in, {layers::Dense(1, "sigmoid", {.name = "a"})(h), layers::Dense(2, "", {.name = "b"})(h)});
    m.compile({.optimizer = "sgd",
               .loss = {"binary_crossentropy", "mse"},
               .weighted_metrics = std::map<std::string, std::vector<keras::MetricRef>>{{"a", {"accuracy"}}}});
    return m;
  };
  struct Weighted : keras::utils::PyDataset {
    Tensor x, ya, yb, wa, wb;
    int64_t num_batches() const override { return 3; }
    keras::utils::PyDatasetBatch get_weighted_batch(int64_t i) override {
      auto rows = [&](const Tensor& t) { return t.slice_rows(i * 10, (i + 1) * 10); };
      return {{rows(x)}, {rows(ya), rows(yb)}, {rows(wa), rows(wb)}};
    }
  } data;
  data.x = x, data.ya = ya, data.yb = yb, data.wa = wa, data.wb = wb;
  const keras::Arrays y{ya, yb}, w{wa, wb};
  auto arrays = make(), from_data = make(), from_gen = make();
  auto h = arrays.fit(x, y, {.epochs = 2, .batch_size = 10, .verbose = 0, .shuffle = false, .sample_weight = w});
  EXPECT_EQ(from_data.fit(data, {.epochs = 2, .verbose = 0, .shuffle = false}).history, h.history);
  int calls = 0;
  keras::Generator gen = [&]() -> std::optional<keras::GeneratorBatch> {
    const int64_t b = (calls++ % 3) * 10;
    return keras::GeneratorBatch{x.slice_rows(b, b + 10), keras::Arrays{ya.slice_rows(b, b + 10), yb.slice_rows(b, b + 10)},
                                 std::map<std::string, Tensor>{{"a", wa.slice_rows(b, b + 10)}, {"b", wb.slice_rows(b, b + 10)}}};
  };
  EXPECT_EQ(from_gen.fit(gen, {.epochs = 2, .verbose = 0, .steps_per_epoch = 3}).history, h.history);
  for (std::size_t i = 0; i < arrays.get_weights().size(); ++i) {
    EXPECT_EQ(from_data.get_weights()[i].to_vector<float>(), arrays.get_weights()[i].to_vector<float>());
    EXPECT_EQ(from_gen.get_weights()[i].to_vector<float>(), arrays.get_weights()[i].to_vector<float>());
  }
  // The weights count (unweighted arrays train otherwise); fit's own sample_weight is refused for such sources.
  auto unweighted = make();
  EXPECT_NE(unweighted.fit(x, y, {.epochs = 2, .batch_size = 10, .verbose = 0, .shuffle = false}).history, h.history);
  try {
    make().fit(data, {.verbose = 0, .sample_weight = w});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("get_weighted_batch"));
  }
  EXPECT_THROW(make().fit(gen, {.verbose = 0, .steps_per_epoch = 3, .sample_weight = w}), ValueError);
}

TEST(PyDataset, ClassWeightWeighsEachBatchAsTheSameArrays) {
  random::set_seed(43);
  const Tensor x = random::uniform({40, 4}), y = random::randint(0, 2, {40, 1}).cast(DType::float32);
  const std::map<int, double> cw{{0, 0.5}, {1, 3.0}};
  random::set_seed(2);
  Sequential a = model();
  auto ha = a.fit(x, y, {.epochs = 2, .batch_size = 10, .verbose = 0, .shuffle = false, .class_weight = cw});
  random::set_seed(2);
  Sequential b = model();
  Slices data(x, y);
  auto hb = b.fit(data, {.epochs = 2, .verbose = 0, .shuffle = false, .class_weight = cw});
  EXPECT_EQ(ha.history, hb.history);
  random::set_seed(2);
  Sequential c = model();
  int calls = 0;
  keras::Generator gen = [&]() -> std::optional<keras::GeneratorBatch> {
    const int64_t s = (calls++ % 4) * 10;
    return keras::GeneratorBatch{x.slice_rows(s, s + 10), y.slice_rows(s, s + 10)};
  };
  EXPECT_EQ(c.fit(gen, {.epochs = 2, .verbose = 0, .steps_per_epoch = 4, .class_weight = cw}).history, ha.history);
  random::set_seed(2);
  Sequential plain = model();
  EXPECT_NE(plain.fit(data, {.epochs = 2, .verbose = 0, .shuffle = false}).history, ha.history);
}
