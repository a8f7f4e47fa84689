// Sequence layers against Keras 3 (issue 18; tests/keras/keras_sequence_reference.py regenerates
// tests/data/keras_sequence.json): Embedding's rows and gradient (repeated ids add up), its bad-id error, and a
// bag-of-embeddings classifier trained two epochs to Keras's losses and weights.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "test_util.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;

namespace {
const json& sequence_layers_reference() {
  static const json ref = osprey::testing::read_reference("keras_sequence.json");
  return ref;
}
}  // namespace

TEST(SequenceLayers, EmbeddingRowsAndGradientMatchKeras) {
  const json& ref = sequence_layers_reference().at("embedding");
  const Tensor ids = ops::cast(tensor_of(ref.at("ids")), DType::int32);
  layers::Embedding emb(11, 4);
  emb.build(Shape({2, 5}));
  emb.embeddings()->assign(tensor_of(ref.at("table")));
  for (const Tensor& given : {ids, ops::cast(ids, DType::int64), ops::cast(ids, DType::float32)}) {
    GradientTape tape;
    const Tensor y = emb(given);
    EXPECT_EQ(y.shape(), Shape({3, 2, 5, 4}));
    expect_close(y, ref.at("y"), 0, "rows");
    const auto g = tape.gradient(ops::reduce_sum(ops::mul(y, tensor_of(ref.at("w")))), {emb.embeddings()});
    expect_close(g[0], ref.at("grad"), 1e-6, "gradient");
  }
  // An id outside the vocabulary: TensorFlow's message with the position, and the layer's name.
  const std::string want = ref.at("bad_id_error");
  const std::string got = osprey::testing::error_of([&] { emb(Tensor::from_vector<int32_t>({1, 11}, {1, 2})); });
  EXPECT_THAT(got, HasSubstr(want));
  EXPECT_THAT(got, HasSubstr(emb.name()));
  EXPECT_THROW(emb(Tensor::from_vector<int32_t>({-1, 2}, {1, 2})), InvalidArgumentError);
  EXPECT_THROW(layers::Embedding(0, 4), ValueError);
  EXPECT_THROW(layers::Embedding(4, -1), ValueError);
}

TEST(SequenceLayers, ABagOfEmbeddingsClassifierTrainsAsKeras) {
  const json& ref = sequence_layers_reference().at("bag");
  const Tensor x = ops::cast(tensor_of(ref.at("x")), DType::int32), y = tensor_of(ref.at("y"));
  auto in = keras::Input({6}, {.name = "tokens", .dtype = DType::int32});
  auto h = layers::Embedding(20, 8, {.name = "embed"})(in);
  h = layers::GlobalAveragePooling1D("channels_last", false, "gap")(h);
  auto out = layers::Dense(1, "sigmoid", {.name = "out"})(h);
  Model model(in, out);
  std::vector<Tensor> init;
  for (const auto& w : ref.at("init")) init.push_back(tensor_of(w));
  model.set_weights(init);
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.5}), .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  const auto hist = model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (const char* key : {"loss", "accuracy"}) {
    for (int e = 0; e < 2; ++e) {
      EXPECT_NEAR(hist.history.at(key)[e], ref.at("history").at(key)[e].get<double>(), 2e-5) << key << " epoch " << e;
    }
  }
  const auto weights = model.get_weights();
  for (std::size_t i = 0; i < weights.size(); ++i) {
    expect_close(weights[i], ref.at("weights_after")[i], 2e-5, "weight " + std::to_string(i));
  }
  expect_close(model.predict(x, {.verbose = 0}), ref.at("predict"), 2e-5, "predict");
  // The int32 input survives the model's config; a bad id in fit is the layer's error, not a crash.
  const json cfg = json::parse(model.to_json());
  EXPECT_EQ(cfg.at("config").at("layers")[0].at("config").at("dtype"), "int32");
  const Tensor bad = ops::cast(ops::mul(ops::add(tensor_of(ref.at("x")), Tensor::scalar(1.0)), Tensor::scalar(2.0)), DType::int32);
  EXPECT_THAT(osprey::testing::error_of([&] { model.fit(bad, y, {.epochs = 1, .batch_size = 8, .verbose = 0}); }),
              HasSubstr("is not in [0, 20)"));
  EXPECT_NO_THROW(model.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0}));
  // The architecture round trip (model_from_json does not compile, as in Keras).
  EXPECT_EQ(json::parse(models::model_from_json(model.to_json())->to_json()).at("config"), cfg.at("config"));
}

namespace {

// Sets the reference's initial weights, trains two epochs, and compares the losses, weights and predictions.
void expect_trains_as_keras(Model& model, const json& ref, const Tensor& x, OptimizerRef optimizer, LossRef loss) {
  std::vector<Tensor> init;
  for (const auto& w : ref.at("init")) init.push_back(tensor_of(w));
  model.set_weights(init);
  model.compile({.optimizer = optimizer, .loss = loss});
  const Tensor y = tensor_of(ref.at("y"));
  const auto hist = model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (int e = 0; e < 2; ++e) {
    EXPECT_NEAR(hist.history.at("loss")[e], ref.at("history").at("loss")[e].get<double>(), 2e-5) << "epoch " << e;
  }
  const auto weights = model.get_weights();
  ASSERT_EQ(weights.size(), ref.at("weights_after").size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    expect_close(weights[i], ref.at("weights_after")[i], 2e-5, "weight " + std::to_string(i));
  }
  expect_close(model.predict(x, {.verbose = 0}), ref.at("predict"), 2e-5, "predict");
}

}  // namespace

TEST(SequenceLayers, MaskZeroPaddingIsLeftOutOfTheAverageAsInKeras) {
  const json& ref = sequence_layers_reference().at("mask_zero");
  const Tensor x = ops::cast(tensor_of(ref.at("x")), DType::int32);
  auto in = keras::Input({6}, {.name = "tokens", .dtype = DType::int32});
  auto h = layers::Embedding(20, 5, {.mask_zero = true, .name = "embed"})(in);
  h = layers::Dense(4, "tanh", {.name = "per_step"})(h);  // keeps the mask
  h = layers::GlobalAveragePooling1D("channels_last", false, "gap")(h);
  Model model(in, layers::Dense(1, "sigmoid", {.name = "out"})(h));
  expect_trains_as_keras(model, ref, x, optimizers::SGD({.learning_rate = 0.5}), "binary_crossentropy");
  // The padding changes nothing: more zeros at the end, the same predictions.
  const Tensor longer = ops::concat({x, Tensor::zeros({x.shape()[0], 3}, DType::int32)}, 1);
  auto in2 = keras::Input({9}, {.dtype = DType::int32});
  auto emb = std::make_shared<layers::Embedding>(20, 5, layers::EmbeddingOptions{.mask_zero = true});
  auto dense = std::make_shared<layers::Dense>(4, "tanh");
  auto out = std::make_shared<layers::Dense>(1, "sigmoid");
  Model padded(in2, (*out)(layers::GlobalAveragePooling1D()((*dense)((*emb)(in2)))));
  const auto w = model.get_weights();
  padded.set_weights(w);
  expect_close(padded.predict(longer, {.verbose = 0}), ref.at("predict"), 2e-6, "predict with more padding");
  // The config keeps mask_zero; a mask that reaches the loss weights it per step (the padded steps left out).
  EXPECT_EQ(json::parse(model.to_json()).at("config").at("layers")[1].at("config").at("mask_zero"), true);
  auto in3 = keras::Input({6}, {.dtype = DType::int32});
  Model per_step(in3, layers::Dense(1)(layers::Embedding(20, 3, {.mask_zero = true})(in3)));
  per_step.compile({.optimizer = "sgd", .loss = "mse"});
  const auto pred = per_step.predict(x, {.verbose = 0});
  EXPECT_EQ(pred.shape(), Shape({32, 6, 1}));  // predict gives every step, as Keras
  const auto p = pred.to_vector<float>(), ids = tensor_of(ref.at("x")).to_vector<float>();
  double sum = 0.0, steps = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (ids[i] != 0.0f) sum += static_cast<double>(p[i]) * p[i], steps += 1.0;
  }
  EXPECT_NEAR(per_step.evaluate(x, Tensor::zeros({32, 6, 1}), {.batch_size = 32, .verbose = 0})[0], sum / steps, 1e-6);
  EXPECT_NO_THROW(per_step.fit(x, Tensor::zeros({32, 6, 1}), {.epochs = 1, .verbose = 0}));
}

TEST(SequenceLayers, MaskingLayerMasksPaddedStepsAsInKeras) {
  const json& ref = sequence_layers_reference().at("masking");
  const Tensor x = tensor_of(ref.at("x"));
  expect_close(layers::Masking(-1.0)(x), ref.at("masked_output"), 0, "Masking's output");
  auto in = keras::Input({6, 3}, {.name = "series"});
  auto h = layers::Dense(4, "relu", {.name = "per_step"})(layers::Masking(-1.0, "mask")(in));
  Model model(in, layers::Dense(2, "", {.name = "out"})(layers::GlobalAveragePooling1D("channels_last", false, "gap")(h)));
  expect_trains_as_keras(model, ref, x, optimizers::Adam({.learning_rate = 0.01}), "mse");
  // A layer without mask support drops the mask (Keras warns): Flatten's output is the unmasked one.
  auto in2 = keras::Input({6, 3});
  Model dropped(in2, layers::Flatten()(layers::Masking(-1.0)(in2)));
  EXPECT_EQ(dropped.predict(x, {.verbose = 0}).to_vector<float>(),
            layers::Flatten()(layers::Masking(-1.0)(x)).to_vector<float>());
  // Layers that use masks in Keras in ways Osprey does not yet: errors naming them.
  auto in3 = keras::Input({6, 3});
  auto m3 = layers::Masking(-1.0)(in3);
  // Element-wise merges keep the values and merge the masks (Keras 3: kept where any input is kept).
  Model merged(in3, layers::Add()({m3, m3}));
  EXPECT_EQ(merged.predict(x, {.verbose = 0}).to_vector<float>(),
            ops::mul(layers::Masking(-1.0)(x), Tensor::scalar(2.0)).to_vector<float>());
  // Concatenate merges masks too (tests/keras/test_attention_layers.cpp checks its rule against Keras).
  EXPECT_EQ(json::parse(models::model_from_json(model.to_json())->to_json()).at("config"),
            json::parse(model.to_json()).at("config"));
}

// BatchNormalization's batch statistics over the kept steps only (its moving statistics after training are among
// the weights compared), the padded steps normalized with them.
TEST(SequenceLayers, BatchNormalizationOfMaskedStepsTrainsAsInKeras) {
  const json& ref = sequence_layers_reference().at("masked_batchnorm");
  const Tensor x = tensor_of(ref.at("x"));
  auto in = keras::Input({6, 3}, {.name = "series"});
  auto h = layers::Dense(4, "relu", {.name = "per_step"})(layers::Masking(-1.0, "mask")(in));
  h = layers::BatchNormalization({.momentum = 0.8, .name = "bn"})(h);
  Model model(in, layers::Dense(2, "", {.name = "out"})(layers::GlobalAveragePooling1D("channels_last", false, "gap")(h)));
  expect_trains_as_keras(model, ref, x, optimizers::Adam({.learning_rate = 0.01}), "mse");
  // A mask of another rank than the inputs' less one: Keras's ValueError.
  layers::BatchNormalization bn;
  EXPECT_THAT(osprey::testing::error_of([&] {
                (void)bn.call_masked(Tensor::ones({2, 6, 3}), true, Tensor::ones({2, 6, 3}));
              }),
              HasSubstr("The mask provided should be one dimension less than the inputs"));
}

TEST(SequenceLayers, RecurrentLayersMatchKerasForwardAndGradients) {
  const json& ref = sequence_layers_reference().at("rnn");
  const Tensor x = tensor_of(ref.at("x"));
  for (const auto& c : ref.at("cases")) {
    const std::string cls = c.at("class");
    const json& kw = c.at("kwargs");
    SCOPED_TRACE(cls + " " + kw.dump());
    layers::RecurrentOptions o;
    if (kw.contains("reset_after")) o.reset_after = kw.at("reset_after");
    if (kw.contains("activation")) o.activation = kw.at("activation");
    if (kw.contains("use_bias")) o.use_bias = kw.at("use_bias");
    const layers::RNNOptions r{.return_sequences = kw.value("return_sequences", false),
                               .go_backwards = kw.value("go_backwards", false)};
    std::unique_ptr<layers::RNN> layer;
    if (cls == "SimpleRNN") layer = std::make_unique<layers::SimpleRNN>(4, o, r);
    if (cls == "LSTM") layer = std::make_unique<layers::LSTM>(4, o, r);
    if (cls == "GRU") layer = std::make_unique<layers::GRU>(4, o, r);
    ASSERT_TRUE(layer);
    layer->build(Shape({5, 3}));
    auto vars = layer->trainable_variables();
    ASSERT_EQ(vars.size(), c.at("weights").size());
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(tensor_of(c.at("weights")[i]));
    GradientTape tape;
    const Tensor y = (*layer)(x);
    expect_close(y, c.at("y"), 2e-6, "forward");
    const auto g = tape.gradient(ops::reduce_sum(ops::mul(y, tensor_of(c.at("w")))), vars);
    for (std::size_t i = 0; i < vars.size(); ++i) {
      expect_close(g[i], c.at("grads")[i], 1e-5, "gradient of " + vars[i]->path());
      // Keras's paths: "lstm/lstm_cell/kernel".
      const std::string want = c.at("paths")[i];
      EXPECT_EQ(vars[i]->path().substr(vars[i]->path().find('/') + 1), want.substr(want.find('/') + 1));
    }
  }
}

TEST(SequenceLayers, MaskedRecurrentLayersTrainAsKeras) {
  for (const char* name : {"lstm_masked", "gru_backwards_masked"}) {
    SCOPED_TRACE(name);
    const json& ref = sequence_layers_reference().at(name);
    const Tensor x = ops::cast(tensor_of(ref.at("x")), DType::int32);
    auto in = keras::Input({6}, {.name = "tokens", .dtype = DType::int32});
    auto h = layers::Embedding(20, 5, {.mask_zero = true, .name = "embed"})(in);
    if (std::string(name) == "lstm_masked") {
      h = layers::LSTM(4, {}, {.return_sequences = true, .name = "rnn"})(h);
      h = layers::GlobalAveragePooling1D("channels_last", false, "gap")(h);
    } else {
      h = layers::GRU(4, {}, {.go_backwards = true, .name = "rnn"})(h);
    }
    Model model(in, layers::Dense(1, "sigmoid", {.name = "out"})(h));
    expect_trains_as_keras(model, ref, x, optimizers::SGD({.learning_rate = 0.5}), "binary_crossentropy");
    EXPECT_EQ(json::parse(models::model_from_json(model.to_json())->to_json()).at("config"),
              json::parse(model.to_json()).at("config"));
  }
  // In a Sequential: Keras's paths keep the cell ("sequential/lstm/lstm_cell/kernel"); a mask_zero Embedding works
  // there as in a functional model.
  Sequential seq({layers::Input({6}), layers::Embedding(20, 5, {.mask_zero = true}), layers::LSTM(3, {.name = "lstm"}),
                  layers::Dense(1)}, "seq");
  const auto vars = seq.variables();
  EXPECT_EQ(vars[1]->path(), "seq/lstm/lstm_cell/kernel");
  const Tensor ids = Tensor::from_vector<int32_t>({3, 4, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0}, {2, 6});
  const Tensor shorter = Tensor::from_vector<int32_t>({3, 4, 0, 0, 0, 0}, {1, 6});
  const auto both = seq.predict(ids, {.verbose = 0}).to_vector<float>();
  EXPECT_EQ(both[0], both[1]);
  // oneDNN's LSTM rounds a batch of one and a batch of two differently (by an ulp), as TensorFlow's kernels may.
  EXPECT_NEAR(seq.predict(shorter, {.verbose = 0}).to_vector<float>()[0], both[0], 1e-6);
  // Bad arguments and inputs.
  EXPECT_THROW(layers::LSTM(0), ValueError);
  EXPECT_THROW(layers::LSTM(2)(Tensor::zeros({2, 0, 3})), ValueError);
  EXPECT_THROW(layers::LSTM(4, {.dropout = 2.0}), ValueError);
  EXPECT_THROW(layers::GRU(4, {.activation = "nope"}), ValueError);
  EXPECT_THROW((void)layers::LSTM(4)(keras::Input({5})), ValueError);
}

// Token lists padded by utils::pad_sequences as Keras pads them (before each list; longer lists lose their first
// tokens): left-padded masks, which the recurrent layers run as their sequence ops (the GRU's use_cudnn=true
// refuses other paths), trained to Keras's numbers.
TEST(SequenceLayers, PadSequencesPrePaddedTokensTrainAsKeras) {
  const json& ref = sequence_layers_reference().at("pre_padded");
  const Tensor x = utils::pad_sequences(ref.at("lists").get<std::vector<std::vector<int64_t>>>(), {.maxlen = 6});
  ASSERT_EQ(x.dtype(), DType::int32);
  expect_close(x, ref.at("x"), 0, "pad_sequences");
  auto in = keras::Input({6}, {.name = "tokens", .dtype = DType::int32});
  auto h = layers::Embedding(20, 5, {.mask_zero = true, .name = "embed"})(in);
  h = layers::Bidirectional(std::make_shared<layers::LSTM>(3, layers::RecurrentOptions{.name = "lstm"},
                                                           layers::RNNOptions{.return_sequences = true, .use_cudnn = true}),
                            "concat", nullptr, "bi_lstm")(h);
  h = layers::GRU(2, {.name = "gru"}, {.use_cudnn = true})(h);
  Model model(in, layers::Dense(1, "sigmoid", {.name = "out"})(h));
  expect_trains_as_keras(model, ref, x, optimizers::SGD({.learning_rate = 0.5}), "binary_crossentropy");
}

// SparseCategoricalCrossentropy(ignore_class=-1) on a tagger whose output carries Embedding(mask_zero)'s mask:
// both masks weigh the loss (padding and unlabelled tokens give no loss and no gradient, the mean is over the
// rest).
TEST(SequenceLayers, TaggerWithIgnoreClassTrainsAsKeras) {
  const json& ref = sequence_layers_reference().at("tagger_ignore_class");
  const Tensor x = ops::cast(tensor_of(ref.at("x")), DType::int32);
  auto build = [] {
    auto in = keras::Input({6}, {.name = "tokens", .dtype = DType::int32});
    auto h = layers::Embedding(20, 5, {.mask_zero = true, .name = "embed"})(in);
    h = layers::LSTM(4, layers::RecurrentOptions{.name = "lstm"}, layers::RNNOptions{.return_sequences = true})(h);
    return std::make_shared<Model>(in, layers::Dense(3, "softmax", {.name = "tags"})(h));
  };
  auto model = build();
  expect_trains_as_keras(*model, ref, x, optimizers::SGD({.learning_rate = 1.0}),
                         losses::SparseCategoricalCrossentropy({.ignore_class = -1}));
  EXPECT_EQ(json::parse(model->to_json()).at("compile_config").at("loss").at("config"),
            ref.at("compile_loss").at("config"));

  // Without ignore_class the -1 labels are out of range: the loss refuses them rather than reading them as a class.
  auto plain = build();
  plain->compile({.optimizer = optimizers::Adam(), .loss = "sparse_categorical_crossentropy"});
  EXPECT_THROW(plain->evaluate(x, tensor_of(ref.at("y")), {.batch_size = 8, .verbose = 0}), Error);
}

// The same tagger saved by Keras loads with its ignore_class loss, and Osprey's own file keeps it.
TEST(SequenceLayers, TaggerWithIgnoreClassFilesKeepTheLoss) {
  SKIP_WITHOUT_HDF5();
  const json& ref = sequence_layers_reference().at("tagger_ignore_class");
  const Tensor x = ops::cast(tensor_of(ref.at("x")), DType::int32), y = tensor_of(ref.at("y"));
  auto keras_file = models::load_model(osprey::testing::data_file("keras_tagger_ignore_class.keras"));
  EXPECT_EQ(json::parse(keras_file->to_json()).at("compile_config").at("loss").at("config"),
            ref.at("compile_loss").at("config"));
  expect_close(keras_file->predict(x, {.verbose = 0}), ref.at("predict"), 2e-5, "loaded predict");
  EXPECT_NEAR(keras_file->evaluate(x, y, {.batch_size = 8, .verbose = 0})[0], ref.at("evaluate").get<double>(), 2e-5);
  const std::string path = ::testing::TempDir() + "/tagger_ignore_class.keras";
  keras_file->save(path);
  auto again = models::load_model(path);
  EXPECT_EQ(json::parse(again->to_json()).at("compile_config").at("loss").at("config"),
            ref.at("compile_loss").at("config"));
  EXPECT_NEAR(again->evaluate(x, y, {.batch_size = 8, .verbose = 0})[0], ref.at("evaluate").get<double>(), 2e-5);
}

TEST(SequenceLayers, BidirectionalOverMaskedSequencesTrainsAsKeras) {
  const json& ref = sequence_layers_reference().at("bidirectional");
  const Tensor x = ops::cast(tensor_of(ref.at("x")), DType::int32);
  auto in = keras::Input({6}, {.name = "tokens", .dtype = DType::int32});
  auto h = layers::Embedding(20, 5, {.mask_zero = true, .name = "embed"})(in);
  h = layers::Bidirectional(std::make_shared<layers::LSTM>(3, layers::RecurrentOptions{.name = "lstm"},
                                                           layers::RNNOptions{.return_sequences = true}),
                            "concat", nullptr, "bi_lstm")(h);
  h = layers::Bidirectional(std::make_shared<layers::GRU>(2, layers::RecurrentOptions{.name = "gru"}), "sum", nullptr,
                            "bi_gru")(h);
  Model model(in, layers::Dense(1, "sigmoid", {.name = "out"})(h));
  std::vector<std::string> paths;
  for (auto* v : model.variables()) paths.push_back(v->path());
  std::vector<std::string> want;
  for (const auto& p : ref.at("paths")) want.push_back(p);
  EXPECT_EQ(paths, want);
  expect_trains_as_keras(model, ref, x, optimizers::SGD({.learning_rate = 0.5}), "binary_crossentropy");
  EXPECT_EQ(json::parse(models::model_from_json(model.to_json())->to_json()).at("config"),
            json::parse(model.to_json()).at("config"));
  EXPECT_THROW(layers::Bidirectional(std::make_shared<layers::LSTM>(2), "max"), ValueError);
  EXPECT_THROW(layers::Bidirectional(nullptr), ValueError);
}
