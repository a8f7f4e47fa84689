// Keras's per-layer `dtype` argument (`DenseOptions{.dtype = ...}`, `.with_dtype(...)`) against real Keras 3:
// tests/keras/keras_layer_dtype_reference.py wrote tests/data/keras_layer_dtype.json and
// keras_files/layer_dtype.keras (the mixed-precision guide's float32 softmax under mixed_bfloat16, one bfloat16 layer
// in a float32 model, the sublayers that take a layer's policy, a Keras-saved model's per-layer policies).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/mixed_precision.h"
#include "osprey/random.h"
#include "reference_json.h"
#include "policy_scope.h"
#include "test_util.h"

using namespace osprey;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
namespace mp = osprey::keras::mixed_precision;
using osprey::testing::PolicyScope;
using json = nlohmann::json;

namespace {

const json& layer_dtype_ref() {
  static const json j = osprey::testing::read_reference("keras_layer_dtype.json");
  return j;
}


// Every non-input layer's name, policy and dtypes as Keras recorded them.
void expect_layer_dtypes(const keras::Model& model, const json& want) {
  std::vector<std::shared_ptr<keras::Layer>> layers;
  for (const auto& l : model.layers()) {
    if (l->class_name() != "InputLayer") layers.push_back(l);
  }
  std::vector<const json*> expected;
  for (const auto& w : want) {
    if (w["name"].get<std::string>().rfind("input_layer", 0) != 0) expected.push_back(&w);
  }
  ASSERT_EQ(layers.size(), expected.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const json& w = *expected[i];
    EXPECT_EQ(layers[i]->name(), w["name"].get<std::string>());
    EXPECT_EQ(layers[i]->dtype_policy().name(), w["policy"].get<std::string>()) << layers[i]->name();
    EXPECT_EQ(dtype_name(layers[i]->compute_dtype()), w["compute_dtype"].get<std::string>()) << layers[i]->name();
    EXPECT_EQ(dtype_name(layers[i]->variable_dtype()), w["variable_dtype"].get<std::string>()) << layers[i]->name();
  }
}

std::vector<Tensor> layer_dtype_weights() {
  std::vector<Tensor> w;
  for (const auto& v : layer_dtype_ref()["weights"]) w.push_back(tensor_of(v));
  return w;
}

}  // namespace

// The mixed-precision guide's model: mixed_bfloat16 globally, the softmax in float32 through its dtype argument.
TEST(LayerDtype, Float32SoftmaxUnderMixedBfloat16MatchesKeras) {
  const auto& r = layer_dtype_ref()["guide"];
  PolicyScope scope("mixed_bfloat16");
  keras::Sequential model({keras::layers::Input({8}), keras::layers::Dense(16, "relu", {.name = "hidden"}),
                           keras::layers::Dense(4, "", {.name = "logits"}),
                           keras::layers::Activation("softmax", "probs").with_dtype("float32")},
                          "guide");
  model.set_weights(layer_dtype_weights());
  expect_layer_dtypes(model, r["layers"]);
  const Tensor x = tensor_of(layer_dtype_ref()["x"]);
  const Tensor y = Tensor::from_vector(layer_dtype_ref()["y"].get<std::vector<int32_t>>(), {5});
  const Tensor out = model(x);
  EXPECT_EQ(dtype_name(out.dtype()), r["output_dtype"].get<std::string>());  // float32 straight from the model
  expect_close(out, r["predict"], 1e-2, "predict");
  keras::losses::SparseCategoricalCrossentropy loss_fn;
  GradientTape tape;
  const Tensor loss = loss_fn(y, model(x, true));
  EXPECT_NEAR(loss.item(), r["loss"].get<double>(), 1e-2);
  const auto grads = tape.gradient(loss, model.trainable_variables());
  ASSERT_EQ(grads.size(), r["grads"].size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    EXPECT_EQ(grads[i].dtype(), DType::float32);
    expect_close(grads[i], r["grads"][i], 1e-2, "grad " + std::to_string(i));
  }
  model.compile({.optimizer = keras::optimizers::SGD({.learning_rate = 0.1}), .loss = "sparse_categorical_crossentropy"});
  model.train_on_batch(x, y);
  const auto after = model.get_weights();
  for (std::size_t i = 0; i < after.size(); ++i) {
    expect_close(after[i], r["after_sgd_step"][i], 1e-3, "after step " + std::to_string(i));
  }
}

// The same layers called on a keras::Input: their symbolic outputs have Keras's dtypes (KerasTensor.dtype).
TEST(LayerDtype, SymbolicOutputsHaveTheLayersComputeDtypes) {
  const auto& expected = layer_dtype_ref()["guide"]["symbolic_dtypes"];
  PolicyScope scope("mixed_bfloat16");
  std::vector<keras::KerasTensor> ts{keras::Input({8})};
  ts.push_back(keras::layers::Dense(16, "relu", {.name = "hidden"})(ts.back()));
  ts.push_back(keras::layers::Dense(4, "", {.name = "logits"})(ts.back()));
  ts.push_back(keras::layers::Activation("softmax", "probs").with_dtype("float32")(ts.back()));
  ASSERT_EQ(ts.size(), expected.size());
  for (std::size_t i = 0; i < ts.size(); ++i) {
    EXPECT_EQ(dtype_name(ts[i].dtype()), expected[i].get<std::string>()) << ts[i].to_string();
  }
  EXPECT_THAT(ts[1].to_string(), ::testing::HasSubstr("dtype=bfloat16"));
}

// A float32 model with one mixed_bfloat16 Dense (the options' dtype): bfloat16 between it and the next layer,
// float32 out.
TEST(LayerDtype, OneMixedBfloat16DenseInAFloat32ModelMatchesKeras) {
  const auto& r = layer_dtype_ref()["one_mixed"];
  ASSERT_EQ(mp::global_policy().name(), "float32");
  auto inputs = keras::Input({8});
  auto h = keras::layers::Dense(16, "relu", {.name = "hidden", .dtype = "mixed_bfloat16"})(inputs);
  keras::Model model(inputs, keras::layers::Dense(4, "softmax", {.name = "probs"})(h), "one_mixed");
  keras::Model hidden(inputs, h);
  model.set_weights(layer_dtype_weights());
  expect_layer_dtypes(model, r["layers"]);
  const Tensor x = tensor_of(layer_dtype_ref()["x"]);
  EXPECT_EQ(dtype_name(hidden(x).dtype()), r["hidden_dtype"].get<std::string>());
  EXPECT_EQ(dtype_name(model(x).dtype()), r["output_dtype"].get<std::string>());
  expect_close(model.predict(x, {.verbose = 0}), r["predict"], 1e-2, "predict");
  // It trains: the float32 variables of the bfloat16 layer take float32 gradients.
  model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  const auto before = model.get_weights();
  model.fit(x, Tensor::from_vector(layer_dtype_ref()["y"].get<std::vector<int32_t>>(), {5}), {.epochs = 2, .verbose = 0});
  EXPECT_NE(model.get_weights()[0].to_vector<float>(), before[0].to_vector<float>());
  EXPECT_EQ(model.get_weights()[0].dtype(), DType::float32);
}

// Keras gives an LSTM's cell and MultiHeadAttention's projections their layer's policy; wrappers keep the wrapped
// layer's own.
TEST(LayerDtype, SublayersTakeTheLayersPolicyAsKeras) {
  const auto& r = layer_dtype_ref()["sublayers"];
  keras::layers::LSTM lstm(4, {.dtype = "mixed_bfloat16"});
  EXPECT_EQ(lstm.dtype_policy().name(), r["lstm"].get<std::string>());
  EXPECT_EQ(lstm.cell().dtype_policy().name(), r["lstm_cell"].get<std::string>());
  keras::layers::GRU gru(4, {}, {.dtype = "mixed_bfloat16"});  // the RNN options' dtype reaches the cell too
  EXPECT_EQ(gru.cell().dtype_policy().name(), "mixed_bfloat16");
  PolicyScope scope("mixed_bfloat16");
  auto mha = keras::layers::MultiHeadAttention(2, 3).with_dtype("float32");
  mha.build(std::vector<Shape>{Shape({4, 6}), Shape({4, 6})});
  EXPECT_EQ(mha.dtype_policy().name(), r["mha"].get<std::string>());
  EXPECT_EQ(mha.query_dense()->dtype_policy().name(), r["mha_query"].get<std::string>());
  EXPECT_EQ(mha.output_dense()->dtype_policy().name(), r["mha_output"].get<std::string>());
  // RNN over a given cell and Bidirectional leave the wrapped layers' policies alone.
  auto cell = std::make_shared<keras::layers::LSTMCell>(3);
  keras::layers::RNN rnn(cell);
  rnn.set_dtype_policy("float32");
  EXPECT_EQ(cell->dtype_policy().name(), "mixed_bfloat16");
}

// MultiHeadAttention(dtype="mixed_bfloat16") computes its projections and the attention between them in bfloat16
// and returns bfloat16 outputs and scores, as Keras's; the values agree within bfloat16's precision (Keras's softmax
// runs in bfloat16, Osprey's in float32 between casts).
TEST(LayerDtype, MultiHeadAttentionComputesInBfloat16AsKeras) {
  const auto& r = layer_dtype_ref()["mha_bf16"];
  const Tensor x = tensor_of(r["x"]);
  for (const bool scored : {false, true}) {
    SCOPED_TRACE(scored ? "return_attention_scores" : "dot_product_attention");
    keras::layers::MultiHeadAttention mha(2, 4, {.return_attention_scores = scored, .dtype = "mixed_bfloat16"});
    mha.build(std::vector<Shape>{Shape({5, 8}), Shape({5, 8})});
    EXPECT_EQ(dtype_name(mha.compute_dtype()), r["compute_dtype"].get<std::string>());
    const auto vars = mha.variables();
    ASSERT_EQ(vars.size(), r["weights"].size());
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(tensor_of(r["weights"][i]));
    const auto out = mha.call_outputs({x, x}, false);
    ASSERT_EQ(out.size(), scored ? 2u : 1u);
    EXPECT_EQ(dtype_name(out[0].dtype()), r["output_dtype"].get<std::string>());
    expect_close(out[0].cast(DType::float32), r[scored ? "output_scored" : "output"], 3e-2, "output");
    if (scored) {
      EXPECT_EQ(dtype_name(out[1].dtype()), r["scores_dtype"].get<std::string>());
      expect_close(out[1].cast(DType::float32), r["scores"], 1e-2, "scores");
    }
    EXPECT_EQ(vars[0]->value().dtype(), DType::float32);  // the variables stay float32
  }
}

// The same layers over their steps (use_cudnn=false; on a GPU, the cells cuDNN refuses): outputs and states in
// bfloat16 as on the sequence op (they were float32), with its values to bfloat16's precision.
TEST(LayerDtype, RecurrentLayersOverTheirStepsKeepTheMixedDtype) {
  const auto& r = layer_dtype_ref()["rnn_bf16"];
  const Tensor x = tensor_of(r["x"]);
  namespace kl = keras::layers;
  for (const char* kind : {"lstm", "gru", "gru_reset_before", "simple"}) {
    SCOPED_TRACE(kind);
    const auto& c = r["cases"][kind];
    std::vector<Tensor> outs[2];
    for (int steps = 0; steps < 2; ++steps) {
      kl::RNNOptions o{.return_sequences = true, .return_state = true, .dtype = "mixed_bfloat16"};
      if (steps) o.use_cudnn = false;
      std::shared_ptr<kl::RNN> layer;
      const std::string k = kind;
      if (k == "lstm") layer = std::make_shared<kl::LSTM>(6, kl::RecurrentOptions{}, o);
      if (k == "gru") layer = std::make_shared<kl::GRU>(6, kl::RecurrentOptions{}, o);
      if (k == "gru_reset_before") layer = std::make_shared<kl::GRU>(6, kl::RecurrentOptions{.reset_after = false}, o);
      if (k == "simple") layer = std::make_shared<kl::SimpleRNN>(6, kl::RecurrentOptions{}, o);
      layer->build(Shape({7, 4}));
      const auto vars = layer->trainable_variables();
      for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(tensor_of(c["weights"][i]));
      outs[steps] = layer->call_all({x});
    }
    ASSERT_EQ(outs[0].size(), outs[1].size());
    for (std::size_t i = 0; i < outs[0].size(); ++i) {
      EXPECT_EQ(outs[1][i].dtype(), DType::bfloat16) << "output " << i;
      expect_close(ops::cast(outs[1][i], DType::float32), c["outputs"][i], 1e-2, "output over the steps");
    }
  }
}

// LSTM, GRU (both reset_after forms) and SimpleRNN under mixed_bfloat16: their outputs and states bfloat16, within
// bfloat16's precision of Keras's over 7 steps (Keras rounds every gate to bfloat16, oneDNN's bfloat16 RNNs
// accumulate the products in float32 and keep an LSTM's carry in float32), and the gradients of the float32 weights.
TEST(LayerDtype, RecurrentLayersComputeInBfloat16AsKeras) {
  const auto& r = layer_dtype_ref()["rnn_bf16"];
  const Tensor x = tensor_of(r["x"]);
  namespace kl = keras::layers;
  const kl::RNNOptions o{.return_sequences = true, .return_state = true, .dtype = "mixed_bfloat16"};
  for (const char* kind : {"lstm", "gru", "gru_reset_before", "simple"}) {
    SCOPED_TRACE(kind);
    const auto& c = r["cases"][kind];
    std::shared_ptr<kl::RNN> layer;
    const std::string k = kind;
    if (k == "lstm") layer = std::make_shared<kl::LSTM>(6, kl::RecurrentOptions{}, o);
    if (k == "gru") layer = std::make_shared<kl::GRU>(6, kl::RecurrentOptions{}, o);
    if (k == "gru_reset_before") layer = std::make_shared<kl::GRU>(6, kl::RecurrentOptions{.reset_after = false}, o);
    if (k == "simple") layer = std::make_shared<kl::SimpleRNN>(6, kl::RecurrentOptions{}, o);
    layer->build(Shape({7, 4}));
    const auto vars = layer->trainable_variables();
    ASSERT_EQ(vars.size(), c["weights"].size());
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(tensor_of(c["weights"][i]));
    Tensor xv = x;
    GradientTape tape(true);
    tape.watch(xv);
    const auto outs = layer->call_all({xv});
    ASSERT_EQ(outs.size(), c["outputs"].size());
    Tensor loss = Tensor::zeros({});
    for (std::size_t i = 0; i < outs.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(dtype_name(outs[i].dtype()), c["dtypes"][i].get<std::string>());
      const Tensor o32 = ops::cast(outs[i], DType::float32);
      expect_close(o32, c["outputs"][i], 1e-2, "output");
      loss = ops::add(loss, ops::reduce_sum(ops::mul(o32, tensor_of(c["output_weights"][i]))));
    }
    EXPECT_NEAR(loss.to_vector<float>()[0], c["loss"].get<double>(), 0.1);
    const auto grads = tape.gradient(loss, {xv});
    const auto wgrads = tape.gradient(loss, std::vector<Variable*>(vars.begin(), vars.end()));
    ASSERT_EQ(wgrads.size() + 1, c["gradients"].size());
    EXPECT_EQ(grads[0].dtype(), DType::float32);
    expect_close(grads[0], c["gradients"][0], 2e-2, "x's gradient");
    for (std::size_t i = 0; i < wgrads.size(); ++i) {
      SCOPED_TRACE(vars[i]->name());
      EXPECT_EQ(wgrads[i].dtype(), DType::float32);  // the variables stay float32
      expect_close(wgrads[i], c["gradients"][i + 1], 5e-2, "weight gradient");
    }
  }
}

// Right-padded masks, go_backwards, stateful and Bidirectional under mixed_bfloat16 (the bfloat16 sequence ops with
// their gathers around them): the same model in float32 with the same weights gives the same predictions within
// bfloat16's precision, and it trains.
TEST(LayerDtype, MaskedAndBidirectionalRecurrentLayersComputeInBfloat16) {
  namespace kl = keras::layers;
  std::vector<int32_t> ids(4 * 9, 0);
  for (int b = 0; b < 4; ++b) {
    for (int k = 0; k < 3 + 2 * b; ++k) ids[static_cast<std::size_t>(b * 9 + k)] = 1 + (b * 7 + k * 3) % 19;
  }
  const Tensor x = Tensor::from_vector(ids, {4, 9});
  auto make = [] {
    osprey::random::set_seed(5);
    auto in = keras::Input({9}, {.dtype = DType::int32});
    auto h = kl::Embedding(20, 5, {.mask_zero = true})(in);
    h = kl::Bidirectional(std::make_shared<kl::LSTM>(6, kl::RecurrentOptions{}, kl::RNNOptions{.return_sequences = true}))(h);
    h = kl::GRU(4, {}, {.return_sequences = true, .go_backwards = true})(h);
    h = kl::SimpleRNN(3)(h);
    return std::make_shared<keras::Model>(in, kl::Dense(1, "sigmoid")(h));
  };
  const auto f32 = make();
  std::shared_ptr<keras::Model> bf16;
  {
    PolicyScope scope("mixed_bfloat16");
    bf16 = make();
  }
  bf16->set_weights(f32->get_weights());
  const Tensor want = f32->predict(x, {.verbose = 0}), got = bf16->predict(x, {.verbose = 0});
  const auto w = want.to_vector<float>(), g = got.to_vector<float>();
  ASSERT_EQ(g.size(), w.size());
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(g[i], w[i], 2e-2) << i;
  bf16->compile({.optimizer = "adam", .loss = "binary_crossentropy"});
  const Tensor y = Tensor::from_vector(std::vector<float>{0, 1, 1, 0}, {4, 1});
  const auto first = bf16->fit(x, y, {.epochs = 30, .verbose = 0}).history.at("loss");
  EXPECT_LT(first.back(), first.front());
  for (auto* v : bf16->variables()) EXPECT_EQ(v->value().dtype(), DType::float32) << v->path();
  // A stateful LSTM keeps float32 states between batches and gives bfloat16 outputs.
  PolicyScope scope("mixed_bfloat16");
  kl::LSTM stateful(3, {}, {.return_state = true, .stateful = true});
  const Tensor xs = osprey::random::uniform({2, 4, 5});
  const auto a = stateful.call_all({xs}), b = stateful.call_all({xs});
  EXPECT_EQ(a[0].dtype(), DType::bfloat16);
  EXPECT_EQ(a[2].dtype(), DType::bfloat16);
  EXPECT_NE(ops::cast(a[0], DType::float32).to_vector<float>(), ops::cast(b[0], DType::float32).to_vector<float>());
}

TEST(LayerDtype, BadPoliciesAndLateChangesAreValueErrors) {
  EXPECT_THROW(keras::layers::Dense(4, "", {.dtype = "float8"}), ValueError);
  try {
    keras::layers::Activation("relu").with_dtype("mixed_half");
    FAIL() << "an unknown policy name was taken";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("mixed_half"));
  }
  keras::layers::Dense dense(4);
  dense(Tensor::from_vector(std::vector<float>(6, 1.0f), {2, 3}));  // built in float32
  dense.set_dtype_policy("float32");                                // the same policy: fine
  try {
    dense.set_dtype_policy("mixed_bfloat16");
    FAIL() << "a built layer changed its policy";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), ::testing::AllOf(::testing::HasSubstr(dense.name()), ::testing::HasSubstr("float32"),
                                           ::testing::HasSubstr("mixed_bfloat16"), ::testing::HasSubstr("before")));
  }
}

TEST(LayerDtype, KerasSavedPerLayerPoliciesLoadAndRoundTrip) {
  SKIP_WITHOUT_HDF5();
  const auto& r = layer_dtype_ref()["guide"];
  auto model = keras::models::load_model(osprey::testing::data_file("keras_files/layer_dtype.keras"));
  EXPECT_EQ(mp::global_policy().name(), "float32");
  expect_layer_dtypes(*model, r["layers"]);
  const Tensor x = tensor_of(layer_dtype_ref()["x"]);
  EXPECT_EQ((*model)(x).dtype(), DType::float32);
  expect_close(model->predict(x, {.verbose = 0}), r["predict"], 1e-2, "loaded predict");
  // Osprey's own save keeps every layer's policy; for tests/keras/keras_load_osprey_mixed.py, Keras loads it.
  const std::string dir = ::testing::TempDir();
  const std::string path = std::getenv("OSPREY_KERAS_FILES_OUT") ? std::string(std::getenv("OSPREY_KERAS_FILES_OUT"))
                                                                  : dir;
  model->save(path + "/layer_dtype.keras");
  auto again = keras::models::load_model(path + "/layer_dtype.keras");
  expect_layer_dtypes(*again, r["layers"]);
  if (std::getenv("OSPREY_KERAS_FILES_OUT")) {
    std::ofstream(path + "/layer_dtype.json") << json{{"predict", model->predict(x, {.verbose = 0}).to_vector<double>()}}.dump();
  }
}

// A file loads the same whatever the global policy is when it loads (its Inputs are built when made).
TEST(LayerDtype, FilesLoadWithTheirPoliciesUnderAnotherGlobalPolicy) {
  SKIP_WITHOUT_HDF5();
  PolicyScope scope("mixed_bfloat16");
  auto model = keras::models::load_model(osprey::testing::data_file("keras_files/layer_dtype.keras"));
  expect_layer_dtypes(*model, layer_dtype_ref()["guide"]["layers"]);
  auto mixed = keras::models::load_model(osprey::testing::data_file("keras_files/mixed_bf16.keras"));
  for (const auto& layer : mixed->layers()) EXPECT_EQ(layer->dtype_policy().name(), "mixed_bfloat16") << layer->name();
}
