// Keras's Circle loss against Keras 3.15 on TensorFlow (tests/keras/keras_circle_reference.py regenerates
// tests/data/keras_circle.json): values, the mask on zero values, gradients, reductions, weights, a Keras config,
// and a model trained with it.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/loss_metric_config.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;
namespace L = osprey::keras::losses;

namespace {

const json& circle_loss_reference() {
  static const json ref = osprey::testing::read_reference("keras_circle.json");
  return ref;
}

L::Reduction reduction_of(const std::string& r) {
  if (r == "sum") return L::Reduction::sum;
  if (r == "none") return L::Reduction::none;
  if (r == "mean_with_sample_weight") return L::Reduction::mean_with_sample_weight;
  return L::Reduction::sum_over_batch_size;
}

}  // namespace

TEST(CircleLoss, ValuesMaskGradientsAndReductionsAsKeras) {
  for (const auto& c : circle_loss_reference().at("cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    const json& config = c.at("config");
    L::Circle loss(config.at("gamma"), config.at("margin"), config.at("remove_diagonal"));
    loss.set_reduction(reduction_of(config.at("reduction")));
    const json written = json::parse(loss.get_config());
    EXPECT_EQ(written, config);
    const Tensor y = tensor_of(c.at("y"), DType::int32);
    Variable emb(tensor_of(c.at("y_pred")), "embeddings");
    expect_close(loss.per_sample(y, emb.value()), c.at("per_sample"), 2e-5, "per-sample values");
    GradientTape tape;
    const Tensor value =
        c.at("sample_weight").is_null() ? loss(y, emb.value()) : loss(y, emb.value(), tensor_of(c.at("sample_weight")));
    const auto grads = tape.gradient(value, std::vector<Variable*>{&emb});
    if (c.at("loss").is_array()) {
      expect_close(value, c.at("loss"), 2e-5, "reduction none");
    } else {
      const double want = c.at("loss");
      EXPECT_NEAR(value.item(), want, 2e-6 * std::max(1.0, std::abs(want)));
    }
    expect_close(grads[0], c.at("grad"), 2e-4, "gradient");
    for (float g : grads[0].to_vector<float>()) ASSERT_TRUE(std::isfinite(g));
  }
}

TEST(CircleLoss, FloatLabelsTruncateAsKerasCast) {
  const json& c = circle_loss_reference().at("cases").at(3);  // labels (N, 1) as floats
  ASSERT_EQ(c.at("name"), "labels_n_by_1_float");
  L::Circle loss(3.0);
  const Tensor emb = tensor_of(c.at("y_pred"));
  const double want = c.at("loss");
  EXPECT_NEAR(loss(tensor_of(c.at("y")), emb).item(), want, 2e-6 * want);
  // 1.7 and 1.2 are both class 1 once truncated.
  const Tensor shifted = osprey::ops::add(tensor_of(c.at("y")), Tensor::scalar(0.7f));
  EXPECT_NEAR(loss(shifted, emb).item(), want, 2e-6 * want);
}

TEST(CircleLoss, AModelTrainsWithItAsKeras) {
  const json& d = circle_loss_reference().at("training");
  for (bool eager : {false, true}) {
    SCOPED_TRACE(eager ? "run_eagerly" : "recorded steps");
    Sequential m({layers::Input({6}), layers::Dense(4), layers::UnitNormalization()});
    m.set_weights({tensor_of(d.at("kernel")), Tensor::zeros(Shape({4}))});
    m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.05}), .loss = L::Circle(8.0), .run_eagerly = eager});
    const Tensor x = tensor_of(d.at("x")), y = tensor_of(d.at("y"), DType::int32);
    const auto h = m.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
    for (std::size_t e = 0; e < 2; ++e) {
      const double want = d.at("history").at("loss")[e];
      EXPECT_NEAR(h.history.at("loss")[e], want, 2e-5 * want) << "epoch " << e + 1;
    }
    const auto w = m.get_weights();
    for (std::size_t i = 0; i < w.size(); ++i) expect_close(w[i], d.at("weights_after")[i], 2e-5, "weight " + std::to_string(i));
    const double want = d.at("evaluate");
    EXPECT_NEAR(m.evaluate_dict(x, y, {.batch_size = 8, .verbose = 0}).at("loss"), want, 2e-5 * want);
  }
}

TEST(CircleLoss, AKerasConfigAndItsNameLoad) {
  const auto loss = serialization::loss_from(json{{"module", "keras.losses"}, {"class_name", "Circle"},
                                                  {"config", {{"name", "circle"}, {"reduction", "sum_over_batch_size"},
                                                              {"gamma", 16.0}, {"margin", 0.3}, {"remove_diagonal", false}}}});
  const auto* circle = dynamic_cast<const L::Circle*>(loss.get().get());
  ASSERT_TRUE(circle);
  EXPECT_EQ(circle->gamma(), 16.0);
  EXPECT_EQ(circle->margin(), 0.3);
  EXPECT_FALSE(circle->remove_diagonal());
  EXPECT_TRUE(std::dynamic_pointer_cast<L::Circle>(L::get("circle")));
}

TEST(CircleLoss, BadShapesAreValueErrors) {
  L::Circle loss;
  const Tensor emb = Tensor::ones(Shape({4, 3}));
  try {
    loss(Tensor::zeros(Shape({3})), emb);
    ADD_FAILURE() << "3 labels for 4 embeddings";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("(4, 3)"));
    EXPECT_THAT(e.what(), HasSubstr("(3,)"));
  }
  EXPECT_THROW(loss(Tensor::zeros(Shape({4})), Tensor::ones(Shape({4, 3, 2}))), ValueError);  // embeddings of rank 3
  EXPECT_THROW(L::Circle(std::nan("")), ValueError);
}
