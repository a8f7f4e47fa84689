// Sequence layers against Keras 3 (issue 18; tests/keras/keras_sequence_reference.py regenerates
// tests/data/keras_sequence.json): Embedding's rows and gradient (repeated ids add up), its bad-id error, and a
// bag-of-embeddings classifier trained two epochs to Keras's losses and weights.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "test_util.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;

namespace {
const json& reference() {
  static const json ref = [] {
    std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_sequence.json");
    return json::parse(in);
  }();
  return ref;
}
}  // namespace

TEST(SequenceLayers, EmbeddingRowsAndGradientMatchKeras) {
  const json& ref = reference().at("embedding");
  const Tensor ids = ops::cast(tensor_of(ref.at("ids")), DType::int32);
  layers::Embedding emb(11, 4);
  emb.build(Shape({2, 5}));
  emb.embeddings()->assign(tensor_of(ref.at("table")));
  for (const Tensor& given : {ids, ops::cast(ids, DType::int64), ops::cast(ids, DType::float32)}) {
    GradientTape tape;
    const Tensor y = emb(given);
    EXPECT_EQ(y.shape(), Shape({3, 2, 5, 4}));
    expect_close(y, ref.at("y"), 0, "rows");
    const auto g = tape.gradient(ops::reduce_sum(ops::mul(y, tensor_of(ref.at("w")))), {emb.embeddings()});
    expect_close(g[0], ref.at("grad"), 1e-6, "gradient");
  }
  // An id outside the vocabulary: TensorFlow's message with the position, and the layer's name.
  const std::string want = ref.at("bad_id_error");
  const std::string got = osprey::testing::error_of([&] { emb(Tensor::from_vector<int32_t>({1, 11}, {1, 2})); });
  EXPECT_THAT(got, HasSubstr(want));
  EXPECT_THAT(got, HasSubstr(emb.name()));
  EXPECT_THROW(emb(Tensor::from_vector<int32_t>({-1, 2}, {1, 2})), InvalidArgumentError);
  EXPECT_THROW(layers::Embedding(0, 4), ValueError);
  EXPECT_THROW(layers::Embedding(4, -1), ValueError);
  EXPECT_THROW(layers::Embedding(4, 2, {.mask_zero = true}), ValueError);
}

TEST(SequenceLayers, ABagOfEmbeddingsClassifierTrainsAsKeras) {
  const json& ref = reference().at("bag");
  const Tensor x = ops::cast(tensor_of(ref.at("x")), DType::int32), y = tensor_of(ref.at("y"));
  auto in = keras::Input({6}, {.name = "tokens", .dtype = DType::int32});
  auto h = layers::Embedding(20, 8, {.name = "embed"})(in);
  h = layers::GlobalAveragePooling1D("channels_last", false, "gap")(h);
  auto out = layers::Dense(1, "sigmoid", {.name = "out"})(h);
  Model model(in, out);
  std::vector<Tensor> init;
  for (const auto& w : ref.at("init")) init.push_back(tensor_of(w));
  model.set_weights(init);
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.5}), .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  const auto hist = model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (const char* key : {"loss", "accuracy"}) {
    for (int e = 0; e < 2; ++e) {
      EXPECT_NEAR(hist.history.at(key)[e], ref.at("history").at(key)[e].get<double>(), 2e-5) << key << " epoch " << e;
    }
  }
  const auto weights = model.get_weights();
  for (std::size_t i = 0; i < weights.size(); ++i) {
    expect_close(weights[i], ref.at("weights_after")[i], 2e-5, "weight " + std::to_string(i));
  }
  expect_close(model.predict(x, {.verbose = 0}), ref.at("predict"), 2e-5, "predict");
  // The int32 input survives the model's config; a bad id in fit is the layer's error, not a crash.
  const json cfg = json::parse(model.to_json());
  EXPECT_EQ(cfg.at("config").at("layers")[0].at("config").at("dtype"), "int32");
  const Tensor bad = ops::cast(ops::mul(ops::add(tensor_of(ref.at("x")), Tensor::scalar(1.0)), Tensor::scalar(2.0)), DType::int32);
  EXPECT_THAT(osprey::testing::error_of([&] { model.fit(bad, y, {.epochs = 1, .batch_size = 8, .verbose = 0}); }),
              HasSubstr("is not in [0, 20)"));
  EXPECT_NO_THROW(model.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0}));
  // The architecture round trip (model_from_json does not compile, as in Keras).
  EXPECT_EQ(json::parse(models::model_from_json(model.to_json())->to_json()).at("config"), cfg.at("config"));
}
