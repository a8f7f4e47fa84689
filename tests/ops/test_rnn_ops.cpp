// The recurrent layers' fused ops: ops::lstm_cell and ops::gru_cell against their definitions as separate ops (values and gradients of
// both outputs for both inputs) and against central finite differences; bad shapes are typed errors.
#include <gtest/gtest.h>

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
