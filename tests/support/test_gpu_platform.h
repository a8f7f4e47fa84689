// A platform for tests only: GPU-like devices backed by host memory, with names, UUIDs, PCI bus ids, memory sizes
// and compute capabilities, so that visibility, CUDA_VISIBLE_DEVICES renumbering, memory growth, limits,
// placement and logging are all testable on a machine without a GPU. It applies CUDA_VISIBLE_DEVICES as the CUDA
// driver would. Its kernels are the CPU kernels registered for the GPU device type, minus a chosen set, so that
// soft placement has something to fall back from. Its memory is not host-accessible to code outside kernels.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ops/kernel.h"

namespace osprey::testing {

struct TestGpu {
  std::string name = "Osprey Test GPU";
  std::string uuid;        ///< "GPU-..."; filled in by default_test_gpus
  std::string pci_bus_id;  ///< "0000:0N:00.0"
  int64_t total_memory = int64_t{16} << 30;
  int64_t free_memory = int64_t{15} << 30;
  int cc_major = 9, cc_minor = 0;
};

struct TestPlatformOptions {
  std::vector<TestGpu> gpus;                                 ///< the simulated machine's GPUs, by physical ordinal
  std::pair<int, int> min_compute_capability{0, 0};          ///< GPUs below are ignored by the runtime
  std::set<ops::OpId> missing_kernels{ops::OpId::GatherRows};  ///< ops with no GPU kernel
  bool no_driver = false;                                    ///< simulate a machine without the NVIDIA driver
  bool nccl = false;  ///< offer a collective all-reduce (as the CUDA platform with NCCL would)
  bool graphs = true;  ///< capture work as graphs (as the CUDA platform does with CUDA graphs)
  std::set<int> failing_devices{};  ///< physical ordinals whose device creation throws (a library missing, ...)
};

/// The ops the CUDA plug-in has no kernel for (it runs them as other ops): a test platform with these missing
/// runs the paths a real GPU runs. tests/cuda checks this list against the plug-in on a real GPU.
std::set<ops::OpId> ops_missing_on_cuda();

/// `n` GPUs named "Osprey Test GPU", 16 GiB each (15 GiB free), UUIDs GPU-<n>0000000-..., PCI bus 0000:0n:00.0.
std::vector<TestGpu> default_test_gpus(int n);

/// How many copies between two of the test platform's devices went through Platform::copy_between (ordered
/// after the source's work and before its later frees).
extern int cross_device_copies;
/// How many collective all-reduces the test platform has run (to tell the NCCL path from the fallback).
extern int collective_calls;
/// How many graphs the test platform has captured and launched (a recorded step replayed as a graph).
extern int graph_captures;
extern int graph_launches;

/// A fresh runtime (as a new process would see it) with the CPU and the test platform; the CUDA plug-in is not
/// loaded.
void install_test_platform(TestPlatformOptions options);
inline void install_test_gpus(int n) { install_test_platform({.gpus = default_test_gpus(n)}); }

}  // namespace osprey::testing
