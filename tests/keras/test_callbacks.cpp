// Keras's callbacks: hook order, EarlyStopping / ReduceLROnPlateau on scripted curves, LearningRateScheduler,
// CSVLogger, TerminateOnNaN, ModelCheckpoint, and the weights file they use.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
namespace layers = osprey::keras::layers;
using keras::Logs;
using keras::Sequential;
using ::testing::HasSubstr;

namespace {

struct Data {
  Tensor x, y;
};
Data sample_data() {
  random::set_seed(9);
  return {random::uniform({40, 3}), random::randint(0, 2, {40, 1}).cast(DType::float32)};
}
Sequential model(const char* optimizer = "sgd") {
  random::set_seed(10);
  Sequential m({layers::Input({3}), layers::Dense(4, "relu"), layers::Dense(1, "sigmoid")});
  m.compile({.optimizer = optimizer, .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  return m;
}

// Replaces a log value with a scripted one per epoch (it runs before the callbacks listed after it).
class Script : public keras::Callback {
 public:
  Script(std::string key, std::vector<double> values) : key_(std::move(key)), values_(std::move(values)) {}
  void on_epoch_end(int epoch, Logs& logs) override { logs[key_] = values_.at(epoch); }

 private:
  std::string key_;
  std::vector<double> values_;
};

// Records the weights at every epoch end.
class Snapshots : public keras::Callback {
 public:
  void on_epoch_end(int, Logs&) override { weights.push_back(model()->get_weights()[0].to_vector<float>()); }
  std::vector<std::vector<float>> weights;
};

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "osprey_callbacks_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace

TEST(Callbacks, HooksRunInKerasOrderAndUserCallbacksComeFirst) {
  class Recorder : public keras::Callback {
   public:
    void on_train_begin(Logs&) override { events.push_back("train_begin"); }
    void on_epoch_begin(int e, Logs&) override { events.push_back("epoch_begin " + std::to_string(e)); }
    void on_train_batch_begin(int b, Logs&) override { events.push_back("batch_begin " + std::to_string(b)); }
    void on_train_batch_end(int b, Logs&) override { events.push_back("batch_end " + std::to_string(b)); }
    void on_test_begin(Logs&) override { events.push_back("test_begin"); }
    void on_test_batch_end(int b, Logs&) override { events.push_back("test_batch_end " + std::to_string(b)); }
    void on_test_end(Logs&) override { events.push_back("test_end"); }
    void on_epoch_end(int e, Logs& logs) override {
      events.push_back("epoch_end " + std::to_string(e));
      logs["custom"] = 7.0;  // later callbacks (History) see it
    }
    void on_train_end(Logs&) override { events.push_back("train_end"); }
    std::vector<std::string> events;
  };
  auto rec = std::make_shared<Recorder>();
  Sequential m = model();
  const Data d = sample_data();
  auto h = m.fit(d.x.slice_rows(0, 20), d.y.slice_rows(0, 20),
                 {.epochs = 1, .batch_size = 10, .verbose = 0, .callbacks = {rec},
                  .validation_data = std::make_pair(d.x.slice_rows(20, 25), d.y.slice_rows(20, 25))});
  EXPECT_EQ(rec->events, (std::vector<std::string>{"train_begin", "epoch_begin 0", "batch_begin 0", "batch_end 0",
                                                   "batch_begin 1", "batch_end 1", "test_begin", "test_batch_end 0",
                                                   "test_end", "epoch_end 0", "train_end"}));
  EXPECT_EQ(h.history.at("custom"), std::vector<double>{7.0});
}

TEST(Callbacks, EarlyStoppingStopsAfterPatienceAndRestoresTheBestWeights) {
  const Data d = sample_data();
  Sequential m = model();
  auto snaps = std::make_shared<Snapshots>();
  auto es = std::make_shared<keras::EarlyStopping>(
      keras::EarlyStoppingOptions{.monitor = "val_loss", .patience = 2, .verbose = 1, .restore_best_weights = true});
  ::testing::internal::CaptureStdout();
  auto h = m.fit(d.x, d.y,
                 {.epochs = 10, .batch_size = 10, .verbose = 0,
                  .callbacks = {std::make_shared<Script>("val_loss", std::vector<double>{1.0, 0.9, 0.95, 0.96, 0.97, 0.5}),
                                snaps, es}});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(h.epoch.size(), 4u);  // epochs 0..3: no improvement at 2 and 3
  EXPECT_EQ(es->stopped_epoch, 3);
  EXPECT_EQ(es->best_epoch, 1);
  EXPECT_THAT(out, HasSubstr("Epoch 4: early stopping\n"));
  EXPECT_THAT(out, HasSubstr("Restoring model weights from the end of the best epoch: 2.\n"));
  EXPECT_EQ(m.get_weights()[0].to_vector<float>(), snaps->weights[1]);
  EXPECT_THROW(keras::EarlyStopping({.monitor = "something"}), ValueError);  // auto mode cannot tell the direction
}

TEST(Callbacks, EarlyStoppingRestoresEvenWithoutStoppingAndHonoursMinDelta) {
  const Data d = sample_data();
  Sequential m = model();
  auto snaps = std::make_shared<Snapshots>();
  auto es = std::make_shared<keras::EarlyStopping>(keras::EarlyStoppingOptions{
      .monitor = "val_loss", .min_delta = 0.2, .patience = 5, .restore_best_weights = true});
  m.fit(d.x, d.y,
        {.epochs = 3, .batch_size = 10, .verbose = 0,
         .callbacks = {std::make_shared<Script>("val_loss", std::vector<double>{1.0, 0.85, 0.7}), snaps, es}});
  EXPECT_EQ(es->stopped_epoch, 0);
  EXPECT_EQ(es->best_epoch, 2);  // 0.85 is not 0.2 better than 1.0; 0.7 is
  EXPECT_EQ(m.get_weights()[0].to_vector<float>(), snaps->weights[2]);
}

TEST(Callbacks, ReduceLROnPlateauReducesAfterPatienceAndLogsTheRate) {
  const Data d = sample_data();
  Sequential m = model();
  ::testing::internal::CaptureStdout();
  auto h = m.fit(d.x, d.y,
                 {.epochs = 5, .batch_size = 10, .verbose = 0,
                  .callbacks = {std::make_shared<Script>("val_loss", std::vector<double>{1.0, 1.0, 1.0, 0.5, 0.5}),
                                std::make_shared<keras::ReduceLROnPlateau>(keras::ReduceLROnPlateauOptions{
                                    .factor = 0.5, .patience = 1, .verbose = 1})}});
  const std::string out = ::testing::internal::GetCapturedStdout();
  // The rate logged at each epoch's end is the one used in that epoch: 0.01, then halved after epochs 1, 2 and 4.
  const auto& lr = h.history.at("learning_rate");
  ASSERT_EQ(lr.size(), 5u);
  EXPECT_NEAR(lr[0], 0.01, 1e-9);
  EXPECT_NEAR(lr[1], 0.01, 1e-9);
  EXPECT_NEAR(lr[2], 0.005, 1e-9);
  EXPECT_NEAR(lr[3], 0.0025, 1e-9);
  EXPECT_NEAR(lr[4], 0.0025, 1e-9);
  EXPECT_NEAR(m.optimizer()->learning_rate(), 0.00125, 1e-9);
  EXPECT_THAT(out, HasSubstr("\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.004999999888241291.\n"));
  EXPECT_THROW(keras::ReduceLROnPlateau({.factor = 1.0}), ValueError);
}

TEST(Callbacks, LearningRateSchedulerAndProgbarShowsTheRateLast) {
  const Data d = sample_data();
  Sequential m = model();
  std::ostringstream unused;
  ::testing::internal::CaptureStdout();
  auto h = m.fit(d.x, d.y,
                 {.epochs = 3, .batch_size = 10, .verbose = 2,
                  .callbacks = {keras::LearningRateScheduler([](int epoch, double lr) { return epoch == 0 ? lr : lr / 10; })}});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NEAR(h.history.at("learning_rate")[2], 0.0001, 1e-9);
  EXPECT_THAT(out, ::testing::ContainsRegex("accuracy: [0-9.]+ - loss: [0-9.]+ - learning_rate: 0\\.0100\n"));
}

TEST(Callbacks, CsvLoggerWritesSortedKeysZeroBasedEpochsAndNA) {
  const Data d = sample_data();
  Sequential m = model();
  const std::string path = temp_path("log.csv");
  m.fit(d.x, d.y, {.epochs = 2, .batch_size = 10, .verbose = 0, .callbacks = {keras::CSVLogger(path)}});
  std::ifstream in(path);
  std::string header, row0, row1;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_EQ(header, "epoch,accuracy,loss,val_accuracy,val_loss");
  EXPECT_THAT(row0, ::testing::MatchesRegex("0,[0-9.e-]+,[0-9.e-]+,NA,NA"));
  EXPECT_THAT(row1, ::testing::StartsWith("1,"));
}

TEST(Callbacks, TerminateOnNaNStopsAtTheFirstBadBatch) {
  const Data d = sample_data();
  Sequential m = model();
  class NaNAt2 : public keras::Callback {
    void on_train_batch_end(int b, Logs& logs) override {
      if (b == 2) logs["loss"] = std::nan("");
    }
  };
  ::testing::internal::CaptureStdout();
  auto h = m.fit(d.x, d.y, {.epochs = 3, .batch_size = 10, .verbose = 0, .callbacks = {NaNAt2(), keras::TerminateOnNaN()}});
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("Batch 2: Invalid loss, terminating training\n"));
  EXPECT_EQ(h.epoch.size(), 1u);
}

TEST(Callbacks, ModelCheckpointSavesTheBestWeightsAtomically) {
  const Data d = sample_data();
  Sequential m = model();
  const std::string pattern = temp_path("ckpt-{epoch:02d}.weights.osp");
  const std::string best = temp_path("best.weights.osp");
  std::filesystem::remove(best);
  auto snaps = std::make_shared<Snapshots>();
  ::testing::internal::CaptureStdout();
  m.fit(d.x, d.y,
        {.epochs = 3, .batch_size = 10, .verbose = 0,
         .callbacks = {std::make_shared<Script>("val_loss", std::vector<double>{0.8, 0.6, 0.7}), snaps,
                       keras::ModelCheckpoint(pattern),
                       keras::ModelCheckpoint(best, {.verbose = 1, .save_best_only = true})}});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(std::filesystem::exists(temp_path("ckpt-01.weights.osp")));
  EXPECT_TRUE(std::filesystem::exists(temp_path("ckpt-03.weights.osp")));
  EXPECT_FALSE(std::filesystem::exists(best + ".tmp"));
  EXPECT_THAT(out, HasSubstr("\nEpoch 1: val_loss improved from None to 0.80000, saving model to " + best + "\n"));
  EXPECT_THAT(out, HasSubstr("\nEpoch 2: val_loss improved from 0.8 to 0.60000, saving model to " + best + "\n"));
  EXPECT_THAT(out, HasSubstr("\nEpoch 3: val_loss did not improve from 0.60000\n"));
  Sequential other = model();
  other.load_weights(best);
  EXPECT_EQ(other.get_weights()[0].to_vector<float>(), snaps->weights[1]);
  EXPECT_THROW(keras::ModelCheckpoint(temp_path("x.h5")), ValueError);
}

TEST(Callbacks, WeightsFileRoundTripAndErrors) {
  Sequential a = model();
  const std::string path = temp_path("w.weights.osp");
  a.save_weights(path);
  Sequential b({layers::Input({3}), layers::Dense(4, "relu"), layers::Dense(1, "sigmoid")});
  b.load_weights(path);
  for (size_t i = 0; i < a.variables().size(); ++i) {
    EXPECT_EQ(a.get_weights()[i].to_vector<float>(), b.get_weights()[i].to_vector<float>());
  }
  EXPECT_THROW(a.save_weights(temp_path("w.bin")), ValueError);
  EXPECT_THROW(a.load_weights(temp_path("missing.weights.osp")), NotFoundError);
  Sequential wider({layers::Input({3}), layers::Dense(5, "relu"), layers::Dense(1, "sigmoid")});
  EXPECT_THAT(
      [&] {
        try {
          wider.load_weights(path);
        } catch (const ValueError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("variable 0 in"));
  EXPECT_THROW(a.set_weights({}), ValueError);
}

// A weights file whose variables come in another order than the model's (a branchy functional model saved before
// model.layers() took Keras's order) lands by name when it names every variable; same-shape layers do not swap.
TEST(Callbacks, WeightsFileInAnotherOrderLoadsByName) {
  auto build = [] {
    auto in = keras::Input({4}, {.name = "x"});
    auto left = layers::Dense(4, "linear", {.name = "left"})(in);
    auto right = layers::Dense(4, "linear", {.name = "right"})(in);
    return std::make_shared<keras::Model>(in, std::vector<keras::KerasTensor>{left, right}, "branches");
  };
  auto a = build();
  const auto vars = a->variables();
  ASSERT_EQ(vars.size(), 4u);
  // The file as the older order wrote it: right's variables first.
  const std::string path = temp_path("reordered.weights.osp");
  {
    std::ofstream out(path, std::ios::binary);
    out.write("OSPREYW1", 8);
    auto put32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
    put32(4);
    for (std::size_t i : {2u, 3u, 0u, 1u}) {
      const std::string& p = vars[i]->path();
      put32(static_cast<uint32_t>(p.size()));
      out.write(p.data(), static_cast<std::streamsize>(p.size()));
      const uint8_t dtype = 0;  // float32
      out.write(reinterpret_cast<const char*>(&dtype), 1);
      const Tensor w = ops::add(vars[i]->value(), Tensor::scalar(static_cast<double>(i + 1))).to("CPU:0");
      put32(static_cast<uint32_t>(w.shape().rank()));
      for (int64_t d : w.shape().dims()) out.write(reinterpret_cast<const char*>(&d), 8);
      out.write(static_cast<const char*>(w.raw_data()), static_cast<std::streamsize>(w.nbytes()));
    }
  }
  auto b = build();
  b->load_weights(path);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(b->variables()[i]->value().to_vector<float>(),
              ops::add(vars[i]->value(), Tensor::scalar(static_cast<double>(i + 1))).to_vector<float>())
        << vars[i]->path();
  }
}

TEST(Callbacks, PredictHooks) {
  class Recorder : public keras::Callback {
   public:
    void on_predict_begin(Logs&) override { events.push_back("begin"); }
    void on_predict_batch_begin(int b, Logs&) override { events.push_back("batch_begin " + std::to_string(b)); }
    void on_predict_batch_end(int b, Logs&) override { events.push_back("batch_end " + std::to_string(b)); }
    void on_predict_end(Logs&) override { events.push_back("end"); }
    std::vector<std::string> events;
  };
  auto rec = std::make_shared<Recorder>();
  Sequential m = model();
  m.predict(sample_data().x.slice_rows(0, 15), {.batch_size = 10, .verbose = 0, .callbacks = {rec}});
  EXPECT_EQ(rec->events, (std::vector<std::string>{"begin", "batch_begin 0", "batch_end 0", "batch_begin 1",
                                                   "batch_end 1", "end"}));
}

TEST(Callbacks, ACallbackPassedByNameIsTheOneFitCallsNotACopy) {
  const Data d = sample_data();
  Sequential m = model();
  keras::EarlyStopping es({.monitor = "loss", .patience = 1});
  Script scripted("loss", {1.0, 1.1, 1.2, 1.3});
  Snapshots collected;  // the user's own callback, collecting values
  m.fit(d.x, d.y, {.epochs = 4, .batch_size = 10, .verbose = 0, .callbacks = {scripted, collected, es}});
  EXPECT_EQ(es.stopped_epoch, 1);  // read from the user's object: fit did not train with a copy
  EXPECT_EQ(collected.weights.size(), 2u);
  EXPECT_EQ(collected.model(), &m);
  // A temporary is moved in and owned by the call.
  m.fit(d.x, d.y, {.epochs = 1, .batch_size = 10, .verbose = 0, .callbacks = {Snapshots()}});
}

TEST(Callbacks, LambdaCallbackAndKerasModuleNames) {
  const Data d = sample_data();
  Sequential m = model();
  std::vector<double> losses;
  int batches = 0;
  keras::callbacks::LambdaCallback lambda({.on_epoch_end = [&](int, Logs& logs) { losses.push_back(logs.at("loss")); },
                                           .on_train_batch_end = [&](int, Logs&) { ++batches; }});
  auto h = m.fit(d.x, d.y, {.epochs = 3, .batch_size = 10, .verbose = 0, .callbacks = {lambda}});
  EXPECT_EQ(losses, h.history["loss"]);
  EXPECT_EQ(batches, 12);
  keras::callbacks::EarlyStopping es({.monitor = "loss"});  // the same class as keras::EarlyStopping
  static_assert(std::is_same_v<keras::callbacks::EarlyStopping, keras::EarlyStopping>);
  static_assert(std::is_same_v<keras::regularizers::Regularizer, keras::layers::Regularizer>);
  EXPECT_EQ(keras::regularizers::L2(0.5).l2, 0.5);
  EXPECT_EQ(keras::constraints::MaxNorm(3.0).max_value, 3.0);
  EXPECT_EQ(keras::initializers::get("ones", {2, 2}).to_vector<float>(), (std::vector<float>{1, 1, 1, 1}));
}
