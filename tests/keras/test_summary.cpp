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
