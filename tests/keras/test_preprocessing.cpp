// Normalization, RandomContrast, RandomCrop, UpSampling2D's bilinear interpolation and Resizing's
// pad_to_aspect_ratio against Keras 3 (tests/keras/keras_preprocess_reference.py regenerates
// tests/data/keras_preprocess.json): forward values, gradients where they flow, adapt() on arrays and on batches,
// configs, bad arguments.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "test_util.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;

namespace {

const json& preprocessing_reference() {
  static const json ref = osprey::testing::read_reference("keras_preprocess.json");
  return ref;
}

// y = layer(x) and d sum(y · w) / dx.
std::pair<Tensor, Tensor> forward_and_grad(Layer& layer, const Tensor& x, const Tensor& w) {
  GradientTape tape;
  tape.watch(x);
  const Tensor y = layer(x);
  const Tensor loss = ops::reduce_sum(ops::mul(y, w));
  return {y, tape.gradient(loss, std::vector<Tensor>{x})[0]};
}

class Batches : public utils::PyDataset {
 public:
  explicit Batches(std::vector<Tensor> b) : b_(std::move(b)) {}
  int64_t num_batches() const override { return static_cast<int64_t>(b_.size()); }
  std::pair<Tensor, Tensor> get_batch(int64_t i) override { return {b_[static_cast<std::size_t>(i)], Tensor()}; }

 private:
  std::vector<Tensor> b_;
};

}  // namespace

TEST(Preprocessing, NormalizationAdaptsAndNormalisesAsKerasForEveryAxisForm) {
  const json& ref = preprocessing_reference().at("normalization");
  const Tensor x = tensor_of(ref.at("x")), probe = tensor_of(ref.at("probe"));
  for (const auto& c : ref.at("cases")) {
    const auto axis = c.at("axis").get<std::vector<int>>();
    SCOPED_TRACE("axis " + c.at("axis").dump());
    layers::Normalization norm({.axis = axis});
    norm.adapt(x);
    expect_close(norm.mean(), c.at("mean"), 1e-5, "mean");
    expect_close(norm.variance(), c.at("variance"), 1e-5, "variance");
    const auto [y, g] = forward_and_grad(norm, probe, tensor_of(c.at("w")));
    expect_close(y, c.at("y"), 1e-5, "y");
    expect_close(g, c.at("grad"), 1e-5, "gradient");
    // Over batches, merged as Keras merges them; a PyDataset's inputs the same.
    const std::vector<Tensor> parts{ops::slice_axis(x, 0, 0, 7), ops::slice_axis(x, 0, 7, 9), ops::slice_axis(x, 0, 16, 4)};
    layers::Normalization batched({.axis = axis});
    batched.adapt(parts);
    expect_close(batched.mean(), c.at("batched_mean"), 1e-5, "batched mean");
    expect_close(batched.variance(), c.at("batched_variance"), 1e-5, "batched variance");
    Batches ds(parts);
    layers::Normalization from_ds({.axis = axis});
    from_ds.adapt(ds);
    EXPECT_EQ(from_ds.mean().to_vector<float>(), batched.mean().to_vector<float>());
  }
  // Given values (a variance below epsilon² divides by epsilon), and invert.
  layers::Normalization given({.mean = Tensor::from_vector(std::vector<float>{1.f, -2.f, .5f}, Shape({3})),
                               .variance = Tensor::from_vector(std::vector<float>{4.f, .25f, 1e-16f}, Shape({3}))});
  expect_close(given(probe), ref.at("given"), 1e-5, "given");
  const json cfg = json::parse(given.get_config());
  for (const char* k : {"axis", "mean", "variance", "invert"}) {
    const json& want = ref.at("given_config").at(k);
    if (want.is_array() && !want.empty() && want[0].is_number_float()) {
      for (std::size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(cfg.at(k)[i].get<float>(), want[i].get<float>()) << k;
    } else {
      EXPECT_EQ(cfg.at(k), want) << k;
    }
  }
  layers::Normalization inverted({.mean = Tensor::scalar(2.0), .variance = Tensor::scalar(9.0), .invert = true});
  expect_close(inverted(probe), ref.at("inverted"), 1e-5, "inverted");
}

TEST(Preprocessing, NormalizationInAModelSavesItsStatistics) {
  SKIP_WITHOUT_HDF5();
  const Tensor x = tensor_of(preprocessing_reference().at("normalization").at("x"));
  auto norm = std::make_shared<layers::Normalization>();
  norm->adapt(x);
  Sequential m({layers::Input({4, 3}), norm, layers::Flatten(), layers::Dense(1)});
  const std::string dir = ::testing::TempDir() + "/osprey_normalization";
  std::filesystem::create_directories(dir);
  m.save(dir + "/m.keras");
  auto again = models::load_model(dir + "/m.keras");
  EXPECT_EQ(again->predict(x, {.verbose = 0}).to_vector<float>(), m.predict(x, {.verbose = 0}).to_vector<float>());
}

TEST(Preprocessing, NormalizationIsNotTrainedAndRefusesBadInput) {
  const json& ref = preprocessing_reference().at("normalization");
  const Tensor x = tensor_of(ref.at("x"));
  auto norm = std::make_shared<layers::Normalization>();
  norm->adapt(x);
  Sequential m({layers::Input({4, 3}), norm, layers::Flatten(), layers::Dense(1)});
  // Its statistics are not trained.
  m.compile({.optimizer = "sgd", .loss = "mse"});
  const auto before = norm->mean().to_vector<float>();
  m.fit(x, Tensor::zeros({20, 1}), {.epochs = 1, .verbose = 0});
  EXPECT_EQ(norm->mean().to_vector<float>(), before);

  using osprey::testing::error_of;
  EXPECT_THAT(error_of([&] { layers::Normalization({.mean = Tensor::scalar(1.0)}); }), HasSubstr("both `mean` and `variance`"));
  EXPECT_THAT(error_of([&] { layers::Normalization({.axis = {3}})(x); }), HasSubstr("[-ndim, ndim)"));
  EXPECT_THAT(error_of([&] { layers::Normalization({.axis = {0}})(x); }), HasSubstr("known shape"));
  EXPECT_THAT(error_of([&] { norm->adapt(Tensor::zeros({5, 4, 2})); }), HasSubstr("incompatible shape"));
  EXPECT_THAT(error_of([&] { (*norm)(Tensor::zeros({5, 4, 2})); }), HasSubstr("built for 3"));
  EXPECT_THAT(error_of([&] { layers::Normalization().adapt(std::vector<Tensor>{}); }), HasSubstr("empty"));
  layers::Normalization fixed({.mean = Tensor::scalar(0.0), .variance = Tensor::scalar(1.0)});
  EXPECT_THAT(error_of([&] { fixed.adapt(x); }), HasSubstr("given its `mean`"));
  EXPECT_THAT(error_of([&] {
                layers::Normalization({.mean = Tensor::zeros({2}), .variance = Tensor::zeros({2})})(x);
              }),
              HasSubstr("does not broadcast"));
}

TEST(Preprocessing, RandomBrightnessMatchesKerasWithAFixedFactorAndParsesAsKeras) {
  const json& ref = preprocessing_reference().at("brightness");
  const Tensor x = tensor_of(ref.at("x"));
  expect_close(layers::RandomBrightness({0.2, 0.2})(x, true), ref.at("y_up"), 1e-5, "delta +51");
  expect_close(layers::RandomBrightness({-0.5, -0.5}, {20.0, 200.0})(x, true), ref.at("y_down_range"), 1e-5, "clipped");
  EXPECT_EQ(layers::RandomBrightness(0.5)(x, false).to_vector<float>(), x.to_vector<float>());
  EXPECT_TRUE(ref.at("inference_identity").get<bool>());
  const auto single = layers::RandomBrightness(0.4).factor();
  EXPECT_EQ(json::array({single.first, single.second}), ref.at("factor_single"));
  // The config both ways (value_range sorted, the pair sorted), as Keras writes it.
  const layers::RandomBrightness bright({0.3, -0.1}, {255.0, 0.0}, "bright");
  json config = json::parse(bright.get_config());
  for (const auto& [key, value] : ref.at("config").items()) EXPECT_EQ(config.at(key), value) << key;
  const auto back = keras::serialization::layer_from_object(
      json{{"class_name", "RandomBrightness"}, {"config", ref.at("config")}});
  EXPECT_EQ(json::parse(back->get_config()), config);
  // Keras's rejections; random deltas in [-f, f]·255, one per image, within value_range.
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(ref.at("bad_rejected")[i].get<bool>());
  EXPECT_THROW(layers::RandomBrightness(1.5), ValueError);
  EXPECT_THROW(layers::RandomBrightness({1.2, 1.5}), ValueError);
  EXPECT_THROW(layers::RandomBrightness({-1.5, -1.2}), ValueError);
  random::set_seed(6);
  const Tensor batch = random::uniform({32, 3, 3, 1}, 100.0, 150.0);
  const auto y = layers::RandomBrightness(0.1)(batch, true).to_vector<float>(), v = batch.to_vector<float>();
  std::set<float> deltas;
  for (int img = 0; img < 32; ++img) {
    const float d = y[static_cast<std::size_t>(img * 9)] - v[static_cast<std::size_t>(img * 9)];
    EXPECT_LE(std::abs(d), 25.5f + 1e-3f);
    for (int i = 1; i < 9; ++i) {
      EXPECT_NEAR(y[static_cast<std::size_t>(img * 9 + i)] - v[static_cast<std::size_t>(img * 9 + i)], d, 1e-3);
    }
    deltas.insert(d);
  }
  EXPECT_GT(deltas.size(), 20u);  // one draw per image
}

TEST(Preprocessing, RandomContrastMatchesKerasWithAFixedFactorAndParsesFactorsAsKeras) {
  const json& ref = preprocessing_reference().at("contrast");
  const Tensor x = tensor_of(ref.at("x"));
  expect_close(layers::RandomContrast({-0.3, 0.3})(x, true), ref.at("y"), 2e-5, "contrast 1.3");
  expect_close(layers::RandomContrast({-0.3, 0.3}, {20.0, 200.0})(x, true), ref.at("y_range"), 2e-5, "clipped");
  EXPECT_EQ(layers::RandomContrast(0.5)(x, false).to_vector<float>(), x.to_vector<float>());
  EXPECT_TRUE(ref.at("inference_identity").get<bool>());
  const auto single = layers::RandomContrast(0.5).factor(), pair = layers::RandomContrast({0.6, 0.2}).factor();
  EXPECT_EQ(json::array({single.first, single.second}), ref.at("factor_single"));
  EXPECT_NEAR(pair.first, ref.at("factor_pair")[0].get<double>(), 1e-12);
  EXPECT_NEAR(pair.second, ref.at("factor_pair")[1].get<double>(), 1e-12);
  EXPECT_THROW(layers::RandomContrast(1.5), ValueError);
  EXPECT_THROW(layers::RandomContrast(-0.1), ValueError);
  EXPECT_THROW(layers::RandomContrast({1.2, 1.5}), ValueError);
  EXPECT_THROW(layers::RandomContrast({-0.5, -0.1}), ValueError);
  // Random factors: one per image, in [1, 1.5] for factor 0.5, so each image's channel spread grows or stays.
  random::set_seed(4);
  const Tensor batch = random::uniform({64, 4, 4, 1}, 100.0, 150.0);
  const auto y = layers::RandomContrast(0.5)(batch, true).to_vector<float>(), v = batch.to_vector<float>();
  std::set<float> ratios;
  for (int s = 0; s < 64; ++s) {
    double mean = 0;
    for (int i = 0; i < 16; ++i) mean += v[static_cast<std::size_t>(s * 16 + i)] / 16.0;
    const double r = (y[static_cast<std::size_t>(s * 16)] - mean) / (v[static_cast<std::size_t>(s * 16)] - mean);
    EXPECT_GE(r, 1.0 - 1e-3);
    EXPECT_LE(r, 1.5 + 1e-3);
    ratios.insert(static_cast<float>(std::round(r * 1000)));
  }
  EXPECT_GT(ratios.size(), 32u) << "the factors differ between images";
}

TEST(Preprocessing, RandomCropDrawsOneWindowPerBatchAndCropsToTheAspectRatioOtherwise) {
  const json& ref = preprocessing_reference().at("crop");
  const Tensor x = tensor_of(ref.at("x")), small = tensor_of(ref.at("small"));
  expect_close(layers::RandomCrop(4, 4)(x, false), ref.at("y_4x4"), 2e-5, "inference 4x4");
  expect_close(layers::RandomCrop(5, 3)(x, false), ref.at("y_5x3"), 2e-5, "inference 5x3");
  expect_close(layers::RandomCrop(4, 4)(small, true), ref.at("small_4x4"), 2e-5, "training on a smaller image");
  // Training: a 4x4 window of the 6x9 images at one place for the whole batch, each place in time.
  const auto v = x.to_vector<float>();
  std::set<std::pair<int, int>> places;
  layers::RandomCrop crop(4, 4);
  for (int t = 0; t < 200; ++t) {
    const auto y = crop(x, true).to_vector<float>();
    int found = 0;
    for (int top = 0; top <= 2; ++top) {
      for (int left = 0; left <= 5; ++left) {
        bool same = true;
        for (int s = 0; s < 2 && same; ++s) {
          for (int r = 0; r < 4 && same; ++r) {
            for (int c = 0; c < 4 * 3 && same; ++c) {
              same = y[static_cast<std::size_t>(((s * 4 + r) * 4) * 3 + c)] ==
                     v[static_cast<std::size_t>(((s * 6 + top + r) * 9 + left) * 3 + c)];
            }
          }
        }
        if (same) places.insert({top, left}), ++found;
      }
    }
    ASSERT_EQ(found, 1) << "call " << t;
  }
  EXPECT_EQ(places.size(), 18u);
  // Channels first, shapes in a model, bad input.
  const Tensor xf = ops::transpose(x, {0, 3, 1, 2});
  EXPECT_EQ(layers::RandomCrop(4, 4, "channels_first")(xf, false).to_vector<float>(),
            ops::transpose(layers::RandomCrop(4, 4)(x, false), {0, 3, 1, 2}).to_vector<float>());
  const auto out = layers::RandomCrop(4, 5)(keras::Input({6, 9, 3}));
  EXPECT_EQ(out.shape(), Shape({4, 5, 3}));
  EXPECT_THROW(layers::RandomCrop(0, 4), ValueError);
  EXPECT_THROW((void)layers::RandomCrop(2, 2)(keras::Input({5})), ValueError);
}

TEST(Preprocessing, UpSampling2DBilinearMatchesKerasForwardAndGradient) {
  const json& ref = preprocessing_reference().at("upsampling");
  const Tensor x = tensor_of(ref.at("x")), w = tensor_of(ref.at("w"));
  layers::UpSampling2D up({2, 3}, "channels_last", "bilinear");
  const auto [y, g] = forward_and_grad(up, x, w);
  expect_close(y, ref.at("y"), 1e-5, "y");
  expect_close(g, ref.at("grad"), 1e-5, "gradient");
  layers::UpSampling2D upf({2, 3}, "channels_first", "bilinear");
  const auto [yf, gf] = forward_and_grad(upf, ops::transpose(x, {0, 3, 1, 2}), ops::transpose(w, {0, 3, 1, 2}));
  expect_close(yf, ref.at("y_first"), 1e-5, "y channels_first");
  expect_close(gf, ref.at("grad_first"), 1e-5, "gradient channels_first");
  EXPECT_THROW(layers::UpSampling2D(2, "channels_last", "gaussian"), ValueError);
}

TEST(Preprocessing, ResizingPadsToTheAspectRatioAsKeras) {
  const json& ref = preprocessing_reference().at("pad");
  const Tensor wide = tensor_of(ref.at("wide")), tall = tensor_of(ref.at("tall"));
  expect_close(layers::Resizing(6, 6, {.pad_to_aspect_ratio = true, .fill_value = 3.0})(wide), ref.at("wide_6x6"),
               2e-5, "wide");
  expect_close(layers::Resizing(5, 7, {.pad_to_aspect_ratio = true, .fill_value = -1.0})(tall), ref.at("tall_5x7"),
               2e-5, "tall");
  expect_close(layers::Resizing(5, 7, {.interpolation = "nearest", .pad_to_aspect_ratio = true})(tall),
               ref.at("tall_5x7_nearest"), 2e-5, "tall nearest");
  EXPECT_THROW(layers::Resizing(5, 7, {.crop_to_aspect_ratio = true, .pad_to_aspect_ratio = true}), ValueError);
}

TEST(Preprocessing, ConfigsRoundTripThroughModelFromJson) {
  auto norm = std::make_shared<layers::Normalization>(layers::NormalizationOptions{.axis = {1, -1}});
  Sequential m({layers::Input({6, 9, 3}), norm, layers::RandomContrast({0.1, 0.4}, {0.0, 1.0}),
                layers::RandomCrop(4, 6), layers::UpSampling2D(2, "channels_last", "bilinear"),
                layers::Resizing(5, 5, {.pad_to_aspect_ratio = true, .fill_value = 2.0}), layers::Flatten(),
                layers::Dense(1)});
  const std::string text = m.to_json();
  EXPECT_EQ(json::parse(models::model_from_json(text)->to_json()).at("config"), json::parse(text).at("config"));
}

namespace {

// Whether image i of `y` (N, H, W, C) equals image j of `want` within tol.
bool same_image(const std::vector<float>& y, int64_t i, const std::vector<float>& want, int64_t j, int64_t size,
                double tol) {
  for (int64_t k = 0; k < size; ++k) {
    if (std::abs(y[static_cast<std::size_t>(i * size + k)] - want[static_cast<std::size_t>(j * size + k)]) > tol) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST(Preprocessing, RandomShearShearsEachImageOneWayOrTheOtherAsKeras) {
  const json& ref = preprocessing_reference().at("shear");
  const Tensor x = tensor_of(ref.at("x"));
  const int64_t size = x.num_elements() / 2;
  const Tensor batch = ops::concat(std::vector<Tensor>(32, x), 0);  // 64 images: the two, 32 times
  random::set_seed(12);
  struct Case {
    layers::RandomShear layer;
    const char *plus, *minus;
  };
  std::vector<Case> cases;
  cases.push_back({layers::RandomShear(layers::FactorRange(0.3, 0.3)), "plus", "minus"});
  cases.push_back({layers::RandomShear(layers::FactorRange(0.1, 0.1), layers::FactorRange(0.25, 0.25),
                                       {.fill_mode = "constant", .interpolation = "nearest", .fill_value = 9.0}),
                   "y_plus", "y_minus"});
  for (auto& c : cases) {
    const auto y = c.layer(batch, true).to_vector<float>();
    const auto plus = tensor_of(ref.at(c.plus)).to_vector<float>(), minus = tensor_of(ref.at(c.minus)).to_vector<float>();
    int pluses = 0;
    for (int64_t i = 0; i < 64; ++i) {
      const bool p = same_image(y, i, plus, i % 2, size, 1e-3), m = same_image(y, i, minus, i % 2, size, 1e-3);
      EXPECT_TRUE(p || m) << c.plus << " image " << i;
      pluses += p;
    }
    EXPECT_GT(pluses, 12) << c.plus;  // about half of 64
    EXPECT_LT(pluses, 52) << c.plus;
    EXPECT_EQ(c.layer(x, false).to_vector<float>(), x.to_vector<float>());
  }
  EXPECT_TRUE(ref.at("inference_identity").get<bool>());
  // The config both ways; Keras's rejections (each number of a pair in [0, 1]).
  const layers::RandomShear shear(layers::FactorRange(0.1, 0.3), layers::FactorRange(0.0, 0.2), {.fill_mode = "wrap", .name = "shear"});
  const json config = json::parse(shear.get_config());
  for (const auto& [key, value] : ref.at("config").items()) EXPECT_EQ(config.at(key), value) << key;
  const auto back = keras::serialization::layer_from_object(json{{"class_name", "RandomShear"}, {"config", config}});
  EXPECT_EQ(json::parse(back->get_config()), config);
  EXPECT_NO_THROW(keras::serialization::layer_from_object(json{
      {"class_name", "RandomShear"}, {"config", {{"x_factor", {-0.2, 0.2}}, {"y_factor", {-0.0, 0.0}}}}}));
  EXPECT_THROW(layers::RandomShear(1.5), ValueError);
  EXPECT_THROW(layers::RandomShear(layers::FactorRange(-0.2, 0.1)), ValueError);
  EXPECT_THROW(layers::RandomShear(0.2, layers::FactorRange(0.5, 1.2)), ValueError);
}

TEST(Preprocessing, RandomPerspectiveWarpsWithinItsRangeAndParsesAsKeras) {
  const json& ref = preprocessing_reference().at("perspective");
  const Tensor x = tensor_of(ref.at("x"));
  // The layer: factor 0 or scale 0 leave the images as they are; with both set, images warp and the top-left
  // pixel (a corner that never moves) keeps its value; in inference the identity.
  random::set_seed(31);
  EXPECT_EQ(layers::RandomPerspective(0.0)(x, true).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(layers::RandomPerspective(1.0, 0.0)(x, true).to_vector<float>(), x.to_vector<float>());
  layers::RandomPerspective warp(layers::FactorRange(1.0, 1.0), 0.5);
  const auto y = warp(x, true).to_vector<float>(), v = x.to_vector<float>();
  EXPECT_NE(y, v);
  const std::size_t image = 9 * 11 * 2;
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(y[i * image], v[i * image], 1e-3) << i;
  EXPECT_EQ(warp(x, false).to_vector<float>(), v);
  EXPECT_EQ(layers::RandomPerspective(0.4).factor_range().lower, ref.at("factor_single")[0].get<double>());
  // The config both ways; Keras's rejections.
  const layers::RandomPerspective persp(layers::FactorRange(0.2, 0.8), 0.6,
                                        {.interpolation = "nearest", .fill_value = 2.0, .name = "persp"});
  const json config = json::parse(persp.get_config());
  for (const auto& [key, value] : ref.at("config").items()) EXPECT_EQ(config.at(key), value) << key;
  const auto back = keras::serialization::layer_from_object(json{{"class_name", "RandomPerspective"}, {"config", config}});
  EXPECT_EQ(json::parse(back->get_config()), config);
  EXPECT_THROW(layers::RandomPerspective(1.0, 1.5), ValueError);
  EXPECT_THROW(layers::RandomPerspective(layers::FactorRange(1.2, 1.5)), ValueError);
  EXPECT_THROW(layers::RandomPerspective(1.0, 0.5, {.interpolation = "bicubic"}), ValueError);
}
