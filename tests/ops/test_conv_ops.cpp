// Convolution and pooling ops against plain float64 loops (forward) and finite differences (gradients), over 1, 2
// and 3 spatial axes, with strides, dilation, asymmetric padding and groups; bad shapes are typed errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "osprey/random.h"

using namespace osprey;

namespace {

struct Index {
  std::vector<int64_t> dims;
  int64_t operator()(const std::vector<int64_t>& at) const {
    int64_t o = 0;
    for (std::size_t i = 0; i < dims.size(); ++i) o = o * dims[i] + at[i];
    return o;
  }
};

// Calls f(position) for every position of a grid of the given extents.
void for_each(const std::vector<int64_t>& extent, const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> at(extent.size(), 0);
  for (int64_t e : extent) if (e == 0) return;
  while (true) {
    f(at);
    int i = static_cast<int>(extent.size()) - 1;
    while (i >= 0 && ++at[i] == extent[i]) at[i--] = 0;
    if (i < 0) return;
  }
}

// The convolution in float64, straight from its definition (channels-last, kernel (k..., Cin/g, Cout)).
std::vector<double> reference_conv(const Tensor& xt, const Tensor& wt, const Tensor& bt, const ops::ConvParams& p,
                                   const Shape& out) {
  const auto x = xt.to_vector<float>(), w = wt.to_vector<float>();
  const Shape& xs = xt.shape();
  const Shape& ks = wt.shape();
  const int r = xs.rank() - 2;
  const int64_t cin_g = ks[-2], cout = ks[-1], cout_g = cout / p.groups;
  std::vector<double> y(static_cast<std::size_t>(out.num_elements()), 0.0);
  Index xi{std::vector<int64_t>(xs.dims().begin(), xs.dims().end())};
  Index ki{std::vector<int64_t>(ks.dims().begin(), ks.dims().end())};
  Index yi{std::vector<int64_t>(out.dims().begin(), out.dims().end())};
  std::vector<int64_t> oext(out.dims().begin(), out.dims().end());
  for_each(oext, [&](const std::vector<int64_t>& o) {
    const int64_t co = o.back(), g = co / cout_g;
    double s = bt.defined() ? bt.to_vector<float>()[static_cast<std::size_t>(co)] : 0.0;
    std::vector<int64_t> kext(ks.dims().begin(), ks.dims().begin() + r);
    kext.push_back(cin_g);
    for_each(kext, [&](const std::vector<int64_t>& k) {
      std::vector<int64_t> xa{o[0]};
      for (int i = 0; i < r; ++i) {
        const int64_t pos = o[i + 1] * p.strides[i] + k[i] * p.dilation[i] - p.pad_before[i];
        if (pos < 0 || pos >= xs[i + 1]) return;
        xa.push_back(pos);
      }
      xa.push_back(g * cin_g + k[r]);
      std::vector<int64_t> ka(k);
      ka.push_back(co);
      s += static_cast<double>(x[xi(xa)]) * w[ki(ka)];
    });
    y[yi(o)] = s;
  });
  return y;
}

std::vector<double> reference_pool(const Tensor& xt, const ops::PoolParams& p, const Shape& out) {
  const auto x = xt.to_vector<float>();
  const Shape& xs = xt.shape();
  const int r = xs.rank() - 2;
  Index xi{std::vector<int64_t>(xs.dims().begin(), xs.dims().end())};
  Index yi{std::vector<int64_t>(out.dims().begin(), out.dims().end())};
  std::vector<double> y(static_cast<std::size_t>(out.num_elements()));
  for_each(std::vector<int64_t>(out.dims().begin(), out.dims().end()), [&](const std::vector<int64_t>& o) {
    double best = -std::numeric_limits<double>::infinity(), sum = 0;
    int64_t count = 0;
    for_each(p.window, [&](const std::vector<int64_t>& k) {
      std::vector<int64_t> xa{o[0]};
      for (int i = 0; i < r; ++i) {
        const int64_t pos = o[i + 1] * p.strides[i] + k[i] - p.pad_before[i];
        if (pos < 0 || pos >= xs[i + 1]) return;
        xa.push_back(pos);
      }
      xa.push_back(o.back());
      const double v = x[xi(xa)];
      best = std::max(best, v);
      sum += v;
      ++count;
    });
    y[yi(o)] = p.kind == ops::PoolKind::max ? best : sum / static_cast<double>(count);
  });
  return y;
}

void expect_values(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  const auto g = got.to_vector<float>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << " [" << i << "]";
  }
}

// d sum(f(v) * probe) / dv against central differences in float64 through the op itself (float32 values, so a
// loose tolerance), at a sample of positions.
void expect_gradient(const std::function<Tensor(const Tensor&)>& f, const Tensor& at, const std::string& what) {
  Variable v(at, "v");
  GradientTape tape;
  const Tensor y = f(v.value());
  random::set_seed(99);
  const Tensor probe = random::uniform(y.shape(), -1, 1);
  const Tensor loss = ops::reduce_sum(ops::mul(y, probe));
  const auto grad = tape.gradient(loss, std::vector<Variable*>{&v})[0].to_vector<float>();
  auto values = at.to_vector<float>();
  const auto pv = probe.to_vector<float>();
  auto total = [&](const std::vector<float>& vals) {
    const auto out = f(Tensor::from_vector(vals, at.shape())).to_vector<float>();
    double s = 0;
    for (std::size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * pv[i];
    return s;
  };
  const std::size_t step = std::max<std::size_t>(1, values.size() / 40);
  for (std::size_t i = 0; i < values.size(); i += step) {
    const float keep = values[i];
    const float h = 1e-2f;
    values[i] = keep + h;
    const double up = total(values);
    values[i] = keep - h;
    const double down = total(values);
    values[i] = keep;
    const double numeric = (up - down) / (2.0 * h);
    EXPECT_NEAR(grad[i], numeric, 2e-2 * std::max(1.0, std::abs(numeric))) << what << " [" << i << "]";
  }
}

struct ConvCase {
  std::vector<int64_t> x, k;
  ops::ConvParams p;
};

}  // namespace

TEST(ConvOps, ForwardMatchesTheDefinitionAndGradientsMatchFiniteDifferences) {
  const std::vector<ConvCase> cases{
      {{2, 9, 3}, {3, 3, 4}, {{1}, {1}, {0}, {0}, 1}},
      {{2, 11, 4}, {3, 2, 6}, {{2}, {2}, {2}, {1}, 2}},            // 1-D, strided, dilated, asymmetric, grouped
      {{2, 7, 6, 3}, {3, 2, 3, 5}, {{1, 1}, {1, 1}, {1, 0}, {1, 1}, 1}},
      {{1, 8, 9, 4}, {3, 3, 1, 4}, {{2, 1}, {1, 2}, {1, 2}, {1, 2}, 4}},   // depthwise (groups = channels)
      {{1, 5, 4, 6, 2}, {2, 3, 2, 2, 3}, {{1, 2, 1}, {1, 1, 2}, {0, 1, 1}, {1, 1, 0}, 1}},
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto& cs = cases[c];
    random::set_seed(10 + c);
    const Tensor x = random::uniform(Shape(cs.x), -1, 1), w = random::uniform(Shape(cs.k), -1, 1);
    const Tensor b = random::uniform({cs.k.back()}, -1, 1);
    const Tensor y = ops::conv(x, w, b, cs.p);
    expect_values(y, reference_conv(x, w, b, cs.p, y.shape()), 1e-5, "conv case " + std::to_string(c));
    const std::string what = "case " + std::to_string(c);
    expect_gradient([&](const Tensor& v) { return ops::conv(v, w, b, cs.p); }, x, "dx " + what);
    expect_gradient([&](const Tensor& v) { return ops::conv(x, v, b, cs.p); }, w, "dw " + what);
    expect_gradient([&](const Tensor& v) { return ops::conv(x, w, v, cs.p); }, b, "db " + what);
    // The transposed convolution is the input gradient, and is differentiable itself.
    std::vector<int64_t> spatial(cs.x.begin() + 1, cs.x.end() - 1);
    expect_gradient([&](const Tensor& v) { return ops::conv_backprop_input(v, w, spatial, cs.p); }, y,
                    "transposed d dy " + what);
    expect_gradient([&](const Tensor& v) { return ops::conv_backprop_input(y, v, spatial, cs.p); }, w,
                    "transposed d w " + what);
  }
}

// An activation fused into the convolution (ConvParams::activation: relu is oneDNN's post-op, others run after
// the primitive in the same kernel) gives the values and every gradient of the convolution followed by the
// activation op; float32 and bfloat16.
TEST(ConvOps, AFusedActivationMatchesTheActivationOpAfterTheConvolution) {
  const ConvCase cs{{2, 7, 6, 16}, {3, 3, 16, 16}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1}};
  random::set_seed(5);
  const Tensor x = random::uniform(Shape(cs.x), -1, 1), w = random::uniform(Shape(cs.k), -0.3, 0.3);
  const Tensor b = random::uniform({cs.k.back()}, -0.5, 0.5), probe = random::uniform({2, 7, 6, 16}, -1, 1);
  using A = ops::Activation;
  for (DType dt : {DType::float32, DType::bfloat16}) {
    for (A act : {A::relu, A::sigmoid, A::tanh, A::elu, A::selu, A::leaky_relu, A::exponential}) {
      const std::string what = ops::activation_name(act) + " " + dtype_name(dt);
      auto run = [&](bool fused) {
        Variable vx(x.cast(dt), "x"), vw(w.cast(dt), "w"), vb(b.cast(dt), "b");
        GradientTape tape;
        ops::ConvParams p = cs.p;
        if (fused) p.activation = act;
        Tensor y = ops::conv(vx.value(), vw.value(), vb.value(), p);
        if (!fused) y = ops::activation(y, act);
        auto g = tape.gradient(ops::reduce_sum(ops::mul(y.cast(DType::float32), probe)),
                               std::vector<Variable*>{&vx, &vw, &vb});
        g.insert(g.begin(), y);
        return g;
      };
      const auto fused = run(true), apart = run(false);
      // bfloat16: the fused activation reads the float32 accumulator, the op after it the rounded output.
      const double tol = dt == DType::float32 ? 2e-5 : 2e-2;
      for (std::size_t i = 0; i < fused.size(); ++i) {
        ASSERT_EQ(fused[i].dtype(), apart[i].dtype()) << what << " output " << i;
        const auto f = fused[i].cast(DType::float32).to_vector<float>(), a = apart[i].cast(DType::float32).to_vector<float>();
        ASSERT_EQ(f.size(), a.size()) << what;
        float scale = 1.f;  // gradients are sums: their rounding error scales with the largest of them
        for (float v : a) scale = std::max(scale, std::abs(v));
        for (std::size_t j = 0; j < f.size(); ++j) {
          ASSERT_NEAR(f[j], a[j], tol * scale) << what << " output " << i << " [" << j << "]";
        }
      }
    }
  }
  for (A act : {A::softmax, A::gelu, A::silu, A::softplus, A::softsign}) {
    ops::ConvParams p = cs.p;
    p.activation = act;
    EXPECT_THROW((void)ops::conv(x, w, b, p), InvalidArgumentError) << ops::activation_name(act);
  }
}

TEST(ConvOps, PoolingMatchesTheDefinitionAndItsGradient) {
  struct PoolCase {
    std::vector<int64_t> x;
    ops::PoolParams p;
  };
  std::vector<PoolCase> cases;
  for (auto kind : {ops::PoolKind::max, ops::PoolKind::average}) {
    cases.push_back({{2, 9, 3}, {kind, {2}, {2}, {0}, {0}}});
    cases.push_back({{2, 7, 6, 3}, {kind, {3, 2}, {2, 2}, {1, 0}, {1, 1}}});  // "same"-style padding excluded
    cases.push_back({{1, 4, 5, 6, 2}, {kind, {2, 2, 3}, {1, 2, 3}, {0, 1, 0}, {1, 0, 0}}});
  }
  for (std::size_t c = 0; c < cases.size(); ++c) {
    random::set_seed(40 + c);
    const Tensor x = random::uniform(Shape(cases[c].x), -1, 1);
    const Tensor y = ops::pool(x, cases[c].p);
    expect_values(y, reference_pool(x, cases[c].p, y.shape()), 1e-6, "pool case " + std::to_string(c));
    expect_gradient([&](const Tensor& v) { return ops::pool(v, cases[c].p); }, x, "pool grad " + std::to_string(c));
  }
}

TEST(ConvOps, BadShapesAreInvalidArgumentErrors) {
  const Tensor x = Tensor::zeros({2, 5, 5, 3});
  const ops::ConvParams p{{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1};
  EXPECT_THROW((void)ops::conv(Tensor::zeros({2, 5}), Tensor::zeros({3, 3, 3, 4}), Tensor(), p), InvalidArgumentError);
  EXPECT_THROW((void)ops::conv(x, Tensor::zeros({3, 3, 2, 4}), Tensor(), p), InvalidArgumentError);  // channels
  EXPECT_THROW((void)ops::conv(x, Tensor::zeros({7, 3, 3, 4}), Tensor(), p), InvalidArgumentError);  // too large
  EXPECT_THROW((void)ops::conv(x, Tensor::zeros({3, 3, 3, 4}), Tensor::zeros({5}), p), InvalidArgumentError);
  EXPECT_THROW((void)ops::conv(x, Tensor::zeros({3, 3, 1, 4}), Tensor(), {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 3}),
               InvalidArgumentError);  // 4 output channels do not split into 3 groups
  EXPECT_THROW((void)ops::conv(x, Tensor::zeros({3, 3, 3, 4}), Tensor(), {{0, 1}, {1, 1}, {0, 0}, {0, 0}, 1}),
               InvalidArgumentError);
  EXPECT_THROW((void)ops::conv(x, Tensor::zeros({3, 3, 3, 4}), Tensor(), {{1}, {1}, {0}, {0}, 1}),
               InvalidArgumentError);
  EXPECT_THROW((void)ops::pool(x, {ops::PoolKind::max, {6, 1}, {1, 1}, {0, 0}, {0, 0}}), InvalidArgumentError);
  EXPECT_THROW((void)ops::pool(x, {ops::PoolKind::max, {2, 2}, {1, 0}, {0, 0}, {0, 0}}), InvalidArgumentError);
  try {
    (void)ops::conv(x, Tensor::zeros({7, 3, 3, 4}), Tensor(), p);
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 5, 5, 3)"), std::string::npos) << e.what();
  }
}
