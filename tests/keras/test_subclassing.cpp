// Model subclassing: a C++ class derived from keras::Model with its own call(), and overrides of train_step /
// test_step / predict_step ("customise what happens in fit"), as Keras 3 allows.
#include <gtest/gtest.h>

#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/ops.h"
#include "osprey/random.h"

using namespace osprey;
using namespace osprey::keras;

namespace {

// h = relu(x W1); y = sigmoid((h + relu(h W2)) W3): a residual MLP written as code.
class ResidualMlp : public Model {
 public:
  ResidualMlp() : Model("residual_mlp") {
    d1 = track(layers::Dense(8, "relu", {.name = "d1"}));
    d2 = track(layers::Dense(8, "relu", {.name = "d2"}));
    out = track(layers::Dense(1, "sigmoid", {.name = "out"}));
  }
  Tensor call(const Tensor& x, bool training) override {
    Tensor h = (*d1)(x, training);
    return (*out)(ops::add(h, (*d2)(h, training)), training);
  }
  std::shared_ptr<layers::Dense> d1, d2, out;
};

// The same step as the default one, written as Keras's guide writes it; counts its calls.
class CustomStep : public ResidualMlp {
 public:
  void train_step(const StepData& data, Logs& logs) override {
    ++steps;
    std::vector<Tensor> grads;
    std::vector<Tensor> y_pred;
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
  void test_step(const StepData& data, Logs& logs) override {
    ++tests;
    Model::test_step(data, logs);
  }
  std::vector<Tensor> predict_step(const StepData& data) override {
    return {ops::mul(call_all(data.x(), false)[0], Tensor::scalar(2.0))};
  }
  int steps = 0, tests = 0;
};

class NoCall : public Model {
 public:
  NoCall() { track(layers::Dense(2)); }
};

std::pair<Tensor, Tensor> sample_data(int n) {
  random::set_seed(3);
  return {random::uniform({n, 5}, -1, 1), random::randint(0, 2, {n, 1}).cast(DType::float32)};
}

// The functional model with ResidualMlp's layers, for comparison.
Model functional_twin() {
  auto x = keras::Input({5});
  auto h = layers::Dense(8, "relu", {.name = "d1"})(x);
  auto r = layers::Dense(8, "relu", {.name = "d2"})(h);
  return Model(x, layers::Dense(1, "sigmoid", {.name = "out"})(layers::Add()({h, r})));
}

}  // namespace

TEST(Subclassing, AModelWithItsOwnCallTrainsAsTheSameFunctionalModel) {
  const auto [x, y] = sample_data(64);
  ResidualMlp sub;
  EXPECT_EQ(sub.name(), "residual_mlp");
  EXPECT_EQ(sub.layers().size(), 3u);
  Model twin = functional_twin();
  (void)sub.predict(x, {.verbose = 0});  // builds the layers
  twin.set_weights(sub.get_weights());
  EXPECT_EQ(sub.count_params(), twin.count_params());
  EXPECT_EQ(sub.predict(x, {.verbose = 0}).to_vector<float>(), twin.predict(x, {.verbose = 0}).to_vector<float>());
  for (Model* m : {static_cast<Model*>(&sub), &twin}) {
    m->compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  }
  auto hs = sub.fit(x, y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
  auto ht = twin.fit(x, y, {.epochs = 3, .batch_size = 16, .verbose = 0, .shuffle = false});
  EXPECT_EQ(hs.history, ht.history);
  EXPECT_EQ(sub.get_weights()[4].to_vector<float>(), twin.get_weights()[4].to_vector<float>());
  EXPECT_EQ(sub.evaluate(x, y, {.verbose = 0}), twin.evaluate(x, y, {.verbose = 0}));
  // Used as a layer of a functional model: its output shape comes from one sample through its call().
  auto in = keras::Input({5});
  auto shared = std::make_shared<ResidualMlp>();
  auto out = (*shared)(in);
  EXPECT_EQ(out.shape(), Shape({1}));
  Model outer(in, layers::Dense(2)(out));
  EXPECT_EQ(outer.predict(x, {.verbose = 0}).shape(), Shape({64, 2}));
}

TEST(Subclassing, OverriddenStepsRunInFitEvaluateAndPredict) {
  const auto [x, y] = sample_data(64);
  CustomStep custom;
  custom.compile({.optimizer = "sgd", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  auto hc = custom.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0, .validation_data = {x, y}});
  EXPECT_EQ(custom.steps, 8);
  EXPECT_EQ(custom.tests, 8);  // validation: 4 batches per epoch
  ASSERT_EQ(hc.history.count("loss"), 1u);
  ASSERT_EQ(hc.history.count("accuracy"), 1u);
  for (const auto& key : {"loss", "accuracy", "val_loss", "val_accuracy"}) {
    ASSERT_EQ(hc.history[key].size(), 2u) << key;
  }
  // predict_step doubles the outputs.
  const auto doubled = custom.predict(x, {.verbose = 0}).to_vector<float>();
  const auto once = custom.call_all({x})[0].to_vector<float>();
  for (std::size_t i = 0; i < once.size(); ++i) ASSERT_FLOAT_EQ(doubled[i], 2 * once[i]);
  // train_on_batch runs the override too.
  custom.train_on_batch(x, y);
  EXPECT_EQ(custom.steps, 9);
}

TEST(Subclassing, TheGuidesStepGivesTheDefaultStepsNumbers) {
  const auto [x, y] = sample_data(48);
  CustomStep custom;
  ResidualMlp plain;
  (void)custom.predict(x, {.verbose = 0});
  (void)plain.predict(x, {.verbose = 0});
  plain.set_weights(custom.get_weights());
  custom.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  plain.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  auto hc = custom.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
  auto hp = plain.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
  EXPECT_EQ(hc.history, hp.history);
  EXPECT_EQ(custom.get_weights()[0].to_vector<float>(), plain.get_weights()[0].to_vector<float>());
}

TEST(Subclassing, ASubclassWithoutCallSaysWhatToOverride) {
  NoCall m;
  try {
    (void)m.predict(Tensor::zeros({2, 3}), {.verbose = 0});
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("override call("), std::string::npos) << e.what();
  }
}

namespace {
// A layer of one's own: y = x · w + b per feature, w and b learned (Keras's custom-layer guide, in C++).
class Scale : public Layer {
 public:
  explicit Scale(double init = 1.0, std::string name = "") : Layer(name, "scale"), init_(init) {}
  OSPREY_KERAS_LAYER(Scale)
  std::string class_name() const override { return "Scale"; }
  Shape build(const Shape& input_shape) override {
    if (!built_) {
      w_ = &add_weight("w", Tensor::full({input_shape[-1]}, init_));
      b_ = &add_weight("b", Tensor::zeros({input_shape[-1]}));
    }
    return finish_build(input_shape);
  }
  Tensor call(const Tensor& x, bool) override { return ops::add(ops::mul(x, w_->value()), b_->value()); }
  std::string get_config() const override { return config_with(Layer::get_config(), {{"init", init_}}); }

 private:
  double init_;
  Variable *w_ = nullptr, *b_ = nullptr;
};
}  // namespace

TEST(Subclassing, ACustomLayerBuildsCallsTrainsAndGivesItsConfig) {
  random::set_seed(4);
  const Tensor x = random::uniform({32, 3}, -1, 1);
  const Tensor y = ops::add(ops::mul(x, Tensor::from_vector<float>({2, -1, 0.5f}, {3})), Tensor::scalar(0.3));
  auto in = keras::Input({3});
  auto scale = std::make_shared<Scale>(1.0, "my_scale");
  Model m(in, (*scale)(in));
  EXPECT_EQ(m.count_params(), 6);
  EXPECT_EQ(scale->get_config(), R"({"name": "my_scale", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "init": 1.0})");
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.5}), .loss = "mse"});
  auto h = m.fit(x, y, {.epochs = 60, .batch_size = 32, .verbose = 0});
  EXPECT_LT(h.history["loss"].back(), 1e-3);
  const auto w = scale->variables()[0]->value().to_vector<float>();
  EXPECT_NEAR(w[0], 2.0, 0.05);
  EXPECT_NEAR(w[1], -1.0, 0.05);
  // In a Sequential model too, and frozen it stays as it is.
  Sequential seq({layers::Input({3}), Scale(3.0), layers::Dense(1)});
  seq.layers()[0]->trainable = false;
  seq.compile({.optimizer = "sgd", .loss = "mse"});
  seq.fit(x, ops::reduce_sum(y, 1).reshape({32, 1}), {.epochs = 2, .verbose = 0});
  EXPECT_EQ(seq.layers()[0]->variables()[0]->value().to_vector<float>(), (std::vector<float>{3, 3, 3}));
}

// Keras builds a subclassed model on the first batch before any train_step: a step that lists
// trainable_variables() before its forward pass (as Keras's guide does) finds them on the first batch too.
TEST(Subclassing, AnOverridingStepSeesTheVariablesFromTheFirstBatch) {
  const auto [x, y] = sample_data(32);
  CustomStep never_called;  // not built before fit
  never_called.compile({.optimizer = "adam", .loss = "binary_crossentropy"});
  auto h = never_called.fit(x, y, {.epochs = 1, .batch_size = 16, .verbose = 0});
  EXPECT_EQ(never_called.steps, 2);
  EXPECT_EQ(never_called.trainable_variables().size(), 6u);
  CustomStep by_batch;
  by_batch.compile({.optimizer = "adam", .loss = "binary_crossentropy"});
  EXPECT_NO_THROW(by_batch.train_on_batch(x, y));
  // An optimizer given no variables says why instead of failing inside the update.
  EXPECT_THROW(optimizers::Adam().apply_gradients({}, {}), ValueError);
}
