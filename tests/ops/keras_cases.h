// The harness of the keras::ops reference tests (test_keras_ops.cpp, test_keras_linalg.cpp): each case of a JSON file
// written by tests/keras/ops_reference_common.py is run through its C++ spelling and compared: outputs (values,
// shape, dtype) and the gradients of sum(output · cotangent) with respect to its float inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "osprey/osprey.h"
#include "test_util.h"

namespace osprey::testing::keras_cases {

using json = nlohmann::json;
using Ts = std::vector<Tensor>;
using Cases = std::map<std::string, std::function<Ts(const Ts&)>>;

/// tests/data/<file>, parsed on first use.
inline const json& reference(const std::string& file) {
  static std::map<std::string, json> files;
  auto it = files.find(file);
  if (it == files.end()) {
    std::ifstream in(osprey::testing::data_file(file));
    it = files.emplace(file, json::parse(in)).first;
  }
  return it->second;
}

// A stored list of values: numbers, and "nan", "inf", "-inf" (which JSON cannot hold as numbers).
inline std::vector<double> numbers(const json& j) {
  std::vector<double> out;
  for (const auto& v : j) {
    if (!v.is_string()) out.push_back(v.get<double>());
    else if (v == "nan") out.push_back(NAN);
    else out.push_back(v == "inf" ? INFINITY : -INFINITY);
  }
  return out;
}

inline Tensor tensor_of(const json& j) {
  std::vector<int64_t> dims = j["shape"].get<std::vector<int64_t>>();
  const std::vector<double> values = numbers(j["values"]);
  return Tensor::from_vector(values, Shape(dims)).cast(dtype_from_name(j["dtype"].get<std::string>()));
}

inline bool is_float(DType t) { return t == DType::float32 || t == DType::float64; }

inline void expect_values(const std::string& what, const std::vector<double>& expected,
                          const std::vector<double>& got, double tol) {
  ASSERT_EQ(expected.size(), got.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(expected[i])) {  // NaN where NaN, the same infinity
      EXPECT_TRUE(std::isnan(expected[i]) ? std::isnan(got[i]) : got[i] == expected[i])
          << what << "[" << i << "]: expected " << expected[i] << ", got " << got[i];
      continue;
    }
    EXPECT_NEAR(got[i], expected[i], tol * std::max(1.0, std::abs(expected[i]))) << what << "[" << i << "]";
  }
}

/// Runs every case of `ref` (and checks that every C++ case is in it), values and gradients within `tol` relative.
inline void check_every_case(const json& r, const Cases& cases, double tol, const std::string& file) {
  std::set<std::string> seen;
  for (const auto& c : r["cases"]) {
    const std::string name = c["name"];
    seen.insert(name);
    SCOPED_TRACE(name);
    auto it = cases.find(name);
    ASSERT_NE(it, cases.end()) << "no C++ spelling of reference case " << name;
    Ts inputs;
    for (const auto& in : c["inputs"]) inputs.push_back(tensor_of(in));
    GradientTape tape;
    Ts watched;
    for (const auto& t : inputs) {
      if (is_float(t.dtype())) tape.watch(t), watched.push_back(t);
    }
    const Ts outs = it->second(inputs);
    ASSERT_EQ(outs.size(), c["outputs"].size());
    Tensor loss;
    for (std::size_t o = 0; o < outs.size(); ++o) {
      const json& e = c["outputs"][o];
      EXPECT_EQ(outs[o].shape(), Shape(e["shape"].get<std::vector<int64_t>>())) << "output " << o;
      EXPECT_EQ(dtype_name(outs[o].dtype()), e["dtype"].get<std::string>()) << "output " << o;
      expect_values(name + " output " + std::to_string(o), numbers(e["values"]),
                    outs[o].to_vector<double>(), tol);
      if (!is_float(outs[o].dtype())) continue;
      std::vector<float> cot(static_cast<std::size_t>(outs[o].num_elements()));
      for (std::size_t i = 0; i < cot.size(); ++i) cot[i] = static_cast<float>(std::cos(static_cast<double>(i)));
      // (in float32, as the reference script's tf.cast(r, tf.float32) * c)
      const Tensor out32 = outs[o].dtype() == DType::float32 ? outs[o] : ops::cast(outs[o], DType::float32);
      const Tensor term = ops::reduce_sum(ops::mul(out32, Tensor::from_vector(cot, outs[o].shape())));
      loss = loss.defined() ? ops::add(loss, term) : term;
    }
    if (!loss.defined()) continue;
    const Ts grads = tape.gradient(loss, watched);
    std::size_t w = 0;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (!is_float(inputs[k].dtype())) continue;
      const json& e = c["grads"][k];
      const Tensor& g = grads[w++];
      if (e.is_null()) {
        if (g.defined()) {
          EXPECT_EQ(ops::reduce_sum(ops::abs(g)).item(), 0.0) << "input " << k << ": Keras has no gradient";
        }
        continue;
      }
      ASSERT_TRUE(g.defined()) << "input " << k << " has no gradient; Keras has one";
      expect_values(name + " grad " + std::to_string(k), numbers(e), g.to_vector<double>(), tol);
    }
  }
  for (const auto& [name, fn] : cases) EXPECT_TRUE(seen.count(name)) << name << " is not in " << file;
}

}  // namespace osprey::testing::keras_cases
