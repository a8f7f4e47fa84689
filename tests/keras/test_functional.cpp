// Functional models against Keras 3: the cases of tests/keras/keras_functional_reference.py (which regenerates
// tests/data/keras_functional.json) built with the same layer names and initial weights, predicted, trained on the
// same batches and evaluated; plus the graph's errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "test_util.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"
#include "ops/kernel.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;

namespace {

const json& functional_reference(const std::string& name) {
  static const json all = [] {
    std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/keras_functional.json");
    return json::parse(in);
  }();
  return all.at("cases").at(name);
}

std::vector<Tensor> tensors_of(const json& j, bool several) {
  if (!several) return {tensor_of(j)};
  std::vector<Tensor> out;
  for (const auto& e : j) out.push_back(tensor_of(e));
  return out;
}

void set_weights_by_layer(Model& model, const json& weights) {
  for (const auto& [name, values] : weights.items()) {
    auto layer = model.get_layer(name);
    auto vars = layer->variables();
    ASSERT_EQ(vars.size(), values.size()) << name;
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(tensor_of(values[i]));
  }
}

void expect_weights(Model& model, const json& weights, double tol) {
  for (const auto& [name, values] : weights.items()) {
    auto vars = model.get_layer(name)->variables();
    for (std::size_t i = 0; i < vars.size(); ++i) expect_close(vars[i]->value(), values[i], tol, name + "/" + vars[i]->name());
  }
}

// Sets the reference's initial weights, checks predict, trains as Keras did (batches of 8 in order, 2 epochs) and
// checks the history, the weights, predict and evaluate afterwards.
void check_case(Model& model, const std::string& name, CompileOptions compile, bool several_x, bool several_y,
                double tol = 2e-5) {
  const json& ref = functional_reference(name);
  set_weights_by_layer(model, ref.at("initial_weights"));
  const auto x = tensors_of(ref.at("x"), several_x);
  const auto y = tensors_of(ref.at("y"), several_y);
  auto output = [&](const char* key, std::size_t o) -> const json& {
    return several_y ? ref.at(key)[o] : ref.at(key);
  };
  const auto before = model.predict_all(x, {.verbose = 0});
  for (std::size_t o = 0; o < before.size(); ++o) expect_close(before[o], output("predict_before", o), tol, name + " predict before");
  model.compile(std::move(compile));
  const auto history = model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (const auto& [key, values] : ref.at("history").items()) {
    ASSERT_TRUE(history.history.count(key)) << name << ": no '" << key << "' in the history";
    for (std::size_t e = 0; e < values.size(); ++e) {
      EXPECT_NEAR(history.history.at(key)[e], values[e].get<double>(), 20 * tol) << name << " " << key << " epoch " << e;
    }
  }
  EXPECT_EQ(history.history.size(), ref.at("history").size()) << name;
  expect_weights(model, ref.at("final_weights"), 20 * tol);
  const auto after = model.predict_all(x, {.verbose = 0});
  for (std::size_t o = 0; o < after.size(); ++o) {
    expect_close(after[o], output("predict_after", o), 50 * tol, name + " predict after");
  }
  const auto logs = model.evaluate_dict(x, y, {.verbose = 0});
  for (const auto& [key, value] : ref.at("evaluate").items()) {
    ASSERT_TRUE(logs.count(key)) << name << ": evaluate has no '" << key << "'";
    EXPECT_NEAR(logs.at(key), value.get<double>(), 50 * tol) << name << " evaluate " << key;
  }
  int64_t trainable = 0;
  for (auto* v : model.trainable_variables()) trainable += v->num_elements();
  EXPECT_EQ(trainable, ref.at("trainable_params").get<int64_t>()) << name;
  EXPECT_EQ(model.count_params() - trainable, ref.at("non_trainable_params").get<int64_t>()) << name;
}

}  // namespace

TEST(Functional, TwoInputsWithConcatenateMatchKeras) {
  auto a = keras::Input({4}, {.name = "a"});
  auto b = keras::Input({3}, {.name = "b"});
  auto h = layers::Concatenate(-1, "concat")({a, b});
  h = layers::Dense(5, "relu", {.name = "hidden"})(h);
  auto out = layers::Dense(1, "sigmoid", {.name = "out"})(h);
  Model model({a, b}, out, "two_inputs");
  EXPECT_EQ(model.name(), "two_inputs");
  EXPECT_EQ(model.class_name(), "Functional");
  ASSERT_EQ(model.layers().size(), 5u);  // the Inputs first, as Keras lists them
  EXPECT_EQ(model.layers()[0]->name(), "a");
  EXPECT_EQ(model.layers()[2]->name(), "concat");
  EXPECT_EQ(h.shape(), Shape({5}));
  EXPECT_EQ(a.to_string(), "<KerasTensor shape=(None, 4), dtype=float32, name=a>");
  check_case(model, "two_input_concat",
             {.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "binary_crossentropy",
              .metrics = {"accuracy"}},
             true, false);
}

TEST(Functional, ResidualMlpMatchesKeras) {
  auto x = keras::Input({6}, {.name = "x"});
  auto h = layers::Dense(8, "relu", {.name = "d1"})(x);
  auto r = layers::Dense(8, "relu", {.name = "d2"})(h);
  auto sum = layers::Add("residual")({h, r});
  auto out = layers::Dense(3, "softmax", {.name = "out"})(sum);
  Model model(x, out, "residual");
  check_case(model, "residual_mlp",
             {.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "sparse_categorical_crossentropy",
              .metrics = {"accuracy"}},
             false, false);
}

TEST(Functional, ASharedLayerMatchesKeras) {
  auto a = keras::Input({5}, {.name = "left"});
  auto b = keras::Input({5}, {.name = "right"});
  auto shared = std::make_shared<layers::Dense>(4, "tanh", layers::DenseOptions{.name = "shared"});
  auto d = layers::Subtract("diff")({(*shared)(a), (*shared)(b)});
  auto out = layers::Dense(1, "", {.name = "out"})(d);
  Model model({a, b}, out, "siamese");
  EXPECT_EQ(model.layers().size(), 5u);  // left, right, shared (once), diff, out
  EXPECT_EQ(model.trainable_variables().size(), 4u);
  check_case(model, "shared_layer",
             {.optimizer = optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}), .loss = "mse"}, true, false);
}

TEST(Functional, ANestedModelMatchesKeras) {
  auto i = keras::Input({4}, {.name = "inner_in"});
  auto ih = layers::Dense(6, "relu", {.name = "inner_hidden"})(i);
  auto inner = std::make_shared<Model>(i, layers::Dense(3, "", {.name = "inner_out"})(ih), "inner");
  auto x = keras::Input({4}, {.name = "outer_in"});
  auto out = layers::Dense(2, "softmax", {.name = "out"})((*inner)(x));
  Model model(x, out, "outer");
  EXPECT_EQ(model.get_layer("inner").get(), inner.get());
  EXPECT_EQ(model.count_params(), 4 * 6 + 6 + 6 * 3 + 3 + 3 * 2 + 2);
  // The nested model's own layers are reached through it (get_layer by name finds the reference's weights there).
  const json& ref = functional_reference("nested_model");
  for (const auto& [name, values] : ref.at("initial_weights").items()) {
    Layer& layer = name.starts_with("inner") ? *inner->get_layer(name) : *model.get_layer(name);
    auto vars = layer.variables();
    for (std::size_t k = 0; k < vars.size(); ++k) vars[k]->assign(tensor_of(values[k]));
  }
  const Tensor xs = tensor_of(ref.at("x")), ys = tensor_of(ref.at("y"));
  expect_close(model.predict(xs, {.verbose = 0}), ref.at("predict_before"), 2e-5, "nested predict");
  model.compile({.optimizer = optimizers::RMSprop({.learning_rate = 0.01}), .loss = "categorical_crossentropy",
                 .metrics = {"accuracy"}});
  auto h = model.fit(xs, ys, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (std::size_t e = 0; e < 2; ++e) {
    EXPECT_NEAR(h.history["loss"][e], ref.at("history").at("loss")[e].get<double>(), 4e-4);
    EXPECT_NEAR(h.history["accuracy"][e], ref.at("history").at("accuracy")[e].get<double>(), 1e-6);
  }
  for (const auto& [name, values] : ref.at("final_weights").items()) {
    Layer& layer = name.starts_with("inner") ? *inner->get_layer(name) : *model.get_layer(name);
    auto vars = layer.variables();
    for (std::size_t k = 0; k < vars.size(); ++k) expect_close(vars[k]->value(), values[k], 4e-4, name);
  }
  expect_close(model.predict(xs, {.verbose = 0}), ref.at("predict_after"), 1e-3, "nested predict after");
}

TEST(Functional, TwoOutputsWithLossWeightsMatchKeras) {
  auto x = keras::Input({5}, {.name = "x"});
  auto h = layers::Dense(8, "relu", {.name = "trunk"})(x);
  auto oa = layers::Dense(1, "sigmoid", {.name = "out_a"})(h);
  auto ob = layers::Dense(2, "", {.name = "out_b"})(h);
  Model model(x, {oa, ob}, "two_outputs");
  EXPECT_EQ(model.output_names(), (std::vector<std::string>{"out_a", "out_b"}));
  check_case(model, "two_outputs",
             {.optimizer = optimizers::Adam({.learning_rate = 0.01}),
              .loss = {"binary_crossentropy", "mse"},
              .metrics = std::map<std::string, std::vector<MetricRef>>{{"out_a", {"accuracy"}}, {"out_b", {"mae"}}},
              .loss_weights = {0.5, 2.0}},
             false, true);
  EXPECT_EQ(model.metrics_names(),
            (std::vector<std::string>{"loss", "out_a_loss", "out_b_loss", "out_a_accuracy", "out_b_mae"}));
  EXPECT_THROW((void)model.predict(Tensor::zeros({2, 5})), ValueError);  // two outputs: predict_all
}

TEST(Functional, AFrozenBaseStaysAsItIsWhileTheHeadTrains) {
  auto x = keras::Input({6}, {.name = "x"});
  auto base = std::make_shared<layers::Dense>(8, "relu", layers::DenseOptions{.name = "base"});
  auto bn = std::make_shared<layers::BatchNormalization>(layers::BatchNormalizationOptions{.name = "base_bn"});
  auto out = layers::Dense(1, "", {.name = "head"})((*bn)((*base)(x)));
  Model model(x, out, "finetune");
  base->trainable = false;
  bn->trainable = false;  // and so in inference mode: its moving statistics neither used for... nor updated
  std::ostringstream summary;
  model.summary(summary);
  EXPECT_NE(summary.str().find("Trainable params: 9 "), std::string::npos) << summary.str();
  EXPECT_NE(summary.str().find("Non-trainable params: 88 "), std::string::npos) << summary.str();
  check_case(model, "frozen_base", {.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"}, false,
             false);
}

TEST(Functional, EveryMergeLayerMatchesKerasForwardAndTrained) {
  auto a = keras::Input({4}, {.name = "a"});
  auto b = keras::Input({4}, {.name = "b"});
  auto pa = layers::Dense(4, "", {.name = "pa"})(a);
  auto pb = layers::Dense(4, "", {.name = "pb"})(b);
  std::vector<KerasTensor> merged{layers::Add("add")({pa, pb}),          layers::Subtract("sub")({pa, pb}),
                                  layers::Multiply("mul")({pa, pb}),     layers::Average("avg")({pa, pb}),
                                  layers::Maximum("max")({pa, pb}),      layers::Minimum("min")({pa, pb}),
                                  layers::Dot(1, true, "cos")({pa, pb}), layers::Dot(1, false, "dot")({pa, pb})};
  auto all = layers::Concatenate(-1, "all")(merged);
  EXPECT_EQ(all.shape(), Shape({26}));
  Model model({a, b}, layers::Dense(1, "", {.name = "out"})(all), "merges");
  check_case(model, "merges", {.optimizer = optimizers::SGD({.learning_rate = 0.05}), .loss = "mse"}, true, false);
}

// Keras's batch_dot over rank-3 inputs: (b, 3, 4)·(b, 5, 4) along axis 2 -> (b, 3, 5), its cosines, and a
// (b, 4) vector against (b, 5, 4) along (1, 2) -> (b, 5).
TEST(Functional, DotOverSequencesMatchesKerasBatchDot) {
  auto q = keras::Input({3, 4}, {.name = "q"});
  auto k = keras::Input({5, 4}, {.name = "k"});
  auto pq = layers::Dense(4, "", {.name = "pq"})(q);
  auto pk = layers::Dense(4, "", {.name = "pk"})(k);
  auto scores = layers::Dot(2, false, "scores")({pq, pk});
  auto cosines = layers::Dot(std::pair{2, 2}, true, "cos")({pq, pk});
  auto vec = layers::Dot(std::pair{1, 2}, false, "vec")({layers::GlobalAveragePooling1D("channels_last", false, "gq")(pq), pk});
  EXPECT_EQ(scores.shape(), Shape({3, 5}));
  EXPECT_EQ(vec.shape(), Shape({5}));
  auto all = layers::Concatenate(-1, "all")({layers::Flatten("fs")(scores), layers::Flatten("fc")(cosines), vec});
  Model model({q, k}, layers::Dense(1, "", {.name = "out"})(all), "dots");
  check_case(model, "dot_rank3", {.optimizer = optimizers::SGD({.learning_rate = 0.05}), .loss = "mse"}, true, false);
  // Keras's config forms (one int, a pair) both ways; sizes that do not match and the batch axis are ValueErrors.
  EXPECT_EQ(json::parse(models::model_from_json(model.to_json())->to_json()).at("config"),
            json::parse(model.to_json()).at("config"));
  EXPECT_THAT(osprey::testing::error_of([&] { (void)layers::Dot(1)({pq, pk}); }), HasSubstr("Incompatible input shapes"));
  EXPECT_THAT(osprey::testing::error_of([&] { (void)layers::Dot(std::pair{0, 1})({pq, pk}); }), HasSubstr("batch axis"));
}

TEST(Functional, InputsByNameMapAndPredictForEachInput) {
  auto a = keras::Input({2}, {.name = "a"});
  auto b = keras::Input({3}, {.name = "b"});
  auto out = layers::Dense(1, "", {.kernel_initializer = "ones", .name = "out"})(layers::Concatenate()({a, b}));
  Model model({a, b}, out);
  EXPECT_EQ(model.name(), "functional");
  const Tensor xa = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}), xb = Tensor::from_vector<float>({1, 1, 1, 0, 0, 0}, {2, 3});
  EXPECT_EQ(model.predict({xa, xb}, {.verbose = 0}).to_vector<float>(), (std::vector<float>{6, 7}));
  // A map by input name, in any order, gives the same.
  EXPECT_EQ(model.predict(std::map<std::string, Tensor>{{"b", xb}, {"a", xa}}, {.verbose = 0}).to_vector<float>(),
            (std::vector<float>{6, 7}));
  // Eager call of the model as a function of its inputs.
  EXPECT_EQ(model.call_all({xa, xb})[0].to_vector<float>(), (std::vector<float>{6, 7}));
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const Tensor y = Tensor::from_vector<float>({6, 7}, {2, 1});
  EXPECT_NEAR(model.evaluate({xa, xb}, y, {.verbose = 0})[0], 0.0, 1e-12);
  auto h = model.fit(std::map<std::string, Tensor>{{"a", xa}, {"b", xb}}, y,
                     {.epochs = 1, .verbose = 0, .validation_data = {{xa, xb}, y}});
  EXPECT_EQ(h.history.count("val_loss"), 1u);
}

TEST(Functional, GraphErrorsNameTheLayerTheCallAndTheShapes) {
  auto a = keras::Input({4}, {.name = "a"});
  auto b = keras::Input({5}, {.name = "b"});
  // Incompatible shapes at call time: ValueError naming the layer and the shapes.
  try {
    (void)layers::Add("sum")({a, b});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'sum'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(None, 4), (None, 5)"), std::string::npos) << e.what();
  }
  auto dense = std::make_shared<layers::Dense>(3);
  (void)(*dense)(a);
  try {
    (void)(*dense)(b);  // built for 4 features
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("expected axis -1 of input shape to have value 4"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)layers::Concatenate()(std::vector<KerasTensor>{a}), ValueError);
  EXPECT_THROW((void)layers::Subtract()({a, a, a}), ValueError);
  // An output that needs an input the model is not given.
  auto h = layers::Concatenate()({a, layers::Dense(4)(b)});
  try {
    Model m(a, h);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("depends on input 'b'"), std::string::npos) << e.what();
  }
  // Two different layers with one name.
  auto x1 = layers::Dense(2, "", {.name = "twin"})(a);
  auto x2 = layers::Dense(2, "", {.name = "twin"})(a);
  EXPECT_THROW(Model(a, {x1, x2}), ValueError);
  // A non-Input as a model input, an input given twice.
  EXPECT_THROW(Model(x1, layers::Dense(1)(x1)), ValueError);
  EXPECT_THROW(Model({a, a}, x1), ValueError);
  // An lvalue layer not owned by a shared_ptr cannot be kept by a model.
  layers::Dense local(2);
  EXPECT_THROW((void)local(a), ValueError);
}

TEST(Functional, DataErrorsSayWhatTheModelTakes) {
  auto a = keras::Input({2}, {.name = "a"});
  auto b = keras::Input({3}, {.name = "b"});
  Model model({a, b}, layers::Dense(1)(layers::Concatenate()({a, b})));
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const Tensor xa = Tensor::zeros({4, 2}), xb = Tensor::zeros({4, 3}), y = Tensor::zeros({4, 1});
  auto message = [](auto f) {
    try {
      f();
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no ValueError");
  };
  EXPECT_NE(message([&] { model.fit(xa, y, {.verbose = 0}); }).find("has 2 input(s) (a, b), but 1 input array(s)"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)model.predict({xa, xb, xb}, {.verbose = 0}); }).find("has 2 input(s)"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)model.predict(std::map<std::string, Tensor>{{"a", xa}, {"c", xb}}, {.verbose = 0}); })
                .find("unknown input name 'c'"),
            std::string::npos);
  EXPECT_NE(message([&] { (void)model.predict({xb, xa}, {.verbose = 0}); }).find("expected shape (None, 2)"),
            std::string::npos);
  EXPECT_NE(message([&] { model.fit({xa, Tensor::zeros({3, 3})}, y, {.verbose = 0}); }).find("cardinality"),
            std::string::npos);
  EXPECT_NE(message([&] { model.compile({.optimizer = "sgd", .loss = {"mse", "mae"}}); }).find("`loss` has 2 entries"),
            std::string::npos);
  EXPECT_NE(message([&] {
              model.compile({.optimizer = "sgd", .loss = std::map<std::string, LossRef>{{"nope", "mse"}}});
            }).find("'nope'"),
            std::string::npos);
}

TEST(Functional, DenseAppliesToTheLastAxisOfAnyRankAsKerasDoes) {
  auto x = keras::Input({4, 6}, {.name = "x"});
  auto h = layers::Dense(3, "relu", {.name = "per_step"})(x);
  EXPECT_EQ(h.shape(), Shape({4, 3}));
  EXPECT_EQ(h.to_string(), "<KerasTensor shape=(None, 4, 3), dtype=float32, name=per_step>");
  Model model(x, layers::Dense(1, "", {.name = "out"})(layers::Flatten("flat")(h)), "rank3");
  check_case(model, "dense_rank3", {.optimizer = optimizers::SGD({.learning_rate = 0.05}), .loss = "mse"}, false,
             false);
  // The message shows the whole shape.
  try {
    (void)(*model.get_layer("per_step"))(keras::Input({4, 5}));
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("received input with shape (None, 4, 5)"), std::string::npos) << e.what();
  }
}

// Functional graphs of op-only layers (several inputs, merges, a shared layer, two outputs) train from recorded
// plans, bit-identical to eager steps.
TEST(Functional, RecordedStepsOfGraphsAreBitIdenticalToEagerSteps) {
  auto make = [](int which) {
    random::set_seed(41);
    auto a = keras::Input({5}, {.name = "a"});
    auto b = keras::Input({3}, {.name = "b"});
    if (which == 0) {  // two inputs, Concatenate, residual Add
      auto h = layers::Dense(8, "relu")(layers::Concatenate()({a, b}));
      auto out = layers::Dense(1, "sigmoid")(layers::Add()({h, layers::Dense(8, "tanh")(h)}));
      return Model({a, b}, out);
    }
    if (which == 1) {  // a shared layer
      auto shared = std::make_shared<layers::Dense>(4, "tanh");
      auto c = keras::Input({5}, {.name = "c"});
      return Model({a, c}, layers::Dense(1, "sigmoid")(layers::Multiply()({(*shared)(a), (*shared)(c)})));
    }
    auto h = layers::Dense(6, "relu")(a);  // two outputs
    return Model(a, {layers::Dense(1, "sigmoid", {.name = "p"})(h), layers::Dense(2, "", {.name = "q"})(h)});
  };
  for (int which = 0; which < 3; ++which) {
    std::vector<std::vector<float>> weights[2];
    std::map<std::string, std::vector<double>> history[2];
    uint64_t dispatched[2];
    for (int eager = 0; eager < 2; ++eager) {
      Model m = make(which);
      random::set_seed(42);
      const Tensor xa = random::uniform({70, 5}, -1, 1), xb = random::uniform({70, 3}, -1, 1);
      const Tensor y = random::randint(0, 2, {70, 1}).cast(DType::float32), y2 = random::uniform({70, 2});
      m.compile({.optimizer = "adam", .loss = which == 2 ? LossSpec{"binary_crossentropy", "mse"} : LossSpec("binary_crossentropy"),
                 .metrics = which == 2 ? MetricSpec(std::map<std::string, std::vector<MetricRef>>{{"p", {"accuracy"}}})
                                       : MetricSpec{"accuracy"},
                 .run_eagerly = eager == 1});
      const Arrays x = which == 0 ? Arrays{xa, xb} : which == 1 ? Arrays{xa, xa} : Arrays{xa};
      const Arrays ys = which == 2 ? Arrays{y, y2} : Arrays{y};
      history[eager] = m.fit(x, ys, {.epochs = 3, .batch_size = 32, .verbose = 0}).history;
      const uint64_t before = ops::kernels_dispatched_on_this_thread();
      m.train_on_batch(which == 0 ? Arrays{xa.slice_rows(0, 32), xb.slice_rows(0, 32)}
                                  : which == 1 ? Arrays{xa.slice_rows(0, 32), xa.slice_rows(0, 32)}
                                               : Arrays{xa.slice_rows(0, 32)},
                       which == 2 ? Arrays{y.slice_rows(0, 32), y2.slice_rows(0, 32)} : Arrays{y.slice_rows(0, 32)});
      m.train_on_batch(which == 0 ? Arrays{xa.slice_rows(0, 32), xb.slice_rows(0, 32)}
                                  : which == 1 ? Arrays{xa.slice_rows(0, 32), xa.slice_rows(0, 32)}
                                               : Arrays{xa.slice_rows(0, 32)},
                       which == 2 ? Arrays{y.slice_rows(0, 32), y2.slice_rows(0, 32)} : Arrays{y.slice_rows(0, 32)});
      dispatched[eager] = ops::kernels_dispatched_on_this_thread() - before;
      for (auto* v : m.variables()) weights[eager].push_back(v->value().to_vector<float>());
    }
    EXPECT_EQ(weights[0], weights[1]) << "graph " << which;
    EXPECT_EQ(history[0], history[1]) << "graph " << which;
    // The recorded steps replay their kernels without dispatch: far fewer dispatched launches than eager steps.
    EXPECT_LT(dispatched[0] * 3, dispatched[1]) << "graph " << which << ": " << dispatched[0] << " vs " << dispatched[1];
  }
}
