// keras.layers.ConvLSTM1D/2D/3D against Keras 3 (tests/keras/keras_conv_lstm_reference.py wrote
// tests/data/keras_conv_lstm.json): each layer made from Keras's own config, given Keras's weights, gives Keras's
// outputs, states and gradients (valid/same padding, strides, dilation, both data formats, go_backwards, other
// activations, no bias, initial states) and writes Keras's config back; stateful layers, bad arguments and
// inputs, and a model that trains, saves and loads.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "keras/policy_scope.h"
#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;

namespace {

const json& conv_lstm_ref() {
  static const json j = osprey::testing::read_reference("keras_conv_lstm.json");
  return j;
}

// A nested list as a tensor of `shape`.
Tensor nested(const json& v, const std::vector<int64_t>& shape) {
  std::vector<float> flat;
  auto walk = [&](auto&& self, const json& e) -> void {
    if (e.is_array()) {
      for (const auto& c : e) self(self, c);
    } else {
      flat.push_back(e.get<float>());
    }
  };
  walk(walk, v);
  return Tensor::from_vector(flat, Shape(shape));
}

std::vector<int64_t> shape_of(const json& v) {
  std::vector<int64_t> s;
  for (const json* p = &v; p->is_array(); p = &(*p)[0]) {
    s.push_back(static_cast<int64_t>(p->size()));
    if (p->empty()) break;
  }
  return s;
}

Tensor tensor(const json& v) { return nested(v, shape_of(v)); }

}  // namespace

TEST(ConvLSTM, EveryCaseMatchesKerasWithGradients) {
  for (const auto& c : conv_lstm_ref().at("cases")) {
    const std::string what = c.at("class").get<std::string>() + " " + c.at("kwargs").dump();
    SCOPED_TRACE(what);
    auto layer = std::dynamic_pointer_cast<layers::ConvLSTM>(
        serialization::layer_from_object(json{{"class_name", c.at("class")}, {"config", c.at("config")}}));
    ASSERT_TRUE(layer);
    const auto xs = c.at("x_shape").get<std::vector<int64_t>>();
    Tensor x = nested(c.at("x"), xs);
    layer->build(Shape(std::vector<int64_t>(xs.begin() + 1, xs.end())));
    const auto vars = layer->variables();
    ASSERT_EQ(vars.size(), c.at("weights").size());
    for (std::size_t i = 0; i < vars.size(); ++i) {
      vars[i]->assign(tensor(c.at("weights")[i]));
      EXPECT_EQ(vars[i]->path(), c.at("paths")[i].get<std::string>());
    }
    std::vector<Tensor> in{x};
    if (!c.at("initial_states").is_null()) {
      for (const auto& s : c.at("initial_states")) in.push_back(tensor(s));
    }
    GradientTape tape(true);
    tape.watch(x);
    in[0] = x;
    const auto outs = layer->call_all(in);
    ASSERT_EQ(outs.size(), c.at("outputs").size());
    Tensor loss = Tensor::zeros({});
    for (std::size_t i = 0; i < outs.size(); ++i) {
      EXPECT_EQ(outs[i].shape(), Shape(c.at("output_shapes")[i].get<std::vector<int64_t>>())) << i;
      expect_close(outs[i], c.at("outputs")[i], 2e-5, "output " + std::to_string(i));
      loss = ops::add(loss, ops::reduce_sum(ops::mul(outs[i], tensor(c.at("output_weights")[i]))));
    }
    EXPECT_NEAR(loss.to_vector<float>()[0], c.at("loss").get<double>(), 1e-4);
    const auto gx = tape.gradient(loss, {x});
    expect_close(gx[0], c.at("gradients")[0], 1e-4, "x's gradient");
    const auto gw = tape.gradient(loss, std::vector<Variable*>(vars.begin(), vars.end()));
    for (std::size_t i = 0; i < gw.size(); ++i) expect_close(gw[i], c.at("gradients")[i + 1], 1e-4, vars[i]->path());
    // Osprey's config is Keras's.
    const json mine = json::parse(layer->get_config());
    for (const auto& [key, value] : c.at("config").items()) EXPECT_EQ(mine.at(key), value) << key;
  }
}

TEST(ConvLSTM, StatefulLayersCarryTheirStatesAndResetThem) {
  random::set_seed(4);
  layers::ConvLSTM2D layer(2, 3, {.padding = "same", .stateful = true});
  const Tensor x = random::uniform({2, 3, 4, 4, 1});
  const auto a = layer(x).to_vector<float>(), b = layer(x).to_vector<float>();
  EXPECT_NE(a, b);
  layer.reset_states();
  EXPECT_EQ(layer(x).to_vector<float>(), a);
  EXPECT_THROW(layer(random::uniform({3, 3, 4, 4, 1})), ValueError);  // another batch size
}

// Under mixed_bfloat16 the outputs and states are bfloat16, as Keras 3.15 gives them (they were float32), and the
// float32 layer's values to bfloat16's precision.
TEST(ConvLSTM, MixedBfloat16OutputsAreBfloat16) {
  random::set_seed(5);
  const Tensor x = random::uniform({2, 3, 4, 4, 2});
  std::vector<float> want;
  std::vector<Tensor> weights;
  {
    layers::ConvLSTM2D layer(3, 3, {.padding = "same", .return_sequences = true});
    want = layer(x).to_vector<float>();
    for (auto* v : layer.variables()) weights.push_back(v->value());
  }
  osprey::testing::PolicyScope mixed("mixed_bfloat16");
  layers::ConvLSTM2D layer(3, 3, {.padding = "same", .return_sequences = true, .return_state = true});
  (void)layer.call_all({x});
  const auto vars = layer.variables();
  ASSERT_EQ(vars.size(), weights.size());
  for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(weights[i]);
  const auto out = layer.call_all({x});
  ASSERT_EQ(out.size(), 3u);
  for (const auto& t : out) EXPECT_EQ(t.dtype(), DType::bfloat16);
  const auto got = out[0].cast(DType::float32).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-2 * std::max(1.0f, std::abs(want[i])));
  EXPECT_EQ(vars[0]->value().dtype(), DType::float32);  // the variables stay float32
}

TEST(ConvLSTM, BadArgumentsAndInputsAreValueErrors) {
  EXPECT_THROW(layers::ConvLSTM2D(0, 3), ValueError);
  EXPECT_THROW(layers::ConvLSTM2D(2, 3, {.strides = 2, .dilation_rate = 2}), ValueError);
  EXPECT_THROW(layers::ConvLSTM2D(2, 3, {.padding = "causal"}), ValueError);
  EXPECT_THROW(layers::ConvLSTM2D(2, {3, 3, 3}), ValueError);
  EXPECT_THROW(layers::ConvLSTM2D(2, 3, {.activation = "nope"}), ValueError);
  layers::ConvLSTM2D two(2, 3);
  EXPECT_THROW(two(Tensor::zeros({2, 3, 4, 1})), ValueError);        // rank 4: no time axis
  EXPECT_THROW(two(Tensor::zeros({2, 3, 2, 2, 1})), ValueError);     // a 3x3 kernel on 2x2 images, valid
  EXPECT_THROW(two(Tensor::zeros({2, 0, 4, 4, 1})), ValueError);     // no steps
  layers::ConvLSTM2D same(2, 3, {.padding = "same"});
  EXPECT_THROW(same.call_all({Tensor::zeros({2, 3, 4, 4, 1}), Tensor::zeros({2, 4, 4, 3}), Tensor::zeros({2, 4, 4, 2})}),
               ValueError);  // h of the wrong shape
}

// The next-frame prediction example's shape of model (ConvLSTM2D over frames, return_sequences, a Conv3D head)
// trains; its file loads back with the same predictions and architecture.
TEST(ConvLSTM, AFramePredictionModelTrainsSavesAndLoads) {
  random::set_seed(8);
  const Tensor frames = random::uniform({8, 4, 6, 6, 1});
  const Tensor next = ops::mul(frames, Tensor::scalar(0.5));
  Sequential model({layers::Input({4, 6, 6, 1}),
                    layers::ConvLSTM2D(4, 3, {.padding = "same", .return_sequences = true}),
                    layers::BatchNormalization(),
                    layers::Conv3D(1, 3, {.padding = "same", .activation = "sigmoid"})});
  model.compile({.optimizer = "adam", .loss = "mse"});
  const auto hist = model.fit(frames, next, {.epochs = 8, .batch_size = 4, .verbose = 0});
  EXPECT_LT(hist.history.at("loss").back(), hist.history.at("loss").front());
  SKIP_WITHOUT_HDF5();
  const std::string path = (std::filesystem::temp_directory_path() / "osprey_conv_lstm.keras").string();
  model.save(path);
  auto again = models::load_model(path);
  EXPECT_EQ(again->to_json(), model.to_json());
  EXPECT_EQ(again->predict(frames, {.verbose = 0}).to_vector<float>(), model.predict(frames, {.verbose = 0}).to_vector<float>());
  std::filesystem::remove(path);
}
