// tf.image.resize's methods (ops::resize), tf.raw_ops.ScaleAndTranslate (ops::scale_and_translate),
// keras.ops.image.resize and scale_and_translate, and the Resizing and UpSampling2D layers with the new
// interpolations, against Keras 3.15 / TensorFlow 2.21 (tests/keras/keras_resize_reference.py regenerates
// tests/data/keras_resize.json): values, gradients, configs both ways, Keras's errors; then bad input.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "osprey/keras/ops.h"

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;
namespace kops = osprey::keras::ops;

namespace {

const json& resize_reference() {
  static const json ref = osprey::testing::read_reference("keras_resize.json");
  return ref;
}

// f(x) and d Σ (f(x) ⊙ w) / dx.
std::pair<Tensor, Tensor> value_and_grad(const std::function<Tensor(const Tensor&)>& f, const Tensor& x,
                                         const Tensor& w) {
  GradientTape tape;
  tape.watch(x);
  const Tensor y = f(x);
  const Tensor loss = osprey::ops::reduce_sum(osprey::ops::mul(y, w));
  return {y, tape.gradient(loss, std::vector<Tensor>{x})[0]};
}

double dot(const Tensor& a, const Tensor& b) {
  const auto u = a.to_vector<float>(), v = b.to_vector<float>();
  return std::inner_product(u.begin(), u.end(), v.begin(), 0.0);
}

std::string what(const json& c) {
  return fmt::format("{} antialias={} size={}", c.at("method").get<std::string>(), c.at("antialias").get<bool>(),
                     c.at("size").dump());
}

}  // namespace

TEST(Resize, EveryMethodMatchesTensorFlowWithGradients) {
  const Tensor x = tensor_of(resize_reference().at("img"));
  int with_grads = 0;
  for (const json& c : resize_reference().at("resize")) {
    const auto method = osprey::ops::resize_method(c.at("method").get<std::string>());
    const bool aa = c.at("antialias").get<bool>();
    const int64_t h = c.at("size")[0].get<int64_t>(), w = c.at("size")[1].get<int64_t>();
    const Tensor wts = tensor_of(c.at("w"));
    const auto [y, g] = value_and_grad([&](const Tensor& t) { return osprey::ops::resize(t, h, w, method, aa); }, x,
                                       wts);
    EXPECT_EQ(y.shape(), Shape({2, h, w, 2})) << what(c);
    expect_close(y, c.at("out"), 2e-6, what(c));
    if (!c.at("grad").is_null()) {
      expect_close(g, c.at("grad"), 1e-5, what(c) + " gradient");
      ++with_grads;
    } else {
      // TensorFlow has no gradient for area: Osprey's is the transposed resize, <A x2, w> = <x2, A^T w>.
      const Tensor x2 = osprey::ops::sin(osprey::ops::mul(x, Tensor::scalar(7.0)));
      EXPECT_NEAR(dot(osprey::ops::resize(x2, h, w, method, aa), wts), dot(x2, g), 1e-4) << what(c);
    }
  }
  EXPECT_EQ(with_grads, 70);  // 8 methods x 2 x 5 sizes, area's 10 without
}

TEST(Resize, ScaleAndTranslateMatchesTheRawOp) {
  const Tensor x = tensor_of(resize_reference().at("img"));
  const std::map<std::string, osprey::ops::SamplingKernel> kernels = {
      {"lanczos1", osprey::ops::SamplingKernel::lanczos1}, {"lanczos3", osprey::ops::SamplingKernel::lanczos3},
      {"box", osprey::ops::SamplingKernel::box},           {"keyscubic", osprey::ops::SamplingKernel::keyscubic},
      {"gaussian", osprey::ops::SamplingKernel::gaussian}, {"mitchellcubic", osprey::ops::SamplingKernel::mitchellcubic},
      {"triangle", osprey::ops::SamplingKernel::triangle}};
  for (const json& c : resize_reference().at("raw_scale_and_translate")) {
    const auto kernel = kernels.at(c.at("kernel").get<std::string>());
    const Tensor y = osprey::ops::scale_and_translate(x, 5, 11, {0.8f, 1.3f}, {0.4f, -0.7f}, kernel,
                                                      c.at("antialias").get<bool>());
    expect_close(y, c.at("out"), 2e-6, c.at("kernel").get<std::string>());
  }
}

TEST(Resize, KerasOpsResizeOptionsAndDtypes) {
  const json& ref = resize_reference();
  const Tensor wide = tensor_of(ref.at("wide"));
  for (const json& c : ref.at("ops_resize")) {
    const json& kw = c.at("kwargs");
    kops::ImageResizeOptions o;
    o.interpolation = kw.value("interpolation", "bilinear");
    o.antialias = kw.value("antialias", false);
    o.crop_to_aspect_ratio = kw.value("crop_to_aspect_ratio", false);
    o.pad_to_aspect_ratio = kw.value("pad_to_aspect_ratio", false);
    o.fill_value = kw.value("fill_value", 0.0);
    o.data_format = kw.value("data_format", "channels_last");
    Tensor x = c.at("single").get<bool>() ? wide[0] : wide;
    if (o.data_format == "channels_first") x = osprey::ops::transpose(x, {0, 3, 1, 2});
    expect_close(kops::resize(x, {5, 5}, o), c.at("out"), 2e-6, kw.dump());
  }
  // Integer images come back as integers, rounded (nearest: the pixels themselves).
  const Tensor ints = tensor_of(ref.at("ints"), DType::int32);
  kops::ImageResizeOptions cubic;
  cubic.interpolation = "bicubic";
  const Tensor yi = kops::resize(ints, {7, 4}, cubic);
  EXPECT_EQ(yi.dtype(), DType::int32);
  EXPECT_EQ(yi.to_vector<int32_t>(), tensor_of(ref.at("ints_bicubic"), DType::int32).to_vector<int32_t>());
  kops::ImageResizeOptions nearest;
  nearest.interpolation = "nearest";
  EXPECT_EQ(kops::resize(ints, {7, 4}, nearest).to_vector<int32_t>(),
            tensor_of(ref.at("ints_nearest"), DType::int32).to_vector<int32_t>());
  // Keras's refusals, with its messages.
  for (const json& e : ref.at("ops_errors")) {
    kops::ImageResizeOptions o;
    o.interpolation = e.at("kwargs").value("interpolation", "bilinear");
    o.fill_mode = e.at("kwargs").value("fill_mode", "constant");
    try {
      (void)kops::resize(wide, {5, 5}, o);
      ADD_FAILURE() << e.dump();
    } catch (const ValueError& err) {
      EXPECT_THAT(err.what(), HasSubstr(e.at("message").get<std::string>()));
    }
  }
  kops::ImageResizeOptions both;
  both.crop_to_aspect_ratio = both.pad_to_aspect_ratio = true;
  EXPECT_THROW((void)kops::resize(wide, {5, 5}, both), ValueError);
  EXPECT_THROW((void)kops::resize(wide, {0, 5}), ValueError);
  EXPECT_THROW((void)kops::resize(wide[0][0], {5, 5}), ValueError);
}

TEST(Resize, KerasScaleAndTranslateWithGradients) {
  const Tensor vol = tensor_of(resize_reference().at("vol"));
  for (const json& c : resize_reference().at("scale_and_translate")) {
    const auto shape = c.at("shape").get<std::vector<int64_t>>();
    const auto scale = c.at("scale").get<std::vector<float>>(), trans = c.at("translation").get<std::vector<float>>();
    const auto dims = c.at("dims").get<std::vector<int>>();
    const auto method = c.at("method").get<std::string>();
    const bool aa = c.at("antialias").get<bool>();
    const auto [y, g] = value_and_grad(
        [&](const Tensor& t) { return kops::scale_and_translate(t, shape, scale, trans, dims, method, aa); }, vol,
        tensor_of(c.at("w")));
    EXPECT_EQ(y.shape(), Shape(shape)) << method;
    expect_close(y, c.at("out"), 2e-6, method);
    expect_close(g, c.at("grad"), 1e-5, method + " gradient");
  }
  // Integer images: rounded and kept within their range (Keras 3.15's TensorFlow backend fails here).
  const Tensor ints = Tensor::from_vector<int32_t>({0, 50, 100, 25, 75, 0, 100, 100, 0}, Shape({1, 3, 3, 1}));
  const Tensor yi = kops::scale_and_translate(ints, {1, 7, 5, 1}, {2.3f, 1.7f}, {0.f, 0.f}, {1, 2}, "lanczos5");
  EXPECT_EQ(yi.dtype(), DType::int32);
  for (int32_t v : yi.to_vector<int32_t>()) EXPECT_TRUE(v >= 0 && v <= 100) << v;
  EXPECT_THROW((void)kops::scale_and_translate(vol, {2, 6, 8, 3}, {1.f}, {0.f}, {1}, "triangle"), ValueError);
  EXPECT_THROW((void)kops::scale_and_translate(vol, {2, 6, 8, 3}, {0.f}, {0.f}, {1}, "linear"), ValueError);
  EXPECT_THROW((void)kops::scale_and_translate(vol, {2, 6, 8, 3}, {1.f, 1.f}, {0.f}, {1, 2}, "linear"), ValueError);
  EXPECT_THROW((void)kops::scale_and_translate(vol, {2, 6, 8}, {1.f}, {0.f}, {1}, "linear"), ValueError);
  EXPECT_THROW((void)kops::scale_and_translate(vol, {2, 6, 8, 3}, {1.f}, {0.f}, {4}, "linear"), InvalidArgumentError);
  EXPECT_EQ(kops::scale_and_translate(vol, {2, 6, 8, 3}, {}, {}, {}, "linear").shape(), vol.shape());
  EXPECT_THROW((void)kops::scale_and_translate(ints.cast(DType::bool_), {1, 7, 5, 1}, {2.f, 2.f}, {0.f, 0.f}, {1, 2},
                                               "linear"),
               ValueError);
}

TEST(Resize, ResizingAndUpSamplingLayersWithTheNewInterpolations) {
  const json& ref = resize_reference();
  const Tensor wide = tensor_of(ref.at("wide")), img = tensor_of(ref.at("img"));
  for (const json& c : ref.at("resizing")) {
    const auto layer = serialization::layer_from_object(json{{"class_name", "Resizing"}, {"config", c.at("config")}});
    expect_close((*layer)(wide), c.at("out"), 2e-6, c.at("config").dump());
    const json got = json::parse(layer->get_config());
    for (const char* key : {"interpolation", "antialias", "crop_to_aspect_ratio", "height", "width"}) {
      EXPECT_EQ(got.at(key), c.at("config").at(key)) << key;
    }
  }
  for (const json& c : ref.at("upsampling")) {
    const auto layer =
        serialization::layer_from_object(json{{"class_name", "UpSampling2D"}, {"config", c.at("config")}});
    expect_close((*layer)(img), c.at("out"), 2e-6, c.at("config").dump());
    EXPECT_EQ(json::parse(layer->get_config()).at("interpolation"), c.at("config").at("interpolation"));
  }
  layers::ResizingOptions o;
  o.interpolation = "lanczos3";
  o.antialias = true;
  EXPECT_EQ(layers::Resizing(3, 4, o)(wide).shape(), Shape({2, 3, 4, 3}));
  o.interpolation = "gaussian";  // tf.image.resize has it; Keras's layers do not
  EXPECT_THROW(layers::Resizing(3, 4, o), ValueError);
}

TEST(Resize, BadInput) {
  const Tensor x = Tensor::ones(Shape({1, 4, 4, 1}));
  EXPECT_THROW((void)osprey::ops::resize(x, 0, 3, osprey::ops::ResizeMethod::bicubic), InvalidArgumentError);
  EXPECT_THROW((void)osprey::ops::resize(Tensor::ones(Shape({4, 4, 1})), 2, 2, osprey::ops::ResizeMethod::area),
               InvalidArgumentError);
  EXPECT_THROW((void)osprey::ops::resize(x.cast(DType::int32), 2, 2, osprey::ops::ResizeMethod::lanczos3),
               InvalidArgumentError);
  EXPECT_THROW((void)osprey::ops::resize_method("cubic"), ValueError);
  EXPECT_THROW((void)osprey::ops::scale_and_translate(x, 2, 2, {-1.f, 1.f}, {0.f, 0.f},
                                                      osprey::ops::SamplingKernel::box),
               InvalidArgumentError);
  EXPECT_THROW((void)osprey::ops::scale_and_translate(x, 2, 2, {1.f, 1.f}, {NAN, 0.f},
                                                      osprey::ops::SamplingKernel::box),
               InvalidArgumentError);
  EXPECT_THROW((void)osprey::ops::affine_transform(x, Tensor::zeros(Shape({1, 8})),
                                                   osprey::ops::ResizeMethod::bicubic),
               InvalidArgumentError);
  // Scales so small that 1/scale overflows float: defined results (zeros or averages), no crash.
  for (float tiny : {1e-30f, 1e-45f}) {
    const auto v = osprey::ops::scale_and_translate(x, 2, 2, {tiny, 1.f}, {0.f, 0.f},
                                                    osprey::ops::SamplingKernel::lanczos3).to_vector<float>();
    for (float e : v) EXPECT_TRUE(std::isfinite(e));
    (void)kops::scale_and_translate(x, {1, 2, 2, 1}, {tiny, tiny}, {0.f, 1e30f}, {1, 2}, "lanczos5");
  }
  // A one-pixel image to a large one, and a large downscale with antialiasing: every weight row sums to one.
  const Tensor one = Tensor::full(Shape({1, 1, 1, 1}), 3.0);
  for (auto m : {osprey::ops::ResizeMethod::bicubic, osprey::ops::ResizeMethod::area,
                 osprey::ops::ResizeMethod::lanczos5, osprey::ops::ResizeMethod::mitchellcubic}) {
    for (float v : osprey::ops::resize(one, 9, 2, m).to_vector<float>()) EXPECT_NEAR(v, 3.f, 1e-5);
    for (float v : osprey::ops::resize(Tensor::full(Shape({1, 300, 2, 1}), 2.0), 3, 1, m, true).to_vector<float>()) {
      EXPECT_NEAR(v, 2.f, 1e-5);
    }
  }
}
