// Images from disk (issue 17): image_dataset_from_directory against Keras 3 on tests/data/images and
// tests/data/images_bmp_gif (made by tests/keras/keras_images_reference.py: PNG and JPEG, grayscale and alpha, a
// nested folder; BMP and GIF), Keras's seeded splits, load_img/save_img, and bad files and folders as typed errors.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <filesystem>
#include <optional>

#include <fmt/format.h>
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
#define SKIP_WITHOUT_BMP_GIF() \
  if (!utils::image_codecs_available() || !utils::bmp_gif_available()) GTEST_SKIP() << "built without giflib / stb"

namespace {

const std::string kImages = std::string(OSPREY_TEST_DATA_DIR) + "/images";

const json& image_dataset_reference(const std::string& name) {
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
    const json& ref = image_dataset_reference(c.name);
    auto ds = utils::image_dataset_from_directory(kImages, c.options);
    EXPECT_EQ(ds->class_names(), ref.at("class_names").get<std::vector<std::string>>());
    std::vector<std::string> files;
    for (const auto& f : ds->file_paths()) files.push_back(fs::relative(f, kImages).string());
    EXPECT_EQ(files, ref.at("files").get<std::vector<std::string>>());
    EXPECT_EQ(ds->num_batches(), 2);
    const auto [x, y] = ds->load_all();
    // PNG decodes exactly (grayscale too: TensorFlow's own libpng transforms); the JPEG (file 3) within one level
    // of the 0..255 scale (the DCT's rounding).
    const auto got = x.to_vector<float>(), want = osprey::testing::tensor_of(ref.at("images")).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    const std::size_t per = got.size() / 6;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], i / per == 3 ? 1.01 : 1e-3) << "value " << i << " of file " << i / per;
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
              HasSubstr("not a PNG, JPEG, BMP or GIF image"));
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
  // A BMP cut to its magic bytes is listed (a Keras format) and fails, named, when its batch is read.
  const fs::path bmp = scratch("bad_bmp");
  fs::create_directories(bmp / "b");
  std::ofstream(bmp / "b" / "x.bmp") << "BM";
  auto listed = utils::image_dataset_from_directory(bmp.string(), {.verbose = false});
  EXPECT_EQ(listed->file_paths().size(), 1u);
  EXPECT_THAT(error([&] { (void)listed->get_batch(0); }), HasSubstr("x.bmp"));
  EXPECT_THROW((void)listed->get_batch(0), ValueError);
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

namespace {

const std::string kBmpGif = std::string(OSPREY_TEST_DATA_DIR) + "/images_bmp_gif";

std::vector<float> flat(const json& nested) { return osprey::testing::tensor_of(nested).cast(DType::float32).to_vector<float>(); }

}  // namespace

// Each BMP and GIF decodes (load_img) to tf.io.decode_image's values exactly where Pillow's are the same (a GIF's
// first frame: interlaced, animated), except where TensorFlow passes a BMP's 8-bit colour indices through: there
// Osprey applies the palette, as Pillow does. A GIF with a transparent index or a frame off the screen loads as
// Pillow's (test_gif_frames.cpp) and reaches TensorFlow's values through the dataset (BmpAndGifFoldersMatchKeras).
TEST(ImageDataset, BmpAndGifDecodeAsTensorFlow) {
  SKIP_WITHOUT_BMP_GIF();
  const json& all = image_dataset_reference("bmp_gif_decoded");
  ASSERT_EQ(all.size(), 11u);
  for (const auto& [name, entry] : all.items()) {
    SCOPED_TRACE(name);
    const std::string path = kBmpGif + "/" + name;
    const Tensor rgb = utils::load_img(path);
    const std::vector<float> want = flat(entry.at("rgb"));
    if (name == "gif/transparent.gif" || name == "gif/offset.gif") {  // TensorFlow's black pixels, Pillow's colours
      EXPECT_NE(rgb.to_vector<float>(), want);
      continue;
    }
    ASSERT_EQ(rgb.to_vector<float>(), want);
    if (entry.contains("tf_rgb")) {
      EXPECT_NE(flat(entry.at("tf_rgb")), want);  // the palette file: TensorFlow's values differ
    }
    if (entry.contains("rgba")) {
      EXPECT_EQ(utils::load_img(path, "rgba").to_vector<float>(), flat(entry.at("rgba")));
    }
    // Grayscale (TensorFlow refuses it for BMP and GIF; load_img converts as Pillow's "L": 601-2 luma, rounded).
    const auto gray = utils::load_img(path, "grayscale").to_vector<float>();
    ASSERT_EQ(gray.size() * 3, want.size());
    for (std::size_t i = 0; i < gray.size(); ++i) {
      const auto r = static_cast<unsigned>(want[3 * i]), g = static_cast<unsigned>(want[3 * i + 1]),
                 b = static_cast<unsigned>(want[3 * i + 2]);
      ASSERT_EQ(gray[i], static_cast<float>((19595u * r + 38470u * g + 7471u * b + 0x8000u) >> 16)) << "pixel " << i;
    }
  }
  // A GIF as rgba: alpha 0 at the transparent index (TensorFlow refuses 4 channels for GIF), 255 elsewhere.
  const auto rgba = utils::load_img(kBmpGif + "/gif/transparent.gif", "rgba").to_vector<float>();
  const auto alpha = flat(all.at("gif/transparent.gif").at("alpha"));
  ASSERT_EQ(rgba.size(), alpha.size() * 4);
  for (std::size_t i = 0; i < alpha.size(); ++i) EXPECT_EQ(rgba[4 * i + 3], 255.f * alpha[i]) << "pixel " << i;
  // The first frame moved 2 pixels right, past the 5-pixel screen: Pillow's canvas grows to 7 columns and its
  // uncovered left columns take colour 0, opaque (TensorFlow's are black with alpha 0).
  const auto offset = utils::load_img(kBmpGif + "/gif/offset.gif", "rgba");
  EXPECT_EQ(offset.shape(), Shape({6, 7, 4}));
  EXPECT_EQ(offset.to_vector<float>()[3], 255.f);
}

TEST(ImageDataset, BmpAndGifFoldersMatchKeras) {
  SKIP_WITHOUT_BMP_GIF();
  for (const std::string interpolation : {"bilinear", "nearest"}) {
    SCOPED_TRACE(interpolation);
    const json& ref = image_dataset_reference(interpolation == "nearest" ? "bmp_gif_nearest" : "bmp_gif_rgb");
    auto ds = utils::image_dataset_from_directory(
        kBmpGif, {.batch_size = 3, .image_size = {6, 4}, .shuffle = false, .interpolation = interpolation,
                  .verbose = false});
    EXPECT_EQ(ds->class_names(), ref.at("class_names").get<std::vector<std::string>>());
    std::vector<std::string> files;
    for (const auto& f : ds->file_paths()) files.push_back(fs::relative(f, kBmpGif).string());
    // Keras's walk: bmp/z.BMP (upper-case extension) before bmp/sub/late.bmp (a deeper folder).
    EXPECT_EQ(files, ref.at("files").get<std::vector<std::string>>());
    const auto [x, y] = ds->load_all();
    osprey::testing::expect_close(y.cast(DType::float32), ref.at("labels"), 0, "labels");
    const auto got = x.to_vector<float>(), want = flat(ref.at("images"));
    ASSERT_EQ(got.size(), want.size());
    const std::size_t per = 6 * 4 * 3;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (files[i / per] == "palette/colours.bmp") continue;  // TensorFlow's indices, Osprey's colours (above)
      ASSERT_NEAR(got[i], want[i], 1e-3) << "value " << i << " of " << files[i / per];
    }
  }
}

// The same seed gives Keras's training and validation files: NumPy's RandomState shuffle of Keras's listing.
TEST(ImageDataset, SeededSplitsAreKerasSplits) {
  SKIP_WITHOUT_CODECS();
  const json& ref = image_dataset_reference("splits");
  const fs::path dir = scratch("splits");
  for (const auto& rel : ref.at("files")) {
    const fs::path p = dir / rel.get<std::string>();
    fs::create_directories(p.parent_path());
    std::ofstream(p).flush();
  }
  int checked = 0;
  for (const uint64_t seed : {0ull, 1ull, 1337ull, 123456ull, 4294967295ull}) {
    for (const std::string subset : {"training", "validation"}) {
      SCOPED_TRACE(std::to_string(seed) + "/" + subset);
      auto ds = utils::image_dataset_from_directory(dir.string(), {.seed = seed, .validation_split = 0.3,
                                                                   .subset = subset, .verbose = false});
      std::vector<std::string> files;
      for (const auto& f : ds->file_paths()) files.push_back(fs::relative(f, dir).string());
      EXPECT_EQ(files, ref.at(std::to_string(seed) + "/" + subset).get<std::vector<std::string>>());
      // Each label is still its file's folder (the labels were shuffled with the files).
      for (std::size_t i = 0; i < files.size(); ++i) {
        EXPECT_EQ(ds->class_names()[static_cast<std::size_t>(ds->labels()[i])], files[i].substr(0, files[i].find('/')));
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 10);
  EXPECT_THAT(osprey::testing::error_of([&] {
                utils::image_dataset_from_directory(dir.string(), {.seed = 4294967296ull, .verbose = false});
              }),
              HasSubstr("Seed must be between 0 and 2**32 - 1"));
  // Without a seed (and without a split) each call draws one, as Keras: the files are all there, in some order.
  auto unseeded = utils::image_dataset_from_directory(dir.string(), {.verbose = false});
  EXPECT_EQ(unseeded->file_paths().size(), ref.at("files").size());
}

TEST(ImageDataset, HostileBmpAndGifFilesAreValueErrors) {
  SKIP_WITHOUT_BMP_GIF();
  auto error = [](auto&& f) { return osprey::testing::error_of(f); };
  const fs::path bad = scratch("hostile_bmp_gif");
  const auto bytes_of = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const auto write = [&](const std::string& name, const std::string& data) {
    std::ofstream(bad / name, std::ios::binary) << data;
    return (bad / name).string();
  };
  const std::string bmp = bytes_of(kBmpGif + "/bmp/rgb.bmp"), gif = bytes_of(kBmpGif + "/gif/interlaced.gif");
  // Truncated files.
  EXPECT_THAT(error([&] { (void)utils::load_img(write("cut.bmp", bmp.substr(0, 60))); }), HasSubstr("cut.bmp"));
  EXPECT_THROW((void)utils::load_img(write("cut.gif", gif.substr(0, gif.size() / 2))), ValueError);
  EXPECT_THROW((void)utils::load_img(write("head.gif", gif.substr(0, 13))), ValueError);
  // Headers claiming huge images: refused before pixels are allocated.
  std::string huge_bmp = bmp;
  huge_bmp[18] = huge_bmp[19] = huge_bmp[22] = huge_bmp[23] = '\xff';  // width, height ~65535
  huge_bmp[20] = huge_bmp[24] = '\x00';
  EXPECT_THROW((void)utils::load_img(write("huge.bmp", huge_bmp)), ValueError);
  // The first frame's descriptor: after the header, the global colour table and any extension blocks.
  const std::size_t table = (gif[10] & 0x80) ? std::size_t{3} << ((gif[10] & 7) + 1) : 0;
  std::size_t desc = 13 + table;
  while (gif.at(desc) == '\x21') {
    desc += 2;
    while (gif.at(desc) != 0) desc += static_cast<unsigned char>(gif[desc]) + 1u;
    ++desc;
  }
  ASSERT_EQ(gif.at(desc), '\x2c');
  std::string huge_gif = gif;
  huge_gif[desc + 5] = huge_gif[desc + 6] = huge_gif[desc + 7] = huge_gif[desc + 8] = '\xff';  // 65535 x 65535
  EXPECT_THAT(error([&] { (void)utils::load_img(write("huge.gif", huge_gif)); }), HasSubstr("not loaded"));
  // A GIF with no frame at all (header, colour table, trailer).
  EXPECT_THROW((void)utils::load_img(write("empty.gif", gif.substr(0, 13 + table) + ";")), ValueError);
}

// keras.utils.load_img's values exactly: Pillow's decoding (JPEG's accurate DCT), its "L" and "RGBA" conversions,
// and Image.resize for each filter, up and down, with and without keep_aspect_ratio (RGBA premultiplied).
TEST(ImageDataset, LoadImgMatchesKerasPillowValues) {
  SKIP_WITHOUT_BMP_GIF();
  const json& cases = image_dataset_reference("load_img");
  ASSERT_GT(cases.size(), 300u);
  std::size_t resized = 0;
  for (const auto& c : cases) {
    std::optional<std::pair<int64_t, int64_t>> size;
    if (!c.at("target_size").is_null()) size = c.at("target_size").get<std::pair<int64_t, int64_t>>();
    const std::string what = fmt::format("{} {} {} {} keep={}", c.at("file").get<std::string>(),
                                         c.at("color_mode").get<std::string>(), c.at("target_size").dump(),
                                         c.at("interpolation").get<std::string>(), c.at("keep_aspect_ratio").get<bool>());
    SCOPED_TRACE(what);
    const Tensor img = utils::load_img(std::string(OSPREY_TEST_DATA_DIR) + "/" + c.at("file").get<std::string>(),
                                       c.at("color_mode"), size, c.at("interpolation"), c.at("keep_aspect_ratio"));
    ASSERT_EQ(img.shape(), Shape(c.at("shape").get<std::vector<int64_t>>()));
    const auto got = img.to_vector<float>();
    const auto want = c.at("values").get<std::vector<int64_t>>();
    std::size_t off = 0;
    for (std::size_t i = 0; i < got.size(); ++i) off += got[i] != static_cast<float>(want[i]);
    ASSERT_EQ(off, 0u) << "values that differ from Keras's";
    resized += size.has_value();
  }
  EXPECT_GT(resized, 250u);
  // Keras's message for a filter Pillow does not have; a target size that is not positive.
  const std::string png = kImages + "/cat/a.png";
  EXPECT_THAT(osprey::testing::error_of([&] { (void)utils::load_img(png, "rgb", std::pair<int64_t, int64_t>{4, 4}, "cubic"); }),
              HasSubstr("Invalid interpolation method cubic specified. Supported methods are nearest"));
  EXPECT_THROW((void)utils::load_img(png, "rgb", std::pair<int64_t, int64_t>{0, 4}), ValueError);
  EXPECT_THROW((void)utils::load_img(png, "rgb", std::pair<int64_t, int64_t>{1 << 20, 1 << 20}), ValueError);
  EXPECT_THROW((void)utils::load_img(png, "rgb", std::pair<int64_t, int64_t>{int64_t{1} << 62, 4}), ValueError);
}
