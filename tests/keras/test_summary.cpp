#include <gtest/gtest.h>

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
