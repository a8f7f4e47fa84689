// The recorded training step on a real GPU: its inputs in one device block, its forward and backward launches
// replayed as a CUDA graph (the sparse labels' range check read after each launch). It must train as the eager
// step does, with graphs on and off (OSPREY_CUDA_GRAPHS=0), and bad labels in a replayed step must raise the CPU's
// error, leave the weights as they were and the model usable. Skips with the runtime's reason where no GPU exists.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>

#include "osprey/data.h"
#include "osprey/osprey.h"
#include "runtime/device_manager.h"
#include "support/test_gpu_platform.h"
#include "test_util.h"

using namespace osprey;
namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

namespace {

bool no_gpu(std::string& why) {
  osprey::testing::reset_runtime();
  if (!config::list_logical_devices("GPU").empty()) return false;
  why = "no GPU: " + runtime::DeviceManager::get().gpu_availability().reason;
  return true;
}

struct Trained {
  std::vector<std::vector<float>> weights;
  std::vector<double> losses;
};

// fit() on host data (shuffled, weighted, a short last batch), then train_on_batch() on data already on the GPU.
Trained train(bool sparse, bool eager, bool graphs) {
  if (graphs) {
    unsetenv("OSPREY_CUDA_GRAPHS");
  } else {
    setenv("OSPREY_CUDA_GRAPHS", "0", 1);
  }
  random::set_seed(5);
  Tensor x, y, w;
  {
    DeviceScope cpu("/CPU:0");
    x = random::uniform({300, 20}, -1, 1);  // batch 64: four full batches and one of 44
    y = sparse ? random::randint(0, 10, {300}).cast(DType::int64) : random::randint(0, 2, {300, 1}).cast(DType::float32);
    w = random::uniform({300}, 0.5, 2.0);
  }
  DeviceScope gpu("/GPU:0");
  random::set_seed(6);
  keras::Sequential m({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(32, "relu"),
                       layers::Dense(sparse ? 10 : 1, sparse ? "softmax" : "sigmoid")});
  m.compile({.optimizer = "adam",
             .loss = sparse ? "sparse_categorical_crossentropy" : "binary_crossentropy",
             .metrics = {"accuracy"},
             .run_eagerly = eager});
  Trained out;
  auto h = m.fit(x, y, {.epochs = 3, .batch_size = 64, .verbose = 0, .sample_weight = w});
  out.losses = h.history["loss"];
  out.losses.push_back(h.history["accuracy"].back());
  Tensor xg = x.slice_rows(0, 64).to("/GPU:0"), yg = y.slice_rows(0, 64).to("/GPU:0");
  for (int i = 0; i < 3; ++i) out.losses.push_back(m.train_on_batch(xg, yg)[0]);
  for (auto* v : m.variables()) {
    EXPECT_EQ(v->value().device().name, "/device:GPU:0");
    out.weights.push_back(v->value().to_vector<float>());
  }
  unsetenv("OSPREY_CUDA_GRAPHS");
  return out;
}

void expect_close(const Trained& a, const Trained& b, const char* what) {
  ASSERT_EQ(a.losses.size(), b.losses.size()) << what;
  for (std::size_t i = 0; i < a.losses.size(); ++i) {
    EXPECT_NEAR(a.losses[i], b.losses[i], 1e-4 * (1 + std::abs(b.losses[i]))) << what << " loss " << i;
  }
  ASSERT_EQ(a.weights.size(), b.weights.size()) << what;
  for (std::size_t v = 0; v < a.weights.size(); ++v) {
    for (std::size_t i = 0; i < a.weights[v].size(); ++i) {
      EXPECT_NEAR(a.weights[v][i], b.weights[v][i], 1e-4 * (1 + std::abs(b.weights[v][i])))
          << what << " variable " << v << " at " << i;
    }
  }
}

void check_training() {
  // Full float32 products: with TF32, two cuBLASLt algorithms (chosen per buffer alignment) could differ by 1e-3
  // and a few steps would amplify that past any tolerance that still catches a wrong step.
  config::experimental::enable_tensor_float_32_execution(false);
  for (bool sparse : {false, true}) {
    const Trained eager = train(sparse, true, true);
    expect_close(train(sparse, false, true), eager, sparse ? "sparse, graphs" : "binary, graphs");
    expect_close(train(sparse, false, false), eager, sparse ? "sparse, no graphs" : "binary, no graphs");
  }
  config::experimental::enable_tensor_float_32_execution(true);
}

// NaN in x on the device: train_on_batch names its place as on the CPU (the check reduces on the device and reads
// the tensor only then), and finite data on the device trains.
void check_nan_inputs() {
  DeviceScope gpu("/GPU:0");
  keras::Sequential m({layers::Input({2}), layers::Dense(1)});
  m.compile({.optimizer = "sgd", .loss = "mse"});
  const Tensor y = Tensor::zeros({3, 1}).to("/GPU:0");
  const Tensor bad = Tensor::from_vector<float>({1, 2, 3, std::nanf(""), 5, 6}, {3, 2}).to("/GPU:0");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.train_on_batch(bad, y); }),
              ::testing::HasSubstr("`x` contains 1 NaN or infinite value(s), the first at sample 1"));
  const Tensor inf_y = Tensor::from_vector<float>({0, 0, INFINITY}, {3, 1}).to("/GPU:0");
  const Tensor good = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}).to("/GPU:0");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.train_on_batch(good, inf_y); }),
              ::testing::HasSubstr("`y` contains 1 NaN or infinite value(s), the first at sample 2"));
  EXPECT_TRUE(std::isfinite(m.train_on_batch(good, y).at(0)));
  // 128 KiB of x: checked by a reduction on the device (smaller tensors are copied to the host).
  std::vector<float> big(16384 * 2, 0.5f);
  big[3000 * 2 + 1] = -INFINITY;
  const Tensor big_x = Tensor::from_vector<float>(big, {16384, 2}).to("/GPU:0");
  const Tensor big_y = Tensor::zeros({16384, 1}).to("/GPU:0");
  EXPECT_THAT(osprey::testing::error_of<ValueError>([&] { m.train_on_batch(big_x, big_y); }),
              ::testing::HasSubstr("`x` contains 1 NaN or infinite value(s), the first at sample 3000"));
  EXPECT_TRUE(std::isfinite(m.train_on_batch(Tensor::ones({16384, 2}).to("/GPU:0"), big_y).at(0)));
}

// A step that copies a tensor inside it (OrthogonalRegularizer's mask) is never replayed: every step after the
// first runs eagerly, from the batch copied to the device (it once ran on the host rows there: the tape saw no
// path to the variables and the model stopped training after its first step). It trains as on the CPU.
void check_unreplayable_step() {
  auto train = [](bool cpu) {
    // On the GPU without a device scope: the default device, as a user's model (under a scope the ops would follow
    // the scope whatever the rows' device).
    std::optional<DeviceScope> on;
    if (cpu) on.emplace("/CPU:0");
    random::set_seed(8);
    keras::Sequential m({layers::Input({6}),
                         layers::Dense(5, "tanh", {.kernel_regularizer = layers::OrthogonalRegularizer(0.1, "columns")}),
                         layers::Dense(1)});
    m.compile({.optimizer = keras::optimizers::SGD(keras::optimizers::SGDOptions{.learning_rate = 0.1}), .loss = "mse"});
    Tensor x, y;
    {
      DeviceScope cpu("/CPU:0");
      random::set_seed(9);
      x = random::uniform({8, 6}, -1, 1);
      y = random::uniform({8, 1}, -1, 1);
    }
    std::vector<double> losses;
    for (int i = 0; i < 4; ++i) losses.push_back(m.train_on_batch(x, y).at(0));
    return std::pair{losses, m.get_weights()[2].to_vector<float>()};
  };
  const auto [cpu_losses, cpu_w] = train(true);
  const auto [gpu_losses, gpu_w] = train(false);
  EXPECT_GT(cpu_losses[0] - cpu_losses[3], 0.01);  // it trains
  for (std::size_t i = 0; i < cpu_losses.size(); ++i) EXPECT_NEAR(gpu_losses[i], cpu_losses[i], 1e-5) << "step " << i;
  ASSERT_EQ(gpu_w.size(), cpu_w.size());
  for (std::size_t k = 0; k < cpu_w.size(); ++k) EXPECT_NEAR(gpu_w[k], cpu_w[k], 1e-5) << "kernel[" << k << "]";
}

void check_bad_labels() {
  DeviceScope gpu("/GPU:0");
  random::set_seed(7);
  keras::Sequential m({layers::Input({20}), layers::Dense(16, "relu"), layers::Dense(4, "softmax")});
  m.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  Tensor x = random::uniform({32, 20});
  Tensor good = random::randint(0, 4, {32}).cast(DType::int64);
  std::vector<int64_t> bad_v(32, 1);
  bad_v[5] = 9;
  Tensor bad = Tensor::from_vector(bad_v, {32});
  for (int i = 0; i < 3; ++i) m.train_on_batch(x, good);  // recorded, then replayed
  std::vector<std::vector<float>> before;
  for (auto* v : m.variables()) before.push_back(v->value().to_vector<float>());
  try {
    m.train_on_batch(x, bad);
    ADD_FAILURE() << "a label of 9 with 4 classes was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("Received a label value of 9"), std::string::npos) << e.what();
  }
  std::vector<std::vector<float>> after;
  for (auto* v : m.variables()) after.push_back(v->value().to_vector<float>());
  EXPECT_EQ(after, before) << "the failed step changed the weights";
  const double loss = m.train_on_batch(x, good)[0];
  EXPECT_TRUE(std::isfinite(loss));
}

}  // namespace

TEST(RecordedGpuStep, TrainsAsTheEagerStepWithAndWithoutCudaGraphs) {
  std::string why;
  if (no_gpu(why)) GTEST_SKIP() << why;
  check_training();
}

TEST(RecordedGpuStep, BadLabelsInAReplayedStepRaiseAndTheModelTrainsOn) {
  std::string why;
  if (no_gpu(why)) GTEST_SKIP() << why;
  check_bad_labels();
}

// The same checks on the test platform's simulated GPU, so that they are exercised on every machine: once with
// exactly the kernels the CUDA plug-in has (the path a real GPU runs), once with every kernel.
TEST(RecordedGpuStep, HarnessOnTheTestPlatform) {
  for (const auto& missing : {osprey::testing::ops_missing_on_cuda(), std::set<ops::OpId>{}}) {
    osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(1), .missing_kernels = missing});
    check_training();
    check_bad_labels();
    check_nan_inputs();
    check_unreplayable_step();
    osprey::testing::reset_runtime();
  }
}

TEST(RecordedGpuStep, AStepThatIsNeverReplayedTrainsAsOnTheCpu) {
  std::string why;
  if (no_gpu(why)) GTEST_SKIP() << why;
  config::experimental::enable_tensor_float_32_execution(false);
  check_unreplayable_step();
  config::experimental::enable_tensor_float_32_execution(true);
}

TEST(RecordedGpuStep, NaNInputsOnTheGpuAreReportedWithTheirPlace) {
  std::string why;
  if (no_gpu(why)) GTEST_SKIP() << why;
  check_nan_inputs();
}

// A Dataset that maps on two threads and prefetches onto the GPU feeds the recorded step while it is captured: the
// prefetch thread's copies must stay out of the graph (on the first real GPU they joined it and
// cudaGraphInstantiate crashed). fit, evaluate and predict give what the same batches from tensors give.
TEST(RecordedGpuStep, APrefetchingDatasetTrainsAsTheSameBatchesFromTensors) {
  std::string why;
  if (no_gpu(why)) GTEST_SKIP() << why;
  unsetenv("OSPREY_CUDA_GRAPHS");
  Tensor x, y;
  {
    DeviceScope cpu("/CPU:0");
    random::set_seed(1);
    x = random::uniform({95, 4});
    y = random::randint(0, 2, {95, 1}).cast(DType::float32);
  }
  DeviceScope gpu("/GPU:0");
  auto model = [] {
    random::set_seed(2);
    keras::Sequential m({layers::Input({4}), layers::Dense(8, "relu"), layers::Dense(1, "sigmoid")});
    m.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
    return m;
  };
  keras::Sequential a = model();
  auto ha = a.fit(x, y, {.epochs = 3, .batch_size = 10, .verbose = 0, .shuffle = false});
  keras::Sequential b = model();
  const data::Dataset ds = data::Dataset::from_tensor_slices(data::Element{x, y})
                               .map([](const data::Element& e) { return e; }, 2)
                               .batch(10)
                               .prefetch(data::AUTOTUNE);
  auto hb = b.fit(ds, {.epochs = 3, .verbose = 0});
  ASSERT_EQ(ha.history.at("loss").size(), 3u);
  for (const auto& [name, values] : ha.history) {
    for (size_t e = 0; e < values.size(); ++e) EXPECT_NEAR(values[e], hb.history.at(name)[e], 1e-6) << name << e;
  }
  for (size_t i = 0; i < a.variables().size(); ++i) {
    const auto wa = a.variables()[i]->value().to_vector<float>(), wb = b.variables()[i]->value().to_vector<float>();
    ASSERT_EQ(wa.size(), wb.size());
    for (size_t k = 0; k < wa.size(); ++k) EXPECT_NEAR(wa[k], wb[k], 1e-6) << "variable " << i << "[" << k << "]";
  }
  const auto ea = a.evaluate(x, y, {.batch_size = 10, .verbose = 0}), eb = b.evaluate(ds, {.verbose = 0});
  for (size_t i = 0; i < ea.size(); ++i) EXPECT_NEAR(ea[i], eb[i], 1e-6);
}

// The test platform's list of kernels the CUDA plug-in lacks is the plug-in's.
TEST(RecordedGpuStep, TheTestPlatformMissesExactlyTheKernelsTheCudaPlugInLacks) {
  std::string why;
  if (no_gpu(why)) GTEST_SKIP() << why;
  const auto missing = osprey::testing::ops_missing_on_cuda();
  for (int op = 0; op < static_cast<int>(ops::OpId::kCount); ++op) {
    const auto id = static_cast<ops::OpId>(op);
    EXPECT_EQ(ops::has_kernel(id, runtime::DeviceType::GPU), missing.count(id) == 0) << "op " << op;
  }
}
