// The device runtime's GPU semantics (spec/tf_devices.md §8), on the test platform's simulated GPUs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include <fmt/format.h>

#include "osprey/autodiff.h"
#include "osprey/variable.h"
#include "osprey/config.h"
#include "osprey/keras.h"
#include "osprey/random.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "osprey/tensor.h"
#include "runtime/device_manager.h"
#include "support/test_gpu_platform.h"
#include "test_util.h"

using namespace osprey;
namespace cfg = osprey::config;
using ::testing::HasSubstr;
using runtime::DeviceManager;

namespace {

// Sets (or unsets, with nullptr) an environment variable for one test.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~EnvVar() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class GpuRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override { osprey::testing::install_test_gpus(3); }
  void TearDown() override { osprey::testing::reset_runtime(); }
  EnvVar cvd_{"CUDA_VISIBLE_DEVICES", nullptr};
  EnvVar force_growth_{"TF_FORCE_GPU_ALLOW_GROWTH", nullptr};
};

std::vector<std::string> uuids_of_physical_gpus() {
  std::vector<std::string> out;
  for (const auto& d : DeviceManager::get().physical_devices()) {
    if (d.type == runtime::DeviceType::GPU) out.push_back(d.uuid);
  }
  return out;
}

runtime::Device& logical(const std::string& type, int index) {
  auto* d = DeviceManager::get().find(type, index);
  if (!d) throw std::runtime_error("no device " + type + ":" + std::to_string(index));
  return *d;
}

using osprey::testing::error_of;

}  // namespace

// ---- Discovery and visibility ----

TEST_F(GpuRuntimeTest, GpusAreListedAfterTheCpuWithPlatformIds) {
  auto all = cfg::list_physical_devices();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0], (PhysicalDevice{"/physical_device:CPU:0", "CPU"}));
  EXPECT_EQ(all[1], (PhysicalDevice{"/physical_device:GPU:0", "GPU"}));
  EXPECT_EQ(all[3], (PhysicalDevice{"/physical_device:GPU:2", "GPU"}));
  EXPECT_TRUE(cfg::list_physical_devices("gpu").empty());
  EXPECT_FALSE(DeviceManager::get().initialized());
  EXPECT_EQ(cfg::get_visible_devices(), all);
  auto logical_gpus = cfg::list_logical_devices("GPU");
  EXPECT_TRUE(DeviceManager::get().initialized());
  ASSERT_EQ(logical_gpus.size(), 3u);
  EXPECT_EQ(logical_gpus[2], (LogicalDevice{"/device:GPU:2", "GPU"}));
  EXPECT_EQ(cfg::list_logical_devices()[0].device_type, "CPU");
}

TEST_F(GpuRuntimeTest, DeviceDetails) {
  auto gpu = cfg::list_physical_devices("GPU")[0];
  auto details = cfg::experimental::get_device_details(gpu);
  EXPECT_EQ(details.at("device_name"), "Osprey Test GPU");
  EXPECT_EQ(details.at("compute_capability"), "9.0");
  EXPECT_FALSE(DeviceManager::get().initialized());
  EXPECT_THAT(error_of<ValueError>([] { cfg::experimental::get_device_details({"/physical_device:GPU:9", "GPU"}); }),
              HasSubstr("The PhysicalDevice must be one obtained from calling"));
}

TEST_F(GpuRuntimeTest, SetVisibleDevicesWithAndWithoutType) {
  auto gpus = cfg::list_physical_devices("GPU");
  auto cpu = cfg::list_physical_devices("CPU")[0];
  EXPECT_EQ(error_of<ValueError>([&] { cfg::set_visible_devices({cpu}, "GPU"); }),
            "Unrecognized device: PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')");
  cfg::set_visible_devices(gpus[1], "GPU");  // one device, not a list
  EXPECT_EQ(cfg::get_visible_devices(), (std::vector<PhysicalDevice>{cpu, gpus[1]}));
  cfg::set_visible_devices({cpu, gpus[2]});  // without a type: exactly this list
  EXPECT_EQ(cfg::get_visible_devices(), (std::vector<PhysicalDevice>{cpu, gpus[2]}));
  auto logical_gpus = cfg::list_logical_devices("GPU");
  ASSERT_EQ(logical_gpus.size(), 1u);
  EXPECT_EQ(logical_gpus[0].name, "/device:GPU:0");
  EXPECT_EQ(logical("GPU", 0).physical().platform_id, 2);
}

TEST_F(GpuRuntimeTest, HidingEveryGpuCreatesNoGpuDeviceAndPlacesOnTheCpu) {
  cfg::set_visible_devices(std::vector<PhysicalDevice>{}, "GPU");
  EXPECT_TRUE(cfg::list_logical_devices("GPU").empty());
  EXPECT_EQ(DeviceManager::get().default_device().name(), "/device:CPU:0");
  EXPECT_EQ(Tensor::ones({2, 2}).device().name, "/device:CPU:0");
  EXPECT_THAT(DeviceManager::get().gpu_availability().reason, HasSubstr("hidden with set_visible_devices"));
}

TEST_F(GpuRuntimeTest, VisibilityFreezesAtInitialisation) {
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_visible_devices({gpus[0], gpus[1]}, "GPU");
  (void)cfg::list_logical_devices();
  cfg::set_visible_devices({gpus[0], gpus[1]}, "GPU");  // the same list: a silent no-op
  EXPECT_EQ(error_of<RuntimeError>([&] { cfg::set_visible_devices({gpus[0]}, "GPU"); }),
            "Visible devices cannot be modified after being initialized");
}

TEST_F(GpuRuntimeTest, EnteringADeviceScopeInitialises) {
  auto gpu = cfg::list_physical_devices("GPU")[0];
  { DeviceScope on("/GPU:0"); }
  EXPECT_EQ(error_of<RuntimeError>([&] { cfg::experimental::set_memory_growth(gpu, true); }),
            "Physical devices cannot be modified after being initialized");
}

// ---- CUDA_VISIBLE_DEVICES and ids ----

TEST_F(GpuRuntimeTest, EmptyOrMinusOneCudaVisibleDevicesHidesEveryGpu) {
  for (const char* value : {"", "-1"}) {
    EnvVar cvd("CUDA_VISIBLE_DEVICES", value);
    osprey::testing::install_test_gpus(3);
    ::testing::internal::CaptureStderr();
    EXPECT_TRUE(cfg::list_physical_devices("GPU").empty()) << value;
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(err, HasSubstr("] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"));
    EXPECT_THAT(err, HasSubstr(": E ")) << "logged at ERROR level";
    EXPECT_THAT(DeviceManager::get().gpu_availability().reason, HasSubstr("hides every GPU"));
  }
}

TEST_F(GpuRuntimeTest, CudaVisibleDevicesReordersAndRenumbers) {
  std::vector<std::string> machine;
  for (const auto& g : osprey::testing::default_test_gpus(3)) machine.push_back(g.uuid);
  EnvVar cvd("CUDA_VISIBLE_DEVICES", "2,1");
  osprey::testing::install_test_gpus(3);
  EXPECT_EQ(cfg::list_physical_devices("GPU"),
            (std::vector<PhysicalDevice>{{"/physical_device:GPU:0", "GPU"}, {"/physical_device:GPU:1", "GPU"}}));
  EXPECT_EQ(uuids_of_physical_gpus(), (std::vector<std::string>{machine[2], machine[1]}));
  EXPECT_EQ(cfg::list_logical_devices("GPU")[0].name, "/device:GPU:0");
}

TEST_F(GpuRuntimeTest, CudaVisibleDevicesStopsAtTheFirstInvalidEntry) {
  std::vector<std::string> machine;
  for (const auto& g : osprey::testing::default_test_gpus(3)) machine.push_back(g.uuid);
  EnvVar cvd("CUDA_VISIBLE_DEVICES", "0,2,-1,1");
  osprey::testing::install_test_gpus(3);
  EXPECT_EQ(uuids_of_physical_gpus(), (std::vector<std::string>{machine[0], machine[2]}));
}

TEST_F(GpuRuntimeTest, CudaVisibleDevicesSelectsByUuidPrefix) {
  std::vector<std::string> machine;
  for (const auto& g : osprey::testing::default_test_gpus(3)) machine.push_back(g.uuid);
  {
    EnvVar cvd("CUDA_VISIBLE_DEVICES", "GPU-20000000");
    osprey::testing::install_test_gpus(3);
    EXPECT_EQ(uuids_of_physical_gpus(), (std::vector<std::string>{machine[2]}));
  }
  {
    EnvVar cvd("CUDA_VISIBLE_DEVICES", "GPU-1,GPU-");  // the second prefix is ambiguous: the list stops there
    osprey::testing::install_test_gpus(3);
    EXPECT_EQ(uuids_of_physical_gpus(), (std::vector<std::string>{machine[1]}));
  }
}

TEST_F(GpuRuntimeTest, CudaVisibleDevicesIsReadOnceAtDiscovery) {
  EXPECT_EQ(cfg::list_physical_devices("GPU").size(), 3u);
  EnvVar cvd("CUDA_VISIBLE_DEVICES", "0");
  EXPECT_EQ(cfg::list_physical_devices("GPU").size(), 3u);
  EXPECT_EQ(cfg::list_logical_devices("GPU").size(), 3u);
}

TEST_F(GpuRuntimeTest, CreationLogLineAndIgnoredOldGpus) {
  auto gpus = osprey::testing::default_test_gpus(2);
  gpus[0].name = "Old GPU";
  gpus[0].cc_major = 3;
  gpus[0].cc_minor = 5;
  osprey::testing::install_test_platform({.gpus = gpus, .min_compute_capability = {5, 0}});
  ::testing::internal::CaptureStderr();
  auto physical = cfg::list_physical_devices("GPU");
  (void)cfg::list_logical_devices();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(physical.size(), 1u);
  EXPECT_EQ(physical[0].name, "/physical_device:GPU:1");  // the gap stays: names are platform ids
  EXPECT_THAT(err, HasSubstr("] Ignoring visible gpu device (device: 0, name: Old GPU, pci bus id: 0000:00:00.0, "
                             "compute capability: 3.5) with Cuda compute capability 3.5. The minimum required Cuda "
                             "capability is 5.0."));
  const int64_t mb = ((int64_t{15} << 30) - (int64_t{1800} << 20)) >> 20;
  EXPECT_THAT(err, HasSubstr(fmt::format("] Created device /job:localhost/replica:0/task:0/device:GPU:0 with {} MB "
                                         "memory:  -> device: 1, name: Osprey Test GPU, pci bus id: 0000:01:00.0, "
                                         "compute capability: 9.0",
                                         mb)));
}

TEST_F(GpuRuntimeTest, VisibleDeviceListOrdersTfIdsAndRejectsBadLists) {
  EXPECT_EQ(error_of<InvalidArgumentError>([] { cfg::set_visible_device_list("1,1"); }),
            "visible_device_list contained a duplicate entry: 1,1");
  EXPECT_EQ(error_of<InvalidArgumentError>([] { cfg::set_visible_device_list("3"); }),
            "'visible_device_list' listed an invalid Device id '3' but visible device count is 3");
  EXPECT_EQ(error_of<InvalidArgumentError>([] { cfg::set_visible_device_list("x"); }),
            "Could not parse entry in 'visible_device_list': 'x'. visible_device_list = x");
  cfg::set_visible_device_list("2,0");
  ASSERT_EQ(cfg::list_logical_devices("GPU").size(), 2u);
  EXPECT_EQ(logical("GPU", 0).physical().platform_id, 2);
  EXPECT_EQ(logical("GPU", 1).physical().platform_id, 0);
}

TEST_F(GpuRuntimeTest, VirtualDevicesGetConsecutiveTfIdsInVisibleListOrder) {
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(gpus[2], {{.memory_limit = 100}, {.memory_limit = 200}});
  cfg::set_visible_device_list("2,0");
  auto logical_gpus = cfg::list_logical_devices("GPU");
  ASSERT_EQ(logical_gpus.size(), 3u);
  EXPECT_EQ(logical("GPU", 0).physical().platform_id, 2);
  EXPECT_EQ(logical("GPU", 1).physical().platform_id, 2);
  EXPECT_EQ(logical("GPU", 2).physical().platform_id, 0);
  EXPECT_EQ(logical("GPU", 1).allocator().limit(), int64_t{200} << 20);
}

// ---- Memory ----

TEST_F(GpuRuntimeTest, WithoutGrowthTheWholeLimitIsReservedUpFront) {
  auto& gpu = logical("GPU", 0);
  const int64_t limit = (int64_t{15} << 30) - (int64_t{1800} << 20);  // free minus the cc 9.x reserve
  EXPECT_EQ(gpu.allocator().limit(), limit);
  EXPECT_EQ(gpu.allocator().stats().reserved, limit);
  EXPECT_EQ(gpu.allocator().name(), "GPU_0_bfc");
}

TEST_F(GpuRuntimeTest, SmallFreeMemoryKeepsTheSmallReserve) {
  auto gpus = osprey::testing::default_test_gpus(1);
  gpus[0].free_memory = int64_t{1} << 30;
  gpus[0].cc_major = 7;
  osprey::testing::install_test_platform({.gpus = gpus});
  EXPECT_EQ(logical("GPU", 0).allocator().limit(), (int64_t{1} << 30) - (int64_t{225} << 20));
}

TEST_F(GpuRuntimeTest, WithGrowthRegionsStartAt2MiBAndDoubleAndAreNeverReturned) {
  for (auto& g : cfg::list_physical_devices("GPU")) cfg::experimental::set_memory_growth(g, true);
  auto& gpu = logical("GPU", 0);
  EXPECT_EQ(gpu.allocator().stats().reserved, 0);
  {
    Tensor a = Tensor::zeros({1024});  // 4 KiB: the first region, 2 MiB
    EXPECT_EQ(gpu.allocator().stats().reserved, int64_t{2} << 20);
    Tensor b = Tensor::zeros({512, 1024});  // 2 MiB more: the next region doubles to 4 MiB
    EXPECT_EQ(gpu.allocator().stats().reserved, int64_t{6} << 20);
  }
  EXPECT_EQ(gpu.allocator().stats().current, 0);
  EXPECT_EQ(gpu.allocator().stats().reserved, int64_t{6} << 20);  // freed memory stays in the pool
}

TEST_F(GpuRuntimeTest, MemoryGrowthRules) {
  auto gpus = cfg::list_physical_devices("GPU");
  EXPECT_FALSE(cfg::experimental::get_memory_growth(gpus[0]).has_value());
  cfg::set_logical_device_configuration(gpus[1], {{.memory_limit = 512}});
  EXPECT_EQ(error_of<ValueError>([&] { cfg::experimental::set_memory_growth(gpus[1], true); }),
            "Cannot set memory growth on device when virtual devices configured");
  EXPECT_EQ(error_of<ValueError>([&] { cfg::set_logical_device_configuration(gpus[0], {{}}); }),
            "Setting memory limit is required for GPU virtual devices");
}

TEST_F(GpuRuntimeTest, GrowthMustAgreeBetweenVisibleGpusCheckedAtInitialisation) {
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::experimental::set_memory_growth(gpus[0], true);  // only one of three: accepted here...
  EXPECT_EQ(error_of<ValueError>([] { cfg::list_logical_devices(); }),
            "Memory growth cannot differ between GPU devices");  // ...refused at initialisation
  osprey::testing::install_test_gpus(3);
  gpus = cfg::list_physical_devices("GPU");
  cfg::experimental::set_memory_growth(gpus[0], true);
  cfg::set_visible_devices(gpus[0], "GPU");  // the others hidden: they do not count
  EXPECT_EQ(cfg::list_logical_devices("GPU").size(), 1u);
  cfg::experimental::set_memory_growth(gpus[0], true);  // same value after init: no-op
  EXPECT_EQ(error_of<RuntimeError>([&] { cfg::experimental::set_memory_growth(gpus[0], false); }),
            "Physical devices cannot be modified after being initialized");
}

TEST_F(GpuRuntimeTest, GrowthIsDroppedOnceAGpuHasVirtualDevices) {
  auto gpus = cfg::list_physical_devices("GPU");
  for (auto& g : gpus) cfg::experimental::set_memory_growth(g, true);
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit = 64}});
  auto& gpu1 = logical("GPU", 1);  // physical GPU 1, no virtual devices of its own
  EXPECT_EQ(gpu1.allocator().stats().reserved, gpu1.allocator().limit());  // reserved up front: no growth
}

TEST_F(GpuRuntimeTest, ForceAllowGrowthOverridesAndRejectsBadValues) {
  {
    EnvVar force("TF_FORCE_GPU_ALLOW_GROWTH", "true");
    osprey::testing::install_test_gpus(1);
    ::testing::internal::CaptureStderr();
    auto& gpu = logical("GPU", 0);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(gpu.allocator().stats().reserved, 0);  // growing
    EXPECT_THAT(err, HasSubstr("] Overriding orig_value setting because the TF_FORCE_GPU_ALLOW_GROWTH environment "
                               "variable is set. Original config value was 0."));
  }
  {
    EnvVar force("TF_FORCE_GPU_ALLOW_GROWTH", "1");
    osprey::testing::install_test_gpus(1);
    ::testing::internal::CaptureStderr();
    auto& gpu = logical("GPU", 0);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(gpu.allocator().stats().reserved, gpu.allocator().limit());  // configured value kept
    EXPECT_THAT(err, HasSubstr("] The TF_FORCE_GPU_ALLOW_GROWTH environment variable is set but could not be parsed: "
                               "\"1\". Valid values are \"true\" or \"false\". Using original config value of 0."));
  }
  {
    // It applies to virtual devices too: the only way to combine a memory_limit with growth.
    EnvVar force("TF_FORCE_GPU_ALLOW_GROWTH", "true");
    osprey::testing::install_test_gpus(1);
    cfg::set_logical_device_configuration(cfg::list_physical_devices("GPU")[0], {{.memory_limit = 1024}});
    auto& gpu = logical("GPU", 0);
    EXPECT_EQ(gpu.allocator().limit(), int64_t{1024} << 20);
    EXPECT_EQ(gpu.allocator().stats().reserved, 0);
  }
}

TEST_F(GpuRuntimeTest, MemoryLimitCapsTheAllocatorAndShowsInTheLog) {
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit = 1024}, {.memory_limit = 1024}});
  ::testing::internal::CaptureStderr();
  auto logical_gpus = cfg::list_logical_devices("GPU");
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(logical_gpus.size(), 4u);  // GPU:0, GPU:1 on physical 0; physical 1 and 2 become GPU:2, GPU:3
  EXPECT_EQ(logical("GPU", 2).physical().platform_id, 1);
  EXPECT_THAT(err, HasSubstr("device:GPU:1 with 1024 MB memory:  -> device: 0,"));
  EXPECT_EQ(cfg::get_logical_device_configuration(gpus[0])->size(), 2u);
  EXPECT_FALSE(cfg::get_logical_device_configuration(gpus[1]).has_value());
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit = 1024}, {.memory_limit = 1024}});  // same: no-op
  EXPECT_EQ(error_of<RuntimeError>([&] { cfg::set_logical_device_configuration(gpus[0], {{.memory_limit = 10}}); }),
            "Virtual devices cannot be modified after being initialized");
}

TEST_F(GpuRuntimeTest, OutOfMemoryIsAResourceExhaustedErrorWithTheNumbers) {
  cfg::set_logical_device_configuration(cfg::list_physical_devices("GPU")[0], {{.memory_limit = 1}});
  DeviceScope on("/GPU:0");
  Tensor fits = Tensor::zeros({512, 256});  // 512 KiB of the 1 MiB
  ::testing::internal::CaptureStderr();
  const std::string msg = error_of<ResourceExhaustedError>([] { (void)Tensor::zeros({512, 512}); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(msg, HasSubstr("OOM when allocating tensor with shape[512,512] and type float on "
                             "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc"));
  EXPECT_THAT(msg, HasSubstr("1048576 bytes"));  // requested
  EXPECT_THAT(msg, HasSubstr("524288 bytes in use"));
  EXPECT_THAT(msg, HasSubstr("memory growth"));  // the hint
  EXPECT_THAT(err, HasSubstr("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00MiB"));
  EXPECT_THAT(err, HasSubstr("InUse:"));
  EXPECT_EQ(cfg::experimental::get_memory_info("GPU:0").current, 512 * 256 * 4);  // nothing leaked
}

TEST_F(GpuRuntimeTest, MemoryInfoOnAGpu) {
  cfg::experimental::reset_memory_stats("GPU:1");
  {
    DeviceScope on("/GPU:1");
    Tensor t = Tensor::zeros({256, 256});
    auto info = cfg::experimental::get_memory_info("GPU:1");
    EXPECT_EQ(info.current, 256 * 256 * 4);
    EXPECT_EQ(cfg::experimental::get_memory_usage("/device:GPU:1"), info.current);
  }
  auto after = cfg::experimental::get_memory_info("GPU:1");
  EXPECT_EQ(after.current, 0);
  EXPECT_EQ(after.peak, 256 * 256 * 4);
  cfg::experimental::reset_memory_stats("GPU:1");
  EXPECT_EQ(cfg::experimental::get_memory_info("GPU:1").peak, 0);
  EXPECT_EQ(error_of<ValueError>([] { cfg::experimental::get_memory_info("GPU:7"); }),
            "No matching devices found for 'GPU:7'");
}

// ---- Placement ----

TEST_F(GpuRuntimeTest, OpsRunOnTheFirstGpuByDefault) {
  Tensor a = Tensor::ones({4, 3});
  EXPECT_EQ(a.device().name, "/device:GPU:0");
  Tensor c = ops::matmul(a, Tensor::ones({3, 2}));
  EXPECT_EQ(c.device().name, "/device:GPU:0");
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(8, 3.f));
  EXPECT_THROW((void)a.data<float>(), FailedPreconditionError);  // device memory is not host-readable
}

TEST_F(GpuRuntimeTest, SoftPlacementFallsBackToTheCpuForOpsWithoutAGpuKernel) {
  DeviceScope on("/GPU:0");
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor idx = Tensor::from_vector<int64_t>({2, 0}, {2});
  Tensor g = ops::gather_rows(x, idx);  // GatherRows has no kernel on the test GPU
  EXPECT_EQ(g.device().name, "/device:CPU:0");
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{5, 6, 1, 2}));
  cfg::set_soft_device_placement(false);
  EXPECT_EQ(error_of<InvalidArgumentError>([&] { (void)ops::gather_rows(x, idx); }),
            "Could not satisfy device specification '/job:localhost/replica:0/task:0/device:GPU:0'. "
            "enable_soft_placement=0. Supported device types [CPU]. All available devices "
            "[/job:localhost/replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:GPU:0, "
            "/job:localhost/replica:0/task:0/device:GPU:1, /job:localhost/replica:0/task:0/device:GPU:2]. "
            "[Op:GatherV2]");
}

TEST_F(GpuRuntimeTest, AMissingGpuIndexFallsBackToGpu0UnderSoftPlacement) {
  osprey::testing::install_test_gpus(1);
  EXPECT_TRUE(cfg::get_soft_device_placement());
  Tensor a = Tensor::ones({2, 2});
  {
    DeviceScope on("/GPU:5");
    EXPECT_EQ(ops::add(a, a).device().name, "/device:GPU:0");
  }
  cfg::set_soft_device_placement(false);  // can change after initialisation
  DeviceScope on("/GPU:5");
  EXPECT_EQ(error_of<InvalidArgumentError>([&] { (void)ops::add(a, a); }),
            "Could not satisfy device specification '/job:localhost/replica:0/task:0/device:GPU:5'. "
            "enable_soft_placement=0. Supported device types [GPU, CPU]. All available devices "
            "[/job:localhost/replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:GPU:0]. "
            "[Op:AddV2]");
}

TEST_F(GpuRuntimeTest, EverySpellingSelectsTheSameGpu) {
  for (const char* spec : {"/GPU:1", "GPU:1", "gpu:1", "/device:GPU:1", "/job:localhost/replica:0/task:0/device:GPU:1"}) {
    DeviceScope on(spec);
    EXPECT_EQ(Tensor::ones({1}).device().name, "/device:GPU:1") << spec;
    EXPECT_EQ(current_device_name(), "/job:localhost/replica:0/task:0/device:GPU:1") << spec;
  }
  for (const char* spec : {"GPU", "/GPU:*"}) {
    DeviceScope on(spec);
    EXPECT_EQ(Tensor::ones({1}).device().device_type, "GPU") << spec;
  }
  DeviceScope on(LogicalDevice{"/device:GPU:2", "GPU"});
  EXPECT_EQ(Tensor::ones({1}).device().name, "/device:GPU:2");
}

TEST_F(GpuRuntimeTest, NestedScopesAndAutomaticPlacementInside) {
  DeviceScope outer("/GPU:1");
  {
    DeviceScope inner("/CPU:0");
    EXPECT_EQ(Tensor::ones({1}).device().name, "/device:CPU:0");
    {
      DeviceScope automatic(nullptr);
      EXPECT_EQ(Tensor::ones({1}).device().name, "/device:GPU:0");
    }
  }
  EXPECT_EQ(Tensor::ones({1}).device().name, "/device:GPU:1");
}

TEST_F(GpuRuntimeTest, VariablesLandOnGpu0AndTheirUpdatesFollowThem) {
  Variable v(Tensor::ones({2, 2}), "v");
  EXPECT_EQ(v.value().device().name, "/device:GPU:0");
  DeviceScope on("/CPU:0");
  Tensor on_cpu = ops::add(v.value(), v.value());  // computing elsewhere copies silently
  EXPECT_EQ(on_cpu.device().name, "/device:CPU:0");
  v.assign(on_cpu);  // the variable stays where it was created
  EXPECT_EQ(v.value().device().name, "/device:GPU:0");
  EXPECT_EQ(v.value().to_vector<float>(), std::vector<float>(4, 2.f));
}

TEST_F(GpuRuntimeTest, InputsOnAnotherDeviceAreCopiedSilently) {
  Tensor on_cpu;
  {
    DeviceScope cpu("/CPU:0");
    on_cpu = Tensor::ones({2, 2});
  }
  DeviceScope gpu("/GPU:0");
  Tensor r = ops::mul(on_cpu, Tensor::full({2, 2}, 3.0));
  EXPECT_EQ(r.device().name, "/device:GPU:0");
  EXPECT_EQ(r.to_vector<float>(), std::vector<float>(4, 3.f));
}

// ---- Logging ----

TEST_F(GpuRuntimeTest, PlacementLogNamesTheGpu) {
  Tensor a = Tensor::ones({2, 2});
  debugging::set_log_device_placement(true);  // after initialisation: allowed
  ::testing::internal::CaptureStderr();
  (void)ops::matmul(a, a);
  const std::string err = ::testing::internal::GetCapturedStderr();
  debugging::set_log_device_placement(false);
  EXPECT_THAT(err, HasSubstr("] Executing op MatMul in device /job:localhost/replica:0/task:0/device:GPU:0\n"));
}

// ---- A Keras model on a (simulated) GPU: nothing in fit/evaluate/predict may assume host memory ----

TEST_F(GpuRuntimeTest, SequentialTrainsOnTheGpuWithVariablesThere) {
  random::set_seed(3);
  Tensor x = random::uniform({256, 4});
  auto xv = x.to_vector<float>();
  std::vector<float> yv(256);
  for (int i = 0; i < 256; ++i) yv[i] = xv[4 * i] + xv[4 * i + 1] > xv[4 * i + 2] + xv[4 * i + 3] ? 1.f : 0.f;
  Tensor y = Tensor::from_vector(yv, {256, 1});
  keras::Sequential model({keras::layers::Input({4}), keras::layers::Dense(8, "relu"), keras::layers::Dense(1, "sigmoid")});
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  for (auto* v : model.variables()) EXPECT_EQ(v->value().device().name, "/device:GPU:0") << v->path();
  auto history = model.fit(x, y, {.epochs = 5, .batch_size = 32, .verbose = 0});
  EXPECT_LT(history.history.at("loss").back(), history.history.at("loss").front());
  auto scores = model.evaluate(x, y, {.verbose = 0});
  EXPECT_EQ(scores.size(), 2u);
  Tensor p = model.predict(x, {.verbose = 0});
  EXPECT_EQ(p.shape(), Shape({256, 1}));
  for (auto* v : model.variables()) EXPECT_EQ(v->value().device().name, "/device:GPU:0") << v->path();
}

// On a GPU the recorded step plan keeps its inputs in one device block (one copy per step from a host staging
// block, fit's shuffled rows gathered there) and replays as a graph captured at its first replay: still the
// eager step bit for bit, with and without graphs, for the sigmoid/BCE and softmax/sparse paths, sample weights,
// shuffled epochs and a short last batch (a second plan: a second graph).
TEST_F(GpuRuntimeTest, RecordedStepOnTheGpuReplaysAsAGraphAndEqualsTheEagerStep) {
  for (bool sparse : {false, true}) {
    std::vector<std::vector<float>> result[3];
    std::vector<double> losses[3];
    for (int run = 0; run < 3; ++run) {  // recorded with graphs, recorded without graphs, eager
      osprey::testing::reset_runtime();
      osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(1), .graphs = run != 1});
      osprey::testing::graph_captures = osprey::testing::graph_launches = 0;
      random::set_seed(41);
      Tensor x = random::uniform({101, 5}, -1, 1);  // batch 16: six full batches and a short one of 5
      Tensor y = sparse ? random::randint(0, 4, {101}).cast(DType::int64)
                        : random::randint(0, 2, {101, 1}).cast(DType::float32);
      Tensor w = random::uniform({101}, 0.5, 2.0);
      keras::Sequential m({keras::layers::Input({5}), keras::layers::Dense(12, "relu"),
                           keras::layers::Dense(sparse ? 4 : 1, sparse ? "softmax" : "sigmoid")});
      m.compile({.optimizer = "adam",
                 .loss = sparse ? "sparse_categorical_crossentropy" : "binary_crossentropy",
                 .metrics = {"accuracy"},
                 .run_eagerly = run == 2});
      auto h = m.fit(x, y, {.epochs = 3, .batch_size = 16, .verbose = 0, .sample_weight = w});
      losses[run] = h.history["loss"];
      losses[run].push_back(h.history["accuracy"].back());
      for (int i = 0; i < 2; ++i) {  // unweighted: a third plan, recorded by the first call, replayed by the second
        losses[run].push_back(m.train_on_batch(x.slice_rows(0, 16), y.slice_rows(0, 16))[0]);
      }
      for (auto* v : m.variables()) {
        EXPECT_EQ(v->value().device().name, "/device:GPU:0");
        result[run].push_back(v->value().to_vector<float>());
      }
      if (run == 0) {
        EXPECT_EQ(osprey::testing::graph_captures, 3) << "one graph per plan (16 and 5 weighted rows, 16 rows)";
        EXPECT_EQ(osprey::testing::graph_launches, 3 * 7 + 2 - 3) << "every step but each plan's recording";
      } else {
        EXPECT_EQ(osprey::testing::graph_launches, 0);
      }
    }
    EXPECT_EQ(result[0], result[2]) << (sparse ? "sparse" : "binary");
    EXPECT_EQ(losses[0], losses[2]) << (sparse ? "sparse" : "binary");
    EXPECT_EQ(result[1], result[2]) << (sparse ? "sparse" : "binary");
    EXPECT_EQ(losses[1], losses[2]) << (sparse ? "sparse" : "binary");
  }
}

TEST_F(GpuRuntimeTest, ScopesEndedOutOfOrderAreReported) {
  auto outer = std::make_unique<DeviceScope>("/GPU:1");
  auto inner = std::make_unique<DeviceScope>("/CPU:0");
  ::testing::internal::CaptureStderr();
  outer.reset();  // out of order
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("] Exiting device scope without proper scope nesting"));
  inner.reset();
}

TEST_F(GpuRuntimeTest, TensorFloat32IsOnByDefaultAndSwitchable) {
  EXPECT_TRUE(cfg::experimental::tensor_float_32_execution_enabled());
  (void)cfg::list_logical_devices();
  cfg::experimental::enable_tensor_float_32_execution(false);  // any time
  EXPECT_FALSE(cfg::experimental::tensor_float_32_execution_enabled());
}

// A test's runtime reset retires the GPUs' devices (tensors made before may still use them): their pools keep only
// the memory in use, so that the next test's devices find the GPU's memory free again.
TEST_F(GpuRuntimeTest, AResetGivesTheRetiredPoolsMemoryBack) {
  (void)config::list_logical_devices();  // initialise: GPU:0 reserves its whole limit up front (no growth)
  runtime::Device& gpu = logical("GPU", 0);
  const int64_t before = gpu.allocator().stats().reserved;
  EXPECT_GT(before, int64_t{1} << 30);
  Tensor kept;
  {
    DeviceScope on("/GPU:0");
    kept = Tensor::ones({256, 256});  // outlives the reset
  }
  DeviceManager::get().reset_for_testing(false);
  const auto after = gpu.allocator().stats();
  EXPECT_EQ(after.reserved, after.current);  // only what is in use
  EXPECT_EQ(after.current, 256 * 256 * 4);
  kept = Tensor();  // freed into the retired pool, which is still there
  EXPECT_EQ(gpu.allocator().stats().current, 0);
  DeviceManager::get().reset_for_testing(true);
  osprey::testing::install_test_gpus(3);
}

// A GPU whose device cannot be set up (the CUDA plug-in's constructor failing: a library missing, a stream refused)
// is left out with its error recorded for osprey doctor; the other GPUs and the CPU work.
TEST(GpuRuntime, AGpuThatCannotBeSetUpIsLeftOutAndSaysWhy) {
  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(2), .failing_devices = {1}});
  EXPECT_EQ(config::list_logical_devices("GPU").size(), 1u);
  {
    DeviceScope on("/GPU:0");
    EXPECT_EQ(ops::add(Tensor::ones({2}), Tensor::ones({2})).to_vector<float>(), (std::vector<float>{2, 2}));
  }
  ASSERT_EQ(DeviceManager::get().ignored_gpus().size(), 1u);
  EXPECT_NE(DeviceManager::get().ignored_gpus()[0].find("libcublasLt.so.13"), std::string::npos);
  EXPECT_TRUE(DeviceManager::get().gpu_availability().reason.empty());  // GPU:0 is there
  // Every GPU failing: no GPU device, the CPU runs everything, and the reason is the failure.
  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(1), .failing_devices = {0}});
  EXPECT_TRUE(config::list_logical_devices("GPU").empty());
  EXPECT_EQ(ops::add(Tensor::ones({2}), Tensor::ones({2})).to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_NE(DeviceManager::get().gpu_availability().reason.find("could not be set up"), std::string::npos);
  osprey::testing::reset_runtime();
}

// A copy between two GPUs goes through the platform's copy_between: ordered after the work that wrote the source
// and before the source's later frees (the CUDA plug-in records an event on each stream for the other to wait on).
TEST_F(GpuRuntimeTest, CopiesBetweenGpusAreOrderedByThePlatform) {
  Tensor a;
  {
    DeviceScope on("/GPU:0");
    a = ops::add(Tensor::ones({3}), Tensor::ones({3}));
  }
  const int before = osprey::testing::cross_device_copies;
  Tensor b = a.to("/GPU:1");
  a = Tensor();  // the source freed right after the copy
  EXPECT_EQ(osprey::testing::cross_device_copies, before + 1);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{2, 2, 2}));
  Tensor same = b.to("/GPU:1");  // within one device: no ordering between queues needed
  EXPECT_EQ(osprey::testing::cross_device_copies, before + 1);
  EXPECT_EQ(same.to_vector<float>(), (std::vector<float>{2, 2, 2}));
}
