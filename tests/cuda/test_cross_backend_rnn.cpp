// Recurrent layers on the GPU against the CPU. The whole-sequence ops (ops::lstm_sequence, gru_sequence,
// simple_rnn_sequence) run cuDNN's RNNs in the CUDA plug-in and oneDNN's on the CPU: outputs, last states and the
// gradients of every input. The Keras layers over them (LSTM, GRU both ways of reset_after, SimpleRNN with each
// activation; forwards and backwards, right-padded masks in host memory and on the device, a left-padded one, return_sequences)
// compute the same on both devices,
// whichever path each takes there (cuDNN has no GRU with reset_after=False and no sigmoid RNN: those run their steps
// on the GPU). Without a GPU the real-GPU case skips with the runtime's reason; the same checks run on the test
// platform's simulated GPU (the CPU's kernels, taking the cells cuDNN takes) so that the harness is exercised.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cuda/cross_backend.h"
#include "osprey/autodiff.h"
#include "osprey/config.h"
#include "osprey/keras.h"
#include "osprey/ops.h"
#include "runtime/device_manager.h"
#include "support/test_gpu_platform.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::testing::cross_backend;
namespace layers = osprey::keras::layers;

namespace {

const char* cell_name(ops::SequenceCell c) {
  switch (c) {
    case ops::SequenceCell::lstm: return "lstm";
    case ops::SequenceCell::gru: return "gru";
    case ops::SequenceCell::gru_reset_before: return "gru reset_before";
    case ops::SequenceCell::simple_tanh: return "simple tanh";
    case ops::SequenceCell::simple_relu: return "simple relu";
    case ops::SequenceCell::simple_sigmoid: return "simple sigmoid";
  }
  return "?";
}

// The recurrent kernels' range: ±0.5 at 4 units, shrinking as 1/sqrt(units) so that a relu network stays stable.
// (At 48 units ±0.5 makes the relu sequence grow ~2x a step, to 1e5 after 20: then float32's different summation
// orders on the two sides flip the signs of near-zero pre-activations and the gradients part by 1e-3.)
double rmax(int64_t units) { return 0.5 * std::min(1.0, std::sqrt(4.0 / static_cast<double>(units))); }

// A sequence op's operands (host tensors from `seed`): x (n, t, f), h0 and c0 (n, u), the kernel, the recurrent
// kernel (range r_range) and the bias of `cell`.
struct SequenceData {
  Tensor x, h0, c0, w, r, b;
};
SequenceData sequence_data(ops::SequenceCell cell, int64_t n, int64_t t, int64_t f, int64_t u, uint64_t seed,
                           double r_range = 0.5) {
  using C = ops::SequenceCell;
  const int64_t g = cell == C::lstm ? 4 : cell == C::gru ? 3 : 1;
  return {host_uniform({n, t, f}, -1, 1, seed), host_uniform({n, u}, -1, 1, seed + 1),
          host_uniform({n, u}, -1, 1, seed + 2), host_uniform({f, g * u}, -0.5, 0.5, seed + 3),
          host_uniform({u, g * u}, -r_range, r_range, seed + 4),
          host_uniform(cell == C::gru ? Shape({2, 3 * u}) : Shape({g * u}), -0.5, 0.5, seed + 5)};
}

// The variables of one evaluation, and the sequence op of `cell` on them (x and h0 as given: cast or not).
struct SequenceVars {
  Variable x, h0, c0, w, r, b;
  explicit SequenceVars(const SequenceData& d)
      : x(d.x, "x"), h0(d.h0, "h0"), c0(d.c0, "c0"), w(d.w, "w"), r(d.r, "r"), b(d.b, "b") {}
  Outputs run(ops::SequenceCell cell, const Tensor& xs, const Tensor& hs) {
    using C = ops::SequenceCell;
    switch (cell) {
      case C::lstm: return ops::lstm_sequence(xs, hs, c0.value(), w.value(), r.value(), b.value());
      case C::gru: return ops::gru_sequence(xs, hs, w.value(), r.value(), b.value());
      default:
        return ops::simple_rnn_sequence(xs, hs, w.value(), r.value(), b.value(),
                                        cell == C::simple_relu ? ops::Activation::relu : ops::Activation::tanh);
    }
  }
  // The initial states the op of `cell` takes.
  Vars states(ops::SequenceCell cell) {
    return cell == ops::SequenceCell::lstm ? Vars{&h0, &c0} : Vars{&h0};
  }
};

// Each sequence op cuDNN computes, forward and backward, at a small shape and at one where cuDNN's kernels tile
// the batch and the gates.
void check_sequence_ops() {
  using C = ops::SequenceCell;
  for (const C cell : {C::lstm, C::gru, C::simple_tanh, C::simple_relu}) {
    for (const auto& [n, t, f, u] : std::vector<std::array<int64_t, 4>>{{5, 7, 3, 4}, {64, 20, 32, 48}}) {
      const auto data = sequence_data(cell, n, t, f, u, static_cast<uint64_t>(n + 10 * static_cast<int>(cell)),
                                      rmax(u));
      expect_same(fmt::format("{} sequence {}x{}x{} units {}", cell_name(cell), n, t, f, u), [&] {
        SequenceVars v(data);
        GradientTape tape;
        Outputs ys = v.run(cell, v.x.value(), v.h0.value());
        Vars vars{&v.x, &v.w, &v.r, &v.b};
        for (Variable* st : v.states(cell)) vars.push_back(st);
        auto grads = tape.gradient(sum_of_squares(ys), vars);
        ys.insert(ys.end(), grads.begin(), grads.end());
        return ys;
      }, 5e-4);
    }
  }
}

// One persistent tape, two gradients of the same forward: the weights' first, then the initial states' (cuDNN's
// backward writes its reserve space; the second gradient must still find the forward's).
void check_two_gradients_of_one_tape() {
  using C = ops::SequenceCell;
  for (const C cell : {C::lstm, C::gru, C::simple_tanh}) {
    const auto data = sequence_data(cell, 5, 7, 3, 4, static_cast<uint64_t>(40 + 10 * static_cast<int>(cell)));
    expect_same(fmt::format("{} sequence, two gradients of one persistent tape", cell_name(cell)), [&] {
      SequenceVars v(data);
      GradientTape tape(true);
      const Tensor total = sum_of_squares(v.run(cell, v.x.value(), v.h0.value()));
      Outputs out = tape.gradient(total, Vars{&v.w, &v.r, &v.b});
      for (const auto& gs : tape.gradient(total, v.states(cell))) out.push_back(gs);
      return out;
    }, 5e-4);
  }
}

// Mixed bfloat16 (x and h0 in bfloat16): oneDNN's bfloat16 RNNs on the CPU, the float32 kernels between casts on
// the GPU; h rounded at each step on one side only, so compared against each output's largest magnitude.
void check_bfloat16_sequence_ops() {
  using C = ops::SequenceCell;
  for (const C cell : {C::lstm, C::gru, C::simple_tanh}) {
    const auto data = sequence_data(cell, 6, 8, 5, 7, static_cast<uint64_t>(70 + 10 * static_cast<int>(cell)));
    expect_close_to_max(fmt::format("{} sequence in bfloat16", cell_name(cell)), [&] {
      SequenceVars v(data);
      GradientTape tape;
      Outputs ys = v.run(cell, ops::cast(v.x.value(), DType::bfloat16), ops::cast(v.h0.value(), DType::bfloat16));
      for (auto& y : ys) y = ops::cast(y, DType::float32);
      Vars vars{&v.x, &v.w, &v.r, &v.b};
      for (Variable* st : v.states(cell)) vars.push_back(st);
      auto grads = tape.gradient(sum_of_squares(ys), vars);
      ys.insert(ys.end(), grads.begin(), grads.end());
      return ys;
    }, 3e-2);
  }
}

struct LayerCase {
  std::string cls, activation = "tanh";
  bool reset_after = true, go_backwards = false, return_sequences = false;
  int masked = 0;  // 0: no mask, 1: the mask in host memory, 2: the mask on the layer's device, 3: left-padded
};

// The layer of `c` on x (4, 6, 3) from initial states: its outputs and the gradients of x, the states and the
// weights (built where the caller's scope puts them, from the same seed).
Outputs run_layer(const LayerCase& c, const Tensor& x, const Tensor& mask, const std::vector<Tensor>& states) {
  random::set_seed(31);
  layers::RecurrentOptions o{.activation = c.activation, .reset_after = c.reset_after};
  const layers::RNNOptions r{.return_sequences = c.return_sequences, .go_backwards = c.go_backwards};
  std::unique_ptr<layers::RNN> layer;
  if (c.cls == "LSTM") layer = std::make_unique<layers::LSTM>(5, o, r);
  else if (c.cls == "GRU") layer = std::make_unique<layers::GRU>(5, o, r);
  else layer = std::make_unique<layers::SimpleRNN>(5, o, r);
  layer->build(Shape({6, 3}));
  Variable vx(x, "x");
  const Tensor m = c.masked == 2 ? mask.to(vx.value().device_ref()) : mask;
  std::vector<std::unique_ptr<Variable>> vs;
  std::vector<Tensor> initial;
  for (const Tensor& s : states) {
    vs.push_back(std::make_unique<Variable>(s, "state"));
    initial.push_back(vs.back()->value());
  }
  GradientTape tape;
  Outputs ys = layer->run(vx.value(), false, m, initial, true);
  Outputs kept;
  for (const Tensor& y : ys) {
    if (y.defined()) kept.push_back(y);
  }
  const Tensor total = sum_of_squares(kept);
  Vars vars{&vx};
  for (auto& v : vs) vars.push_back(v.get());
  for (Variable* v : layer->trainable_variables()) vars.push_back(v);
  auto grads = tape.gradient(total, vars);
  kept.insert(kept.end(), grads.begin(), grads.end());
  return kept;
}

void check_layers() {
  const Tensor x = host_uniform({4, 6, 3}, -1, 1, 41);
  Tensor mask, left;  // rows of 6, 3, 0 and 1 steps, padded after or before them
  {
    DeviceScope cpu("/CPU:0");
    bool m[24], l[24];
    constexpr int kLengths[] = {6, 3, 0, 1};
    for (int i = 0; i < 24; ++i) m[i] = i % 6 < kLengths[i / 6], l[i] = i % 6 >= 6 - kLengths[i / 6];
    mask = Tensor::from_host(m, Shape({4, 6}));
    left = Tensor::from_host(l, Shape({4, 6}));
  }
  std::vector<LayerCase> cells{{.cls = "LSTM"}, {.cls = "GRU"}, {.cls = "GRU", .reset_after = false},
                               {.cls = "SimpleRNN"}, {.cls = "SimpleRNN", .activation = "relu"},
                               {.cls = "SimpleRNN", .activation = "sigmoid"}};
  for (LayerCase c : cells) {
    for (const bool back : {false, true}) {
      for (const bool seqs : {false, true}) {
        for (const int masked : {0, 1, 2, 3}) {
          c.go_backwards = back, c.return_sequences = seqs, c.masked = masked;
          const std::vector<Tensor> states =
              c.cls == "LSTM" ? std::vector<Tensor>{host_uniform({4, 5}, -0.8, 0.8, 42), host_uniform({4, 5}, -0.8, 0.8, 43)}
                              : std::vector<Tensor>{host_uniform({4, 5}, -0.8, 0.8, 42)};
          expect_same(fmt::format("{} {}{} go_backwards={} return_sequences={} masked={}", c.cls, c.activation,
                                  c.reset_after ? "" : " reset_after=False", back, seqs, masked),
                      [&] { return run_layer(c, x, masked == 3 ? left : masked ? mask : Tensor(), states); }, 5e-4);
        }
      }
    }
  }
}

// Under a GPU scope, the sequence ops take exactly the cells cuDNN computes.
void expect_the_cells_cudnn_takes() {
  DeviceScope gpu("/GPU:0");
  using C = ops::SequenceCell;
  for (const C cell : {C::lstm, C::gru, C::simple_tanh, C::simple_relu, C::gru_reset_before, C::simple_sigmoid}) {
    const bool cudnn = cell != C::gru_reset_before && cell != C::simple_sigmoid;
    EXPECT_EQ(ops::rnn_sequence_runs_here({}, cell), cudnn) << cell_name(cell);
  }
}

}  // namespace

TEST(CrossBackendRnn, OnTheRealGpuMatchTheCpu) {
  osprey::testing::reset_runtime();
  if (config::list_logical_devices("GPU").empty()) {
    GTEST_SKIP() << "no GPU: " << runtime::DeviceManager::get().gpu_availability().reason;
  }
  config::experimental::enable_tensor_float_32_execution(false);
  expect_the_cells_cudnn_takes();  // as one op; the others run their steps
  check_sequence_ops();
  check_two_gradients_of_one_tape();
  check_bfloat16_sequence_ops();
  check_layers();
  config::experimental::enable_tensor_float_32_execution(true);
}

TEST(CrossBackendRnn, HarnessOnTheTestPlatform) {
  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(1), .missing_kernels = {}});
  expect_the_cells_cudnn_takes();  // the simulated GPU's kernels are the CPU's, refusing what cuDNN refuses
  check_sequence_ops();
  check_two_gradients_of_one_tape();
  check_bfloat16_sequence_ops();
  check_layers();
  osprey::testing::reset_runtime();
}
