// Keras 3's Hashing layer against Keras 3.15 on TensorFlow (tests/keras/keras_hashing_reference.py regenerates
// tests/data/keras_hashing.json): the bins of int64 (all their digits), int32 and float values under both hashes,
// masks, every output mode and dtype, configs both ways, rejections; and a model that hashes ids into an Embedding.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::tensor_of;

namespace {

const json& hashing_reference() {
  static const json ref = osprey::testing::read_reference("keras_hashing.json");
  return ref;
}

// The reference's values exactly: int64 from the JSON's integers (2^63 - 1 does not survive a float).
Tensor exact_tensor(const json& nested, const std::string& dtype) {
  std::vector<int64_t> dims;
  const json* j = &nested;
  while (j->is_array()) {
    dims.push_back(static_cast<int64_t>(j->size()));
    j = &(*j)[0];
  }
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::function<void(const json&)> walk = [&](const json& e) {
    if (e.is_array()) {
      for (const auto& x : e) walk(x);
    } else if (dtype == "float32") {
      floats.push_back(e.get<float>());
    } else if (e.is_boolean()) {
      ints.push_back(e.get<bool>() ? 1 : 0);
    } else {
      ints.push_back(e.get<int64_t>());
    }
  };
  walk(nested);
  if (dtype == "float32") return Tensor::from_vector(floats, Shape(dims));
  const Tensor t = Tensor::from_vector(ints, Shape(dims));
  return dtype == "int32" ? t.cast(DType::int32) : dtype == "bool" ? t.cast(DType::bool_) : t;
}

layers::HashingOptions options_of(const json& kw) {
  layers::HashingOptions o;
  if (kw.contains("mask_value")) o.mask_value = kw["mask_value"].get<double>();
  if (kw.contains("salt")) {
    const json& s = kw["salt"];
    o.salt = s.is_array() ? std::pair(s[0].get<uint64_t>(), s[1].get<uint64_t>())
                          : std::pair(s.get<uint64_t>(), s.get<uint64_t>());
  }
  if (kw.contains("output_mode")) o.output_mode = kw["output_mode"];
  if (kw.contains("dtype")) o.dtype = kw["dtype"];
  return o;
}

}  // namespace

TEST(Hashing, BinsMatchTensorFlowsForEveryInputAndMode) {
  for (const json& c : hashing_reference().at("cases")) {
    const std::string what = c.at("name");
    layers::Hashing layer(c.at("kwargs").at("num_bins").get<int64_t>(), options_of(c.at("kwargs")));
    const Tensor x = exact_tensor(c.at("x"), c.at("x_dtype"));
    const Tensor y = layer(x);
    EXPECT_EQ(dtype_name(y.dtype()), c.at("y_dtype").get<std::string>()) << what;
    const Tensor want = exact_tensor(c.at("y"), c.at("y_dtype") == "float32" ? "float32" : "int64");
    EXPECT_EQ(y.shape(), want.shape()) << what;
    if (y.dtype() == DType::float32) {
      EXPECT_EQ(y.to_vector<float>(), want.to_vector<float>()) << what;
    } else {
      EXPECT_EQ(y.cast(DType::int64).to_vector<int64_t>(), want.to_vector<int64_t>()) << what;
    }
    // The config as Keras writes it, and back.
    const json config = json::parse(layer.get_config());
    for (const auto& [key, value] : c.at("config").items()) {
      if (key != "name") {
        EXPECT_EQ(config.at(key), value) << what << " " << key;
      }
    }
    json theirs = c.at("config");
    const auto back = serialization::layer_from_object(json{{"class_name", "Hashing"}, {"config", theirs}});
    EXPECT_EQ(back->dtype_policy().name(), theirs.at("dtype").at("config").at("name").get<std::string>()) << what;
    const Tensor again = (*back)(x);
    EXPECT_EQ(again.cast(DType::float32).to_vector<float>(), y.cast(DType::float32).to_vector<float>()) << what;
  }
}

TEST(HashedCrossing, CrossesMatchTensorFlowsCrossHashed) {
  for (const json& c : hashing_reference().at("crossing")) {
    const std::string what = c.at("name");
    const json& kw = c.at("kwargs");
    layers::HashedCrossing layer(kw.at("num_bins").get<int64_t>(), kw.value("output_mode", "int"), "",
                                 kw.value("dtype", ""));
    std::vector<Tensor> xs;
    for (const json& x : c.at("xs")) xs.push_back(exact_tensor(x, c.at("x_dtype")));
    const Tensor y = layer(xs);
    EXPECT_EQ(dtype_name(y.dtype()), c.at("y_dtype").get<std::string>()) << what;
    const Tensor want = exact_tensor(c.at("y"), c.at("y_dtype") == "float32" ? "float32" : "int64");
    EXPECT_EQ(y.shape(), want.shape()) << what;
    EXPECT_EQ(y.cast(DType::float32).to_vector<float>(), want.cast(DType::float32).to_vector<float>()) << what;
    json config = json::parse(layer.get_config());
    json theirs = c.at("config");
    config.erase("name");
    theirs.erase("name");
    EXPECT_EQ(config, theirs) << what;
    const auto back = serialization::layer_from_object(json{{"class_name", "HashedCrossing"}, {"config", c.at("config")}});
    EXPECT_EQ((*back)(xs).cast(DType::float32).to_vector<float>(), y.cast(DType::float32).to_vector<float>()) << what;
  }
  layers::HashedCrossing cross(5);
  const Tensor a = Tensor::from_vector(std::vector<int64_t>{1, 2}, Shape({2, 1}));
  EXPECT_THROW(cross(std::vector<Tensor>{a}), ValueError);                                      // one input
  EXPECT_THROW(cross(std::vector<Tensor>{a.cast(DType::float32), a.cast(DType::float32)}), ValueError);  // floats
  layers::HashedCrossing wide(5);
  const Tensor w = Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4}, Shape({2, 2}));
  EXPECT_THROW(wide(std::vector<Tensor>{w, w}), ValueError);  // two features per row
  EXPECT_THROW(layers::HashedCrossing(5, "multi_hot"), ValueError);
}

TEST(Hashing, RejectsWhatKerasRejects) {
  for (const auto& [k, v] : hashing_reference().at("rejects").items()) EXPECT_TRUE(v.get<bool>()) << k;
  EXPECT_THROW(layers::Hashing(0), ValueError);
  EXPECT_THROW(layers::Hashing(3, {.output_mode = "tf_idf"}), ValueError);
  EXPECT_THROW(layers::Hashing(3, {.sparse = true}), ValueError);
  EXPECT_THROW(layers::Hashing(3, {.output_mode = "count", .sparse = true}), ValueError);  // no sparse tensors
  EXPECT_THROW(layers::Hashing(3, {.dtype = "float32"}), ValueError);
  EXPECT_THROW(serialization::layer_from_object(
                   json{{"class_name", "Hashing"}, {"config", {{"num_bins", 3}, {"salt", {1, 2, 3}}}}}),
               ValueError);
  EXPECT_THROW(serialization::layer_from_object(json{{"class_name", "Hashing"}, {"config", {{"num_bins", nullptr}}}}),
               ValueError);
  // Integer policies are for layers that give ids, not the global policy (Keras's rule).
  EXPECT_THROW(mixed_precision::set_global_policy("int64"), ValueError);
  layers::Hashing counts(4, {.output_mode = "multi_hot"});
  EXPECT_THROW(counts(Tensor::from_vector(std::vector<int64_t>{1, 2, 3}, Shape({3}))), ValueError);  // (batch,)
}

TEST(Hashing, HashedIdsFeedAnEmbeddingThatTrains) {
  auto ids = Input({3}, {.dtype = DType::int64});
  auto bins = layers::Hashing(16)(ids);
  EXPECT_EQ(bins.shape(), Shape({3}));
  auto h = layers::Flatten()(layers::Embedding(16, 4)(bins));
  Model model(ids, layers::Dense(1)(h));
  model.compile({.optimizer = optimizers::Adam(), .loss = "mse"});
  std::vector<int64_t> v;
  for (int64_t i = 0; i < 24; ++i) v.push_back(i * 7919 % 1000);
  const Tensor x = Tensor::from_vector(v, Shape({8, 3})), y = Tensor::ones(Shape({8, 1}));
  const auto history = model.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0});
  EXPECT_LT(history.history.at("loss").back(), history.history.at("loss").front());
  // Ids given as floats reach an int64 Input as int64 (Keras converts inputs to their Input's dtype): the cross,
  // which takes integers only, gets them.
  auto a = Input({1}, {.dtype = DType::int64}), b = Input({1}, {.dtype = DType::int64});
  Model crossed({a, b}, layers::HashedCrossing(7)({a, b}));
  const Tensor ia = Tensor::from_vector(std::vector<int64_t>{3, -4, 5}, Shape({3, 1}));
  const Tensor ib = Tensor::from_vector(std::vector<int64_t>{9, 9, 0}, Shape({3, 1}));
  layers::HashedCrossing direct(7);
  EXPECT_EQ(crossed.predict(Arrays(std::vector<Tensor>{ia.cast(DType::float32), ib.cast(DType::float32)}), {.verbose = 0})
                .cast(DType::int64).to_vector<int64_t>(),
            direct(std::vector<Tensor>{ia, ib}).to_vector<int64_t>());
}
