// PNG files of every bit depth and colour type (issue 17) against Keras 3 (tests/data/png_depths, made with
// tests/data/keras_png.json by tests/keras/keras_png_reference.py): load_img gives Pillow's values (a 16-bit gray
// file keeps its 16-bit values in grayscale and clips at 255 in rgb; tRNS colours compared as Pillow compares them;
// no gamma correction), image_dataset_from_directory TensorFlow's decode_png values, and load_img resizes a 16-bit
// gray file as Pillow's "I;16" resampling does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "test_util.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/image.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = std::string(OSPREY_TEST_DATA_DIR) + "/png_depths";

const json& png_depths_reference(const std::string& name) {
  static const json all = [] {
    std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_png.json");
    return json::parse(in);
  }();
  return all.at(name);
}

// The values that differ, with the first few named.
std::string differences(const std::vector<float>& got, const std::vector<int64_t>& want) {
  if (got.size() != want.size()) return fmt::format("{} values, {} expected", got.size(), want.size());
  std::string out;
  std::size_t off = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == static_cast<float>(want[i])) continue;
    if (++off <= 4) out += fmt::format(" [{}] {} (Keras {})", i, got[i], want[i]);
  }
  return off == 0 ? std::string() : fmt::format("{} values differ:{}", off, out);
}

}  // namespace

TEST(PngDepths, LoadImgGivesPillowsValuesForEveryDepthAndColourType) {
  if (!utils::image_codecs_available()) GTEST_SKIP() << "built without libpng / libjpeg-turbo";
  const json& cases = png_depths_reference("load_img");
  ASSERT_EQ(cases.size(), 57u);
  for (const auto& [key, c] : cases.items()) {
    SCOPED_TRACE(key);
    const auto slash = key.rfind('/');
    const Tensor img = utils::load_img(kRoot + "/" + key.substr(0, slash), key.substr(slash + 1));
    ASSERT_EQ(img.shape(), Shape(c.at("shape").get<std::vector<int64_t>>()));
    EXPECT_EQ(differences(img.to_vector<float>(), c.at("values").get<std::vector<int64_t>>()), "");
  }
  // A 16-bit gray file in grayscale holds values above 255 (Pillow's "I;16"), and in rgb clips them.
  const auto gray = utils::load_img(kRoot + "/gray/g16.png", "grayscale").to_vector<float>();
  EXPECT_GT(*std::max_element(gray.begin(), gray.end()), 255.f);
  const auto rgb = utils::load_img(kRoot + "/gray/g16.png", "rgb").to_vector<float>();
  EXPECT_EQ(*std::max_element(rgb.begin(), rgb.end()), 255.f);
}

TEST(PngDepths, LoadImgResizesSixteenBitGrayAsPillow) {
  if (!utils::image_codecs_available()) GTEST_SKIP() << "built without libpng / libjpeg-turbo";
  const json& cases = png_depths_reference("load_img_resized");
  ASSERT_EQ(cases.size(), 36u);
  for (const auto& c : cases) {
    const auto size = c.at("target_size").get<std::pair<int64_t, int64_t>>();
    SCOPED_TRACE(fmt::format("{}x{} {} keep={}", size.first, size.second, c.at("interpolation").get<std::string>(),
                             c.at("keep_aspect_ratio").get<bool>()));
    const Tensor img = utils::load_img(kRoot + "/gray16_big.png", "grayscale", size, c.at("interpolation"),
                                       c.at("keep_aspect_ratio"));
    ASSERT_EQ(img.shape(), Shape(c.at("shape").get<std::vector<int64_t>>()));
    EXPECT_EQ(differences(img.to_vector<float>(), c.at("values").get<std::vector<int64_t>>()), "");
  }
}

TEST(PngDepths, ImageDatasetGivesTensorFlowsDecodedValues) {
  if (!utils::image_codecs_available()) GTEST_SKIP() << "built without libpng / libjpeg-turbo";
  for (const std::string mode : {"grayscale", "rgb", "rgba"}) {
    SCOPED_TRACE(mode);
    const json& ref = png_depths_reference("dataset").at(mode);
    auto ds = utils::image_dataset_from_directory(
        kRoot, {.color_mode = mode, .batch_size = 4, .image_size = {5, 7}, .shuffle = false, .verbose = false});
    std::vector<std::string> files;
    for (const auto& f : ds->file_paths()) files.push_back(fs::relative(f, kRoot).string());
    ASSERT_EQ(files, ref.at("files").get<std::vector<std::string>>());
    const auto [x, y] = ds->load_all();
    std::vector<int64_t> want;
    for (const float v : osprey::testing::tensor_of(ref.at("images")).to_vector<float>()) {
      want.push_back(static_cast<int64_t>(v));
    }
    const auto got = x.to_vector<float>();
    // Per file, so that a difference names it.
    const std::size_t per = got.size() / files.size();
    for (std::size_t f = 0; f < files.size(); ++f) {
      const std::vector<float> g(got.begin() + static_cast<std::ptrdiff_t>(f * per),
                                 got.begin() + static_cast<std::ptrdiff_t>((f + 1) * per));
      const std::vector<int64_t> w(want.begin() + static_cast<std::ptrdiff_t>(f * per),
                                   want.begin() + static_cast<std::ptrdiff_t>((f + 1) * per));
      EXPECT_EQ(differences(g, w), "") << files[f];
    }
  }
}

TEST(PngDepths, CutSixteenBitFilesAreValueErrorsNamingTheFile) {
  if (!utils::image_codecs_available()) GTEST_SKIP() << "built without libpng / libjpeg-turbo";
  const fs::path dir = fs::temp_directory_path() / fmt::format("osprey_png_cut_{}", ::getpid());
  fs::create_directories(dir / "a");
  std::ifstream in(kRoot + "/gray16_big.png", std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::size_t keep : {std::size_t{20}, std::size_t{40}, whole.size() / 2, whole.size() - 13}) {
    SCOPED_TRACE(keep);
    const std::string path = (dir / "a" / "cut.png").string();
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(whole.data(), static_cast<std::streamsize>(keep));
    for (const std::string mode : {"grayscale", "rgb"}) {
      const std::string what = osprey::testing::error_of([&] { (void)utils::load_img(path, mode); });
      EXPECT_NE(what.find("cut.png"), std::string::npos) << what;
      EXPECT_THROW((void)utils::load_img(path, mode), ValueError);
    }
    auto ds = utils::image_dataset_from_directory(dir.string(), {.image_size = {5, 5}, .verbose = false});
    EXPECT_THROW((void)ds->load_all(), ValueError);
  }
  fs::remove_all(dir);
}
