// What the op tests share: host copies, closeness against a float64 reference, and gradients against central
// finite differences.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "osprey/autodiff.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::testing {

inline std::vector<double> host(const Tensor& t) { return t.to_vector<double>(); }

inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << "at " << i;
  }
}

// Checks d(Σ r ⊙ f(inputs)) / d input_k against central differences, for random r.
inline void check_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
                     double tol = 2e-2, double eps = 1e-3) {
  Tensor out = f(inputs);
  Tensor r = random::uniform(out.shape(), 0.5, 1.5);
  std::vector<Tensor> analytic;
  {
    GradientTape tape;
    for (auto& x : inputs) tape.watch(x);
    Tensor y = ops::reduce_sum(ops::mul(f(inputs), r));
    analytic = tape.gradient(y, inputs);
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    auto base = inputs[k].to_vector<float>();
    ASSERT_TRUE(analytic[k].defined()) << "input " << k << " got no gradient";
    auto a = host(analytic[k]);
    for (size_t i = 0; i < base.size(); ++i) {
      auto eval = [&](float delta) {
        auto v = base;
        v[i] += delta;
        auto in = inputs;
        in[k] = Tensor::from_vector(v, inputs[k].shape());
        return ops::reduce_sum(ops::mul(f(in), r)).item();
      };
      const double numeric = (eval(static_cast<float>(eps)) - eval(static_cast<float>(-eps))) / (2 * eps);
      EXPECT_NEAR(a[i], numeric, tol * (1.0 + std::abs(numeric))) << "input " << k << " element " << i;
    }
  }
}

}  // namespace osprey::testing
