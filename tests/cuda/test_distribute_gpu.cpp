// MirroredStrategy on real GPUs: the NCCL all-reduce (one rank per GPU) and the reduce-to-one-device fallback over
// logical GPUs of one physical GPU. Skips with the runtime's reason where no GPU exists.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "osprey/osprey.h"
#include "runtime/device_manager.h"
#include "tensor/tensor_impl.h"
#include "test_util.h"

using namespace osprey;
namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

namespace {
bool no_gpu(std::string& why) {
  if (!config::list_physical_devices("GPU").empty()) return false;
  why = "no GPU: " + runtime::DeviceManager::get().gpu_availability().reason;
  return true;
}

std::vector<std::vector<float>> train(bool mirrored, const std::vector<std::string>& devices) {
  random::set_seed(3);
  Tensor x, y;
  {
    DeviceScope cpu("/CPU:0");
    x = random::uniform({64, 10});
    y = random::randint(0, 4, {64}).cast(DType::float32);
  }
  std::unique_ptr<distribute::MirroredStrategy> strategy;
  keras::Sequential m;
  random::set_seed(9);
  auto build = [] {
    keras::Sequential s({layers::Input({10}), layers::Dense(16, "relu"), layers::Dense(4, "softmax")});
    s.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
    return s;
  };
  if (mirrored) {
    strategy = std::make_unique<distribute::MirroredStrategy>(devices);
    auto scope = strategy->scope();
    m = build();
  } else {
    DeviceScope on("/GPU:0");
    m = build();
  }
  m.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false});
  std::vector<std::vector<float>> w;
  for (auto* v : m.variables()) {
    for (int c = 1; c < v->num_components(); ++c) EXPECT_EQ(v->component(c).to_vector<float>(), v->component(0).to_vector<float>());
    w.push_back(v->component(0).to_vector<float>());
  }
  return w;
}
}  // namespace

TEST(DistributeGpu, NcclAllReduceWithOneRankIsTheIdentity) {
  osprey::testing::reset_runtime();
  std::string why;
  if (no_gpu(why)) GTEST_SKIP() << why;
  auto& dm = runtime::DeviceManager::get();
  auto* gpu = dm.find("GPU", 0);
  ASSERT_NE(gpu, nullptr);
  if (!gpu->platform().has_collective_all_reduce()) GTEST_SKIP() << "the CUDA plug-in found no NCCL (libnccl.so.2)";
  DeviceScope on("/GPU:0");
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  gpu->platform().all_reduce_sum({gpu}, {static_cast<float*>(t.impl()->data())}, 4);  // device memory
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(DistributeGpu, AllPhysicalGpusUseNcclAndMatchOneGpu) {
  osprey::testing::reset_runtime();
  std::string why;
  if (no_gpu(why)) GTEST_SKIP() << why;
  const auto single = train(false, {});
  osprey::testing::reset_runtime();
  std::vector<std::string> gpus;
  for (const auto& d : config::list_logical_devices("GPU")) gpus.push_back(d.name);
  distribute::MirroredStrategy probe(gpus);
  const bool nccl = probe.cross_device_ops_name() == "NcclAllReduce";
  const auto mirrored = train(true, gpus);
  for (size_t i = 0; i < single.size(); ++i) {
    for (size_t k = 0; k < single[i].size(); ++k) EXPECT_NEAR(single[i][k], mirrored[i][k], 1e-4);
  }
  RecordProperty("reduction", nccl ? "NcclAllReduce" : "ReductionToOneDevice");
}

TEST(DistributeGpu, LogicalGpusOfOneGpuFallBackToReductionToOneDevice) {
  osprey::testing::reset_runtime();
  std::string why;
  if (no_gpu(why)) GTEST_SKIP() << why;
  const auto single = train(false, {});
  osprey::testing::reset_runtime();
  config::set_logical_device_configuration(config::list_physical_devices("GPU")[0],
                                           {{.memory_limit = 2048}, {.memory_limit = 2048}});
  ::testing::internal::CaptureStderr();
  distribute::MirroredStrategy probe({"/gpu:0", "/gpu:1"});
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              ::testing::HasSubstr("NCCL is not supported when using virtual GPUs, falling back to reduction to one device"));
  EXPECT_EQ(probe.cross_device_ops_name(), "ReductionToOneDevice");
  const auto mirrored = train(true, {"/gpu:0", "/gpu:1"});
  for (size_t i = 0; i < single.size(); ++i) {
    for (size_t k = 0; k < single[i].size(); ++k) EXPECT_NEAR(single[i][k], mirrored[i][k], 1e-4);
  }
}
