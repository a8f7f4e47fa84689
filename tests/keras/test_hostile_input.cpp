// Files and inputs made to break a loader (issue 16): each is a typed error with what was wrong, never a crash,
// a hang or a read of something else.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "osprey/errors.h"
#include "osprey/keras.h"

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
