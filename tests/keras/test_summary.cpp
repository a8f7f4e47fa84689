#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "osprey/keras.h"

using namespace osprey;
namespace layers = osprey::keras::layers;

TEST(Summary, SeedModelTableAndFooter) {
  keras::clear_session();
  keras::Sequential model({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(32, "relu"),
                           layers::Dense(1, "sigmoid")});
  std::ostringstream os;
  model.summary(os);
  const std::string expected =
      "Model: \"sequential\"\n"
      "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓\n"
      "┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃\n"
      "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩\n"
      "│ dense (Dense)                   │ (None, 64)             │         1,344 │\n"
      "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
      "│ dense_1 (Dense)                 │ (None, 32)             │         2,080 │\n"
      "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
      "│ dense_2 (Dense)                 │ (None, 1)              │            33 │\n"
      "└─────────────────────────────────┴────────────────────────┴───────────────┘\n"
      " Total params: 3,457 (13.50 KB)\n"
      " Trainable params: 3,457 (13.50 KB)\n"
      " Non-trainable params: 0 (0.00 B)\n";
  EXPECT_EQ(os.str(), expected);
  EXPECT_EQ(model.variables()[0]->path(), "sequential/dense/kernel");
  EXPECT_EQ(model.variables()[0]->shape(), Shape({20, 64}));
  EXPECT_EQ(model.variables()[1]->shape(), Shape({64}));
}

TEST(Summary, OptimizerParamsAfterAdamIsBuilt) {
  keras::clear_session();
  keras::Sequential model({layers::Input({2}), layers::Dense(3)});
  model.compile({.optimizer = "adam", .loss = "mse"});
  model.train_on_batch(Tensor::ones({4, 2}), Tensor::ones({4, 3}));
  std::ostringstream os;
  model.summary(os);
  EXPECT_NE(os.str().find(" Total params: 29 (116.00 B)\n"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find(" Optimizer params: 20 (80.00 B)\n"), std::string::npos) << os.str();
}

// Keras 3.15's output for this model (COLUMNS=80, piped): a long row label wraps at the space, as rich does;
// BatchNormalization counts its moving statistics as non-trainable parameters.
TEST(Summary, WrappedLabelsAndNonTrainableParamsAsKeras) {
  osprey::keras::clear_session();
  namespace layers = osprey::keras::layers;
  osprey::keras::Sequential m({layers::Input({64}), layers::Dense(32, "relu"), layers::BatchNormalization(),
                               layers::Dropout(0.2), layers::Dense(10, "softmax")});
  std::ostringstream out;
  m.summary(out);
  EXPECT_EQ(out.str(),
            "Model: \"sequential\"\n"
            "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓\n"
            "┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃\n"
            "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩\n"
            "│ dense (Dense)                   │ (None, 32)             │         2,080 │\n"
            "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
            "│ batch_normalization             │ (None, 32)             │           128 │\n"
            "│ (BatchNormalization)            │                        │               │\n"
            "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
            "│ dropout (Dropout)               │ (None, 32)             │             0 │\n"
            "├─────────────────────────────────┼────────────────────────┼───────────────┤\n"
            "│ dense_1 (Dense)                 │ (None, 10)             │           330 │\n"
            "└─────────────────────────────────┴────────────────────────┴───────────────┘\n"
            " Total params: 2,538 (9.91 KB)\n"
            " Trainable params: 2,474 (9.66 KB)\n"
            " Non-trainable params: 64 (256.00 B)\n");
}

// model.to_json() and get_config() byte for byte as Keras 3.15.1 writes them for the same models
// (tests/data/keras_to_json_*.json, produced by the script in tests/keras/keras_reference.py's companion).
static std::string read_file(const std::string& name) {
  std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

TEST(Summary, ToJsonMatchesKerasForTheSeedModelWithDropoutAndBatchNorm) {
  osprey::keras::clear_session();
  namespace layers = osprey::keras::layers;
  osprey::keras::Sequential m({layers::Input({20}), layers::Dense(64, "relu"), layers::Dropout(0.25),
                               layers::BatchNormalization(), layers::Dense(1, "sigmoid")});
  m.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  EXPECT_EQ(m.to_json(), read_file("keras_to_json_seed.json"));
}

TEST(Summary, ToJsonMatchesKerasForReshapesNormalisationRegularizersAndSgd) {
  osprey::keras::clear_session();
  namespace layers = osprey::keras::layers;
  osprey::keras::Sequential m(
      {layers::Input({2, 6}), layers::Flatten(), layers::Reshape({4, -1}), layers::Flatten(), layers::Activation("tanh"),
       layers::LayerNormalization(),
       layers::Dense(3, "", {.use_bias = false, .kernel_initializer = "he_normal",
                             .kernel_regularizer = layers::L2(0.01), .kernel_constraint = layers::MaxNorm(2.0)})});
  m.compile({.optimizer = osprey::keras::optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}), .loss = "mse",
             .metrics = {"mae"}});
  EXPECT_EQ(m.to_json(), read_file("keras_to_json_layers.json"));
  EXPECT_EQ(m.get_config().rfind("{\"name\": \"sequential\", \"trainable\": true, ", 0), 0u);
}

// A functional model with branches, a shared-free merge and two heads, and one with attention over its input and a
// residual: Keras 3.15's tables (COLUMNS=80, piped), with "Connected to" and rich's ellipsis for long words.
TEST(Summary, FunctionalModelsWithBranchesShowWhatEachLayerIsConnectedTo) {
  keras::clear_session();
  auto a = keras::Input({4}, {.name = "a"}), b = keras::Input({3}, {.name = "b"});
  auto x = layers::Concatenate(-1, "cat")({layers::Dense(5, "linear", {.name = "shared_dense_with_a_long_name"})(a),
                                           layers::Dense(5, "linear", {.name = "db"})(b)});
  auto h = layers::Dense(8, "relu", {.name = "hidden"})(x);
  auto y1 = layers::Dense(1, "linear", {.name = "out1"})(h);
  auto y2 = layers::Dense(2, "linear", {.name = "out2"})(layers::Add("add")({h, h}));
  keras::Model two({a, b}, {y1, y2}, "two_heads");
  std::ostringstream os;
  two.summary(os);
  EXPECT_EQ(os.str(),
            "Model: \"two_heads\"\n"
            "┏━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓\n"
            "┃ Layer (type)        ┃ Output Shape      ┃    Param # ┃ Connected to      ┃\n"
            "┡━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩\n"
            "│ a (InputLayer)      │ (None, 4)         │          0 │ -                 │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ b (InputLayer)      │ (None, 3)         │          0 │ -                 │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ shared_dense_with_… │ (None, 5)         │         25 │ a[0][0]           │\n"
            "│ (Dense)             │                   │            │                   │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ db (Dense)          │ (None, 5)         │         20 │ b[0][0]           │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ cat (Concatenate)   │ (None, 10)        │          0 │ shared_dense_wit… │\n"
            "│                     │                   │            │ db[0][0]          │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ hidden (Dense)      │ (None, 8)         │         88 │ cat[0][0]         │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ add (Add)           │ (None, 8)         │          0 │ hidden[0][0],     │\n"
            "│                     │                   │            │ hidden[0][0]      │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ out1 (Dense)        │ (None, 1)         │          9 │ hidden[0][0]      │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ out2 (Dense)        │ (None, 2)         │         18 │ add[0][0]         │\n"
            "└─────────────────────┴───────────────────┴────────────┴───────────────────┘\n"
            " Total params: 160 (640.00 B)\n"
            " Trainable params: 160 (640.00 B)\n"
            " Non-trainable params: 0 (0.00 B)\n");
  auto seq = keras::Input({6, 8}, {.name = "seq"});
  auto att = layers::MultiHeadAttention(2, 4, {.name = "mha"})({seq, seq});
  keras::Model attn(seq, layers::Add("res")({seq, att}), "attn");
  std::ostringstream os2;
  attn.summary(os2);
  EXPECT_EQ(os2.str(),
            "Model: \"attn\"\n"
            "┏━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓\n"
            "┃ Layer (type)        ┃ Output Shape      ┃    Param # ┃ Connected to      ┃\n"
            "┡━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩\n"
            "│ seq (InputLayer)    │ (None, 6, 8)      │          0 │ -                 │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ mha                 │ (None, 6, 8)      │        288 │ seq[0][0],        │\n"
            "│ (MultiHeadAttentio… │                   │            │ seq[0][0]         │\n"
            "├─────────────────────┼───────────────────┼────────────┼───────────────────┤\n"
            "│ res (Add)           │ (None, 6, 8)      │          0 │ seq[0][0],        │\n"
            "│                     │                   │            │ mha[0][0]         │\n"
            "└─────────────────────┴───────────────────┴────────────┴───────────────────┘\n"
            " Total params: 288 (1.12 KB)\n"
            " Trainable params: 288 (1.12 KB)\n"
            " Non-trainable params: 0 (0.00 B)\n");
  // A chain stays three columns, its Input included (Keras's "sequential-like" functional model).
  auto in = keras::Input({3}, {.name = "in"});
  keras::Model chain(in, layers::Dense(2)(layers::Dense(4)(in)), "chain");
  std::ostringstream os3;
  chain.summary(os3);
  EXPECT_EQ(os3.str().find("Connected to"), std::string::npos) << os3.str();
  EXPECT_NE(os3.str().find("in (InputLayer)"), std::string::npos) << os3.str();
}
