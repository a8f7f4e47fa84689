// `osprey doctor`'s checks and verdicts, on the test platform's simulated GPUs and on this machine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sched.h>

#include <cstdlib>

#include "osprey/config.h"
#include "osprey/doctor.h"
#include "runtime/device_manager.h"
#include "support/test_gpu_platform.h"
#include "test_util.h"

using namespace osprey;
using ::testing::HasSubstr;

namespace {
const doctor::Check& check_named(const doctor::Report& r, const std::string& name) {
  for (const auto& c : r.checks) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no check named " + name);
}

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("CUDA_VISIBLE_DEVICES"); }
  void TearDown() override {
    unsetenv("CUDA_VISIBLE_DEVICES");
    osprey::testing::reset_runtime();
  }
};
}  // namespace

TEST_F(DoctorTest, AUsableGpuPassesEveryCheckAndTheTestKernel) {
  osprey::testing::install_test_gpus(2);
  auto report = doctor::run();
  EXPECT_TRUE(report.gpu_usable);
  EXPECT_EQ(check_named(report, "TestGPU platform").state, doctor::CheckState::pass);
  EXPECT_THAT(check_named(report, "GPUs found").detail, HasSubstr("2: /physical_device:GPU:0 Osprey Test GPU"));
  const auto& kernel = check_named(report, "Test kernel");
  EXPECT_EQ(kernel.state, doctor::CheckState::pass);
  EXPECT_THAT(kernel.detail, HasSubstr("ran on /device:GPU:0 and matches the CPU"));
  const std::string text = doctor::format(report);
  EXPECT_THAT(text, HasSubstr("  ✓ Test kernel: "));
  EXPECT_THAT(text, HasSubstr("Result: a GPU is usable"));
  EXPECT_THAT(doctor::devices_table(), ::testing::ContainsRegex("/device:GPU:1 +/physical_device:GPU:1 +Osprey Test GPU"));
}

// The CPU side: the intra-op threads in use and the CPUs the process may run on, with the reason when an affinity
// mask leaves fewer than the machine has.
TEST_F(DoctorTest, SaysHowManyCpuThreadsAndWhatLimitsThem) {
  osprey::testing::install_test_gpus(1);
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const auto report = doctor::run();
  const auto& all = check_named(report, "CPU threads");
  EXPECT_EQ(all.state, doctor::CheckState::note);
  EXPECT_THAT(all.detail, HasSubstr(std::to_string(CPU_COUNT(&allowed)) + " intra-op thread(s)"));
  doctor::Check limited;
  osprey::testing::on_one_cpu([&] { limited = check_named(doctor::run(), "CPU threads"); });
  EXPECT_THAT(limited.detail, HasSubstr("1 intra-op thread(s); this process may run on 1 of the machine's"));
  if (CPU_COUNT(&allowed) > 1) {
    EXPECT_THAT(limited.detail, HasSubstr("an affinity mask"));
  }
}

TEST_F(DoctorTest, CudaVisibleDevicesHidingEveryGpuIsTheCauseWithTheFix) {
  setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
  osprey::testing::install_test_gpus(2);
  auto report = doctor::run();
  EXPECT_FALSE(report.gpu_usable);
  const auto& platform = check_named(report, "TestGPU platform");
  EXPECT_EQ(platform.state, doctor::CheckState::fail);
  EXPECT_THAT(platform.detail, HasSubstr("CUDA_VISIBLE_DEVICES=\"-1\" hides every GPU (2 on this machine)"));
  EXPECT_THAT(platform.fix, HasSubstr("Unset CUDA_VISIBLE_DEVICES"));
  EXPECT_EQ(check_named(report, "Test kernel").state, doctor::CheckState::skipped);
  EXPECT_THAT(doctor::format(report), HasSubstr("  ✗ TestGPU platform: "));
}

TEST_F(DoctorTest, AMissingDriverIsNamed) {
  osprey::testing::install_test_platform({.gpus = osprey::testing::default_test_gpus(1), .no_driver = true});
  auto report = doctor::run();
  EXPECT_FALSE(report.gpu_usable);
  EXPECT_THAT(check_named(report, "TestGPU platform").detail, HasSubstr("No NVIDIA driver found: libcuda.so.1"));
}

TEST_F(DoctorTest, GpusHiddenInCodeAreNamed) {
  osprey::testing::install_test_gpus(1);
  osprey::config::set_visible_devices(std::vector<PhysicalDevice>{}, "GPU");
  auto report = doctor::run();
  EXPECT_FALSE(report.gpu_usable);
  EXPECT_THAT(check_named(report, "Logical GPUs").detail, HasSubstr("hidden with set_visible_devices()"));
}

TEST_F(DoctorTest, ThisMachineGetsAnExactReason) {
  osprey::testing::reset_runtime();
  auto report = doctor::run();
  auto why = runtime::DeviceManager::get().gpu_availability();
  if (report.gpu_usable) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_FALSE(why.reason.empty());
  EXPECT_FALSE(why.fix.empty());
  const auto plugin = runtime::DeviceManager::get().plugin_status();
  if (!plugin.built) {
    EXPECT_EQ(report.checks.front().state, doctor::CheckState::fail);
    EXPECT_THAT(report.checks.front().detail, HasSubstr("built without the CUDA plug-in"));
  } else if (!plugin.loaded) {
    EXPECT_EQ(check_named(report, "CUDA plug-in").state, doctor::CheckState::fail);
  } else {
    EXPECT_EQ(check_named(report, "CUDA platform").state, doctor::CheckState::fail);
  }
  EXPECT_THAT(doctor::format(report), HasSubstr("Result: no GPU is usable"));
}

// OSPREY_CUDA_PLUGIN=off (what the CPU test suites run with): the plug-in is not loaded, and the reason says so.
TEST_F(DoctorTest, ASwitchedOffPluginIsNamedAsTheReason) {
  setenv("OSPREY_CUDA_PLUGIN", "off", 1);
  osprey::testing::reset_runtime();
  const auto st = runtime::DeviceManager::get().plugin_status();
  EXPECT_FALSE(st.loaded);
  EXPECT_EQ(st.error, "it is switched off (OSPREY_CUDA_PLUGIN=off)");
  EXPECT_TRUE(osprey::config::list_physical_devices("GPU").empty());
  if (st.built) {
    const auto why = runtime::DeviceManager::get().gpu_availability();
    EXPECT_EQ(why.reason, "The CUDA plug-in was not loaded: it is switched off (OSPREY_CUDA_PLUGIN=off)");
    EXPECT_EQ(why.fix, "Unset OSPREY_CUDA_PLUGIN to use the GPUs.");
  }
  unsetenv("OSPREY_CUDA_PLUGIN");
  osprey::testing::reset_runtime();
}

TEST_F(DoctorTest, PluginLoaderFailuresAreRecordedWithTheirCause) {
  setenv("OSPREY_CUDA_PLUGIN", "/nonexistent/libosprey_cuda.so", 1);
  osprey::testing::reset_runtime();
  auto st = runtime::DeviceManager::get().plugin_status();
  EXPECT_FALSE(st.loaded);
  EXPECT_EQ(st.error, "libosprey_cuda.so not found (looked in: /nonexistent/libosprey_cuda.so)");
  if (st.built) {
    EXPECT_THAT(runtime::DeviceManager::get().gpu_availability().reason, HasSubstr("could not be loaded"));
  }

  // A shared library that is not an Osprey plug-in (libc): refused, saying why.
  setenv("OSPREY_CUDA_PLUGIN", "/lib/x86_64-linux-gnu/libc.so.6", 1);
  osprey::testing::reset_runtime();
  st = runtime::DeviceManager::get().plugin_status();
  EXPECT_FALSE(st.loaded);
  EXPECT_THAT(st.error, HasSubstr("has no entry point osprey_create_cuda_platform: not an Osprey plug-in"));

  // A file the loader rejects: the loader's own message.
  setenv("OSPREY_CUDA_PLUGIN", "/etc/hostname", 1);
  osprey::testing::reset_runtime();
  st = runtime::DeviceManager::get().plugin_status();
  EXPECT_FALSE(st.loaded);
  EXPECT_THAT(st.error, HasSubstr("/etc/hostname"));
  unsetenv("OSPREY_CUDA_PLUGIN");
  EXPECT_EQ(osprey::config::list_physical_devices("CPU").size(), 1u);  // the CPU always works
}

TEST_F(DoctorTest, AnEmptyCudaVisibleDevicesIsSaidToHideEveryGpu) {
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  osprey::testing::install_test_gpus(1);
  const auto report = doctor::run();
  const auto& cvd = check_named(report, "CUDA_VISIBLE_DEVICES");
  EXPECT_THAT(cvd.detail, HasSubstr("the driver shows no GPU to this process"));
  EXPECT_THAT(cvd.detail, ::testing::Not(HasSubstr("renumbered")));
}
