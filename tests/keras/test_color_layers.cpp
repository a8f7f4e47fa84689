// keras.ops.image's color conversions and Keras 3's color augmentation layers against Keras 3.15
// (tests/keras/keras_color_reference.py regenerates tests/data/keras_color.json): each layer's transform under
// given draws, the deterministic layers as fit calls them, parsed factors, configs both ways, rejections; then the
// draws themselves (ranges, one per image, seeds) and bad input.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "osprey/keras/ops.h"

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
namespace kops = osprey::keras::ops;

namespace {

const json& color_layers_reference() {
  static const json ref = osprey::testing::read_reference("keras_color.json");
  return ref;
}

const Tensor& img() {
  static const Tensor t = tensor_of(color_layers_reference().at("img"));
  return t;
}

Tensor unit() { return osprey::ops::div(img(), Tensor::scalar(255.0)); }

Tensor channels_first(const Tensor& x) { return osprey::ops::transpose(x, {0, 3, 1, 2}); }

std::vector<float> floats(const json& j) {
  std::vector<float> v;
  for (const auto& e : j) v.push_back(e.is_boolean() ? (e.get<bool>() ? 1.0f : 0.0f) : e.get<float>());
  return v;
}

// Keras's config keys equal Osprey's, and the config read back gives the same config.
void expect_config(const Layer& layer, const json& want, const std::string& class_name) {
  const json got = json::parse(layer.get_config());
  for (const auto& [key, value] : want.items()) EXPECT_EQ(got.at(key), value) << class_name << " " << key;
  const auto back = serialization::layer_from_object(json{{"class_name", class_name}, {"config", want}});
  EXPECT_EQ(json::parse(back->get_config()), got) << class_name;
}

std::pair<double, double> as_pair(const json& j) { return {j[0].get<double>(), j[1].get<double>()}; }

}  // namespace

TEST(ColorOps, GrayscaleAndHsvMatchKerasWithGradients) {
  const json& ref = color_layers_reference().at("ops");
  const Tensor x = img();
  const Tensor gray = kops::rgb_to_grayscale(x);
  EXPECT_EQ(gray.shape(), Shape({4, 5, 6, 1}));
  expect_close(gray, ref.at("gray"), 1e-6, "gray");
  expect_close(kops::rgb_to_grayscale(channels_first(x), "channels_first"), ref.at("gray_first"), 1e-6, "first");
  expect_close(kops::rgb_to_grayscale(x[0]), ref.at("gray_single"), 1e-6, "single image");
  const Tensor u = unit();
  expect_close(kops::rgb_to_hsv(u), ref.at("hsv"), 2e-6, "hsv");
  expect_close(kops::rgb_to_hsv(channels_first(u), "channels_first"), ref.at("hsv_first"), 2e-6, "hsv first");
  expect_close(kops::hsv_to_rgb(tensor_of(ref.at("hsv_in"))), ref.at("rgb"), 2e-6, "rgb");
  // A round trip, and the gradients TensorFlow gives (its hsv_to_rgb has none; Osprey's is its arithmetic's).
  const auto back = kops::hsv_to_rgb(kops::rgb_to_hsv(u)).to_vector<float>(), want = u.to_vector<float>();
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(back[i], want[i], 2e-6) << i;
  const Tensor smooth = tensor_of(ref.at("smooth"));
  for (const auto& [name, weights] : {std::pair{"gray_grad", "w1"}, std::pair{"hsv_grad", "w3"}}) {
    GradientTape tape;
    tape.watch(smooth);
    const Tensor y = std::string(name) == "gray_grad" ? kops::rgb_to_grayscale(smooth) : kops::rgb_to_hsv(smooth);
    const Tensor loss = kops::sum(kops::multiply(y, tensor_of(ref.at(weights))));
    expect_close(tape.gradient(loss, std::vector<Tensor>{smooth})[0], ref.at(name), 1e-4, name);
  }
}

TEST(ColorOps, RefuseWhatKerasRefuses) {
  EXPECT_THROW(kops::rgb_to_grayscale(Tensor::zeros(Shape({4, 3}))), ValueError);
  EXPECT_THROW(kops::rgb_to_grayscale(Tensor::zeros(Shape({1, 2, 2, 4}))), ValueError);
  EXPECT_THROW(kops::rgb_to_hsv(Tensor::zeros(Shape({1, 2, 2, 3}), DType::int32)), ValueError);
  EXPECT_THROW(kops::hsv_to_rgb(Tensor::zeros(Shape({1, 2, 2, 2}))), ValueError);
  EXPECT_THROW(kops::rgb_to_hsv(Tensor::zeros(Shape({1, 2, 2, 3})), "channels_middle"), ValueError);
  // A one-channel image is already gray; integer images come back as integers.
  const Tensor one = random::uniform({2, 3, 3, 1});
  EXPECT_EQ(kops::rgb_to_grayscale(one).to_vector<float>(), one.to_vector<float>());
  EXPECT_EQ(kops::rgb_to_grayscale(Tensor::full(Shape({1, 1, 1, 3}), 100.0, DType::int32)).dtype(), DType::int32);
}

TEST(ColorLayers, RandomGrayscaleAndInvertMatchKerasUnderGivenDraws) {
  const json& g = color_layers_reference().at("grayscale");
  const auto apply = floats(g.at("apply"));
  expect_close(layers::RandomGrayscale(0.5).transform_images(img(), apply), g.at("y"), 1e-6, "gray");
  expect_close(layers::RandomGrayscale(0.5, {.data_format = "channels_first"}).transform_images(channels_first(img()), apply),
               g.at("y_first"), 1e-6, "gray first");
  expect_config(layers::RandomGrayscale(0.3, {.name = "gray"}), g.at("config"), "RandomGrayscale");
  const json& v = color_layers_reference().at("invert");
  const auto inv = floats(v.at("apply"));
  expect_close(layers::RandomInvert().transform_images(img(), inv), v.at("y"), 1e-6, "invert");
  expect_close(layers::RandomInvert(1.0, {.value_range = {-1, 1}}).transform_images(unit(), inv), v.at("y_unit"), 1e-6,
               "invert unit");
  const auto single = layers::RandomInvert(0.4).factor(), pair = layers::RandomInvert({0.8, 0.2}).factor();
  EXPECT_EQ(single, as_pair(v.at("factor_single")));
  EXPECT_EQ(pair, as_pair(v.at("factor_pair")));
  expect_config(layers::RandomInvert({0.2, 0.6}, {.value_range = {0, 1}, .seed = 7, .name = "inv"}), v.at("config"),
                "RandomInvert");
}

TEST(ColorLayers, AutoContrastAndSolarizationMatchKeras) {
  const json& a = color_layers_reference().at("autocontrast");
  const Tensor flat = tensor_of(a.at("flat"));
  expect_close(layers::AutoContrast()(flat, true), a.at("y"), 2e-5, "autocontrast");
  expect_close(layers::AutoContrast()(flat, false), a.at("y_inference"), 2e-5, "in inference too");
  const Tensor u = osprey::ops::add(osprey::ops::mul(unit(), Tensor::scalar(0.5)), Tensor::scalar(0.2));
  expect_close(layers::AutoContrast({.value_range = {1, 0}})(u), a.at("y_unit"), 1e-6, "value_range (1, 0) sorted");
  expect_config(layers::AutoContrast({.value_range = {1, 0}, .name = "ac"}), a.at("config"), "AutoContrast");

  const json& s = color_layers_reference().at("solarization");
  std::vector<float> t = floats(s.at("additions"));
  for (float f : floats(s.at("thresholds"))) t.push_back(f);
  expect_close(layers::Solarization().transform_images(img(), t), s.at("y"), 2e-5, "solarization");
  expect_close(layers::Solarization(0.0, 0.0, {.value_range = {0, 1}}).transform_images(unit(), t), s.at("y_unit"), 1e-6,
               "unit");
  expect_close(layers::Solarization()(img(), true), s.at("y_zero"), 2e-5, "zero factors: inverted");
  expect_close(layers::Solarization(0.5)(img(), false), s.at("y_inference"), 0, "identity");
  EXPECT_EQ(layers::Solarization(0.3).addition_factor(), as_pair(s.at("addition_single")));
  EXPECT_EQ(layers::Solarization(0.0, {0.9, 0.1}).threshold_factor(), as_pair(s.at("threshold_pair")));
  expect_config(layers::Solarization({0.1, 0.2}, 0.5, {.value_range = {0, 1}, .seed = 3, .name = "sol"}), s.at("config"),
                "Solarization");
}

TEST(ColorLayers, PosterizationDegenerationSaturationHueAndSharpnessMatchKerasUnderGivenDraws) {
  const json& p = color_layers_reference().at("posterization");
  const auto shifts = floats(p.at("shifts"));
  expect_close(layers::RandomPosterization(4).transform_images(img(), shifts), p.at("y"), 1e-6, "posterization");
  expect_close(layers::RandomPosterization(4, {.value_range = {0, 1}}).transform_images(unit(), shifts), p.at("y_unit"),
               1e-6, "unit");
  const auto ps = layers::RandomPosterization(5).factor(), pp = layers::RandomPosterization({6, 2}).factor();
  EXPECT_EQ(json::array({ps.first, ps.second}), p.at("factor_single"));
  EXPECT_EQ(json::array({pp.first, pp.second}), p.at("factor_pair"));
  expect_config(layers::RandomPosterization({2, 6}, {.value_range = {0, 1}, .name = "post"}), p.at("config"),
                "RandomPosterization");

  const json& d = color_layers_reference().at("degeneration");
  const auto df = floats(d.at("factors"));
  expect_close(layers::RandomColorDegeneration(0.5).transform_images(img(), df), d.at("y"), 2e-5, "degeneration");
  expect_close(layers::RandomColorDegeneration(0.5, {.data_format = "channels_first"})
                   .transform_images(channels_first(img()), df),
               d.at("y_first"), 2e-5, "first");
  EXPECT_EQ(layers::RandomColorDegeneration(0.3).factor(), as_pair(d.at("factor_single")));
  expect_config(layers::RandomColorDegeneration({0.1, 0.4}, {.value_range = {0, 1}, .name = "degen"}), d.at("config"),
                "RandomColorDegeneration");

  const json& s = color_layers_reference().at("saturation");
  const auto sf = floats(s.at("factors"));
  expect_close(layers::RandomSaturation(0.5).transform_images(img(), sf), s.at("y"), 2e-5, "saturation");
  expect_close(layers::RandomSaturation(0.5, {.value_range = {0, 1}}).transform_images(unit(), sf), s.at("y_unit"), 2e-5,
               "unit");
  expect_close(layers::RandomSaturation(0.5, {.data_format = "channels_first"}).transform_images(channels_first(unit()), sf),
               s.at("y_first"), 2e-5, "first");
  EXPECT_EQ(layers::RandomSaturation(0.4).factor(), as_pair(s.at("factor_single")));
  expect_config(layers::RandomSaturation({0.2, 0.7}, {.name = "sat"}), s.at("config"), "RandomSaturation");

  const json& h = color_layers_reference().at("hue");
  const auto hf = floats(h.at("factors"));
  expect_close(layers::RandomHue(0.5).transform_images(img(), hf), h.at("y"), 2e-5, "hue");
  expect_close(layers::RandomHue(0.5, {.value_range = {0, 1}}).transform_images(unit(), hf), h.at("y_unit"), 2e-6, "unit");
  expect_close(layers::RandomHue(0.5, {.data_format = "channels_first"}).transform_images(channels_first(img()), hf),
               h.at("y_first"), 2e-5, "first");
  EXPECT_EQ(layers::RandomHue(0.3).factor(), as_pair(h.at("factor_single")));
  expect_config(layers::RandomHue({0.1, 0.3}, {.value_range = {0, 1}, .name = "hue"}), h.at("config"), "RandomHue");

  const json& sh = color_layers_reference().at("sharpness");
  const auto shf = floats(sh.at("factors"));
  expect_close(layers::RandomSharpness(0.5).transform_images(img(), shf), sh.at("y"), 2e-5, "sharpness");
  expect_close(layers::RandomSharpness(0.5, {.data_format = "channels_first"}).transform_images(channels_first(img()), shf),
               sh.at("y_first"), 2e-5, "first");
  expect_close(layers::RandomSharpness(0.5, {.value_range = {0, 1}}).transform_images(unit(), shf), sh.at("y_unit"), 2e-5,
               "unit");
  EXPECT_EQ(layers::RandomSharpness(0.6).factor(), as_pair(sh.at("factor_single")));
  expect_config(layers::RandomSharpness({0.2, 0.9}, {.name = "sharp"}), sh.at("config"), "RandomSharpness");
}

TEST(ColorLayers, EqualizationAndColorJitterMatchKeras) {
  const json& e = color_layers_reference().at("equalization");
  const Tensor x = tensor_of(e.at("x"));
  expect_close(layers::Equalization()(x, true), e.at("y"), 1e-6, "equalization");
  expect_close(layers::Equalization()(x, false), e.at("y_inference"), 0, "identity in inference");
  expect_close(layers::Equalization({}, 16)(x, true), e.at("y_bins"), 1e-6, "16 bins");
  expect_close(layers::Equalization()(tensor_of(e.at("one_bin")), true), e.at("y_one_bin"), 1e-6, "one bin");
  expect_close(layers::Equalization({.value_range = {0, 1}})(unit(), true), e.at("y_unit"), 1e-6, "unit");
  expect_close(layers::Equalization({.data_format = "channels_first"})(channels_first(x), true), e.at("y_first"), 1e-6,
               "first");
  expect_config(layers::Equalization({.value_range = {0, 1}, .name = "eq"}, 64), e.at("config"), "Equalization");

  const json& j = color_layers_reference().at("jitter");
  layers::RandomColorJitter jitter({.brightness = layers::ImageFactor(0.1, 0.1),
                                    .contrast = layers::ImageFactor(-0.3, 0.3),
                                    .saturation = layers::ImageFactor(0.6, 0.6)});
  expect_close(jitter(img(), true), j.at("y"), 5e-5, "jitter");
  expect_close(jitter(img(), false), j.at("y_inference"), 0, "identity");
  expect_config(layers::RandomColorJitter({.brightness = 0.2, .contrast = layers::ImageFactor(0.1, 0.3),
                                           .saturation = 0.5, .hue = 0.1},
                                          {.value_range = {0, 1}, .seed = 4, .name = "jit"}),
                j.at("config"), "RandomColorJitter");
}

TEST(ColorLayers, RejectWhatKerasRejects) {
  const json& r = color_layers_reference().at("rejected");
  for (const auto& [key, value] : r.items()) EXPECT_TRUE(value.get<bool>()) << key;
  EXPECT_THROW(layers::RandomGrayscale(1.5), ValueError);
  EXPECT_THROW(layers::RandomInvert(1.5), ValueError);
  EXPECT_THROW(layers::RandomPosterization(9), ValueError);
  EXPECT_THROW(layers::RandomPosterization(0), ValueError);
  EXPECT_THROW(layers::RandomPosterization({2.5, 4}), ValueError);  // bits are whole numbers
  EXPECT_THROW(layers::Solarization(1.5), ValueError);
  EXPECT_THROW(layers::Solarization(0.0, {-0.1, 0.5}), ValueError);
  EXPECT_THROW(layers::RandomSharpness(2.0), ValueError);
  EXPECT_THROW(layers::RandomHue(-0.5), ValueError);
  EXPECT_THROW(layers::Equalization({}, 0), ValueError);
  EXPECT_THROW(layers::RandomHue(0.2, {.data_format = "nchw"}), ValueError);
  EXPECT_THROW(layers::AutoContrast({.value_range = {0, std::nan("")}}), ValueError);
  // Images only: rank 4 batches, three channels for the color conversions; a transformation of the wrong size.
  EXPECT_THROW(layers::RandomHue(0.2)(Tensor::zeros(Shape({2, 5})), true), ValueError);
  EXPECT_THROW(layers::RandomSaturation(0.2)(Tensor::zeros(Shape({2, 4, 4, 2})), true), ValueError);
  try {
    layers::RandomInvert().transform_images(img(), {1.0f, 0.0f});
    FAIL() << "a transformation for 2 images taken for 4";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a batch of 4 images takes 4"));
  }
}

TEST(ColorLayers, DrawOncePerImageWithinKerasRangesAndRepeatWithASeed) {
  random::set_seed(11);
  const int64_t n = 400;
  layers::RandomGrayscale all(1.0), none(0.0), half(0.5);
  EXPECT_EQ(all.get_random_transformation(n), std::vector<float>(n, 1.0f));
  EXPECT_EQ(none.get_random_transformation(n), std::vector<float>(n, 0.0f));
  const auto h = half.get_random_transformation(n);
  const double share = std::accumulate(h.begin(), h.end(), 0.0) / static_cast<double>(n);
  EXPECT_GT(share, 0.4);
  EXPECT_LT(share, 0.6);
  // Inversion: probability from [0.2, 0.4], so about 30 % of images.
  const auto inv = layers::RandomInvert({0.2, 0.4}).get_random_transformation(n);
  const double inverted = std::accumulate(inv.begin(), inv.end(), 0.0) / static_cast<double>(n);
  EXPECT_GT(inverted, 0.2);
  EXPECT_LT(inverted, 0.4);
  // Solarization: additions in [0.1, 0.2·255], thresholds in [0, 0.5·255].
  const auto sol = layers::Solarization({0.1, 0.2}, 0.5).get_random_transformation(n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_GE(sol[static_cast<std::size_t>(i)], 0.1f);
    EXPECT_LE(sol[static_cast<std::size_t>(i)], 51.0f);
    EXPECT_GE(sol[static_cast<std::size_t>(n + i)], 0.0f);
    EXPECT_LE(sol[static_cast<std::size_t>(n + i)], 127.5f);
  }
  // Posterization (2, 6): bits 2..5 (Keras's randint leaves out the upper end), so shifts 3..6, each seen.
  const auto post = layers::RandomPosterization({2, 6}).get_random_transformation(n);
  EXPECT_EQ(std::set<float>(post.begin(), post.end()), (std::set<float>{3, 4, 5, 6}));
  EXPECT_EQ(layers::RandomPosterization({3, 3}).get_random_transformation(4), std::vector<float>(4, 5.0f));
  // Hue: ±[0.1, 0.3] / 2, both signs.
  const auto hue = layers::RandomHue({0.1, 0.3}).get_random_transformation(n);
  int negative = 0;
  for (float t : hue) {
    EXPECT_GE(std::abs(t), 0.05f - 1e-6f);
    EXPECT_LE(std::abs(t), 0.15f + 1e-6f);
    negative += t < 0;
  }
  EXPECT_GT(negative, n / 4);
  EXPECT_LT(negative, 3 * n / 4);
  // Saturation multipliers f / (1 - f) for f in [-0.4, 0.4].
  for (float t : layers::RandomSaturation(0.4).get_random_transformation(n)) {
    EXPECT_GE(t, -0.4f / 1.4f - 1e-5f);
    EXPECT_LE(t, 0.4f / 0.6f + 1e-5f);
  }
  // One draw per image: a batch of equal images comes out in several versions.
  const Tensor same = osprey::ops::broadcast_to(img()[0], Shape({16, 5, 6, 3}));
  const auto y = layers::RandomSharpness(1.0)(same, true).to_vector<float>();
  std::set<float> firsts;
  for (int i = 0; i < 16; ++i) firsts.insert(y[static_cast<std::size_t>(i * 90 + 7)]);
  EXPECT_GT(firsts.size(), 8u);
  // A seeded layer repeats its draws whatever the global generator does; the identity in inference.
  layers::RandomHue a(0.4, {.seed = 5}), b(0.4, {.seed = 5});
  random::set_seed(1);
  const auto ya = a(img(), true).to_vector<float>();
  random::set_seed(2);
  EXPECT_EQ(b(img(), true).to_vector<float>(), ya);
  for (auto* layer : std::initializer_list<Layer*>{&a, &half}) {
    EXPECT_EQ((*layer)(img(), false).to_vector<float>(), img().to_vector<float>());
  }
}

TEST(ColorLayers, TrainInAModelAndRoundTripThroughItsConfig) {
  random::set_seed(3);
  Sequential m({layers::Input({6, 6, 3}), layers::RandomColorJitter({.brightness = 0.1, .hue = 0.1}),
                layers::RandomGrayscale(0.3), layers::RandomSharpness(0.4), layers::RandomGaussianBlur(0.5),
                layers::RandomErasing(0.5),
                layers::Equalization(), layers::AutoContrast(),
                layers::Rescaling(1.0 / 255), layers::Conv2D(2, 3), layers::GlobalAveragePooling2D(), layers::Dense(1)});
  const std::string text = m.to_json();
  EXPECT_EQ(json::parse(models::model_from_json(text)->to_json()).at("config"), json::parse(text).at("config"));
  m.compile({.optimizer = optimizers::Adam(), .loss = "mse"});
  const Tensor x = random::uniform({16, 6, 6, 3}, 0.0, 255.0), y = random::uniform({16, 1});
  const auto history = m.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0});
  EXPECT_TRUE(std::isfinite(history.history.at("loss").back()));
  EXPECT_EQ(m.predict(x, {.verbose = 0}).shape(), Shape({16, 1}));
}

TEST(ColorLayers, GaussianBlurMatchesKerasUnderGivenDraws) {
  const json& b = color_layers_reference().at("blur");
  expect_close(kops::gaussian_blur(img(), {3, 3}, {0.8, 1.3}), b.at("op"), 2e-5, "op");
  expect_close(kops::gaussian_blur(img(), {3, 5}, {0.5, 2.0}), b.at("op_wide"), 2e-5, "op (3, 5)");
  expect_close(kops::gaussian_blur(channels_first(img()), {5, 5}, {1.0, 1.0}, "channels_first"), b.at("op_first"), 2e-5,
               "op first");
  std::vector<float> t = floats(b.at("apply"));
  for (float s : floats(b.at("sigma"))) t.push_back(s);
  expect_close(layers::RandomGaussianBlur().transform_images(img(), t), b.at("y"), 2e-5, "blur");
  expect_close(layers::RandomGaussianBlur(1.0, 5.0, 1.0, {.value_range = {20, 200}}).transform_images(img(), t),
               b.at("y_clipped"), 2e-5, "clipped");
  expect_close(layers::RandomGaussianBlur(1.0, 3.0, 1.0, {.data_format = "channels_first"})
                   .transform_images(channels_first(img()), t),
               b.at("y_first"), 2e-5, "first");
  EXPECT_EQ(layers::RandomGaussianBlur(0.4).factor(), as_pair(b.at("factor_single")));
  EXPECT_EQ(layers::RandomGaussianBlur(1.0, 3.0, 0.7).sigma(), as_pair(b.at("sigma_single")));
  expect_config(layers::RandomGaussianBlur({0.2, 0.6}, {3, 5}, {0.1, 0.9}, {.value_range = {0, 1}, .seed = 2, .name = "blur"}),
                b.at("config"), "RandomGaussianBlur");
  EXPECT_THROW(kops::gaussian_blur(Tensor::zeros(Shape({1, 4, 4, 512})), {1023, 1023}), ValueError);  // 2^29 weights
  EXPECT_THROW(layers::RandomGaussianBlur(1.0, 4.0), ValueError);
  EXPECT_THROW(layers::RandomGaussianBlur(1.0, 3.0, 2.0), ValueError);
  EXPECT_THROW(layers::RandomGaussianBlur().transform_images(img(), {1, 0, 1, 1}), ValueError);  // no sigmas
  // Draws: all images blurred with factor 1, none with 0; sigmas in (0, 0.5] + 1e-6.
  random::set_seed(21);
  const auto all = layers::RandomGaussianBlur(layers::ImageFactor(1.0, 1.0), 3.0, 0.5).get_random_transformation(50);
  EXPECT_EQ(std::vector<float>(all.begin(), all.begin() + 50), std::vector<float>(50, 1.0f));
  for (std::size_t i = 50; i < 52; ++i) {
    EXPECT_GT(all[i], 0.0f);
    EXPECT_LE(all[i], 0.5f + 2e-6f);
  }
  const auto none = layers::RandomGaussianBlur(0.0).get_random_transformation(50);
  EXPECT_EQ(std::vector<float>(none.begin(), none.begin() + 50), std::vector<float>(50, 0.0f));
}

TEST(ColorLayers, RandomErasingMatchesKerasUnderGivenDraws) {
  const json& e = color_layers_reference().at("erasing");
  std::vector<float> t = floats(e.at("apply"));
  for (int k = 0; k < 2; ++k) {
    for (const auto& row : e.at("mix")) t.push_back(row[k].get<float>());
  }
  for (int k = 0; k < 2; ++k) {
    for (const auto& row : e.at("starts")) t.push_back(row[k].get<float>());
  }
  expect_close(layers::RandomErasing(1.0, layers::ImageFactor(0.02, 0.33), {7.0}).transform_images(img(), t), e.at("y"),
               1e-6, "erasing");
  expect_close(layers::RandomErasing(1.0, layers::ImageFactor(0.02, 0.33), {10.0, 300.0, -5.0}).transform_images(img(), t),
               e.at("y_rgb"), 1e-6, "per channel, clipped");
  expect_close(layers::RandomErasing()(img(), false), e.at("y_inference"), 0, "identity");
  EXPECT_EQ(layers::RandomErasing(0.4).factor(), as_pair(e.at("factor_single")));
  EXPECT_EQ(layers::RandomErasing(1.0, 0.5).scale(), as_pair(e.at("scale_single")));
  expect_config(layers::RandomErasing({0.2, 0.6}, {0.1, 0.4}, {3.0}, {.value_range = {0, 1}, .seed = 5, .name = "erase"}),
                e.at("config"), "RandomErasing");
  EXPECT_THROW(layers::RandomErasing(1.0, 2.0), ValueError);
  EXPECT_THROW(layers::RandomErasing(1.0, 0.3, {1.0, 2.0}), ValueError);
  // Noise fill: within value_range, and only inside one box per image; a seeded layer repeats itself.
  layers::RandomErasing noisy(layers::ImageFactor(1.0, 1.0), layers::ImageFactor(0.3, 0.3), {}, {.seed = 9});
  const Tensor flat = Tensor::full(Shape({6, 10, 10, 3}), 100.0);
  const auto y = noisy(flat, true).to_vector<float>();
  for (int i = 0; i < 6; ++i) {
    int changed = 0;
    for (int k = 0; k < 300; ++k) {
      const float v = y[static_cast<std::size_t>(i * 300 + k)];
      EXPECT_GE(v, 0.0f);
      EXPECT_LE(v, 255.0f);
      changed += v != 100.0f;
    }
    EXPECT_GT(changed, 3 * 16);  // sides of sqrt(0.3) · 10 = 5.48: 5 or 6 pixels each way
    EXPECT_LE(changed, 3 * 36);
  }
  layers::RandomErasing again(layers::ImageFactor(1.0, 1.0), layers::ImageFactor(0.3, 0.3), {}, {.seed = 9});
  EXPECT_EQ(again(flat, true).to_vector<float>(), y);
}

TEST(ColorOps, PerspectiveTransformMatchesKeras) {
  static const json all = osprey::testing::read_reference("keras_preprocess.json");
  const json& ref = all.at("perspective");
  const Tensor x = tensor_of(ref.at("x")), start = tensor_of(ref.at("start")), end = tensor_of(ref.at("end"));
  expect_close(kops::perspective_transform(x, start, end), ref.at("y"), 1e-4, "bilinear");
  expect_close(kops::perspective_transform(x, start, end, "nearest", 5.0), ref.at("y_nearest"), 1e-4, "nearest");
  expect_close(kops::perspective_transform(osprey::ops::transpose(x, {0, 3, 1, 2}), start[0], end[0], "bilinear", 0.0,
                                           "channels_first"),
               ref.at("y_first"), 1e-4, "channels_first, one set of points");
  EXPECT_THROW(kops::perspective_transform(x, Tensor::zeros(Shape({3, 3, 2})), end), ValueError);
  EXPECT_THROW(kops::perspective_transform(x, start, end, "bicubic"), ValueError);
  EXPECT_THROW(kops::perspective_transform(x, Tensor::zeros(Shape({4, 2})), Tensor::zeros(Shape({4, 2}))),
               InvalidArgumentError);  // every point at the origin: no homography
}
