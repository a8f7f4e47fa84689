// MirroredStrategy on logical CPUs and on the test platform's GPU-like devices (spec/distribute.md §1, §2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include "osprey/keras/ops.h"
#include "osprey/osprey.h"
#include "runtime/device_manager.h"
#include "support/test_gpu_platform.h"
#include "support/cpu_machine.h"
#include "test_util.h"

using namespace osprey;
namespace cfg = osprey::config;
namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;
using distribute::MirroredStrategy;
using ::testing::HasSubstr;

namespace {

void split_cpu(int n) {
  osprey::testing::reset_runtime_cpu_only();
  std::vector<LogicalDeviceConfiguration> configs(n);
  cfg::set_logical_device_configuration(cfg::list_physical_devices("CPU")[0], configs);
}

using osprey::testing::error_of;

keras::Sequential small_model() {
  return keras::Sequential({layers::Input({6}), layers::Dense(8, "relu"), layers::Dense(3, "softmax")});
}

struct Data {
  Tensor x, y;
};
Data make_data(int64_t n) {
  random::set_seed(11);
  DeviceScope cpu("/CPU:0");
  return {random::uniform({n, 6}, -1, 1), random::randint(0, 3, {n}).cast(DType::float32)};
}

std::vector<std::vector<float>> weights(keras::Model& m, int component = 0) {
  std::vector<std::vector<float>> out;
  for (auto* v : m.variables()) out.push_back(v->component(component).to_vector<float>());
  return out;
}

void expect_replicas_identical(keras::Sequential& m) {
  for (auto* v : m.variables()) {
    const auto first = v->component(0).to_vector<float>();
    for (int c = 1; c < v->num_components(); ++c) {
      EXPECT_EQ(v->component(c).to_vector<float>(), first) << v->path() << " component " << c;  // bit-identical
    }
  }
}

// The optimizer's slots too (fit defers their copies to the other replicas to its end).
void expect_slots_identical(keras::Sequential& m) {
  auto& opt = *m.optimizer();
  ASSERT_TRUE(opt.built());
  for (std::size_t i = 0; i < opt.num_tracked(); ++i) {
    for (Variable* slot : opt.slots_of(i)) {
      if (!slot) continue;
      const auto first = slot->component(0).to_vector<float>();
      for (int c = 1; c < slot->num_components(); ++c) {
        EXPECT_EQ(slot->component(c).to_vector<float>(), first) << slot->path() << " component " << c;
      }
    }
  }
}

void expect_close(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    for (size_t k = 0; k < a[i].size(); ++k) EXPECT_NEAR(a[i][k], b[i][k], tol) << "variable " << i << "[" << k << "]";
  }
}

// MirroredStrategy on a machine of CPUs (its GPU, where there is one, hidden; tests/cuda has the GPU cases).
class MirroredStrategyTest : public ::testing::Test {
 protected:
  void SetUp() override { osprey::testing::reset_runtime_cpu_only(); }
  void TearDown() override { osprey::testing::reset_runtime(); }
};

}  // namespace

TEST_F(MirroredStrategyTest, DefaultIsOneCpuReplicaOrEveryLogicalCpu) {
  osprey::testing::reset_runtime_cpu_only();
  {
    MirroredStrategy one;
    EXPECT_EQ(one.num_replicas_in_sync(), 1);
    EXPECT_EQ(one.devices(), std::vector<std::string>{"/job:localhost/replica:0/task:0/device:CPU:0"});
  }
  split_cpu(3);
  MirroredStrategy three;
  EXPECT_EQ(three.num_replicas_in_sync(), 3);
  EXPECT_EQ(three.devices()[2], "/job:localhost/replica:0/task:0/device:CPU:2");
  EXPECT_EQ(three.cross_device_ops_name(), "ReductionToOneDevice");
  // The runtime is initialised now: splitting again is TensorFlow's RuntimeError.
  EXPECT_EQ(error_of<RuntimeError>([] {
              cfg::set_logical_device_configuration(cfg::list_physical_devices("CPU")[0], {{}, {}});
            }),
            "Virtual devices cannot be modified after being initialized");
}

TEST_F(MirroredStrategyTest, LogLineAndCpuWarningAsTensorFlowPrintsThem) {
  split_cpu(2);
  ::testing::internal::CaptureStderr();
  MirroredStrategy both({"/cpu:0", "/cpu:1"});
  MirroredStrategy one({"/cpu:1"});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("] Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:CPU:0', "
                             "'/job:localhost/replica:0/task:0/device:CPU:1')\n"));
  EXPECT_THAT(err, HasSubstr("] Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:CPU:1',)\n"));
  EXPECT_THAT(err, HasSubstr("] There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce."));
}

TEST_F(MirroredStrategyTest, BadDeviceListsFailAtConstruction) {
  split_cpu(2);
  EXPECT_EQ(error_of<ValueError>([] { MirroredStrategy s(std::vector<std::string>{}); }),
            "Got an empty `devices` list. Please make sure the `devices` you pass in is not empty.");
  EXPECT_EQ(error_of<ValueError>([] { MirroredStrategy s({"/cpu:0", "/CPU:0"}); }),
            "No duplicates allowed in `devices` argument: ['/cpu:0', '/CPU:0']");
  EXPECT_THAT(error_of<ValueError>([] { MirroredStrategy s({"/cpu:0", "/gpu:0"}); }),
              HasSubstr("Device '/gpu:0' is not a logical device of this process; available devices: "
                        "[/device:CPU:0, /device:CPU:1]"));
  EXPECT_THAT(error_of<ValueError>([] {
                MirroredStrategy s({"/cpu:0"}, distribute::NcclAllReduce{});
              }),
              HasSubstr("NcclAllReduce needs every device to be a GPU"));
}

TEST_F(MirroredStrategyTest, VariablesCreatedInScopeAreMirroredFromReplicaZero) {
  split_cpu(3);
  MirroredStrategy strategy;
  random::set_seed(5);
  keras::Sequential model;
  {
    auto scope = strategy.scope();
    model = small_model();
  }
  for (auto* v : model.variables()) {
    ASSERT_EQ(v->num_components(), 3) << v->path();
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(v->component(c).device().name, fmt::format("/device:CPU:{}", c));
      EXPECT_EQ(v->component(c).to_vector<float>(), v->component(0).to_vector<float>());
    }
  }
  Variable outside(Tensor::ones({2}), "plain");
  EXPECT_EQ(outside.num_components(), 1);
}

// The core property: N replicas on the same global batches train exactly like one device (to float rounding), and
// after every step the replicas' weights are bit-identical.
class ReplicasMatchOneDevice : public MirroredStrategyTest, public ::testing::WithParamInterface<int> {};

TEST_P(ReplicasMatchOneDevice, SameWeightsLossAndMetricsAsSingleDevice) {
  const int replicas = GetParam();
  split_cpu(replicas);
  const Data d = make_data(50);  // batch 16: 16, 16, 16, 2 — the last global batch is short (2 rows)

  random::set_seed(21);
  keras::Sequential single = small_model();
  single.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});

  MirroredStrategy strategy;
  random::set_seed(21);
  keras::Sequential mirrored;
  {
    auto scope = strategy.scope();
    mirrored = small_model();
    mirrored.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  }
  expect_close(weights(single), weights(mirrored), 0.0);  // same seed, same initial values

  for (int step = 0; step < 3; ++step) {
    Tensor xb = d.x.slice_rows(step * 16, step * 16 + 16), yb = d.y.slice_rows(step * 16, step * 16 + 16);
    auto a = single.train_on_batch(xb, yb);
    auto b = mirrored.train_on_batch(xb, yb);
    EXPECT_NEAR(a[0], b[0], 1e-6) << "loss, step " << step;
    EXPECT_NEAR(a[1], b[1], 1e-9) << "accuracy, step " << step;
    expect_replicas_identical(mirrored);
    expect_slots_identical(mirrored);
  }
  auto ha = single.fit(d.x, d.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
  auto hb = mirrored.fit(d.x, d.y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_NEAR(ha.history["loss"][e], hb.history["loss"][e], 1e-5);
    EXPECT_NEAR(ha.history["accuracy"][e], hb.history["accuracy"][e], 1e-9);
  }
  expect_close(weights(single), weights(mirrored), 2e-5);
  expect_replicas_identical(mirrored);
  expect_slots_identical(mirrored);
  // The replicas' slots are the single device's (to float rounding), every replica's slice of them included.
  for (std::size_t i = 0; i < single.optimizer()->num_tracked(); ++i) {
    const auto a = single.optimizer()->slots_of(i), b = mirrored.optimizer()->slots_of(i);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (!a[k]) continue;
      for (int c = 0; c < b[k]->num_components(); ++c) {
        expect_close({a[k]->value().to_vector<float>()}, {b[k]->component(c).to_vector<float>()}, 2e-5);
      }
    }
  }
  EXPECT_EQ(mirrored.optimizer()->iterations(), single.optimizer()->iterations());

  auto ea = single.evaluate(d.x, d.y, {.batch_size = 7, .verbose = 0});
  auto eb = mirrored.evaluate(d.x, d.y, {.batch_size = 7, .verbose = 0});
  EXPECT_NEAR(ea[0], eb[0], 1e-5);
  EXPECT_NEAR(ea[1], eb[1], 1e-9);
  auto pa = single.predict(d.x, {.batch_size = 5, .verbose = 0}).to_vector<float>();
  auto pb = mirrored.predict(d.x, {.batch_size = 5, .verbose = 0}).to_vector<float>();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_NEAR(pa[i], pb[i], 1e-5);
}

INSTANTIATE_TEST_SUITE_P(TwoAndThree, ReplicasMatchOneDevice, ::testing::Values(2, 3));

// Sample weights per step (N, T) of a sequence output: each replica weighs its rows' steps, and the step, the
// loss and the weighted metrics are the single device's.
TEST_F(MirroredStrategyTest, WeightsPerStepGiveTheSingleDevicesTraining) {
  split_cpu(2);
  random::set_seed(5);
  Tensor x, y, w;
  {
    DeviceScope cpu("/CPU:0");
    x = random::uniform({40, 5, 3}, -1, 1);
    y = random::randint(0, 3, {40, 5}).cast(DType::float32);
    w = random::uniform({40, 5}, 0, 2);
  }
  auto make = [] {
    keras::Sequential m({layers::Input({5, 3}), layers::Dense(4, "tanh"), layers::Dense(3, "softmax")});
    m.compile({.optimizer = keras::optimizers::SGD({.learning_rate = 0.2}),
               .loss = "sparse_categorical_crossentropy",
               .weighted_metrics = {"accuracy"}});
    return m;
  };
  random::set_seed(9);
  keras::Sequential single = make();
  MirroredStrategy strategy;
  random::set_seed(9);
  keras::Sequential mirrored;
  {
    auto scope = strategy.scope();
    mirrored = make();
  }
  const keras::FitOptions fo{.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false, .sample_weight = w};
  auto ha = single.fit(x, y, fo);
  auto hb = mirrored.fit(x, y, fo);
  for (const char* key : {"loss", "accuracy"}) {
    for (std::size_t e = 0; e < 2; ++e) EXPECT_NEAR(ha.history[key][e], hb.history[key][e], 1e-5) << key << " " << e;
  }
  expect_close(weights(single), weights(mirrored), 2e-5);
  const keras::EvaluateOptions eo{.batch_size = 7, .verbose = 0, .sample_weight = w};
  auto ea = single.evaluate(x, y, eo);
  auto eb = mirrored.evaluate(x, y, eo);
  ASSERT_EQ(ea.size(), eb.size());
  for (std::size_t i = 0; i < ea.size(); ++i) EXPECT_NEAR(ea[i], eb[i], 1e-5) << i;
}

// A tagger head ("tags", softmax per step) and a pooled regression head ("score") on `h`, compiled with SGD at
// `learning_rate`, metrics and weighted_metrics on each.
keras::Model tags_and_score(const keras::KerasTensor& in, const keras::KerasTensor& h, double learning_rate) {
  auto t = layers::Dense(3, "softmax", {.name = "tags"})(h);
  auto s = layers::Dense(1, "", {.name = "score"})(layers::GlobalAveragePooling1D()(h));
  keras::Model m(in, {t, s});
  m.compile({.optimizer = keras::optimizers::SGD({.learning_rate = learning_rate}),
             .loss = {"sparse_categorical_crossentropy", "mse"},
             .metrics = std::map<std::string, std::vector<keras::MetricRef>>{{"tags", {"accuracy"}}},
             .weighted_metrics = std::map<std::string, std::vector<keras::MetricRef>>{{"tags", {"accuracy"}},
                                                                                      {"score", {"mae"}}}});
  return m;
}

// make()'s model on one device and its twin made in the scope of a MirroredStrategy, from the same seed.
template <typename Make>
std::pair<keras::Model, keras::Model> twins(Make make) {
  random::set_seed(9);
  keras::Model single = make();
  MirroredStrategy strategy;
  random::set_seed(9);
  auto scope = strategy.scope();
  return {std::move(single), make()};
}

// Two epochs of fit (batches of 16, in order) and an evaluate (batches of 7) of a model on one device and its
// twin under a strategy, with sample weights `w` (none when empty): the same history, weights and results.
static void expect_same_training(keras::Model& single, keras::Model& mirrored, const Tensor& x, const keras::Arrays& y,
                          const keras::Arrays& w) {
  const std::optional<keras::Arrays> weights_given = w.tensors.empty() ? std::nullopt : std::optional<keras::Arrays>(w);
  const keras::FitOptions fo{.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false, .sample_weight = weights_given};
  auto ha = single.fit(x, y, fo);
  auto hb = mirrored.fit(x, y, fo);
  ASSERT_EQ(ha.history.size(), hb.history.size());
  for (const auto& [key, values] : ha.history) {
    for (std::size_t e = 0; e < 2; ++e) EXPECT_NEAR(values[e], hb.history[key][e], 1e-5) << key << " " << e;
  }
  ASSERT_EQ(ha.arrays.size(), hb.arrays.size());
  for (const auto& [key, epochs] : ha.arrays) {
    for (std::size_t e = 0; e < 2; ++e) {
      ASSERT_EQ(epochs.at(e).size(), hb.arrays[key].at(e).size()) << key;
      for (std::size_t i = 0; i < epochs[e].size(); ++i) EXPECT_NEAR(epochs[e][i], hb.arrays[key][e][i], 1e-5) << key;
    }
  }
  expect_close(weights(single), weights(mirrored), 2e-5);
  const keras::EvaluateOptions eo{.batch_size = 7, .verbose = 0, .sample_weight = weights_given};
  auto ea = single.evaluate_dict(x, y, eo);
  auto eb = mirrored.evaluate_dict(x, y, eo);
  ASSERT_EQ(ea.size(), eb.size());
  for (const auto& [key, value] : ea) EXPECT_NEAR(value, eb[key], 1e-5) << key;
  ASSERT_EQ(ea.arrays.size(), eb.arrays.size());
  for (const auto& [key, values] : ea.arrays) {
    ASSERT_EQ(values.size(), eb.arrays[key].size()) << key;
    for (std::size_t i = 0; i < values.size(); ++i) EXPECT_NEAR(values[i], eb.arrays[key][i], 1e-5) << key;
  }
}

// Metrics with one value per class or threshold: the replicas' predictions update them as one device's.
TEST_F(MirroredStrategyTest, PerClassMetricsGiveTheSingleDevicesArrays) {
  split_cpu(2);
  random::set_seed(4);
  Tensor x, y;
  {
    DeviceScope cpu("/CPU:0");
    x = random::normal({40, 5});
    y = keras::ops::one_hot(random::randint(0, 3, {40}), 3);
  }
  auto [single, mirrored] = twins([] {
    auto in = keras::Input({5}, {.name = "x"});
    keras::Model m(in, layers::Dense(3, "softmax")(layers::Dense(6, "tanh")(in)));
    m.compile({.optimizer = keras::optimizers::SGD({.learning_rate = 0.3}),
               .loss = "categorical_crossentropy",
               .metrics = {keras::metrics::F1Score(), keras::metrics::Precision(std::vector<double>{0.3, 0.6})}});
    return m;
  });
  expect_same_training(single, mirrored, x, {y}, {});
  EXPECT_EQ(single.evaluate_dict(x, {y}, {.verbose = 0}).arrays.size(), 2u);
}

// Weights per output of a two-output model (a weight per step for a tagger, one per sample for a pooled head):
// each replica takes its rows of each output's weights.
TEST_F(MirroredStrategyTest, WeightsPerOutputGiveTheSingleDevicesTraining) {
  split_cpu(2);
  random::set_seed(6);
  Tensor x, tags, score, w_steps, w_samples;
  {
    DeviceScope cpu("/CPU:0");
    x = random::uniform({40, 5, 3}, -1, 1);
    tags = random::randint(0, 3, {40, 5}).cast(DType::float32);
    score = random::uniform({40, 1}, -1, 1);
    w_steps = random::uniform({40, 5}, 0, 2);
    w_samples = random::uniform({40}, 0, 2);
  }
  auto [single, mirrored] = twins([] {
    auto in = keras::Input({5, 3}, {.name = "x"});
    return tags_and_score(in, layers::Dense(4, "tanh", {.name = "h"})(in), 0.2);
  });
  const keras::Arrays y{tags, score}, w{w_steps, w_samples};
  expect_same_training(single, mirrored, x, y, w);
  // The weights count: the same data unweighted gives another loss.
  const keras::EvaluateOptions eo{.batch_size = 7, .verbose = 0, .sample_weight = w};
  EXPECT_GT(std::abs(single.evaluate_dict(x, y, {.batch_size = 7, .verbose = 0}).at("loss") -
                     single.evaluate_dict(x, y, eo).at("loss")),
            1e-4);
}

// A tagger whose output carries Embedding(mask_zero)'s mask (padded sequences of different lengths: the replicas'
// shards hold different numbers of real steps) and a pooled head without one: each replica's masked loss is its
// steps' sum over the global batch's unmasked steps, so training is the single device's; weights per output too.
TEST_F(MirroredStrategyTest, AMaskedOutputGivesTheSingleDevicesTraining) {
  split_cpu(2);
  random::set_seed(8);
  Tensor tokens, tags, score, w_steps, w_samples;
  {
    DeviceScope cpu("/CPU:0");
    auto ids = random::randint(1, 7, {40, 6}).cast(DType::float32).to_vector<float>();
    const auto lengths = random::randint(1, 7, {40}).to_vector<int32_t>();
    for (int i = 0; i < 40; ++i) {
      for (int t = lengths[static_cast<std::size_t>(i)]; t < 6; ++t) ids[static_cast<std::size_t>(i * 6 + t)] = 0.0f;
    }
    tokens = Tensor::from_vector(ids, Shape({40, 6})).cast(DType::int32);
    tags = random::randint(0, 3, {40, 6}).cast(DType::float32);
    score = random::uniform({40, 1}, -1, 1);
    w_steps = random::uniform({40, 6}, 0, 2);
    w_samples = random::uniform({40}, 0, 2);
  }
  auto [single, mirrored] = twins([] {
    auto in = keras::Input({6}, {.name = "tokens", .dtype = DType::int32});
    auto h = layers::Embedding(7, 4, {.mask_zero = true})(in);
    return tags_and_score(in, layers::SimpleRNN(5, {}, {.return_sequences = true})(h), 0.3);
  });
  const keras::Arrays y{tags, score};
  for (const keras::Arrays& w : {keras::Arrays{}, keras::Arrays{w_steps, w_samples}}) {
    SCOPED_TRACE(w.tensors.empty() ? "unweighted" : "weights per output");
    expect_same_training(single, mirrored, tokens, y, w);
  }
}

// A "sum" reduction: each replica's sum is its share as it is, in training and in evaluation (the global batch's
// sum, as on one device).
TEST_F(MirroredStrategyTest, ASumReductionGivesTheSingleDevicesTrainingAndEvaluation) {
  split_cpu(2);
  random::set_seed(12);
  Tensor x, tags, score;
  {
    DeviceScope cpu("/CPU:0");
    x = random::uniform({40, 5, 3}, -1, 1);
    tags = random::randint(0, 3, {40, 5}).cast(DType::float32);
    score = random::uniform({40, 1}, -1, 1);
  }
  auto [single, mirrored] = twins([] {
    auto in = keras::Input({5, 3}, {.name = "x"});
    keras::Model m = tags_and_score(in, layers::Dense(4, "tanh", {.name = "h"})(in), 0.01);
    keras::losses::SparseCategoricalCrossentropy sce;
    sce.set_reduction(keras::losses::Reduction::sum);
    keras::losses::MeanSquaredError mse;
    mse.set_reduction(keras::losses::Reduction::sum);
    m.compile({.optimizer = keras::optimizers::SGD({.learning_rate = 0.01}), .loss = {sce, mse}});
    return m;
  });
  expect_same_training(single, mirrored, x, keras::Arrays{tags, score}, {});
}

TEST_F(MirroredStrategyTest, AReplicaWithAnEmptyShardContributesNothingAndNoNaN) {
  split_cpu(3);
  const Data d = make_data(4);
  random::set_seed(2);
  keras::Sequential single = small_model();
  single.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  MirroredStrategy strategy;
  random::set_seed(2);
  keras::Sequential mirrored;
  {
    auto scope = strategy.scope();
    mirrored = small_model();
    mirrored.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  }
  // 4 rows on 3 replicas: 2 | 2 | 0.
  auto a = single.train_on_batch(d.x, d.y);
  auto b = mirrored.train_on_batch(d.x, d.y);
  EXPECT_FALSE(std::isnan(b[0]));
  EXPECT_NEAR(a[0], b[0], 1e-6);
  expect_close(weights(single), weights(mirrored), 1e-6);
  expect_replicas_identical(mirrored);
  // 2 rows: 1 | 1 | 0.
  b = mirrored.train_on_batch(d.x.slice_rows(0, 2), d.y.slice_rows(0, 2));
  EXPECT_FALSE(std::isnan(b[0]));
}

TEST_F(MirroredStrategyTest, RunAndReduce) {
  split_cpu(3);
  MirroredStrategy strategy;
  auto per_replica = strategy.run([](const distribute::ReplicaContext& ctx) {
    EXPECT_EQ(current_device_name(), ctx.device);
    return Tensor::full({2}, ctx.replica_id_in_sync_group + 1.0);  // 1, 2, 3
  });
  ASSERT_EQ(per_replica.values.size(), 3u);
  EXPECT_EQ(per_replica.values[1].device().name, "/device:CPU:1");
  EXPECT_EQ(strategy.reduce(distribute::ReduceOp::SUM, per_replica).to_vector<float>(), (std::vector<float>{6, 6}));
  EXPECT_EQ(strategy.reduce(distribute::ReduceOp::MEAN, per_replica).to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(strategy.reduce(distribute::ReduceOp::SUM, per_replica, 0).item(), 12.0);
  EXPECT_EQ(strategy.reduce(distribute::ReduceOp::MEAN, per_replica, 0).item(), 2.0);
}

TEST_F(MirroredStrategyTest, TheFirstReplicaErrorIsRethrownAndNothingHangs) {
  split_cpu(2);
  MirroredStrategy strategy;
  EXPECT_THROW(strategy.run([](const distribute::ReplicaContext& ctx) -> Tensor {
    if (ctx.replica_id_in_sync_group == 1) throw ValueError("replica 1 failed");
    return Tensor::ones({1});
  }),
               ValueError);
  // A failure inside fit's all-reduce (replica 1 throws, replica 0 waits at the barrier) does not hang either.
  keras::Sequential model;
  {
    auto scope = strategy.scope();
    model = small_model();
    model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  }
  Tensor x = make_data(4).x;
  Tensor bad = Tensor::from_vector<float>({0, 1, 2, 7}, {4});  // label 7 of 3 classes, on replica 1
  EXPECT_THROW(model.train_on_batch(x, bad), InvalidArgumentError);
  auto ok = strategy.run([](const distribute::ReplicaContext&) { return Tensor::ones({1}); });
  EXPECT_EQ(ok.values.size(), 2u);
}

TEST_F(MirroredStrategyTest, AModelBuiltOutsideTheScopeOnAnotherDeviceIsRejectedClearly) {
  split_cpu(3);
  MirroredStrategy strategy({"/cpu:1", "/cpu:2"});
  keras::Sequential model = small_model();  // on CPU:0
  {
    auto scope = strategy.scope();
    model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  }
  const Data d = make_data(8);
  EXPECT_THAT(error_of<ValueError>([&] { model.train_on_batch(d.x, d.y); }),
              HasSubstr("create the model (and its optimizer) inside strategy.scope()"));
}

// ---- The cross-device reduction on GPU-like devices (the test platform) ----

TEST_F(MirroredStrategyTest, SelectionRulesOnGpus) {
  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(2), .nccl = true});
  {
    MirroredStrategy strategy;  // all logical GPUs, all physical, a collective: NCCL
    EXPECT_EQ(strategy.num_replicas_in_sync(), 2);
    EXPECT_EQ(strategy.cross_device_ops_name(), "NcclAllReduce");
    MirroredStrategy forced({"/gpu:0", "/gpu:1"}, distribute::ReductionToOneDevice{});  // an explicit choice wins
    EXPECT_EQ(forced.cross_device_ops_name(), "ReductionToOneDevice");
    ::testing::internal::CaptureStderr();
    MirroredStrategy mixed({"/gpu:0", "/cpu:0"});
    EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("There are non-GPU devices"));
    EXPECT_EQ(mixed.cross_device_ops_name(), "ReductionToOneDevice");
  }
  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(2), .nccl = false});
  ::testing::internal::CaptureStderr();
  MirroredStrategy no_nccl;
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("] Nccl kernel is not found, not using nccl allreduce."));
  EXPECT_EQ(no_nccl.cross_device_ops_name(), "ReductionToOneDevice");

  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(1), .nccl = true});
  cfg::set_logical_device_configuration(cfg::list_physical_devices("GPU")[0], {{.memory_limit = 64}, {.memory_limit = 64}});
  ::testing::internal::CaptureStderr();
  MirroredStrategy virtual_gpus;
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("] NCCL is not supported when using virtual GPUs, falling back to reduction to one device"));
  EXPECT_EQ(virtual_gpus.num_replicas_in_sync(), 2);
  EXPECT_EQ(virtual_gpus.cross_device_ops_name(), "ReductionToOneDevice");
}

// Both reduction paths over device memory (packing, copies, the collective) give single-device training.
class GpuReductionPaths
    : public MirroredStrategyTest, public ::testing::WithParamInterface<std::tuple<bool, int, int64_t>> {};

TEST_P(GpuReductionPaths, MatchSingleDevice) {
  const auto [nccl, packs, bytes_per_pack] = GetParam();
  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(2), .nccl = nccl});
  const Data d = make_data(24);
  random::set_seed(8);
  keras::Sequential single;
  {
    DeviceScope on("/GPU:0");
    single = small_model();
    single.compile({.optimizer = "rmsprop", .loss = "sparse_categorical_crossentropy"});
  }
  std::optional<distribute::CrossDeviceOps> cdo;
  if (nccl) {
    cdo = distribute::NcclAllReduce{packs, bytes_per_pack};
  } else {
    cdo = distribute::ReductionToOneDevice{"", packs, bytes_per_pack};
  }
  MirroredStrategy strategy({"/gpu:0", "/gpu:1"}, cdo);
  random::set_seed(8);
  keras::Sequential mirrored;
  {
    auto scope = strategy.scope();
    mirrored = small_model();
    mirrored.compile({.optimizer = "rmsprop", .loss = "sparse_categorical_crossentropy"});
  }
  osprey::testing::collective_calls = 0;
  single.fit(d.x, d.y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  mirrored.fit(d.x, d.y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  EXPECT_EQ(osprey::testing::collective_calls > 0, nccl);
  if (nccl) {  // 4 gradients (2 kernels, 2 biases), 2 epochs of 3 steps: the buckets per step as configured
    const int per_step = bytes_per_pack > 0 ? 4 : std::min(packs, 4);
    EXPECT_EQ(osprey::testing::collective_calls, 6 * per_step);
  }
  expect_close(weights(single), weights(mirrored), 2e-5);
  expect_replicas_identical(mirrored);
}

INSTANTIATE_TEST_SUITE_P(NcclAndFallback, GpuReductionPaths,
                         ::testing::Values(std::make_tuple(true, 1, int64_t{0}), std::make_tuple(true, 3, int64_t{0}),
                                           std::make_tuple(true, 1, int64_t{64}),
                                           std::make_tuple(false, 1, int64_t{0}), std::make_tuple(false, 2, int64_t{0}),
                                           std::make_tuple(false, 1, int64_t{100})));

TEST_F(MirroredStrategyTest, TwoRunsAreBitIdentical) {
  split_cpu(2);
  std::vector<std::vector<float>> first;
  for (int run = 0; run < 2; ++run) {
    MirroredStrategy strategy;
    random::set_seed(4);
    keras::Sequential m;
    {
      auto scope = strategy.scope();
      m = small_model();
      m.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
    }
    const Data d = make_data(40);
    m.fit(d.x, d.y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
    if (run == 0) {
      first = weights(m);
    } else {
      EXPECT_EQ(weights(m), first);
    }
  }
}

// ---- Variable synchronization and aggregation (tf.VariableSynchronization / tf.VariableAggregation) ----

TEST_F(MirroredStrategyTest, SynchronizationModesInScope) {
  split_cpu(2);
  MirroredStrategy strategy;
  auto scope = strategy.scope();
  Variable automatic(Tensor::zeros({2}), "auto", VariableOptions{});
  EXPECT_EQ(automatic.synchronization(), VariableSynchronization::ON_WRITE);
  EXPECT_EQ(automatic.num_components(), 2);
  EXPECT_THAT(error_of<ValueError>([] {
                Variable v(Tensor::zeros({2}), "none", {.synchronization = VariableSynchronization::NONE});
              }),
              HasSubstr("`NONE` variable synchronization mode is not supported with tf.distribute strategy"));
  EXPECT_THAT(error_of<ValueError>([] {
                Variable v(Tensor::zeros({2}), "r", {.trainable = true, .synchronization = VariableSynchronization::ON_READ});
              }),
              HasSubstr("ON_READ only for non-trainable variables"));
}

TEST_F(MirroredStrategyTest, ReplicaContextAssignNeedsAnAggregationAndThenAgreesEverywhere) {
  split_cpu(3);
  MirroredStrategy strategy;
  std::unique_ptr<Variable> none, sum, mean, first;
  {
    auto scope = strategy.scope();
    none = std::make_unique<Variable>(Tensor::zeros({1}), "none", VariableOptions{});
    sum = std::make_unique<Variable>(Tensor::zeros({1}), "sum", VariableOptions{.aggregation = VariableAggregation::SUM});
    mean = std::make_unique<Variable>(Tensor::zeros({1}), "mean", VariableOptions{.aggregation = VariableAggregation::MEAN});
    first = std::make_unique<Variable>(Tensor::zeros({1}), "first",
                                       VariableOptions{.aggregation = VariableAggregation::ONLY_FIRST_REPLICA});
  }
  EXPECT_THAT(error_of<ValueError>([&] {
                strategy.run([&](const distribute::ReplicaContext&) {
                  none->assign(Tensor::ones({1}));
                  return Tensor();
                });
              }),
              HasSubstr("You must specify an aggregation method to update a MirroredVariable in Replica Context"));
  strategy.run([&](const distribute::ReplicaContext& ctx) {
    const Tensor v = Tensor::full({1}, ctx.replica_id_in_sync_group + 1.0);  // 1, 2, 3
    sum->assign(v);
    mean->assign(v);
    first->assign(v);
    sum->assign_add(Tensor::ones({1}));  // += 3
    return Tensor();
  });
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(sum->component(c).item(), 9.0) << c;
    EXPECT_EQ(mean->component(c).item(), 2.0) << c;
    EXPECT_EQ(first->component(c).item(), 1.0) << c;
  }
}

TEST_F(MirroredStrategyTest, OnReadSumVariablesAggregateWhenRead) {
  split_cpu(2);
  MirroredStrategy strategy;
  std::unique_ptr<Variable> total;
  {
    auto scope = strategy.scope();
    total = std::make_unique<Variable>(Tensor::zeros({1}), "total",
                                       VariableOptions{.trainable = false,
                                                       .synchronization = VariableSynchronization::ON_READ,
                                                       .aggregation = VariableAggregation::SUM});
  }
  strategy.run([&](const distribute::ReplicaContext& ctx) {
    total->assign_add(Tensor::full({1}, 10.0 * (ctx.replica_id_in_sync_group + 1)));  // replica-local: 10, 20
    EXPECT_EQ(total->read_value().item(), 10.0 * (ctx.replica_id_in_sync_group + 1));
    return Tensor();
  });
  EXPECT_EQ(total->read_value().item(), 30.0);  // cross-replica read: the sum
  total->assign(Tensor::full({1}, 8.0));       // stores 8/N in each replica
  EXPECT_EQ(total->component(0).item(), 4.0);
  EXPECT_EQ(total->read_value().item(), 8.0);
  EXPECT_THAT(error_of<ValueError>([&] { total->assign_add(Tensor::ones({1})); }),
              HasSubstr("SyncOnReadVariable does not support `assign_add` in cross-replica context"));
}

TEST_F(MirroredStrategyTest, AverageLossAndRegularizationScaling) {
  split_cpu(2);
  MirroredStrategy strategy;
  auto losses = strategy.run([](const distribute::ReplicaContext& ctx) {
    Tensor per_example = Tensor::full({4}, ctx.replica_id_in_sync_group + 1.0);  // sums 4 and 8
    return distribute::compute_average_loss(per_example);                       // / (4 × 2)
  });
  EXPECT_EQ(losses.values[0].item(), 0.5);
  EXPECT_EQ(losses.values[1].item(), 1.0);
  EXPECT_EQ(strategy.reduce(distribute::ReduceOp::SUM, losses).item(), 1.5);  // the global mean: 12 / 8
  auto fixed = strategy.run([](const distribute::ReplicaContext&) {
    return distribute::compute_average_loss(Tensor::full({4}, 1.0), 16);
  });
  EXPECT_EQ(fixed.values[1].item(), 0.25);
  auto empty = strategy.run([](const distribute::ReplicaContext&) {
    return distribute::compute_average_loss(Tensor::zeros({0}));
  });
  EXPECT_EQ(empty.values[0].item(), 0.0);
  auto reg = strategy.run([](const distribute::ReplicaContext&) {
    return distribute::scale_regularization_loss(Tensor::scalar(3.0));
  });
  EXPECT_EQ(reg.values[0].item(), 1.5);
  EXPECT_EQ(distribute::compute_average_loss(Tensor::full({4}, 2.0)).item(), 2.0);  // no strategy: the mean
}

TEST_F(MirroredStrategyTest, OneReplicaIsTheIdentity) {
  split_cpu(2);
  const Data d = make_data(20);
  random::set_seed(6);
  keras::Sequential plain = small_model();
  plain.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  MirroredStrategy one({"/cpu:0"});
  random::set_seed(6);
  keras::Sequential wrapped;
  {
    auto scope = one.scope();
    wrapped = small_model();
    wrapped.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  }
  plain.fit(d.x, d.y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  wrapped.fit(d.x, d.y, {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  EXPECT_EQ(weights(plain), weights(wrapped));  // bit for bit
  EXPECT_EQ(one.reduce(distribute::ReduceOp::SUM, {{Tensor::full({1}, 5.0)}}).item(), 5.0);
  EXPECT_THROW(MirroredStrategy({"/cpu:0", "/cpu:1"}, distribute::ReductionToOneDevice{"", -1}), ValueError);
}

TEST_F(MirroredStrategyTest, DatasetsFromAFunctionAreNotRebatched) {
  split_cpu(2);
  MirroredStrategy strategy;
  distribute::InputContext seen;
  int64_t next_row = 0;
  auto dataset = strategy.distribute_datasets_from_function([&](const distribute::InputContext& ctx) {
    seen = ctx;
    const int64_t per_replica = ctx.get_per_replica_batch_size(8);  // 4
    return distribute::BatchGenerator([&next_row, per_replica]() -> std::optional<std::vector<Tensor>> {
      if (next_row >= 12) return std::nullopt;  // 12 rows: three batches of 4
      std::vector<float> rows;
      for (int64_t i = 0; i < per_replica; ++i) rows.push_back(static_cast<float>(next_row + i));
      next_row += per_replica;
      return std::vector<Tensor>{Tensor::from_vector(rows, {per_replica})};
    });
  });
  EXPECT_EQ(seen.num_input_pipelines, 1);
  EXPECT_EQ(seen.input_pipeline_id, 0);
  EXPECT_EQ(seen.num_replicas_in_sync, 2);
  EXPECT_THROW(seen.get_per_replica_batch_size(7), ValueError);
  auto step1 = dataset.next();
  ASSERT_TRUE(step1.has_value());
  EXPECT_EQ((*step1)[0].values[0].to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ((*step1)[0].values[1].to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ((*step1)[0].values[1].device().name, "/device:CPU:1");
  auto step2 = dataset.next();  // one batch left: replica 1 gets nothing
  ASSERT_TRUE(step2.has_value());
  EXPECT_EQ((*step2)[0].values[0].to_vector<float>(), (std::vector<float>{8, 9, 10, 11}));
  EXPECT_FALSE((*step2)[0].values[1].defined());
  EXPECT_FALSE(dataset.next().has_value());
}

TEST_F(MirroredStrategyTest, DatasetsFromAFunctionMayBeDatasets) {
  // TensorFlow's usual input function: shard by pipeline, batch per replica.
  split_cpu(2);
  MirroredStrategy strategy;
  std::vector<float> rows;
  for (int i = 0; i < 10; ++i) rows.push_back(static_cast<float>(i));
  auto dataset = strategy.distribute_datasets_from_function([&](const distribute::InputContext& ctx) {
    return data::Dataset::from_tensor_slices(data::Element{Tensor::from_vector(rows, {10}), Tensor::from_vector(rows, {10})})
        .shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        .batch(ctx.get_per_replica_batch_size(8));
  });
  auto step1 = dataset.next();
  ASSERT_TRUE(step1.has_value());
  ASSERT_EQ(step1->size(), 2u);  // x and y
  EXPECT_EQ((*step1)[0].values[0].to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ((*step1)[1].values[1].to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ((*step1)[1].values[1].device().name, "/device:CPU:1");
  auto step2 = dataset.next();
  ASSERT_TRUE(step2.has_value());
  EXPECT_EQ((*step2)[0].values[0].to_vector<float>(), (std::vector<float>{8, 9}));
  EXPECT_FALSE((*step2)[0].values[1].defined());
  EXPECT_FALSE(dataset.next().has_value());
}

TEST_F(MirroredStrategyTest, ExperimentalDistributeDatasetSplitsEachGlobalBatch) {
  split_cpu(2);
  MirroredStrategy strategy;
  // 11 rows in global batches of 4: each replica takes 2 rows, the last batch of 3 splits 2 + 1.
  std::vector<float> xs, ys;
  for (int i = 0; i < 11; ++i) {
    xs.push_back(static_cast<float>(i));
    ys.push_back(static_cast<float>(100 + i));
  }
  const auto ds = data::Dataset::from_tensor_slices(data::Element{Tensor::from_vector(xs, {11}), Tensor::from_vector(ys, {11})})
                      .batch(4);
  auto dist = strategy.experimental_distribute_dataset(ds);
  auto step1 = dist.next();
  ASSERT_TRUE(step1.has_value());
  ASSERT_EQ(step1->size(), 2u);  // x and y
  EXPECT_EQ((*step1)[0].values[0].to_vector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ((*step1)[0].values[1].to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ((*step1)[1].values[1].to_vector<float>(), (std::vector<float>{102, 103}));
  EXPECT_EQ((*step1)[0].values[1].device().name, "/device:CPU:1");
  ASSERT_TRUE(dist.next().has_value());
  auto step3 = dist.next();
  ASSERT_TRUE(step3.has_value());
  EXPECT_EQ((*step3)[0].values[0].to_vector<float>(), (std::vector<float>{8, 9}));
  EXPECT_EQ((*step3)[0].values[1].to_vector<float>(), (std::vector<float>{10}));
  EXPECT_FALSE(dist.next().has_value());
  // A scalar element is not a batch.
  auto bad = strategy.experimental_distribute_dataset(data::Dataset::range(3));
  EXPECT_THROW(bad.next(), ValueError);
}
