// Attention's and the Transformer's ops: the batched matmul against per-entry 2-D products, the masked softmax
// against its definition (Keras's Softmax layer and TensorFlow's dot_product_attention treatments), layer_norm
// against its definition; gradients against central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/op_checks.h"
#include "osprey/errors.h"
#include "runtime/device_manager.h"

using namespace osprey;
using osprey::testing::check_gradients;
using osprey::testing::expect_close;
using osprey::testing::host;

namespace {

class AttentionOps : public ::testing::Test {
 protected:
  void SetUp() override { random::set_seed(7); }
};

// y[r, c] = softmax over the kept c of row r (left-out logits replaced by `masked`), 0 at left-out c when `zero`.
std::vector<double> softmax_ref(const std::vector<double>& x, const std::vector<bool>& keep, int64_t cols,
                                double masked, bool zero) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / cols; ++r) {
    double mx = -std::numeric_limits<double>::infinity(), s = 0;
    std::vector<double> z(cols);
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, z[c] = keep[r * cols + c] ? x[r * cols + c] : masked);
    for (int64_t c = 0; c < cols; ++c) s += std::exp(z[c] - mx);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = zero && !keep[r * cols + c] ? 0.0 : std::exp(z[c] - mx) / s;
    }
  }
  return y;
}

}  // namespace

TEST_F(AttentionOps, BatchedMatMulIsOneProductPerBatchEntry) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = random::uniform(ta ? Shape{3, 4, 5} : Shape{3, 5, 4}, -1, 1);
      Tensor b = random::uniform(tb ? Shape{3, 2, 4} : Shape{3, 4, 2}, -1, 1);
      const Tensor c = ops::matmul(a, b, ta, tb);
      ASSERT_EQ(c.shape(), Shape({3, 5, 2}));
      for (int64_t i = 0; i < 3; ++i) {
        auto ai = ops::reshape(ops::slice_axis(a, 0, i, 1), Shape({a.shape()[1], a.shape()[2]}));
        auto bi = ops::reshape(ops::slice_axis(b, 0, i, 1), Shape({b.shape()[1], b.shape()[2]}));
        auto ci = ops::reshape(ops::slice_axis(c, 0, i, 1), Shape({5, 2}));
        const auto batched = host(ci), single = host(ops::matmul(ai, bi, ta, tb));
        if (c.device_ref().host_memory()) {
          EXPECT_EQ(batched, single) << "batch entry " << i;  // the same kernel: the same bits
        } else {  // a GPU's batched product may tile (and so round) otherwise
          ASSERT_EQ(batched.size(), single.size());
          for (std::size_t k = 0; k < batched.size(); ++k) EXPECT_NEAR(batched[k], single[k], 1e-5) << "entry " << i;
        }
      }
      check_gradients([&](auto& in) { return ops::matmul(in[0], in[1], ta, tb); }, {a, b});
    }
  }
  EXPECT_THROW((void)ops::matmul(Tensor::ones({2, 3, 4}), Tensor::ones({3, 4, 5})), InvalidArgumentError);
  EXPECT_THROW((void)ops::matmul(Tensor::ones({2, 3, 4}), Tensor::ones({4, 5})), InvalidArgumentError);
  EXPECT_THROW((void)ops::matmul(Tensor::ones({2, 3, 4}), Tensor::ones({2, 3, 5})), InvalidArgumentError);
}

TEST_F(AttentionOps, MaskedSoftmaxMatchesItsDefinition) {
  const int64_t B = 2, H = 3, T = 4, S = 5;
  Tensor x = random::uniform({B, H, T, S}, -3, 3);
  // A (B, 1, T, S) mask broadcast over the heads; batch 1's query 3 attends to nothing.
  std::vector<float> m(B * T * S);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = (i * 3) % 4 != 1 ? 1.f : 0.f;
  for (int64_t s = 0; s < S; ++s) m[(1 * T + 3) * S + s] = 0.f;
  const Tensor mask = Tensor::from_vector<float>(m, {B, 1, T, S});
  const auto xv = host(x);
  for (bool causal : {false, true}) {
    for (bool with_mask : {false, true}) {
      std::vector<bool> keep(xv.size());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t t = 0; t < T; ++t)
            for (int64_t s = 0; s < S; ++s) {
              keep[((b * H + h) * T + t) * S + s] = (!with_mask || m[(b * T + t) * S + s] > 0.5f) && (!causal || s <= t);
            }
      for (bool zero : {true, false}) {
        const float masked = zero ? -1e9f : -0.7f * 3.38953e38f;
        const ops::MaskedSoftmaxOptions o{.causal = causal, .masked_value = masked, .zero_masked = zero};
        const Tensor y = ops::masked_softmax(x, with_mask ? mask : Tensor(), o);
        expect_close(host(y), softmax_ref(xv, keep, S, masked, zero), 1e-6);
        check_gradients([&](auto& in) { return ops::masked_softmax(in[0], with_mask ? mask : Tensor(), o); }, {x});
      }
    }
  }
  // A row with nothing kept: zeros in the Softmax layer's treatment, uniform in dot_product_attention's.
  const auto zeros = host(ops::masked_softmax(x, mask));
  const auto uniform = host(ops::masked_softmax(x, mask, {.masked_value = -0.7f * 3.38953e38f, .zero_masked = false}));
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t s = 0; s < S; ++s) {
      EXPECT_EQ(zeros[((1 * H + h) * T + 3) * S + s], 0.0);
      EXPECT_NEAR(uniform[((1 * H + h) * T + 3) * S + s], 1.0 / S, 1e-7);
    }
  }
  // The mask broadcast along the last axis too: (B, 1, T, 1) keeps or drops whole rows.
  const Tensor rows = Tensor::from_vector<float>({1, 0, 1, 1, 0, 1, 1, 1}, {B, 1, T, 1});
  const auto yr = host(ops::masked_softmax(x, rows));
  for (int64_t s = 0; s < S; ++s) EXPECT_EQ(yr[(0 * T + 1) * S + s], 0.0);
  EXPECT_THROW((void)ops::masked_softmax(x, Tensor::ones({B, T, S})), InvalidArgumentError);      // rank
  EXPECT_THROW((void)ops::masked_softmax(x, Tensor::ones({B, 2, T, S})), InvalidArgumentError);   // 2 heads vs 3
  EXPECT_THROW((void)ops::masked_softmax(x, ops::cast(mask, DType::int32)), InvalidArgumentError);  // dtype
}

TEST_F(AttentionOps, LayerNormMatchesItsDefinition) {
  const int64_t rows = 5, d = 7;
  Tensor x = random::uniform({rows, d}, -2, 2), gamma = random::uniform({d}, 0.5, 1.5), beta = random::uniform({d}, -1, 1);
  const auto xv = host(x), gv = host(gamma), bv = host(beta);
  std::vector<double> want(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < d; ++c) m += xv[r * d + c] / d;
    for (int64_t c = 0; c < d; ++c) v += (xv[r * d + c] - m) * (xv[r * d + c] - m) / d;
    for (int64_t c = 0; c < d; ++c) want[r * d + c] = (xv[r * d + c] - m) / std::sqrt(v + 1e-3) * gv[c] + bv[c];
  }
  expect_close(host(ops::layer_norm(x, gamma, beta, 1e-3)), want, 1e-5);
  check_gradients([](auto& in) { return ops::layer_norm(in[0], in[1], in[2], 1e-3); }, {x, gamma, beta});
  check_gradients([](auto& in) { return ops::layer_norm(in[0], Tensor(), Tensor(), 1e-2); }, {x});
  EXPECT_THROW((void)ops::layer_norm(Tensor::ones({2, 3, 4}), Tensor(), Tensor(), 1e-3), InvalidArgumentError);
  EXPECT_THROW((void)ops::layer_norm(x, Tensor::ones({d + 1}), Tensor(), 1e-3), InvalidArgumentError);
  EXPECT_THROW((void)ops::layer_norm(x, Tensor(), Tensor(), 0.0), InvalidArgumentError);
}
