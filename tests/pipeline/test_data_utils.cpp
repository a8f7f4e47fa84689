// keras::utils' data helpers against real Keras 3 / TensorFlow (tests/keras/keras_utils_reference.py wrote
// tests/data/keras_utils.json): to_categorical, normalize, split_dataset, confusion_matrix, pad_sequences.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
using json = nlohmann::json;
using ::testing::HasSubstr;
namespace utils = osprey::keras::utils;

namespace {

const json& ref() {
  static const json j = [] {
    std::ifstream in(osprey::testing::data_file("keras_utils.json"));
    return json::parse(in);
  }();
  return j;
}

// A nested JSON array of numbers as a float32 or int64 tensor.
Tensor tensor_of(const json& j, DType dtype = float32) {
  std::vector<int64_t> dims;
  for (const json* p = &j; p->is_array(); p = &(*p)[0]) dims.push_back(static_cast<int64_t>(p->size()));
  std::vector<double> flat;
  std::function<void(const json&)> walk = [&](const json& e) {
    if (e.is_array()) {
      for (const auto& c : e) walk(c);
    } else {
      flat.push_back(e.get<double>());
    }
  };
  walk(j);
  return Tensor::from_vector(flat, Shape(dims)).cast(dtype);
}

std::vector<double> values(const Tensor& t) { return t.cast(float64).to_vector<double>(); }

}  // namespace

TEST(DataUtils, ToCategoricalAsKeras) {
  const auto& r = ref().at("to_categorical");
  const Tensor y = tensor_of(r.at("y"), int64);
  const Tensor a = utils::to_categorical(y);
  EXPECT_EQ(a.shape(), (Shape{5, 4}));
  EXPECT_EQ(values(a), values(tensor_of(r.at("default"))));
  EXPECT_EQ(values(utils::to_categorical(y, 6)), values(tensor_of(r.at("six"))));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::to_categorical(y, 3); }),
              HasSubstr("label 3 is out of range for num_classes=3"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { utils::to_categorical(Tensor::from_vector(std::vector<float>{1, -1}, Shape{2})); }),
              HasSubstr("non-negative integers; element 1 is -1"));
}

TEST(DataUtils, NormalizeAsKeras) {
  const auto& r = ref().at("normalize");
  const Tensor x = tensor_of(r.at("x"));
  const auto l2 = values(utils::normalize(x));
  const auto want_l2 = values(tensor_of(r.at("l2_last")));
  const auto l1 = values(utils::normalize(x, 0, 1));
  const auto want_l1 = values(tensor_of(r.at("l1_axis0")));
  ASSERT_EQ(l2.size(), want_l2.size());
  for (std::size_t i = 0; i < l2.size(); ++i) {
    EXPECT_NEAR(l2[i], want_l2[i], 1e-6) << i;
    EXPECT_NEAR(l1[i], want_l1[i], 1e-6) << i;
  }
  EXPECT_THROW(utils::normalize(x, 2), ValueError);
  EXPECT_THROW(utils::normalize(x, -1, 3), ValueError);
}

TEST(DataUtils, SplitDatasetSizesAndElementsAsKeras) {
  std::vector<float> v(10);
  for (int i = 0; i < 10; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
  const Tensor data = Tensor::from_vector(v, Shape{10, 1});
  auto size_of = [](const json& j) -> std::optional<utils::SplitSize> {
    if (j.is_null()) return std::nullopt;
    if (j.is_number_integer()) return utils::SplitSize(j.get<int>());
    return utils::SplitSize(j.get<double>());
  };
  auto firsts = [](const data::Dataset& d) {
    std::vector<double> out;
    for (const auto& e : d.collect()) out.push_back(e.tensor().to_vector<float>()[0]);
    return out;
  };
  for (const auto& c : ref().at("split_dataset")) {
    SCOPED_TRACE(c.dump());
    const auto [left, right] = utils::split_dataset(data::Element(data), size_of(c.at("left_size")), size_of(c.at("right_size")));
    EXPECT_EQ(firsts(left), c.at("left").get<std::vector<double>>());
    EXPECT_EQ(firsts(right), c.at("right").get<std::vector<double>>());
  }
  // Shuffled with a seed: the same split twice, every element once.
  const auto [a1, b1] = utils::split_dataset(data::Element(data), 0.6, std::nullopt, true, 4);
  const auto [a2, b2] = utils::split_dataset(data::Element(data), 0.6, std::nullopt, true, 4);
  EXPECT_EQ(firsts(a1), firsts(a2));
  auto all = firsts(a1);
  for (double x : firsts(b1)) all.push_back(x);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::split_dataset(data::Element(data), std::nullopt); }),
              HasSubstr("at least one of the `left_size` or `right_size`"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::split_dataset(data::Element(data), 10); }),
              HasSubstr("positive integer smaller than 10"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::split_dataset(data::Element(data), 0.7, 0.6); }),
              HasSubstr("greater than 1"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::split_dataset(data::Element(data), 0.01); }),
              HasSubstr("left side dataset split will be empty"));
}

TEST(DataUtils, ConfusionMatrixAsTensorFlow) {
  const auto& r = ref().at("confusion_matrix");
  const Tensor l = tensor_of(r.at("labels"), int64), p = tensor_of(r.at("predictions"), int64);
  const Tensor m = utils::confusion_matrix(l, p);
  EXPECT_EQ(m.dtype(), int64);
  EXPECT_EQ(values(m), values(tensor_of(r.at("counts"))));
  EXPECT_EQ(values(utils::confusion_matrix(l, p, 4)), values(tensor_of(r.at("counts_4"))));
  const auto weighted = values(utils::confusion_matrix(l, p, std::nullopt, tensor_of(r.at("weights"))));
  EXPECT_EQ(weighted, values(tensor_of(r.at("weighted"))));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::confusion_matrix(l, p.slice_rows(0, 3)); }),
              HasSubstr("labels has 7 values and predictions 3"));
}

TEST(DataUtils, PadSequencesAsKeras) {
  const auto& r = ref().at("pad_sequences");
  const auto tokens = r.at("tokens").get<std::vector<std::vector<int64_t>>>();
  for (const auto& c : r.at("cases")) {
    SCOPED_TRACE(c.dump().substr(0, 90));
    utils::PadSequencesOptions o{.dtype = dtype_from_name(c.at("dtype")), .padding = c.at("padding"),
                                 .truncating = c.at("truncating"), .value = c.at("value")};
    if (!c.at("maxlen").is_null()) o.maxlen = c.at("maxlen").get<int64_t>();
    const Tensor x = utils::pad_sequences(tokens, o);
    EXPECT_EQ(x.dtype(), o.dtype);
    const Tensor want = tensor_of(c.at("x"), float64);
    EXPECT_EQ(x.shape(), want.shape());
    EXPECT_EQ(values(x), values(want));
  }
  // Keras's default: pre-padded int32 to the longest, the example of its docstring.
  const Tensor d = utils::pad_sequences({{1}, {2, 3}, {4, 5, 6}});
  EXPECT_EQ(d.dtype(), int32);
  EXPECT_EQ(d.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 0, 2, 3, 4, 5, 6}));
  // Sequences of feature vectors as tensors (len, 2), truncated and padded after.
  std::vector<Tensor> vectors;
  for (const auto& v : r.at("vectors")) vectors.push_back(tensor_of(v));
  const Tensor pv = utils::pad_sequences(vectors, {.maxlen = 2, .dtype = float32, .padding = "post", .truncating = "post"});
  EXPECT_EQ(pv.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values(pv), values(tensor_of(r.at("vectors_padded"))));
  // Keras's messages; no sequences needs a maxlen; ids beyond int32 and negative maxlen are refused.
  const auto& errors = r.at("errors");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::pad_sequences(tokens, {.padding = "mid"}); }),
              HasSubstr(errors.at("padding").get<std::string>()));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::pad_sequences(tokens, {.truncating = "end"}); }),
              HasSubstr(errors.at("truncating").get<std::string>()));
  const std::vector<Tensor> ragged{Tensor::from_vector(std::vector<float>{1, 2}, Shape{1, 2}),
                                   Tensor::from_vector(std::vector<float>{1, 2, 3}, Shape{1, 3})};
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { utils::pad_sequences(ragged, {.dtype = float32}); }),
              HasSubstr(errors.at("sample_shape").get<std::string>()));
  EXPECT_EQ(utils::pad_sequences(std::vector<std::vector<int64_t>>{}, {.maxlen = 3}).shape(), (Shape{0, 3}));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { utils::pad_sequences(std::vector<std::vector<int64_t>>{}); }),
              HasSubstr("pass maxlen"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([] { utils::pad_sequences({{1, 3000000000LL}}); }),
              HasSubstr("sequence 0 holds 3000000000 at position 1, outside int32's range"));
  EXPECT_EQ(utils::pad_sequences({{1, 3000000000LL}}, {.dtype = int64}).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 3000000000LL}));
  EXPECT_THROW(utils::pad_sequences({{1}}, {.maxlen = -1}), ValueError);
  EXPECT_THROW(utils::pad_sequences({{1}}, {.maxlen = int64_t{1} << 62}), ValueError);
  EXPECT_THROW(utils::pad_sequences({{1}}, {.value = 1e12}), ValueError);
  EXPECT_THROW(utils::pad_sequences(std::vector<Tensor>{Tensor::scalar(1)}), ValueError);
}
