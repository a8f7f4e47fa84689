// Connectionist temporal classification against Keras 3.15 on TensorFlow (tests/keras/keras_ctc_reference.py
// regenerates tests/data/keras_ctc.json): keras.ops.ctc_loss and its gradient, keras.losses.CTC, keras.ops.ctc_decode
// (greedy and beam search), a model trained with the CTC loss; bad input; and a transcription task learnt from
// unaligned labels.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
using ::testing::HasSubstr;

namespace {

const json& ctc_reference() {
  static const json ref = osprey::testing::read_reference("keras_ctc.json");
  return ref;
}

Tensor ints(const json& j) { return tensor_of(j, DType::int32); }
DType dtype_of(const json& c) { return c.at("dtype") == "float64" ? DType::float64 : DType::float32; }

TEST(Ctc, LossAndGradientMatchKeras) {
  for (const auto& [name, c] : ctc_reference().at("loss").items()) {
    const DType dt = dtype_of(c);
    Variable logits(tensor_of(c.at("logits"), dt), "logits");
    GradientTape tape;
    const Tensor loss = keras::ops::ctc_loss(ints(c.at("labels")), logits.value(), ints(c.at("label_length")),
                                             ints(c.at("logit_length")), c.at("mask_index").get<int64_t>());
    EXPECT_EQ(dtype_name(loss.dtype()), c.at("loss_dtype").get<std::string>()) << name;
    const Tensor total = osprey::ops::reduce_axes(osprey::ops::mul(loss, tensor_of(c.at("w"), dt)),
                                                  osprey::ops::ReduceOp::sum, {});
    const auto grads = tape.gradient(total, std::vector<Variable*>{&logits});
    expect_close(loss, c.at("loss"), 2e-5, name + " loss");
    // An impossible alignment's posteriors come from paths weighted by TensorFlow's "log 0" (e^-707), which its
    // float32 forward-backward rescales at every frame: a little more rounding there.
    expect_close(grads[0], c.at("grad"), name == "impossible_alignment" ? 1e-4 : 2e-5, name + " gradient");
  }
}

TEST(Ctc, WithoutATapeOnlyTheLossIsComputed) {
  const json& c = ctc_reference().at("loss").at("short_frames_and_empty_labels");
  const Tensor loss = osprey::ops::ctc_loss(ints(c.at("labels")), tensor_of(c.at("logits")), ints(c.at("label_length")),
                                            ints(c.at("logit_length")));
  expect_close(loss, c.at("loss"), 2e-5, "loss");
  // int64 labels and lengths, and a blank given from the end, are the same op.
  const json& m = ctc_reference().at("loss").at("blank_last");
  const Tensor again = osprey::ops::ctc_loss(tensor_of(m.at("labels"), DType::int64), tensor_of(m.at("logits")),
                                             tensor_of(m.at("label_length"), DType::int64),
                                             tensor_of(m.at("logit_length"), DType::int64), -1);
  expect_close(again, m.at("loss"), 2e-5, "int64 inputs, blank -1");
}

TEST(Ctc, TheKerasLossObjectMatchesKeras) {
  const json& c = ctc_reference().at("ctc_loss_object");
  losses::CTC loss;
  EXPECT_EQ(json::parse(loss.get_config()), c.at("config"));
  EXPECT_EQ(losses::get("ctc")->class_name(), "CTC");
  Variable pred(tensor_of(c.at("y_pred")), "pred");
  GradientTape tape;
  const Tensor value = loss(tensor_of(c.at("y_true")), pred.value());  // float labels, as a fit's targets may be
  EXPECT_NEAR(value.item(), c.at("loss").get<double>(), 2e-5 * c.at("loss").get<double>());
  expect_close(tape.gradient(value, std::vector<Variable*>{&pred})[0], c.at("grad"), 2e-5, "gradient");
  expect_close(loss.per_sample(ints(c.at("y_true")), tensor_of(c.at("y_pred"))), c.at("per_sample"), 2e-5,
               "per sample");
  EXPECT_THAT(osprey::testing::error_of([&] { (void)loss(Tensor::zeros({4}), tensor_of(c.at("y_pred"))); }),
              HasSubstr("Targets `y_true` are expected to be a tensor of shape `(batch_size, max_length)`"));
  EXPECT_THROW((void)loss(ints(c.at("y_true")), Tensor::zeros({4, 6})), ValueError);
}

TEST(Ctc, DecodersMatchKeras) {
  for (const auto& [name, c] : ctc_reference().at("decode").items()) {
    std::optional<int64_t> mask;
    if (!c.at("mask_index").is_null()) mask = c.at("mask_index").get<int64_t>();
    auto [decoded, scores] = keras::ops::ctc_decode(tensor_of(c.at("logits"), dtype_of(c)), ints(c.at("lengths")),
                                                    c.at("strategy").get<std::string>(), c.at("beam_width"),
                                                    c.at("top_paths"), c.at("merge_repeated").get<bool>(), mask);
    const Tensor want = ints(c.at("decoded"));
    ASSERT_EQ(decoded.shape(), want.shape()) << name;
    EXPECT_EQ(decoded.dtype(), DType::int32) << name;
    EXPECT_EQ(decoded.to_vector<int32_t>(), want.to_vector<int32_t>()) << name;
    EXPECT_EQ(dtype_name(scores.dtype()), c.at("scores_dtype").get<std::string>()) << name;
    expect_close(scores, c.at("scores"), 2e-5, name + " scores");
  }
}

TEST(Ctc, BadInputRaisesTypedErrorsWithTheValues) {
  const json& c = ctc_reference().at("loss").at("full_lengths");
  const Tensor labels = ints(c.at("labels")), logits = tensor_of(c.at("logits"));
  const Tensor ll = ints(c.at("label_length")), xl = ints(c.at("logit_length"));
  auto loss_error = [&](const Tensor& lab, const Tensor& lab_len, const Tensor& x_len, int64_t blank = 0) {
    return osprey::testing::error_of([&] { (void)osprey::ops::ctc_loss(lab, logits, lab_len, x_len, blank); });
  };
  EXPECT_THAT(loss_error(labels, Tensor::from_vector<int32_t>({5, 3, 6, 4}, {4}), xl),
              HasSubstr("label_length[2] = 6 is not in [0, 5]"));
  EXPECT_THAT(loss_error(labels, Tensor::from_vector<int32_t>({5, -1, 1, 4}, {4}), xl),
              HasSubstr("label_length[1] = -1"));
  EXPECT_THAT(loss_error(labels, ll, Tensor::from_vector<int32_t>({12, 13, 12, 12}, {4})),
              HasSubstr("the length of sequence 1 is 13, not in [0, 12]"));
  std::vector<int32_t> bad = labels.to_vector<int32_t>();
  bad[5 + 1] = 6;  // sample 1, position 1: not a class of 6
  EXPECT_THAT(loss_error(Tensor::from_vector<int32_t>(bad, {4, 5}), ll, xl),
              HasSubstr("labels[1, 1] = 6 is not a class in [0, 6)"));
  bad[5 + 1] = 0;  // the blank
  EXPECT_THAT(loss_error(Tensor::from_vector<int32_t>(bad, {4, 5}), ll, xl),
              HasSubstr("labels[1, 1] = 0 is the blank (mask) index"));
  EXPECT_THAT(loss_error(labels, ll, xl, 6), HasSubstr("blank (mask) index 6 is not a class"));
  EXPECT_THROW((void)osprey::ops::ctc_loss(labels, Tensor::zeros({4, 12}), ll, xl), InvalidArgumentError);
  EXPECT_THROW((void)osprey::ops::ctc_loss(labels, logits, Tensor::zeros({4}), xl), InvalidArgumentError);
  EXPECT_THROW((void)osprey::ops::ctc_loss(ints(json::array({{1, 2}})), logits, ll, xl), InvalidArgumentError);

  const Tensor lengths = Tensor::from_vector<int32_t>({12, 12, 13, 0}, {4});
  EXPECT_THAT(osprey::testing::error_of([&] { (void)keras::ops::ctc_decode(logits, lengths); }),
              HasSubstr("the length of sequence 2 is 13"));
  EXPECT_THAT(osprey::testing::error_of([&] { (void)keras::ops::ctc_decode(logits, lengths, "beam_search"); }),
              HasSubstr("the length of sequence 2 is 13"));
  const Tensor zero_frames = Tensor::from_vector<int32_t>({12, 12, 12, 0}, {4});
  EXPECT_THAT(osprey::testing::error_of([&] { (void)keras::ops::ctc_decode(logits, zero_frames, "beam_search", 4, 2); }),
              HasSubstr("sequence 3 leaves 1 prefixes in the beam, fewer than the 2 top_paths"));
  EXPECT_THROW((void)keras::ops::ctc_decode(logits, zero_frames, "beam_search", 2, 3), InvalidArgumentError);
  EXPECT_THROW((void)keras::ops::ctc_decode(logits, zero_frames, "best_path"), ValueError);
}

// Transcription from unaligned labels: frames of one-hot codes with noise, each symbol spanning 1-2 frames and
// separated from the next by 0-1 blank frames (a repeated symbol by 1-2), labels without any timing. A per-frame
// Dense network trained with the CTC loss and decoded greedily transcribes >= 125 of 128 held-out sequences exactly
// (all 128 when this was written).
TEST(Ctc, AModelLearnsToTranscribeUnalignedSequences) {
  constexpr int64_t kFrames = 20, kClasses = 5, kMaxLabel = 4;
  std::mt19937 gen(5);
  auto make = [&](int64_t n, Tensor& x, Tensor& y) {
    std::vector<float> xs(static_cast<std::size_t>(n * kFrames * kClasses));
    std::vector<int32_t> ys(static_cast<std::size_t>(n * kMaxLabel), 0);
    std::normal_distribution<float> noise(0.f, 0.12f);
    for (auto& v : xs) v = noise(gen);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t count = 1 + static_cast<int64_t>(gen() % kMaxLabel);
      std::vector<int> frame_class(kFrames, 0);
      int64_t t = static_cast<int64_t>(gen() % 2);
      int prev = 0;
      for (int64_t k = 0; k < count; ++k) {
        const int sym = 1 + static_cast<int>(gen() % (kClasses - 1));
        const int64_t gap = (sym == prev ? 1 : 0) + static_cast<int64_t>(gen() % 2);
        const int64_t span = 1 + static_cast<int64_t>(gen() % 2);
        t += gap;
        for (int64_t s = 0; s < span && t < kFrames; ++s) frame_class[static_cast<std::size_t>(t++)] = sym;
        ys[static_cast<std::size_t>(i * kMaxLabel + k)] = sym;
        prev = sym;
      }
      for (int64_t f = 0; f < kFrames; ++f) xs[static_cast<std::size_t>((i * kFrames + f) * kClasses + frame_class[f])] += 1.f;
    }
    x = Tensor::from_vector(xs, {n, kFrames, kClasses});
    y = Tensor::from_vector(ys, {n, kMaxLabel});
  };
  Tensor x, y, vx, vy;
  make(384, x, y);
  make(128, vx, vy);
  auto frames = Input({kFrames, kClasses}, {.name = "frames"});
  auto h = layers::Dense(32, "relu", {.name = "hidden"})(frames);
  Model model(frames, layers::Dense(kClasses, "linear", {.name = "logits"})(h));
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "ctc"});
  const auto hist = model.fit(x, y, {.epochs = 25, .batch_size = 32, .verbose = 0});
  EXPECT_LT(hist.history.at("loss").back(), hist.history.at("loss").front() / 5);
  const Tensor logits = model.predict(vx, {.verbose = 0});
  auto [decoded, scores] = keras::ops::ctc_decode(logits, Tensor::full({128}, kFrames, DType::int32));
  const auto d = decoded.to_vector<int32_t>();
  const auto want = vy.to_vector<int32_t>();
  int exact = 0;
  for (int64_t i = 0; i < 128; ++i) {
    bool same = true;
    for (int64_t k = 0; k < kFrames; ++k) {
      const int32_t w = k < kMaxLabel && want[static_cast<std::size_t>(i * kMaxLabel + k)] != 0
                            ? want[static_cast<std::size_t>(i * kMaxLabel + k)]
                            : -1;
      same = same && d[static_cast<std::size_t>(i * kFrames + k)] == w;
    }
    exact += same ? 1 : 0;
  }
  EXPECT_GE(exact, 125) << "of 128 held-out sequences transcribed exactly";
}

TEST(Ctc, AModelTrainsWithTheCtcLossAsKeras) {
  const json& ref = ctc_reference().at("train");
  auto frames = Input({8, 5}, {.name = "frames"});
  auto h = layers::Dense(16, "tanh", {.name = "hidden"})(frames);
  Model model(frames, layers::Dense(5, "linear", {.name = "logits"})(h));
  std::vector<Tensor> init;
  for (const auto& w : ref.at("init")) init.push_back(tensor_of(w));
  model.set_weights(init);
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.05}), .loss = losses::CTC()});
  const Tensor x = tensor_of(ref.at("x")), y = ints(ref.at("y"));
  const auto hist = model.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false});
  for (int ep = 0; ep < 2; ++ep) {
    const double want = ref.at("history").at("loss")[ep].get<double>();
    EXPECT_NEAR(hist.history.at("loss")[ep], want, 2e-5 * want) << "epoch " << ep;
  }
  const auto weights = model.get_weights();
  ASSERT_EQ(weights.size(), ref.at("weights_after").size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    expect_close(weights[i], ref.at("weights_after")[i], 1e-4, "weight " + std::to_string(i));
  }
  const double evaluated = model.evaluate(x, y, {.batch_size = 4, .verbose = 0}).at(0);
  EXPECT_NEAR(evaluated, ref.at("evaluate").get<double>(), 2e-5 * ref.at("evaluate").get<double>());
}

}  // namespace
