// Reading the Keras reference values that tests/keras/*_reference.py store as JSON: nested lists as tensors, and
// comparisons with a relative tolerance.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "osprey/tensor.h"

namespace osprey::testing {

#ifdef OSPREY_TEST_DATA_DIR
/// The reference values in tests/data/`file` (a reference script's output), parsed.
inline nlohmann::json read_reference(const std::string& file) {
  std::ifstream in(std::string(OSPREY_TEST_DATA_DIR) + "/" + file);
  return nlohmann::json::parse(in);
}
#endif

/// A nested list of numbers as a tensor of its nesting's shape in `dtype` (read as doubles, so float64 references
/// keep their digits).
inline Tensor tensor_of(const nlohmann::json& j, DType dtype) {
  std::vector<int64_t> dims;
  for (const nlohmann::json* p = &j; p->is_array(); p = &(*p)[0]) {
    dims.push_back(static_cast<int64_t>(p->size()));
    if (p->empty()) break;
  }
  std::vector<double> values;
  std::function<void(const nlohmann::json&)> flat = [&](const nlohmann::json& v) {
    if (v.is_array()) {
      for (const auto& e : v) flat(e);
    } else {
      values.push_back(v.get<double>());
    }
  };
  flat(j);
  return Tensor::from_vector(values, Shape(dims)).cast(dtype);
}

/// The same in float32.
inline Tensor tensor_of(const nlohmann::json& j) { return tensor_of(j, DType::float32); }

/// Every value of `got` within tol · max(1, |want|) of the reference's.
inline void expect_close(const Tensor& got, const nlohmann::json& want, double tol, const std::string& what) {
  const auto e = tensor_of(want).to_vector<float>();
  const auto g = got.to_vector<float>();
  ASSERT_EQ(g.size(), e.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], e[i], tol * std::max(1.0, std::abs(static_cast<double>(e[i])))) << what << " [" << i << "]";
  }
}

}  // namespace osprey::testing
