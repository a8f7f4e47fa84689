// What the cross-backend tests share: running a function with every op placed on one device, comparing the CPU's
// outputs with the GPU's, and host-built inputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "osprey/autodiff.h"
#include "osprey/config.h"
#include "osprey/device.h"
#include "osprey/ops.h"
#include "osprey/random.h"
#include "osprey/tensor.h"

namespace osprey::testing::cross_backend {

using Outputs = std::vector<Tensor>;
using Vars = std::vector<Variable*>;

// Runs `f` with every op placed on `device` (soft placement off: nothing may silently fall back) and returns
// the outputs' host values, checking that they were computed there.
inline std::vector<std::vector<double>> run_on(const std::string& device, const std::function<Outputs()>& f) {
  config::set_soft_device_placement(false);
  DeviceScope on(device);
  std::vector<std::vector<double>> out;
  for (const auto& t : f()) {
    EXPECT_EQ(t.device().name, DeviceSpec::from_string(device).device_type == "GPU" ? "/device:GPU:0" : "/device:CPU:0");
    const Tensor h = t.to("CPU:0").cast(DType::float64);
    out.push_back(h.to_vector<double>());
  }
  config::set_soft_device_placement(true);
  return out;
}

inline void expect_same(const std::string& what, const std::function<Outputs()>& f, double rtol = 2e-4) {
  const auto cpu = run_on("/CPU:0", f);
  const auto gpu = run_on("/GPU:0", f);
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  for (size_t o = 0; o < cpu.size(); ++o) {
    ASSERT_EQ(cpu[o].size(), gpu[o].size()) << what << " output " << o;
    for (size_t i = 0; i < cpu[o].size(); ++i) {
      const double a = cpu[o][i], b = gpu[o][i];
      if (std::isnan(a)) {
        EXPECT_TRUE(std::isnan(b)) << what << " output " << o << "[" << i << "]";
        continue;
      }
      EXPECT_LE(std::abs(a - b), rtol * std::max(1.0, std::abs(a)))
          << what << " output " << o << "[" << i << "]: CPU " << a << ", GPU " << b;
    }
  }
}

// Half-precision results: the CPU and the GPU round at different points (a fused Dense against a product rounded
// before its activation; float16 through float32 copies on the CPU), and a sum of rounded terms can cancel to
// near zero, so each output is compared against its largest magnitude: max |cpu - gpu| <= tol · max(1, max |cpu|).
// A wrong layout, transpose or type read gives errors of the order of the values themselves.
inline void expect_close_to_max(const std::string& what, const std::function<Outputs()>& f, double tol) {
  const auto cpu = run_on("/CPU:0", f);
  const auto gpu = run_on("/GPU:0", f);
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  for (size_t o = 0; o < cpu.size(); ++o) {
    ASSERT_EQ(cpu[o].size(), gpu[o].size()) << what << " output " << o;
    double scale = 1.0, worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < cpu[o].size(); ++i) {
      scale = std::max(scale, std::abs(cpu[o][i]));
      const double d = std::abs(cpu[o][i] - gpu[o][i]);
      if (!(d <= worst)) worst = d, at = i;  // NaN counts as the worst
    }
    EXPECT_LE(worst, tol * scale) << what << " output " << o << "[" << at << "]: CPU " << cpu[o][at] << ", GPU "
                                  << gpu[o][at] << " (largest |CPU| value " << scale << ")";
  }
}

// Σ over the outputs of the sum of their squared elements: a scalar loss through every output, for gradients.
inline Tensor sum_of_squares(const Outputs& ys) {
  Tensor total;
  for (const Tensor& y : ys) {
    const Tensor term = ops::reduce_sum(ops::square(ops::reshape(y, {y.num_elements()})));
    total = total.defined() ? ops::add(total, term) : term;
  }
  return total;
}

// Host-built inputs (on the CPU), so both runs see identical values.
inline Tensor host_uniform(const Shape& shape, double lo, double hi, uint64_t seed) {
  random::set_seed(seed);
  DeviceScope cpu("/CPU:0");
  return random::uniform(shape, lo, hi);
}

inline Tensor host_labels(int64_t n, int classes, uint64_t seed, DType dtype) {
  random::set_seed(seed);
  DeviceScope cpu("/CPU:0");
  return random::randint(0, classes, {n}).cast(dtype);
}

}  // namespace osprey::testing::cross_backend
