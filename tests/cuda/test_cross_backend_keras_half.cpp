// keras::ops built on the ops of test_cross_backend.cpp, and half precision (float16, bfloat16), on every GPU
// backend present against the CPU. On a machine without a GPU the real-GPU cases skip with the runtime's reason;
// the same checks run on the test platform's simulated GPU so that the harness itself is always exercised.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "cuda/cross_backend.h"
#include "osprey/autodiff.h"
#include "osprey/config.h"
#include "osprey/keras/ops.h"
#include "osprey/ops.h"
#include "runtime/device_manager.h"
#include "support/test_gpu_platform.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::testing::cross_backend;

namespace {

// keras::ops built from the ops above (pad in every mode, tile, repeat, arctan2, hypot, the nn functions and norms, convolution
// and pooling): placed on the GPU as a whole.
void check_composite_ops() {
  namespace ko = osprey::keras::ops;
  const Tensor a = host_uniform({4, 5}, -2, 2, 301), b = host_uniform({5}, -2, 2, 302);
  expect_same("pad, tile, repeat, arctan2, hypot", [&] {
    Variable va(a, "a"), vb(b, "b");
    GradientTape tape;
    Outputs ys{ko::pad(va.value(), {{1, 2}, {0, 3}}, "constant", 0.5), ko::pad(va.value(), {{2, 1}, {3, 1}}, "reflect"),
               ko::pad(va.value(), {{0, 4}, {5, 0}}, "symmetric"), ko::tile(va.value(), {2, 1, 3}),
               ko::repeat(va.value(), std::vector<int64_t>{2, 0, 1, 3}, 0), ko::arctan2(va.value(), vb.value()),
               ko::hypot(va.value(), vb.value())};
    // NumPy's modes (wider than the axis too), integers included.
    for (const char* mode : {"edge", "wrap", "maximum", "minimum", "mean", "median", "linear_ramp"}) {
      ys.push_back(ko::pad(va.value(), {{6, 2}, {1, 7}}, mode));
    }
    const Tensor ints = ko::cast(ko::multiply(va.value(), 3.0), DType::int32);
    for (const char* mode : {"mean", "median", "linear_ramp"}) ys.push_back(ko::pad(ints, {{2, 1}, {3, 2}}, mode));
    const Tensor total = sum_of_squares(Outputs(ys.begin(), ys.begin() + 14));
    auto g = tape.gradient(total, Vars{&va, &vb});
    ys.insert(ys.end(), g.begin(), g.end());
    return ys;
  });
  const Tensor b4 = host_uniform({4, 5}, -2, 2, 306);
  const Tensor labels = Tensor::from_vector<int32_t>({4, 0, 2, 1}, {4});
  expect_same("keras::ops nn functions, norms and cross-entropies", [&] {
    Variable va(a, "a");
    GradientTape tape;
    const Tensor x = va.value();
    Outputs ys{ko::softmax(x, 0),        ko::log_softmax(x),         ko::gelu(x),          ko::hard_silu(x),
               ko::elu(x, 0.5),          ko::leaky_relu(x, 0.1),     ko::normalize(x),     ko::normalize(x, 0, 1),
               ko::norm(x, 3.0, 1),      ko::norm(x, INFINITY, {0, 1}), ko::moments(x, {0})[1],
               ko::binary_crossentropy(ko::sigmoid(b4), x, true),
               ko::categorical_crossentropy(ko::softmax(b4), ko::sigmoid(x)),
               ko::sparse_categorical_crossentropy(labels, x, true)};
    const Tensor total = sum_of_squares(ys);
    ys.push_back(tape.gradient(total, Vars{&va})[0]);
    return ys;
  });
  expect_same("keras::ops erfinv, segment_prod, scatter_update max/min/mul, nextafter", [&] {
    Variable va(a, "a"), vb(b, "b");
    GradientTape tape;
    const Tensor ids = Tensor::from_vector<int32_t>({0, 2, 0, 3}, {4});
    const Tensor rows = Tensor::from_vector<int32_t>({1, 3, 1}, {3, 1});
    const Tensor updates = ko::reshape(ko::slice(va.value(), {0, 0}, {3, 5}), {3, 5});
    Outputs ys{ko::erfinv(ko::multiply(ko::tanh(va.value()), 0.999)), ko::segment_prod(va.value(), ids),
               ko::scatter_update(va.value(), rows, updates, "max"), ko::scatter_update(va.value(), rows, updates, "min"),
               ko::scatter_update(va.value(), rows, updates, "mul"), ko::multiply(vb.value(), 2.0),
               ko::cast(ko::nextafter(ko::cast(va.value(), DType::float64), ko::cast(vb.value(), DType::float64)),
                        DType::float32),
               osprey::ops::nextafter(va.value(), osprey::ops::broadcast_to(vb.value(), va.value().shape()))};
    const Tensor total = sum_of_squares(ys);
    auto g = tape.gradient(total, Vars{&va, &vb});
    ys.insert(ys.end(), g.begin(), g.end());
    return ys;
  });
  expect_same("keras::ops rearrangements and contractions", [&] {
    Variable va(a, "a"), vb(b, "b");
    GradientTape tape;
    const Tensor x = va.value();
    const Tensor with_nan = ko::where(ko::greater(x, 1.5), NAN, ko::where(ko::less(x, -1.5), -INFINITY, x));
    Outputs ys{ko::tril(x, 1),   ko::triu(x, -1),  ko::flip(x, 1),    ko::roll(x, 3),
               ko::tensordot(x, ko::outer(vb.value(), vb.value()), {1}, {0}), ko::dot(x, vb.value()),
               ko::diagonal(x, 1), ko::diag(vb.value(), -1), ko::nan_to_num(with_nan, 0.0, 5.0, -5.0),
               ko::moveaxis(ko::reshape(x, {2, 2, 5}), 0, -1), ko::logaddexp(x, vb.value()),
               ko::average(x, 1, vb.value()), ko::quantile(x, std::vector<double>{0.2, 0.7}, 1),
               ko::median(x, 0, true)};
    const Tensor total = sum_of_squares(ys);
    auto g = tape.gradient(total, Vars{&va, &vb});
    ys.insert(ys.end(), g.begin(), g.end());
    return ys;
  });
  // Session 21's ops (math_more.cpp, reduce_more.cpp, array_more.cpp), differentiable ones through the tape, the
  // counting ones (bincount reads its length on the host) as values.
  const Tensor ints = Tensor::from_vector<int32_t>({0, 3, 1, 3, 5}, {5});
  expect_same("keras::ops element-wise, NaN reductions, stacking and counting", [&] {
    Variable va(a, "a"), vb(b, "b");
    GradientTape tape;
    const Tensor x = va.value(), v = vb.value();
    const Tensor with_nan = ko::where(ko::greater(x, 1.5), NAN, x);
    Outputs ys{ko::cbrt(ko::add(x, 2.5)), ko::exp2(x),           ko::mod(x, 0.7),          ko::fmod(x, -0.7),
               ko::divide_no_nan(x, ko::trunc(x)), ko::sinc(x),  ko::logaddexp2(x, v),     ko::celu(x, 0.5),
               ko::glu(ko::reshape(x, {2, 10})), ko::soft_shrink(x), ko::log_sigmoid(x),   ko::squareplus(x),
               ko::rms_normalization(x, v),   ko::layer_normalization(x, v, v), ko::nanmean(with_nan, 1),
               ko::nanvar(with_nan, 0),       ko::nanmax(with_nan),  ko::ptp(x, 1),           ko::diff(x, 2),
               ko::trapezoid(x, std::nullopt, 0.5, 0), ko::append(x, v), ko::dstack({x, x}), ko::rot90(x, 3),
               ko::kron(v, x),               ko::cross(ko::slice(ko::ravel(x), {0}, {3}), ko::slice(v, {1}, {3})),
               ko::vander(v, 3),             ko::select({ko::less(x, 0.0)}, {ko::multiply(x, 3.0)}, 1.0)};
    const Tensor total = sum_of_squares(ys);
    auto g = tape.gradient(total, Vars{&va, &vb});
    ys.insert(ys.end(), g.begin(), g.end());
    const Tensor ids = ints.to(x.device_ref());
    for (const Tensor& t : {ko::bincount(ids, ko::cast(ids, DType::float32), 8), ko::digitize(x, v),
                            ko::searchsorted(ko::sort(v), x), ko::in_top_k(ko::slice(ids, {0}, {4}), x, 2),
                            ko::multi_hot(ko::reshape(ko::slice(ids, {0}, {4}), {2, 2}), 6), ko::isin(ids, ko::slice(ids, {1}, {2})),
                            ko::isclose(x, ko::add(x, 1e-6)), ko::signbit(ko::negative(x))}) {
      ys.push_back(ko::cast(t, DType::float32));
    }
    return ys;
  });
  // Session 22's (numpy_extra.cpp): NaN-aware maxima, scans and arg-reductions, the sparse activations.
  expect_same("keras::ops fmax/fmin, NaN scans and arg-reductions, sparse activations", [&] {
    Variable va(a, "a"), vb(b, "b");
    GradientTape tape;
    const Tensor x = va.value(), v = vb.value();
    const Tensor with_nan = ko::where(ko::greater(x, 1.2), NAN, x);
    Outputs ys{ko::fmax(with_nan, 0.25),          ko::fmin(x, ko::where(ko::less(x, -1.2), NAN, x)),
               ko::nancumsum(with_nan, 1),        ko::nancumprod(ko::multiply(with_nan, 0.5), 0),
               ko::sparse_sigmoid(ko::multiply(x, 1.5)), ko::sparsemax(x), ko::sparsemax(x, 0), ko::sparsemax(v),
               ko::depth_to_space(ko::reshape(x, {1, 4, 5, 1}), 2, "channels_first"),
               ko::space_to_depth(ko::reshape(x, {1, 5, 2, 2}), 2, "channels_first"), ko::corrcoef(x),
               ko::cdist(ko::reshape(x, {2, 5, 2}), ko::reshape(ko::add(x, 0.3), {2, 5, 2})), ko::extract_sequences(x, 2, 2),
               ko::histogram(ko::ravel(x), 3, std::pair{-1.0, 1.0})[0]};
    const Tensor total = sum_of_squares(ys);
    auto g = tape.gradient(total, Vars{&va, &vb});
    ys.insert(ys.end(), g.begin(), g.end());
    for (const Tensor& t : {ko::nanargmax(with_nan, 1), ko::nanargmin(with_nan, 0), ko::nanargmax(with_nan)}) {
      ys.push_back(ko::cast(t, DType::float32));
    }
    return ys;
  });
  // Segments, scatters, slice updates and the transposed convolution (scatter_ops.cpp, conv_ops.cpp).
  const Tensor seg = Tensor::from_vector<int32_t>({0, 2, 0, 1}, {4});
  const Tensor idx = Tensor::from_vector<int32_t>({0, 1, 3, 4, 0, 1}, {3, 2});
  const Tensor img2 = host_uniform({2, 4, 3, 2}, -1, 1, 307), kt = host_uniform({3, 3, 5, 2}, -1, 1, 308);
  expect_same("keras::ops segments, scatters and conv_transpose", [&] {
    Variable va(a, "a"), vi(img2, "img"), vk(kt, "k");
    GradientTape tape;
    const Tensor x = va.value();
    const Tensor ids = seg.to(x.device_ref()), at = idx.to(x.device_ref());
    Outputs ys{ko::segment_sum(x, ids),           ko::segment_max(x, ids, 4),
               ko::segment_min(x, ids),           ko::scatter(at, ko::slice(x, {0, 0}, {3, 5}), {4, 5, 5}),
               ko::scatter_update(x, ko::slice(at, {0, 0}, {3, 1}), ko::slice(x, {1, 0}, {3, 5})),
               ko::slice_update(x, {1, 2}, ko::slice(x, {0, 0}, {2, 3})),
               ko::conv_transpose(vi.value(), vk.value(), {2}, "same")};
    const Tensor total = sum_of_squares(ys);
    auto g = tape.gradient(total, Vars{&va, &vi, &vk});
    ys.insert(ys.end(), g.begin(), g.end());
    for (const Tensor& t : ko::nonzero(ko::greater(x, 0.5))) ys.push_back(ko::cast(t, DType::float32));
    for (const Tensor& t : ko::unique(ko::round(x), true, true)) ys.push_back(ko::cast(t, DType::float32));
    return ys;
  });
  const Tensor img = host_uniform({2, 3, 7, 6}, -1, 1, 303), k = host_uniform({3, 3, 3, 4}, -1, 1, 304);
  const Tensor dk = host_uniform({3, 3, 3, 2}, -1, 1, 305);
  expect_same("keras::ops convolutions and pooling (channels_first)", [&] {
    Variable vx(img, "x"), vk(k, "k"), vd(dk, "d");
    GradientTape tape;
    const Tensor x = vx.value();
    Outputs ys{ko::conv(x, vk.value(), {2}, "same", "channels_first"),
               ko::depthwise_conv(x, vd.value(), {1}, "same", "channels_first", {2}),
               ko::max_pool(x, {3}, std::vector<int64_t>{2}, "same", "channels_first"),
               ko::average_pool(x, {2, 3}, std::nullopt, "valid", "channels_first")};
    const Tensor total = sum_of_squares(ys);
    auto g = tape.gradient(total, Vars{&vx, &vk, &vd});
    ys.insert(ys.end(), g.begin(), g.end());
    return ys;
  });
}

// float16 and bfloat16 (mixed precision's compute types): the GPU's own half kernels (cuBLASLt and cuDNN on the
// tensor cores, activations, bias gradients, arithmetic) against the CPU (oneDNN's bfloat16, float32 copies for
// float16): equal up to a few roundings of the type, relative to each output's largest value.
void check_half_ops() {
  for (const DType half : {DType::float16, DType::bfloat16}) {
    const double tol = half == DType::float16 ? 1.0 / 64 : 1.0 / 16;
    const std::string name = half == DType::float16 ? "float16" : "bfloat16";
    auto h = [&](const Tensor& t) { return ops::cast(t, half); };
    auto f = [](const Tensor& t) { return ops::cast(t, DType::float32); };
    const Tensor a = host_uniform({33, 17}, -2, 2, 201), b = host_uniform({17, 9}, -1, 1, 202);
    const Tensor bias = host_uniform({9}, -1, 1, 203);
    for (const auto act : {ops::Activation::relu, ops::Activation::gelu, ops::Activation::softmax,
                           ops::Activation::sigmoid, ops::Activation::linear}) {
      expect_close_to_max(name + " dense " + ops::activation_name(act), [&] {
        Variable x(h(a), "x"), w(h(b), "w"), bv(h(bias), "b");
        GradientTape tape;
        Tensor y = ops::dense(x.value(), w.value(), bv.value(), act);
        EXPECT_EQ(y.dtype(), half);
        auto g = tape.gradient(ops::reduce_sum(ops::square(f(y))), Vars{&x, &w, &bv});
        return Outputs{f(y), f(g[0]), f(g[1]), f(g[2])};
      }, tol);
    }
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const Tensor x = host_uniform(ta ? Shape{3, 24, 8} : Shape{3, 8, 24}, -1, 1, 204);
        const Tensor y = host_uniform(tb ? Shape{3, 16, 24} : Shape{3, 24, 16}, -1, 1, 205);
        expect_close_to_max(fmt::format("{} batched matmul ta={} tb={}", name, ta, tb), [&] {
          Variable vx(h(x), "x"), vy(h(y), "y");
          GradientTape tape;
          Tensor c = ops::matmul(vx.value(), vy.value(), ta, tb);
          EXPECT_EQ(c.dtype(), half);
          auto g = tape.gradient(ops::reduce_sum(ops::square(f(c))), Vars{&vx, &vy});
          return Outputs{f(c), f(g[0]), f(g[1])};
        }, tol);
      }
    }
    expect_close_to_max(name + " activations and arithmetic", [&] {
      const Tensor t = host_uniform({4, 3, 6}, -2, 2, 206), r = host_uniform({3, 1}, 0.5, 2, 207);
      Variable v(h(t), "v");
      GradientTape tape;
      Outputs ys{ops::activation(v.value(), ops::Activation::tanh), ops::activation(v.value(), ops::Activation::softmax),
                 ops::activation(v.value(), ops::Activation::silu), ops::add(v.value(), h(r)),
                 ops::mul(v.value(), h(host_uniform({6}, -1, 1, 208))), ops::sub(v.value(), h(Tensor::scalar(0.5)))};
      for (auto& y : ys) y = f(y);
      const Tensor g = tape.gradient(sum_of_squares(ys), Vars{&v})[0];
      ys.push_back(f(g));
      return ys;
    }, tol);
    // Symmetric padding and strides, asymmetric padding (the explicitly padded input), groups.
    struct ConvCase {
      Shape x, k;
      ops::ConvParams p;
    };
    const std::vector<ConvCase> convs{
        {{2, 9, 7, 8}, {3, 3, 8, 16}, {{2, 1}, {1, 1}, {1, 1}, {1, 1}, 1}},
        {{2, 8, 8, 8}, {2, 2, 8, 8}, {{1, 1}, {1, 1}, {0, 0}, {1, 1}, 1}},
        {{3, 11, 8}, {3, 4, 8}, {{1}, {2}, {2}, {2}, 2}},
    };
    for (std::size_t c = 0; c < convs.size(); ++c) {
      const Tensor x = host_uniform(convs[c].x, -1, 1, 210 + c), k = host_uniform(convs[c].k, -0.5, 0.5, 220 + c);
      const Tensor cb = host_uniform({convs[c].k[-1]}, -1, 1, 230 + c);
      expect_close_to_max(fmt::format("{} conv case {}", name, c), [&] {
        Variable vx(h(x), "x"), vk(h(k), "k"), vb(h(cb), "b");
        GradientTape tape;
        Tensor y = ops::conv(vx.value(), vk.value(), vb.value(), convs[c].p);
        EXPECT_EQ(y.dtype(), half);
        auto g = tape.gradient(ops::reduce_sum(ops::square(f(y))), Vars{&vx, &vk, &vb});
        return Outputs{f(y), f(g[0]), f(g[1]), f(g[2])};
      }, tol);
    }
    // Distinct values, exact in both half types (k/128 - 1 for k < 256, shuffled): no two elements of a window tie
    // for its maximum, whose gradient would go to the first on one device and perhaps another on the other.
    auto distinct = [](const Shape& shape, unsigned seed) {
      std::vector<float> v(static_cast<std::size_t>(shape.num_elements()));
      for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k) / 128.f - 1.f;
      std::shuffle(v.begin(), v.end(), std::mt19937(seed));
      return Tensor::from_vector(v, shape);
    };
    for (auto kind : {ops::PoolKind::max, ops::PoolKind::average}) {
      const Tensor x2 = distinct({2, 7, 6, 3}, 240), x1 = distinct({2, 9, 4}, 241);
      expect_close_to_max(fmt::format("{} pool kind {}", name, int(kind)), [&] {
        Variable v2(h(x2), "a"), v1(h(x1), "b");
        GradientTape tape;
        const Tensor y2 = ops::pool(v2.value(), {kind, {3, 2}, {2, 2}, {1, 0}, {1, 1}});
        const Tensor y1 = ops::pool(v1.value(), {kind, {3}, {2}, {1}, {1}});
        EXPECT_EQ(y2.dtype(), half);
        auto g = tape.gradient(ops::add(ops::reduce_sum(ops::square(f(y2))), ops::reduce_sum(ops::square(f(y1)))),
                               Vars{&v2, &v1});
        return Outputs{f(y2), f(y1), f(g[0]), f(g[1])};
      }, tol);
    }
  }
}

}  // namespace

TEST(CrossBackendKerasAndHalf, OnTheRealGpuMatchTheCpu) {
  osprey::testing::reset_runtime();
  if (config::list_logical_devices("GPU").empty()) {
    GTEST_SKIP() << "no GPU: " << runtime::DeviceManager::get().gpu_availability().reason;
  }
  config::experimental::enable_tensor_float_32_execution(false);
  check_composite_ops();
  check_half_ops();
  config::experimental::enable_tensor_float_32_execution(true);
}

TEST(CrossBackendKerasAndHalf, HarnessOnTheTestPlatform) {
  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(1), .missing_kernels = {}});
  check_composite_ops();
  check_half_ops();
  osprey::testing::reset_runtime();
}
