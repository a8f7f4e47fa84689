// keras.layers.ReversibleEmbedding: the reverse call's values (the embeddings' transpose or reverse_embeddings, the
// logit soft cap, reverse_dtype), one layer called both ways in a functional model (the node keeps reverse=True
// through to_json and back), call arguments refused where a layer takes none, bad arguments as ValueErrors. Keras's
// own files train to Keras's numbers in test_model_files.cpp (ModelFiles.ReversibleEmbeddings...).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;

namespace {

// x (n, d) · table (v, d)ᵀ, or · (d, v) for `transposed` false; tanh(z / cap) · cap where cap > 0.
std::vector<float> project(const std::vector<float>& x, const std::vector<float>& table, int64_t n, int64_t d,
                           int64_t v, bool transposed, double cap) {
  std::vector<float> out(static_cast<std::size_t>(n * v));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < v; ++j) {
      double s = 0;
      for (int64_t k = 0; k < d; ++k) {
        s += static_cast<double>(x[static_cast<std::size_t>(i * d + k)]) *
             table[static_cast<std::size_t>(transposed ? j * d + k : k * v + j)];
      }
      out[static_cast<std::size_t>(i * v + j)] = static_cast<float>(cap > 0 ? std::tanh(s / cap) * cap : s);
    }
  }
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "value " << i;
}

}  // namespace

TEST(ReversibleEmbedding, ReverseProjectsThroughTheTransposeOrItsOwnMatrix) {
  const Tensor hidden = Tensor::from_vector(std::vector<float>{0.5f, -1.f, 2.f, 0.25f, 1.5f, -0.5f}, Shape({1, 2, 3}));
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{3, 0, 4}, Shape({1, 3}));
  layers::ReversibleEmbedding tied(5, 3, {.logit_soft_cap = 2.0});
  EXPECT_EQ(tied(ids).shape(), Shape({1, 3, 3}));  // forward: an Embedding
  EXPECT_EQ(tied.name().rfind("reversible_embedding", 0), 0u) << tied.name();
  const Tensor logits = tied.reverse(hidden);
  EXPECT_EQ(logits.shape(), Shape({1, 2, 5}));
  expect_near(logits.to_vector<float>(),
              project(hidden.to_vector<float>(), tied.embeddings()->value().to_vector<float>(), 2, 3, 5, true, 2.0),
              1e-6);
  EXPECT_EQ(tied.variables().size(), 1u);

  layers::ReversibleEmbedding untied(5, 3, {.tie_weights = false});
  const Tensor out = untied.reverse(hidden);  // the reverse call first builds the layer too
  ASSERT_NE(untied.reverse_embeddings(), nullptr);
  EXPECT_EQ(untied.reverse_embeddings()->value().shape(), Shape({3, 5}));
  EXPECT_EQ(untied.reverse_embeddings()->path(), untied.name() + "/reverse_embeddings");
  EXPECT_EQ(untied.variables().size(), 2u);
  expect_near(out.to_vector<float>(),
              project(hidden.to_vector<float>(), untied.reverse_embeddings()->value().to_vector<float>(), 2, 3, 5,
                      false, 0.0),
              1e-6);
  // reverse_dtype bfloat16: the product in bfloat16, so close to the float32 one but not equal.
  layers::ReversibleEmbedding half(5, 3, {.reverse_dtype = "bfloat16"});
  EXPECT_EQ(half.reverse(hidden).dtype(), DType::bfloat16);
}

TEST(ReversibleEmbedding, OneLayerCalledBothWaysInAModelKeepsItsReverseNode) {
  auto ids = Input(Shape({4}), {.dtype = DType::int32});
  auto emb = std::make_shared<layers::ReversibleEmbedding>(9, 4, layers::ReversibleEmbeddingOptions{.logit_soft_cap = 3.0});
  auto h = layers::Dense(4, "tanh")((*emb)(ids));
  auto model = std::make_shared<Model>(ids, emb->reverse(h));
  const Tensor x = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 8, 0, 5, 5, 7}, Shape({2, 4}));
  const Tensor y = model->predict(x);
  EXPECT_EQ(y.shape(), Shape({2, 4, 9}));
  const auto v = y.to_vector<float>();
  for (float z : v) EXPECT_LT(std::abs(z), 3.0f);  // soft-capped

  const json config = json::parse(model->to_json());
  json nodes;
  for (const auto& l : config["config"]["layers"]) {
    if (l["class_name"] == "ReversibleEmbedding") nodes = l["inbound_nodes"];
  }
  ASSERT_EQ(nodes.size(), 2u) << config.dump();
  EXPECT_EQ(nodes[0]["kwargs"], json::object());
  EXPECT_EQ(nodes[1]["kwargs"], (json{{"reverse", true}}));

  // summary() shows a layer's last call, as Keras's: the logits' shape.
  std::ostringstream summary;
  model->summary(summary);
  EXPECT_NE(summary.str().find("│ (None, 4, 9) "), std::string::npos) << summary.str();

  auto again = models::model_from_json(model->to_json());
  EXPECT_EQ(again->to_json(), model->to_json());
  again->set_weights(model->get_weights());
  EXPECT_EQ(again->predict(x).to_vector<float>(), v);

  // Keras's kwargs {"reverse": false} is the plain call.
  json plain = config;
  for (auto& l : plain["config"]["layers"]) {
    if (l["class_name"] == "ReversibleEmbedding") l["inbound_nodes"][0]["kwargs"] = json{{"reverse", false}};
  }
  auto same = models::model_from_json(plain.dump());
  same->set_weights(model->get_weights());
  EXPECT_EQ(same->predict(x).to_vector<float>(), v);

  // Both calls train the one table: one SGD step changes embedding rows no id of the batch names (through the
  // reverse projection) and the rows it names.
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.5}),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const auto before = emb->embeddings()->value().to_vector<float>();
  (void)model->train_on_batch(x, Tensor::from_vector(std::vector<float>{2, 3, 8, 0, 5, 5, 7, 1}, Shape({2, 4})));
  const auto after = emb->embeddings()->value().to_vector<float>();
  EXPECT_NE(std::vector<float>(before.begin() + 4 * 4, before.begin() + 5 * 4),
            std::vector<float>(after.begin() + 4 * 4, after.begin() + 5 * 4));  // id 4: in no input
}

TEST(ReversibleEmbedding, BadArgumentsAndCallArgumentsAreValueErrors) {
  EXPECT_THROW(layers::ReversibleEmbedding(5, 3, {.reverse_dtype = "int8"}), ValueError);
  EXPECT_THROW(layers::ReversibleEmbedding(5, 3, {.logit_soft_cap = 0.0}), ValueError);
  layers::ReversibleEmbedding emb(5, 3);
  const std::string wrong = osprey::testing::error_of([&] { (void)emb.reverse(Tensor::zeros({2, 4})); });
  EXPECT_NE(wrong.find("output_dim=3"), std::string::npos) << wrong;
  auto h = Input(Shape({6, 4}));
  auto shared = std::make_shared<layers::ReversibleEmbedding>(5, 3);
  EXPECT_THROW((void)shared->reverse(h), ValueError);  // last axis 4, not output_dim 3
  // A layer that takes no call arguments refuses them, naming the argument.
  auto dense = std::make_shared<layers::Dense>(2);
  const std::string refused = osprey::testing::error_of([&] { (void)dense->call_with(h, {{"reverse", true}}); });
  EXPECT_NE(refused.find("takes no keyword argument 'reverse'"), std::string::npos) << refused;
  auto plain = std::make_shared<layers::Embedding>(5, 3);
  EXPECT_THROW((void)plain->call_with(h, {{"reverse", true}}), ValueError);
}
