// The progress output of fit(), byte for byte where Keras 3.15 fixes it (spec/keras_api.md §5).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
namespace layers = osprey::keras::layers;

static std::string fit_output(int verbose, int epochs) {
  random::set_seed(11);
  Tensor x = random::uniform({100, 4});
  Tensor y = random::randint(0, 2, {100, 1}).cast(float32);
  keras::Sequential model({layers::Input({4}), layers::Dense(8, "relu"), layers::Dense(1, "sigmoid")});
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  ::testing::internal::CaptureStdout();
  model.fit(x, y, {.epochs = epochs, .batch_size = 32, .verbose = verbose});
  return ::testing::internal::GetCapturedStdout();
}

TEST(Progbar, VerboseZeroIsSilent) { EXPECT_EQ(fit_output(0, 2), ""); }

TEST(Progbar, VerboseTwoPrintsOneLinePerEpoch) {
  const std::string out = fit_output(2, 2);
  std::regex line(R"(Epoch 1/2\n4/4 - \d+s - \d+(us|ms|s)/step - accuracy: \d\.\d{4} - loss: \d\.\d{4}\n)"
                  R"(Epoch 2/2\n4/4 - \d+s - \d+(us|ms|s)/step - accuracy: \d\.\d{4} - loss: \d\.\d{4}\n)");
  EXPECT_TRUE(std::regex_match(out, line)) << out;
}

TEST(Progbar, VerboseOneFinalLineHasKerasLayout) {
  const std::string out = fit_output(1, 1);
  EXPECT_EQ(out.find("Epoch"), std::string::npos);  // only printed when epochs > 1
  const std::string bar20 = [] {
    std::string s;
    for (int i = 0; i < 20; ++i) s += "\u2501";
    return s;
  }();
  const std::string final_prefix = "\r\x1b[1m4/4\x1b[0m \x1b[32m" + bar20 + "\x1b[0m\x1b[37m\x1b[0m \x1b[1m";
  auto pos = out.rfind(final_prefix);
  ASSERT_NE(pos, std::string::npos) << out;
  std::string tail = out.substr(pos + final_prefix.size());
  std::regex rest(R"(\d+s\x1b\[0m \d+(us|ms|s)/step - accuracy: \d\.\d{4} - loss: \d\.\d{4} *\n)");
  EXPECT_TRUE(std::regex_match(tail, rest)) << tail;
  EXPECT_EQ(out.back(), '\n');
}

TEST(Progbar, ValuesFormat) {
  std::ostringstream os;
  keras::Progbar bar(32, 2, os);
  bar.update(32, {{"loss", 6.9e-4}, {"accuracy", 0.53}, {"neg", -0.5}}, true);
  EXPECT_NE(os.str().find(" - accuracy: 0.5300 - loss: 6.9000e-04 - neg: -5.0000e-01\n"), std::string::npos)
      << os.str();
}
