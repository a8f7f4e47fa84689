// Mixed precision against real Keras 3 (tests/keras/keras_mixed_precision_reference.py wrote
// tests/data/keras_mixed_precision.json and keras_files/mixed_bf16.keras): float16/bfloat16 rounding, dtype
// policies, an MLP under mixed_bfloat16 (outputs, loss, gradients, one SGD step) and mixed_float16 (outputs), a
// Keras-saved mixed_bfloat16 model; the bfloat16 product and ops computed in float32 for half tensors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/mixed_precision.h"
#include "osprey/ops.h"
#include "osprey/random.h"
#include "policy_scope.h"
#include "test_util.h"

using namespace osprey;
namespace mp = osprey::keras::mixed_precision;
using osprey::testing::PolicyScope;
using json = nlohmann::json;

namespace {

const json& mixed_precision_ref() {
  static const json j = [] {
    std::ifstream in(osprey::testing::data_file("keras_mixed_precision.json"));
    return json::parse(in);
  }();
  return j;
}

// A number, or "inf"/"-inf" (JSON has no infinities).
double number(const json& v) {
  if (v.is_string()) return v.get<std::string>() == "inf" ? INFINITY : -INFINITY;
  return v.is_null() ? NAN : v.get<double>();
}

// A nested JSON array of numbers as a float32 tensor.
Tensor tensor_of(const json& j) {
  std::vector<int64_t> dims;
  for (const json* p = &j; p->is_array(); p = &(*p)[0]) dims.push_back(static_cast<int64_t>(p->size()));
  std::vector<float> flat;
  std::function<void(const json&)> walk = [&](const json& v) {
    if (v.is_array()) {
      for (const auto& e : v) walk(e);
    } else {
      flat.push_back(static_cast<float>(number(v)));
    }
  };
  walk(j);
  return Tensor::from_vector(flat, Shape(dims));
}

std::vector<double> flat_of(const json& j) {
  std::vector<double> out;
  std::function<void(const json&)> walk = [&](const json& v) {
    if (v.is_array()) {
      for (const auto& e : v) walk(e);
    } else {
      out.push_back(number(v));
    }
  };
  walk(j);
  return out;
}

void expect_close(const std::string& what, const std::vector<double>& expected, const std::vector<double>& got,
                  double atol, double rtol) {
  ASSERT_EQ(expected.size(), got.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], atol + rtol * std::abs(expected[i])) << what << "[" << i << "]";
  }
}

std::shared_ptr<keras::Sequential> make_mlp() {
  return std::make_shared<keras::Sequential>(
      std::vector<keras::LayerRef>{keras::layers::Input({8}), keras::layers::Dense(16, "relu", {.name = "hidden"}),
                                   keras::layers::Dense(4, "softmax", {.name = "probs"})},
      "mlp");
}

std::vector<Tensor> reference_weights() {
  std::vector<Tensor> w;
  for (const auto& v : mixed_precision_ref()["weights"]) w.push_back(tensor_of(v));
  return w;
}


}  // namespace

TEST(MixedPrecision, HalfRoundingMatchesTensorFlow) {
  const auto& c = mixed_precision_ref()["casts"];
  const Tensor x = tensor_of(c["x"]);
  for (const auto& [name, dtype] : {std::pair{"bfloat16", DType::bfloat16}, {"float16", DType::float16}}) {
    const Tensor h = ops::cast(x, dtype);
    EXPECT_EQ(h.dtype(), dtype);
    EXPECT_EQ(h.nbytes(), x.num_elements() * 2);
    const std::vector<float> back = ops::cast(h, DType::float32).to_vector<float>();
    const std::vector<double> want = flat_of(c[name]);
    for (std::size_t i = 0; i < back.size(); ++i) {
      EXPECT_EQ(static_cast<double>(back[i]), want[i]) << name << " of " << x.to_vector<float>()[i];
    }
  }
  // NaN stays NaN; integers and bool go through float.
  EXPECT_TRUE(std::isnan(ops::cast(ops::cast(Tensor::scalar(NAN), DType::bfloat16), DType::float32).item()));
  EXPECT_EQ(ops::cast(Tensor::from_vector<int32_t>({7, -300}, {2}), DType::float16).to_vector<float>(),
            (std::vector<float>{7.f, -300.f}));
  EXPECT_EQ(ops::cast(Tensor::scalar(2.75, DType::bfloat16), DType::int32).item(), 2.0);
  EXPECT_EQ(Tensor::full({2}, 0.1, DType::bfloat16).to_vector<float>()[0], 0.10009765625f);
}

TEST(MixedPrecision, PoliciesAsKeras) {
  const mp::DTypePolicy mixed("mixed_bfloat16");
  EXPECT_EQ(mixed.compute_dtype(), DType::bfloat16);
  EXPECT_EQ(mixed.variable_dtype(), DType::float32);
  EXPECT_EQ(mp::DTypePolicy("mixed_float16").compute_dtype(), DType::float16);
  EXPECT_EQ(mp::DTypePolicy("float64").variable_dtype(), DType::float64);
  try {
    mp::set_global_policy("mixed_int8");
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("mixed_int8"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("mixed_bfloat16"));
  }
  EXPECT_EQ(mp::global_policy().name(), "float32");
  PolicyScope scope("mixed_bfloat16");
  keras::layers::Dense dense(4);
  EXPECT_EQ(dense.dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(dense.compute_dtype(), DType::bfloat16);
  EXPECT_EQ(dense.variable_dtype(), DType::float32);
  const Tensor y = dense(random::uniform({3, 5}));
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  EXPECT_EQ(dense.kernel()->value().dtype(), DType::float32);
  // A layer without half kernels computes in float32 under the policy.
  keras::layers::Dense mish(4, "mish");
  EXPECT_EQ(mish.compute_dtype(), DType::float32);
  EXPECT_EQ(mish(random::uniform({3, 5})).dtype(), DType::float32);
}

TEST(MixedPrecision, Bfloat16ProductsRoundTheFloat32ProductOfTheRoundedOperands) {
  random::set_seed(3);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor a = ops::cast(random::uniform(ta ? Shape{50, 37} : Shape{37, 50}, -1, 1), DType::bfloat16);
      const Tensor b = ops::cast(random::uniform(tb ? Shape{23, 50} : Shape{50, 23}, -1, 1), DType::bfloat16);
      const Tensor p = ops::matmul(a, b, ta, tb);
      EXPECT_EQ(p.dtype(), DType::bfloat16);
      const auto exact = ops::matmul(ops::cast(a, DType::float32), ops::cast(b, DType::float32), ta, tb).to_vector<float>();
      const auto got = ops::cast(p, DType::float32).to_vector<float>();
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], exact[i], 1e-5 + std::abs(exact[i]) * (1.0 / 256)) << "ta=" << ta << " tb=" << tb << " " << i;
      }
    }
  }
  const Tensor a3 = ops::cast(random::uniform({3, 4, 6}), DType::bfloat16), b3 = ops::cast(random::uniform({3, 6, 5}), DType::bfloat16);
  const auto got = ops::cast(ops::matmul(a3, b3), DType::float32).to_vector<float>();
  const auto exact = ops::matmul(ops::cast(a3, DType::float32), ops::cast(b3, DType::float32)).to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], exact[i], 1e-5 + std::abs(exact[i]) / 256);
  EXPECT_THROW((void)ops::matmul(a3, ops::cast(b3, DType::float32)), InvalidArgumentError);
}

// A bfloat16 Dense (forward and backward in one op each, on the CPU without float32 copies of its tensors) is the
// float32 Dense of the same rounded operands, rounded: within a bfloat16 rounding of the outputs and gradients
// (the activation's gradient is rounded to bfloat16 before the products, as TensorFlow's is).
TEST(MixedPrecision, Bfloat16DenseIsTheFloat32DenseRounded) {
  using A = ops::Activation;
  random::set_seed(8);
  // Within `rel` of each value, or of the largest one (sums whose terms cancel: their rounding is the terms').
  auto close = [](const Tensor& got, const Tensor& want, double rel, double rel_of_largest, const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    const auto g = ops::cast(got, DType::float32).to_vector<float>(), w = want.to_vector<float>();
    double largest = 0;
    for (float v : w) largest = std::max(largest, static_cast<double>(std::abs(v)));
    for (std::size_t i = 0; i < g.size(); ++i) {
      ASSERT_NEAR(g[i], w[i], 1e-6 + std::max(rel * std::abs(w[i]), rel_of_largest * largest)) << what << " " << i;
    }
  };
  for (const A act : {A::linear, A::relu, A::tanh, A::gelu, A::softmax, A::softplus}) {
    for (const bool with_bias : {true, false}) {
      const std::string what = ops::activation_name(act) + (with_bias ? " with bias" : " without bias");
      const Tensor x = ops::cast(random::uniform({33, 40}, -1, 1), DType::bfloat16);
      const Tensor w = ops::cast(random::uniform({40, 24}, -0.5, 0.5), DType::bfloat16);
      const Tensor b = with_bias ? ops::cast(random::uniform({24}, -0.5, 0.5), DType::bfloat16) : Tensor();
      const Tensor cot = random::uniform({33, 24}, -1, 1);  // the loss is sum(y · cot)
      std::vector<Tensor> half_grads, exact_grads;
      Tensor y, y_exact;
      {
        GradientTape tape;
        for (const auto& t : {x, w, b}) if (t.defined()) tape.watch(t);
        y = ops::dense(x, w, b, act);
        half_grads = tape.gradient(ops::reduce_sum(ops::mul(ops::cast(y, DType::float32), cot)),
                                   with_bias ? std::vector<Tensor>{x, w, b} : std::vector<Tensor>{x, w});
      }
      const Tensor xf = ops::cast(x, DType::float32), wf = ops::cast(w, DType::float32);
      const Tensor bf = with_bias ? ops::cast(b, DType::float32) : Tensor();
      {
        GradientTape tape;
        for (const auto& t : {xf, wf, bf}) if (t.defined()) tape.watch(t);
        y_exact = ops::dense(xf, wf, bf, act);
        exact_grads = tape.gradient(ops::reduce_sum(ops::mul(y_exact, cot)),
                                    with_bias ? std::vector<Tensor>{xf, wf, bf} : std::vector<Tensor>{xf, wf});
      }
      EXPECT_EQ(y.dtype(), DType::bfloat16) << what;
      close(y, y_exact, 1.0 / 128, 1.0 / 1024, what + ": y");
      ASSERT_EQ(half_grads.size(), exact_grads.size());
      for (std::size_t i = 0; i < half_grads.size(); ++i) {
        EXPECT_EQ(half_grads[i].dtype(), DType::bfloat16) << what;
        close(half_grads[i], exact_grads[i], 1.0 / 64, 1.0 / 64, what + ": gradient " + std::to_string(i));
      }
    }
  }
}

// A bfloat16 convolution (oneDNN's bfloat16 primitives, forward and both backward ones) is the float32 one of the
// same rounded operands, rounded: plain with bias and strides, grouped (depthwise), and 1-D.
TEST(MixedPrecision, Bfloat16ConvolutionIsTheFloat32ConvolutionRounded) {
  random::set_seed(9);
  struct Case {
    std::string name;
    Shape x, k;
    ops::ConvParams p;
  };
  const std::vector<Case> cases = {
      {"2-D, stride 2, padded", {4, 9, 9, 6}, {3, 3, 6, 8}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 1}},
      {"2-D depthwise", {3, 7, 7, 6}, {3, 3, 1, 6}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 6}},
      {"1-D dilated", {5, 20, 4}, {3, 4, 7}, {{1}, {2}, {2}, {2}, 1}},
  };
  for (const auto& c : cases) {
    const Tensor x = ops::cast(random::uniform(c.x, -1, 1), DType::bfloat16);
    const Tensor k = ops::cast(random::uniform(c.k, -0.5, 0.5), DType::bfloat16);
    const Tensor b = ops::cast(random::uniform({c.k[-1]}, -0.5, 0.5), DType::bfloat16);
    std::vector<Tensor> half_grads, exact_grads;
    Tensor y, y_exact, cot;
    {
      GradientTape tape;
      for (const auto& t : {x, k, b}) tape.watch(t);
      y = ops::conv(x, k, b, c.p);
      cot = random::uniform(y.shape(), -1, 1);
      half_grads = tape.gradient(ops::reduce_sum(ops::mul(ops::cast(y, DType::float32), cot)), {x, k, b});
    }
    const Tensor xf = ops::cast(x, DType::float32), kf = ops::cast(k, DType::float32), bf = ops::cast(b, DType::float32);
    {
      GradientTape tape;
      for (const auto& t : {xf, kf, bf}) tape.watch(t);
      y_exact = ops::conv(xf, kf, bf, c.p);
      exact_grads = tape.gradient(ops::reduce_sum(ops::mul(y_exact, cot)), {xf, kf, bf});
    }
    EXPECT_EQ(y.dtype(), DType::bfloat16) << c.name;
    std::vector<Tensor> got{y}, want{y_exact};
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(half_grads[i].dtype(), DType::bfloat16) << c.name << " gradient " << i;  // the sources' dtype
      got.push_back(half_grads[i]);
      want.push_back(exact_grads[i]);
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      const auto g = ops::cast(got[i], DType::float32).to_vector<float>(), w = want[i].to_vector<float>();
      ASSERT_EQ(g.size(), w.size());
      double largest = 0;
      for (float v : w) largest = std::max(largest, static_cast<double>(std::abs(v)));
      for (std::size_t j = 0; j < g.size(); ++j) {
        ASSERT_NEAR(g[j], w[j], 1e-6 + std::max(std::abs(w[j]) / 64.0, largest / 64.0)) << c.name << " output " << i
                                                                                          << " [" << j << "]";
      }
    }
  }
}

// bfloat16 max and average pooling (oneDNN's bfloat16 primitives, forward and backward) are float32's on the same
// values, rounded: a maximum exactly, an average and the gradients within a rounding.
TEST(MixedPrecision, Bfloat16PoolingIsTheFloat32PoolingRounded) {
  random::set_seed(12);
  for (const auto kind : {ops::PoolKind::max, ops::PoolKind::average}) {
    const ops::PoolParams p{kind, {3, 3}, {2, 2}, {1, 1}, {1, 1}};
    const Tensor x = ops::cast(random::uniform({3, 11, 9, 5}, -2, 2), DType::bfloat16);
    const Tensor xf = ops::cast(x, DType::float32);
    Tensor y, g, gf;
    Tensor cot;
    {
      GradientTape tape;
      tape.watch(x);
      y = ops::pool(x, p);
      cot = random::uniform(y.shape(), -1, 1);
      g = tape.gradient(ops::reduce_sum(ops::mul(ops::cast(y, DType::float32), cot)), {x})[0];
    }
    {
      GradientTape tape;
      tape.watch(xf);
      gf = tape.gradient(ops::reduce_sum(ops::mul(ops::pool(xf, p), cot)), {xf})[0];
    }
    const auto want = ops::pool(xf, p).to_vector<float>(), got = ops::cast(y, DType::float32).to_vector<float>();
    ASSERT_EQ(y.dtype(), DType::bfloat16);
    ASSERT_EQ(g.dtype(), DType::bfloat16);
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (kind == ops::PoolKind::max) ASSERT_EQ(got[i], want[i]) << i;
      else ASSERT_NEAR(got[i], want[i], 1e-6 + std::abs(want[i]) / 128) << i;
    }
    const auto gg = ops::cast(g, DType::float32).to_vector<float>(), gw = gf.to_vector<float>();
    for (std::size_t i = 0; i < gg.size(); ++i) ASSERT_NEAR(gg[i], gw[i], 1e-6 + std::abs(gw[i]) / 64 + 1.0 / 128) << i;
  }
}

// Activations of bfloat16 tensors (computed in float32 a block at a time; softmax a row at a time) equal the
// float32 activation of the same values, rounded; their gradients are within bfloat16's rounding of float32's.
TEST(MixedPrecision, Bfloat16ActivationsAreTheFloat32OnesRounded) {
  using A = ops::Activation;
  random::set_seed(10);
  for (const A act : {A::relu, A::tanh, A::sigmoid, A::gelu, A::softmax, A::elu, A::silu}) {
    const std::string what = ops::activation_name(act);
    const Tensor x = ops::cast(random::uniform({37, 300}, -3, 3), DType::bfloat16);  // several blocks per thread
    const Tensor xf = ops::cast(x, DType::float32);
    const Tensor cot = random::uniform({37, 300}, -1, 1);
    Tensor y, g, gf;
    {
      GradientTape tape;
      tape.watch(x);
      y = ops::activation(x, act);
      g = tape.gradient(ops::reduce_sum(ops::mul(ops::cast(y, DType::float32), cot)), {x})[0];
    }
    {
      GradientTape tape;
      tape.watch(xf);
      gf = tape.gradient(ops::reduce_sum(ops::mul(ops::activation(xf, act), cot)), {xf})[0];
    }
    EXPECT_EQ(y.dtype(), DType::bfloat16) << what;
    EXPECT_EQ(ops::cast(y, DType::float32).to_vector<float>(),
              ops::cast(ops::cast(ops::activation(xf, act), DType::bfloat16), DType::float32).to_vector<float>())
        << what;
    ASSERT_EQ(g.dtype(), DType::bfloat16) << what;
    const auto got = ops::cast(g, DType::float32).to_vector<float>(), want = gf.to_vector<float>();
    double largest = 0;
    for (float v : want) largest = std::max(largest, static_cast<double>(std::abs(v)));
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-6 + std::max(std::abs(want[i]) / 32.0, largest / 128.0)) << what << " " << i;
    }
  }
}

TEST(MixedPrecision, OpsWithoutHalfKernelsComputeInFloat32AndRound) {
  random::set_seed(4);
  const Tensor x = ops::cast(random::uniform({5, 7}, -2, 2), DType::bfloat16);
  const Tensor xf = ops::cast(x, DType::float32);
  const Tensor y = ops::activation(ops::mul(x, x), ops::Activation::tanh);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  const Tensor want = ops::cast(ops::activation(ops::cast(ops::mul(xf, xf), DType::bfloat16), ops::Activation::tanh),
                                DType::bfloat16);
  EXPECT_EQ(ops::cast(y, DType::float32).to_vector<float>(), ops::cast(want, DType::float32).to_vector<float>());
  // Gradients flow back through the casts to a float32 variable, as float32.
  Variable v(random::uniform({5, 7}), "v");
  GradientTape tape;
  const Tensor h = ops::cast(v.value(), DType::float16);
  const Tensor loss = ops::reduce_sum(ops::cast(ops::square(h), DType::float32));
  const auto g = tape.gradient(loss, std::vector<Variable*>{&v});
  ASSERT_TRUE(g[0].defined());
  EXPECT_EQ(g[0].dtype(), DType::float32);
  const auto gv = g[0].to_vector<float>(), vv = v.value().to_vector<float>();
  for (std::size_t i = 0; i < gv.size(); ++i) EXPECT_NEAR(gv[i], 2 * vv[i], 2e-3 * (1 + std::abs(vv[i])));
  // Optimizer updates need float32 variables.
  Tensor w = ops::cast(random::uniform({3}), DType::bfloat16);
  EXPECT_THROW(ops::apply_sgd(w, w, nullptr, 0.1, 0.0, false), InvalidArgumentError);
}

TEST(MixedPrecision, MixedBfloat16MlpMatchesKeras) {
  const auto& r = mixed_precision_ref()["mixed_bfloat16"];
  PolicyScope scope("mixed_bfloat16");
  auto model = make_mlp();
  model->set_weights(reference_weights());
  const auto layers = model->layers();
  ASSERT_EQ(layers.size(), r["layers"].size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& want = r["layers"][i];
    const auto& layer = layers[i];
    EXPECT_EQ(layer->name(), want["name"].get<std::string>());
    EXPECT_EQ(dtype_name(layer->compute_dtype()), want["compute_dtype"].get<std::string>());
    EXPECT_EQ(dtype_name(layer->variable_dtype()), want["variable_dtype"].get<std::string>());
  }
  const Tensor x = tensor_of(mixed_precision_ref()["x"]);
  const Tensor y = Tensor::from_vector(mixed_precision_ref()["y"].get<std::vector<int32_t>>(), {6});
  // The layers' output is bfloat16; predict() gives it as float32 (as Keras's losses see it).
  EXPECT_EQ((*model)(x).dtype(), DType::bfloat16);
  expect_close("predict", flat_of(r["predict"]), model->predict(x, {.verbose = 0}).to_vector<double>(), 4e-3, 1e-2);
  // The loss and the float32 gradients of the variables.
  keras::losses::SparseCategoricalCrossentropy loss_fn;
  GradientTape tape;
  const Tensor out = ops::cast((*model)(x, true), DType::float32);
  const Tensor loss = loss_fn(y, out);
  EXPECT_NEAR(loss.item(), r["loss"].get<double>(), 1e-2);
  const auto grads = tape.gradient(loss, model->trainable_variables());
  ASSERT_EQ(grads.size(), r["grads"].size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    EXPECT_EQ(dtype_name(grads[i].dtype()), r["grad_dtypes"][i].get<std::string>());
    expect_close("grad " + std::to_string(i), flat_of(r["grads"][i]), grads[i].to_vector<double>(), 4e-3, 3e-2);
  }
  // One SGD step through compile/train_on_batch updates the float32 variables as Keras's.
  model->compile({.optimizer = keras::optimizers::SGD({.learning_rate = 0.1}), .loss = "sparse_categorical_crossentropy"});
  model->train_on_batch(x, y);
  const auto after = model->get_weights();
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].dtype(), DType::float32);
    expect_close("after step " + std::to_string(i), flat_of(r["after_sgd_step"][i]), after[i].to_vector<double>(), 1e-3,
                 1e-3);
  }
}

TEST(MixedPrecision, MixedFloat16OutputsMatchKeras) {
  const auto& r = mixed_precision_ref()["mixed_float16"];
  PolicyScope scope("mixed_float16");
  auto model = make_mlp();
  model->set_weights(reference_weights());
  EXPECT_EQ(model->layers()[0]->compute_dtype(), DType::float16);
  const Tensor x = tensor_of(mixed_precision_ref()["x"]);
  EXPECT_EQ((*model)(x).dtype(), DType::float16);
  expect_close("predict", flat_of(r["predict"]), model->predict(x, {.verbose = 0}).to_vector<double>(), 1e-3, 2e-3);
  // compile() turns dynamic loss scaling on, and the model trains (test_loss_scale.cpp follows Keras's steps).
  model->compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  ASSERT_NE(model->optimizer()->loss_scale(), nullptr);
  const auto before = model->get_weights();
  const Tensor y = Tensor::from_vector(mixed_precision_ref()["y"].get<std::vector<int32_t>>(), {6});
  model->train_on_batch(x, y);
  EXPECT_NE(model->get_weights()[0].to_vector<float>(), before[0].to_vector<float>());
  EXPECT_EQ(model->evaluate(x, y, {.verbose = 0}).size(), 1u);
}

TEST(MixedPrecision, KerasSavedMixedBfloat16ModelLoadsWithItsPolicy) {
  SKIP_WITHOUT_HDF5();
  auto model = keras::models::load_model(osprey::testing::data_file("keras_files/mixed_bf16.keras"));
  EXPECT_EQ(mp::global_policy().name(), "float32");  // loading leaves the global policy alone
  for (const auto& layer : model->layers()) EXPECT_EQ(layer->dtype_policy().name(), "mixed_bfloat16") << layer->name();
  const Tensor x = tensor_of(mixed_precision_ref()["x"]);
  expect_close("loaded predict", flat_of(mixed_precision_ref()["mixed_bfloat16"]["predict"]), model->predict(x, {.verbose = 0}).to_vector<double>(),
               4e-3, 1e-2);
  EXPECT_THAT(model->to_json(), ::testing::HasSubstr("\"mixed_bfloat16\""));
  // For tests/keras/keras_load_osprey_mixed.py: Osprey's file of it, and Osprey's predictions, for Keras to load.
  if (const char* out = std::getenv("OSPREY_KERAS_FILES_OUT")) {
    model->save(std::string(out) + "/mixed_bf16.keras");
    std::ofstream(std::string(out) + "/mixed_bf16.json")
        << json{{"predict", model->predict(x, {.verbose = 0}).to_vector<double>()}}.dump();
  }
}

// Training under mixed_bfloat16 (recorded steps, both intra-op threads) learns what float32 learns.
TEST(MixedPrecision, FitUnderMixedBfloat16Learns) {
  random::set_seed(11);
  const Tensor x = random::uniform({256, 8}, -1, 1);
  const Tensor y = ops::cast(ops::greater_equal(ops::reduce_sum(x, 1), Tensor::scalar(0.0)), DType::float32).reshape({256, 1});
  double final_loss[2];
  for (int mixed = 0; mixed < 2; ++mixed) {
    PolicyScope scope(mixed ? "mixed_bfloat16" : "float32");
    random::set_seed(12);
    keras::Sequential model({keras::layers::Input({8}), keras::layers::Dense(16, "relu"), keras::layers::Dense(1, "sigmoid")});
    model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
    auto h = model.fit(x, y, {.epochs = 100, .batch_size = 32, .verbose = 0});
    final_loss[mixed] = h.history["loss"].back();
    EXPECT_LT(h.history["loss"].back(), 0.5 * h.history["loss"].front()) << (mixed ? "mixed_bfloat16" : "float32");
    EXPECT_GT(h.history["accuracy"].back(), 0.9);
  }
  EXPECT_NEAR(final_loss[1], final_loss[0], 0.05);
}
