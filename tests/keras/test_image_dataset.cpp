// Images from disk (issue 17): image_dataset_from_directory against Keras 3 on tests/data/images (made by
// tests/keras/keras_images_reference.py: PNG and JPEG, grayscale and alpha, a nested folder), load_img/save_img,
// and bad files and folders as typed errors.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "test_util.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/image.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

#define SKIP_WITHOUT_CODECS() \
  if (!utils::image_codecs_available()) GTEST_SKIP() << "built without libpng / libjpeg-turbo"

namespace {

const std::string kImages = std::string(OSPREY_TEST_DATA_DIR) + "/images";

const json& reference(const std::string& name) {
  static const json all = [] {
    std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_images.json");
    return json::parse(in);
  }();
  return all.at(name);
}

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("osprey_images_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

}  // namespace

TEST(ImageDataset, MatchesKerasFilesLabelsAndPixels) {
  SKIP_WITHOUT_CODECS();
  struct Case {
    const char* name;
    utils::ImageDatasetOptions options;
  };
  const std::vector<Case> cases{
      {"bilinear", {.batch_size = 4, .image_size = {6, 4}, .shuffle = false, .verbose = false}},
      {"nearest", {.batch_size = 4, .image_size = {6, 4}, .shuffle = false, .interpolation = "nearest", .verbose = false}},
      {"grayscale", {.label_mode = "categorical", .color_mode = "grayscale", .batch_size = 4, .image_size = {6, 4},
                     .shuffle = false, .verbose = false}},
      {"crop", {.batch_size = 4, .image_size = {6, 4}, .shuffle = false, .crop_to_aspect_ratio = true,
                .verbose = false}},
      {"mitchellcubic", {.batch_size = 4, .image_size = {6, 4}, .shuffle = false, .interpolation = "mitchellcubic",
                         .verbose = false}},
      {"area", {.batch_size = 4, .image_size = {6, 4}, .shuffle = false, .interpolation = "area",
                .crop_to_aspect_ratio = true, .verbose = false}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const json& ref = reference(c.name);
    auto ds = utils::image_dataset_from_directory(kImages, c.options);
    EXPECT_EQ(ds->class_names(), ref.at("class_names").get<std::vector<std::string>>());
    std::vector<std::string> files;
    for (const auto& f : ds->file_paths()) files.push_back(fs::relative(f, kImages).string());
    EXPECT_EQ(files, ref.at("files").get<std::vector<std::string>>());
    EXPECT_EQ(ds->num_batches(), 2);
    const auto [x, y] = ds->load_all();
    // PNG decodes exactly; the JPEG (file 3) within one level of the 0..255 scale (the DCT's rounding), and so does
    // a colour PNG read as grayscale (TensorFlow's libpng rounds a few pixels of the weighted sum up).
    const auto got = x.to_vector<float>(), want = osprey::testing::tensor_of(ref.at("images")).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    const std::size_t per = got.size() / 6;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const bool level = i / per == 3 || c.options.color_mode == "grayscale";
      ASSERT_NEAR(got[i], want[i], level ? 1.01 : 1e-3) << "value " << i << " of file " << i / per;
    }
    osprey::testing::expect_close(y.cast(DType::float32), ref.at("labels"), 0, "labels");
    const auto [bx, by] = ds->get_batch(1);
    EXPECT_EQ(bx.shape(), Shape({2, 6, 4, c.options.color_mode == "grayscale" ? 1 : 3}));
  }
  EXPECT_THROW((void)utils::image_dataset_from_directory(kImages, {.interpolation = "cubic", .verbose = false}),
               ValueError);
}

TEST(ImageDataset, ShufflesValidationSplitsAndTrains) {
  SKIP_WITHOUT_CODECS();
  utils::ImageDatasetOptions o{.batch_size = 2, .image_size = {8, 8}, .seed = 3, .validation_split = 0.34,
                               .subset = "training", .verbose = false};
  auto train = utils::image_dataset_from_directory(kImages, o);
  o.subset = "validation";
  auto val = utils::image_dataset_from_directory(kImages, o);
  EXPECT_EQ(train->file_paths().size(), 4u);  // int(0.34 * 6) = 2 for validation, as Keras
  EXPECT_EQ(val->file_paths().size(), 2u);
  std::set<std::string> all(train->file_paths().begin(), train->file_paths().end());
  all.insert(val->file_paths().begin(), val->file_paths().end());
  EXPECT_EQ(all.size(), 6u);  // disjoint and complete
  // subset="both": the same two subsets from one call; the validation subset keeps its order between epochs.
  o.subset = "both";
  EXPECT_THROW(utils::image_dataset_from_directory(kImages, o), ValueError);
  auto [train2, val2] = utils::image_dataset_from_directory_split(kImages, o);
  EXPECT_EQ(train2->file_paths(), train->file_paths());
  EXPECT_EQ(val2->file_paths(), val->file_paths());
  val2->on_epoch_end();
  EXPECT_EQ(val2->file_paths(), val->file_paths());
  EXPECT_THROW(utils::image_dataset_from_directory_split(kImages, {.seed = 3, .verbose = false}), ValueError);
  // The same seed, the same split; each epoch a new order of the same files.
  auto again = utils::image_dataset_from_directory(kImages, {.batch_size = 2, .image_size = {8, 8}, .seed = 3,
                                                             .validation_split = 0.34, .subset = "training",
                                                             .verbose = false});
  EXPECT_EQ(again->file_paths(), train->file_paths());
  auto before = train->file_paths();
  train->on_epoch_end();
  auto after = train->file_paths();
  EXPECT_EQ(std::set<std::string>(before.begin(), before.end()), std::set<std::string>(after.begin(), after.end()));
  // fit() takes the dataset; validation from load_all().
  Sequential m({layers::Input({8, 8, 3}), layers::Rescaling(1.0 / 255), layers::Conv2D(4, 3), layers::Flatten(),
                layers::Dense(3, "softmax")});
  m.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  const auto [vx, vy] = val->load_all();
  const auto h = m.fit(*train, {.epochs = 2, .verbose = 0, .validation_data = {vx, vy}});
  EXPECT_EQ(h.history.at("loss").size(), 2u);
  EXPECT_EQ(h.history.at("val_loss").size(), 2u);
}

TEST(ImageDataset, BadFilesAndFoldersAreTypedErrorsNamingThem) {
  SKIP_WITHOUT_CODECS();
  auto error = [](auto&& f) { return osprey::testing::error_of(f); };
  // An empty directory, a missing one, options Keras refuses.
  const fs::path empty = scratch("empty");
  fs::create_directories(empty / "cls");
  EXPECT_THAT(error([&] { utils::image_dataset_from_directory(empty.string(), {.verbose = false}); }),
              HasSubstr("No images found in directory"));
  EXPECT_THROW(utils::image_dataset_from_directory("/nonexistent/osprey", {.verbose = false}), ValueError);
  EXPECT_THAT(error([&] { utils::image_dataset_from_directory(kImages, {.label_mode = "binary", .verbose = false}); }),
              HasSubstr("exactly 2 class_names"));
  EXPECT_THAT(error([&] {
                utils::image_dataset_from_directory(kImages, {.validation_split = 0.2, .subset = "training", .verbose = false});
              }),
              HasSubstr("you must provide a `seed`"));
  EXPECT_THAT(error([&] { utils::image_dataset_from_directory(kImages, {.class_names = {"cat", "emu"}, .verbose = false}); }),
              HasSubstr("did not match the names of the subdirectories"));
  EXPECT_THAT(error([&] { utils::image_dataset_from_directory(kImages, {.color_mode = "rgba", .verbose = false})->load_all(); }),
              HasSubstr("JPEG does not support 4 channels"));
  // A truncated PNG, a text file named .jpg, a JPEG cut short: ValueErrors naming the file, when the batch is read.
  const fs::path bad = scratch("bad");
  fs::create_directories(bad / "a");
  std::ifstream png(kImages + "/cat/b.png", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(png)), std::istreambuf_iterator<char>());
  std::ofstream(bad / "a" / "cut.png", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_THAT(error([&] { (void)utils::load_img((bad / "a" / "cut.png").string()); }), HasSubstr("cut.png"));
  EXPECT_THROW((void)utils::load_img((bad / "a" / "cut.png").string()), ValueError);
  std::ofstream(bad / "a" / "text.jpg") << "hello, not a JPEG\n";
  EXPECT_THAT(error([&] { (void)utils::load_img((bad / "a" / "text.jpg").string()); }),
              HasSubstr("neither a PNG nor a JPEG"));
  std::ifstream jpg(kImages + "/dog/d.jpg", std::ios::binary);
  std::string jbytes((std::istreambuf_iterator<char>(jpg)), std::istreambuf_iterator<char>());
  std::ofstream(bad / "a" / "cut.jpg", std::ios::binary) << jbytes.substr(0, jbytes.size() / 2);
  EXPECT_THROW((void)utils::load_img((bad / "a" / "cut.jpg").string()), ValueError);
  auto ds = utils::image_dataset_from_directory(bad.string(), {.shuffle = false, .verbose = false});
  EXPECT_THROW((void)ds->get_batch(0), ValueError);
  EXPECT_THROW((void)utils::load_img("/nonexistent/osprey.png"), NotFoundError);
  // A PNG header claiming a huge image: refused before any pixel buffer is allocated.
  std::string huge = bytes.substr(0, 33);
  huge[16] = huge[17] = huge[20] = huge[21] = '\x7f';  // width and height ~2^30
  std::ofstream(bad / "huge.png", std::ios::binary) << huge;
  EXPECT_THROW((void)utils::load_img((bad / "huge.png").string()), ValueError);
  // A BMP is listed (a Keras format) but named as not decoded.
  fs::create_directories(bad / "b");
  std::ofstream(bad / "b" / "x.bmp") << "BM";
  EXPECT_THAT(error([&] { utils::image_dataset_from_directory(bad.string(), {.verbose = false}); }),
              HasSubstr("BMP or GIF"));
}

TEST(ImageDataset, SaveImgAndLoadImgRoundTrip) {
  SKIP_WITHOUT_CODECS();
  const fs::path dir = scratch("roundtrip");
  std::vector<float> v;
  for (int i = 0; i < 5 * 7 * 3; ++i) v.push_back(static_cast<float>((i * 37) % 256));
  const Tensor img = Tensor::from_vector(v, Shape({5, 7, 3}));
  utils::save_img((dir / "x.png").string(), img);
  EXPECT_EQ(utils::load_img((dir / "x.png").string()).to_vector<float>(), v);  // PNG is lossless
  EXPECT_EQ(utils::load_img((dir / "x.png").string(), "rgb", std::pair<int64_t, int64_t>{10, 14}).shape(),
            Shape({10, 14, 3}));
  EXPECT_EQ(utils::load_img((dir / "x.png").string(), "grayscale").shape(), Shape({5, 7, 1}));
  utils::save_img((dir / "x.jpg").string(), img);
  EXPECT_EQ(utils::load_img((dir / "x.jpg").string()).shape(), Shape({5, 7, 3}));
  EXPECT_THROW(utils::save_img((dir / "y.png").string(), Tensor::zeros({5, 7})), ValueError);
  EXPECT_THROW(utils::save_img("/nonexistent/dir/y.png", img), NotFoundError);
}
