// The recurrent layers' fused op: ops::lstm_cell against its definition as separate ops (values and gradients of
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

}  // namespace

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
