// Files and inputs made to break a loader (issue 16): each is a typed error with what was wrong, never a crash,
// a hang or a read of something else.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <limits>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "keras/saving/zip_store.h"
#include "osprey/errors.h"
#include "test_util.h"
#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
namespace layers = osprey::keras::layers;

TEST(HostileInput, DeeplyNestedJsonIsRefusedNotRecursedInto) {
  // 100 000 nested lists where Keras puts an activation name: a ValueError, not a stack overflow.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string config = R"({"module": "keras", "class_name": "Sequential", "config": {"name": "s", "layers": [)"
                             R"({"module": "keras.layers", "class_name": "Dense", "config": {"units": 2, "activation": )" +
                             deep + "}}]}}";
  try {
    (void)keras::models::model_from_json(config);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("nests deeper than 64 levels"), std::string::npos) << e.what();
  }
}

TEST(HostileInput, LoadWeightsReadsOnlyRegularFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "osprey_hostile";
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "pipe.weights.osp";
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);  // opening it for reading would block until a writer comes
  keras::Sequential m({layers::Input({3}), layers::Dense(2)});
  EXPECT_THROW(m.load_weights(fifo.string()), ValueError);
  EXPECT_THROW(m.load_weights(dir.string() + ".weights.osp"), NotFoundError);  // missing: as before
  std::filesystem::remove(fifo);
}

TEST(HostileInput, ConfigIntegersAreIntegersInRange) {
  auto with_units = [](const std::string& units) {
    return R"({"module": "keras", "class_name": "Sequential", "config": {"name": "s", "layers": [)"
           R"({"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 3]}},)"
           R"({"module": "keras.layers", "class_name": "Dense", "config": {"name": "d", "units": )" +
           units + R"(, "activation": "linear"}}]}})";
  };
  EXPECT_NO_THROW((void)keras::models::model_from_json(with_units("2")));
  for (const char* bad : {"4294967297", "1.5", "true", "0", "-3", "\"2\""}) {
    EXPECT_THROW((void)keras::models::model_from_json(with_units(bad)), ValueError) << bad;
  }
}

// A .keras file whose central directory names an entry twice, or whose local header disagrees with it: Osprey and
// Python's zipfile (Keras) would read different bytes, so it is refused.
TEST(HostileInput, ZipEntriesNamedTwiceOrWithDisagreeingHeadersAreRefused) {
  const auto dir = std::filesystem::temp_directory_path() / "osprey_hostile";
  std::filesystem::create_directories(dir);
  const std::string twice = (dir / "twice.keras").string();
  keras::detail::write_zip(twice, {{"config.json", "{}"}, {"config.json", "[]"}});
  try {
    (void)keras::detail::read_zip(twice);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("appears twice"), std::string::npos) << e.what();
  }
  const std::string patched = (dir / "patched.keras").string();
  keras::detail::write_zip(patched, {{"config.json", "{\"a\": 1}"}});
  std::string bytes;
  {
    std::ifstream in(patched, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes[18] = static_cast<char>(bytes[18] + 1);  // the local header's compressed size
  {
    std::ofstream out(patched, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  EXPECT_THROW((void)keras::detail::read_zip(patched), ValueError);
  std::filesystem::remove(twice);
  std::filesystem::remove(patched);
}

#if OSPREY_HAVE_HDF5_PLUGIN  // test_util.h defines it 0 without the plug-in
// Weights files that would make HDF5 read something else (a soft or external link, external raw storage pointing
// at /etc/passwd) or allocate what the file says (2^31 x 2^31 floats): refused before anything is read or
// allocated, the model unchanged (tests/keras/make_hostile_h5.py makes them).
TEST(HostileInput, WeightsFilesThatReachOutsideThemselvesOrLieAboutSizesAreRefused) {
  const std::string dir = std::string(OSPREY_TEST_DATA_DIR) + "/hostile/";
  random::set_seed(3);
  keras::Sequential m({layers::Input({3}), layers::Dense(2)});
  const auto before = m.get_weights()[0].to_vector<float>();
  for (const char* name : {"soft_link", "external_link", "external_storage", "huge_shape"}) {
    try {
      m.load_weights(dir + name + ".weights.h5");
      FAIL() << name << ": no error";
    } catch (const ValueError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find("root:"), std::string::npos) << name << " read /etc/passwd: " << what;
    }
    EXPECT_EQ(m.get_weights()[0].to_vector<float>(), before) << name;
  }
  m.load_weights(dir + "good.weights.h5");  // the same layout, stored plainly, loads
  EXPECT_EQ(m.get_weights()[0].to_vector<float>(), std::vector<float>(6, 0.5f));
}

// A compiled, never-trained model: the loader builds the optimizer's slots to read the file's, and a file whose
// optimizer part then fails (a slot of the wrong shape) or is skipped (another optimizer's) leaves the optimizer
// unbuilt, as it was; the model still trains afterwards.
TEST(HostileInput, AFailedWeightsLoadLeavesTheOptimizerUnbuilt) {
  const std::string dir = std::string(OSPREY_TEST_DATA_DIR) + "/hostile/";
  random::set_seed(3);
  keras::Sequential m({layers::Input({3}), layers::Dense(2)});
  m.compile({.optimizer = keras::optimizers::Adam(), .loss = "mse"});
  const auto before = m.get_weights()[0].to_vector<float>();
  try {
    m.load_weights(dir + "bad_optimizer_slot.weights.h5");
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer variable 5 is (2,), but the file holds (3)"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(m.optimizer()->built());
  EXPECT_EQ(m.optimizer()->count_params(), 0);  // as before the load: nothing built
  EXPECT_EQ(m.optimizer()->iterations(), 0);
  EXPECT_EQ(m.get_weights()[0].to_vector<float>(), before);
  // Adagrad keeps 1 slot per variable, the file holds Adam's 2: its optimizer part is skipped with Keras's
  // warning (before its bad slot is read), the weights load, the optimizer stays unbuilt.
  keras::Sequential s({layers::Input({3}), layers::Dense(2)});
  s.compile({.optimizer = keras::optimizers::Adagrad(), .loss = "mse"});
  s.load_weights(dir + "bad_optimizer_slot.weights.h5");
  EXPECT_EQ(s.get_weights()[0].to_vector<float>(), std::vector<float>(6, 0.5f));
  EXPECT_FALSE(s.optimizer()->built());
  EXPECT_EQ(s.optimizer()->count_params(), 0);
  m.train_on_batch(Tensor::ones({4, 3}), Tensor::zeros({4, 2}));
  EXPECT_TRUE(m.optimizer()->built());
  EXPECT_EQ(m.optimizer()->iterations(), 1);
}
#endif

TEST(HostileInput, CallbacksAndMetricsFailWithOspreysErrors) {
  EXPECT_THROW(keras::metrics::AUC(1000000000), ValueError);  // 10^9 thresholds: bounded, not an allocation
  keras::Sequential m({layers::Input({3}), layers::Dense(1)});
  m.compile({.optimizer = "sgd", .loss = "mse"});
  // A folder that cannot be made (its parent is a file): PermissionDeniedError with the path, not filesystem_error.
  const auto file = std::filesystem::temp_directory_path() / "osprey_hostile_file";
  { std::ofstream(file) << "x"; }
  keras::ModelCheckpoint checkpoint((file / "sub" / "w.weights.osp").string());
  EXPECT_THROW(m.fit(Tensor::zeros({4, 3}), Tensor::zeros({4, 1}), {.verbose = 0, .callbacks = {checkpoint}}),
               PermissionDeniedError);
  std::filesystem::remove(file);
}

// Step counts and schedule steps from a file stay within what the update arithmetic can add to (iterations + 1,
// step - warmup_steps): a larger value is a ValueError, and the model is left as it was.
TEST(HostileInput, StepCountsThatWouldOverflowAreRefused) {
  keras::Sequential m({layers::Input({3}), layers::Dense(2)});
  m.compile({.optimizer = "adam", .loss = "mse"});
  EXPECT_THROW(m.optimizer()->set_iterations(-1), ValueError);
  EXPECT_THROW(m.optimizer()->set_iterations(std::numeric_limits<int64_t>::max()), ValueError);
  EXPECT_THROW(keras::optimizers::schedules::CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 10,
                                                          .warmup_target = 0.2, .warmup_steps = -5}),
               ValueError);
  if (!OSPREY_HAVE_HDF5_PLUGIN) GTEST_SKIP() << "no HDF5 plug-in";
  const auto before = m.get_weights()[0].to_vector<float>();
  const std::string file = std::string(OSPREY_TEST_DATA_DIR) + "/hostile/huge_iterations.weights.h5";
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.load_weights(file); }),
              ::testing::HasSubstr("9223372036854775807 iterations"));
  EXPECT_EQ(m.get_weights()[0].to_vector<float>(), before);
  EXPECT_EQ(m.optimizer()->iterations(), 0);
}
