// Keras 3's IntegerLookup against Keras 3.15 on TensorFlow (tests/keras/keras_lookup_reference.py regenerates
// tests/data/keras_lookup.json): lookups with every option, invert, every output mode, adapt() on arrays and batches,
// vocabularies, configs both ways, rejections; the vocabulary through a .keras file's assets and tf_idf's weights
// through its weights file.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "keras/saving/zip_store.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::tensor_of;

namespace {

const json& lookup_reference() {
  static const json ref = osprey::testing::read_reference("keras_lookup.json");
  return ref;
}

layers::IntegerLookupOptions options_of(const json& kw) {
  layers::IntegerLookupOptions o;
  if (kw.contains("max_tokens")) o.max_tokens = kw["max_tokens"].get<int64_t>();
  if (kw.contains("num_oov_indices")) o.num_oov_indices = kw["num_oov_indices"];
  if (kw.contains("mask_token")) o.mask_token = kw["mask_token"].get<int64_t>();
  if (kw.contains("oov_token")) o.oov_token = kw["oov_token"];
  if (kw.contains("vocabulary")) o.vocabulary = kw["vocabulary"].get<std::vector<int64_t>>();
  if (kw.contains("idf_weights")) o.idf_weights = kw["idf_weights"].get<std::vector<double>>();
  if (kw.contains("invert")) o.invert = kw["invert"];
  if (kw.contains("output_mode")) o.output_mode = kw["output_mode"];
  if (kw.contains("pad_to_max_tokens")) o.pad_to_max_tokens = kw["pad_to_max_tokens"];
  if (kw.contains("oov_method")) o.oov_method = kw["oov_method"];
  if (kw.contains("salt")) o.salt = std::pair(kw["salt"][0].get<uint64_t>(), kw["salt"][1].get<uint64_t>());
  return o;
}

DType dtype_of(const std::string& name) {
  return name == "int32" ? DType::int32 : name == "float32" ? DType::float32 : DType::int64;
}

// A vocabulary file holding `text` (removed with the object).
struct VocabularyFile {
  explicit VocabularyFile(const std::string& text) {
    static int n = 0;
    path = (std::filesystem::temp_directory_path() / ("osprey_vocabulary_" + std::to_string(++n) + ".txt")).string();
    std::ofstream(path, std::ios::binary) << text;
  }
  ~VocabularyFile() { std::filesystem::remove(path); }
  std::string path;
};

// The layer made and adapted as the case says (a case with a file's text reads it from a file).
std::shared_ptr<layers::IntegerLookup> layer_of(const json& c) {
  layers::IntegerLookupOptions o = options_of(c.at("kwargs"));
  if (c.contains("vocabulary_file_text")) {
    const VocabularyFile file(c["vocabulary_file_text"].get<std::string>());
    o.vocabulary_file = file.path;
    return std::make_shared<layers::IntegerLookup>(std::move(o));
  }
  auto layer = std::make_shared<layers::IntegerLookup>(std::move(o));
  if (c.contains("adapt")) layer->adapt(tensor_of(c["adapt"], DType::int64));
  if (c.contains("batches")) {
    std::vector<Tensor> batches;
    for (const auto& b : c["batches"]) batches.push_back(tensor_of(b, DType::int64));
    layer->adapt(batches);
  }
  return layer;
}

void expect_output(const Tensor& y, const json& c, const std::string& what) {
  EXPECT_EQ(dtype_name(y.dtype()), c.at("y_dtype").get<std::string>()) << what;
  const Tensor want = tensor_of(c.at("y"), DType::float64);
  ASSERT_EQ(y.shape(), want.shape()) << what;
  const auto w = want.to_vector<double>();
  const auto g = y.cast(DType::float64).to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-6 * std::max(1.0, std::abs(w[i]))) << what << " [" << i << "]";
}

// A config without its name (Keras's auto-names count the layers that script made).
json without_name(json c) {
  c.erase("name");
  return c;
}

}  // namespace

TEST(IntegerLookup, LookupsEncodingsAndVocabulariesMatchKeras) {
  for (const json& c : lookup_reference().at("cases")) {
    const std::string what = c.at("name");
    const auto layer = layer_of(c);
    expect_output((*layer)(tensor_of(c.at("x"), dtype_of(c.at("x_dtype")))), c, what);
    EXPECT_EQ(layer->get_vocabulary(), c.at("vocabulary").get<std::vector<int64_t>>()) << what;
    EXPECT_EQ(layer->get_vocabulary(false), c.at("vocabulary_no_special").get<std::vector<int64_t>>()) << what;
    EXPECT_EQ(layer->vocabulary_size(), c.at("vocabulary_size").get<int64_t>()) << what;
    if (c.contains("idf_weights")) {
      const auto want = c["idf_weights"].get<std::vector<double>>();
      const auto got = layer->idf_weights();
      ASSERT_EQ(got.size(), want.size()) << what;
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << what << " idf " << i;
    }
    EXPECT_EQ(without_name(json::parse(layer->get_config())), without_name(c.at("config"))) << what;
  }
}

TEST(IntegerLookup, KerasConfigsMakeTheSameLayer) {
  for (const json& c : lookup_reference().at("cases")) {
    // Their vocabulary is an asset, not config.
    if (c.contains("adapt") || c.contains("batches") || c.contains("vocabulary_file_text")) continue;
    const std::string what = c.at("name");
    const auto layer = serialization::layer_from_object(
        {{"module", "keras.layers"}, {"class_name", "IntegerLookup"}, {"config", c.at("config")}, {"registered_name", nullptr}});
    expect_output((*layer)(tensor_of(c.at("x"), dtype_of(c.at("x_dtype")))), c, what);
    EXPECT_EQ(json::parse(layer->get_config()), c.at("config")) << what;
  }
}

TEST(IntegerLookup, WhatKerasRejectsIsATypedError) {
  const std::vector<int64_t> vocab{12, 36, 1138, 42, 7};
  auto make = [](layers::IntegerLookupOptions o) { return layers::IntegerLookup(std::move(o)); };
  const std::map<std::string, std::function<void()>> cases{
      {"max_tokens_1", [&] { make({.max_tokens = 1}); }},
      {"negative_oov", [&] { make({.num_oov_indices = -1}); }},
      {"invert_encoding", [&] { make({.invert = true, .output_mode = "one_hot"}); }},
      {"bad_mode", [&] { make({.output_mode = "onehot"}); }},
      {"idf_without_tf_idf", [&] { make({.vocabulary = vocab, .idf_weights = std::vector<double>(5, 1.0)}); }},
      {"tf_idf_vocab_without_idf", [&] { make({.vocabulary = vocab, .output_mode = "tf_idf"}); }},
      {"repeated", [&] { make({.vocabulary = std::vector<int64_t>{1, 2, 1}}); }},
      {"mask_inside", [&] { make({.mask_token = 0, .vocabulary = std::vector<int64_t>{1, 0, 2}}); }},
      {"too_many", [&] { make({.max_tokens = 4, .vocabulary = std::vector<int64_t>{1, 2, 3, 4}}); }},
      {"empty", [&] { make({.vocabulary = std::vector<int64_t>{}}); }},
      {"pad_without_max", [&] { make({.pad_to_max_tokens = true}); }},
      {"salt_floormod", [&] { make({.salt = std::pair<uint64_t, uint64_t>(5, 5)}); }},
      {"adapt_given", [&] { make({.vocabulary = vocab}).adapt(Tensor::from_vector(std::vector<int64_t>{1, 2}, {2})); }},
      {"resize_after_call",
       [&] {
         auto l = make({.vocabulary = vocab, .output_mode = "multi_hot"});
         (void)l(Tensor::from_vector(std::vector<int64_t>{12, 7}, {1, 2}));
         auto bigger = vocab;
         bigger.push_back(99);
         l.set_vocabulary(bigger);
       }},
      {"idf_length", [&] { make({.vocabulary = vocab, .idf_weights = std::vector<double>{1.0}, .output_mode = "tf_idf"}); }},
  };
  for (const auto& [name, rejected_by_keras] : lookup_reference().at("rejects").items()) {
    ASSERT_TRUE(rejected_by_keras.get<bool>()) << name;
    ASSERT_TRUE(cases.count(name)) << name;
    EXPECT_THROW(cases.at(name)(), Error) << name;
  }
  EXPECT_EQ(cases.size(), lookup_reference().at("rejects").size());
}

// What Keras (TensorFlow's text-file table) does with each vocabulary file, Osprey does: takes it or refuses it
// with a ValueError.
TEST(IntegerLookup, VocabularyFilesAreTakenOrRefusedAsKeras) {
  const Tensor x = Tensor::from_vector(std::vector<int64_t>{12, 36, 5}, {1, 3});
  auto from_file = [&](const std::string& text, layers::IntegerLookupOptions o = {}) {
    const VocabularyFile file(text);
    o.vocabulary_file = file.path;
    (void)layers::IntegerLookup(std::move(o))(x);
  };
  const std::map<std::string, std::function<void()>> cases{
      {"missing", [&] { layers::IntegerLookup({.vocabulary_file = "/nonexistent/vocabulary.txt"}); }},
      {"tf_idf", [&] { from_file("12\n36\n", {.idf_weights = std::vector<double>{1.0, 2.0}, .output_mode = "tf_idf"}); }},
      {"not_int", [&] { from_file("12\nseven\n"); }},
      {"repeated", [&] { from_file("12\n36\n12\n"); }},
      {"inner_empty_line", [&] { from_file("12\n\n36\n"); }},
      {"final_empty_line", [&] { from_file("12\n36\n\n"); }},
      {"empty", [&] { from_file(""); }},
  };
  for (const auto& [name, refused] : lookup_reference().at("vocabulary_files").items()) {
    ASSERT_TRUE(cases.count(name)) << name;
    if (refused.get<bool>()) {
      EXPECT_THROW(cases.at(name)(), ValueError) << name;
    } else {
      EXPECT_NO_THROW(cases.at(name)()) << name;
    }
  }
  EXPECT_EQ(cases.size(), lookup_reference().at("vocabulary_files").size());
  // Osprey's own refusals: a list and a file together; a line longer than any int64's text (read a line at a
  // time into a bounded buffer, however long the line), with the line's number.
  const VocabularyFile file("12\n");
  EXPECT_THROW(layers::IntegerLookup({.vocabulary = std::vector<int64_t>{1}, .vocabulary_file = file.path}), ValueError);
  try {
    from_file("12\n" + std::string(1 << 20, '7') + "\n");
    ADD_FAILURE() << "a 1 MiB line was taken";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  layers::IntegerLookup given({.vocabulary = std::vector<int64_t>{1, 2}});
  const VocabularyFile three("4\n5\n6\n");
  given.set_vocabulary_file(three.path);
  EXPECT_EQ(given.get_vocabulary(), (std::vector<int64_t>{-1, 4, 5, 6}));
}

// A vocabulary read from a file travels in a .keras file as Keras writes it: in the assets, the config's
// vocabulary null (the path is not kept).
TEST(IntegerLookup, AFileVocabularyTravelsInTheKerasFilesAssets) {
  SKIP_WITHOUT_HDF5();
  const VocabularyFile file("12\n36\n1138\n");
  auto ids = std::make_shared<layers::IntegerLookup>(
      layers::IntegerLookupOptions{.mask_token = 0, .vocabulary_file = file.path, .name = "ids"});
  EXPECT_TRUE(json::parse(ids->get_config()).at("vocabulary").is_null());
  auto x = Input({3}, {.name = "x", .dtype = DType::int64});
  auto model = std::make_shared<Model>(x, layers::Dense(1)(layers::Flatten()(layers::Embedding(6, 2)((*ids)(x)))));
  const std::string path = (std::filesystem::temp_directory_path() / "osprey_lookup_file.keras").string();
  model->save(path);
  const auto entries = keras::detail::read_zip(path);
  ASSERT_TRUE(entries.count("assets/layers/integer_lookup/vocabulary.txt"));
  EXPECT_EQ(entries.at("assets/layers/integer_lookup/vocabulary.txt"), "0\n-1\n12\n36\n1138");
  const auto loaded = models::load_model(path);
  const Tensor probe = Tensor::from_vector(std::vector<int64_t>{1138, 0, 77, 12, 36, 36}, {2, 3});
  EXPECT_EQ(loaded->predict(probe, {.verbose = 0}).to_vector<float>(), model->predict(probe, {.verbose = 0}).to_vector<float>());
  auto* back = dynamic_cast<layers::IntegerLookup*>(loaded->get_layer("ids").get());
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->get_vocabulary(), ids->get_vocabulary());
  std::filesystem::remove(path);
}

TEST(IntegerLookup, BadInputsAreTypedErrorsNamingTheValues) {
  layers::IntegerLookup strict({.num_oov_indices = 0, .vocabulary = std::vector<int64_t>{3, 4}});
  try {
    (void)strict(Tensor::from_vector(std::vector<int64_t>{3, 77, 4, -5}, {2, 2}));
    ADD_FAILURE() << "an OOV value with num_oov_indices=0 was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("[77, -5]"), std::string::npos) << e.what();
  }
  layers::IntegerLookup lookup({.vocabulary = std::vector<int64_t>{3, 4}});
  EXPECT_THROW((void)lookup(Tensor::from_vector(std::vector<float>{1.0f, NAN}, {1, 2})), InvalidArgumentError);
  // Any int64 index inverts (the extremes are OOV), without overflow.
  layers::IntegerLookup inverse({.vocabulary = std::vector<int64_t>{3, 4}, .invert = true});
  EXPECT_EQ(inverse(Tensor::from_vector(std::vector<int64_t>{INT64_MIN, 1, 2, INT64_MAX}, {4})).to_vector<int64_t>(),
            (std::vector<int64_t>{-1, 3, 4, -1}));
  layers::IntegerLookup unadapted({.output_mode = "multi_hot"});
  EXPECT_THROW((void)unadapted(Tensor::from_vector(std::vector<int64_t>{1}, {1, 1})), RuntimeError);
  // A damaged vocabulary asset: the line and what it holds.
  layers::IntegerLookup adapted;
  try {
    adapted.load_assets({{"vocabulary.txt", "-1\n5\nseven\n"}});
    ADD_FAILURE() << "a vocabulary line that is not a number was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(adapted.load_assets({}), ValueError);
  EXPECT_THROW(adapted.load_assets({{"vocabulary.txt", "-1\n5\n5"}}), ValueError);  // a repeated term
}

// An adapted vocabulary goes into the archive as Keras's assets/<layer path>/vocabulary.txt, tf_idf's weights
// into the weights file as the layer's "idf_weights", and both come back.
TEST(IntegerLookup, AdaptedVocabulariesAndIdfWeightsTravelInKerasFiles) {
  SKIP_WITHOUT_HDF5();
  const Tensor data = Tensor::from_vector(std::vector<int64_t>{5, 3, 9, 3, 9, 5, 1, 2, 9, 0, 0, 0}, {3, 4});
  auto ids = std::make_shared<layers::IntegerLookup>(layers::IntegerLookupOptions{.mask_token = 0, .name = "ids"});
  auto tfidf = std::make_shared<layers::IntegerLookup>(layers::IntegerLookupOptions{.output_mode = "tf_idf", .name = "tfidf"});
  ids->adapt(data);
  tfidf->adapt(data);
  auto x = Input({4}, {.name = "x", .dtype = DType::int64});
  auto h = layers::Concatenate()({layers::Flatten()(layers::Embedding(8, 2)((*ids)(x))), (*tfidf)(x)});
  auto model = std::make_shared<Model>(x, layers::Dense(1)(h));
  const std::string path = (std::filesystem::temp_directory_path() / "osprey_lookup.keras").string();
  model->save(path);
  const auto entries = keras::detail::read_zip(path);
  ASSERT_TRUE(entries.count("assets/layers/integer_lookup/vocabulary.txt"));
  EXPECT_EQ(entries.at("assets/layers/integer_lookup/vocabulary.txt"), "0\n-1\n9\n5\n3\n2\n1");
  ASSERT_TRUE(entries.count("assets/layers/integer_lookup_1/vocabulary.txt"));
  const auto loaded = models::load_model(path);
  const Tensor probe = Tensor::from_vector(std::vector<int64_t>{9, 0, 77, 2, 1, 1, 3, 5}, {2, 4});
  EXPECT_EQ(loaded->predict(probe, {.verbose = 0}).to_vector<float>(), model->predict(probe, {.verbose = 0}).to_vector<float>());
  auto* back = dynamic_cast<layers::IntegerLookup*>(loaded->get_layer("tfidf").get());
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->idf_weights(), tfidf->idf_weights());
  EXPECT_EQ(back->get_vocabulary(), tfidf->get_vocabulary());
  EXPECT_EQ(loaded->get_weights().size(), model->get_weights().size());  // idf_weights is not among them, as in Keras
  std::filesystem::remove(path);
}

// The structured-data pattern: a lookup's int64 encodings beside float features, into Concatenate and Dense, which
// promote them as Keras's ops do.
TEST(IntegerLookup, EncodingsJoinFloatFeaturesInConcatenateAndDense) {
  layers::IntegerLookup hot({.vocabulary = std::vector<int64_t>{4, 8}, .output_mode = "one_hot"});
  const Tensor codes = hot(Tensor::from_vector(std::vector<int64_t>{8, 5}, {2, 1}));
  ASSERT_EQ(codes.dtype(), DType::int64);
  const Tensor joined = layers::Concatenate()({Tensor::from_vector(std::vector<float>{0.5f, -1.5f}, {2, 1}), codes});
  EXPECT_EQ(joined.dtype(), DType::float32);
  EXPECT_EQ(joined.to_vector<float>(), (std::vector<float>{0.5f, 0, 0, 1, -1.5f, 1, 0, 0}));
  layers::Dense dense(1, "", {.kernel_initializer = "ones"});
  EXPECT_EQ(dense(codes).to_vector<float>(), (std::vector<float>{1, 1}));
}
