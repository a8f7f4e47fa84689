// keras.layers.CategoryEncoding and keras.layers.Discretization against Keras 3 on the TensorFlow backend
// (tests/keras/keras_categorical_reference.py wrote tests/data/keras_categorical.json): outputs, shapes and dtypes
// of each case or the class of Keras's error, the boundaries Discretization.adapt() finds, configs both ways, and a
// model of both layers trained, saved and loaded.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;

namespace {

const json& categorical_layers_ref() {
  static const json j = osprey::testing::read_reference("keras_categorical.json");
  return j;
}

// {"values" (null for NaN), "shape", "dtype"} as a tensor of that dtype.
Tensor array_of(const json& a) {
  std::vector<double> v;
  for (const auto& e : a.at("values")) v.push_back(e.is_null() ? std::numeric_limits<double>::quiet_NaN() : e.get<double>());
  const Shape shape(a.at("shape").get<std::vector<int64_t>>());
  const std::string dtype = a.at("dtype");
  const Tensor t = Tensor::from_vector(v, shape);
  if (dtype == "int32") return t.cast(DType::int32);
  if (dtype == "int64") return t.cast(DType::int64);
  return t.cast(DType::float32);
}

// The case's error class or its output, shape and dtype.
void expect_as_keras(const json& c, const std::function<Tensor()>& run, const std::string& what) {
  SCOPED_TRACE(what);
  if (c.contains("error")) {
    const std::string e = c.at("error");
    if (e == "InvalidArgumentError") EXPECT_THROW(run(), InvalidArgumentError);
    else EXPECT_THROW(run(), ValueError);
    return;
  }
  const Tensor y = run();
  EXPECT_EQ(y.shape(), Shape(c.at("shape").get<std::vector<int64_t>>()));
  EXPECT_EQ(dtype_name(y.dtype()), c.at("dtype").get<std::string>());
  const auto got = y.cast(DType::float64).to_vector<double>();
  const auto want = c.at("output").get<std::vector<double>>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-7) << i;
}

// Keras encodes a rank-1 input in multi_hot/count mode as one sample (an output without a batch axis); Osprey's
// layers keep the batch axis and raise a ValueError instead.
bool merges_the_batch(const json& x, const std::string& mode) {
  return (mode == "multi_hot" || mode == "count" || mode == "binary") && x.at("shape").size() <= 1;
}

}  // namespace

TEST(CategoricalLayers, CategoryEncodingMatchesKeras) {
  int checked = 0;
  for (const auto& c : categorical_layers_ref().at("category_encoding")) {
    const std::string mode = c.at("output_mode");
    const std::string what = fmt::format("CategoryEncoding({}, {}) on {}", c.at("num_tokens").dump(), mode,
                                         c.at("x").is_null() ? "nothing" : c.at("x").at("shape").dump());
    if (c.at("x").is_null()) {  // the arguments are wrong: from a config, as Keras's constructor takes them
      EXPECT_THROW(serialization::layer_from_object(json{{"class_name", "CategoryEncoding"},
                                                         {"config", {{"num_tokens", c.at("num_tokens")},
                                                                     {"output_mode", mode}}}}),
                   ValueError)
          << what;
      continue;
    }
    const Tensor x = array_of(c.at("x"));
    if (merges_the_batch(c.at("x"), mode)) {
      EXPECT_THROW(layers::CategoryEncoding(c.at("num_tokens").get<int64_t>(), {.output_mode = mode})(x),
                   ValueError) << what;
      continue;
    }
    expect_as_keras(c, [&] {
      layers::CategoryEncoding layer(c.at("num_tokens").get<int64_t>(), {.output_mode = mode});
      if (c.at("count_weights").is_null()) return layer(x);
      return layer.call_all({x, array_of(c.at("count_weights"))})[0];
    }, what);
    ++checked;
  }
  EXPECT_EQ(checked, 14);
  // Arguments Keras accepts that Osprey cannot honour, and bad count_weights.
  EXPECT_THROW(layers::CategoryEncoding(4, {.sparse = true}), ValueError);
  // A hostile num_tokens is refused before the output is allocated.
  EXPECT_THROW(layers::CategoryEncoding(int64_t{1} << 30, {.output_mode = "one_hot"})(Tensor::zeros({64, 1}, DType::int32)),
               ValueError);
  layers::CategoryEncoding count(3, {.output_mode = "count"});
  EXPECT_THROW(count.call_all({Tensor::zeros({2, 2}, DType::int32), Tensor::zeros({2, 3})}), ValueError);
}

TEST(CategoricalLayers, DiscretizationMatchesKeras) {
  int checked = 0;
  for (const auto& c : categorical_layers_ref().at("discretization")) {
    const json& a = c.at("args");
    layers::DiscretizationOptions o;
    if (a.contains("bin_boundaries")) o.bin_boundaries = a.at("bin_boundaries").get<std::vector<double>>();
    if (a.contains("num_bins")) o.num_bins = a.at("num_bins").get<int64_t>();
    if (a.contains("output_mode")) o.output_mode = a.at("output_mode");
    const std::string what = "Discretization(" + a.dump() + ")";
    if (c.at("x").is_null()) {
      EXPECT_THROW(layers::Discretization{o}, ValueError) << what;
      continue;
    }
    const Tensor x = array_of(c.at("x"));
    if (merges_the_batch(c.at("x"), o.output_mode)) {
      EXPECT_THROW(layers::Discretization{o}(x), ValueError) << what;
      continue;
    }
    expect_as_keras(c, [&] { return layers::Discretization{o}(x); }, what);
    ++checked;
  }
  EXPECT_EQ(checked, 8);
  EXPECT_THROW(layers::Discretization({.num_bins = 3})(Tensor::zeros({2, 2})), ValueError);  // neither given nor adapted
  EXPECT_THROW(layers::Discretization({.bin_boundaries = std::vector<double>{1.0}}).adapt(Tensor::zeros({4})), ValueError);
  EXPECT_THROW(layers::Discretization({.bin_boundaries = std::vector<double>{1.0, 0.0}}), ValueError);  // unsorted
  EXPECT_THROW(layers::Discretization({.num_bins = 2, .sparse = true}), ValueError);
}

// adapt() reproduces Keras's quantile summaries: the same boundaries (float32 values), batches merged as Keras
// merges them, fewer values than bins (the summary itself), ties; the adapted layer's config loads back.
TEST(CategoricalLayers, DiscretizationAdaptFindsKerasBoundaries) {
  for (const auto& c : categorical_layers_ref().at("adapt")) {
    const std::string what = fmt::format("num_bins {}, epsilon {}, {} batches", c.at("num_bins").get<int>(),
                                         c.at("epsilon").get<double>(), c.at("batches").size());
    SCOPED_TRACE(what);
    layers::Discretization d({.num_bins = c.at("num_bins").get<int64_t>(), .epsilon = c.at("epsilon").get<double>()});
    std::vector<Tensor> batches;
    for (const auto& b : c.at("batches")) batches.push_back(array_of(b));
    d.adapt(batches);
    const auto want = c.at("bin_boundaries").get<std::vector<double>>();
    ASSERT_EQ(d.bin_boundaries().size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(d.bin_boundaries()[i], want[i], 1e-6 * std::max(1.0, std::abs(want[i]))) << i;
    }
    expect_as_keras(c, [&] { return d(array_of(c.at("probe"))); }, "probe");
    // Keras's config of the adapted layer (bin_boundaries and num_bins both set) gives the same layer, and Osprey's
    // config the same again.
    const auto from_keras =
        serialization::layer_from_object(json{{"class_name", "Discretization"}, {"config", c.at("config")}});
    EXPECT_EQ(dynamic_cast<layers::Discretization&>(*from_keras).bin_boundaries(), want);
    const json mine = json::parse(from_keras->get_config());
    for (const char* key : {"bin_boundaries", "num_bins", "epsilon", "output_mode", "sparse", "name"}) {
      EXPECT_EQ(mine.at(key), c.at("config").at(key)) << key;
    }
  }
}

// A model of both layers (raw features binned, the bins multi-hot encoded, a Dense on them) trains, and its file
// loads back with the boundaries it was adapted to.
TEST(CategoricalLayers, AModelOfBothLayersTrainsSavesAndLoads) {
  random::set_seed(3);
  const Tensor x = random::uniform({64, 3}, -2, 2);
  const auto xv = x.to_vector<float>();
  std::vector<float> yv;
  for (int i = 0; i < 64; ++i) yv.push_back(xv[static_cast<std::size_t>(3 * i)] > 0.0f ? 1.0f : 0.0f);
  const Tensor y = Tensor::from_vector(yv, {64, 1});
  auto bins = std::make_shared<layers::Discretization>(layers::DiscretizationOptions{.num_bins = 4, .name = "bins"});
  bins->adapt(x);
  ASSERT_EQ(bins->bin_boundaries().size(), 3u);
  Sequential model({layers::Input({3}), bins, layers::CategoryEncoding(4, {.output_mode = "one_hot", .name = "one_hot"}),
                    layers::Flatten(), layers::Dense(1, "sigmoid", {.name = "out"})});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.05}), .loss = "binary_crossentropy",
                 .metrics = {"accuracy"}});
  const auto hist = model.fit(x, y, {.epochs = 60, .batch_size = 16, .verbose = 0});
  EXPECT_LT(hist.history.at("loss").back(), hist.history.at("loss").front());
  EXPECT_GE(hist.history.at("accuracy").back(), 0.9);
  SKIP_WITHOUT_HDF5();
  const std::string path = (std::filesystem::temp_directory_path() / "osprey_categorical.keras").string();
  model.save(path);
  auto again = models::load_model(path);
  EXPECT_EQ(again->to_json(), model.to_json());
  EXPECT_EQ(again->predict(x, {.verbose = 0}).to_vector<float>(), model.predict(x, {.verbose = 0}).to_vector<float>());
  std::filesystem::remove(path);
}
