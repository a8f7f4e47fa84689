// Recurrent layers with states against Keras 3 (issue 18; tests/keras/keras_recurrent_reference.py regenerates
// tests/data/keras_recurrent.json): return_state and initial_state (values and gradients, masks included),
// Bidirectional's states and merge_mode=None, stateful layers across batches, an encoder-decoder model trained to
// Keras's numbers and its config both ways, and dropout/recurrent_dropout inside the cells.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "test_util.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/random.h"
#include "osprey/keras.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;

namespace {

const json& recurrent_states_reference() {
  static const json ref = osprey::testing::read_reference("keras_recurrent.json");
  return ref;
}

std::shared_ptr<layers::RNN> make_rnn(const std::string& cls, int64_t units, layers::RecurrentOptions o,
                                      layers::RNNOptions r) {
  if (cls == "SimpleRNN") return std::make_shared<layers::SimpleRNN>(units, o, r);
  if (cls == "LSTM") return std::make_shared<layers::LSTM>(units, o, r);
  return std::make_shared<layers::GRU>(units, o, r);
}

void set_weights(Layer& layer, const json& weights) {
  auto vars = layer.variables();
  ASSERT_EQ(vars.size(), weights.size());
  for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(tensor_of(weights[i]));
}

std::vector<Tensor> tensors_of(const json& list) {
  std::vector<Tensor> out;
  for (const auto& t : list) out.push_back(tensor_of(t));
  return out;
}

}  // namespace

TEST(RecurrentStates, ReturnStateAndInitialStateMatchKerasWithGradients) {
  const json& ref = recurrent_states_reference().at("states");
  const Tensor x = tensor_of(ref.at("x")), mask = tensor_of(ref.at("mask"));
  for (const auto& c : ref.at("cases")) {
    const std::string cls = c.at("class");
    const json& kw = c.at("kwargs");
    SCOPED_TRACE(cls + " " + kw.dump() + (c.at("masked").get<bool>() ? " masked" : ""));
    layers::RecurrentOptions o;
    if (kw.contains("reset_after")) o.reset_after = kw.at("reset_after");
    auto layer = make_rnn(cls, 4, o,
                          {.return_sequences = kw.value("return_sequences", false), .return_state = true,
                           .go_backwards = kw.value("go_backwards", false)});
    layer->build(Shape({5, 3}));
    set_weights(*layer, c.at("weights"));
    std::vector<Tensor> inputs{x};
    for (const auto& s : c.at("initial_state")) inputs.push_back(tensor_of(s));
    EXPECT_EQ(layer->num_outputs(), static_cast<int>(inputs.size()));
    GradientTape tape(true);
    for (std::size_t i = 1; i < inputs.size(); ++i) tape.watch(inputs[i]);
    std::vector<Tensor> outs;
    if (c.at("masked").get<bool>()) {
      std::vector<Tensor> out_masks;
      std::vector<Tensor> masks(inputs.size());
      masks[0] = mask;
      outs = layer->call_outputs_masked(inputs, false, masks, out_masks);
      ASSERT_EQ(out_masks.size(), outs.size());
      EXPECT_EQ(out_masks[0].defined(), kw.value("return_sequences", false));
      for (std::size_t i = 1; i < out_masks.size(); ++i) EXPECT_FALSE(out_masks[i].defined());
    } else {
      outs = layer->call_all(inputs);
    }
    ASSERT_EQ(outs.size(), c.at("outputs").size());
    Tensor loss = Tensor::scalar(0.0);
    for (std::size_t i = 0; i < outs.size(); ++i) {
      expect_close(outs[i], c.at("outputs")[i], 2e-6, "output " + std::to_string(i));
      loss = ops::add(loss, ops::reduce_sum(ops::mul(outs[i], tensor_of(c.at("ws")[i]))));
    }
    auto vars = layer->trainable_variables();
    const auto gw = tape.gradient(loss, vars);
    for (std::size_t i = 0; i < vars.size(); ++i) expect_close(gw[i], c.at("grads")[i], 1e-5, vars[i]->path());
    const auto gs = tape.gradient(loss, std::vector<Tensor>(inputs.begin() + 1, inputs.end()));
    for (std::size_t i = 0; i < gs.size(); ++i) {
      expect_close(gs[i], c.at("grads")[vars.size() + i], 1e-5, "initial state " + std::to_string(i));
    }
    // The first output alone through call(), as a layer of one output gives it.
    if (!c.at("masked").get<bool>()) expect_close(layer->call(inputs, false), c.at("outputs")[0], 2e-6, "call()");
  }
  // Wrong initial states: a typed error naming what the cell takes.
  layers::LSTM lstm(4, {}, {.return_state = true});
  EXPECT_THAT(osprey::testing::error_of([&] { lstm.call_all({x, Tensor::zeros({3, 4})}); }), HasSubstr("takes 2"));
  EXPECT_THROW(lstm.call_all({x, Tensor::zeros({3, 4}), Tensor::zeros({3, 5})}), ValueError);
  EXPECT_THROW((void)lstm.call_all({keras::Input({5, 3}), keras::Input({4})}), ValueError);
  // A layer of several outputs called for one symbolic output: the error points to call_all.
  auto in = keras::Input({5, 3});
  EXPECT_THAT(osprey::testing::error_of([&] { (void)layers::GRU(2, {}, {.return_state = true})(in); }),
              HasSubstr("call_all"));
}

TEST(RecurrentStates, BidirectionalStatesAndSeparateOutputsMatchKeras) {
  const Tensor x = tensor_of(recurrent_states_reference().at("states").at("x"));
  const Tensor mask = tensor_of(recurrent_states_reference().at("states").at("mask"));
  for (const auto& c : recurrent_states_reference().at("bidirectional")) {
    const std::string cls = c.at("class");
    const std::string mode = c.at("merge_mode").is_null() ? "" : c.at("merge_mode").get<std::string>();
    SCOPED_TRACE(cls + " merge_mode=" + (mode.empty() ? "None" : mode));
    layers::Bidirectional bi(make_rnn(cls, 3, {}, {.return_sequences = true, .return_state = true}), mode);
    bi.build(Shape({5, 3}));
    set_weights(bi, c.at("weights"));
    ASSERT_EQ(bi.num_outputs(), static_cast<int>(c.at("outputs").size()));
    std::vector<Tensor> inputs{x};
    for (const auto& s : c.at("initial_state")) inputs.push_back(tensor_of(s));
    std::vector<Tensor> masks(inputs.size()), out_masks;
    masks[0] = mask;
    const auto outs = bi.call_outputs_masked(inputs, false, masks, out_masks);
    ASSERT_EQ(outs.size(), c.at("outputs").size());
    for (std::size_t i = 0; i < outs.size(); ++i) expect_close(outs[i], c.at("outputs")[i], 2e-6, "output " + std::to_string(i));
    EXPECT_TRUE(out_masks[0].defined());
    EXPECT_EQ(out_masks[1].defined(), mode.empty());
    const auto plain = bi.call_all({x});
    for (std::size_t i = 0; i < plain.size(); ++i) {
      expect_close(plain[i], c.at("outputs_without_state")[i], 2e-6, "zero states, output " + std::to_string(i));
    }
    // Its config keeps merge_mode None as null and comes back the same.
    const json cfg = json::parse(bi.get_config());
    EXPECT_EQ(cfg.at("merge_mode").is_null(), mode.empty());
  }
  // In a model: merge_mode None's two outputs and the states, saved and read back.
  auto in = keras::Input({5, 3}, {.name = "seq"});
  auto outs = layers::Bidirectional(std::make_shared<layers::GRU>(3, layers::RecurrentOptions{},
                                                                  layers::RNNOptions{.return_state = true}),
                                    "", nullptr, "bi")
                  .call_all(in);
  ASSERT_EQ(outs.size(), 4u);
  Model model(in, std::vector<KerasTensor>{layers::Add()({outs[0], outs[1]}), outs[2], outs[3]});
  const auto y = model.predict_all(x, {.verbose = 0});
  auto back = models::model_from_json(model.to_json());
  back->set_weights(model.get_weights());
  const auto y2 = back->predict_all(x, {.verbose = 0});
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i].to_vector<float>(), y2[i].to_vector<float>());
  EXPECT_EQ(json::parse(back->to_json()).at("config"), json::parse(model.to_json()).at("config"));
  EXPECT_THROW(layers::Bidirectional(std::make_shared<layers::LSTM>(2), "max"), ValueError);
}

TEST(RecurrentStates, StatefulLayersCarryStatesAcrossBatchesAsKeras) {
  const json& ref = recurrent_states_reference().at("stateful");
  auto lstm = std::make_shared<layers::LSTM>(5, layers::RecurrentOptions{.name = "lstm"},
                                             layers::RNNOptions{.stateful = true});
  auto in = keras::Input({4, 3}, {.batch_size = 2});
  Model model(in, layers::Dense(2, "linear", {.name = "out"})((*lstm)(in)));
  model.set_weights(tensors_of(ref.at("weights")));
  expect_close(model.predict_on_batch(tensor_of(ref.at("b1"))), ref.at("p1"), 2e-6, "first batch");
  expect_close(model.predict_on_batch(tensor_of(ref.at("b2"))), ref.at("p2"), 2e-6, "second batch, continued");
  lstm->reset_states();
  expect_close(model.predict_on_batch(tensor_of(ref.at("b2"))), ref.at("p3"), 2e-6, "after reset_states");
  const Tensor series = tensor_of(ref.at("series"));
  expect_close(model.predict(series, {.batch_size = 2, .verbose = 0}), ref.at("predict_series"), 2e-6, "predict");
  lstm->reset_states();
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  const auto hist = model.fit(series, tensor_of(ref.at("y")), {.epochs = 2, .batch_size = 2, .verbose = 0, .shuffle = false});
  for (int e = 0; e < 2; ++e) {
    EXPECT_NEAR(hist.history.at("loss")[e], ref.at("history").at("loss")[e].get<double>(), 2e-5) << "epoch " << e;
  }
  const auto w = model.get_weights();
  for (std::size_t i = 0; i < w.size(); ++i) expect_close(w[i], ref.at("weights_after")[i], 2e-5, "weight " + std::to_string(i));
  ASSERT_EQ(lstm->states().size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) expect_close(lstm->states()[i], ref.at("states_after")[i], 2e-5, "state");
  // A batch of another size: Keras's error with both sizes; the states are not weights (not in the files).
  EXPECT_THAT(osprey::testing::error_of([&] { model.predict_on_batch(Tensor::zeros({3, 4, 3})); }),
              HasSubstr("Expected batch size: 2"));
  EXPECT_EQ(model.get_weights().size(), ref.at("weights").size());
  const json cfg = json::parse(model.to_json());
  EXPECT_EQ(cfg.at("config").at("layers")[1].at("config").at("stateful"), true);
  EXPECT_EQ(cfg.at("config").at("layers")[0].at("config").at("batch_shape")[0], 2);
}

TEST(RecurrentStates, AnEncoderDecoderTrainsAsKerasAndKeepsItsConfig) {
  const json& ref = recurrent_states_reference().at("seq2seq");
  auto enc_in = keras::Input({6, 3}, {.name = "encoder_inputs"});
  auto dec_in = keras::Input({5, 2}, {.name = "decoder_inputs"});
  auto enc = layers::LSTM(6, {}, {.return_state = true, .name = "encoder"}).call_all(enc_in);
  ASSERT_EQ(enc.size(), 3u);
  EXPECT_EQ(enc[1].shape(), Shape({6}));
  auto dec = layers::LSTM(6, {}, {.return_sequences = true, .name = "decoder"})({dec_in, enc[1], enc[2]});
  Model model({enc_in, dec_in}, layers::Dense(2, "linear", {.name = "out"})(dec), "seq2seq");
  // The config is Keras's: the decoder's node takes the encoder's states 1 and 2 as initial_state.
  const json cfg = json::parse(model.to_json()).at("config");
  EXPECT_EQ(cfg.at("layers"), ref.at("config").at("layers"));
  EXPECT_EQ(cfg.at("output_layers"), ref.at("config").at("output_layers"));
  model.set_weights(tensors_of(ref.at("init")));
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.2}), .loss = "mse"});
  const Tensor ex = tensor_of(ref.at("enc_x")), dx = tensor_of(ref.at("dec_x"));
  const auto hist = model.fit({ex, dx}, tensor_of(ref.at("y")), {.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false});
  for (int e = 0; e < 2; ++e) {
    EXPECT_NEAR(hist.history.at("loss")[e], ref.at("history").at("loss")[e].get<double>(), 2e-5) << "epoch " << e;
  }
  const auto w = model.get_weights();
  for (std::size_t i = 0; i < w.size(); ++i) expect_close(w[i], ref.at("weights_after")[i], 2e-5, "weight " + std::to_string(i));
  expect_close(model.predict({ex, dx}, {.verbose = 0}), ref.at("predict"), 2e-5, "predict");
  // Keras's own config builds the same model.
  json keras_model{{"class_name", "Functional"}, {"config", ref.at("config")}, {"module", "keras.src.models.functional"}};
  auto loaded = models::model_from_json(keras_model.dump());
  loaded->set_weights(model.get_weights());
  EXPECT_EQ(loaded->predict({ex, dx}, {.verbose = 0}).to_vector<float>(),
            model.predict({ex, dx}, {.verbose = 0}).to_vector<float>());
}

TEST(RecurrentStates, DropoutInsideCellsIsTrainingOnlyAndOneMaskPerSequence) {
  // Seeded: the masks are small (a few units), and two unseeded draws were the same in about 1 run of 300.
  random::set_seed(21);
  const Tensor x = tensor_of(recurrent_states_reference().at("states").at("x"));
  for (const auto& c : recurrent_states_reference().at("dropout")) {
    const std::string cls = c.at("class");
    const json& kw = c.at("kwargs");
    SCOPED_TRACE(cls + " " + kw.dump());
    // Keras's config (dropout and all) loads; inference is Keras's.
    const json input{{"class_name", "InputLayer"}, {"module", "keras.layers"},
                     {"config", {{"batch_shape", {nullptr, 5, 3}}, {"dtype", "float32"}, {"name", "in"}}}};
    const json layer_object{{"class_name", cls}, {"config", c.at("config")}, {"module", "keras.layers"}};
    const json seq{{"class_name", "Sequential"}, {"module", "keras"},
                   {"config", {{"name", "s"}, {"layers", {input, layer_object}}}}};
    auto model = models::model_from_json(seq.dump());
    ASSERT_EQ(model->layers().size(), 1u) << seq.dump();
    ASSERT_TRUE(model->input_shape().has_value()) << seq.dump();
    set_weights(*model, c.at("weights"));
    expect_close(model->predict(x, {.verbose = 0}), c.at("y"), 2e-6, "inference");
    // Training draws masks: another output, another one on the next call, gradients through it.
    auto& layer = *model->layers().at(0);
    const auto a = layer(x, true).to_vector<float>(), b = layer(x, true).to_vector<float>();
    EXPECT_NE(a, tensor_of(c.at("y")).to_vector<float>());
    EXPECT_NE(a, b);
    GradientTape tape;
    const auto g = tape.gradient(ops::reduce_sum(layer(x, true)), layer.trainable_variables());
    for (const auto& t : g) EXPECT_TRUE(t.defined());
  }
  // One input mask per sequence, the same at every step: a SimpleRNN that passes its input through (identity
  // kernel, no recurrence, linear) outputs x / (1 - rate) or 0, with one pattern of zeros for all steps.
  layers::SimpleRNN pass(3, {.activation = "linear", .use_bias = false, .dropout = 0.5}, {.return_sequences = true});
  pass.build(Shape({5, 3}));
  auto vars = pass.variables();
  vars[0]->assign(Tensor::from_vector<float>({1, 0, 0, 0, 1, 0, 0, 0, 1}, {3, 3}));
  vars[1]->assign(Tensor::zeros({3, 3}));
  const Tensor ones = Tensor::ones({64, 5, 3});
  const auto y = pass(ones, true).to_vector<float>();
  int zeros = 0;
  for (int n = 0; n < 64; ++n) {
    for (int f = 0; f < 3; ++f) {
      const float first = y[static_cast<std::size_t>((n * 5) * 3 + f)];
      EXPECT_TRUE(first == 0.0f || first == 2.0f) << first;
      zeros += first == 0.0f;
      for (int t = 1; t < 5; ++t) EXPECT_EQ(y[static_cast<std::size_t>((n * 5 + t) * 3 + f)], first);
    }
  }
  EXPECT_GT(zeros, 40);  // of 192 draws at rate 0.5: far from none or all
  EXPECT_LT(zeros, 152);
  EXPECT_EQ(pass(ones, false).to_vector<float>(), ones.to_vector<float>());
  EXPECT_THROW(layers::LSTM(4, {.dropout = 1.5}), ValueError);
  EXPECT_THROW(layers::GRU(4, {.recurrent_dropout = -0.1}), ValueError);
}

namespace {

// Trains two epochs from the reference's weights and compares the history (loss and metric), the weights and
// evaluate() with Keras's.
void expect_masked_training_as_keras(Model& model, const json& ref, const Tensor& x, const std::string& metric) {
  model.set_weights(tensors_of(ref.at("init")));
  const Tensor y = tensor_of(ref.at("y"));
  const auto hist = model.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false});
  for (const std::string& key : {std::string("loss"), metric}) {
    for (int e = 0; e < 2; ++e) {
      EXPECT_NEAR(hist.history.at(key)[e], ref.at("history").at(key)[e].get<double>(), 2e-5) << key << " epoch " << e;
    }
  }
  const auto w = model.get_weights();
  for (std::size_t i = 0; i < w.size(); ++i) expect_close(w[i], ref.at("weights_after")[i], 2e-5, "weight " + std::to_string(i));
  const auto ev = model.evaluate_dict(x, y, {.batch_size = 4, .verbose = 0});
  for (const auto& [k, v] : ref.at("evaluate").items()) EXPECT_NEAR(ev.at(k), v.get<double>(), 2e-5) << k;
}

}  // namespace

TEST(RecurrentStates, MaskedOutputsWeightTheLossAndMetricsPerStepAsKeras) {
  {  // a tagger: a softmax per token of padded ids; loss and accuracy over the unmasked tokens
    const json& ref = recurrent_states_reference().at("masked_tagger");
    auto in = keras::Input({7}, {.name = "tokens", .dtype = DType::int32});
    auto h = layers::Embedding(12, 5, {.mask_zero = true, .name = "embed"})(in);
    h = layers::LSTM(6, {}, {.return_sequences = true, .name = "lstm"})(h);
    Model model(in, layers::Dense(3, "softmax", {.name = "tags"})(h), "tagger");
    model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.5}), .loss = "sparse_categorical_crossentropy",
                   .metrics = {"accuracy"}});
    expect_masked_training_as_keras(model, ref, ops::cast(tensor_of(ref.at("x")), DType::int32), "accuracy");
  }
  {  // a regression per step of float sequences whose padding Masking marks
    const json& ref = recurrent_states_reference().at("masked_regression");
    auto in = keras::Input({7, 2}, {.name = "series"});
    auto h = layers::Masking(0.0, "mask")(in);
    h = layers::GRU(4, {}, {.return_sequences = true, .name = "gru"})(h);
    Model model(in, layers::Dense(1, "linear", {.name = "out"})(h), "masked_regression");
    model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse", .metrics = {"mae"}});
    expect_masked_training_as_keras(model, ref, tensor_of(ref.at("x")), "mae");
  }
}

TEST(RecurrentStates, StackedCellsMatchKerasWithStatesAndGradients) {
  const json& ref = recurrent_states_reference().at("stacked");
  const Tensor x = tensor_of(recurrent_states_reference().at("states").at("x")), mask = tensor_of(recurrent_states_reference().at("states").at("mask"));
  layers::RNN rnn(std::vector<std::shared_ptr<layers::RNNCell>>{std::make_shared<layers::LSTMCell>(4),
                                                                std::make_shared<layers::GRUCell>(2),
                                                                std::make_shared<layers::LSTMCell>(3)},
                  {.return_sequences = true, .return_state = true});
  rnn.build(Shape({5, 3}));
  set_weights(rnn, ref.at("weights"));
  ASSERT_EQ(rnn.num_outputs(), 6);  // the output, then h, c of the first LSTM, the GRU's h, h, c of the last
  std::vector<std::string> paths;
  for (auto* v : rnn.variables()) paths.push_back(v->path().substr(v->path().find('/') + 1));
  std::vector<std::string> want;
  for (const auto& p : ref.at("paths")) want.push_back(p.get<std::string>().substr(p.get<std::string>().find('/') + 1));
  EXPECT_EQ(paths, want);
  GradientTape tape;
  std::vector<Tensor> out_masks;
  const auto outs = rnn.call_outputs_masked({x}, false, {mask}, out_masks);
  ASSERT_EQ(outs.size(), ref.at("outputs").size());
  Tensor loss = Tensor::scalar(0.0);
  for (std::size_t i = 0; i < outs.size(); ++i) {
    expect_close(outs[i], ref.at("outputs")[i], 2e-6, "output " + std::to_string(i));
    loss = ops::add(loss, ops::reduce_sum(ops::mul(outs[i], tensor_of(ref.at("ws")[i]))));
  }
  const auto vars = rnn.trainable_variables();
  const auto g = tape.gradient(loss, vars);
  for (std::size_t i = 0; i < vars.size(); ++i) expect_close(g[i], ref.at("grads")[i], 1e-5, vars[i]->path());
  // Keras's config builds the same layer.
  const json cfg = json::parse(rnn.get_config());
  EXPECT_EQ(cfg.at("cell").at("class_name"), "StackedRNNCells");
  EXPECT_EQ(cfg.at("cell").at("config").at("cells").size(), 3u);
  EXPECT_EQ(ref.at("config").at("cell").at("config").at("cells").size(), 3u);
  EXPECT_THROW(layers::StackedRNNCells({}), ValueError);
}

// Dropout inside stacked cells: each cell's masks are drawn once per sequence, as by a layer of that cell alone, so
// a stack equals the layers it replaces (drawn from the same seed) where one cell has dropout; the cells above the
// first mask the output of the cell below. Inference ignores every rate; gradients reach every weight.
TEST(RecurrentStates, StackedCellsApplyEachCellsDropoutAsItsOwnLayerWould) {
  const Tensor x = random::uniform({6, 5, 3});
  using layers::RecurrentOptions;
  for (int upper : {0, 1}) {  // which cell has the dropout: the first, or the second (its input: the first's output)
    for (const char* kind : {"lstm", "gru", "simple"}) {
      SCOPED_TRACE(std::string(kind) + (upper ? " above" : " below"));
      auto cell = [&](int64_t units, RecurrentOptions o) -> std::shared_ptr<layers::RNNCell> {
        if (std::string(kind) == "lstm") return std::make_shared<layers::LSTMCell>(units, o);
        if (std::string(kind) == "gru") return std::make_shared<layers::GRUCell>(units, o);
        return std::make_shared<layers::SimpleRNNCell>(units, o);
      };
      const RecurrentOptions plain{}, dropped{.dropout = 0.4, .recurrent_dropout = 0.3};
      std::vector<std::shared_ptr<layers::RNNCell>> cells{cell(4, upper ? plain : dropped)};
      if (upper) cells.push_back(cell(2, dropped));
      layers::RNN stack(cells, {.return_sequences = true});
      stack.build(Shape({5, 3}));
      // The same cells as layers: RNN(first) -> RNN(second), sharing the stack's weights.
      layers::RNN lower(cell(4, upper ? plain : dropped), {.return_sequences = true});
      lower.build(Shape({5, 3}));
      layers::RNN above(cell(2, dropped), {.return_sequences = true});
      if (upper) above.build(Shape({5, 4}));
      std::vector<Variable*> separate = lower.variables();
      if (upper) for (auto* v : above.variables()) separate.push_back(v);
      const auto stacked = stack.variables();
      ASSERT_EQ(stacked.size(), separate.size());
      for (std::size_t i = 0; i < stacked.size(); ++i) separate[i]->assign(stacked[i]->value());
      auto layered = [&](bool training) {
        const Tensor h = lower(x, training);
        return upper ? above(h, training) : h;
      };
      random::set_seed(7);
      const Tensor a = stack(x, true);
      random::set_seed(7);
      const Tensor b = layered(true);
      EXPECT_EQ(a.shape(), b.shape());
      const auto av = a.to_vector<float>(), bv = b.to_vector<float>();
      for (std::size_t i = 0; i < av.size(); ++i) EXPECT_NEAR(av[i], bv[i], 1e-5) << i;
      // Training differs from inference (and inference from the layers' is the same).
      EXPECT_NE(av, stack(x, false).to_vector<float>());
      const auto inf_a = stack(x, false).to_vector<float>(), inf_b = layered(false).to_vector<float>();
      for (std::size_t i = 0; i < inf_a.size(); ++i) EXPECT_NEAR(inf_a[i], inf_b[i], 1e-5) << i;
      GradientTape tape;
      const auto g = tape.gradient(ops::reduce_sum(stack(x, true)), stack.trainable_variables());
      for (const auto& t : g) EXPECT_TRUE(t.defined());
    }
  }
  // Keras's config of a stack with dropout loads and keeps the rates.
  layers::RNN rnn(std::vector<std::shared_ptr<layers::RNNCell>>{
      std::make_shared<layers::LSTMCell>(3, RecurrentOptions{.dropout = 0.25}),
      std::make_shared<layers::GRUCell>(2, RecurrentOptions{.recurrent_dropout = 0.5})});
  rnn.build(Shape({5, 3}));
  const json cells = json::parse(rnn.get_config()).at("cell").at("config").at("cells");
  EXPECT_EQ(cells.at(0).at("config").at("dropout"), 0.25);
  EXPECT_EQ(cells.at(1).at("config").at("recurrent_dropout"), 0.5);
}
