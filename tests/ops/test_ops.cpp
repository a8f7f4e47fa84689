// Every op: forward against a float64 reference computed here, backward against central finite differences.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "backends/cpu/small_gemm.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/ops.h"
#include "osprey/random.h"
#include "ops/op_checks.h"

using namespace osprey;
using ops::Activation;
using osprey::testing::check_gradients;
using osprey::testing::expect_close;
using osprey::testing::host;

namespace {

double act_ref(Activation a, double z) {
  switch (a) {
    case Activation::linear: return z;
    case Activation::relu: return z > 0 ? z : 0;
    case Activation::sigmoid: return 1 / (1 + std::exp(-z));
    case Activation::tanh: return std::tanh(z);
    case Activation::gelu: return 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
    case Activation::elu: return z >= 0 ? z : std::expm1(z);
    case Activation::selu: return 1.0507009873554804934 * (z >= 0 ? z : 1.6732632423543772848 * std::expm1(z));
    case Activation::softplus: return std::log1p(std::exp(z));
    case Activation::softsign: return z / (1 + std::abs(z));
    case Activation::silu: return z / (1 + std::exp(-z));
    case Activation::leaky_relu: return z > 0 ? z : 0.2 * z;
    case Activation::exponential: return std::exp(z);
    case Activation::softmax: return 0;  // row-wise, handled separately
  }
  return 0;
}

}  // namespace

// Fixed seed: every run checks the same points, away from the kinks of relu/abs/maximum.
class Ops : public ::testing::Test {
 protected:
  void SetUp() override { random::set_seed(42); }
};

TEST_F(Ops, MatMulForwardAllTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = random::uniform(ta ? Shape{4, 3} : Shape{3, 4}, -1, 1);
      Tensor b = random::uniform(tb ? Shape{5, 4} : Shape{4, 5}, -1, 1);
      auto av = host(a), bv = host(b);
      std::vector<double> want(15, 0.0);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j)
          for (int k = 0; k < 4; ++k)
            want[i * 5 + j] += av[ta ? k * 3 + i : i * 4 + k] * bv[tb ? j * 4 + k : k * 5 + j];
      expect_close(host(ops::matmul(a, b, ta, tb)), want, 1e-5);
      check_gradients([&](auto& in) { return ops::matmul(in[0], in[1], ta, tb); }, {a, b});
    }
  }
  EXPECT_THROW(ops::matmul(Tensor::ones({2, 3}), Tensor::ones({4, 5})), InvalidArgumentError);
}

// Shapes around the CPU kernels' tiles (6 rows x 16 columns, single columns, 8 x 8 transposes) and past the
// small-product limit (oneDNN), every transpose, against a float64 reference; Dense adds its bias in the same tile.
TEST_F(Ops, MatMulShapesAroundTheKernelTiles) {
  struct Dims {
    int64_t m, n, k;
  };
  const std::vector<Dims> dims{{1, 1, 1},  {5, 7, 3},   {6, 16, 8},  {7, 17, 9},  {13, 1, 20}, {64, 1, 32},
                               {32, 1, 64}, {64, 32, 1}, {12, 8, 16}, {19, 33, 24}, {64, 64, 20}, {80, 70, 60}};
  for (const auto& d : dims) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << d.m << "x" << d.n << "x" << d.k << " ta=" << ta << " tb=" << tb);
        Tensor a = random::uniform(ta ? Shape{d.k, d.m} : Shape{d.m, d.k}, -1, 1);
        Tensor b = random::uniform(tb ? Shape{d.n, d.k} : Shape{d.k, d.n}, -1, 1);
        auto av = host(a), bv = host(b);
        std::vector<double> want(d.m * d.n, 0.0);
        for (int64_t i = 0; i < d.m; ++i)
          for (int64_t j = 0; j < d.n; ++j)
            for (int64_t p = 0; p < d.k; ++p)
              want[i * d.n + j] += av[ta ? p * d.m + i : i * d.k + p] * bv[tb ? j * d.k + p : p * d.n + j];
        expect_close(host(ops::matmul(a, b, ta, tb)), want, 1e-5);
        if (ta || tb) continue;
        Tensor bias = random::uniform({d.n}, -1, 1);
        auto biasv = host(bias);
        for (int64_t i = 0; i < d.m; ++i)
          for (int64_t j = 0; j < d.n; ++j) want[i * d.n + j] = std::max(0.0, want[i * d.n + j] + biasv[j]);
        expect_close(host(ops::dense(a, b, bias, Activation::relu)), want, 1e-5);
        // Osprey's own kernel computes each row on its own: a slice of the rows gives the same bits as those rows
        // of the whole product (oneDNN, for larger products, does not promise that).
        if (d.m > 1 && cpu::small_gemm_applies(d.m, d.n, d.k)) {
          auto whole = ops::dense(a, b, bias, Activation::relu).to_vector<float>();
          auto part = ops::dense(a.slice_rows(1, d.m), b, bias, Activation::relu).to_vector<float>();
          EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + d.n));
        }
      }
    }
  }
}

TEST_F(Ops, DenseEveryActivationForwardAndBackward) {
  for (Activation act : {Activation::linear, Activation::relu, Activation::sigmoid, Activation::tanh,
                         Activation::softmax, Activation::gelu, Activation::elu, Activation::selu,
                         Activation::softplus, Activation::softsign, Activation::silu, Activation::leaky_relu,
                         Activation::exponential}) {
    SCOPED_TRACE(ops::activation_name(act));
    Tensor x = random::uniform({4, 3}, -1, 1), w = random::uniform({3, 5}, -1, 1), b = random::uniform({5}, -1, 1);
    auto xv = host(x), wv = host(w), bv = host(b);
    std::vector<double> want(20);
    for (int i = 0; i < 4; ++i) {
      double mx = -1e300;
      for (int j = 0; j < 5; ++j) {
        double z = bv[j];
        for (int k = 0; k < 3; ++k) z += xv[i * 3 + k] * wv[k * 5 + j];
        want[i * 5 + j] = act == Activation::softmax ? z : act_ref(act, z);
        mx = std::max(mx, z);
      }
      if (act == Activation::softmax) {
        double s = 0;
        for (int j = 0; j < 5; ++j) s += (want[i * 5 + j] = std::exp(want[i * 5 + j] - mx));
        for (int j = 0; j < 5; ++j) want[i * 5 + j] /= s;
      }
    }
    expect_close(host(ops::dense(x, w, b, act)), want, 1e-5);
    check_gradients([&](auto& in) { return ops::dense(in[0], in[1], in[2], act); }, {x, w, b});
    // The same activation as a separate op.
    check_gradients([&](auto& in) { return ops::activation(in[0], act); }, {x});
  }
}

TEST_F(Ops, DenseWithoutBias) {
  Tensor x = random::uniform({2, 3}), w = random::uniform({3, 2});
  expect_close(host(ops::dense(x, w, Tensor(), Activation::linear)), host(ops::matmul(x, w)), 1e-6);
}

TEST_F(Ops, ElementwiseWithBroadcasting) {
  Tensor a = random::uniform({3, 4}, 0.5, 2), b = random::uniform({3, 4}, 0.5, 2);
  Tensor row = random::uniform({4}, 0.5, 2), s = Tensor::scalar(1.5);
  auto av = host(a), bv = host(b), rv = host(row);
  std::vector<double> want(12);
  for (int i = 0; i < 12; ++i) want[i] = av[i] / bv[i];
  expect_close(host(ops::div(a, b)), want, 1e-6);
  for (int i = 0; i < 12; ++i) want[i] = av[i] + rv[i % 4];
  expect_close(host(ops::add(a, row)), want, 1e-6);
  for (int i = 0; i < 12; ++i) want[i] = 1.5 - av[i];
  expect_close(host(ops::sub(s, a)), want, 1e-6);
  Tensor apart = ops::add(a, Tensor::from_vector(std::vector<float>{0.3f, -0.3f, 0.4f, -0.4f}, {4}));
  check_gradients([&](auto& in) { return ops::maximum(in[0], in[1]); }, {a, apart});
  for (auto f : {ops::add, ops::sub, ops::mul, ops::div}) {
    check_gradients([&](auto& in) { return f(in[0], in[1]); }, {a, b});
    check_gradients([&](auto& in) { return f(in[0], in[1]); }, {a, row});
    check_gradients([&](auto& in) { return f(in[0], in[1]); }, {a, s});
  }
  EXPECT_THROW(ops::add(Tensor::ones({2, 3}), Tensor::ones({3, 2})), InvalidArgumentError);
}

TEST_F(Ops, ConcatAndSliceAlongEveryAxisForwardAndBackward) {
  Tensor a = random::uniform({2, 3, 4}, -1, 1), b = random::uniform({2, 2, 4}, -1, 1);
  const auto av = host(a), bv = host(b);
  Tensor c = ops::concat({a, b}, 1);
  ASSERT_EQ(c.shape(), Shape({2, 5, 4}));
  const auto cv = host(c);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 5; ++j) {
      for (int k = 0; k < 4; ++k) {
        const double want = j < 3 ? av[(i * 3 + j) * 4 + k] : bv[(i * 2 + (j - 3)) * 4 + k];
        EXPECT_EQ(cv[(i * 5 + j) * 4 + k], want) << i << "," << j << "," << k;
      }
    }
  }
  // Slicing back gives the pieces exactly; the last and the first axis too, negative axes from the end.
  EXPECT_EQ(host(ops::slice_axis(c, -2, 3, 2)), bv);
  EXPECT_EQ(host(ops::slice_axis(ops::concat({a, a, a}, 0), 0, 2, 2)), av);
  EXPECT_EQ(host(ops::slice_axis(ops::concat({a, a}, -1), 2, 4, 4)), av);
  EXPECT_EQ(host(ops::concat({ops::cast(a, DType::int64), ops::cast(a, DType::int64)}, 2)).size(), 48u);
  check_gradients([](auto& in) { return ops::concat({in[0], in[1]}, 1); }, {a, b});
  check_gradients([](auto& in) { return ops::concat({in[0], in[1], in[0]}, -1); }, {a, random::uniform({2, 3, 1})});
  check_gradients([](auto& in) { return ops::slice_axis(in[0], 2, 1, 2); }, {a});
  EXPECT_THROW((void)ops::concat({a, b}, 2), InvalidArgumentError);  // (2,3,4) and (2,2,4) differ off axis 2
  EXPECT_THROW((void)ops::concat({a, a}, 3), InvalidArgumentError);
  EXPECT_THROW((void)ops::concat({}, 0), InvalidArgumentError);
  EXPECT_THROW((void)ops::concat({a, ops::cast(a, DType::float64)}, 0), InvalidArgumentError);
  EXPECT_THROW((void)ops::slice_axis(a, 1, 2, 2), InvalidArgumentError);
  EXPECT_THROW((void)ops::slice_axis(a, -4, 0, 1), InvalidArgumentError);
  // split: the slices in one op, one gradient for the pieces (an unused piece's part zero).
  const auto parts = ops::split(c, 1, {3, 0, 2});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(host(parts[0]), av);
  EXPECT_EQ(parts[1].shape(), Shape({2, 0, 4}));
  EXPECT_EQ(host(parts[2]), bv);
  check_gradients([](auto& in) { return ops::split(in[0], 2, {1, 3})[1]; }, {a});
  check_gradients([](auto& in) {
    const auto p = ops::split(in[0], 1, {1, 1, 1});
    return ops::add(ops::mul(p[0], p[2]), p[0]);
  }, {a});
  EXPECT_THROW((void)ops::split(a, 1, {1, 1}), InvalidArgumentError);
  EXPECT_THROW((void)ops::split(a, 1, {4, -1}), InvalidArgumentError);
}

TEST_F(Ops, TransposeEveryPermutationForwardAndBackward) {
  Tensor x = random::uniform({2, 3, 4}, -1, 1);
  const auto xv = host(x);
  const std::vector<std::vector<int>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& perm : perms) {
    Tensor y = ops::transpose(x, perm);
    const int64_t d[3] = {2, 3, 4};
    ASSERT_EQ(y.shape(), Shape({d[perm[0]], d[perm[1]], d[perm[2]]}));
    const auto yv = host(y);
    int64_t k = 0;
    int64_t idx[3];
    for (idx[0] = 0; idx[0] < d[perm[0]]; ++idx[0]) {
      for (idx[1] = 0; idx[1] < d[perm[1]]; ++idx[1]) {
        for (idx[2] = 0; idx[2] < d[perm[2]]; ++idx[2]) {
          int64_t src[3];
          for (int i = 0; i < 3; ++i) src[perm[i]] = idx[i];
          ASSERT_EQ(yv[k++], xv[(src[0] * 3 + src[1]) * 4 + src[2]]);
        }
      }
    }
    check_gradients([&](auto& in) { return ops::transpose(in[0], perm); }, {x});
  }
  EXPECT_EQ(host(ops::transpose(ops::cast(x, DType::int64), {2, 1, 0})).size(), 24u);
  EXPECT_THROW((void)ops::transpose(x, {0, 1}), InvalidArgumentError);
  EXPECT_THROW((void)ops::transpose(x, {0, 0, 1}), InvalidArgumentError);
}

TEST_F(Ops, MinimumForwardAndBackward) {
  Tensor a = random::uniform({3, 4}, 0.5, 2);
  Tensor b = ops::add(a, Tensor::from_vector(std::vector<float>{0.3f, -0.3f, 0.4f, -0.4f}, {4}));
  const auto av = host(a), bv = host(b);
  std::vector<double> want(12);
  for (int i = 0; i < 12; ++i) want[i] = std::min(av[i], bv[i]);
  expect_close(host(ops::minimum(a, b)), want, 0);
  check_gradients([](auto& in) { return ops::minimum(in[0], in[1]); }, {a, b});
}

TEST_F(Ops, UnaryOps) {
  Tensor x = random::uniform({2, 5}, 0.5, 2);
  auto xv = host(x);
  const std::vector<std::pair<std::function<Tensor(const Tensor&)>, std::function<double(double)>>> cases = {
      {ops::neg, [](double v) { return -v; }},           {ops::exp, [](double v) { return std::exp(v); }},
      {ops::log, [](double v) { return std::log(v); }},  {ops::sqrt, [](double v) { return std::sqrt(v); }},
      {ops::square, [](double v) { return v * v; }},     {ops::abs, [](double v) { return std::abs(v); }}};
  for (const auto& [op, ref] : cases) {
    std::vector<double> want;
    for (double v : xv) want.push_back(ref(v));
    expect_close(host(op(x)), want, 1e-6);
    check_gradients([&](auto& in) { return op(in[0]); }, {x});
  }
}

TEST_F(Ops, Reductions) {
  Tensor x = random::uniform({3, 4}, -1, 1);
  auto xv = host(x);
  double total = 0;
  std::vector<double> cols(4, 0), rows(3, 0);
  for (int i = 0; i < 12; ++i) {
    total += xv[i];
    cols[i % 4] += xv[i];
    rows[i / 4] += xv[i];
  }
  EXPECT_NEAR(ops::reduce_sum(x).item(), total, 1e-5);
  EXPECT_NEAR(ops::reduce_mean(x).item(), total / 12, 1e-6);
  expect_close(host(ops::reduce_sum(x, 0)), cols, 1e-6);
  expect_close(host(ops::reduce_sum(x, -1)), rows, 1e-6);
  check_gradients([](auto& in) { return ops::reduce_mean(in[0]); }, {x});
  check_gradients([](auto& in) { return ops::reduce_sum(in[0], 0); }, {x});
  check_gradients([](auto& in) { return ops::reduce_mean(in[0], 1); }, {x});
}

// float64 stays float64 through the sums and their gradients, so a tape can go on into float64 ops after them.
TEST_F(Ops, Float64ReductionsKeepTheirDtype) {
  const std::vector<double> v{1e-9, 1.0, -2.5, 3.0, 1e8, 0.25};
  Tensor x = Tensor::from_vector(v, {2, 3});
  EXPECT_EQ(ops::reduce_sum(x).dtype(), DType::float64);
  EXPECT_EQ(ops::reduce_sum(x).item(), ((1e-9 + 1.0) + -2.5 + 3.0 + 1e8) + 0.25);  // float32 would drop 1e-9 and 0.25
  EXPECT_DOUBLE_EQ(ops::reduce_mean(x).item(), ops::reduce_sum(x).item() / 6);
  EXPECT_EQ(host(ops::reduce_sum(x, 0)), (std::vector<double>{1e-9 + 3.0, 1.0 + 1e8, -2.5 + 0.25}));
  EXPECT_EQ(ops::reduce_mean(x, 1).dtype(), DType::float64);
  Variable w(Tensor::from_vector(std::vector<double>{2, 2, 2, 2, 2, 2}, {2, 3}), "w");
  GradientTape tape;
  Tensor y = ops::mul(ops::reduce_mean(ops::mul(w.value(), x), 1), Tensor::scalar(3.0, DType::float64));
  Tensor loss = ops::reduce_sum(y);
  auto g = tape.gradient(loss, {&w});
  ASSERT_EQ(g[0].dtype(), DType::float64);
  std::vector<double> want;
  for (double e : v) want.push_back(e);  // d/dw of 3·mean_j(w·x) summed: x / 3 · 3
  EXPECT_EQ(host(g[0]), want);
}

TEST_F(Ops, CastAndGather) {
  Tensor x = Tensor::from_vector(std::vector<float>{1.7f, -2.2f, 3.0f}, {3});
  EXPECT_EQ(x.cast(int32).to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3}));
  Tensor m = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{2, 0}, {2});
  EXPECT_EQ(ops::gather_rows(m, idx).to_vector<float>(), (std::vector<float>{4, 5, 0, 1}));
  EXPECT_THROW(ops::gather_rows(m, Tensor::from_vector(std::vector<int64_t>{3}, {1})), InvalidArgumentError);
}

// Every row width the copy treats differently: one float, under 16 bytes, exactly 16, 16-byte pieces with an
// overlapping last one (20 and 80 bytes), whole pieces (64 bytes), 8-byte rows (int64).
TEST_F(Ops, GatherRowsOfEveryWidth) {
  const std::vector<int64_t> order{4, 0, 6, 6, 1, 3};
  for (int64_t cols : {1, 2, 3, 4, 5, 16, 20}) {
    const int64_t rows = 7;
    std::vector<float> v(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) + 0.5f;
    Tensor m = Tensor::from_vector(v, {rows, cols});
    std::vector<float> expected;
    for (int64_t r : order) expected.insert(expected.end(), v.begin() + r * cols, v.begin() + (r + 1) * cols);
    EXPECT_EQ(ops::gather_rows(m, Tensor::from_vector(order, {6})).to_vector<float>(), expected) << cols << " columns";
  }
  Tensor labels = Tensor::from_vector(std::vector<int64_t>{10, 11, 12, 13, 14, 15, 16}, {7});
  EXPECT_EQ(ops::gather_rows(labels, Tensor::from_vector(order, {6})).to_vector<int64_t>(),
            (std::vector<int64_t>{14, 10, 16, 16, 11, 13}));
}

TEST_F(Ops, LossesAgainstKerasFormulas) {
  const double eps = 1e-7;
  Tensor y = Tensor::from_vector(std::vector<float>{1, 0, 1, 0}, {4, 1});
  Tensor p = Tensor::from_vector(std::vector<float>{0.9f, 0.2f, 0.0f, 1.0f}, {4, 1});  // includes p exactly 0 and 1
  auto pv = host(p), yv = host(y);
  std::vector<double> want;
  for (int i = 0; i < 4; ++i) {
    // Clipped in float32, as Keras does: 1 - 1e-7 rounds to 0.99999988f.
    double c = std::min(std::max(pv[i], eps), static_cast<double>(1.0f - 1e-7f));
    want.push_back(-(yv[i] * std::log(c) + (1 - yv[i]) * std::log(1 - c)));
  }
  expect_close(host(ops::binary_crossentropy(y, p)), want, 1e-4);

  Tensor pr = random::uniform({3, 4}, 0.1, 1.0), yr = random::uniform({3, 4}, 0.0, 1.0);
  Tensor labels = Tensor::from_vector(std::vector<int64_t>{0, 3, 2}, {3});
  auto prv = host(pr), yrv = host(yr);
  std::vector<double> cce, scce, mse, mae;
  const int64_t lab[3] = {0, 3, 2};
  for (int i = 0; i < 3; ++i) {
    double s = 0, c = 0, se = 0, ae = 0;
    for (int j = 0; j < 4; ++j) s += prv[i * 4 + j];
    for (int j = 0; j < 4; ++j) {
      c -= yrv[i * 4 + j] * std::log(prv[i * 4 + j] / s);
      se += std::pow(prv[i * 4 + j] - yrv[i * 4 + j], 2);
      ae += std::abs(prv[i * 4 + j] - yrv[i * 4 + j]);
    }
    cce.push_back(c);
    scce.push_back(-std::log(prv[i * 4 + lab[i]] / s));
    mse.push_back(se / 4);
    mae.push_back(ae / 4);
  }
  expect_close(host(ops::categorical_crossentropy(yr, pr)), cce, 1e-5);
  expect_close(host(ops::sparse_categorical_crossentropy(labels, pr)), scce, 1e-5);
  expect_close(host(ops::mean_squared_error(yr, pr)), mse, 1e-6);
  expect_close(host(ops::mean_absolute_error(yr, pr)), mae, 1e-6);

  Tensor pin = random::uniform({3, 4}, 0.2, 0.8);
  Tensor ybin = random::randint(0, 2, {3, 4}).cast(float32);
  check_gradients([&](auto& in) { return ops::binary_crossentropy(ybin, in[0]); }, {pin}, 2e-2, 1e-3);
  check_gradients([&](auto& in) { return ops::categorical_crossentropy(yr, in[0]); }, {pin}, 2e-2, 1e-3);
  check_gradients([&](auto& in) { return ops::sparse_categorical_crossentropy(labels, in[0]); }, {pin}, 2e-2, 1e-3);
  check_gradients([&](auto& in) { return ops::mean_squared_error(yr, in[0]); }, {pin});
  check_gradients([&](auto& in) { return ops::mean_absolute_error(yr, in[0]); }, {pin}, 2e-2, 1e-4);
}

// The fused batch mean of a loss is reduce_mean of the per-sample loss bit for bit, and so is its gradient (the
// mean's backward then LossGrad), for every kernel-backed loss, with label smoothing, at a scaled upstream.
TEST_F(Ops, BatchMeanLossIsTheMeanOfThePerSampleLossBitForBit) {
  Tensor p = random::uniform({7, 3}, 0.0, 1.0), soft = random::uniform({7, 3}, 0.0, 1.0);
  Tensor binary = random::randint(0, 2, {7, 3}).cast(float32);
  Tensor labels = Tensor::from_vector(std::vector<int64_t>{0, 2, 1, 1, 0, 2, 2}, {7});
  struct Case {
    ops::LossFunction f;
    Tensor y;
    double smoothing;
    std::function<Tensor(const Tensor&, const Tensor&)> per_sample;
  };
  const std::vector<Case> cases = {
      {ops::LossFunction::binary_crossentropy, binary, 0.0, [](auto& y, auto& q) { return ops::binary_crossentropy(y, q); }},
      {ops::LossFunction::binary_crossentropy, soft, 0.1,
       [](auto& y, auto& q) { return ops::binary_crossentropy(y, q, 0.1); }},
      {ops::LossFunction::categorical_crossentropy, soft, 0.2,
       [](auto& y, auto& q) { return ops::categorical_crossentropy(y, q, 0.2); }},
      {ops::LossFunction::sparse_categorical_crossentropy, labels, 0.0,
       [](auto& y, auto& q) { return ops::sparse_categorical_crossentropy(y, q); }},
      {ops::LossFunction::mean_squared_error, soft, 0.0, [](auto& y, auto& q) { return ops::mean_squared_error(y, q); }},
      {ops::LossFunction::mean_absolute_error, soft, 0.0, [](auto& y, auto& q) { return ops::mean_absolute_error(y, q); }},
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    Tensor fused_value, composite_value;
    std::vector<Tensor> fused_grad, composite_grad;
    {
      GradientTape tape;
      tape.watch(p);
      fused_value = ops::batch_mean_loss(cases[c].f, cases[c].y, p, cases[c].smoothing);
      fused_grad = tape.gradient(ops::mul(fused_value, Tensor::scalar(3.0)), {p});
    }
    {
      GradientTape tape;
      tape.watch(p);
      composite_value = ops::reduce_mean(cases[c].per_sample(cases[c].y, p));
      composite_grad = tape.gradient(ops::mul(composite_value, Tensor::scalar(3.0)), {p});
    }
    EXPECT_EQ(fused_value.shape(), Shape{}) << "case " << c;
    EXPECT_EQ(fused_value.to_vector<float>(), composite_value.to_vector<float>()) << "case " << c;
    EXPECT_EQ(fused_grad[0].to_vector<float>(), composite_grad[0].to_vector<float>()) << "case " << c;
  }
  EXPECT_THROW(ops::batch_mean_loss(ops::LossFunction::binary_crossentropy, binary, random::uniform({6, 3})),
               InvalidArgumentError);
}

TEST_F(Ops, SparseLabelOutOfRange) {
  Tensor p = Tensor::full({2, 3}, 1.0 / 3);
  try {
    ops::sparse_categorical_crossentropy(Tensor::from_vector(std::vector<int64_t>{0, 3}, {2}), p);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("Received a label value of 3 which is outside the valid range of [0, 3)"),
              std::string::npos);
  }
}

// One launch over several variables (sizes below, around and above the thread splits) gives the bits of one
// apply_adam per variable, with and without amsgrad, and with two half gradients the bits of their mean.
TEST_F(Ops, ApplyAdamManyEqualsApplyAdamPerVariable) {
  auto CPU = []() -> runtime::Device& { return Tensor::ones({1}).device_ref(); };
  for (int mode = 0; mode < 4; ++mode) {
    const bool amsgrad = mode & 1, halves = mode & 2;  // halves: grad2 given, the gradient is their mean
    SCOPED_TRACE(::testing::Message() << "amsgrad=" << amsgrad << " halves=" << halves);
    const std::vector<Shape> shapes{{20, 64}, {64}, {64, 32}, {1}, {3000}, {200, 300}};
    std::vector<ops::AdamUpdate> many;
    std::vector<std::array<Tensor, 5>> one;
    for (const auto& s : shapes) {
      auto make = [&](double lo, double hi) { return random::uniform(s, lo, hi); };
      Tensor var = make(-1, 1), m = make(-0.1, 0.1), v = make(0, 0.1), g = make(-1, 1), vh = make(0, 0.2);
      Tensor g2 = make(-1, 1);
      many.push_back({var.to(CPU()), m.to(CPU()), v.to(CPU()), g, amsgrad ? vh.to(CPU()) : Tensor(),
                      halves ? g2 : Tensor()});
      Tensor mean = halves ? ops::mul(ops::add(g, g2), Tensor::scalar(0.5)) : g;
      one.push_back({var.to(CPU()), m.to(CPU()), v.to(CPU()), mean, vh.to(CPU())});
    }
    ASSERT_TRUE(ops::apply_adam_many(many, 0.01, 0.9, 0.999, 1e-7));
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      auto& o = one[i];
      ops::apply_adam(o[0], o[1], o[2], o[3], amsgrad ? &o[4] : nullptr, 0.01, 0.9, 0.999, 1e-7);
      EXPECT_EQ(many[i].var.to_vector<float>(), o[0].to_vector<float>()) << "variable " << i;
      EXPECT_EQ(many[i].m.to_vector<float>(), o[1].to_vector<float>()) << "variable " << i;
      EXPECT_EQ(many[i].v.to_vector<float>(), o[2].to_vector<float>()) << "variable " << i;
      if (amsgrad) {
        EXPECT_EQ(many[i].vhat.to_vector<float>(), o[4].to_vector<float>()) << "variable " << i;
      }
    }
  }
  // Not float32: refused, nothing changed (the optimizer then updates variable by variable).
  Tensor d = Tensor::ones({4}).cast(DType::float64);
  std::vector<ops::AdamUpdate> mixed{{d, d.to(CPU()), d.to(CPU()), d.to(CPU()), Tensor(), Tensor()}};
  EXPECT_FALSE(ops::apply_adam_many(mixed, 0.01, 0.9, 0.999, 1e-7));
  EXPECT_EQ(d.to_vector<double>(), std::vector<double>(4, 1.0));
  std::vector<ops::AdamUpdate> bad{
      {Tensor::ones({4}), Tensor::ones({4}), Tensor::ones({4}), Tensor::ones({5}), Tensor(), Tensor()}};
  EXPECT_THROW(ops::apply_adam_many(bad, 0.01, 0.9, 0.999, 1e-7), InvalidArgumentError);
}

TEST_F(Ops, AccuracyCounts) {
  Tensor y = Tensor::from_vector(std::vector<float>{1, 0, 1, 0}, {4, 1});
  Tensor p = Tensor::from_vector(std::vector<float>{0.7f, 0.5f, 0.5f, 0.1f}, {4, 1});  // 0.5 predicts class 0
  EXPECT_EQ(ops::accuracy_count(y, p, ops::AccuracyKind::binary).item(), 3.0);
  Tensor probs = Tensor::from_vector(std::vector<float>{0.1f, 0.8f, 0.1f, 0.6f, 0.3f, 0.1f}, {2, 3});
  Tensor labels = Tensor::from_vector(std::vector<int64_t>{1, 2}, {2});
  EXPECT_EQ(ops::accuracy_count(labels, probs, ops::AccuracyKind::sparse_categorical).item(), 1.0);
  Tensor onehot = Tensor::from_vector(std::vector<float>{0, 1, 0, 1, 0, 0}, {2, 3});
  EXPECT_EQ(ops::accuracy_count(onehot, probs, ops::AccuracyKind::categorical).item(), 2.0);
}

TEST(Random, SameSeedSameNumbersAndRanges) {
  random::set_seed(7);
  auto a = random::uniform({1000}).to_vector<float>();
  auto r = random::randint(3, 6, {1000}).to_vector<int64_t>();
  random::set_seed(7);
  EXPECT_EQ(random::uniform({1000}).to_vector<float>(), a);
  EXPECT_EQ(random::randint(3, 6, {1000}).to_vector<int64_t>(), r);
  double mean = 0;
  for (float v : a) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
    mean += v / 1000.0;
  }
  EXPECT_NEAR(mean, 0.5, 0.05);
  for (auto v : r) EXPECT_TRUE(v >= 3 && v < 6);
  auto perm = random::permutation(50).to_vector<int64_t>();
  std::sort(perm.begin(), perm.end());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(perm[i], i);
  // Every order of 4 elements about equally often (24 orders, 24 000 draws: 1000 ± ~31 each).
  std::map<std::vector<int64_t>, int> orders;
  for (int i = 0; i < 24000; ++i) ++orders[random::permutation(4).to_vector<int64_t>()];
  EXPECT_EQ(orders.size(), 24u);
  for (const auto& [order, count] : orders) EXPECT_NEAR(count, 1000, 160);
}

// The vectorised block fill gives the words one next_u32() at a time gives: from any point of a block, for lengths
// around the eight-block batches; and Philox-4x32-10 itself matches Random123's known answer for key 0, counter 0.
TEST(Random, PhiloxFillEqualsOneWordAtATime) {
  random::Philox kat(0, 0);
  uint32_t block[4];
  kat.next4(block);
  EXPECT_EQ(block[0], 0x6627e8d5u);
  EXPECT_EQ(block[1], 0xe169c58du);
  EXPECT_EQ(block[2], 0xbc57ac4cu);
  EXPECT_EQ(block[3], 0x9b00dbd8u);
  for (uint64_t seed : {uint64_t{0}, uint64_t{0x9E3779B97F4A7C15}}) {
    for (std::size_t skip : {0u, 1u, 3u, 4u, 7u}) {
      for (std::size_t n : {0u, 1u, 31u, 32u, 33u, 100u, 1000u}) {
        random::Philox a(seed, 0xFFFFFFFF00000001ull), b(seed, 0xFFFFFFFF00000001ull);
        for (std::size_t i = 0; i < skip; ++i) {
          a.next_u32();
          b.next_u32();
        }
        std::vector<uint32_t> filled(n + 1);
        a.fill_u32(filled.data(), n);
        filled[n] = a.next_u32();  // the generator continues where the fill ended
        for (std::size_t i = 0; i <= n; ++i) {
          ASSERT_EQ(filled[i], b.next_u32()) << "seed " << seed << " skip " << skip << " n " << n << " word " << i;
        }
      }
    }
  }
}

TEST(Random, UniformFromStateIsPhiloxFromItsBlockAndAdvancesIt) {
  Tensor state = Tensor::from_vector<int64_t>({99, 5, 0}, {3});
  const auto a = random::uniform_from_state({10}, state).to_vector<float>();
  EXPECT_EQ(state.to_vector<int64_t>(), (std::vector<int64_t>{99, 5, 3}));  // 10 values: 3 blocks of 4
  const auto b = random::uniform_from_state({4}, state).to_vector<float>();
  random::Philox g(99, 5);
  for (float v : a) EXPECT_EQ(v, g.next_float());
  g.skip_to(3);
  for (float v : b) EXPECT_EQ(v, g.next_float());
  EXPECT_THROW((void)random::uniform_from_state({2}, Tensor::zeros({3})), InvalidArgumentError);
  Tensor dst = Tensor::zeros({2});
  ops::assign(dst, Tensor::from_vector<float>({1, 2}, {2}));
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_THROW(ops::assign(dst, Tensor::zeros({3})), InvalidArgumentError);
}

// Sizes nothing can hold are Osprey's errors with the sizes, never std::length_error, bad_alloc or a wrapped count.
TEST(Sizes, ShapesAndAllocationsTooLargeAreTypedErrors) {
  EXPECT_THROW(Shape({int64_t{1} << 62, 4}), InvalidArgumentError);  // 2^64 elements
  EXPECT_THROW((void)Shape({3}).with_dim(0, int64_t{1} << 62).with_dim(0, -1), InvalidArgumentError);
  EXPECT_THROW((void)Shape({int64_t{1} << 40, 1}).with_dim(1, int64_t{1} << 30), InvalidArgumentError);
  EXPECT_THROW((void)Tensor::zeros({int64_t{1} << 61, 2}), ResourceExhaustedError);  // 2^65 bytes
  EXPECT_THROW((void)Tensor::ones({int64_t{1} << 40}), ResourceExhaustedError);     // 4 TiB
  EXPECT_THROW((void)random::uniform({int64_t{1} << 40}), ResourceExhaustedError);
  EXPECT_EQ(Tensor::full({2, 2}, 3.0, DType::int64).to_vector<int64_t>(), (std::vector<int64_t>{3, 3, 3, 3}));
}

TEST(Sizes, RandintTakesTheWholeInt64RangeAndReshapeChecksItsTarget) {
  random::set_seed(1);
  const auto v = random::randint(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), {64})
                     .to_vector<int64_t>();
  bool negative = false, positive = false;
  for (int64_t x : v) (x < 0 ? negative : positive) = true;
  EXPECT_TRUE(negative && positive);  // spread over the range, no signed overflow (UBSan would say)
  random::set_seed(1);
  const auto small = random::randint(3, 5, {100}).to_vector<int64_t>();
  for (int64_t x : small) EXPECT_TRUE(x == 3 || x == 4);
  EXPECT_THROW(osprey::keras::layers::Reshape({int64_t{1} << 40, int64_t{1} << 40})(Tensor::zeros({1, 4})),
               ValueError);
}
