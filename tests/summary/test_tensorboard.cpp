// TensorBoard event files: the record framing and its CRC32C, the writer and the reader (read_events) in both
// directions, damaged files, histogram buckets as tf.summary.histogram makes them, and the TensorBoard callback's
// run laid out as Keras 3 lays it out (tests/keras/keras_tensorboard_reference.py -> tests/data/keras_tensorboard.json).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"
#include "osprey/summary.h"
#if OSPREY_HAVE_TENSORBOARD
#include "summary/record_io.h"  // the framing is tested directly where it is built
#endif

using namespace osprey;
namespace fs = std::filesystem;
namespace layers = osprey::keras::layers;
using ::testing::HasSubstr;

namespace {

nlohmann::json reference() {
  std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_tensorboard.json");
  return nlohmann::json::parse(in);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("osprey_tensorboard_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

#define REQUIRE_EVENT_FILES() \
  if (!summary::available()) GTEST_SKIP() << "built without protobuf/ISA-L: event files are unavailable"

// The one event file of a run folder, read.
std::vector<summary::Event> read_run(const fs::path& dir) {
  const auto files = summary::event_files(dir.string());
  EXPECT_EQ(files.size(), 1u) << dir;
  return files.empty() ? std::vector<summary::Event>{} : summary::read_events(files[0]);
}

struct Series {
  std::string plugin, dtype;
  std::vector<int64_t> shape, steps;
  std::vector<std::vector<double>> numbers;
  std::vector<std::string> strings;
};
std::map<std::string, Series> series_of(const std::vector<summary::Event>& events) {
  std::map<std::string, Series> out;
  for (const auto& e : events)
    for (const auto& v : e.values) {
      auto& s = out[v.tag];
      s.plugin = v.plugin;
      s.dtype = v.dtype;
      s.shape = v.shape;
      s.steps.push_back(e.step);
      s.numbers.push_back(v.numbers);
      if (!v.strings.empty()) s.strings.push_back(v.strings[0]);
    }
  return out;
}

}  // namespace

#if OSPREY_HAVE_TENSORBOARD
TEST(EventRecords, Crc32cIsCastagnoliAndMaskedAsTensorFlowMasksIt) {
  REQUIRE_EVENT_FILES();
  // RFC 3720's check value for "123456789", and the all-zero 32-byte vector of its appendix B.4.
  EXPECT_EQ(summary::detail::crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(summary::detail::crc32c(std::string(32, '\0')), 0x8A9136AAu);
  const uint32_t crc = 0xE3069283u;
  EXPECT_EQ(summary::detail::masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  std::string framed;
  summary::detail::append_record(framed, "abc");
  ASSERT_EQ(framed.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(framed[0], 3);
  EXPECT_EQ(framed.substr(12, 3), "abc");
}

#endif

TEST(HistogramBuckets, MatchTensorFlowsSummaryHistogram) {
  const auto ref = reference();
  for (const auto& [name, h] : ref["histograms"].items()) {
    const auto values = h["values"].get<std::vector<double>>();
    const auto expected = h["buckets"].get<std::vector<std::vector<double>>>();
    const auto rows = summary::histogram_buckets(values);
    ASSERT_EQ(rows.size(), expected.size() * 3) << name;
    for (std::size_t r = 0; r < expected.size(); ++r) {
      EXPECT_NEAR(rows[r * 3], expected[r][0], 1e-12) << name << " row " << r;
      EXPECT_NEAR(rows[r * 3 + 1], expected[r][1], 1e-12) << name << " row " << r;
      EXPECT_EQ(rows[r * 3 + 2], expected[r][2]) << name << " row " << r;
    }
  }
}

TEST(SummaryWriter, WritesWhatReadEventsReadsBack) {
  REQUIRE_EVENT_FILES();
  const auto dir = fresh_dir("roundtrip");
  std::string path;
  {
    summary::SummaryWriter w(dir.string(), {.max_queue = 2});
    path = w.path();
    w.scalar("loss", 0.25, 3);
    w.histogram("w", Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}), 4, 2);
    w.text("note", "hello *markdown*", 5);
    w.close();
    EXPECT_THROW(w.scalar("late", 1, 6), FailedPreconditionError);
  }
  EXPECT_TRUE(std::regex_match(fs::path(path).filename().string(),
                               std::regex(R"(events\.out\.tfevents\.\d{10}\.[^.]+\.\d+\.\d+\.v2)")))
      << path;
  const auto events = summary::read_events(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  // In the order written: a scalar kept back until the queue is written out still precedes what came after it.
  EXPECT_EQ(events[1].step, 3);
  EXPECT_EQ(events[2].step, 4);
  EXPECT_EQ(events[3].step, 5);
  EXPECT_TRUE(events[0].values.empty());
  const auto s = series_of(events);
  EXPECT_EQ(s.at("loss").plugin, "scalars");
  EXPECT_EQ(s.at("loss").dtype, "float32");
  EXPECT_EQ(s.at("loss").steps, std::vector<int64_t>{3});
  EXPECT_EQ(s.at("loss").numbers[0], std::vector<double>{0.25});
  EXPECT_EQ(s.at("w").plugin, "histograms");
  EXPECT_EQ(s.at("w").dtype, "float64");
  EXPECT_EQ(s.at("w").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s.at("w").numbers[0], (std::vector<double>{1, 2.5, 2, 2.5, 4, 2}));
  EXPECT_EQ(s.at("note").plugin, "text");
  EXPECT_EQ(s.at("note").strings, std::vector<std::string>{"hello *markdown*"});
  EXPECT_GT(events[1].wall_time, 1.7e9);
}

TEST(SummaryWriter, QueuedEventsReachTheFileAtMaxQueueAndFlush) {
  REQUIRE_EVENT_FILES();
  const auto dir = fresh_dir("queue");
  summary::SummaryWriter w(dir.string(), {.max_queue = 3});
  EXPECT_EQ(summary::read_events(w.path()).size(), 1u);  // the file version is written at once
  w.scalar("a", 1, 1);
  w.scalar("a", 2, 2);
  EXPECT_EQ(summary::read_events(w.path()).size(), 1u);
  w.scalar("a", 3, 3);  // the third queued event: written out
  EXPECT_EQ(summary::read_events(w.path()).size(), 4u);
  w.scalar("a", 4, 4);
  w.flush();
  const auto events = summary::read_events(w.path());
  EXPECT_EQ(events.size(), 5u);
  // Only the tag's first record carries its metadata; the reader gives every value the tag's plugin.
  for (std::size_t i = 1; i < events.size(); ++i) EXPECT_EQ(events[i].values.at(0).plugin, "scalars") << i;
}

TEST(SummaryWriter, ALogDirThatCannotBeMadeIsATypedErrorWithThePath) {
  REQUIRE_EVENT_FILES();
  const auto dir = fresh_dir("blocked");
  fs::create_directories(dir);
  spit(dir / "a_file", "not a folder");
  try {
    summary::SummaryWriter w((dir / "a_file" / "logs").string());
    FAIL() << "no error";
  } catch (const NotFoundError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a_file"));
  }
  EXPECT_THROW(summary::SummaryWriter(""), ValueError);
  EXPECT_THROW(summary::SummaryWriter(dir.string(), {.max_queue = 0}), ValueError);
}

#if OSPREY_HAVE_TENSORBOARD
TEST(ReadEvents, DamagedTruncatedAndForeignFilesAreValueErrorsWithTheRecord) {
  REQUIRE_EVENT_FILES();
  const auto dir = fresh_dir("damaged");
  std::string path;
  {
    summary::SummaryWriter w(dir.string());
    path = w.path();
    for (int i = 0; i < 3; ++i) w.scalar("x", i, i);
  }
  const std::string good = slurp(path);
  const fs::path bad = dir / "events.out.tfevents.bad";
  // A flipped byte inside the last record's payload.
  std::string flipped = good;
  flipped[flipped.size() - 6] ^= 0x40;
  spit(bad, flipped);
  try {
    summary::read_events(bad.string());
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("record 3"));
    EXPECT_THAT(e.what(), HasSubstr("CRC32C"));
  }
  // Truncated inside the last record: an error, or the records before it with allow_partial_tail.
  spit(bad, good.substr(0, good.size() - 5));
  EXPECT_THROW(summary::read_events(bad.string()), ValueError);
  EXPECT_EQ(summary::read_events(bad.string(), {}, true).size(), 3u);
  // A length field (with a valid CRC) claiming 2^60 bytes: refused before anything is allocated.
  std::string huge;
  summary::detail::append_record(huge, "x");
  const uint64_t big = uint64_t{1} << 60;
  std::memcpy(huge.data(), &big, 8);
  const uint32_t crc = summary::detail::masked_crc32c(std::string_view(huge.data(), 8));
  std::memcpy(huge.data() + 8, &crc, 4);
  spit(bad, huge);
  try {
    summary::read_events(bad.string());
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("larger than the limit"));
  }
  // Not an event file at all; a record that is not an Event.
  spit(bad, "hello, this is a text file with more than twelve bytes");
  EXPECT_THROW(summary::read_events(bad.string()), ValueError);
  std::string not_event;
  summary::detail::append_record(not_event, std::string("\xff\xff\xff\xff", 4));
  spit(bad, not_event);
  EXPECT_THROW(summary::read_events(bad.string()), ValueError);
  // A link is not followed; a missing file is NotFoundError.
  fs::create_symlink(path, dir / "events.out.tfevents.link");
  EXPECT_THROW(summary::read_events((dir / "events.out.tfevents.link").string()), ValueError);
  EXPECT_THROW(summary::read_events((dir / "missing").string()), NotFoundError);
}
#endif

namespace {

struct Problem {
  Tensor x, y;
};
Problem problem() {
  random::set_seed(3);
  return {random::normal({12, 4}), random::randint(0, 2, {12, 1}).cast(DType::float32)};
}
keras::Sequential small_model() {
  keras::clear_session();  // "sequential", "dense", "dense_1": the reference script's names
  random::set_seed(4);
  keras::Sequential m({layers::Input({4}), layers::Dense(3, "relu"), layers::Dense(1, "sigmoid")});
  m.compile({.optimizer = "sgd", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  return m;
}

}  // namespace

// The same two fits as the reference script (one model, fit twice): the tags, plugins, dtypes, shapes and steps
// of train/ and validation/ are Keras 3's.
TEST(TensorBoardCallback, LaysOutTheRunAsKeras3) {
  REQUIRE_EVENT_FILES();
  const auto ref = reference();
  auto [x, y] = problem();
  auto model = small_model();
  const Tensor xv = x.slice_rows(0, 8), yv = y.slice_rows(0, 8);
  for (const std::string run : {"epoch", "batch"}) {
    SCOPED_TRACE(run);
    const auto dir = fresh_dir("layout_" + run);
    keras::TensorBoardOptions o;
    if (run == "epoch") o.histogram_freq = 1;
    else o.update_freq = "batch", o.write_steps_per_second = true;
    auto history = model.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0,
                                    .callbacks = {keras::TensorBoard(dir.string(), o)},
                                    .validation_data = {xv, yv}});
    std::set<std::string> dirs;
    for (const auto& e : fs::directory_iterator(dir)) dirs.insert(e.path().filename().string());
    EXPECT_EQ(dirs, (std::set<std::string>{"train", "validation"}));
    for (const std::string sub : {"train", "validation"}) {
      SCOPED_TRACE(sub);
      const auto ours = series_of(read_run(dir / sub));
      const auto& theirs = ref["runs"][run][sub];
      std::set<std::string> our_tags, their_tags;
      for (const auto& [tag, s] : ours) our_tags.insert(tag);
      for (const auto& [tag, s] : theirs.items()) their_tags.insert(tag);
      EXPECT_EQ(our_tags, their_tags);
      for (const auto& [tag, s] : theirs.items()) {
        if (!ours.count(tag)) continue;
        const auto& o2 = ours.at(tag);
        EXPECT_EQ(o2.plugin, s["plugin"].get<std::string>()) << tag;
        EXPECT_EQ(o2.dtype, s["dtype"].get<std::string>()) << tag;
        EXPECT_EQ(o2.shape, s["shape"].get<std::vector<int64_t>>()) << tag;
        EXPECT_EQ(o2.steps, s["steps"].get<std::vector<int64_t>>()) << tag;
      }
      // The values are the History's (float32), the learning rate the optimizer's.
      for (const auto& [tag, s] : ours) {
        if (tag.rfind("epoch_", 0) != 0 || tag == "epoch_learning_rate" || tag == "epoch_steps_per_second") continue;
        const std::string key = (sub == "validation" ? "val_" : "") + tag.substr(6);
        for (std::size_t e = 0; e < s.steps.size(); ++e)
          EXPECT_EQ(s.numbers[e][0], static_cast<double>(static_cast<float>(history.history.at(key).at(e)))) << tag;
      }
      if (sub == "train") {
        EXPECT_EQ(ours.at("epoch_learning_rate").numbers[0][0], static_cast<double>(0.01f));
        const auto& graph = ours.at("keras");
        ASSERT_EQ(graph.strings.size(), 1u);
        EXPECT_EQ(nlohmann::json::parse(graph.strings[0])["class_name"], "Sequential");
      }
    }
  }
}

TEST(TensorBoardCallback, HistogramsAreOfTheWeightsAtTheEpochsEnd) {
  REQUIRE_EVENT_FILES();
  auto [x, y] = problem();
  auto model = small_model();
  const auto dir = fresh_dir("histograms");
  model.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0,
                   .callbacks = {keras::TensorBoard(dir.string(), {.histogram_freq = 2, .write_graph = false})}});
  const auto s = series_of(read_run(dir / "train"));
  EXPECT_FALSE(s.count("keras"));
  const auto& kernel = s.at("sequential/dense/kernel/histogram");
  EXPECT_EQ(kernel.steps, (std::vector<int64_t>{0, 2}));
  const auto weights = model.get_weights()[0].to_vector<float>();
  const auto expected = summary::histogram_buckets(std::vector<double>(weights.begin(), weights.end()));
  EXPECT_EQ(kernel.numbers[1], expected);
}

TEST(TensorBoardCallback, UpdateFreqNWritesEveryNthBatch) {
  REQUIRE_EVENT_FILES();
  auto [x, y] = problem();
  auto model = small_model();
  const auto dir = fresh_dir("every_n");
  model.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0,
                   .callbacks = {keras::TensorBoard(dir.string(), {.update_freq = 2})}});
  EXPECT_EQ(series_of(read_run(dir / "train")).at("batch_loss").steps, (std::vector<int64_t>{2, 4, 6}));
}

// While training, the run reaches the file within a second of a record (not only at the end): a callback after
// TensorBoard finds epoch 0's scalars in the file once an epoch took longer than that.
TEST(TensorBoardCallback, RecordsReachTheFileWithinASecondWhileTraining) {
  REQUIRE_EVENT_FILES();
  auto [x, y] = problem();
  auto model = small_model();
  const auto dir = fresh_dir("live");
  struct Look : keras::Callback {
    fs::path train;
    std::vector<int64_t> seen_at_epoch_1;
    void on_epoch_end(int epoch, keras::Logs&) override {
      if (epoch == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1100));
      if (epoch == 1) seen_at_epoch_1 = series_of(read_run(train)).at("epoch_loss").steps;
    }
  } look;
  look.train = dir / "train";
  model.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0,
                   .callbacks = {keras::TensorBoard(dir.string(), {}), look}});
  EXPECT_EQ(look.seen_at_epoch_1, (std::vector<int64_t>{0, 1}));  // epoch 1's record came > 1 s after the last write
  EXPECT_EQ(series_of(read_run(dir / "train")).at("epoch_loss").steps, (std::vector<int64_t>{0, 1, 2}));
}

TEST(TensorBoardCallback, EvaluateAloneWritesTheEvaluationSeries) {
  REQUIRE_EVENT_FILES();
  auto [x, y] = problem();
  auto model = small_model();
  const auto dir = fresh_dir("evaluate");
  keras::TensorBoard tb(dir.string());
  model.evaluate(x, y, {.verbose = 0, .callbacks = {tb}});
  const auto s = series_of(read_run(dir / "validation"));
  EXPECT_EQ(s.at("evaluation_loss_vs_iterations").steps, std::vector<int64_t>{0});
  EXPECT_FALSE(fs::exists(dir / "train"));
}

TEST(TensorBoardCallback, BadArgumentsAndAnUnwritableLogDirFailBeforeTraining) {
  EXPECT_THROW(keras::TensorBoard("logs", {.update_freq = "sometimes"}), ValueError);
  EXPECT_THROW(keras::TensorBoard("logs", {.update_freq = 0}), ValueError);
  EXPECT_THROW(keras::TensorBoard("logs", {.histogram_freq = -1}), ValueError);
  EXPECT_THROW(keras::TensorBoard(""), ValueError);
  auto [x, y] = problem();
  auto model = small_model();
  const auto before = model.get_weights()[0].to_vector<float>();
  const auto dir = fresh_dir("unwritable");
  fs::create_directories(dir);
  spit(dir / "file", "x");
  if (!summary::available()) {
    EXPECT_THROW(model.fit(x, y, {.verbose = 0, .callbacks = {keras::TensorBoard((dir / "file" / "logs").string())}}),
                 FailedPreconditionError);
    return;
  }
  try {
    model.fit(x, y, {.verbose = 0, .callbacks = {keras::TensorBoard((dir / "file" / "logs").string())}});
    FAIL() << "no error";
  } catch (const NotFoundError& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir / "file").string()));
  }
  EXPECT_EQ(model.get_weights()[0].to_vector<float>(), before);  // not one step was taken
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // nothing written
}
