// The recurrent layers' fused ops: ops::lstm_cell, ops::gru_cell and the sequence ops (LSTM, GRU, simple RNN) against
// their definitions as separate ops (values and gradients of every output for every input) and against central
// finite differences; bad shapes are typed errors.
#include <gtest/gtest.h>

#include <array>

#include "ops/op_checks.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"

using namespace osprey;
using osprey::testing::check_gradients;
using osprey::testing::expect_close;
using osprey::testing::host;

namespace {

// {h, c} of Keras's LSTMCell from the gate inputs, as separate ops.
std::vector<Tensor> lstm_by_ops(const Tensor& z, const Tensor& c_prev) {
  const int64_t u = c_prev.shape()[1];
  const auto g = ops::split(z, 1, {u, u, u, u});
  const Tensor c = ops::add(ops::mul(ops::sigmoid(g[1]), c_prev), ops::mul(ops::sigmoid(g[0]), ops::tanh(g[2])));
  return {ops::mul(ops::sigmoid(g[3]), ops::tanh(c)), c};
}

// h of Keras's GRUCell (reset_after) from the inputs' and the recurrent parts, as separate ops.
Tensor gru_by_ops(const Tensor& x, const Tensor& r, const Tensor& h_prev) {
  const int64_t u = h_prev.shape()[1];
  const auto a = ops::split(x, 1, {u, u, u}), b = ops::split(r, 1, {u, u, u});
  const Tensor z = ops::sigmoid(ops::add(a[0], b[0])), rho = ops::sigmoid(ops::add(a[1], b[1]));
  const Tensor hh = ops::tanh(ops::add(a[2], ops::mul(rho, b[2])));
  return ops::add(ops::mul(z, h_prev), ops::mul(ops::sub(Tensor::ones(z.shape()), z), hh));
}

// A sequence op's run (0) against the steps' (1): every output within 1e-5, every gradient within 1e-4.
void expect_same_runs(const std::vector<Tensor> (&outs)[2], const std::vector<Tensor> (&grads)[2]) {
  ASSERT_EQ(outs[0].size(), outs[1].size());
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (std::size_t i = 0; i < outs[0].size(); ++i) expect_close(host(outs[0][i]), host(outs[1][i]), 1e-5);
  for (std::size_t i = 0; i < grads[0].size(); ++i) {
    SCOPED_TRACE(i);
    expect_close(host(grads[0][i]), host(grads[1][i]), 1e-4);
  }
}

}  // namespace

TEST(RnnOps, GruCellMatchesItsDefinitionWithGradients) {
  random::set_seed(5);
  for (const int64_t rows : {1, 6, 33}) {
    SCOPED_TRACE(rows);
    const int64_t u = 9;
    Tensor x = random::uniform({rows, 3 * u}, -3, 3), r = random::uniform({rows, 3 * u}, -3, 3),
           hp = random::uniform({rows, u}, -1, 1);
    const Tensor w = random::uniform({rows, u}, -1, 1);
    std::vector<Tensor> outs, grads;
    for (int pass = 0; pass < 2; ++pass) {
      GradientTape tape;
      for (const Tensor* t : {&x, &r, &hp}) tape.watch(*t);
      const Tensor h = pass == 0 ? ops::gru_cell(x, r, hp) : gru_by_ops(x, r, hp);
      auto g = tape.gradient(ops::reduce_sum(ops::mul(h, w)), {x, r, hp});
      outs.push_back(h);
      grads.insert(grads.end(), g.begin(), g.end());
    }
    expect_close(host(outs[0]), host(outs[1]), 1e-6);
    for (int i = 0; i < 3; ++i) expect_close(host(grads[i]), host(grads[3 + i]), 1e-5);
  }
  check_gradients([](auto& in) { return ops::gru_cell(in[0], in[1], in[2]); },
                  {random::uniform({3, 12}, -2, 2), random::uniform({3, 12}, -2, 2), random::uniform({3, 4}, -1, 1)});
  EXPECT_THROW((void)ops::gru_cell(Tensor::zeros({4, 9}), Tensor::zeros({4, 6}), Tensor::zeros({4, 3})), InvalidArgumentError);
  EXPECT_THROW((void)ops::gru_cell(Tensor::zeros({4, 9}), Tensor::zeros({4, 9}), Tensor::zeros({4, 2})), InvalidArgumentError);
}

TEST(RnnOps, LstmCellMatchesItsDefinitionWithGradients) {
  random::set_seed(3);
  for (const int64_t rows : {1, 5, 37}) {
    SCOPED_TRACE(rows);
    const int64_t u = 7;
    Tensor z = random::uniform({rows, 4 * u}, -3, 3), cp = random::uniform({rows, u}, -2, 2);
    const Tensor wh = random::uniform({rows, u}, -1, 1), wc = random::uniform({rows, u}, -1, 1);
    std::vector<Tensor> fused, by_ops, g_fused, g_ops;
    for (int pass = 0; pass < 2; ++pass) {
      GradientTape tape;
      tape.watch(z);
      tape.watch(cp);
      auto out = pass == 0 ? ops::lstm_cell(z, cp) : lstm_by_ops(z, cp);
      const Tensor loss = ops::add(ops::reduce_sum(ops::mul(out[0], wh)), ops::reduce_sum(ops::mul(out[1], wc)));
      auto g = tape.gradient(loss, {z, cp});
      (pass == 0 ? fused : by_ops) = out;
      (pass == 0 ? g_fused : g_ops) = g;
    }
    expect_close(host(fused[0]), host(by_ops[0]), 1e-6);
    expect_close(host(fused[1]), host(by_ops[1]), 1e-6);
    expect_close(host(g_fused[0]), host(g_ops[0]), 1e-5);
    expect_close(host(g_fused[1]), host(g_ops[1]), 1e-5);
  }
  // Only h used (the last step's carry unused): its gradient counts h alone.
  Tensor z = random::uniform({4, 12}, -2, 2), cp = random::uniform({4, 3}, -1, 1);
  check_gradients([](auto& in) { return ops::lstm_cell(in[0], in[1])[0]; }, {z, cp});
  check_gradients([](auto& in) { return ops::lstm_cell(in[0], in[1])[1]; }, {z, cp});
  EXPECT_THROW((void)ops::lstm_cell(Tensor::zeros({4, 10}), Tensor::zeros({4, 3})), InvalidArgumentError);
  EXPECT_THROW((void)ops::lstm_cell(Tensor::zeros({4, 12}), Tensor::zeros({5, 3})), InvalidArgumentError);
  EXPECT_THROW((void)ops::lstm_cell(Tensor::zeros({4, 12, 1}), Tensor::zeros({4, 3})), InvalidArgumentError);
}

// The whole sequence as one op (oneDNN's LSTM primitive on the CPU) against the steps as ops::lstm_cell over
// Keras's products: every step's h, the last h and c, and the gradients of x, both initial states and the three
// weights, for a loss that uses all three outputs.
TEST(RnnOps, LstmSequenceIsTheStepsOfTheCellWithGradients) {
  random::set_seed(8);
  for (const auto& [n, t, f, u] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1}, {5, 7, 3, 4}, {16, 12, 9, 6}}) {
    SCOPED_TRACE(::testing::Message() << n << "x" << t << "x" << f << ", units " << u);
    Tensor x = random::uniform({n, t, f}, -1, 1), h0 = random::uniform({n, u}, -1, 1), c0 = random::uniform({n, u}, -1, 1),
           w = random::uniform({f, 4 * u}, -0.6, 0.6), r = random::uniform({u, 4 * u}, -0.6, 0.6),
           b = random::uniform({4 * u}, -0.5, 0.5);
    const Tensor wy = random::uniform({n, t, u}, -1, 1), wh = random::uniform({n, u}, -1, 1),
                 wc = random::uniform({n, u}, -1, 1);
    std::vector<Tensor> outs[2], grads[2];
    for (int pass = 0; pass < 2; ++pass) {
      GradientTape tape;
      for (const Tensor* p : {&x, &h0, &c0, &w, &r, &b}) tape.watch(*p);
      std::vector<Tensor> out;
      if (pass == 0) {
        ASSERT_TRUE(ops::rnn_sequence_runs_here(std::vector<Tensor>{x, h0, c0, w, r, b}, ops::SequenceCell::lstm));
        out = ops::lstm_sequence(x, h0, c0, w, r, b);
      } else {
        const Tensor xp = ops::reshape(ops::dense(ops::reshape(x, {n * t, f}), w, b, ops::Activation::linear), {n, t, 4 * u});
        const auto steps = ops::split(xp, 1, std::vector<int64_t>(static_cast<std::size_t>(t), 1));
        Tensor h = h0, c = c0;
        std::vector<Tensor> ys;
        for (const Tensor& s : steps) {
          auto hc = ops::lstm_cell(ops::add(ops::reshape(s, {n, 4 * u}), ops::matmul(h, r)), c);
          h = hc[0], c = hc[1];
          ys.push_back(ops::reshape(h, {n, 1, u}));
        }
        out = {ops::concat(ys, 1), h, c};
      }
      const Tensor loss = ops::add(ops::add(ops::reduce_sum(ops::mul(out[0], wy)), ops::reduce_sum(ops::mul(out[1], wh))),
                                   ops::reduce_sum(ops::mul(out[2], wc)));
      grads[pass] = tape.gradient(loss, {x, h0, c0, w, r, b});
      outs[pass] = out;
    }
    expect_same_runs(outs, grads);
  }
  // Only the last h used (an LSTM without return_sequences): the other outputs' gradients are zeros.
  check_gradients([](auto& in) { return ops::lstm_sequence(in[0], in[1], in[2], in[3], in[4], in[5])[1]; },
                  {random::uniform({2, 3, 2}, -1, 1), random::uniform({2, 2}, -1, 1), random::uniform({2, 2}, -1, 1),
                   random::uniform({2, 8}, -0.5, 0.5), random::uniform({2, 8}, -0.5, 0.5), random::uniform({8}, -0.5, 0.5)});
  const Tensor z2 = Tensor::zeros({2, 3}), w = Tensor::zeros({4, 12}), r = Tensor::zeros({3, 12}), b = Tensor::zeros({12});
  EXPECT_THROW((void)ops::lstm_sequence(Tensor::zeros({2, 5, 4}), z2, z2, w, r, Tensor::zeros({8})), InvalidArgumentError);
  EXPECT_THROW((void)ops::lstm_sequence(Tensor::zeros({2, 5, 3}), z2, z2, w, r, b), InvalidArgumentError);  // features
  EXPECT_THROW((void)ops::lstm_sequence(Tensor::zeros({2, 0, 4}), z2, z2, w, r, b), InvalidArgumentError);  // no steps
  EXPECT_THROW((void)ops::lstm_sequence(Tensor::zeros({3, 5, 4}), z2, z2, w, r, b), InvalidArgumentError);  // batch
}

// The same for a GRU (Keras's reset_after form, on oneDNN's linear-before-reset GRU): Keras's (2, 3·units) bias,
// against the steps of gru_cell over Keras's products, values and the gradients of x, h0 and the three weights.
TEST(RnnOps, GruSequenceIsTheStepsOfTheCellWithGradients) {
  random::set_seed(9);
  for (const auto& [n, t, f, u] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1}, {4, 6, 3, 5}, {16, 11, 7, 8}}) {
    SCOPED_TRACE(::testing::Message() << n << "x" << t << "x" << f << ", units " << u);
    Tensor x = random::uniform({n, t, f}, -1, 1), h0 = random::uniform({n, u}, -1, 1),
           w = random::uniform({f, 3 * u}, -0.6, 0.6), r = random::uniform({u, 3 * u}, -0.6, 0.6),
           b = random::uniform({2, 3 * u}, -0.5, 0.5);
    const Tensor wy = random::uniform({n, t, u}, -1, 1), wh = random::uniform({n, u}, -1, 1);
    std::vector<Tensor> outs[2], grads[2];
    for (int pass = 0; pass < 2; ++pass) {
      GradientTape tape;
      for (const Tensor* p : {&x, &h0, &w, &r, &b}) tape.watch(*p);
      std::vector<Tensor> out;
      if (pass == 0) {
        out = ops::gru_sequence(x, h0, w, r, b);
      } else {
        const Tensor b_in = ops::reshape(ops::slice_axis(b, 0, 0, 1), {3 * u});
        const Tensor b_rec = ops::reshape(ops::slice_axis(b, 0, 1, 1), {3 * u});
        const Tensor xp = ops::reshape(ops::dense(ops::reshape(x, {n * t, f}), w, b_in, ops::Activation::linear), {n, t, 3 * u});
        Tensor h = h0;
        std::vector<Tensor> ys;
        for (const Tensor& s : ops::split(xp, 1, std::vector<int64_t>(static_cast<std::size_t>(t), 1))) {
          h = ops::gru_cell(ops::reshape(s, {n, 3 * u}), ops::add(ops::matmul(h, r), b_rec), h);
          ys.push_back(ops::reshape(h, {n, 1, u}));
        }
        out = {ops::concat(ys, 1), h};
      }
      const Tensor loss = ops::add(ops::reduce_sum(ops::mul(out[0], wy)), ops::reduce_sum(ops::mul(out[1], wh)));
      grads[pass] = tape.gradient(loss, {x, h0, w, r, b});
      outs[pass] = out;
    }
    expect_same_runs(outs, grads);
  }
  check_gradients([](auto& in) { return ops::gru_sequence(in[0], in[1], in[2], in[3], in[4])[1]; },
                  {random::uniform({2, 3, 2}, -1, 1), random::uniform({2, 2}, -1, 1), random::uniform({2, 6}, -0.5, 0.5),
                   random::uniform({2, 6}, -0.5, 0.5), random::uniform({2, 6}, -0.5, 0.5)});
  const Tensor h = Tensor::zeros({2, 3}), w = Tensor::zeros({4, 9}), r = Tensor::zeros({3, 9});
  EXPECT_THROW((void)ops::gru_sequence(Tensor::zeros({2, 5, 4}), h, w, r, Tensor::zeros({9})), InvalidArgumentError);
  EXPECT_THROW((void)ops::gru_sequence(Tensor::zeros({2, 5, 4}), h, w, Tensor::zeros({3, 12}), Tensor::zeros({2, 9})),
               InvalidArgumentError);
}

// The same for a simple RNN (oneDNN's vanilla RNN) with each activation it takes: h = act(x·W + h·R + b) step by
// step as ops, values and the gradients of x, h0 and the three weights.
TEST(RnnOps, SimpleRnnSequenceIsTheStepsWithGradients) {
  random::set_seed(10);
  for (const auto act : {ops::Activation::tanh, ops::Activation::relu, ops::Activation::sigmoid}) {
    for (const auto& [n, t, f, u] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1}, {4, 6, 3, 5}, {16, 11, 7, 8}}) {
      SCOPED_TRACE(::testing::Message() << ops::activation_name(act) << " " << n << "x" << t << "x" << f << ", units " << u);
      Tensor x = random::uniform({n, t, f}, -1, 1), h0 = random::uniform({n, u}, -1, 1),
             w = random::uniform({f, u}, -0.6, 0.6), r = random::uniform({u, u}, -0.6, 0.6),
             b = random::uniform({u}, -0.5, 0.5);
      const Tensor wy = random::uniform({n, t, u}, -1, 1), wh = random::uniform({n, u}, -1, 1);
      std::vector<Tensor> outs[2], grads[2];
      for (int pass = 0; pass < 2; ++pass) {
        GradientTape tape;
        for (const Tensor* p : {&x, &h0, &w, &r, &b}) tape.watch(*p);
        std::vector<Tensor> out;
        if (pass == 0) {
          out = ops::simple_rnn_sequence(x, h0, w, r, b, act);
        } else {
          const Tensor xp = ops::reshape(ops::dense(ops::reshape(x, {n * t, f}), w, b, ops::Activation::linear), {n, t, u});
          Tensor h = h0;
          std::vector<Tensor> ys;
          for (const Tensor& s : ops::split(xp, 1, std::vector<int64_t>(static_cast<std::size_t>(t), 1))) {
            h = ops::activation(ops::add(ops::reshape(s, {n, u}), ops::matmul(h, r)), act);
            ys.push_back(ops::reshape(h, {n, 1, u}));
          }
          out = {ops::concat(ys, 1), h};
        }
        const Tensor loss = ops::add(ops::reduce_sum(ops::mul(out[0], wy)), ops::reduce_sum(ops::mul(out[1], wh)));
        grads[pass] = tape.gradient(loss, {x, h0, w, r, b});
        outs[pass] = out;
      }
      expect_same_runs(outs, grads);
    }
  }
  check_gradients([](auto& in) { return ops::simple_rnn_sequence(in[0], in[1], in[2], in[3], in[4], ops::Activation::tanh)[1]; },
                  {random::uniform({2, 3, 2}, -1, 1), random::uniform({2, 2}, -1, 1), random::uniform({2, 2}, -0.5, 0.5),
                   random::uniform({2, 2}, -0.5, 0.5), random::uniform({2}, -0.5, 0.5)});
  const Tensor h = Tensor::zeros({2, 3}), w = Tensor::zeros({4, 3}), r = Tensor::zeros({3, 3}), b = Tensor::zeros({3});
  EXPECT_THROW((void)ops::simple_rnn_sequence(Tensor::zeros({2, 5, 4}), h, w, r, Tensor::zeros({4}), ops::Activation::tanh),
               InvalidArgumentError);
  EXPECT_THROW((void)ops::simple_rnn_sequence(Tensor::zeros({2, 5, 4}), h, w, r, b, ops::Activation::gelu),
               InvalidArgumentError);
}

// Mixed bfloat16: x and h0 in bfloat16 give every h in bfloat16 and float32 gradients cast to the inputs' dtypes;
// the values are the float32 op's on the operands rounded to bfloat16 (the weights too), within bfloat16's
// precision (oneDNN's bfloat16 RNNs round h at each step, accumulate the products in float32).
TEST(RnnOps, Bfloat16SequencesAreTheFloat32OnesOfTheRoundedOperands) {
  random::set_seed(11);
  const int64_t n = 5, t = 9, f = 3, u = 4;
  auto rounded = [](const Tensor& v) { return ops::cast(ops::cast(v, DType::bfloat16), DType::float32); };
  for (const int cell : {0, 1, 2, 3}) {
    SCOPED_TRACE(cell);
    const int64_t g = cell == 0 ? 4 : cell == 3 ? 1 : 3;
    const Tensor x = random::uniform({n, t, f}, -1, 1), h0 = random::uniform({n, u}, -1, 1),
                 c0 = random::uniform({n, u}, -1, 1), w = random::uniform({f, g * u}, -0.6, 0.6),
                 r = random::uniform({u, g * u}, -0.6, 0.6),
                 b = random::uniform(cell == 1 ? Shape({2, 3 * u}) : Shape({g * u}), -0.5, 0.5);
    auto run = [&](const Tensor& xv, const Tensor& hv, const Tensor& wv, const Tensor& rv) {
      switch (cell) {
        case 0: return ops::lstm_sequence(xv, hv, c0, wv, rv, b);
        case 1: return ops::gru_sequence(xv, hv, wv, rv, b);
        case 2: return ops::gru_sequence(xv, hv, wv, rv, b, false);
        default: return ops::simple_rnn_sequence(xv, hv, wv, rv, b, ops::Activation::tanh);
      }
    };
    std::vector<Tensor> outs[2], grads[2];
    for (int pass = 0; pass < 2; ++pass) {
      Tensor xv = pass == 0 ? ops::cast(x, DType::bfloat16) : rounded(x);
      Tensor hv = pass == 0 ? ops::cast(h0, DType::bfloat16) : rounded(h0);
      Tensor wv = pass == 0 ? w : rounded(w), rv = pass == 0 ? r : rounded(r);
      GradientTape tape;
      for (const Tensor* p : {&xv, &hv, &wv, &rv}) tape.watch(*p);
      outs[pass] = run(xv, hv, wv, rv);
      Tensor loss = Tensor::zeros({});
      for (const Tensor& o : outs[pass]) {
        loss = ops::add(loss, ops::reduce_sum(ops::mul(ops::cast(o, DType::float32), ops::cos(ops::cast(o, DType::float32)))));
      }
      grads[pass] = tape.gradient(loss, {xv, hv, wv, rv});
    }
    EXPECT_EQ(outs[0][0].dtype(), DType::bfloat16);
    EXPECT_EQ(outs[0][1].dtype(), DType::bfloat16);
    if (cell == 0) {
      EXPECT_EQ(outs[0][2].dtype(), DType::float32);  // the carry stays float32
    }
    EXPECT_EQ(grads[0][0].dtype(), DType::bfloat16);
    EXPECT_EQ(grads[0][2].dtype(), DType::float32);
    for (std::size_t i = 0; i < outs[0].size(); ++i) {
      expect_close(host(ops::cast(outs[0][i], DType::float32)), host(outs[1][i]), 1.5e-2);
    }
    for (std::size_t i = 0; i < grads[0].size(); ++i) {
      SCOPED_TRACE(i);
      expect_close(host(ops::cast(grads[0][i], DType::float32)), host(grads[1][i]), 5e-2);
    }
  }
  // x and h0 in different dtypes, float16, or bfloat16 weights: typed errors naming the dtypes.
  const Tensor xb = ops::cast(Tensor::zeros({2, 5, 4}), DType::bfloat16), h = Tensor::zeros({2, 3});
  const Tensor w = Tensor::zeros({4, 12}), r = Tensor::zeros({3, 12}), b = Tensor::zeros({12});
  EXPECT_THROW((void)ops::lstm_sequence(xb, h, h, w, r, b), InvalidArgumentError);
  EXPECT_THROW((void)ops::lstm_sequence(ops::cast(xb, DType::float16), ops::cast(h, DType::float16), h, w, r, b),
               InvalidArgumentError);
  EXPECT_THROW((void)ops::lstm_sequence(xb, ops::cast(h, DType::bfloat16), h, ops::cast(w, DType::bfloat16), r, b),
               InvalidArgumentError);
  EXPECT_NO_THROW((void)ops::lstm_sequence(xb, ops::cast(h, DType::bfloat16), h, w, r, b));
}
