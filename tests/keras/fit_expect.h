// Comparing a fit with a Keras reference script's record of the same fit: the logs of evaluate/train_on_batch,
// fit's history per epoch and the weights after, each with a relative tolerance.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "osprey/keras.h"

namespace osprey::testing {

/// |got - want| within rel · max(1, |want|).
inline void expect_near_rel(double got, double want, const std::string& what, double rel) {
  EXPECT_NEAR(got, want, rel * std::max(1.0, std::abs(want))) << what;
}

/// Every key of `want` (a name → number object) in `got` within 2e-5, and no other key.
inline void expect_logs(const std::map<std::string, double>& got, const nlohmann::json& want, const std::string& what) {
  for (const auto& [key, value] : want.items()) {
    ASSERT_TRUE(got.count(key)) << what << ": no " << key;
    expect_near_rel(got.at(key), value.get<double>(), what + " " + key, 2e-5);
  }
  EXPECT_EQ(got.size(), want.size()) << what;
}

/// The same for Logs: a key whose value is a list (a metric with one value per class) in got.arrays.
inline void expect_logs(const keras::Logs& got, const nlohmann::json& want, const std::string& what) {
  for (const auto& [key, value] : want.items()) {
    if (!value.is_array()) {
      ASSERT_TRUE(got.count(key)) << what << ": no " << key;
      expect_near_rel(got.at(key), value.get<double>(), what + " " + key, 2e-5);
      continue;
    }
    ASSERT_TRUE(got.arrays.count(key)) << what << ": no array " << key;
    const auto& values = got.arrays.at(key);
    ASSERT_EQ(values.size(), value.size()) << what << " " << key;
    for (std::size_t i = 0; i < values.size(); ++i) {
      expect_near_rel(values[i], value[i].get<double>(), what + " " + key + "[" + std::to_string(i) + "]", 2e-5);
    }
  }
  EXPECT_EQ(got.size() + got.arrays.size(), want.size()) << what;
}

/// fit's history against c["history"] (name → value per epoch) within 5e-5, the same keys; a key whose epochs are
/// lists (one value per class) is in h.arrays.
inline void expect_history(const keras::FitHistory& h, const nlohmann::json& c) {
  for (const auto& [key, values] : c.at("history").items()) {
    if (!values.empty() && values[0].is_array()) {
      ASSERT_TRUE(h.arrays.count(key)) << key;
      ASSERT_EQ(h.arrays.at(key).size(), values.size()) << key;
      for (std::size_t e = 0; e < values.size(); ++e) {
        ASSERT_EQ(h.arrays.at(key)[e].size(), values[e].size()) << key;
        for (std::size_t i = 0; i < values[e].size(); ++i) {
          expect_near_rel(h.arrays.at(key)[e][i], values[e][i].get<double>(),
                          "epoch " + std::to_string(e + 1) + " " + key + "[" + std::to_string(i) + "]", 5e-5);
        }
      }
      continue;
    }
    ASSERT_TRUE(h.history.count(key)) << key;
    ASSERT_EQ(h.history.at(key).size(), values.size()) << key;
    for (std::size_t e = 0; e < values.size(); ++e) {
      expect_near_rel(h.history.at(key)[e], values[e].get<double>(), "epoch " + std::to_string(e + 1) + " " + key,
                      5e-5);
    }
  }
  EXPECT_EQ(h.history.size() + h.arrays.size(), c.at("history").size());
}

/// The model's weights (get_weights() order, Keras's) against a list of nested lists, within 2e-4.
inline void expect_weights(keras::Model& m, const nlohmann::json& want) {
  const auto w = m.get_weights();
  ASSERT_EQ(w.size(), want.size());
  for (std::size_t i = 0; i < w.size(); ++i) expect_close(w[i], want[i], 2e-4, "weight " + std::to_string(i));
}

}  // namespace osprey::testing
