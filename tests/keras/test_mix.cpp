// MixUp, CutMix, RandAugment and AugMix (keras.layers): the identity in inference, the mixing a transformation
// describes in training, the Beta(alpha, alpha) weights' mean and variance and CutMix's box area, both data formats,
// RandAugment's uniform choice among operations made as Keras makes them, AugMix's Dirichlet chain weights, Keras's
// configs, and a model Keras saved with the four layers (tests/keras/keras_mix_reference.py) loading to Keras's
// predictions and training.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;

namespace {

Tensor images(int64_t n, int64_t h, int64_t w, int64_t c, float scale = 1.0f) {
  std::vector<float> v(static_cast<std::size_t>(n * h * w * c));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>((i * 37 + 11) % 101);
  return Tensor::from_vector(v, Shape({n, h, w, c}));
}

void expect_permutation(const std::vector<float>& p) {
  std::vector<float> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], static_cast<float>(i));
}

std::pair<double, double> mean_and_variance(const std::vector<float>& v) {
  double mean = 0, var = 0;
  for (float x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (float x : v) var += (x - mean) * (x - mean);
  return {mean, var / static_cast<double>(v.size())};
}

}  // namespace

TEST(Mix, MixUpBlendsEachImageWithAnotherByItsDraw) {
  const int64_t n = 5, h = 3, w = 4, c = 2;
  const Tensor x = images(n, h, w, c);
  layers::MixUp mix(0.3, {.seed = 11});
  EXPECT_EQ(mix(x, false).to_vector<float>(), x.to_vector<float>());  // inference: the identity
  const auto t = mix.get_random_transformation(n);
  ASSERT_EQ(t.size(), static_cast<std::size_t>(2 * n));
  expect_permutation(std::vector<float>(t.begin() + n, t.end()));
  const auto got = mix.transform_images(x, t).to_vector<float>(), xs = x.to_vector<float>();
  const int64_t per = h * w * c;
  for (int64_t i = 0; i < n; ++i) {
    const float weight = t[static_cast<std::size_t>(i)];
    ASSERT_GE(weight, 0.f);
    ASSERT_LE(weight, 1.f);
    const auto j = static_cast<int64_t>(t[static_cast<std::size_t>(n + i)]);
    for (int64_t k = 0; k < per; ++k) {
      const float want = weight * xs[static_cast<std::size_t>(i * per + k)] +
                         (1.f - weight) * xs[static_cast<std::size_t>(j * per + k)];
      ASSERT_NEAR(got[static_cast<std::size_t>(i * per + k)], want, 1e-4) << "image " << i << " value " << k;
    }
  }
  // A seeded layer repeats its draws; training changes the batch.
  layers::MixUp again(0.3, {.seed = 11});
  EXPECT_EQ(again.get_random_transformation(n), t);
  EXPECT_NE(again(x, true).to_vector<float>(), xs);
}

TEST(Mix, MixUpWeightsAreBetaDistributed) {
  for (const double alpha : {0.2, 2.0}) {
    SCOPED_TRACE(alpha);
    layers::MixUp mix(alpha, {.seed = 3});
    const int64_t n = 20000;
    const auto t = mix.get_random_transformation(n);
    const auto [mean, var] = mean_and_variance(std::vector<float>(t.begin(), t.begin() + n));
    EXPECT_NEAR(mean, 0.5, 0.01);
    EXPECT_NEAR(var, 1.0 / (4.0 * (2.0 * alpha + 1.0)), 0.006);  // Beta(a, a): 1 / (4 (2a + 1))
  }
}

TEST(Mix, CutMixPastesABoxOfAnotherImage) {
  const int64_t n = 6, h = 7, w = 9, c = 3;
  const Tensor x = images(n, h, w, c);
  layers::CutMix cut(1.0, {.seed = 5});
  EXPECT_EQ(cut(x, false).to_vector<float>(), x.to_vector<float>());
  const auto t = cut.get_random_transformation(n);
  ASSERT_EQ(t.size(), static_cast<std::size_t>(5 * n));
  expect_permutation(std::vector<float>(t.begin(), t.begin() + n));
  const auto got = cut.transform_images(x, t).to_vector<float>(), xs = x.to_vector<float>();
  for (int64_t b = 0; b < n; ++b) {
    const auto part = [&](int k) { return t[static_cast<std::size_t>(k * n + b)]; };
    const float lx = part(1) * static_cast<float>(w), ly = part(3) * static_cast<float>(h);
    const float x0 = part(2) * (static_cast<float>(w) - lx), y0 = part(4) * (static_cast<float>(h) - ly);
    const auto from = static_cast<int64_t>(part(0));
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        const bool in = static_cast<float>(j) >= x0 && static_cast<float>(j) < x0 + lx && static_cast<float>(i) >= y0 &&
                        static_cast<float>(i) < y0 + ly;
        for (int64_t k = 0; k < c; ++k) {
          const auto at = static_cast<std::size_t>(((b * h + i) * w + j) * c + k);
          const auto src = static_cast<std::size_t>((((in ? from : b) * h + i) * w + j) * c + k);
          ASSERT_EQ(got[at], xs[src]) << "image " << b << " pixel " << i << "," << j;
        }
      }
    }
  }
  // channels_first: the same draw on the transposed images.
  layers::CutMix first(1.0, {.data_format = "channels_first", .seed = 5});
  const Tensor xf = ops::transpose(x, {0, 3, 1, 2});
  const Tensor back = ops::transpose(first.transform_images(xf, t), {0, 2, 3, 1});
  EXPECT_EQ(back.to_vector<float>(), got);
}

TEST(Mix, CutMixBoxesCoverHalfTheImageOnAverage) {
  // w ~ Beta(alpha, alpha) is symmetric, so the box's area, (1 - w) of the image, is a half on average.
  layers::CutMix cut(layers::ImageFactor(0.5, 1.0), {.seed = 9});
  const int64_t n = 3000, h = 16, w = 16;
  const auto t = cut.get_random_transformation(n);
  double area = 0;
  for (int64_t b = 0; b < n; ++b) {
    area += static_cast<double>(t[static_cast<std::size_t>(n + b)]) * t[static_cast<std::size_t>(3 * n + b)];
  }
  EXPECT_NEAR(area / static_cast<double>(n), 0.5, 0.02);
  const Tensor x = images(4, h, w, 1);
  (void)cut.transform_images(x, cut.get_random_transformation(4));
}

TEST(Mix, BadArgumentsAreValueErrors) {
  EXPECT_THROW(layers::MixUp(0.0), ValueError);
  EXPECT_THROW(layers::MixUp(-1.0), ValueError);
  EXPECT_THROW(layers::CutMix(1.5), ValueError);
  layers::MixUp mix(0.2);
  EXPECT_THROW((void)mix(Tensor::zeros({4, 5}), true), ValueError);  // not a batch of images
  EXPECT_THROW((void)mix.transform_images(images(3, 2, 2, 1), {0.5f, 0.5f}), ValueError);  // a draw for 1 image
}

TEST(Mix, RandAugmentDrawsAmongKerassElevenOperationsInTraining) {
  const int64_t n = 4, h = 6, w = 6, c = 3;
  const Tensor x = images(n, h, w, c, 2.5f);  // values in [0, 250]
  layers::RandAugment ra({.num_ops = 3, .factor = 0.7, .seed = 2});
  EXPECT_EQ(ra(x, false).to_vector<float>(), x.to_vector<float>());  // inference: the identity
  ASSERT_EQ(ra.sublayers().size(), 11u);
  EXPECT_EQ(ra.sublayers()[0].first, "random_shear");
  EXPECT_EQ(ra.sublayers()[10].first, "equalization");
  // Uniform choices: each of the 11 about 1/11 of 11000 draws.
  std::vector<int> counts(11, 0);
  for (int i = 0; i < 11000 / 3 + 1; ++i) {
    for (int k : ra.draw_operations()) ++counts.at(static_cast<std::size_t>(k));
  }
  for (int k = 0; k < 11; ++k) EXPECT_NEAR(counts[static_cast<std::size_t>(k)], 1000, 120) << "operation " << k;
  // Training changes the batch and keeps it in value_range; channels_first gives the same shape back.
  for (int trial = 0; trial < 5; ++trial) {
    const auto y = ra(x, true).to_vector<float>();
    ASSERT_EQ(y.size(), x.to_vector<float>().size());
    for (float v : y) ASSERT_TRUE(v >= -1e-3f && v <= 255.001f) << v;
  }
  layers::RandAugment first({.data_format = "channels_first"});
  EXPECT_EQ(first(ops::transpose(x, {0, 3, 1, 2}), true).shape(), Shape({n, c, h, w}));
  EXPECT_THROW(layers::RandAugment({.factor = 1.5}), ValueError);
  EXPECT_THROW(layers::RandAugment({.interpolation = "bicubic"}), ValueError);
}

TEST(Mix, AugMixMixesChainsOfOperationsWithTheImages) {
  const int64_t n = 3, h = 6, w = 6, c = 3;
  const Tensor x = images(n, h, w, c, 2.5f);
  layers::AugMix aug({.num_chains = 4, .chain_depth = 2, .alpha = 0.7, .seed = 4});
  EXPECT_EQ(aug(x, false).to_vector<float>(), x.to_vector<float>());  // inference: the identity
  EXPECT_EQ(aug.sublayers().size(), 11u);
  EXPECT_EQ(layers::AugMix({.all_ops = false}).sublayers().size(), 7u);
  // The chain weights are Dirichlet(alpha): they sum to 1, each Beta(alpha, (k - 1) alpha) with mean 1/k; the
  // original's weight is Beta(alpha, alpha) with mean 1/2; each chain has 0..chain_depth operations, "none" being
  // one of 12 equal choices.
  double first = 0, original = 0, operations = 0;
  const int draws = 4000;
  for (int i = 0; i < draws; ++i) {
    const auto d = aug.draw();
    ASSERT_EQ(d.chain_weights.size(), 4u);
    double sum = 0;
    for (double v : d.chain_weights) sum += v;
    ASSERT_NEAR(sum, 1.0, 1e-9);
    first += d.chain_weights[0];
    original += d.original_weight;
    for (const auto& chain : d.chains) {
      ASSERT_LE(chain.size(), 2u);
      for (int k : chain) ASSERT_TRUE(k >= 0 && k < 11);
      operations += static_cast<double>(chain.size());
    }
  }
  EXPECT_NEAR(first / draws, 0.25, 0.015);
  EXPECT_NEAR(original / draws, 0.5, 0.02);
  EXPECT_NEAR(operations / (draws * 4.0), 2.0 * 11.0 / 12.0, 0.05);
  // Training keeps the batch in value_range (the clip), channels_first too.
  for (int trial = 0; trial < 4; ++trial) {
    for (float v : aug(x, true).to_vector<float>()) ASSERT_TRUE(v >= 0.f && v <= 255.f) << v;
  }
  layers::AugMix channels_first({.data_format = "channels_first"});
  EXPECT_EQ(channels_first(ops::transpose(x, {0, 3, 1, 2}), true).shape(), Shape({n, c, h, w}));
  EXPECT_THROW(layers::AugMix({.num_chains = 0}), ValueError);
  EXPECT_THROW(layers::AugMix({.alpha = 0.0}), ValueError);
}

TEST(Mix, KerasModelWithMixingAndChainedAugmentationsLoadsPredictsAndTrains) {
  SKIP_WITHOUT_HDF5();
  const json ref = osprey::testing::read_reference("keras_mix.json");
  auto model = models::load_model(std::string(OSPREY_TEST_DATA_DIR) + "/keras_mix.keras");
  for (const auto& [name, config] : ref.at("configs").items()) {
    EXPECT_EQ(json::parse(model->get_layer(name)->get_config()), config) << name;
  }
  const Tensor x = osprey::testing::tensor_of(ref.at("x"));
  osprey::testing::expect_close(model->predict(x), ref.at("predict"), 2e-5, "predict");
  // The configs Keras writes for CutMix's default and single-number factors, and another RandAugment's.
  for (const char* key : {"cut_mix_default", "cut_mix_single", "rand_augment_other", "aug_mix_default"}) {
    const json& c = ref.at(key);
    const std::string k = key;
    const std::string cls = k == "rand_augment_other" ? "RandAugment" : k == "aug_mix_default" ? "AugMix" : "CutMix";
    auto layer = serialization::layer_from_object(json{{"class_name", cls}, {"config", c}, {"module", "keras.layers"}});
    EXPECT_EQ(json::parse(layer->get_config()), c) << key;
  }
  // RandAugment's operations are made as Keras makes them (their configs but names and seeds: Osprey's spatial
  // layers take none).
  for (const std::string layer : {"rand_augment", "aug_mix"}) {
    const json& ops = ref.at(layer + "_ops");
    const auto subs = model->get_layer(layer)->sublayers();
    EXPECT_EQ(subs.size(), ops.size()) << layer;
    for (const auto& [key, op] : subs) {
      json want = ops.at(key), got = json::parse(op->get_config());
      for (const char* drop : {"name", "seed"}) {
        want.erase(drop);
        got.erase(drop);
      }
      EXPECT_EQ(got, want) << layer << " " << key;
    }
  }
  // Training draws the mixing: the model trains on (loss finite).
  std::vector<float> y(12, 0.f);
  for (std::size_t i = 0; i < 6; ++i) y[2 * i + i % 2] = 1.f;
  const auto hist = model->fit(x, Tensor::from_vector(y, Shape({6, 2})), {.epochs = 2, .batch_size = 3, .verbose = 0});
  EXPECT_TRUE(std::isfinite(hist.history.at("loss").back()));
  const std::string saved = ::testing::TempDir() + "/osprey_mix.keras";
  model->save(saved);
  EXPECT_EQ(models::load_model(saved)->to_json(), model->to_json());
}
