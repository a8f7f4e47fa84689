// The random image layers against Keras 3 (tests/keras/keras_augment_reference.py regenerates
// tests/data/keras_augment.json): with ranges of one value their transforms are fixed, so every fill mode and
// interpolation is compared value by value; the random draws by their statistics; the inference identity.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::tensor_of;

TEST(Augmentation, FixedTransformsMatchKerasForEveryFillModeAndInterpolation) {
  std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_augment.json");
  const json ref = json::parse(in);
  const Tensor x = tensor_of(ref.at("x"));
  for (const auto& c : ref.at("cases")) {
    const std::string kind = c.at("kind"), fill = c.at("fill_mode"), interp = c.at("interpolation");
    SCOPED_TRACE(kind + " " + fill + " " + interp);
    const layers::AugmentOptions o{.fill_mode = fill, .interpolation = interp, .fill_value = 17.0};
    std::unique_ptr<Layer> layer;
    if (kind == "rotation") layer = std::make_unique<layers::RandomRotation>(layers::FactorRange(0.1, 0.1), o);
    if (kind == "rotation_neg") layer = std::make_unique<layers::RandomRotation>(layers::FactorRange(-0.23, -0.23), o);
    if (kind == "translation") {
      layer = std::make_unique<layers::RandomTranslation>(layers::FactorRange(0.2, 0.2), layers::FactorRange(-0.15, -0.15), o);
    }
    if (kind == "zoom") {
      layer = std::make_unique<layers::RandomZoom>(layers::FactorRange(0.3, 0.3), layers::FactorRange(-0.2, -0.2), o);
    }
    if (kind == "zoom_in") layer = std::make_unique<layers::RandomZoom>(layers::FactorRange(-0.4, -0.4), std::nullopt, o);
    ASSERT_TRUE(layer) << kind;
    const auto got = (*layer)(x, true).to_vector<float>();
    const auto want = tensor_of(c.at("y")).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    // Bilinear: float32 rounding of the coordinates (Keras computes sin/cos with TensorFlow's kernels) moves a
    // value by at most ~1e-3 of the 0..255 range; nearest: a coordinate within rounding of .5 may pick the other
    // neighbour, so at most 1 % of the values may differ.
    int differ = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (interp == "bilinear") ASSERT_NEAR(got[i], want[i], 0.05) << i;
      else differ += std::abs(got[i] - want[i]) > 1e-3;
    }
    EXPECT_LE(differ, static_cast<int>(got.size() / 100)) << "values that differ";
    EXPECT_TRUE(c.at("inference").get<bool>());
    EXPECT_EQ((*layer)(x, false).to_vector<float>(), x.to_vector<float>());
  }
}

TEST(Augmentation, RandomDrawsFlipAndRotateEachSampleOnItsOwn) {
  random::set_seed(12);
  const Tensor x = random::uniform({200, 4, 5, 1});
  layers::RandomFlip flip("horizontal");
  const auto y = flip(x, true).to_vector<float>(), v = x.to_vector<float>();
  int flipped = 0;
  for (int s = 0; s < 200; ++s) {
    bool same = true, mirrored = true;
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 5; ++c) {
        const float out = y[static_cast<std::size_t>((s * 4 + r) * 5 + c)];
        same = same && out == v[static_cast<std::size_t>((s * 4 + r) * 5 + c)];
        mirrored = mirrored && out == v[static_cast<std::size_t>((s * 4 + r) * 5 + (4 - c))];
      }
    }
    EXPECT_TRUE(same || mirrored) << "sample " << s;
    flipped += mirrored && !same;
  }
  EXPECT_NEAR(flipped / 200.0, 0.5, 0.1);
  // Rotations by up to a quarter turn: the draws differ between samples and between calls.
  layers::RandomRotation rot(0.25);
  const Tensor one = random::uniform({1, 6, 6, 1});
  const Tensor batch = ops::concat({one, one, one}, 0);
  const auto r1 = rot(batch, true).to_vector<float>(), r2 = rot(batch, true).to_vector<float>();
  EXPECT_NE(std::vector<float>(r1.begin(), r1.begin() + 36), std::vector<float>(r1.begin() + 36, r1.begin() + 72));
  EXPECT_NE(r1, r2);
  // Inside a model: active in fit, the identity in predict.
  Sequential m({layers::Input({6, 6, 1}), layers::RandomFlip(), layers::RandomZoom(0.1), layers::Flatten(),
                layers::Dense(1)});
  EXPECT_EQ(m.predict(batch, {.verbose = 0}).to_vector<float>(), m.predict(batch, {.verbose = 0}).to_vector<float>());
  m.compile({.optimizer = "adam", .loss = "mse"});
  EXPECT_NO_THROW(m.fit(batch, Tensor::zeros({3, 1}), {.epochs = 2, .verbose = 0}));
  // Bad arguments.
  EXPECT_THROW(layers::RandomRotation(0.1, {.fill_mode = "mirror"}), ValueError);
  EXPECT_THROW(layers::RandomFlip("diagonal"), ValueError);
  EXPECT_THROW(layers::RandomTranslation(layers::FactorRange(0.3, 0.1), 0.1), ValueError);
  EXPECT_THROW((void)layers::RandomZoom(0.1)(keras::Input({5})), ValueError);
  // Configs round trip through model_from_json.
  const std::string text = m.to_json();  // the architecture (model_from_json does not compile, as in Keras)
  EXPECT_EQ(json::parse(models::model_from_json(text)->to_json()).at("config"), json::parse(text).at("config"));
}
