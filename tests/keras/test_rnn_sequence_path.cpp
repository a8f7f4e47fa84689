// The recurrent layers' whole-sequence path (oneDNN's RNN primitives, Keras's use_cudnn="auto") against the same
// layers run step by step (use_cudnn=false): every cell the primitives take (GRU both ways of reset_after), forwards and go_backwards, with and
// without return_sequences, unmasked, under right-padded, left-padded (pad_sequences's default) and both-sides padded
// masks (rows of every length from 0 to all steps) and zero_output_for_mask, with input dropout in training: outputs, last states (an LSTM's carry held through the
// padded steps) and the gradients of the inputs, the initial states and the weights. use_cudnn=true takes the path or refuses with Keras's ValueError.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"
#include "ops/attrs.h"
#include "ops/kernel.h"
#include "support/cpu_machine.h"

using namespace osprey;
using namespace osprey::keras;
using ::testing::HasSubstr;

namespace {

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.shape(), want.shape());
  const auto a = got.to_vector<double>(), b = want.to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol * (1.0 + std::abs(b[i]))) << "at " << i;
}

struct Case {
  std::string cls, activation = "tanh";
  bool go_backwards = false, return_sequences = false, zero_output_for_mask = false;
  double dropout = 0.0, recurrent_dropout = 0.0;
  bool reset_after = true;
};

std::unique_ptr<layers::RNN> make(const Case& c, std::optional<bool> use_cudnn, bool stateful = false) {
  layers::RecurrentOptions o{.activation = c.activation, .reset_after = c.reset_after, .dropout = c.dropout,
                             .recurrent_dropout = c.recurrent_dropout};
  const layers::RNNOptions r{.return_sequences = c.return_sequences, .go_backwards = c.go_backwards,
                             .stateful = stateful, .zero_output_for_mask = c.zero_output_for_mask,
                             .use_cudnn = use_cudnn};
  if (c.cls == "LSTM") return std::make_unique<layers::LSTM>(5, o, r);
  if (c.cls == "GRU") return std::make_unique<layers::GRU>(5, o, r);
  return std::make_unique<layers::SimpleRNN>(5, o, r);
}

// A (4, 6) bool mask with step k of row b where keep(b, k).
template <typename Keep>
Tensor mask_of(Keep keep) {
  bool m[24];
  for (int i = 0; i < 24; ++i) m[i] = keep(i / 6, i % 6);
  return Tensor::from_host(m, Shape({4, 6}));
}

// Rows of lengths 6, 3, 0 and 1 of 6 steps, right-padded; or every step.
Tensor right_padded(bool whole) {
  static constexpr int kLengths[] = {6, 3, 0, 1};
  return mask_of([whole](int b, int k) { return whole || k < kLengths[b]; });
}

// Rows of lengths 6, 3, 0 and 1 of 6 steps, left-padded (keras.utils.pad_sequences's default, padding="pre").
Tensor left_padded() {
  static constexpr int kLengths[] = {6, 3, 0, 1};
  return mask_of([](int b, int k) { return k >= 6 - kLengths[b]; });
}

// One run of unmasked steps in each row, padded on both sides: steps [1, 4), [0, 2), [5, 6) and [2, 3).
Tensor padded_both_sides() {
  static constexpr int kFirst[] = {1, 0, 5, 2}, kEnd[] = {4, 2, 6, 3};
  return mask_of([](int b, int k) { return k >= kFirst[b] && k < kEnd[b]; });
}

// Step 2 of every row masked: two runs in each row, a hole.
Tensor with_holes() {
  return mask_of([](int, int k) { return k != 2; });
}

struct PathRun {
  std::vector<Tensor> out, grads;
};

// The layer of `c` on x (4, 6, 3) from initial states, the same seed each time (weights and dropout masks alike).
PathRun run(const Case& c, std::optional<bool> use_cudnn, const Tensor& x, const Tensor& mask, bool training, bool states_used) {
  osprey::random::set_seed(21);
  auto layer = make(c, use_cudnn);
  layer->build(Shape({6, 3}));
  const std::size_t num_states = c.cls == "LSTM" ? 2 : 1;
  std::vector<Tensor> states;
  for (std::size_t i = 0; i < num_states; ++i) states.push_back(osprey::random::uniform({4, 5}, -0.8, 0.8));
  GradientTape tape(true);
  tape.watch(x);
  for (const auto& s : states) tape.watch(s);
  PathRun r;
  r.out = layer->run(x, training, mask, states, states_used);
  Tensor loss = ops::reduce_sum(ops::mul(r.out[0], osprey::random::uniform(r.out[0].shape(), -1, 1)));
  for (std::size_t i = 1; i < r.out.size(); ++i) {
    if (i == 1 || states_used) loss = ops::add(loss, ops::reduce_sum(ops::mul(r.out[i], osprey::random::uniform({4, 5}, -1, 1))));
  }
  std::vector<Tensor> sources{x};
  sources.insert(sources.end(), states.begin(), states.end());
  r.grads = tape.gradient(loss, sources);
  const auto g = tape.gradient(loss, layer->trainable_variables());
  r.grads.insert(r.grads.end(), g.begin(), g.end());
  return r;
}

void expect_same(const PathRun& fused, const PathRun& steps) {
  ASSERT_EQ(fused.out.size(), steps.out.size());
  for (std::size_t i = 0; i < fused.out.size(); ++i) {
    if (!fused.out[i].defined()) continue;  // an LSTM's carry after padded rows, its states unused
    expect_close(fused.out[i], steps.out[i], 2e-6, "output " + std::to_string(i));
  }
  ASSERT_EQ(fused.grads.size(), steps.grads.size());
  for (std::size_t i = 0; i < fused.grads.size(); ++i) {
    expect_close(fused.grads[i], steps.grads[i], 2e-5, "gradient " + std::to_string(i));
  }
}

}  // namespace

TEST(RecurrentSequencePath, IsTheStepsForEveryCellDirectionMaskAndDropout) {
  osprey::testing::reset_runtime_cpu_only();  // the CPU's sequence kernels take every cell (cuDNN not all)
  const Tensor x = (osprey::random::set_seed(3), osprey::random::uniform({4, 6, 3}, -1, 1));
  std::vector<Case> cells{{.cls = "SimpleRNN"}, {.cls = "SimpleRNN", .activation = "relu"},
                          {.cls = "SimpleRNN", .activation = "sigmoid"}, {.cls = "LSTM"}, {.cls = "GRU"},
                          {.cls = "GRU", .reset_after = false}};
  int compared = 0;
  for (Case c : cells) {
    for (const bool back : {false, true}) {
      for (const bool seqs : {false, true}) {
        // none, every step unmasked, right-padded, left-padded and both-sides padded rows
        for (const int masking : {0, 1, 2, 3, 4}) {
          for (const bool zero_out : {false, true}) {
            for (const double dropout : {0.0, 0.4}) {
              if (zero_out && masking < 2) continue;
              c.go_backwards = back, c.return_sequences = seqs, c.zero_output_for_mask = zero_out, c.dropout = dropout;
              const Tensor mask = masking == 0   ? Tensor()
                                  : masking < 3  ? right_padded(masking == 1)
                                  : masking == 3 ? left_padded()
                                                 : padded_both_sides();
              const bool training = dropout > 0.0;
              // An LSTM's carry after padded rows: held through them by the op when the states are used, else
              // left out.
              for (const bool states_used : {true, false}) {
                if (!states_used && !(c.cls == "LSTM" && masking >= 2)) continue;
                SCOPED_TRACE(::testing::Message()
                             << c.cls << " " << c.activation << (c.reset_after ? "" : " reset_before")
                             << (back ? " go_backwards" : "") << (seqs ? " return_sequences" : "") << " mask " << masking
                             << (zero_out ? " zero_output_for_mask" : "") << " dropout " << dropout
                             << (states_used ? "" : ", states unused"));
                const PathRun fused = run(c, true, x, mask, training, states_used);
                const PathRun steps = run(c, false, x, mask, training, states_used);
                expect_same(fused, steps);
                expect_same(run(c, std::nullopt, x, mask, training, states_used), fused);
                EXPECT_EQ(fused.out.back().defined(), states_used);
                ++compared;
              }
            }
          }
        }
      }
    }
  }
  // 6 cells x 2 directions x 2 output kinds x (4 unpadded + 3 paddings x 4); and the LSTM's padded rows with
  // unused states.
  EXPECT_EQ(compared, 6 * 2 * 2 * (4 + 3 * 4) + 2 * 2 * 3 * 2 * 2);
}

TEST(RecurrentSequencePath, OtherMasksAndCellsRunTheStepsOrRefuseWithUseCudnnTrue) {
  osprey::random::set_seed(4);
  const Tensor x = osprey::random::uniform({4, 6, 3}, -1, 1);
  // A mask with a hole (not right-padded): "auto" runs the steps, which Keras's semantics need.
  const Tensor holes = with_holes();
  for (const char* cls : {"SimpleRNN", "LSTM", "GRU"}) {
    SCOPED_TRACE(cls);
    const Case c{.cls = cls, .return_sequences = true};
    expect_same(run(c, std::nullopt, x, holes, false, true), run(c, false, x, holes, false, true));
    try {
      (void)run(c, true, x, holes, false, true);
      ADD_FAILURE() << "use_cudnn=True took a mask with holes";
    } catch (const ValueError& e) {
      EXPECT_THAT(e.what(), HasSubstr("use_cudnn=True was specified"));
      EXPECT_THAT(e.what(), HasSubstr("masks whose rows each hold one run of unmasked steps"));
    }
  }
  // Cells the primitives do not take: other activations, recurrent dropout in training.
  const Case others[] = {{.cls = "SimpleRNN", .activation = "elu"},
                         {.cls = "LSTM", .activation = "relu"},
                         {.cls = "GRU", .activation = "relu", .reset_after = false},
                         {.cls = "LSTM", .recurrent_dropout = 0.3}};
  for (const Case& c : others) {
    SCOPED_TRACE(c.cls + " " + c.activation);
    EXPECT_THROW((void)run(c, true, x, Tensor(), true, true), ValueError);
    expect_same(run(c, std::nullopt, x, Tensor(), true, true), run(c, false, x, Tensor(), true, true));
  }
  // Recurrent dropout is training's only: inference takes the path.
  EXPECT_NO_THROW((void)run({.cls = "LSTM", .recurrent_dropout = 0.3}, true, x, Tensor(), false, true));
}

// A backend whose sequence kernel refuses a cell (as cuDNN refuses the GRU with reset_after=False and the sigmoid
// RNN): the layer asks first and runs its steps ("auto"), or refuses with Keras's ValueError (use_cudnn=true).
namespace {
bool refuse_lstm(const void* attrs) {
  return static_cast<const osprey::ops::RnnSequenceAttrs*>(attrs)->kind != osprey::ops::RnnSequenceAttrs::kLstm;
}
struct AcceptsGuard {  // the CPU's kernels take every cell again afterwards
  AcceptsGuard() {
    for (auto op : {osprey::ops::OpId::LstmSequence, osprey::ops::OpId::LstmSequenceGrad}) {
      osprey::ops::register_accepts(op, osprey::runtime::DeviceType::CPU, refuse_lstm);
    }
  }
  ~AcceptsGuard() {
    for (auto op : {osprey::ops::OpId::LstmSequence, osprey::ops::OpId::LstmSequenceGrad}) {
      osprey::ops::register_accepts(op, osprey::runtime::DeviceType::CPU, nullptr);
    }
  }
};
}  // namespace

TEST(RecurrentSequencePath, ACellTheBackendRefusesRunsItsSteps) {
  osprey::testing::reset_runtime_cpu_only();  // counts the CPU's kernels
  osprey::random::set_seed(6);
  const Tensor x = osprey::random::uniform({4, 6, 3}, -1, 1);
  const Case lstm{.cls = "LSTM", .return_sequences = true};
  const uint64_t at_start = ops::kernels_dispatched_on_this_thread();
  const PathRun fused = run(lstm, std::nullopt, x, right_padded(false), false, true);
  const uint64_t fused_kernels = ops::kernels_dispatched_on_this_thread() - at_start;
  AcceptsGuard refusing;
  EXPECT_FALSE(ops::rnn_sequence_runs_here(std::vector<Tensor>{x}, ops::SequenceCell::lstm));
  EXPECT_TRUE(ops::rnn_sequence_runs_here(std::vector<Tensor>{x}, ops::SequenceCell::gru));
  try {
    (void)run(lstm, true, x, Tensor(), false, true);
    ADD_FAILURE() << "use_cudnn=True took a cell the backend refuses";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), HasSubstr("use_cudnn=True was specified"));
  }
  const uint64_t before = ops::kernels_dispatched_on_this_thread();
  const PathRun steps = run(lstm, std::nullopt, x, right_padded(false), false, true);
  const uint64_t step_kernels = ops::kernels_dispatched_on_this_thread() - before;
  EXPECT_GT(step_kernels, fused_kernels + 6 * 2) << "the steps run ops per step (" << fused_kernels
                                                  << " kernels with the sequence op)";
  expect_same(fused, steps);
  EXPECT_NO_THROW((void)run({.cls = "GRU"}, true, x, Tensor(), false, true)) << "other cells still take the op";
}

// Stateful layers over right-padded batches keep each row's states after its last unmasked step (an LSTM's carry
// too), as the steps do.
TEST(RecurrentSequencePath, StatefulLayersKeepEachRowsLastState) {
  osprey::random::set_seed(5);
  const Tensor x1 = osprey::random::uniform({4, 6, 3}, -1, 1), x2 = osprey::random::uniform({4, 6, 3}, -1, 1);
  for (const char* cls : {"GRU", "LSTM"}) {
    SCOPED_TRACE(cls);
    std::vector<Tensor> last[2];
    for (int pass = 0; pass < 2; ++pass) {
      osprey::random::set_seed(22);
      auto layer = make({.cls = cls, .return_sequences = true}, pass == 0 ? std::optional<bool>(true) : false, true);
      layer->build(Shape({6, 3}));
      (void)layer->run(x1, false, right_padded(false), {}, false);
      last[pass] = layer->states();
      last[pass].push_back(layer->run(x2, false, Tensor(), {}, false)[0]);
    }
    ASSERT_EQ(last[0].size(), last[1].size());
    for (std::size_t i = 0; i < last[0].size(); ++i) {
      expect_close(last[0][i], last[1][i], 2e-6, i + 1 < last[0].size() ? "a state after the padded batch" : "the next batch's outputs");
    }
  }
}

// Bidirectional's two copies keep the layer's use_cudnn (Keras's copies lose it: it is not in configs); a config
// that names it takes "auto", true or false, as Keras's LSTM and GRU constructors do.
TEST(RecurrentSequencePath, BidirectionalCopiesKeepUseCudnnAndConfigsReadIt) {
  osprey::random::set_seed(6);
  const Tensor x = osprey::random::uniform({4, 6, 3}, -1, 1);
  const Tensor holes = with_holes();
  layers::Bidirectional strict(std::make_shared<layers::LSTM>(5, layers::RecurrentOptions{},
                                                               layers::RNNOptions{.use_cudnn = true}));
  EXPECT_NO_THROW((void)strict.call_masked(x, false, right_padded(false)));
  EXPECT_THROW((void)strict.call_masked(x, false, holes), ValueError);
  layers::Bidirectional steps(std::make_shared<layers::GRU>(5, layers::RecurrentOptions{},
                                                             layers::RNNOptions{.use_cudnn = false}));
  EXPECT_NO_THROW((void)steps.call_masked(x, false, holes));

  auto in = keras::Input({6, 3});
  Model model(in, layers::GRU(2, {}, {.name = "gru"})(in));
  auto config = nlohmann::json::parse(model.to_json());
  EXPECT_FALSE(config.dump().find("use_cudnn") != std::string::npos);  // not saved, as in Keras
  for (const auto& [value, valid] : std::vector<std::pair<nlohmann::json, bool>>{
           {"auto", true}, {true, true}, {false, true}, {"yes", false}, {1, false}}) {
    SCOPED_TRACE(value.dump());
    for (auto& layer : config["config"]["layers"]) {
      if (layer["class_name"] == "GRU") layer["config"]["use_cudnn"] = value;
    }
    if (valid) {
      EXPECT_NO_THROW((void)models::model_from_json(config.dump()));
    } else {
      EXPECT_THROW((void)models::model_from_json(config.dump()), ValueError);
    }
  }
}
