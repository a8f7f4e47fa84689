// GIF files through keras.utils.load_img against Keras 3 (tests/data/gif_frames and tests/data/keras_gif.json, made
// by tests/keras/keras_gif_reference.py): Pillow's first frame -- the logical screen's size (grown where the frame
// reaches past it), uncovered pixels in the transparent colour or colour 0, black past a short colour table, gray
// values without one -- where image_dataset_from_directory keeps TensorFlow's (test_image_dataset.cpp).
#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "osprey/keras.h"
#include "osprey/keras/image.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;

TEST(GifFrames, LoadImgGivesPillowsFirstFrame) {
  if (!utils::image_codecs_available() || !utils::bmp_gif_available()) GTEST_SKIP() << "built without giflib";
  std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_gif.json");
  const json ref = json::parse(in);
  std::size_t checked = 0;
  for (const auto& [key, c] : ref.items()) {
    const auto slash = key.rfind('/');
    const std::string file = key.substr(0, slash), mode = key.substr(slash + 1);
    if (mode == "pillow") continue;
    SCOPED_TRACE(key);
    const Tensor img = utils::load_img(std::string(OSPREY_TEST_DATA_DIR) + "/gif_frames/" + file, mode);
    ASSERT_EQ(img.shape(), Shape(c.at("shape").get<std::vector<int64_t>>()));
    const auto got = img.to_vector<float>();
    const auto want = c.at("values").get<std::vector<int64_t>>();
    std::size_t off = 0;
    std::string first;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (got[i] == static_cast<float>(want[i])) continue;
      if (off++ == 0) first = fmt::format("value {}: {} (Keras {})", i, got[i], want[i]);
    }
    EXPECT_EQ(off, 0u) << first;
    ++checked;
  }
  EXPECT_EQ(checked, 24u);
}
