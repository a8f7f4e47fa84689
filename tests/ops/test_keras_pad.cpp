// keras::ops::pad's NumPy modes against real Keras 3 on its JAX backend (tests/keras/keras_pad_reference.py wrote
// tests/data/keras_pad.json: TensorFlow's backend has only constant, reflect and symmetric, whose cases are in
// keras_ops.json): values and gradients of every case; then the typed errors of bad arguments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>


// keras/ops.h first, then the whole API (see test_keras_ops.cpp).
#include "osprey/keras/ops.h"
#include "osprey/osprey.h"
#include "keras_cases.h"
#include "test_util.h"

using namespace osprey;
namespace ko = osprey::keras::ops;
using Ts = std::vector<Tensor>;
namespace keras_cases = osprey::testing::keras_cases;

namespace {

const nlohmann::json& keras_pad_ref() { return keras_cases::reference("keras_pad.json"); }

using Widths = std::vector<std::pair<int64_t, int64_t>>;

std::function<Ts(const Ts&)> p(const std::string& mode, const Widths& widths) {
  return [=](const Ts& i) { return Ts{ko::pad(i[0], widths, mode)}; };
}

// The C++ spelling of each reference case (same names as keras_pad_reference.py).
const keras_cases::Cases& cases() {
  static const keras_cases::Cases m = {
      {"pad_edge", p("edge", {{2, 1}, {0, 3}})},
      {"pad_wrap", p("wrap", {{1, 2}, {3, 1}, {0, 0}})},
      {"pad_maximum", p("maximum", {{1, 2}, {2, 1}})},
      {"pad_minimum", p("minimum", {{0, 2}, {1, 1}, {2, 0}})},
      {"pad_mean", p("mean", {{2, 1}, {1, 2}})},
      {"pad_median_odd_even", p("median", {{1, 1}, {2, 1}})},
      {"pad_linear_ramp", p("linear_ramp", {{3, 2}, {1, 4}})},
      {"pad_empty", p("empty", {{1, 0}, {2, 2}})},
      {"pad_reflect_wide", p("reflect", {{7, 9}, {2, 5}})},
      {"pad_symmetric_wide", p("symmetric", {{5, 8}})},
      {"pad_wrap_wide", p("wrap", {{0, 0}, {9, 7}})},
      {"pad_edge_single", p("edge", {{3, 2}, {1, 1}})},
      {"pad_reflect_single", p("reflect", {{2, 3}})},
      {"pad_int_mean", p("mean", {{2, 1}, {3, 2}})},
      {"pad_int_median", p("median", {{1, 2}, {2, 1}})},
      {"pad_int_ramp", p("linear_ramp", {{2, 1}, {3, 2}})},
      {"pad_int_modes",
       [](const Ts& i) {
         Ts out;
         for (const char* m : {"edge", "wrap", "maximum", "minimum", "reflect", "symmetric"}) {
           out.push_back(ko::pad(i[0], {{1, 2}, {3, 1}}, m));
         }
         return out;
       }},
  };
  return m;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(KerasPad, EveryModeMatchesKerasOnJax) { keras_cases::check_every_case(keras_pad_ref(), cases(), 2e-5, "keras_pad.json"); }

TEST(KerasPad, RefusesBadArguments) {
  const Tensor x = Tensor::ones({3, 2});
  EXPECT_THROW((void)ko::pad(x, {{1, 1}}, "zigzag"), ValueError);
  EXPECT_THAT(error_of([&] { (void)ko::pad(x, {{1, 1}}, "zigzag"); }),
              ::testing::HasSubstr("mode 'zigzag' is not one of constant, edge, linear_ramp"));
  EXPECT_THROW((void)ko::pad(x, {{1, 1}}, "reflect", 2.0), ValueError);
  EXPECT_THROW((void)ko::pad(x, {{1, 1}}, "mean", 2.0), ValueError);
  EXPECT_THROW((void)ko::pad(x, {{1, 1}, {1, 1}, {1, 1}}), InvalidArgumentError);
  EXPECT_THROW((void)ko::pad(x, {{-1, 0}, {0, 0}}, "edge"), InvalidArgumentError);
  // An empty axis pads only with constant and empty (NumPy: "can't extend empty axis").
  const Tensor e = Tensor::zeros({0, 2});
  for (const char* mode : {"edge", "wrap", "reflect", "symmetric", "maximum", "mean", "median", "linear_ramp"}) {
    SCOPED_TRACE(mode);
    EXPECT_THROW((void)ko::pad(e, {{1, 1}, {0, 0}}, mode), ValueError);
  }
  EXPECT_THAT(error_of([&] { (void)ko::pad(e, {{1, 0}, {0, 0}}, "edge"); }),
              ::testing::HasSubstr("cannot extend the empty axis 0 of shape (0, 2) with mode 'edge'"));
  EXPECT_EQ(ko::pad(e, {{1, 1}, {0, 0}}, "empty").shape(), Shape({2, 2}));
  EXPECT_EQ(ko::pad(e, {{0, 0}, {2, 1}}, "edge").shape(), Shape({0, 5}));  // padding an axis of a size-0 tensor
  // "circular" (Keras's torch spelling) is wrap.
  const Tensor v = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
  EXPECT_EQ(ko::pad(v, {{2, 4}}, "circular").to_vector<float>(), (std::vector<float>{2, 3, 1, 2, 3, 1, 2, 3, 1}));
}
