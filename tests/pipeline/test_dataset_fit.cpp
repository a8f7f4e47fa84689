// fit / evaluate / predict on a data::Dataset, as Keras on a tf.data.Dataset: the same training as the same
// batches from tensors, validation datasets, passes of unknown length, repeating datasets, sample weights, named
// inputs, and errors from the pipeline surfacing in fit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "osprey/data.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"
#include "test_util.h"

using namespace osprey;
using data::Dataset;
using data::Element;
using keras::Sequential;
using ::testing::HasSubstr;
namespace layers = osprey::keras::layers;

namespace {

Sequential model() {
  Sequential m({layers::Input({4}), layers::Dense(8, "relu"), layers::Dense(1, "sigmoid")});
  m.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  return m;
}

void expect_same_weights(Sequential& a, Sequential& b) {
  ASSERT_EQ(a.variables().size(), b.variables().size());
  for (size_t i = 0; i < a.variables().size(); ++i) {
    EXPECT_EQ(a.variables()[i]->value().to_vector<float>(), b.variables()[i]->value().to_vector<float>()) << i;
  }
}

struct Data {
  Tensor x, y;
};
Data make_data(int64_t n, uint64_t seed) {
  random::set_seed(seed);
  Tensor x = random::uniform({n, 4});
  Tensor y = random::randint(0, 2, {n, 1}).cast(DType::float32);
  return {x, y};
}

}  // namespace

TEST(DatasetFit, TrainsExactlyLikeTheSameBatchesFromTensors) {
  const auto [x, y] = make_data(95, 1);
  for (int64_t parallel : {int64_t{0}, int64_t{2}}) {
    random::set_seed(2);
    Sequential a = model();
    auto ha = a.fit(x, y, {.epochs = 3, .batch_size = 10, .verbose = 0, .shuffle = false});
    random::set_seed(2);
    Sequential b = model();
    const Dataset ds = Dataset::from_tensor_slices(Element{x, y})
                           .map([](const Element& e) { return e; }, parallel)
                           .batch(10)
                           .prefetch(data::AUTOTUNE);
    auto hb = b.fit(ds, {.epochs = 3, .verbose = 0});
    EXPECT_EQ(ha.history, hb.history) << "num_parallel_calls " << parallel;
    EXPECT_EQ(hb.params.steps, 10);
    expect_same_weights(a, b);
    // evaluate and predict on the dataset give what they give on the tensors.
    EXPECT_EQ(a.evaluate(x, y, {.batch_size = 10, .verbose = 0}), b.evaluate(ds, {.verbose = 0}));
    EXPECT_EQ(a.predict(x, {.batch_size = 10, .verbose = 0}).to_vector<float>(),
              b.predict(Dataset::from_tensor_slices(Element(x)).batch(10), {.verbose = 0}).to_vector<float>());
  }
}

TEST(DatasetFit, ValidationDataAndStepsFromDatasets) {
  const auto [x, y] = make_data(64, 3);
  const auto [xv, yv] = make_data(30, 4);
  random::set_seed(5);
  Sequential a = model();
  auto ha = a.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0, .validation_data = {xv, yv}, .shuffle = false});
  random::set_seed(5);
  Sequential b = model();
  auto hb = b.fit(Dataset::from_tensor_slices(Element{x, y}).batch(16),
                  {.epochs = 2, .verbose = 0, .validation_data = Dataset::from_tensor_slices(Element{xv, yv}).batch(16)});
  ASSERT_EQ(hb.history.count("val_loss"), 1u);
  EXPECT_EQ(ha.history, hb.history);
  // validation_steps: only the first batch of a repeating validation set.
  auto hc = b.fit(Dataset::from_tensor_slices(Element{x, y}).batch(16),
                  {.epochs = 1, .verbose = 0,
                   .validation_data = Dataset::from_tensor_slices(Element{xv, yv}).batch(10).repeat(),
                   .validation_steps = 1});
  EXPECT_EQ(hc.history.at("val_loss").size(), 1u);
  EXPECT_DOUBLE_EQ(hc.history.at("val_loss")[0],
                   b.evaluate(xv.slice_rows(0, 10), yv.slice_rows(0, 10), {.verbose = 0})[0]);
}

TEST(DatasetFit, APassOfUnknownLengthIsAnEpochAndTheBarSaysUnknown) {
  const auto [x, y] = make_data(40, 6);
  random::set_seed(7);
  Sequential m = model();
  int64_t kept = 0;
  const Dataset odd_rows = Dataset::zip({Dataset::range(40), Dataset::from_tensor_slices(Element{x, y})})
                               .filter([&](const Element& e) {
                                 const bool keep = static_cast<int64_t>(e[0].tensor().item()) % 2 == 1;
                                 kept += keep;
                                 return keep;
                               })
                               .map([](const Element& e) { return e[1]; })
                               .batch(5);
  EXPECT_EQ(odd_rows.cardinality(), data::UNKNOWN_CARDINALITY);
  ::testing::internal::CaptureStdout();
  auto h = m.fit(odd_rows, {.epochs = 2, .verbose = 1});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(kept, 40);
  EXPECT_EQ(h.history.at("loss").size(), 2u);
  EXPECT_THAT(out, HasSubstr("/Unknown")) << out;
  EXPECT_THAT(out, HasSubstr("4/4")) << "the epoch's end knows the pass's length: " << out;
}

TEST(DatasetFit, RepeatingDatasetsNeedStepsPerEpochAndContinueAcrossEpochs) {
  const auto [x, y] = make_data(30, 8);
  Sequential m = model();
  const Dataset forever = Dataset::from_tensor_slices(Element{x, y}).batch(10).repeat();
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.fit(forever, {.epochs = 1, .verbose = 0}); }),
              HasSubstr("please specify a `steps_per_epoch`"));
  auto h = m.fit(forever, {.epochs = 3, .verbose = 0, .steps_per_epoch = 4});
  EXPECT_EQ(h.history.at("loss").size(), 3u);
  EXPECT_EQ(h.params.steps, 4);
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.evaluate(forever, {.verbose = 0}); }), HasSubstr("give `steps`"));
  EXPECT_EQ(m.evaluate(forever, {.verbose = 0, .steps = 2}).size(), 2u);
}

TEST(DatasetFit, SampleWeightsAsTheThirdItemAndClassWeights) {
  const auto [x, y] = make_data(40, 9);
  random::set_seed(10);
  Tensor w = random::uniform({40});
  random::set_seed(11);
  Sequential a = model();
  a.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false, .sample_weight = w,
               .class_weight = {{0, 0.5}, {1, 2.0}}});
  random::set_seed(11);
  Sequential b = model();
  b.fit(Dataset::from_tensor_slices(Element{x, y, w}).batch(8),
        {.epochs = 2, .verbose = 0, .class_weight = {{0, 0.5}, {1, 2.0}}});
  expect_same_weights(a, b);
}

TEST(DatasetFit, NamedInputsFromAMapElement) {
  random::set_seed(12);
  auto a_in = keras::Input({3}, {.name = "a"});
  auto b_in = keras::Input({2}, {.name = "b"});
  auto out = layers::Dense(1)(layers::Concatenate()({a_in, b_in}));
  keras::Model m({a_in, b_in}, {out});
  m.compile({.optimizer = "sgd", .loss = "mse"});
  Tensor xa = random::uniform({12, 3}), xb = random::uniform({12, 2}), y = random::uniform({12, 1});
  const Dataset ds = Dataset::from_tensor_slices(Element{Element::named({{"b", Element(xb)}, {"a", Element(xa)}}), y}).batch(4);
  auto h = m.fit(ds, {.epochs = 1, .verbose = 0});
  EXPECT_EQ(h.params.steps, 3);
  EXPECT_EQ(m.predict(ds, {.verbose = 0}).shape(), (Shape{12, 1}));
}

TEST(DatasetFit, PipelineErrorsSurfaceInFitAndBadUsesAreValueErrors) {
  const auto [x, y] = make_data(50, 13);
  Sequential m = model();
  const Dataset failing = Dataset::zip({Dataset::range(50), Dataset::from_tensor_slices(Element{x, y})})
                              .map(
                                  [](const Element& e) {
                                    if (e[0].tensor().item() == 22) throw InvalidArgumentError("corrupt record");
                                    return e[1];
                                  },
                                  2)
                              .batch(10)
                              .prefetch(2);
  EXPECT_THAT(osprey::testing::error_of<InvalidArgumentError>([&] { m.fit(failing, {.epochs = 2, .verbose = 0}); }),
              HasSubstr("map: the function failed on element 22: corrupt record"));
  const Dataset ok = Dataset::from_tensor_slices(Element{x, y}).batch(10);
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.fit(ok, {.batch_size = 10, .verbose = 0}); }),
              HasSubstr("cannot be used with a Dataset"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.fit(ok, {.verbose = 0, .validation_split = 0.2}); }),
              HasSubstr("validation_split"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.fit(Dataset::from_tensor_slices(Element(x)).batch(10), {.verbose = 0}); }),
              HasSubstr("needs (x, y) or (x, y, sample_weight)"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.fit(ok.take(0), {.verbose = 0}); }), HasSubstr("empty"));
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.fit(Dataset::from_tensor_slices(Element{x, y}), {.verbose = 0}); }),
              HasSubstr("x must have shape (samples, features)"));
}
