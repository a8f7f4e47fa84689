// Attention layers against Keras 3 (issue 18; tests/keras/keras_attention_reference.py regenerates
// tests/data/keras_attention.json): MultiHeadAttention's outputs, scores and gradients (inputs and every weight) in
// both of Keras's computations with every kind of mask, EinsumDense, the Softmax layer with a mask, and a masked
// self-attention classifier trained two epochs to Keras's losses and weights.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "test_util.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;

namespace {

const json& attention_layers_reference() {
  static const json ref = osprey::testing::read_reference("keras_attention.json");
  return ref;
}

layers::MultiHeadAttentionOptions options_of(const json& c) {
  layers::MultiHeadAttentionOptions o;
  if (c.contains("value_dim") && !c.at("value_dim").is_null()) o.value_dim = c.at("value_dim").get<int64_t>();
  o.dropout = c.at("dropout").get<double>();
  o.use_bias = c.at("use_bias").get<bool>();
  o.use_gate = c.at("use_gate").get<bool>();
  if (c.contains("output_shape") && !c.at("output_shape").is_null()) {
    o.output_shape = c.at("output_shape").get<std::vector<int64_t>>();
  }
  if (!c.at("sliding_window").is_null()) o.sliding_window = c.at("sliding_window").get<int64_t>();
  if (c.contains("attention_axes") && !c.at("attention_axes").is_null()) {
    o.attention_axes = c.at("attention_axes").get<std::vector<int64_t>>();
  }
  return o;
}

// One case: the layer built from Keras's config, Keras's weights, then the output, the scores and the gradients of
// sum(output * w) for query, value, key and every weight.
void expect_attention_as_keras(const std::string& name) {
  SCOPED_TRACE(name);
  const json& ref = attention_layers_reference().at(name);
  const json& cfg = ref.at("config");
  const bool grouped = cfg.contains("num_key_value_heads");
  layers::MultiHeadAttention built_mha = grouped ? layers::MultiHeadAttention(1, 1)
                                                 : layers::MultiHeadAttention(cfg.at("num_heads").get<int64_t>(),
                                                                              cfg.at("key_dim").get<int64_t>(), options_of(cfg));
  layers::GroupedQueryAttention built_gqa(grouped ? cfg.at("head_dim").get<int64_t>() : 1,
                                          grouped ? cfg.at("num_query_heads").get<int64_t>() : 1,
                                          grouped ? cfg.at("num_key_value_heads").get<int64_t>() : 1,
                                          grouped ? options_of(cfg) : layers::MultiHeadAttentionOptions{});
  layers::MultiHeadAttention& mha = grouped ? built_gqa : built_mha;
  Variable q(tensor_of(ref.at("query")), "q"), v(tensor_of(ref.at("value")), "v");
  const bool has_key = !ref.at("key").is_null();
  Variable k(has_key ? tensor_of(ref.at("key")) : Tensor::zeros({1}), "k");
  layers::AttentionCall call;
  const json& c = ref.at("call");
  if (c.contains("attention_mask")) call.attention_mask = tensor_of(c.at("attention_mask"));
  call.use_causal_mask = c.value("use_causal_mask", false);
  call.training = c.value("training", false);
  const json& m = ref.at("masks");
  if (m.contains("query_mask")) call.query_mask = tensor_of(m.at("query_mask"));
  if (m.contains("value_mask")) call.value_mask = tensor_of(m.at("value_mask"));
  call.return_attention_scores = !ref.at("scores").is_null();
  mha.attend(q.value(), v.value(), has_key ? k.value() : Tensor(), call);  // builds
  const auto vars = mha.variables();
  ASSERT_EQ(vars.size(), ref.at("weights").size());
  for (std::size_t i = 0; i < vars.size(); ++i) {
    auto after_layer = [](const std::string& p) { return p.substr(p.find('/')); };  // auto-names differ here
    EXPECT_EQ(after_layer(vars[i]->path()), after_layer(ref.at("weight_paths")[i].get<std::string>()));
    vars[i]->assign(tensor_of(ref.at("weights")[i]));
  }
  GradientTape tape;
  auto [y, scores] = mha.attend(q.value(), v.value(), has_key ? k.value() : Tensor(), call);
  expect_close(y, ref.at("y"), 2e-6, "output");
  if (call.return_attention_scores) expect_close(scores, ref.at("scores"), 2e-6, "scores");
  std::vector<Variable*> sources{&q, &v};
  if (has_key) sources.push_back(&k);
  sources.insert(sources.end(), vars.begin(), vars.end());
  const auto grads = tape.gradient(ops::reduce_sum(ops::mul(y, tensor_of(ref.at("w")))), sources);
  ASSERT_EQ(grads.size(), ref.at("grads").size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    ASSERT_TRUE(grads[i].defined()) << "gradient " << i;
    expect_close(grads[i], ref.at("grads")[i], 1e-5, "gradient " + std::to_string(i));
  }
}

}  // namespace

TEST(AttentionLayers, MultiHeadAttentionMatchesKerasInBothComputations) {
  for (const char* name : {"self", "cross_scores", "masked", "masked_scores", "input_masks", "dropout_window",
                           "gqa_causal", "gqa_scores"}) {
    expect_attention_as_keras(name);
  }
}

// attention_axes: inputs of rank 4 and 5, one axis (the other a batch axis) or several (one softmax over them),
// axes out of order, an explicit mask of Keras's layout with the causal band, scores in Keras's layout.
TEST(AttentionLayers, MultiHeadAttentionOverOtherAxesMatchesKeras) {
  for (const char* name : {"axes_rows", "axes_joint_scores", "axes_first_causal_mask", "axes_rank5_unordered"}) {
    expect_attention_as_keras(name);
  }
  // The config keeps the axes as Keras normalises them.
  const json& ref = attention_layers_reference().at("axes_rank5_unordered");
  auto options = options_of(ref.at("config"));
  options.attention_axes = {-2, 1};  // the script's; Keras's file has them normalised
  layers::MultiHeadAttention mha(3, 2, options);
  EXPECT_EQ(mha.attention_axes(), (std::vector<int64_t>{-2, 1}));
  mha.attend(tensor_of(ref.at("query")), tensor_of(ref.at("value")), tensor_of(ref.at("key")));
  EXPECT_EQ(mha.attention_axes(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(json::parse(mha.get_config()).at("attention_axes"), ref.at("config").at("attention_axes"));
}

TEST(AttentionLayers, AttentionAxesErrorsNameTheLayerAndTheShapes) {
  using osprey::testing::error_of;
  const Tensor x4 = random::uniform({2, 3, 4, 5});
  auto mha = [](std::vector<int64_t> axes) {
    return layers::MultiHeadAttention(2, 3, {.attention_axes = std::move(axes), .name = "axial"});
  };
  EXPECT_THAT(error_of([&] { mha({3}).attend(x4, x4); }), HasSubstr("attention_axes (3) must name distinct axes"));
  EXPECT_THAT(error_of([&] { mha({0}).attend(x4, x4); }), HasSubstr("between the batch and the features"));
  EXPECT_THAT(error_of([&] { mha({1, -3}).attend(x4, x4); }), HasSubstr("distinct axes"));
  // The other axes are batch axes: the query's and the value's must agree.
  EXPECT_THAT(error_of([&] { mha({2}).attend(x4, random::uniform({2, 2, 4, 5})); }),
              HasSubstr("differ on axis 1, which is not an attention axis"));
  EXPECT_THAT(error_of([&] { mha({}).attend(x4, random::uniform({2, 3, 5})); }), HasSubstr("of one rank"));
  // The causal band and the inputs' masks: only along axis 1 / not over several axes.
  layers::AttentionCall causal;
  causal.use_causal_mask = true;
  EXPECT_THAT(error_of([&] { mha({2}).attend(x4, x4, Tensor(), causal); }), HasSubstr("run along axis 1"));
  EXPECT_NO_THROW(mha({1}).attend(x4, x4, Tensor(), causal));
  layers::AttentionCall masked;
  masked.query_mask = Tensor::ones({2, 3, 4});
  EXPECT_THAT(error_of([&] { mha({}).attend(x4, x4, Tensor(), masked); }), HasSubstr("give an attention_mask"));
  layers::AttentionCall wrong;
  wrong.attention_mask = Tensor::ones({2, 4, 3, 4});  // the scores' (B, 4, 3, 3) wanted
  EXPECT_THAT(error_of([&] { mha({1}).attend(x4, x4, Tensor(), wrong); }),
              HasSubstr("attention_mask of shape (2, 4, 3, 4) does not match (batch, <other axes>"));
  wrong.attention_mask = Tensor::ones({3, 3});  // leading axes may be left out
  EXPECT_NO_THROW(mha({1}).attend(x4, x4, Tensor(), wrong));
  EXPECT_THAT(error_of([] { layers::GroupedQueryAttention(2, 4, 2, {.attention_axes = {1}}); }),
              HasSubstr("no value_dim, output_shape or attention_axes"));
}

// Keras's mha(query, value, attention_mask=m) with m a tensor of the graph: the layer's last input.
TEST(AttentionLayers, AnAttentionMaskInputOfAFunctionalModel) {
  random::set_seed(3);
  auto seq = Input({4, 6}), mask = Input({4, 4});
  auto shared = std::make_shared<layers::MultiHeadAttention>(
      2, 3, layers::MultiHeadAttentionOptions{.attention_mask_input = true, .name = "mha"});
  auto& mha = *shared;
  auto y = mha({seq, seq, mask});
  Model model({seq, mask}, y);
  const Tensor x = random::uniform({3, 4, 6});
  std::vector<float> mv(3 * 16, 1.f);
  for (int t = 0; t < 4; ++t) mv[16 + t * 4 + 3] = 0.f;  // sample 1 never attends to step 3
  const Tensor m = Tensor::from_vector<float>(mv, {3, 4, 4});
  const Tensor got = model.predict_all({x, m}, {.verbose = 0})[0];
  layers::AttentionCall call;
  call.attention_mask = m;
  const auto eager = mha.attend(x, x, Tensor(), call).first.to_vector<float>();
  const auto unmasked = mha.attend(x, x).first.to_vector<float>();
  const auto values = got.to_vector<float>();
  ASSERT_EQ(values.size(), eager.size());
  // The model computes the eager call with the mask; the mask changes sample 1 only (the others attend everywhere).
  float masked_diff = 0.f;
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(values[i], eager[i], 1e-6) << i;
    const float d = std::abs(values[i] - unmasked[i]);
    if (i / 24 == 1) masked_diff = std::max(masked_diff, d);
    else EXPECT_NEAR(d, 0.f, 1e-6) << i;
  }
  EXPECT_GT(masked_diff, 1e-4f);
  EXPECT_THAT(osprey::testing::error_of([&] {
                layers::MultiHeadAttention(2, 3, {.attention_mask_input = true, .name = "bad"})({seq, seq, Input({4, 5})});
              }),
              HasSubstr("the attention mask of shape (None, 4, 5) does not match the scores' (None, 2, 4, 4)"));
}

TEST(AttentionLayers, AttentionAndAdditiveAttentionMatchKeras) {
  for (const char* name : {"attention_dot", "attention_scaled_causal", "attention_concat", "additive"}) {
    SCOPED_TRACE(name);
    const json& ref = attention_layers_reference().at(name);
    const json& cfg = ref.at("config");
    std::shared_ptr<layers::Attention> layer;
    if (std::string(name) == "additive") {
      layer = std::make_shared<layers::AdditiveAttention>(cfg.at("use_scale").get<bool>());
    } else {
      layer = std::make_shared<layers::Attention>(layers::Attention::Options{
          .use_scale = cfg.at("use_scale").get<bool>(), .score_mode = cfg.at("score_mode").get<std::string>()});
    }
    layer->set_use_causal_mask(ref.at("causal").get<bool>());
    Variable q(tensor_of(ref.at("query")), "q"), v(tensor_of(ref.at("value")), "v");
    const bool has_key = !ref.at("key").is_null();
    Variable k(has_key ? tensor_of(ref.at("key")) : Tensor::zeros({1}), "k");
    const Tensor qm = ref.at("masks").is_null() ? Tensor() : tensor_of(ref.at("masks")[0]);
    const Tensor vm = ref.at("masks").is_null() ? Tensor() : tensor_of(ref.at("masks")[1]);
    layer->attend(q.value(), v.value(), has_key ? k.value() : Tensor());  // builds
    const auto vars = layer->variables();
    ASSERT_EQ(vars.size(), ref.at("weights").size());
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i]->assign(tensor_of(ref.at("weights")[i]));
    GradientTape tape;
    auto [y, scores] = layer->attend(q.value(), v.value(), has_key ? k.value() : Tensor(), qm, vm, false, true);
    expect_close(y, ref.at("y"), 2e-6, "output");
    expect_close(scores, ref.at("scores"), 2e-6, "scores");
    std::vector<Variable*> sources{&q, &v};
    if (has_key) sources.push_back(&k);
    sources.insert(sources.end(), vars.begin(), vars.end());
    const auto grads = tape.gradient(ops::reduce_sum(ops::mul(y, tensor_of(ref.at("w")))), sources);
    ASSERT_EQ(grads.size(), ref.at("grads").size());
    for (std::size_t i = 0; i < grads.size(); ++i) {
      ASSERT_TRUE(grads[i].defined()) << "gradient " << i;
      expect_close(grads[i], ref.at("grads")[i], 1e-5, "gradient " + std::to_string(i));
    }
  }
  // In a model: [query, value] as one list argument, the query's mask passes on; the config both ways.
  auto tokens = keras::Input({5}, {.dtype = DType::int32});
  auto e = layers::Embedding(9, 4, {.mask_zero = true})(tokens);
  auto a = layers::Attention({.use_scale = true, .use_causal_mask = true})({e, e});
  auto b = layers::AdditiveAttention()({a, e});
  Model model(tokens, layers::GlobalAveragePooling1D()(b));
  const Tensor ids = Tensor::from_vector<int32_t>({1, 2, 3, 0, 0, 4, 5, 6, 7, 8}, {2, 5});
  EXPECT_EQ(model.predict(ids, {.verbose = 0}).shape(), Shape({2, 4}));
  const json cfg = json::parse(model.to_json());
  auto again = models::model_from_json(model.to_json());
  EXPECT_EQ(json::parse(again->to_json()).at("config"), cfg.at("config"));
  EXPECT_THAT(osprey::testing::error_of([] { layers::Attention({.score_mode = "cosine"}); }), HasSubstr("score_mode=cosine"));
}

TEST(AttentionLayers, EinsumDenseMatchesKeras) {
  const json& ref = attention_layers_reference().at("einsum_dense");
  layers::EinsumDense ed("abc,cde->abde", {0, 3, 2}, {.activation = "tanh", .bias_axes = "e"});
  Variable x(tensor_of(ref.at("x")), "x");
  ed(x.value());
  ASSERT_EQ(ed.kernel()->shape(), Shape({5, 3, 2}));
  ASSERT_EQ(ed.bias()->shape(), Shape({2}));
  ed.kernel()->assign(tensor_of(ref.at("weights")[0]));
  ed.bias()->assign(tensor_of(ref.at("weights")[1]));
  GradientTape tape;
  const Tensor y = ed(x.value());
  EXPECT_EQ(y.shape(), Shape({2, 4, 3, 2}));
  expect_close(y, ref.at("y"), 2e-6, "output");
  const auto g = tape.gradient(ops::reduce_sum(ops::mul(y, tensor_of(ref.at("w")))), {&x, ed.kernel(), ed.bias()});
  for (std::size_t i = 0; i < g.size(); ++i) expect_close(g[i], ref.at("grads")[i], 1e-5, "gradient " + std::to_string(i));
  // Its config, both ways; equations that are not one product are refused with the equation named.
  auto again = models::model_from_json(
      Sequential({layers::Input({4, 5}), layers::EinsumDense("abc,cde->abde", {0, 3, 2}, {.bias_axes = "e"})}).to_json());
  EXPECT_EQ(again->layers().back()->class_name(), "EinsumDense");
  EXPECT_THAT(osprey::testing::error_of([] { layers::EinsumDense("abc,dc->abd", {0, 3}); }), HasSubstr("abc,dc->abd"));
  EXPECT_THAT(osprey::testing::error_of([] { layers::EinsumDense("...b,bc->...c", {3}); }), HasSubstr("..."));
  EXPECT_THAT(osprey::testing::error_of([] { layers::EinsumDense("ab,bc->ac", {3}, {.bias_axes = "z"}); }),
              HasSubstr("Bias dimension 'z'"));
}

TEST(AttentionLayers, SoftmaxLayerLeavesMaskedPositionsOutAsKeras) {
  const json& ref = attention_layers_reference().at("softmax_mask");
  layers::Softmax softmax;
  expect_close(softmax.call_masked(tensor_of(ref.at("x")), false, tensor_of(ref.at("mask"))), ref.at("y"), 2e-6,
               "masked softmax");
  EXPECT_THAT(osprey::testing::error_of([&] { softmax.call_masked(tensor_of(ref.at("x")), false, Tensor::ones({2, 4})); }),
              HasSubstr("must be broadcastable"));
}

TEST(AttentionLayers, AMaskedSelfAttentionClassifierTrainsAsKeras) {
  const json& ref = attention_layers_reference().at("classifier");
  const Tensor x = ops::cast(tensor_of(ref.at("x")), DType::int32), y = tensor_of(ref.at("y"));
  auto tokens = keras::Input({6}, {.name = "tokens", .dtype = DType::int32});
  auto e = layers::Embedding(12, 8, {.mask_zero = true, .name = "embed"})(tokens);
  auto a = layers::MultiHeadAttention(2, 4, {.name = "mha"})({e, e});
  auto h = layers::LayerNormalization({.name = "norm"})(layers::Add("residual")({e, a}));
  Model model(tokens, layers::Dense(1, "sigmoid", {.name = "out"})(
                          layers::GlobalAveragePooling1D("channels_last", false, "gap")(h)));
  std::vector<Tensor> init;
  for (const auto& w : ref.at("init")) init.push_back(tensor_of(w));
  model.set_weights(init);
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.3, .momentum = 0.9}), .loss = "binary_crossentropy",
                 .metrics = {"accuracy"}});
  const auto hist = model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (const char* key : {"loss", "accuracy"}) {
    for (int ep = 0; ep < 2; ++ep) {
      EXPECT_NEAR(hist.history.at(key)[ep], ref.at("history").at(key)[ep].get<double>(), 2e-5) << key << " epoch " << ep;
    }
  }
  const auto weights = model.get_weights();
  ASSERT_EQ(weights.size(), ref.at("weights_after").size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    expect_close(weights[i], ref.at("weights_after")[i], 5e-5, "weight " + std::to_string(i));
  }
  expect_close(model.predict(x, {.verbose = 0}), ref.at("predict"), 5e-5, "predict");
  // The config goes back and forth unchanged (positional query and value, Keras's shapes_dict build config).
  const json cfg = json::parse(model.to_json());
  EXPECT_EQ(json::parse(models::model_from_json(model.to_json())->to_json()).at("config"), cfg.at("config"));
}

TEST(AttentionLayers, GroupedQueryAttentionInAModelAndItsFile) {
  auto in = keras::Input({5, 8});
  auto gqa = std::make_shared<layers::GroupedQueryAttention>(3, 4, 2, layers::MultiHeadAttentionOptions{.use_causal_mask = true});
  Model model(in, (*gqa)({in, in}));
  EXPECT_EQ(gqa->count_params(), (8 * 4 * 3 + 4 * 3) + 2 * (8 * 2 * 3 + 2 * 3) + (4 * 3 * 8 + 8));
  const json cfg = json::parse(model.to_json());
  const json& layer = cfg.at("config").at("layers")[1];
  EXPECT_EQ(layer.at("class_name"), "GroupQueryAttention");
  EXPECT_EQ(layer.at("build_config").at("shapes_dict").at("query_shape"), json::parse("[null, 5, 8]"));
  EXPECT_EQ(layer.at("inbound_nodes")[0].at("kwargs"), json::parse(R"({"use_causal_mask": true})"));
  EXPECT_EQ(json::parse(models::model_from_json(model.to_json())->to_json()).at("config"), cfg.at("config"));
  EXPECT_THAT(osprey::testing::error_of([] { layers::GroupedQueryAttention(3, 4, 3); }), HasSubstr("divisible"));
  EXPECT_THAT(osprey::testing::error_of([] { layers::GroupedQueryAttention(3, 4, 2, {.value_dim = 5}); }),
              HasSubstr("no value_dim"));
}

TEST(AttentionLayers, AttentionScoresAreASecondOutputInAModel) {
  // Keras's mha(q, v, return_attention_scores=True) in a functional model: outputs [output, scores].
  auto in = keras::Input({5, 6}, {.name = "seq"});
  auto mha = std::make_shared<layers::MultiHeadAttention>(
      2, 3, layers::MultiHeadAttentionOptions{.return_attention_scores = true, .name = "mha"});
  auto outs = mha->call_all({in, in});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[1].shape(), Shape({2, 5, 5}));
  EXPECT_THROW((void)(*mha)({in, in}), ValueError);  // two outputs: call_all
  Model model(in, std::vector<KerasTensor>{outs[0], outs[1]});
  const Tensor x = osprey::random::uniform({3, 5, 6});
  const auto got = model.predict_all(x, {.verbose = 0});
  layers::AttentionCall call;
  call.return_attention_scores = true;
  const auto [y, scores] = mha->attend(x, x, Tensor(), call);
  EXPECT_EQ(got[0].to_vector<float>(), y.to_vector<float>());
  EXPECT_EQ(got[1].to_vector<float>(), scores.to_vector<float>());
  // Its node as Keras writes it: the call argument, and the outputs [["mha", 0, 0], ["mha", 0, 1]].
  const json cfg = json::parse(model.to_json()).at("config");
  EXPECT_EQ(cfg.at("layers")[1].at("inbound_nodes")[0].at("kwargs"), json::parse(R"({"return_attention_scores": true})"));
  EXPECT_EQ(cfg.at("output_layers"), json::parse(R"([["mha", 0, 0], ["mha", 0, 1]])"));
  auto back = models::model_from_json(model.to_json());
  back->set_weights(model.get_weights());
  EXPECT_EQ(back->predict_all(x, {.verbose = 0})[1].to_vector<float>(), scores.to_vector<float>());
  EXPECT_EQ(json::parse(back->to_json()).at("config"), cfg);
}

TEST(AttentionLayers, ConcatenateMergesMasksAsKeras) {
  const json& ref = attention_layers_reference().at("concat_masks");
  auto tok = keras::Input({6}, {.dtype = DType::int32});
  auto e1 = layers::Embedding(12, 4, {.mask_zero = true})(tok);
  auto e2 = layers::Embedding(12, 4)(tok);
  auto d1 = layers::Dense(3)(e1);
  auto feat_masked = layers::GlobalAveragePooling1D()(layers::Concatenate()({e1, d1}));
  auto feat_mixed = layers::GlobalAveragePooling1D()(layers::Concatenate()({e1, e2}));
  auto steps = layers::GlobalAveragePooling1D()(layers::Concatenate(1)({e1, e2}));
  Model model(tok, std::vector<KerasTensor>{feat_masked, feat_mixed, steps});
  std::vector<Tensor> w;
  for (const auto& t : ref.at("weights")) w.push_back(tensor_of(t));
  model.set_weights(w);
  const auto got = model.predict_all(ops::cast(tensor_of(ref.at("x")), DType::int32), {.verbose = 0});
  for (std::size_t o = 0; o < got.size(); ++o) expect_close(got[o], ref.at("outputs")[o], 2e-6, "output " + std::to_string(o));
}

TEST(AttentionLayers, BadArgumentsAreValueErrorsNamingThem) {
  using layers::MultiHeadAttention;
  EXPECT_THAT(osprey::testing::error_of([] { MultiHeadAttention(0, 4); }), HasSubstr("num_heads=0"));
  EXPECT_THAT(osprey::testing::error_of([] { MultiHeadAttention(2, -1); }), HasSubstr("key_dim=-1"));
  EXPECT_THAT(osprey::testing::error_of([] { MultiHeadAttention(2, 4, {.dropout = 1.5}); }), HasSubstr("dropout"));
  MultiHeadAttention mha(2, 4);
  const Tensor q = Tensor::ones({2, 3, 6}), v = Tensor::ones({2, 5, 6});
  EXPECT_THAT(osprey::testing::error_of([&] { mha.attend(q, Tensor::ones({2, 5, 6}), Tensor::ones({2, 4, 6})); }),
              HasSubstr("except the last one"));
  EXPECT_THAT(osprey::testing::error_of([&] { mha.attend(q, v, Tensor(), {.attention_mask = Tensor::ones({2, 3, 4})}); }),
              HasSubstr("attention_mask of shape"));
  EXPECT_THAT(osprey::testing::error_of([&] { mha.attend(q, v, Tensor(), {.query_mask = Tensor::ones({2, 5})}); }),
              HasSubstr("the query's mask"));
  EXPECT_THAT(osprey::testing::error_of([&] { mha.attend(Tensor::ones({2, 3, 4, 6}), v); }), HasSubstr("(batch, steps"));
  auto in = keras::Input({3, 6});
  EXPECT_THAT(osprey::testing::error_of([&] { layers::MultiHeadAttention(2, 4)({in}); }), HasSubstr("[query, value]"));
}
