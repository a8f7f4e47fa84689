#include <gtest/gtest.h>

#include <omp.h>
#include <sched.h>

#include <cstdlib>

#include "osprey/config.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "osprey/tensor.h"
#include "test_util.h"

using namespace osprey;
namespace cfg = osprey::config;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { osprey::testing::reset_runtime(); }
  void TearDown() override { osprey::testing::reset_runtime(); }
};

TEST_F(ConfigTest, OnePhysicalCpuListedFirstWithoutInitialising) {
  auto devices = cfg::list_physical_devices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices[0], (PhysicalDevice{"/physical_device:CPU:0", "CPU"}));
  EXPECT_EQ(cfg::list_physical_devices("CPU").size(), 1u);
  EXPECT_TRUE(cfg::list_physical_devices("cpu").empty());  // exact, case-sensitive filter
  EXPECT_FALSE(runtime::DeviceManager::get().initialized());
  EXPECT_EQ(cfg::get_visible_devices(), devices);
  EXPECT_FALSE(runtime::DeviceManager::get().initialized());
}

TEST_F(ConfigTest, ListingLogicalDevicesInitialises) {
  auto logical = cfg::list_logical_devices("CPU");
  ASSERT_EQ(logical.size(), 1u);
  EXPECT_EQ(logical[0], (LogicalDevice{"/device:CPU:0", "CPU"}));
  EXPECT_TRUE(runtime::DeviceManager::get().initialized());
}

TEST_F(ConfigTest, CpuSplitIntoLogicalDevices) {
  auto cpu = cfg::list_physical_devices("CPU")[0];
  EXPECT_FALSE(cfg::get_logical_device_configuration(cpu).has_value());
  cfg::set_logical_device_configuration(cpu, {{}, {}});
  auto logical = cfg::list_logical_devices("CPU");
  ASSERT_EQ(logical.size(), 2u);
  EXPECT_EQ(logical[1].name, "/device:CPU:1");
  EXPECT_EQ(cfg::get_logical_device_configuration(cpu)->size(), 2u);
}

TEST_F(ConfigTest, CpuMemoryLimitIsRejected) {
  auto cpu = cfg::list_physical_devices("CPU")[0];
  try {
    cfg::set_logical_device_configuration(cpu, {LogicalDeviceConfiguration{.memory_limit = 1024}});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Setting memory limit on CPU virtual devices is currently not supported");
  }
}

TEST_F(ConfigTest, SettingsFreezeAtInitialisationButSameValueIsANoOp) {
  auto cpu = cfg::list_physical_devices("CPU")[0];
  cfg::set_logical_device_configuration(cpu, {{}, {}});
  (void)Tensor::zeros({2});  // creating a tensor initialises the runtime
  cfg::set_logical_device_configuration(cpu, {{}, {}});  // unchanged: fine
  try {
    cfg::set_logical_device_configuration(cpu, {{}});
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "Virtual devices cannot be modified after being initialized");
  }
  cfg::set_visible_devices({cpu});  // unchanged
  try {
    cfg::set_intra_op_parallelism_threads(7);
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "Intra op parallelism cannot be modified after initialization.");
  }
}

TEST_F(ConfigTest, DeviceScopeInitialisesTheRuntime) {
  {
    DeviceScope on("/CPU:0");
    EXPECT_EQ(current_device_name(), "/job:localhost/replica:0/task:0/device:CPU:0");
  }
  EXPECT_EQ(current_device_name(), "");
  EXPECT_TRUE(runtime::DeviceManager::get().initialized());
}

TEST_F(ConfigTest, UnrecognizedDeviceAndMemoryGrowthOnCpu) {
  try {
    cfg::set_visible_devices({PhysicalDevice{"/physical_device:GPU:9", "GPU"}}, "GPU");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "Unrecognized device: PhysicalDevice(name='/physical_device:GPU:9', device_type='GPU')");
  }
  auto cpu = cfg::list_physical_devices("CPU")[0];
  EXPECT_FALSE(cfg::experimental::get_memory_growth(cpu).has_value());
  try {
    cfg::experimental::set_memory_growth(cpu, true);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Cannot set memory growth on non-GPU and non-Pluggable devices");
  }
  EXPECT_TRUE(cfg::experimental::get_device_details(cpu).empty());
}

TEST_F(ConfigTest, HidingTheCpuFailsInitialisation) {
  cfg::set_visible_devices(std::vector<PhysicalDevice>{}, "CPU");
  try {
    cfg::list_logical_devices();
    FAIL();
  } catch (const NotFoundError& e) {
    EXPECT_STREQ(e.what(), "No CPU devices are available in this process");
  }
}

TEST_F(ConfigTest, MemoryInfoTracksCurrentAndPeak) {
  auto before = cfg::experimental::get_memory_info("CPU:0");
  {
    Tensor big = Tensor::zeros({1024, 256});  // 1 MiB
    auto during = cfg::experimental::get_memory_info("/device:CPU:0");
    EXPECT_EQ(during.current - before.current, 1024 * 256 * 4);
    EXPECT_GE(during.peak, during.current);
  }
  auto after = cfg::experimental::get_memory_info("CPU:0");
  EXPECT_EQ(after.current, before.current);
  EXPECT_GE(after.peak, before.current + 1024 * 256 * 4);
  cfg::experimental::reset_memory_stats("CPU:0");
  EXPECT_EQ(cfg::experimental::get_memory_info("CPU:0").peak, after.current);
}

TEST_F(ConfigTest, MemoryInfoErrors) {
  try {
    cfg::experimental::get_memory_info("GPU");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "Failed parsing device name: 'GPU'. Note a valid device string should at least contain a "
                           "device type and a device index, like \"GPU:0\".");
  }
  try {
    cfg::experimental::get_memory_info("GPU:7");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "No matching devices found for 'GPU:7'");
  }
}

TEST_F(ConfigTest, SoftPlacementFallsBackAndStrictPlacementExplains) {
  EXPECT_TRUE(cfg::get_soft_device_placement());
  {
    DeviceScope on("/GPU:0");  // no GPU here: soft placement runs on the CPU
    Tensor t = Tensor::ones({2});
    EXPECT_EQ(t.device().name, "/device:CPU:0");
  }
  cfg::set_soft_device_placement(false);
  DeviceScope on("/GPU:5");
  try {
    (void)Tensor::ones({2});
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("Could not satisfy device specification "
                                         "'/job:localhost/replica:0/task:0/device:GPU:5'. enable_soft_placement=0."),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ConfigTest, PlacementLogLine) {
  debugging::set_log_device_placement(true);
  Tensor a = Tensor::ones({2, 2});
  ::testing::internal::CaptureStderr();
  (void)ops::matmul(a, a);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Executing op MatMul in device /job:localhost/replica:0/task:0/device:CPU:0\n"),
            std::string::npos)
      << err;
}

TEST_F(ConfigTest, OpsOnTwoLogicalCpusCopyInputs) {
  auto cpu = cfg::list_physical_devices("CPU")[0];
  cfg::set_logical_device_configuration(cpu, {{}, {}});
  Tensor a;
  {
    DeviceScope on("/CPU:1");
    a = Tensor::full({2, 2}, 3.0);
    EXPECT_EQ(a.device().name, "/device:CPU:1");
  }
  Tensor b = ops::add(a, a);  // runs where its input lives
  EXPECT_EQ(b.device().name, "/device:CPU:1");
  DeviceScope on("/CPU:0");
  Tensor c = ops::add(a, a);  // the scope wins; the input is copied
  EXPECT_EQ(c.device().name, "/device:CPU:0");
  EXPECT_EQ(c.to_vector<float>()[3], 6.0f);
}

// Without a setting, the intra-op threads are one per CPU the process may run on (TensorFlow's default), not per
// CPU of the machine: in a container or under `taskset` limited to one CPU, two threads would take turns on it.
TEST_F(ConfigTest, DefaultIntraOpThreadsFollowTheAffinityMask) {
  auto& dm = runtime::DeviceManager::get();
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  EXPECT_EQ(dm.threads_for_intra_op(), CPU_COUNT(&allowed));
  int limited = 0;
  osprey::testing::on_one_cpu([&] { limited = dm.threads_for_intra_op(); });
  EXPECT_EQ(limited, 1);
  cfg::set_intra_op_parallelism_threads(3);
  EXPECT_EQ(dm.threads_for_intra_op(), 3);  // a setting wins
}

// What TensorFlow users set to keep several processes on one machine from each taking every core (two processes
// spinning two OpenMP threads each on two cores ran the digits CNN 40-60 times slower): TF_NUM_INTRAOP_THREADS,
// else OMP_NUM_THREADS's first level; a value that is no positive count is ignored; a setting in code wins.
TEST_F(ConfigTest, IntraOpThreadsFollowTfNumIntraopThreadsThenOmpNumThreads) {
  auto& dm = runtime::DeviceManager::get();
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const int cpus = CPU_COUNT(&allowed);
  struct Unset {
    ~Unset() {
      unsetenv("TF_NUM_INTRAOP_THREADS");
      unsetenv("OMP_NUM_THREADS");
    }
  } unset;
  setenv("OMP_NUM_THREADS", "3,2", 1);
  EXPECT_EQ(dm.threads_for_intra_op(), 3);
  setenv("TF_NUM_INTRAOP_THREADS", "5", 1);
  EXPECT_EQ(dm.threads_for_intra_op(), 5);
  setenv("TF_NUM_INTRAOP_THREADS", "many", 1);
  EXPECT_EQ(dm.threads_for_intra_op(), 3) << "an unusable TF_NUM_INTRAOP_THREADS leaves OMP_NUM_THREADS";
  setenv("OMP_NUM_THREADS", "0", 1);
  EXPECT_EQ(dm.threads_for_intra_op(), cpus);
  setenv("OMP_NUM_THREADS", "1", 1);
  cfg::set_intra_op_parallelism_threads(2);
  EXPECT_EQ(dm.threads_for_intra_op(), 2);
  cfg::set_intra_op_parallelism_threads(0);
  (void)cfg::list_logical_devices();  // initialises: the OpenMP team takes the count
  EXPECT_EQ(dm.threads_for_intra_op(), 1);
  EXPECT_EQ(omp_get_max_threads(), 1);
  EXPECT_EQ(cfg::get_intra_op_parallelism_threads(), 0) << "as TensorFlow: 0, the system's choice";
}
