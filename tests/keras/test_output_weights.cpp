// Sample weights per output of a multi-output model (Keras's sample_weight=[w_a, w_b], or a map by output name),
// and one array of one weight per sample for every output, against Keras 3.15 on TensorFlow
// (tests/keras/keras_output_weights_reference.py regenerates tests/data/keras_output_weights.json): fit with
// validation_data, evaluate, a Dataset's third item, train_on_batch/test_on_batch, eager and recorded steps, and
// the cases Keras refuses.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "keras/fit_expect.h"
#include "keras/reference_json.h"
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
namespace M = osprey::keras::metrics;

namespace {

const json& output_weights_reference() {
  static const json ref = osprey::testing::read_reference("keras_output_weights.json");
  return ref;
}

const json& ref_data() { return output_weights_reference().at("data"); }

const json& weight_case(const std::string& name) {
  for (const auto& c : output_weights_reference().at("cases")) {
    if (c.at("name") == name) return c;
  }
  throw std::runtime_error("no case " + name);
}

// A per-step tagger ("tags", softmax over 3 classes at each of 5 steps) and a pooled regression head ("score") over
// one hidden Dense layer.
template <typename ModelT = Model>
ModelT two_outputs(bool eager) {
  auto in = keras::Input({5, 4}, {.name = "x"});
  auto h = layers::Dense(6, "tanh", {.name = "h"})(in);
  auto tags = layers::Dense(3, "softmax", {.name = "tags"})(h);
  auto score = layers::Dense(1, "", {.name = "score"})(layers::GlobalAveragePooling1D("channels_last", false, "pool")(h));
  ModelT m(in, {tags, score}, "two_outputs");
  const auto& k = ref_data().at("kernels");
  m.set_weights({tensor_of(k[0]), Tensor::zeros(Shape({6})), tensor_of(k[1]), Tensor::zeros(Shape({3})),
                 tensor_of(k[2]), Tensor::zeros(Shape({1}))});
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1, .momentum = 0.5}),
             .loss = {"sparse_categorical_crossentropy", "mse"},
             .metrics = std::map<std::string, std::vector<MetricRef>>{{"tags", {"accuracy"}}, {"score", {"mae"}}},
             .weighted_metrics = std::map<std::string, std::vector<MetricRef>>{
                 {"tags", {"accuracy", M::SparseCategoricalCrossentropy(false, "wce")}}, {"score", {"mae"}}},
             .run_eagerly = eager,
             .loss_weights = {1.0, 0.5}});
  return m;
}

// Keras's guide's train_step, which hands the batch's weights (one per output here) to compute_loss and
// compute_metrics.
class CustomStep : public Model {
 public:
  using Model::Model;
  void train_step(const StepData& data, Logs& logs) override {
    EXPECT_EQ(data.sample_weights().size(), 2u);
    EXPECT_THROW((void)data.sample_weight(), ValueError);  // not one tensor: sample_weights() has them
    std::vector<Tensor> grads, y_pred;
    Tensor loss;
    const auto vars = trainable_variables();
    {
      GradientTape tape;
      y_pred = call_all(data.x(), true);
      loss = compute_loss(data, y_pred);
      grads = tape.gradient(loss, vars);
    }
    optimizer()->apply_gradients(grads, vars);
    compute_metrics(data, y_pred, loss, logs);
  }
};

struct Data {
  Tensor x = tensor_of(ref_data().at("x"));
  Arrays y{tensor_of(ref_data().at("tags"), DType::int32), tensor_of(ref_data().at("score"))};
  Tensor w_steps = tensor_of(ref_data().at("w_steps")), w_samples = tensor_of(ref_data().at("w_samples"));
  Tensor w_one = tensor_of(ref_data().at("w_one"));
};

Arrays first_rows(const Arrays& a, int64_t k) {
  Arrays out;
  for (const auto& t : a.tensors) out.tensors.push_back(t.defined() ? t.slice_rows(0, k) : Tensor());
  out.keys = a.keys;
  return out;
}

// Case `name` with `weights` as fit, evaluate and the *_on_batch calls take them, eager and recorded.
void train_as_keras(const std::string& name, const Arrays& weights, const ValidationData& validation = {}) {
  const json& c = weight_case(name);
  const Data d;
  for (bool eager : {false, true}) {
    SCOPED_TRACE(name + (eager ? ", run_eagerly" : ", recorded steps"));
    auto m = two_outputs(eager);
    expect_history(m.fit(d.x, d.y,
                         {.epochs = 3, .batch_size = 8, .verbose = 0, .validation_data = validation, .shuffle = false,
                          .sample_weight = weights}),
                   c);
    expect_weights(m, c.at("weights_after"));
    expect_logs(m.evaluate_dict(d.x, d.y, {.batch_size = 8, .verbose = 0, .sample_weight = weights}), c.at("evaluate"),
                "evaluate");
    auto fresh = two_outputs(eager);
    const Tensor x8 = d.x.slice_rows(0, 8);
    const Arrays y8 = first_rows(d.y, 8), w8 = first_rows(weights, 8);
    const auto names = fresh.metrics_names();
    auto as_map = [&](const std::vector<double>& v) {
      std::map<std::string, double> out;
      for (std::size_t i = 0; i < v.size() && i < names.size(); ++i) out[names[i]] = v[i];
      return out;
    };
    expect_logs(as_map(fresh.test_on_batch(x8, y8, w8)), c.at("test_on_batch"), "test_on_batch");
    expect_logs(as_map(fresh.train_on_batch(x8, y8, w8)), c.at("train_on_batch"), "train_on_batch");
    expect_weights(fresh, c.at("weights_after_train_on_batch"));
  }
}

}  // namespace

TEST(OutputWeights, EachOutputTakesItsOwnWeightsAsKeras) {
  const Data d;
  const ValidationData validation(tensor_of(ref_data().at("x_val")),
                                  Arrays{tensor_of(ref_data().at("tags_val"), DType::int32), tensor_of(ref_data().at("score_val"))},
                                  Arrays{tensor_of(ref_data().at("w_val_steps")), tensor_of(ref_data().at("w_val_samples"))});
  // A list in the outputs' order: a weight per step for the tagger, one per sample for the regression head.
  train_as_keras("per_output", Arrays{d.w_steps, d.w_samples}, validation);
  // The same as a map by output name (Keras 3.15 takes the dict only for a model whose outputs are a dict).
  const std::map<std::string, Tensor> named{{"score", d.w_samples}, {"tags", d.w_steps}};
  train_as_keras("per_output", Arrays(named), validation);
}

TEST(OutputWeights, ACustomTrainStepGetsThemForComputeLoss) {
  const Data d;
  const json& c = weight_case("per_output");
  auto m = two_outputs<CustomStep>(true);
  const auto h = m.fit(d.x, d.y, {.epochs = 3, .batch_size = 8, .verbose = 0, .shuffle = false,
                                  .sample_weight = Arrays{d.w_steps, d.w_samples}});
  // (compute_metrics logs the loss and the metrics; the per-output losses are the built-in step's.)
  for (const char* key : {"loss", "tags_accuracy", "tags_weighted_accuracy", "tags_wce", "score_mae", "score_weighted_mae"}) {
    ASSERT_TRUE(h.history.count(key)) << key;
    for (std::size_t e = 0; e < 3; ++e) {
      osprey::testing::expect_near_rel(h.history.at(key)[e], c.at("history").at(key)[e].get<double>(), key, 5e-5);
    }
  }
  expect_weights(m, c.at("weights_after"));
}

TEST(OutputWeights, AnUndefinedTensorLeavesItsOutputUnweighted) {
  const Data d;
  train_as_keras("tags_only", Arrays{d.w_steps, Tensor()});
}

TEST(OutputWeights, OneWeightPerSampleWeighsEveryOutput) {
  const Data d;
  // (Keras's numbers: its list of that weight repeated over the tagger's steps, and the weight for the head.)
  train_as_keras("one_for_all", d.w_one);
}

TEST(OutputWeights, ADatasetGivesThemAsATupleOrMap) {
  const Data d;
  const json& c = weight_case("per_output");
  using data::Element;
  const Element y = Element::tuple({d.y.tensors[0], d.y.tensors[1]});
  for (const Element& w : {Element::tuple({d.w_steps, d.w_samples}),
                           Element::named({{"tags", d.w_steps}, {"score", d.w_samples}})}) {
    auto m = two_outputs(false);
    const auto ds = data::Dataset::from_tensor_slices(Element::tuple({d.x, y, w})).batch(8);
    const ValidationData validation(tensor_of(ref_data().at("x_val")),
                                    Arrays{tensor_of(ref_data().at("tags_val"), DType::int32), tensor_of(ref_data().at("score_val"))},
                                    Arrays{tensor_of(ref_data().at("w_val_steps")), tensor_of(ref_data().at("w_val_samples"))});
    expect_history(m.fit(ds, {.epochs = 3, .verbose = 0, .validation_data = validation}), c);
    expect_weights(m, c.at("weights_after"));
    expect_logs(m.evaluate_dict(ds, {.verbose = 0}), c.at("evaluate"), "evaluate(Dataset)");
  }
}

TEST(OutputWeights, WhatKerasRefusesIsAValueError) {
  const Data d;
  auto m = two_outputs(false);
  auto message = [&](const FitOptions& o) -> std::string {
    try {
      m.fit(d.x, d.y, o);
    } catch (const ValueError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  };
  const auto& errors = output_weights_reference().at("errors");
  // One array of more than one weight per sample for two outputs.
  EXPECT_THAT(message({.verbose = 0, .sample_weight = d.w_steps}),
              HasSubstr(errors[0].at("message").get<std::string>().substr(0, 60)));
  // Three arrays for two outputs; a map with a name that is not an output.
  EXPECT_THAT(message({.verbose = 0, .sample_weight = Arrays{d.w_steps, d.w_samples, d.w_one}}),
              HasSubstr("a list of 3 array(s)"));
  const std::string wrong = message(
      {.verbose = 0, .sample_weight = Arrays(std::map<std::string, Tensor>{{"tags", d.w_steps}, {"other", d.w_one}})});
  EXPECT_THAT(wrong, HasSubstr("You should provide one `sample_weight` array per output"));
  EXPECT_THAT(wrong, HasSubstr("other"));
  // class_weight with two outputs.
  EXPECT_THAT(message({.verbose = 0, .class_weight = {{0, 1.0}, {1, 2.0}}}),
              HasSubstr(errors[2].at("message").get<std::string>().substr(0, 50)));
  // A weight of the wrong rows for one output names it.
  EXPECT_THAT(message({.verbose = 0, .sample_weight = Arrays{d.w_steps, Tensor::ones(Shape({15}))}}),
              HasSubstr("output 'score'"));
}
