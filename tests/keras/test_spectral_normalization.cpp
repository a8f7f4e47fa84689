// keras.layers.SpectralNormalization against Keras 3.15 (tests/keras/keras_spectral_reference.py regenerates
// tests/data/keras_spectral.json): around a Dense layer, a Conv2D with two power iterations and an Embedding, a
// training call's output, kernel and vector_u after it, the gradients, a second call, inference; variable order,
// paths, parameter counts, configs both ways, rejections.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "test_util.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/ops.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;

namespace {

const json& spectral_normalization_reference() {
  static const json ref = osprey::testing::read_reference("keras_spectral.json");
  return ref;
}

Tensor ids_of(const json& j) { return tensor_of(j).cast(DType::int32); }

void check_case(const std::string& name, std::shared_ptr<Layer> inner, int64_t iterations, bool floating) {
  SCOPED_TRACE(name);
  const json& r = spectral_normalization_reference().at(name);
  layers::SpectralNormalization sn(std::move(inner), iterations, r.at("config").at("name").get<std::string>());
  const Tensor x = floating ? tensor_of(r.at("x")) : ids_of(r.at("x"));
  sn(x, false);  // builds
  auto vars = sn.variables();
  ASSERT_EQ(vars.size(), r.at("weights").size());
  for (std::size_t i = 0; i < vars.size(); ++i) {
    EXPECT_EQ(vars[i]->path(), r.at("paths")[i].get<std::string>());
    vars[i]->assign(tensor_of(r.at("weights")[i]));
  }
  EXPECT_EQ(sn.count_params(), r.at("params").get<int64_t>());
  GradientTape tape(true);
  if (floating) tape.watch(x);
  const Tensor y = sn(x, true);
  const Tensor loss = ops::reduce_sum(ops::mul(y, tensor_of(r.at("w"))));
  for (std::size_t i = 0; i < vars.size(); ++i) {
    expect_close(vars[i]->value(), r.at("weights_after")[i], 2e-6, "after " + vars[i]->path());
  }
  if (!floating) {
    // Keras 3.15 casts the output to the inputs' dtype: an Embedding's vectors become int32 zeros there (and no
    // gradient flows). Osprey returns the vectors of the normalized table.
    const auto table = tensor_of(r.at("weights_after")[0]).to_vector<float>(), got = y.to_vector<float>();
    const auto ids = tensor_of(r.at("x")).to_vector<float>();
    const std::size_t dim = got.size() / ids.size();
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], table[static_cast<std::size_t>(ids[i / dim]) * dim + i % dim], 2e-6) << i;
    }
    return;
  }
  expect_close(y, r.at("y"), 2e-5, "output");
  auto sources = sn.trainable_variables();
  std::vector<Tensor> grads = tape.gradient(loss, sources);
  if (floating) grads.push_back(tape.gradient(loss, std::vector<Tensor>{x})[0]);
  ASSERT_EQ(grads.size(), r.at("grads").size());
  for (std::size_t i = 0; i < grads.size(); ++i) expect_close(grads[i], r.at("grads")[i], 2e-5, "gradient " + std::to_string(i));
  expect_close(sn(x, true), r.at("y_second"), 2e-5, "second call");
  for (std::size_t i = 0; i < vars.size(); ++i) {
    expect_close(vars[i]->value(), r.at("weights_second")[i], 2e-6, "second " + vars[i]->path());
  }
  expect_close(sn(x, false), r.at("y_inference"), 2e-5, "inference");
  // The config as Keras writes it, and back.
  const json got = json::parse(sn.get_config());
  EXPECT_EQ(got.at("power_iterations"), r.at("config").at("power_iterations"));
  EXPECT_EQ(got.at("layer").at("class_name"), r.at("config").at("layer").at("class_name"));
  const auto back = serialization::layer_from_object(json{{"class_name", "SpectralNormalization"}, {"config", got}});
  EXPECT_EQ(json::parse(back->get_config()).at("layer").at("config"), got.at("layer").at("config"));
}

}  // namespace

TEST(SpectralNormalization, AroundDenseConvAndEmbeddingMatchesKeras) {
  check_case("dense", std::make_shared<layers::Dense>(3, "linear", layers::DenseOptions{.name = "d"}), 1, true);
  check_case("conv", std::make_shared<layers::Conv2D>(2, 3, layers::ConvOptions{.activation = "relu", .name = "c"}), 2,
             true);
  check_case("embedding", std::make_shared<layers::Embedding>(7, 4, layers::EmbeddingOptions{.name = "e"}), 1, false);
}

TEST(SpectralNormalization, RefusesWhatKerasRefusesAndLeavesAZeroKernel) {
  for (const auto& [key, value] : spectral_normalization_reference().at("rejected").items()) EXPECT_TRUE(value.get<bool>()) << key;
  EXPECT_THROW(layers::SpectralNormalization(std::make_shared<layers::Dense>(2), 0), ValueError);
  EXPECT_THROW(layers::SpectralNormalization(nullptr), ValueError);
  layers::SpectralNormalization flat(std::make_shared<layers::Flatten>());
  EXPECT_THROW(flat(Tensor::zeros(Shape({2, 3})), true), ValueError);
  layers::SpectralNormalization zero(std::make_shared<layers::Dense>(2, "linear", layers::DenseOptions{.kernel_initializer = "zeros"}));
  zero(Tensor::ones(Shape({1, 3})), false);
  const auto u = zero.variables()[1]->value().to_vector<float>();
  zero(Tensor::ones(Shape({1, 3})), true);
  EXPECT_EQ(zero.variables()[0]->value().to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(zero.variables()[1]->value().to_vector<float>(), u);
  EXPECT_THROW(zero(Tensor::ones(Shape({1, 4})), true), ValueError);  // built for 3 features
}
