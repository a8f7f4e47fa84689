// Every op, forward and backward, on every GPU backend present, against the CPU (float32 relative bounds; keras::ops
// and half precision in test_cross_backend_keras_half.cpp).
// On a machine without a GPU the real-GPU case skips with the runtime's reason; the same checks run on the test
// platform's simulated GPU so that the harness itself is always exercised.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "osprey/autodiff.h"
#include "osprey/config.h"
#include "osprey/device.h"
#include "cuda/cross_backend.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "osprey/random.h"
#include "osprey/tensor.h"
#include "runtime/device_manager.h"
#include "support/test_gpu_platform.h"
#include "test_util.h"

using namespace osprey;

namespace {

using namespace osprey::testing::cross_backend;

void check_every_op() {
  const Tensor a = host_uniform({33, 17}, -2, 2, 1), b = host_uniform({17, 9}, -2, 2, 2);
  const Tensor sq = host_uniform({33, 17}, -2, 2, 3), row = host_uniform({17}, -1, 1, 4);
  const Tensor pos = host_uniform({33, 17}, 0.1, 3, 5);

  // Casts between every pair of dtypes.
  for (DType from : {DType::float32, DType::float64, DType::int32, DType::int64}) {
    for (DType to : {DType::float32, DType::float64, DType::int32, DType::int64}) {
      expect_same(fmt::format("cast {}->{}", int(from), int(to)), [&] {
        return Outputs{ops::cast(ops::cast(ops::mul(a, Tensor::scalar(10.0)), from), to)};
      });
    }
  }
  // Matmul with every transpose combination, forward and backward.
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor x = ta ? host_uniform({17, 33}, -1, 1, 6) : a;
      const Tensor y = tb ? host_uniform({9, 17}, -1, 1, 7) : b;
      expect_same(fmt::format("matmul ta={} tb={}", ta, tb), [&] {
        Variable vx(x, "x"), vy(y, "y");
        GradientTape tape;
        Tensor c = ops::matmul(vx.value(), vy.value(), ta, tb);
        auto g = tape.gradient(ops::reduce_sum(ops::square(c)), Vars{&vx, &vy});
        return Outputs{c, g[0], g[1]};
      });
    }
  }
  // Batched matmul (attention's products), every transpose combination, forward and backward.
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor x = host_uniform(ta ? Shape{3, 6, 5} : Shape{3, 5, 6}, -1, 1, 8);
      const Tensor y = host_uniform(tb ? Shape{3, 4, 6} : Shape{3, 6, 4}, -1, 1, 9);
      expect_same(fmt::format("batched matmul ta={} tb={}", ta, tb), [&] {
        Variable vx(x, "x"), vy(y, "y");
        GradientTape tape;
        Tensor c = ops::matmul(vx.value(), vy.value(), ta, tb);
        auto g = tape.gradient(ops::reduce_sum(ops::square(c)), Vars{&vx, &vy});
        return Outputs{c, g[0], g[1]};
      });
    }
  }
  // Masked softmax: no mask, a broadcast mask with a fully masked row, causal, both treatments of left-out positions.
  {
    const Tensor logits = host_uniform({2, 3, 4, 37}, -3, 3, 10);
    std::vector<float> keep(2 * 4 * 37);
    for (std::size_t i = 0; i < keep.size(); ++i) keep[i] = (i * 7) % 5 != 0 ? 1.f : 0.f;
    for (int c = 0; c < 37; ++c) keep[37 * 2 + c] = 0.f;  // batch 0, query 2: nothing to attend to
    const Tensor mask = Tensor::from_vector<float>(keep, {2, 1, 4, 37});
    for (bool zero : {true, false}) {
      for (bool causal : {false, true}) {
        for (bool with_mask : {false, true}) {
          expect_same(fmt::format("masked_softmax zero={} causal={} mask={}", zero, causal, with_mask), [&] {
            Variable v(logits, "v");
            GradientTape tape;
            Tensor y = ops::masked_softmax(v.value(), with_mask ? mask : Tensor(),
                                           {.causal = causal, .masked_value = zero ? -1e9f : -2.3726710e38f,
                                            .zero_masked = zero});
            auto g = tape.gradient(ops::reduce_sum(ops::mul(y, logits)), Vars{&v});
            return Outputs{y, g[0]};
          });
        }
      }
    }
  }
  // Layer normalization with and without gamma and beta, forward and backward.
  for (bool affine : {true, false}) {
    expect_same(fmt::format("layer_norm affine={}", affine), [&] {
      Variable v(host_uniform({37, 45}, -2, 2, 11), "v"), g(host_uniform({45}, 0.5, 1.5, 12), "g"),
          b(host_uniform({45}, -1, 1, 13), "b");
      GradientTape tape;
      Tensor y = ops::layer_norm(v.value(), affine ? g.value() : Tensor(), affine ? b.value() : Tensor(), 1e-3);
      auto grads = tape.gradient(ops::reduce_sum(ops::mul(y, ops::exp(ops::mul(y, Tensor::scalar(0.3))))), Vars{&v, &g, &b});
      return affine ? Outputs{y, grads[0], grads[1], grads[2]} : Outputs{y, grads[0]};
    });
  }
  // An LSTM step's gates, forward and backward (both outputs used).
  expect_same("lstm_cell", [&] {
    Variable z(host_uniform({33, 4 * 19}, -3, 3, 14), "z"), cp(host_uniform({33, 19}, -2, 2, 15), "cp");
    GradientTape tape;
    const auto hc = ops::lstm_cell(z.value(), cp.value());
    auto grads = tape.gradient(ops::add(ops::reduce_sum(ops::mul(hc[0], hc[0])), ops::reduce_sum(hc[1])), Vars{&z, &cp});
    return Outputs{hc[0], hc[1], grads[0], grads[1]};
  });
  // A GRU step's gates, forward and backward.
  expect_same("gru_cell", [&] {
    Variable x(host_uniform({29, 3 * 17}, -3, 3, 16), "x"), r(host_uniform({29, 3 * 17}, -3, 3, 17), "r"),
        hp(host_uniform({29, 17}, -1, 1, 18), "hp");
    GradientTape tape;
    const Tensor h = ops::gru_cell(x.value(), r.value(), hp.value());
    auto grads = tape.gradient(ops::reduce_sum(ops::mul(h, h)), Vars{&x, &r, &hp});
    return Outputs{h, grads[0], grads[1], grads[2]};
  });
  // Dense with every activation, with and without bias, forward and backward.
  for (int act = 0; act <= static_cast<int>(ops::Activation::exponential); ++act) {
    for (bool with_bias : {true, false}) {
      const auto activation = static_cast<ops::Activation>(act);
      expect_same("dense " + ops::activation_name(activation) + (with_bias ? " +bias" : ""), [&] {
        Variable w(ops::mul(b, Tensor::scalar(0.3)), "w"), bias(row.slice_rows(0, 9), "b");
        GradientTape tape;
        Tensor y = ops::dense(a, w.value(), with_bias ? bias.value() : Tensor(), activation);
        auto g = tape.gradient(ops::reduce_mean(ops::mul(y, y)), Vars{&w, &bias});
        return with_bias ? Outputs{y, g[0], g[1]} : Outputs{y, g[0]};
      });
      expect_same("activation " + ops::activation_name(activation), [&] {
        Variable v(ops::mul(sq, Tensor::scalar(0.5)), "v");
        GradientTape tape;
        Tensor y = ops::activation(v.value(), activation);
        auto g = tape.gradient(ops::reduce_sum(ops::mul(y, y)), Vars{&v});
        return Outputs{y, g[0]};
      });
    }
  }
  // Dense in bfloat16 (mixed_bfloat16's layers): the CPU's own bfloat16 kernels against the GPU's (cuBLASLt on the
  // tensor cores): the same up to bfloat16's rounding of the gradients. check_half_ops() has the rest.
  for (const auto activation : {ops::Activation::relu, ops::Activation::tanh, ops::Activation::linear}) {
    expect_close_to_max("dense bfloat16 " + ops::activation_name(activation), [&] {
      const Tensor ah = ops::cast(a, DType::bfloat16);
      Variable w(ops::cast(ops::mul(b, Tensor::scalar(0.3)), DType::bfloat16), "w"),
          bias(ops::cast(row.slice_rows(0, 9), DType::bfloat16), "b");
      GradientTape tape;
      Tensor y = ops::dense(ah, w.value(), bias.value(), activation);
      auto g = tape.gradient(ops::reduce_mean(ops::mul(ops::cast(y, DType::float32), ops::cast(y, DType::float32))),
                             Vars{&w, &bias});
      return Outputs{ops::cast(y, DType::float32), ops::cast(g[0], DType::float32), ops::cast(g[1], DType::float32)};
    }, 1.0 / 32);
  }
  // Unary and binary ops (every broadcast form), with gradients.
  expect_same("unary", [&] {
    Variable v(pos, "v");
    GradientTape tape;
    Outputs ys{ops::neg(v.value()), ops::exp(v.value()), ops::log(v.value()), ops::sqrt(v.value()),
               ops::square(v.value()), ops::abs(ops::sub(v.value(), Tensor::scalar(1.0)))};
    Tensor total = ops::reduce_sum(ys[0]);
    for (size_t i = 1; i < ys.size(); ++i) total = ops::add(total, ops::reduce_sum(ys[i]));
    auto g = tape.gradient(total, Vars{&v});
    ys.push_back(g[0]);
    return ys;
  });
  // The trigonometric, hyperbolic and rounding functions, log1p/expm1, in float32 and float64, with gradients
  // (rounding's are zero); arguments inside each domain, halves for round.
  for (const DType dt : {DType::float32, DType::float64}) {
    expect_same(fmt::format("math functions {}", int(dt)), [&] {
      Variable u(ops::cast(host_uniform({33, 17}, -0.9, 0.9, 11), dt), "u");
      Variable w(ops::cast(host_uniform({33, 17}, 1.1, 3, 12), dt), "w");
      const Tensor halves = ops::cast(ops::mul(ops::cast(ops::cast(ops::mul(sq, Tensor::scalar(4.0)), DType::int32),
                                                         DType::float32),
                                               Tensor::scalar(0.5)),
                                      dt);
      GradientTape tape;
      const Tensor x = u.value();
      Outputs ys{ops::sin(x),  ops::cos(x),   ops::tan(x),   ops::asin(x),  ops::acos(x),  ops::atan(x),
                 ops::sinh(x), ops::cosh(x),  ops::asinh(x), ops::atanh(x), ops::log1p(x), ops::expm1(x),
                 ops::floor(ops::mul(x, Tensor::scalar(3.0, dt))), ops::ceil(ops::mul(x, Tensor::scalar(3.0, dt))),
                 ops::acosh(w.value()), ops::round(halves), ops::erf(x)};
      auto sum = [](const Tensor& t) { return ops::reduce_axes(t, ops::ReduceOp::sum, {0, 1}); };  // keeps float64
      Tensor total = sum(ys[0]);
      for (size_t i = 1; i < ys.size(); ++i) total = ops::add(total, sum(ys[i]));
      auto g = tape.gradient(total, Vars{&u, &w});
      ys.push_back(g[0]);
      ys.push_back(g[1]);
      return ys;
    });
  }
  expect_same("binary", [&] {
    Variable x(sq, "x"), y(pos, "y"), r(row, "r");
    GradientTape tape;
    Outputs ys{ops::add(x.value(), y.value()), ops::sub(x.value(), r.value()), ops::mul(x.value(), Tensor::scalar(3.0)),
               ops::div(x.value(), y.value()), ops::maximum(x.value(), y.value()),
               ops::div(Tensor::scalar(2.0), y.value())};
    Tensor total = ops::reduce_sum(ys[0]);
    for (size_t i = 1; i < ys.size(); ++i) total = ops::add(total, ops::reduce_mean(ys[i]));
    auto g = tape.gradient(total, Vars{&x, &y, &r});
    ys.insert(ys.end(), g.begin(), g.end());
    return ys;
  });
  expect_same("integer binary", [&] {
    Tensor i = ops::cast(ops::mul(sq, Tensor::scalar(10.0)), DType::int64);
    return Outputs{ops::add(i, i), ops::mul(i, i), ops::maximum(i, ops::sub(i, ops::mul(i, i))), ops::sub(i, i)};
  });
  expect_same("integer ops (bitwise, shifts, gcd, lcm)", [&] {
    Outputs out;
    for (DType t : {DType::int32, DType::int64}) {
      const Tensor i = ops::cast(ops::mul(sq, Tensor::scalar(-37.0)), t);
      const Tensor j = ops::cast(ops::mul(sq, Tensor::scalar(23.0)), t);
      const Tensor shift = ops::cast(ops::sub(ops::mul(sq, Tensor::scalar(9.0)), Tensor::scalar(2.0)), t);
      for (auto k : {ops::IntegerKind::bitwise_and, ops::IntegerKind::bitwise_or, ops::IntegerKind::bitwise_xor,
                     ops::IntegerKind::gcd, ops::IntegerKind::lcm}) {
        out.push_back(ops::integer_binary(i, j, k));
      }
      out.push_back(ops::integer_binary(i, shift, ops::IntegerKind::left_shift));
      out.push_back(ops::integer_binary(i, shift, ops::IntegerKind::right_shift));
      out.push_back(ops::integer_binary(i, ops::reshape(ops::slice_axis(j, 0, 0, 1), {1, j.shape()[1]}),
                                        ops::IntegerKind::gcd));  // broadcast
    }
    return out;
  });
  // Linear algebra: every kernel (LU, Cholesky, triangular solves, the Jacobi eigendecomposition and SVD, tall, wide
  // and full) and the gradients of the composites (each a chain of those kernels and products).
  expect_same("linear algebra and its gradients", [&] {
    std::vector<float> diag(25, 0.0f);
    for (int i = 0; i < 5; ++i) diag[static_cast<std::size_t>(i * 6)] = 4.0f;
    const Tensor eye5 = Tensor::from_vector(diag, {5, 5});
    Variable m(ops::add(host_uniform({3, 5, 5}, -1, 1, 52), eye5), "m");
    Variable r(host_uniform({3, 5, 2}, -1, 1, 53), "r");
    Variable t(host_uniform({2, 6, 4}, -1, 1, 54), "t");
    GradientTape tape;
    const Tensor x = m.value();
    const Tensor spd = ops::add(ops::matmul(x, x, false, true), eye5);
    const Tensor sym = ops::add(x, ops::transpose(x, {0, 2, 1}));
    const auto lu = ops::lu(x);
    const auto eig = ops::self_adjoint_eig(sym);
    const auto tall = ops::svd(t.value()), wide = ops::svd(ops::transpose(t.value(), {0, 2, 1}), true);
    const auto qr_tall = ops::qr(t.value()), qr_wide = ops::qr(ops::transpose(t.value(), {0, 2, 1}), true);
    Outputs out{lu[0], ops::cast(lu[1], DType::float32), ops::cholesky(spd), ops::triangular_solve(x, r.value(), true),
                ops::triangular_solve(x, r.value(), false, true), ops::matrix_inverse(x), ops::matrix_solve(x, r.value()),
                ops::matrix_determinant(x), ops::log_matrix_determinant(x)[1], eig[0], ops::abs(eig[1]), tall[0],
                ops::abs(tall[1]), ops::abs(tall[2]), wide[0], ops::abs(wide[1]), ops::abs(wide[2]), qr_tall[0],
                qr_tall[1], qr_wide[0], qr_wide[1]};
    Tensor loss = ops::reduce_sum(ops::square(out[2]));
    for (int i : {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17, 18, 19, 20}) loss = ops::add(loss, ops::reduce_sum(out[static_cast<std::size_t>(i)]));
    auto g = tape.gradient(loss, Vars{&m, &r, &t});
    out.insert(out.end(), g.begin(), g.end());
    return out;
  }, 1e-3);
  // Reductions.
  expect_same("reductions", [&] {
    return Outputs{ops::reduce_sum(a), ops::reduce_mean(a), ops::reduce_sum(a, 0), ops::reduce_sum(a, 1),
                   ops::reduce_mean(a, 0)};
  });
  // Gathers.
  expect_same("gather", [&] {
    return Outputs{ops::gather_rows(a, Tensor::from_vector<int64_t>({32, 0, 5, 5, 17}, {5})),
                   ops::gather_rows(ops::cast(a, DType::int32), Tensor::from_vector<int64_t>({1, 2}, {2}))};
  });
  // The gather's gradient (repeated rows add up) and the scatter on its own.
  expect_same("gather gradient and scatter_add_rows", [&] {
    Variable x(host_uniform({6, 3, 2}, -1, 1, 41), "x");
    const Tensor idx = Tensor::from_vector<int64_t>({5, 0, 5, 2, 5, 0, 1}, {7});
    GradientTape tape;
    const Tensor y = ops::gather_rows(x.value(), idx);
    auto g = tape.gradient(ops::reduce_sum(ops::square(y)), Vars{&x});
    return Outputs{y, g[0], ops::scatter_add_rows(ops::reshape(y, Shape({7, 6})), idx, 9)};
  });
  // split: the pieces and their one gradient (an unused piece's part zero).
  expect_same("split and its gradient", [&] {
    Variable x(host_uniform({4, 7, 3}, -1, 1, 43), "x");
    GradientTape tape;
    const auto parts = ops::split(x.value(), 1, {2, 0, 4, 1});
    auto g = tape.gradient(ops::add(ops::reduce_sum(ops::square(parts[0])), ops::reduce_sum(parts[2])), Vars{&x});
    return Outputs{parts[0], parts[2], parts[3], g[0]};
  });
  // Concatenation and slicing along every axis, with their gradients; minimum.
  expect_same("concat and slice", [&] {
    Variable x(host_uniform({3, 4, 5}, -1, 1, 21), "x"), y(host_uniform({3, 2, 5}, -1, 1, 22), "y");
    GradientTape tape;
    Outputs ys{ops::concat({x.value(), y.value()}, 1), ops::concat({x.value(), x.value()}, 0),
               ops::concat({x.value(), x.value()}, -1), ops::slice_axis(x.value(), 2, 1, 3),
               ops::minimum(x.value(), ops::neg(x.value())), ops::transpose(x.value(), {2, 0, 1}),
               ops::transpose(x.value(), {1, 0, 2}),
               ops::concat({ops::cast(x.value(), DType::int32), ops::cast(x.value(), DType::int32)}, 2)};
    Tensor total = ops::reduce_sum(ops::square(ys[0]));
    for (size_t i = 1; i + 1 < ys.size(); ++i) total = ops::add(total, ops::reduce_sum(ops::square(ys[i])));
    auto g = tape.gradient(total, Vars{&x, &y});
    ys.insert(ys.end(), g.begin(), g.end());
    return ys;
  });
  // Random numbers from a generator in a device tensor: the same values on both, the state advanced alike; an
  // in-place assign.
  expect_same("uniform_from_state and assign", [&] {
    Tensor state = Tensor::from_vector<int64_t>({1234567, 42, 7}, {3});
    Tensor first = random::uniform_from_state({33, 5}, state);
    Tensor second = random::uniform_from_state({3}, state);
    Tensor dst = Tensor::zeros({33, 5});
    ops::assign(dst, ops::add(first, Tensor::scalar(1.0)));
    return Outputs{first, second, ops::cast(state, DType::float64), dst};
  }, 0.0);
  // Losses and their gradients (labels in several dtypes), accuracy counts; rows of 5 and of 700 values (the CUDA
  // plug-in gives long rows a block each).
  for (const int64_t d : {int64_t{5}, int64_t{700}}) {
    const uint64_t seed = static_cast<uint64_t>(d);
    const Tensor probs = ops::softmax(host_uniform({33, d}, -2, 2, 8 + seed));
    const Tensor p1 = ops::sigmoid(host_uniform({33, d == 5 ? 1 : d}, -3, 3, 9 + seed));
    for (DType ldt : {DType::float32, DType::int64}) {
      const Tensor sparse = host_labels(33, static_cast<int>(d), 10 + seed, ldt);
      const Tensor binary =
          ops::cast(host_labels(33 * p1.shape()[1], 2, 11 + seed, DType::float32).reshape(p1.shape()), ldt);
      expect_same(fmt::format("losses over rows of {}", d), [&] {
        Variable vp(probs, "p"), vb(p1, "b");
        GradientTape tape;
        Tensor onehot_src =
            ops::cast(ops::maximum(ops::sub(probs, Tensor::scalar(d == 5 ? 0.3 : 0.002)), Tensor::scalar(0.0)),
                      DType::float32);
        Outputs ys{ops::binary_crossentropy(binary.cast(DType::float32), vb.value(), 0.1),
                   ops::categorical_crossentropy(onehot_src, vp.value(), 0.05),
                   ops::sparse_categorical_crossentropy(sparse, vp.value()),
                   ops::mean_squared_error(onehot_src, vp.value()), ops::mean_absolute_error(onehot_src, vp.value())};
        Tensor total = ops::reduce_mean(ys[0]);
        for (size_t i = 1; i < ys.size(); ++i) total = ops::add(total, ops::reduce_mean(ys[i]));
        auto g = tape.gradient(total, Vars{&vp, &vb});
        ys.insert(ys.end(), g.begin(), g.end());
        return ys;
      });
      expect_same(fmt::format("accuracy over rows of {}", d), [&] {
        return Outputs{ops::accuracy_count(binary, p1, ops::AccuracyKind::binary),
                       ops::accuracy_count(sparse, probs, ops::AccuracyKind::sparse_categorical),
                       ops::accuracy_count(probs, probs, ops::AccuracyKind::categorical)};
      });
    }
  }
  // Convolutions over 1, 2 and 3 spatial axes (strides, dilation, asymmetric "same"/"causal" padding, groups,
  // depthwise, a fused activation), forward and every gradient, the transposed convolution; max and average pooling with padding.
  struct ConvCase {
    Shape x, k;
    ops::ConvParams p;
  };
  const std::vector<ConvCase> convs{
      {{3, 11, 4}, {3, 2, 6}, {{2}, {1}, {2}, {0}, 2}},
      {{2, 9, 7, 3}, {3, 2, 3, 5}, {{1, 2}, {1, 1}, {1, 0}, {1, 1}, 1, ops::Activation::relu}},  // fused relu
      {{2, 8, 8, 4}, {3, 3, 1, 8}, {{1, 1}, {2, 2}, {2, 2}, {2, 2}, 4, ops::Activation::tanh}},  // fused tanh
      {{2, 4, 5, 6, 2}, {2, 3, 2, 2, 3}, {{1, 2, 1}, {1, 1, 1}, {0, 1, 0}, {1, 1, 1}, 1}},
  };
  for (std::size_t c = 0; c < convs.size(); ++c) {
    const Tensor x = host_uniform(convs[c].x, -1, 1, 40 + c), k = host_uniform(convs[c].k, -1, 1, 50 + c);
    const Tensor bias = host_uniform({convs[c].k[-1]}, -1, 1, 60 + c);
    expect_same(fmt::format("conv case {}", c), [&] {
      Variable vx(x, "x"), vk(k, "k"), vb(bias, "b");
      GradientTape tape;
      Tensor y = ops::conv(vx.value(), vk.value(), vb.value(), convs[c].p);
      const auto d = convs[c].x.dims();
      Tensor t = ops::conv_backprop_input(y, vk.value(), std::vector<int64_t>(d.begin() + 1, d.end() - 1), convs[c].p);
      auto g = tape.gradient(ops::add(ops::reduce_sum(ops::square(y)), ops::reduce_sum(ops::mul(t, x))),
                             Vars{&vx, &vk, &vb});
      return Outputs{y, t, g[0], g[1], g[2]};
    });
  }
  for (auto kind : {ops::PoolKind::max, ops::PoolKind::average}) {
    const Tensor x1 = host_uniform({2, 9, 3}, -1, 1, 70), x2 = host_uniform({2, 7, 6, 3}, -1, 1, 71);
    const Tensor x3 = host_uniform({1, 4, 5, 6, 2}, -1, 1, 72);
    expect_same(fmt::format("pool kind {}", int(kind)), [&] {
      Variable v1(x1, "a"), v2(x2, "b"), v3(x3, "c");
      GradientTape tape;
      Outputs ys{ops::pool(v1.value(), {kind, {3}, {2}, {1}, {1}}),
                 ops::pool(v2.value(), {kind, {3, 2}, {2, 2}, {1, 0}, {1, 1}}),
                 ops::pool(v3.value(), {kind, {2, 2, 3}, {1, 2, 3}, {0, 1, 0}, {1, 0, 0}})};
      Tensor total = ops::reduce_sum(ops::square(ys[0]));
      for (std::size_t i = 1; i < ys.size(); ++i) total = ops::add(total, ops::reduce_sum(ops::square(ys[i])));
      auto g = tape.gradient(total, Vars{&v1, &v2, &v3});
      ys.insert(ys.end(), g.begin(), g.end());
      return ys;
    });
  }
  // Resizing up and down, bilinear and nearest, with the gradient.
  expect_same("resize", [&] {
    Variable v(host_uniform({2, 7, 5, 3}, -1, 1, 80), "v");
    GradientTape tape;
    Outputs ys{ops::resize(v.value(), 11, 3, ops::ResizeMethod::bilinear),
               ops::resize(v.value(), 4, 9, ops::ResizeMethod::nearest)};
    auto g = tape.gradient(ops::add(ops::reduce_sum(ops::square(ys[0])), ops::reduce_sum(ops::square(ys[1]))),
                           Vars{&v});
    ys.push_back(g[0]);
    return ys;
  });
  // The table-driven methods (the Resample op along each axis) and a ScaleAndTranslate, with the gradient.
  expect_same("resample", [&] {
    Variable v(host_uniform({2, 7, 5, 3}, -1, 1, 81), "v");
    GradientTape tape;
    Outputs ys{ops::resize(v.value(), 12, 4, ops::ResizeMethod::bicubic),
               ops::resize(v.value(), 3, 8, ops::ResizeMethod::area),
               ops::resize(v.value(), 4, 2, ops::ResizeMethod::lanczos3, true),
               ops::scale_and_translate(v.value(), 6, 9, {0.8f, 1.7f}, {0.3f, -0.4f}, ops::SamplingKernel::keyscubic)};
    Tensor total = ops::reduce_sum(ops::square(ys[0]));
    for (std::size_t i = 1; i < ys.size(); ++i) total = ops::add(total, ops::reduce_sum(ops::square(ys[i])));
    ys.push_back(tape.gradient(total, Vars{&v})[0]);
    return ys;
  });
  // Projective transforms (rotation, shift, zoom, a projective one) with every fill mode and interpolation.
  for (auto fill : {ops::FillMode::reflect, ops::FillMode::wrap, ops::FillMode::constant, ops::FillMode::nearest}) {
    expect_same(fmt::format("affine_transform fill {}", int(fill)), [&] {
      const Tensor images = host_uniform({3, 7, 9, 2}, 0, 255, 90);
      const Tensor t = Tensor::from_vector<float>({0.8f, -0.6f, 3.1f, 0.6f, 0.8f, -1.7f, 0.f, 0.f,
                                                   1.f, 0.f, -2.5f, 0.f, 1.f, 1.25f, 0.f, 0.f,
                                                   1.3f, 0.1f, -1.f, 0.f, 0.7f, 2.f, 0.01f, -0.02f},
                                                  {3, 8});
      return Outputs{ops::affine_transform(images, t, ops::ResizeMethod::bilinear, fill, 7.0),
                     ops::affine_transform(images, t, ops::ResizeMethod::nearest, fill, 7.0)};
    });
  }
  // Optimizer updates.
  expect_same("optimizers", [&] {
    Tensor g = ops::mul(sq, Tensor::scalar(0.1));
    Tensor w1 = ops::add(a, Tensor::scalar(0.0)), w2 = ops::add(a, Tensor::scalar(0.0)),
           w3 = ops::add(a, Tensor::scalar(0.0)), w4 = ops::add(a, Tensor::scalar(0.0));
    Tensor mom = ops::mul(a, Tensor::scalar(0.0)), m = ops::mul(a, Tensor::scalar(0.0)),
           v = ops::mul(a, Tensor::scalar(0.0)), vhat = ops::mul(a, Tensor::scalar(0.0)),
           rv = ops::mul(a, Tensor::scalar(0.0)), rmom = ops::mul(a, Tensor::scalar(0.0)),
           mg = ops::mul(a, Tensor::scalar(0.0));
    for (int step = 0; step < 3; ++step) {
      ops::apply_sgd(w1, g, &mom, 0.1, 0.9, true);
      ops::apply_sgd(w2, g, nullptr, 0.1, 0.0, false);
      ops::apply_adam(w3, m, v, g, &vhat, 0.01, 0.9, 0.999, 1e-7);
      ops::apply_rmsprop(w4, rv, g, &rmom, &mg, 0.01, 0.9, 0.5, 1e-7);
    }
    return Outputs{w1, w2, w3, w4, mom, m, v, vhat, rv, rmom, mg};
  });
  // Adam over many variables in one kernel (more than one launch's group of 16 on the GPU), one with amsgrad's
  // vhat, one with a second half-batch gradient.
  expect_same("apply_adam_many", [&] {
    std::vector<ops::AdamUpdate> updates;
    Outputs out;
    for (int i = 0; i < 18; ++i) {
      Tensor w = ops::add(a, Tensor::scalar(0.01 * i));
      Tensor zero = ops::mul(a, Tensor::scalar(0.0));
      updates.push_back({w, zero, ops::add(zero, Tensor::scalar(0.0)), ops::mul(sq, Tensor::scalar(0.1 + 0.01 * i)),
                         i == 3 ? ops::add(zero, Tensor::scalar(0.0)) : Tensor(),
                         i == 5 ? ops::mul(sq, Tensor::scalar(-0.2)) : Tensor()});
    }
    for (int step = 0; step < 3; ++step) {
      EXPECT_TRUE(ops::apply_adam_many(updates, 0.01, 0.9, 0.999, 1e-7));
    }
    for (const auto& u : updates) out.insert(out.end(), {u.var, u.m, u.v});
    out.push_back(updates[3].vhat);
    return out;
  });
}

// The ops behind keras::ops: NumPy broadcasting of every binary kind and dtype, comparisons, where, broadcast_to,
// reductions over any axes (rows long enough to use every lane of the GPU's warps), cumulative ops, top_k; forward
// and backward.
void check_toolkit_ops() {
  const Tensor a = host_uniform({4, 1, 6}, 0.5, 2, 101), b = host_uniform({3, 1}, -1, 1, 102);
  for (auto [kind, name] : {std::pair{0, "add"}, {1, "sub"}, {2, "mul"}, {3, "div"}, {4, "maximum"}, {5, "minimum"},
                            {6, "pow"}}) {
    expect_same(fmt::format("broadcast {}", name), [&, kind = kind] {
      Variable va(a, "a"), vb(b, "b");
      GradientTape tape;
      const Tensor x = va.value(), y = kind == 6 ? ops::add(vb.value(), Tensor::scalar(1.5)) : vb.value();
      Tensor z = kind == 0 ? ops::add(x, y) : kind == 1 ? ops::sub(x, y) : kind == 2 ? ops::mul(x, y)
               : kind == 3 ? ops::div(x, y) : kind == 4 ? ops::maximum(x, y) : kind == 5 ? ops::minimum(x, y)
               : ops::pow(x, y);
      auto g = tape.gradient(ops::reduce_sum(ops::square(z)), Vars{&va, &vb});
      return Outputs{z, g[0], g[1]};
    });
  }
  for (DType t : {DType::float64, DType::int32, DType::int64}) {
    expect_same(fmt::format("broadcast dtype {}", dtype_name(t)), [&] {
      const Tensor x = ops::cast(ops::mul(a, Tensor::scalar(10.0)), t), y = ops::cast(ops::mul(b, Tensor::scalar(10.0)), t);
      return Outputs{ops::add(x, y), ops::mul(y, x), ops::maximum(x, y), ops::sub(y, x)};
    });
  }
  expect_same("compare and where", [&] {
    const Tensor x = ops::cast(ops::mul(a, Tensor::scalar(3.0)), DType::int32), y = ops::cast(b, DType::int32);
    Outputs out;
    for (auto k : {ops::CompareKind::equal, ops::CompareKind::not_equal, ops::CompareKind::less,
                   ops::CompareKind::less_equal, ops::CompareKind::greater, ops::CompareKind::greater_equal}) {
      out.push_back(ops::compare(a, b, k));
      out.push_back(ops::compare(x, y, k));
    }
    const Tensor p = ops::compare(a, Tensor::scalar(1.2), ops::CompareKind::greater);
    const Tensor q = ops::compare(b, Tensor::scalar(0.0), ops::CompareKind::less);
    for (auto k : {ops::CompareKind::logical_and, ops::CompareKind::logical_or, ops::CompareKind::logical_xor}) {
      out.push_back(ops::compare(p, q, k));
    }
    Variable va(a, "a"), vb(b, "b");
    GradientTape tape;
    Tensor w = ops::where(ops::compare(a, b, ops::CompareKind::greater), va.value(), vb.value());
    auto g = tape.gradient(ops::reduce_sum(ops::square(w)), Vars{&va, &vb});
    out.insert(out.end(), {w, g[0], g[1], ops::where(q, ops::cast(a, DType::int64), ops::cast(b, DType::int64)),
                           ops::broadcast_to(p, {2, 4, 3, 6}), ops::broadcast_to(b, {5, 3, 7})});
    return out;
  });
  // Reductions: every op over adjacent and non-adjacent axes, long rows, other dtypes; gradients of the
  // differentiable ones (max with ties).
  const Tensor x = host_uniform({3, 70, 5}, -2, 2, 103), rows = host_uniform({2, 1000}, -1, 1, 104);
  const Tensor ties = ops::cast(ops::cast(ops::mul(x, Tensor::scalar(2.0)), DType::int32), DType::float32);
  for (auto op : {ops::ReduceOp::sum, ops::ReduceOp::prod, ops::ReduceOp::max, ops::ReduceOp::min,
                  ops::ReduceOp::argmax, ops::ReduceOp::argmin, ops::ReduceOp::any, ops::ReduceOp::all}) {
    expect_same(fmt::format("reduce_axes {}", int(op)), [&] {
      const bool arg = op == ops::ReduceOp::argmax || op == ops::ReduceOp::argmin;
      const Tensor src = op == ops::ReduceOp::prod ? ops::add(ops::mul(x, Tensor::scalar(0.05)), Tensor::scalar(1.0))
                         : op == ops::ReduceOp::any || op == ops::ReduceOp::all
                             ? ops::compare(x, Tensor::scalar(-1.9), ops::CompareKind::greater)
                             : ties;
      Outputs out{ops::reduce_axes(src, op, {1}), ops::reduce_axes(src, op, {-1}, true),
                  ops::reduce_axes(rows, op == ops::ReduceOp::any || op == ops::ReduceOp::all ? ops::ReduceOp::sum : op, {1}),
                  ops::reduce_axes(ops::cast(ties, DType::int32), op, {0})};
      if (!arg) out.push_back(ops::reduce_axes(src, op, {0, 2}));
      if (!arg && op != ops::ReduceOp::any && op != ops::ReduceOp::all) {
        Variable v(src, "v");
        GradientTape tape;
        auto g = tape.gradient(ops::reduce_sum(ops::square(ops::reduce_axes(v.value(), op, {0, 2}))), Vars{&v});
        out.push_back(g[0]);
      }
      return out;
    });
  }
  expect_same("cumulative", [&] {
    Variable v(ops::add(ops::mul(x, Tensor::scalar(0.1)), Tensor::scalar(1.0)), "v");
    GradientTape tape;
    Outputs out{ops::cumulative(v.value(), 1, false), ops::cumulative(v.value(), 1, true, true, false),
                ops::cumulative(v.value(), -1, false, true, true), ops::cumulative(v.value(), 0, true, false, true)};
    Tensor total = ops::reduce_sum(ops::square(out[0]));
    for (int i = 1; i < 4; ++i) total = ops::add(total, ops::reduce_sum(ops::square(out[static_cast<std::size_t>(i)])));
    out.push_back(tape.gradient(total, Vars{&v})[0]);
    out.push_back(ops::cumulative(ops::cast(ties, DType::int64), 1, false));
    return out;
  });
  expect_same("top_k", [&] {
    Variable v(ties, "v");
    GradientTape tape;
    auto tk = ops::top_k(v.value(), 3);
    auto g = tape.gradient(ops::reduce_sum(ops::square(tk[0])), Vars{&v});
    auto small = ops::top_k(ops::cast(rows, DType::float64), 1000, false);
    auto ints = ops::top_k(ops::cast(ties, DType::int32), 5);
    return Outputs{tk[0], tk[1], g[0], small[0], small[1], ints[0], ints[1]};
  });
  // Fourier transforms (Fft): a power-of-two length, two Bluestein ones, rfft and irfft, float64; forward and
  // backward. Compared against each output's largest magnitude (an FFT's rounding scales with its row).
  for (int64_t n : {64, 100, 1000}) {
    const Tensor re = host_uniform({5, n}, -1, 1, 140 + static_cast<uint64_t>(n));
    const Tensor im = host_uniform({5, n}, -1, 1, 141 + static_cast<uint64_t>(n));
    expect_close_to_max(fmt::format("fft n={}", n), [&] {
      Variable vr(re, "re"), vi(im, "im");
      GradientTape tape;
      auto [fr, fi] = ops::fft(vr.value(), vi.value());
      auto [br, bi] = ops::fft(fr, fi, true);
      auto [rr, ri] = ops::rfft(vr.value());
      const Tensor back = ops::irfft(ops::mul(rr, Tensor::scalar(0.5)), ri, n);
      Tensor loss = ops::add(ops::reduce_sum(ops::square(fr)), ops::reduce_sum(ops::mul(fi, bi)));
      loss = ops::add(loss, ops::add(ops::reduce_sum(ops::square(ri)), ops::reduce_sum(ops::square(back))));
      auto g = tape.gradient(loss, Vars{&vr, &vi});
      auto [dr, di] = ops::fft(ops::cast(vr.value(), DType::float64), ops::cast(vi.value(), DType::float64), true);
      return Outputs{fr, fi, br, bi, rr, ri, back, g[0], g[1], dr, di};
    }, 2e-5);
  }
  // CTC: the loss and its gradient over sequences of several lengths (an empty label row without frames, repeated
  // labels, an impossible alignment: row 2), the blank first and in the middle; the greedy decoder and
  // the beam search (no GPU kernel: soft placement runs it on the CPU).
  {
    const Tensor logits = host_uniform({5, 30, 7}, -3, 3, 150);
    const Tensor labels = Tensor::from_vector<int32_t>({1, 2, 2, 3, 4, 5, 6, 1, 0, 0, 3, 3, 3, 3, 3,
                                                        6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0},
                                                       {5, 6});
    const Tensor label_length = Tensor::from_vector<int32_t>({6, 2, 5, 3, 0}, {5});
    const Tensor logit_length = Tensor::from_vector<int32_t>({30, 17, 6, 30, 0}, {5});
    for (int64_t blank : {0, 3}) {
      std::vector<int32_t> lab = labels.to_vector<int32_t>();
      for (auto& v : lab) v = blank != 0 && v == blank ? 0 : v;  // no label may be the blank
      const Tensor l = Tensor::from_vector<int32_t>(lab, {5, 6});
      expect_same(fmt::format("ctc_loss blank={}", blank), [&] {
        Variable v(logits, "logits");
        GradientTape tape;
        const Tensor loss = ops::ctc_loss(l, v.value(), label_length, logit_length, blank);
        auto g = tape.gradient(ops::reduce_sum(ops::mul(loss, Tensor::from_vector<float>({1, 2, 3, 4, 5}, {5}))),
                               Vars{&v});
        return Outputs{loss, g[0]};
      });
    }
    const Tensor lengths = Tensor::from_vector<int32_t>({30, 12, 1, 0, 29}, {5});
    expect_same("ctc decoders", [&] {
      auto [greedy, greedy_scores] = ops::ctc_greedy_decode(logits, lengths, true, 0);
      auto [kept, kept_scores] = ops::ctc_greedy_decode(logits, lengths, false, 6);
      auto [beam, beam_scores] = ops::ctc_beam_search_decode(logits, lengths, 8, 1, 2);
      return Outputs{ops::cast(greedy, DType::float32), greedy_scores, ops::cast(kept, DType::float32), kept_scores,
                     ops::cast(beam, DType::float32), beam_scores};
    });
  }
}

}  // namespace

// Full float32 products on the GPU: with TF32 (the runtime's default) a K = 17 product differs from the CPU's by
// more than the 2e-4 the comparison allows. TF32 is checked apart, with its own tolerance.
TEST(CrossBackend, EveryOpOnTheRealGpuMatchesTheCpu) {
  osprey::testing::reset_runtime();
  if (config::list_logical_devices("GPU").empty()) {
    GTEST_SKIP() << "no GPU: " << runtime::DeviceManager::get().gpu_availability().reason;
  }
  config::experimental::enable_tensor_float_32_execution(false);
  check_every_op();
  check_toolkit_ops();
  config::experimental::enable_tensor_float_32_execution(true);
}

// TF32 products (10-bit mantissas in the multiplications) stay within 1e-2 relative of the CPU's float32 ones.
TEST(CrossBackend, Tf32ProductsOnTheRealGpuStayCloseToTheCpu) {
  osprey::testing::reset_runtime();
  if (config::list_logical_devices("GPU").empty()) {
    GTEST_SKIP() << "no GPU: " << runtime::DeviceManager::get().gpu_availability().reason;
  }
  config::experimental::enable_tensor_float_32_execution(true);
  const Tensor a = host_uniform({64, 96}, -1, 1, 31), b = host_uniform({96, 40}, -1, 1, 32);
  const Tensor bias = host_uniform({40}, -1, 1, 33);
  expect_same("tf32 matmul and dense", [&] {
    return Outputs{ops::matmul(a, b), ops::dense(a, b, bias, ops::Activation::relu)};
  }, 1e-2);
}

TEST(CrossBackend, HarnessOnTheTestPlatform) {
  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(1), .missing_kernels = {}});
  check_every_op();
  check_toolkit_ops();
  osprey::testing::reset_runtime();
}

TEST(CrossBackend, BadInputsRaiseTheCpuErrorsOnTheGpu) {
  osprey::testing::reset_runtime();
  if (config::list_logical_devices("GPU").empty()) {
    GTEST_SKIP() << "no GPU: " << runtime::DeviceManager::get().gpu_availability().reason;
  }
  DeviceScope gpu("/GPU:0");
  Tensor probs = ops::softmax(random::uniform({4, 3}));
  Tensor labels = Tensor::from_vector<int64_t>({0, 1, 7, 2}, {4});
  EXPECT_THROW((void)ops::sparse_categorical_crossentropy(labels, probs), InvalidArgumentError);
  // A singular matrix's inverse (an exactly zero pivot: checked on the host after the GPU's LU).
  const Tensor singular = Tensor::from_vector(std::vector<float>{1, 2, 2, 4}, {2, 2});
  EXPECT_THROW((void)ops::matrix_inverse(singular), InvalidArgumentError);
  EXPECT_THROW((void)ops::matrix_solve(singular, Tensor::zeros({2, 1})), InvalidArgumentError);
  Tensor idx = Tensor::from_vector<int64_t>({0, 9}, {2});
  EXPECT_THROW((void)ops::gather_rows(probs, idx), InvalidArgumentError);
  EXPECT_THROW((void)ops::scatter_add_rows(probs, Tensor::from_vector<int64_t>({0, 1, 2, 12}, {4}), 5),
               InvalidArgumentError);
  EXPECT_THROW((void)ops::concat({probs, Tensor::ones({4, 3, 1})}, 1), InvalidArgumentError);
  EXPECT_THROW((void)ops::slice_axis(probs, 1, 2, 5), InvalidArgumentError);
  EXPECT_THROW((void)ops::matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 4, 5})), InvalidArgumentError);
  EXPECT_THROW((void)ops::masked_softmax(probs, Tensor::ones({4, 2})), InvalidArgumentError);
  EXPECT_THROW((void)ops::lstm_cell(Tensor::zeros({4, 10}), Tensor::zeros({4, 3})), InvalidArgumentError);
  EXPECT_THROW((void)ops::gru_cell(Tensor::zeros({4, 9}), Tensor::zeros({4, 6}), Tensor::zeros({4, 3})),
               InvalidArgumentError);
  const ops::ConvParams p{{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1};
  EXPECT_THROW((void)ops::conv(Tensor::zeros({1, 4, 4, 3}), Tensor::zeros({5, 5, 3, 2}), Tensor(), p),
               InvalidArgumentError);
  EXPECT_THROW((void)ops::pool(Tensor::zeros({1, 4, 4, 3}), {ops::PoolKind::max, {5, 1}, {1, 1}, {0, 0}, {0, 0}}),
               InvalidArgumentError);
  EXPECT_THROW((void)ops::add(probs, Tensor::ones({2, 3})), InvalidArgumentError);
  EXPECT_THROW((void)ops::reduce_axes(probs, ops::ReduceOp::sum, {2}), InvalidArgumentError);
  EXPECT_THROW((void)ops::top_k(probs, 4), InvalidArgumentError);
  EXPECT_THROW((void)ops::reduce_axes(Tensor::zeros({0, 3}), ops::ReduceOp::argmax, {0}), InvalidArgumentError);
  EXPECT_THROW((void)ops::sin(Tensor::zeros({2, 3}, DType::int32)), InvalidArgumentError);
  EXPECT_THROW((void)ops::irfft(probs, probs, 8), InvalidArgumentError);  // 3 bins are no transform of 8
  EXPECT_THROW((void)ops::fft(probs, ops::cast(probs, DType::float64)), InvalidArgumentError);
  // CTC: a label outside the classes, a length beyond the frames (the kernels' checks, on the device).
  const Tensor ctc_logits = random::uniform({2, 5, 3});
  const Tensor two = Tensor::from_vector<int32_t>({2, 2}, {2}), five = Tensor::from_vector<int32_t>({5, 5}, {2});
  EXPECT_THROW((void)ops::ctc_loss(Tensor::from_vector<int32_t>({1, 2, 1, 3}, {2, 2}), ctc_logits, two, five),
               InvalidArgumentError);
  EXPECT_THROW((void)ops::ctc_loss(Tensor::from_vector<int32_t>({1, 2, 1, 2}, {2, 2}), ctc_logits, two,
                                   Tensor::from_vector<int32_t>({5, 6}, {2})),
               InvalidArgumentError);
  EXPECT_THROW((void)ops::ctc_greedy_decode(ctc_logits, Tensor::from_vector<int32_t>({-1, 5}, {2})),
               InvalidArgumentError);
}
