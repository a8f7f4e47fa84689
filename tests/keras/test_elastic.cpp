// keras.ops.image.elastic_transform and keras.layers.RandomElasticTransform against Keras 3 on TensorFlow under the
// same noise field (tests/keras/keras_elastic_reference.py regenerates tests/data/keras_elastic.json and
// keras_elastic.keras): each fill mode and interpolation, channels_first, the layer's transform under a given draw,
// its config, a Keras-saved model with it, and the draws' rules.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/ops.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
namespace kops = osprey::keras::ops;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;

namespace {

const json& elastic_ref() {
  static const json r = osprey::testing::read_reference("keras_elastic.json");
  return r;
}

}  // namespace

TEST(Elastic, ElasticTransformAsKerasUnderTheSameNoise) {
  const Tensor images = tensor_of(elastic_ref().at("images"));
  for (const auto& c : elastic_ref().at("ops")) {
    const std::string what = fmt::format("alpha {} sigma {} {} {}", c.at("alpha").get<double>(),
                                         c.at("sigma").get<double>(), c.at("interpolation").get<std::string>(),
                                         c.at("fill_mode").get<std::string>());
    const Tensor out = kops::elastic_transform(images, tensor_of(c.at("noise")), c.at("alpha"), c.at("sigma"),
                                              c.at("interpolation"), c.at("fill_mode"), c.at("fill_value"));
    expect_close(out, c.at("out"), 2e-3, what);  // pixel values up to 255
  }
  const json& f = elastic_ref().at("first");
  const Tensor one = osprey::ops::transpose(kops::squeeze(kops::slice(images, {0, 0, 0, 0}, {1, 12, 10, 2}), 0), {2, 0, 1});
  expect_close(kops::elastic_transform(one, tensor_of(f.at("noise")), 10.0, 3.0, "bilinear", "reflect", 0.0,
                                      "channels_first"),
               f.at("out"), 2e-3, "channels_first, one image");
  // Osprey's own noise: a seed repeats it; the shape and dtype stay.
  const Tensor a = kops::elastic_transform(images, 6.0, 2.0, "bilinear", "reflect", 0.0, 5);
  EXPECT_EQ(a.shape(), images.shape());
  EXPECT_EQ(a.to_vector<float>(), kops::elastic_transform(images, 6.0, 2.0, "bilinear", "reflect", 0.0, 5).to_vector<float>());
  EXPECT_THROW((void)kops::elastic_transform(images, 6.0, 2.0, "bicubic"), ValueError);
  EXPECT_THROW((void)kops::elastic_transform(images, 6.0, -1.0), ValueError);
  EXPECT_THROW((void)kops::elastic_transform(images, tensor_of(f.at("noise")), 6.0, 2.0), ValueError);  // noise shape
}

TEST(Elastic, RandomElasticTransformAsKerasUnderAGivenDraw) {
  const Tensor images = tensor_of(elastic_ref().at("images"));
  const json& l = elastic_ref().at("layer");
  auto layer = serialization::layer_from_object(
      json{{"class_name", "RandomElasticTransform"}, {"config", l.at("config")}, {"module", "keras.layers"}});
  EXPECT_EQ(json::parse(layer->get_config()), l.at("config"));
  auto& elastic = dynamic_cast<layers::RandomElasticTransform&>(*layer);
  layers::RandomElasticTransform::Draw d;
  for (const auto& a : l.at("apply")) d.apply.push_back(a.get<bool>());
  d.distortion = l.at("distortion");
  d.noise = tensor_of(l.at("noise"));
  expect_close(elastic.transform_images(images, d), l.at("out"), 2e-3, "layer transform");
  // Inference: the identity; training: within value_range, the images not drawn only clipped.
  EXPECT_EQ(elastic(images, false).to_vector<float>(), images.to_vector<float>());
  for (float v : elastic(images, true).to_vector<float>()) ASSERT_TRUE(v >= 0.f && v <= 200.f) << v;
  // factor (0, 0): no image is drawn; the layer returns its input.
  layers::RandomElasticTransform never({.factor = 0.0});
  EXPECT_EQ(never(images, true).to_vector<float>(), images.to_vector<float>());
  // The draws: a probability per image from factor's range against a uniform threshold, one distortion from scale's.
  layers::RandomElasticTransform drawn({.factor = layers::ImageFactor(0.5, 0.5), .scale = 0.4, .seed = 2});
  int applied = 0;
  for (int i = 0; i < 400; ++i) {
    const auto draw = drawn.draw(5, 3, 4);
    ASSERT_GE(draw.distortion, 0.0);
    ASSERT_LT(draw.distortion, 0.4);
    EXPECT_EQ(draw.noise.shape(), Shape({5, 3, 4}));
    for (bool a : draw.apply) applied += a;
  }
  EXPECT_NEAR(applied / 2000.0, 0.5, 0.04);
  EXPECT_EQ(json::parse(layers::RandomElasticTransform().get_config())["factor"], elastic_ref().at("default_config")["factor"]);
  EXPECT_THROW(layers::RandomElasticTransform({.interpolation = "bicubic"}), NotImplementedError);
  EXPECT_THROW(layers::RandomElasticTransform({.fill_mode = "edge"}), NotImplementedError);
  EXPECT_THROW(layers::RandomElasticTransform({.scale = 1.5}), ValueError);
}

TEST(Elastic, KerasModelWithRandomElasticTransformLoadsAndPredicts) {
  SKIP_WITHOUT_HDF5();
  auto model = models::load_model(std::string(OSPREY_TEST_DATA_DIR) + "/keras_elastic.keras");
  EXPECT_EQ(json::parse(model->get_layer("elastic")->get_config()), elastic_ref().at("model").at("config"));
  expect_close(model->predict(tensor_of(elastic_ref().at("images"))), elastic_ref().at("model").at("predict"), 2e-5, "predict");
}
