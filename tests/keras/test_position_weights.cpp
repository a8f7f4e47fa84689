// Sample weights of more than one value per sample — a weight per step (N, T) or per pixel (N, H, W) — against
// Keras 3.15 on TensorFlow (tests/keras/keras_position_weights_reference.py regenerates
// tests/data/keras_position_weights.json): losses with each reduction and their gradients, metrics, and fit/evaluate
// of a per-step classifier, a masked recurrent tagger and a per-pixel classifier.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "keras/fit_expect.h"
#include "keras/reference_json.h"
#include "keras/saving/loss_metric_config.h"
#include "osprey/autodiff.h"
#include "osprey/data.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::expect_history;
using osprey::testing::expect_logs;
using osprey::testing::expect_weights;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;
namespace L = osprey::keras::losses;
namespace M = osprey::keras::metrics;

namespace {

const json& position_weights_reference() {
  static const json ref = osprey::testing::read_reference("keras_position_weights.json");
  return ref;
}

const json& training_case(const std::string& name) {
  for (const auto& c : position_weights_reference().at("training")) {
    if (c.at("name") == name) return c;
  }
  throw std::runtime_error("no training case " + name);
}

// The per-step classifier: Dense layers over each of 6 steps of 4 features, 3 classes.
Sequential per_step_dense(bool eager) {
  const json& d = training_case("per_step_dense").at("data");
  Sequential m({layers::Input({6, 4}), layers::Dense(8, "tanh"), layers::Dense(3, "softmax")});
  m.set_weights({tensor_of(d.at("kernels")[0]), Tensor::zeros(Shape({8})), tensor_of(d.at("kernels")[1]),
                 Tensor::zeros(Shape({3}))});
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.2, .momentum = 0.5}),
             .loss = "sparse_categorical_crossentropy",
             .metrics = {"accuracy"},
             .weighted_metrics = {"accuracy", M::SparseCategoricalCrossentropy(false, "wce")},
             .run_eagerly = eager});
  return m;
}

// Embedding(mask_zero) then SimpleRNN over padded token sequences, a softmax tag per step.
Model masked_tagger(bool eager) {
  const json& d = training_case("masked_rnn_tagger").at("data");
  auto in = keras::Input({6}, {.dtype = DType::int32});
  auto h = layers::Embedding(7, 3, {.mask_zero = true})(in);
  h = layers::SimpleRNN(5, {}, {.return_sequences = true})(h);
  Model m(in, layers::Dense(2, "softmax")(h));
  const auto& k = d.at("kernels");
  m.set_weights({tensor_of(k[0]), tensor_of(k[1]), tensor_of(k[2]), Tensor::zeros(Shape({5})), tensor_of(k[3]),
                 Tensor::zeros(Shape({2}))});
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.5, .momentum = 0.5}),
             .loss = "sparse_categorical_crossentropy",
             .weighted_metrics = {"accuracy"},
             .run_eagerly = eager});
  return m;
}

// A 1x1 convolution's softmax per pixel of 4x4 images, the loss over Σ of the weights.
Sequential per_pixel_conv(bool eager) {
  const json& d = training_case("per_pixel_conv").at("data");
  Sequential m({layers::Input({4, 4, 2}), layers::Conv2D(3, 1, {.activation = "softmax"})});
  m.set_weights({tensor_of(d.at("kernels")[0]), Tensor::zeros(Shape({3}))});
  L::CategoricalCrossentropy loss;
  loss.set_reduction(L::Reduction::mean_with_sample_weight);
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.5}),
             .loss = loss,
             .weighted_metrics = {"categorical_accuracy"},
             .run_eagerly = eager});
  return m;
}

}  // namespace

TEST(PositionWeights, LossesWeighEachStepOrPixelAsKeras) {
  for (const auto& c : position_weights_reference().at("losses")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    const LossRef ref = serialization::loss_from(json{{"class_name", c.at("class")}, {"config", c.at("config")}});
    const L::Loss& loss = *ref.get();
    EXPECT_EQ(json::parse(loss.get_config()).at("reduction"), c.at("config").at("reduction"));
    const Tensor y = c.at("sparse_labels").get<bool>() ? tensor_of(c.at("y"), DType::int32) : tensor_of(c.at("y"));
    Variable pred(tensor_of(c.at("y_pred")), "y_pred");
    GradientTape tape;
    const Tensor value = loss(y, pred.value(), tensor_of(c.at("sample_weight")));
    const auto grads = tape.gradient(value, std::vector<Variable*>{&pred});
    if (c.at("loss").is_array()) {
      expect_close(value, c.at("loss"), 2e-5, "reduction none");
    } else {
      osprey::testing::expect_near_rel(value.item(), c.at("loss").get<double>(), "loss", 2e-6);
    }
    expect_close(grads[0], c.at("grad"), 2e-4, "gradient");
  }
}

TEST(PositionWeights, MetricsWeighEachStepOrPixelAsKeras) {
  for (const auto& c : position_weights_reference().at("metrics")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    const auto metric =
        serialization::metrics_from(json::array({{{"class_name", c.at("class")}, {"config", c.at("config")}}})).at(0).get();
    for (int pass = 0; pass < 2; ++pass) {
      metric->reset_state();
      for (const auto& b : c.at("batches")) {
        const bool sparse = c.at("sparse_labels").get<bool>();
        const Tensor yt = sparse ? tensor_of(b[0], DType::int32) : tensor_of(b[0]);
        const Tensor yp = name == "mean_iou_steps" ? tensor_of(b[1], DType::int32) : tensor_of(b[1]);
        metric->update_state(yt, yp, tensor_of(b[2]));
      }
      osprey::testing::expect_near_rel(metric->result(), c.at("result").get<double>(), name, 2e-6);
    }
  }
}

namespace {

// The training case `name`: its model from make(run_eagerly), fitted eager and recorded on its data with its
// weights, to Keras's history, weights and weighted evaluate.
template <typename Make>
void fit_as_keras(const std::string& name, Make make, DType x_dtype, DType y_dtype, int batch_size = 8) {
  const json& c = training_case(name);
  const json& d = c.at("data");
  const Tensor x = tensor_of(d.at("x"), x_dtype), y = tensor_of(d.at("y"), y_dtype), w = tensor_of(d.at("sample_weight"));
  for (bool eager : {false, true}) {
    SCOPED_TRACE(name + (eager ? ", run_eagerly" : ", recorded steps"));
    auto m = make(eager);
    expect_history(
        m.fit(x, y, {.epochs = 3, .batch_size = batch_size, .verbose = 0, .shuffle = false, .sample_weight = w}), c);
    expect_weights(m, c.at("weights_after"));
    expect_logs(m.evaluate_dict(x, y, {.batch_size = batch_size, .verbose = 0, .sample_weight = w}), c.at("evaluate"),
                "evaluate");
  }
}

}  // namespace

TEST(PositionWeights, FitAndEvaluateWeighEachStepAsKeras) {
  fit_as_keras("per_step_dense", per_step_dense, DType::float32, DType::int32);
  // Batches of 32: a recorded step split in halves (each half's positions, the metrics over both).
  fit_as_keras("per_step_dense_batch_32", per_step_dense, DType::float32, DType::int32, 32);
  // A Dataset's third item weighs the same way.
  const json& c = training_case("per_step_dense");
  const json& d = c.at("data");
  const Tensor x = tensor_of(d.at("x")), y = tensor_of(d.at("y"), DType::int32), w = tensor_of(d.at("sample_weight"));
  auto m = per_step_dense(false);
  const auto ds = data::Dataset::from_tensor_slices({x, y, w}).batch(8);
  expect_history(m.fit(ds, {.epochs = 3, .verbose = 0}), c);
  expect_logs(m.evaluate_dict(ds, {.verbose = 0}), c.at("evaluate"), "evaluate(Dataset)");
  // train_on_batch and test_on_batch take the same weights.
  auto b = per_step_dense(false);
  const auto first = b.test_on_batch(x.slice_rows(0, 8), y.slice_rows(0, 8), w.slice_rows(0, 8));
  const auto trained = b.train_on_batch(x.slice_rows(0, 8), y.slice_rows(0, 8), w.slice_rows(0, 8));
  osprey::testing::expect_near_rel(trained.at(0), first.at(0), "train_on_batch's loss is the batch's loss before the update", 2e-6);
}

TEST(PositionWeights, AMaskedOutputWeighsItsUnmaskedStepsByTheirWeights) {
  fit_as_keras("masked_rnn_tagger", masked_tagger, DType::int32, DType::int32);
}

TEST(PositionWeights, APerPixelClassifierTrainsAsKeras) {
  fit_as_keras("per_pixel_conv", per_pixel_conv, DType::float32, DType::float32);
}

TEST(PositionWeights, WeightsThatFitNoPositionsAreValueErrors) {
  L::SparseCategoricalCrossentropy scce;
  const Tensor y = Tensor::zeros(Shape({4, 5}), DType::int32), p = Tensor::full(Shape({4, 5, 3}), 1.0f / 3);
  // More steps than the predictions have.
  try {
    scce(y, p, Tensor::ones(Shape({4, 6})));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("(4, 6)"));
    EXPECT_THAT(e.what(), HasSubstr("(4, 5, 3)"));
  }
  // A loss reduces y_pred's last axis: weights of y_pred's own shape weigh nothing.
  L::MeanSquaredError mse;
  EXPECT_THROW(mse(Tensor::zeros(Shape({4, 5})), Tensor::zeros(Shape({4, 5})), Tensor::ones(Shape({4, 5}))), ValueError);
  // A loss over the batch's pairs takes one weight per sample.
  L::Circle circle;
  EXPECT_THROW(circle(Tensor::zeros(Shape({4}), DType::int32), Tensor::ones(Shape({4, 2})), Tensor::ones(Shape({4, 2}))),
               ValueError);
  // A metric's weights must start y_pred's axes.
  M::SparseCategoricalAccuracy acc;
  EXPECT_THROW(acc.update_state(y, p, Tensor::ones(Shape({4, 3}))), ValueError);

  // fit: class_weight with weights per step; a masked output's weights per position that are not its steps.
  auto m = per_step_dense(false);
  const json& d = training_case("per_step_dense").at("data");
  const Tensor x = tensor_of(d.at("x")), ys = tensor_of(d.at("y"), DType::int32), w = tensor_of(d.at("sample_weight"));
  try {
    m.fit(x, ys, {.verbose = 0, .sample_weight = w, .class_weight = {{0, 2.0}}});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("class_weight"));
  }
  EXPECT_THROW(m.fit(x, ys, {.verbose = 0, .sample_weight = Tensor::ones(Shape({16, 7}))}), ValueError);
  EXPECT_THROW(m.fit(x, ys, {.verbose = 0, .sample_weight = Tensor::ones(Shape({15, 6}))}), ValueError);
  auto tagger = masked_tagger(false);
  const json& t = training_case("masked_rnn_tagger").at("data");
  try {
    tagger.evaluate(tensor_of(t.at("x"), DType::int32), tensor_of(t.at("y"), DType::int32),
                    {.verbose = 0, .sample_weight = Tensor::ones(Shape({16, 6, 2}))});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("(16, 6, 2)"));
  }
}

TEST(PositionWeights, ALossReductionSurvivesAKerasFile) {
  SKIP_WITHOUT_HDF5();
  const json& c = training_case("per_pixel_conv");
  const json& d = c.at("data");
  const Tensor x = tensor_of(d.at("x")), y = tensor_of(d.at("y")), w = tensor_of(d.at("sample_weight"));
  auto m = per_pixel_conv(false);
  m.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0, .shuffle = false, .sample_weight = w});
  const std::string path = osprey::testing::temp_path("position_weights", "per_pixel.keras");
  m.save(path);
  auto back = models::load_model(path);
  const json cc = json::parse(back->to_json()).at("compile_config");
  EXPECT_EQ(cc.at("loss").at("config").at("reduction"), "mean_with_sample_weight");
  const EvaluateOptions eo{.batch_size = 8, .verbose = 0, .sample_weight = w};
  EXPECT_EQ(back->evaluate_dict(x, y, eo), m.evaluate_dict(x, y, eo));
  // A reduction of Keras's that does not exist is refused with the ones that do.
  try {
    serialization::loss_from(json{{"class_name", "MeanSquaredError"}, {"config", {{"reduction", "median"}}}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("median"));
    EXPECT_THAT(e.what(), HasSubstr("mean_with_sample_weight"));
  }
  const LossRef summed = serialization::loss_from(json{{"class_name", "MeanSquaredError"}, {"config", {{"reduction", "sum"}}}});
  EXPECT_EQ(summed.get()->reduction(), L::Reduction::sum);
  EXPECT_EQ(serialization::loss_json(summed, "m").at("config").at("reduction"), "sum");
}
