// The convolution, pooling and spatial reshaping layers against Keras 3 (tests/keras/keras_conv_reference.py
// regenerates tests/data/keras_conv.json): three models (1-D, 2-D, 3-D) built as the script builds them; each
// branch's forward values, predictions, the gradients of an mse loss for every trainable weight, two epochs of SGD
// and the trained weights. Then the layers' errors, recorded training steps and Keras configs.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;

namespace {

const json& conv_layers_reference(const std::string& model) {
  static const json ref = [] {
    std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_conv.json");
    return json::parse(in).at("reference");
  }();
  return ref.at(model);
}

using Branches = std::vector<KerasTensor>;

Branches model_2d(const KerasTensor& x) {
  auto c1 = layers::Conv2D(4, 3, {.padding = "same", .activation = "relu", .name = "c_same"})(x);
  auto c2 = layers::Conv2D(4, {2, 3}, {.strides = 2, .padding = "same", .name = "c_strided"})(x);
  auto c3 = layers::Conv2D(6, 3, {.dilation_rate = 2, .groups = 3, .name = "c_grouped"})(x);
  auto c4 = layers::DepthwiseConv2D(3, {.padding = "same", .depth_multiplier = 2, .name = "dw"})(x);
  auto c5 = layers::SeparableConv2D(5, 3, {.strides = {2, 1}, .padding = "same", .depth_multiplier = 2,
                                           .activation = "tanh", .name = "sep"})(x);
  auto cf = layers::Permute({3, 1, 2}, "to_cf")(x);
  auto c6 = layers::Conv2D(4, {3, 2}, {.data_format = "channels_first", .name = "c_first"})(cf);
  auto bn = layers::BatchNormalization({.name = "bn"})(c1);
  return {c1, c2, c3, c4, c5, c6,
          layers::MaxPooling2D(2, {.name = "max"})(bn),
          layers::AveragePooling2D(3, {.strides = 2, .padding = "same", .name = "avg_same"})(c1),
          layers::MaxPooling2D({2, 3}, {.strides = {1, 2}, .padding = "same", .name = "max_same"})(x),
          layers::MaxPooling2D(2, {.data_format = "channels_first", .name = "max_first"})(c6),
          layers::GlobalAveragePooling2D("channels_last", false, "gap")(c3),
          layers::GlobalMaxPooling2D("channels_last", true, "gmp")(c4),
          layers::GlobalAveragePooling2D("channels_first", false, "gap_first")(c6),
          layers::ZeroPadding2D(layers::AxisPairs{{1, 0}, {2, 1}}, "channels_last", "zpad")(c2),
          layers::Cropping2D(layers::AxisPairs{{1, 1}, {0, 2}}, "channels_last", "crop")(c1),
          layers::UpSampling2D({2, 1}, "channels_last", "nearest", "up")(c2),
          layers::UpSampling2D(2, "channels_first", "nearest", "up_first")(c6),
          layers::Conv2DTranspose(3, 3, {.strides = 2, .padding = "same", .activation = "relu", .name = "ct_same"})(c2),
          layers::Conv2DTranspose(2, {2, 3}, {.strides = {2, 1}, .name = "ct_valid"})(c2),
          layers::Conv2DTranspose(2, 3, {.strides = 2, .output_padding = 1, .name = "ct_outpad"})(c2),
          layers::Conv2DTranspose(2, 3, {.padding = "same", .dilation_rate = 2, .name = "ct_dilated"})(c1),
          layers::Conv2DTranspose(3, 2, {.strides = 2, .data_format = "channels_first", .name = "ct_first"})(c6),
          layers::Resizing(11, 5, {.name = "resize_bilinear"})(c1),
          layers::Resizing(4, 6, {.interpolation = "nearest", .name = "resize_nearest"})(c2),
          layers::Resizing(5, 5, {.crop_to_aspect_ratio = true, .name = "resize_crop"})(c1),
          layers::CenterCrop(5, 6, "channels_last", "center")(c1),
          layers::CenterCrop(10, 4, "channels_last", "center_small")(c1),
          layers::Rescaling(0.5, -1.0, "rescale")(c4)};
}

Branches model_1d(const KerasTensor& x) {
  auto c1 = layers::Conv1D(5, 3, {.padding = "causal", .dilation_rate = 2, .name = "c_causal"})(x);
  auto c2 = layers::Conv1D(6, 4, {.strides = 2, .padding = "same", .groups = 2, .activation = "relu",
                                  .name = "c_grouped"})(x);
  auto c3 = layers::DepthwiseConv1D(3, {.depth_multiplier = 2, .name = "dw"})(x);
  auto c4 = layers::SeparableConv1D(3, 3, {.padding = "same", .name = "sep"})(x);
  return {c1, c2, c3, c4,
          layers::MaxPooling1D(2, {.name = "max"})(c1),
          layers::AveragePooling1D(3, {.strides = 1, .padding = "same", .name = "avg_same"})(c2),
          layers::GlobalMaxPooling1D("channels_last", false, "gmp")(c3),
          layers::GlobalAveragePooling1D("channels_last", false, "gap")(c4),
          layers::ZeroPadding1D({2, 1}, "channels_last", "zpad")(c1),
          layers::Cropping1D({1, 2}, "channels_last", "crop")(c3),
          layers::UpSampling1D(3, "up")(c2),
          layers::Conv1DTranspose(3, 4, {.strides = 2, .padding = "same", .name = "ct_same"})(c2),
          layers::Conv1DTranspose(2, 3, {.dilation_rate = 2, .name = "ct_dilated"})(c1)};
}

Branches model_3d(const KerasTensor& x) {
  auto c1 = layers::Conv3D(3, {2, 3, 2}, {.strides = {1, 2, 1}, .padding = "same", .activation = "relu",
                                          .name = "c_same"})(x);
  auto c2 = layers::Conv3D(2, 2, {.name = "c_valid"})(x);
  return {c1, c2,
          layers::MaxPooling3D(2, {.name = "max"})(c2),
          layers::AveragePooling3D({2, 2, 3}, {.padding = "same", .name = "avg_same"})(c1),
          layers::GlobalAveragePooling3D("channels_last", false, "gap")(c1),
          layers::GlobalMaxPooling3D("channels_last", false, "gmp")(c2),
          layers::ZeroPadding3D(1, "channels_last", "zpad")(c2),
          layers::Cropping3D(layers::AxisPairs{{1, 0}, {1, 1}, {0, 2}}, "channels_last", "crop")(c1),
          layers::UpSampling3D({1, 2, 2}, "channels_last", "up")(c2),
          layers::Conv3DTranspose(2, 2, {.strides = {1, 2, 2}, .padding = "same", .name = "ct"})(c2)};
}

// "model/c_same/kernel" -> "c_same/kernel"
std::string short_path(const std::string& path) {
  const auto last = path.rfind('/');
  const auto before = last == std::string::npos || last == 0 ? std::string::npos : path.rfind('/', last - 1);
  return before == std::string::npos ? path : path.substr(before + 1);
}

void check_against_keras(const std::string& which, const Shape& sample, Branches (*make)(const KerasTensor&)) {
  SCOPED_TRACE(which);
  const json& ref = conv_layers_reference(which);
  auto x_in = keras::Input(sample, {.name = "x"});
  const Branches branches = make(x_in);
  std::vector<KerasTensor> flat;
  for (std::size_t i = 0; i < branches.size(); ++i) flat.push_back(layers::Flatten("flat" + std::to_string(i))(branches[i]));
  Model model(x_in, layers::Dense(1, "", {.name = "out"})(layers::Concatenate(-1, "cat")(flat)), which);
  for (const auto& [name, values] : ref.at("initial_weights").items()) {
    auto vars = model.get_layer(name)->variables();
    ASSERT_EQ(vars.size(), values.size()) << name;
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(tensor_of(values[i]));
  }
  const Tensor x = tensor_of(ref.at("x")), y = tensor_of(ref.at("y"));
  ASSERT_EQ(branches.size(), ref.at("branches").size());
  for (std::size_t b = 0; b < branches.size(); ++b) {
    Model branch(x_in, branches[b]);
    expect_close(branch.predict(x, {.verbose = 0}), ref.at("branches")[b], 2e-5, "branch " + std::to_string(b));
  }
  expect_close(model.predict(x, {.verbose = 0}), ref.at("predict_before"), 2e-5, "predict");

  // Gradients of the mse in training mode, by weight path; then the moving statistics put back, as the script does.
  {
    std::map<std::string, std::vector<float>> saved;
    for (auto* v : model.variables()) saved[v->path()] = v->value().to_vector<float>();
    auto vars = model.trainable_variables();
    GradientTape tape;
    const Tensor loss = ops::reduce_mean(ops::square(ops::sub(model(x, true), y)));
    EXPECT_NEAR(loss.to_vector<float>()[0], ref.at("loss_before").get<double>(), 2e-5);
    const auto grads = tape.gradient(loss, vars);
    const auto& paths = ref.at("gradient_paths");
    ASSERT_EQ(paths.size(), vars.size());
    for (std::size_t i = 0; i < vars.size(); ++i) {
      const std::string p = short_path(vars[i]->path());
      std::size_t k = 0;
      while (k < paths.size() && paths[k].get<std::string>() != p) ++k;
      ASSERT_LT(k, paths.size()) << "no Keras gradient for " << p;
      expect_close(grads[i], ref.at("gradients")[k], 1e-4, "gradient of " + p);
    }
    for (auto* v : model.variables()) {
      v->assign(Tensor::from_vector(saved[v->path()], v->shape()));
    }
  }

  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.001}), .loss = "mse"});
  const auto h = model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (int e = 0; e < 2; ++e) EXPECT_NEAR(h.history.at("loss")[e], ref.at("history")[e].get<double>(), 1e-4);
  for (const auto& [name, values] : ref.at("final_weights").items()) {
    auto vars = model.get_layer(name)->variables();
    for (std::size_t i = 0; i < vars.size(); ++i) expect_close(vars[i]->value(), values[i], 2e-4, name);
  }
  expect_close(model.predict(x, {.verbose = 0}), ref.at("predict_after"), 5e-4, "predict after");
}

}  // namespace

TEST(ConvLayers, TwoDimensionalLayersMatchKeras) { check_against_keras("conv2d", {8, 9, 3}, model_2d); }
TEST(ConvLayers, OneDimensionalLayersMatchKeras) { check_against_keras("conv1d", {10, 4}, model_1d); }
TEST(ConvLayers, ThreeDimensionalLayersMatchKeras) { check_against_keras("conv3d", {4, 5, 6, 2}, model_3d); }

TEST(ConvLayers, EveryLayerRoundTripsThroughItsKerasConfig) {
  for (auto make : {model_2d, model_1d, model_3d}) {
    const Shape sample = make == model_2d ? Shape({8, 9, 3}) : make == model_1d ? Shape({10, 4}) : Shape({4, 5, 6, 2});
    auto x_in = keras::Input(sample, {.name = "x"});
    const Branches branches = make(x_in);
    std::vector<KerasTensor> flat;
    for (const auto& b : branches) flat.push_back(layers::Flatten()(b));
    Model model(x_in, layers::Dense(1)(layers::Concatenate()(flat)));
    const std::string text = model.to_json();
    auto again = models::model_from_json(text);
    EXPECT_EQ(again->to_json(), text);
    again->set_weights(model.get_weights());
    random::set_seed(3);
    std::vector<int64_t> d{2};
    for (auto e : sample.dims()) d.push_back(e);
    const Tensor x = random::uniform(Shape(d), -1, 1);
    EXPECT_EQ(again->predict(x, {.verbose = 0}).to_vector<float>(), model.predict(x, {.verbose = 0}).to_vector<float>());
  }
  // Keras's spelling of the configs (keys as Keras 3 writes them).
  const auto conv = json::parse(layers::Conv2D(4, 3, {.padding = "same", .name = "c"}).get_config());
  for (const char* key : {"filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "groups",
                          "activation", "use_bias", "kernel_initializer", "bias_initializer", "kernel_regularizer",
                          "activity_regularizer", "kernel_constraint", "bias_constraint"}) {
    EXPECT_TRUE(conv.contains(key)) << key;
  }
  EXPECT_EQ(conv.at("kernel_size"), json::array({3, 3}));
  const auto sep = json::parse(layers::SeparableConv1D(2, 3).get_config());
  EXPECT_TRUE(sep.contains("pointwise_initializer") && sep.contains("depthwise_initializer") && !sep.contains("groups"));
  EXPECT_EQ(json::parse(layers::MaxPooling2D().get_config()).at("strides"), json::array({2, 2}));
  EXPECT_EQ(json::parse(layers::ZeroPadding2D().get_config()).at("padding"), json::parse("[[1, 1], [1, 1]]"));
  EXPECT_FALSE(json::parse(layers::Cropping1D().get_config()).contains("data_format"));  // as Keras writes it
  EXPECT_EQ(json::parse(layers::UpSampling1D(3).get_config()).at("size"), 3);
}

TEST(ConvLayers, BadArgumentsAndShapesAreValueErrorsNamingThem) {
  auto what = [](auto&& f) {
    try {
      f();
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no ValueError");
  };
  auto has = [](const std::string& text, const std::string& part) {
    EXPECT_NE(text.find(part), std::string::npos) << text;
  };
  // Wrong rank: Conv2D on (None, 5).
  has(what([] { (void)layers::Conv2D(4, 3, {.name = "c"})(keras::Input({5})); }),
      "Input 0 of layer \"c\" is incompatible with the layer: expected ndim=4, found ndim=2. Full shape received: "
      "(None, 5)");
  // A kernel larger than the input.
  has(what([] { (void)layers::Conv2D(4, 7)(keras::Input({5, 5, 3})); }), "Computed output size would be negative");
  has(what([] { (void)layers::MaxPooling2D(6)(keras::Input({5, 5, 3})); }), "Computed output size would be negative");
  // Zero or negative filters, kernel sizes and strides.
  has(what([] { layers::Conv2D(0, 3); }), "filters=0");
  has(what([] { layers::Conv2D(4, {3, 0}); }), "kernel_size");
  has(what([] { layers::Conv1D(4, 3, {.strides = -1}); }), "strides");
  has(what([] { layers::Conv2D(4, {3, 3, 3}); }), "tuple of 2 integers");
  has(what([] { layers::Conv2D(4, 3, {.strides = 2, .dilation_rate = 2}); }), "dilation_rate > 1");
  // Groups that do not divide the filters or the input's channels.
  has(what([] { layers::Conv2D(5, 3, {.groups = 2}); }), "groups=2, filters=5");
  has(what([] { (void)layers::Conv2D(4, 3, {.groups = 2})(keras::Input({5, 5, 3})); }),
      "Received groups=2, but the input has 3 channels");
  has(what([] { layers::Conv2D(4, 3, {.padding = "causal"}); }), "causal");
  has(what([] { layers::Conv2D(4, 3, {.data_format = "NHWC"}); }), "data_format");
  has(what([] { layers::UpSampling2D(2, "channels_last", "gaussian"); }), "bilinear");
  has(what([] { layers::UpSampling3D(2, "channels_last"); (void)layers::UpSampling(3, 2, "channels_last", "bilinear", ""); }), "nearest");
  has(what([] { (void)layers::Cropping2D(3)(keras::Input({5, 5, 3})); }), "cropping");
  // A Keras config without a kernel size.
  has(what([] {
        (void)models::model_from_json(R"({"class_name": "Sequential", "config": {"layers": [{"class_name": "Conv2D", "config": {"filters": 2}}]}})");
      }),
      "kernel_size");
}

// The adaptive pooling layers (their values against Keras: ModelFiles.AdaptivePooling* and the ops' reference
// cases): output shapes in both data formats, configs as Keras writes them and back, bad arguments.
TEST(ConvLayers, AdaptivePoolingLayersShapesConfigsAndErrors) {
  auto x3 = keras::Input({4, 7, 9, 2});
  EXPECT_EQ(layers::AdaptiveMaxPooling3D({2, 3, 4})(x3).shape(), Shape({2, 3, 4, 2}));
  EXPECT_EQ(layers::AdaptiveAveragePooling3D(2, {.data_format = "channels_first"})(x3).shape(), Shape({4, 2, 2, 2}));
  EXPECT_EQ(layers::AdaptiveAveragePooling1D(12)(keras::Input({5, 3})).shape(), Shape({12, 3}));  // upsampling
  const layers::AdaptiveAveragePooling2D avg({7, 7}, {.name = "gap7"});
  const json config = json::parse(avg.get_config());
  EXPECT_EQ(config.at("output_size"), json::array({7, 7}));
  EXPECT_EQ(config.at("data_format"), "channels_last");
  EXPECT_EQ(avg.class_name(), "AdaptiveAveragePooling2D");
  EXPECT_EQ(layers::AdaptiveMaxPooling1D(3).name().rfind("adaptive_max_pooling1d", 0), 0u);
  // Keras writes output_size as a list; an integer in a hand-written config means every axis.
  const auto back = keras::serialization::layer_from_object(
      json{{"class_name", "AdaptiveMaxPooling3D"}, {"config", {{"name", "m"}, {"output_size", 2}, {"data_format", "channels_first"}}}});
  EXPECT_EQ(json::parse(back->get_config()).at("output_size"), json::array({2, 2, 2}));
  random::set_seed(5);
  const Tensor x = random::uniform({2, 4, 7, 9, 2}, -1, 1);
  EXPECT_EQ((*back)(x).shape(), Shape({2, 4, 2, 2, 2}));
  // Windows of 2 out of 4 channels-first "rows" ... the first output is the maximum over x[0, 0, 0:4, 0:5, 0:1].
  const std::vector<float> xv = x.to_vector<float>();
  float top = -2.0f;
  for (int h = 0; h < 4; ++h) {
    for (int w = 0; w < 5; ++w) top = std::max(top, xv[static_cast<std::size_t>((0 * 7 + h) * 9 + w) * 2]);
  }
  EXPECT_EQ((*back)(x).to_vector<float>()[0], top);
  // Keras's other names are the same classes.
  EXPECT_EQ(layers::MaxPool2D().class_name(), "MaxPooling2D");
  EXPECT_EQ(layers::GlobalAvgPool1D().class_name(), "GlobalAveragePooling1D");
  EXPECT_EQ(layers::Convolution2D(2, 3).class_name(), "Conv2D");
  EXPECT_THROW(layers::AdaptiveAveragePooling2D({2, 3, 4}), ValueError);
  EXPECT_THROW(layers::AdaptiveAveragePooling2D(0), ValueError);
  EXPECT_THROW(layers::AdaptiveMaxPooling2D(2, {.data_format = "NHWC"}), ValueError);
  EXPECT_THROW((void)layers::AdaptiveMaxPooling2D(2)(keras::Input({5, 3})), ValueError);
}

TEST(ConvLayers, RecordedStepsTrainAsEagerOnes) {
  std::vector<std::vector<float>> weights[2];
  std::vector<double> losses[2];
  for (int eager = 0; eager < 2; ++eager) {
    random::set_seed(21);
    Sequential m({layers::Input({10, 10, 2}), layers::Conv2D(4, 3, {.padding = "same", .activation = "relu"}),
                  layers::SpatialDropout2D(0.25), layers::BatchNormalization(), layers::Conv2DTranspose(4, 2), layers::MaxPooling2D(2), layers::ZeroPadding2D(1),
                  layers::SeparableConv2D(3, 3), layers::UpSampling2D(2), layers::Cropping2D(1),
                  layers::GlobalAveragePooling2D(), layers::Dense(1)});
    m.compile({.optimizer = "adam", .loss = "mse", .run_eagerly = eager == 1});
    const Tensor x = random::uniform({24, 10, 10, 2}, -1, 1), y = random::uniform({24, 1});
    losses[eager] = m.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0}).history["loss"];
    for (auto* v : m.variables()) weights[eager].push_back(v->value().to_vector<float>());
  }
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_LT(losses[0].back(), losses[0].front());
}

TEST(ConvLayers, SpatialDropoutDropsWholeFeatureMapsInTrainingOnly) {
  random::set_seed(5);
  const Tensor x = ops::add(random::uniform({64, 6, 5, 8}), Tensor::scalar(1.0));  // all >= 1: zeros are drops
  for (const bool first : {false, true}) {
    layers::SpatialDropout2D drop(0.3, first ? "channels_first" : "channels_last");
    EXPECT_EQ(drop(x, false).to_vector<float>(), x.to_vector<float>());
    const auto y = drop(x, true).to_vector<float>(), v = x.to_vector<float>();
    // Per sample and channel: every position dropped, or every position kept and scaled by 1 / 0.7.
    const int64_t n = 64, h = 6, w = 5, c = 8;
    int dropped = 0, maps = 0;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t channels = first ? h : c;  // channels_first reads axis 1 as the channels
      for (int64_t ch = 0; ch < channels; ++ch) {
        int zeros = 0, count = 0;
        for (int64_t i = 0; i < h * w * c / channels; ++i) {
          int64_t at;
          if (first) at = (s * h + ch) * (w * c) + i;  // (N, C=6, 5, 8)
          else at = s * h * w * c + i * c + ch;
          ++count;
          if (y[static_cast<std::size_t>(at)] == 0.0f) ++zeros;
          else EXPECT_NEAR(y[static_cast<std::size_t>(at)], v[static_cast<std::size_t>(at)] / 0.7f, 1e-5);
        }
        EXPECT_TRUE(zeros == 0 || zeros == count) << "a feature map partly dropped";
        dropped += zeros == count;
        ++maps;
      }
    }
    EXPECT_NEAR(static_cast<double>(dropped) / maps, 0.3, 0.07);
  }
  EXPECT_THROW(layers::SpatialDropout1D(1.0), ValueError);
  EXPECT_THROW((void)layers::SpatialDropout3D(0.1)(keras::Input({4, 4, 2})), ValueError);
  EXPECT_EQ(json::parse(layers::SpatialDropout2D(0.2).get_config()).at("data_format"), "channels_last");
}
