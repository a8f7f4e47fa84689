#include "support/test_gpu_platform.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "core/env.h"
#include "core/logging.h"
#include "ops/attrs.h"
#include "ops/kernel.h"
#include "runtime/device_manager.h"
#include "runtime/kernel_table.h"
#include "runtime/memory_policy.h"
#include "runtime/visible_devices.h"

namespace osprey::testing {

using runtime::DeviceType;

std::vector<TestGpu> default_test_gpus(int n) {
  std::vector<TestGpu> out;
  for (int i = 0; i < n; ++i) {
    TestGpu g;
    g.uuid = fmt::format("GPU-{}0000000-1111-2222-3333-44444444444{}", i, i);
    g.pci_bus_id = fmt::format("0000:0{}:00.0", i);
    out.push_back(g);
  }
  return out;
}

int cross_device_copies = 0;

std::set<ops::OpId> ops_missing_on_cuda() {
  // (The sequence ops are cuDNN's on a real GPU; the simulated one has none of them either way: register_kernels.
  // The CTC beam search has no GPU kernel, as TensorFlow's: soft placement runs it on the CPU.)
  return {ops::OpId::DenseGrad, ops::OpId::LossMean, ops::OpId::LossMeanGrad, ops::OpId::CtcBeamSearch};
}

namespace {

// The CPU's workspace size of a sequence op, for the simulated GPU that runs the CPU's kernel.
template <ops::OpId Op>
int64_t cpu_workspace(const void* attrs, runtime::Device&) {
  return ops::workspace_bytes(Op, runtime::DeviceManager::get().host_device(), attrs);
}

// Host memory with TensorFlow's region accounting: a GPU pool reserves its limit up front, or grows in doubling
// regions with memory growth; the regions are never given back.
class TestGpuAllocator : public runtime::Allocator {
 public:
  TestGpuAllocator(std::string name, int64_t limit, bool growth)
      : Allocator(std::move(name), limit), policy_(growth, limit) {}

 protected:
  void* raw_allocate(std::size_t bytes) override {
    std::lock_guard lock(mu_);
    if (!policy_.reserve_for(in_use_ + static_cast<int64_t>(bytes))) return nullptr;
    void* p = std::aligned_alloc(64, (bytes + 63) & ~std::size_t{63});
    if (p) in_use_ += static_cast<int64_t>(bytes);
    return p;
  }
  void raw_deallocate(void* ptr, std::size_t bytes) override {
    std::lock_guard lock(mu_);
    std::free(ptr);
    in_use_ -= static_cast<int64_t>(bytes);
  }
  int64_t reserved_bytes() const override {
    std::lock_guard lock(mu_);
    return policy_.reserved();
  }

 public:
  void release_reserved() override {
    std::lock_guard lock(mu_);
    policy_.release_all_but(in_use_);
  }

 private:
  mutable std::mutex mu_;
  runtime::RegionPolicy policy_;
  int64_t in_use_ = 0;
};

class TestGpuPlatform : public runtime::Platform {
 public:
  explicit TestGpuPlatform(TestPlatformOptions o) : o_(std::move(o)) {}
  DeviceType type() const override { return DeviceType::GPU; }
  std::string name() const override { return "TestGPU"; }

  std::vector<runtime::PhysicalDeviceInfo> discover() override {
    std::vector<runtime::PhysicalDeviceInfo> out;
    if (o_.no_driver) {
      status_ = {"", "No NVIDIA driver found: libcuda.so.1: cannot open shared object file: No such file or directory",
                 "Install the NVIDIA driver (nvidia-smi must work)."};
      return out;
    }
    std::vector<std::string> uuids;
    for (const auto& g : o_.gpus) uuids.push_back(g.uuid);
    const auto cvd = env::get("CUDA_VISIBLE_DEVICES");
    const auto visible = runtime::apply_cuda_visible_devices(cvd, uuids);
    status_.description = fmt::format("test platform: {} simulated GPU(s), {} visible", o_.gpus.size(),
                                      visible.physical.size());
    if (visible.physical.empty()) {
      log::error("failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected");
      if (cvd && !o_.gpus.empty()) {
        status_.reason = fmt::format("CUDA_VISIBLE_DEVICES=\"{}\" hides every GPU ({} on this machine).", *cvd,
                                     o_.gpus.size());
        status_.fix = "Unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (e.g. CUDA_VISIBLE_DEVICES=0).";
      } else {
        status_.reason = "The driver reports no CUDA-capable device.";
        status_.fix = "Check that the GPU is installed and that nvidia-smi lists it.";
      }
      return out;
    }
    for (size_t i = 0; i < visible.physical.size(); ++i) {
      const auto& g = o_.gpus[visible.physical[i]];
      runtime::PhysicalDeviceInfo info;
      info.type = DeviceType::GPU;
      info.platform_id = static_cast<int>(i);
      info.model_name = g.name;
      info.total_memory = g.total_memory;
      info.free_memory = g.free_memory;
      info.pci_bus_id = g.pci_bus_id;
      info.uuid = g.uuid;
      info.cc_major = g.cc_major;
      info.cc_minor = g.cc_minor;
      out.push_back(info);
    }
    return out;
  }

  std::unique_ptr<runtime::Allocator> create_allocator(const runtime::PhysicalDeviceInfo& d,
                                                       const runtime::AllocatorOptions& opts) override {
    if (o_.failing_devices.count(d.platform_id)) {
      throw InternalError("cuBLASLt could not be loaded: libcublasLt.so.13: cannot open shared object file");
    }
    const int64_t limit = opts.memory_limit.value_or(runtime::default_gpu_memory_limit(d.free_memory, d.cc_major));
    return std::make_unique<TestGpuAllocator>(fmt::format("GPU_{}_bfc", opts.logical_index), limit,
                                              opts.allow_growth);
  }

  void copy(runtime::Device&, void* dst, bool, const void* src, bool, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_between(runtime::Device& src, runtime::Device& dst, void* dst_ptr, const void* src_ptr,
                    std::size_t bytes) override {
    ++cross_device_copies;
    Platform::copy_between(src, dst, dst_ptr, src_ptr, bytes);
  }

  void register_kernels() override {
    for (int op = 0; op < static_cast<int>(ops::OpId::kCount); ++op) {
      if (o_.missing_kernels.count(static_cast<ops::OpId>(op))) continue;
      // The CPU's kernels with the half dtypes they take (replacing whatever a real plug-in registered before).
      const auto id = static_cast<ops::OpId>(op);
      if (auto k = runtime::get_kernel(op, DeviceType::CPU)) {
        ops::register_kernel(id, DeviceType::GPU, reinterpret_cast<ops::KernelFn>(k), ops::half_types(id, DeviceType::CPU));
      }
    }
    // The sequence ops: the CPU's oneDNN RNNs (the simulated GPU's memory is the host's) with the CPU's workspace
    // sizes, refusing what cuDNN refuses (the reset-before GRU, the sigmoid RNN), so that layers take a real GPU's
    // paths.
    using ops::OpId;
    ops::register_workspace(OpId::LstmSequence, DeviceType::GPU, cpu_workspace<OpId::LstmSequence>);
    ops::register_workspace(OpId::GruSequence, DeviceType::GPU, cpu_workspace<OpId::GruSequence>);
    ops::register_workspace(OpId::RnnSequence, DeviceType::GPU, cpu_workspace<OpId::RnnSequence>);
    for (OpId op : {OpId::LstmSequence, OpId::LstmSequenceGrad, OpId::GruSequence, OpId::GruSequenceGrad,
                    OpId::RnnSequence, OpId::RnnSequenceGrad}) {
      ops::register_accepts(op, DeviceType::GPU, [](const void* a) {
        const int64_t kind = static_cast<const ops::RnnSequenceAttrs*>(a)->kind;
        return kind != ops::RnnSequenceAttrs::kGruResetBefore && kind != ops::RnnSequenceAttrs::kSimpleSigmoid;
      });
    }
  }

  runtime::PlatformStatus status() const override { return status_; }
  bool has_collective_all_reduce() const override { return o_.nccl; }
  void all_reduce_sum(const std::vector<runtime::Device*>&, const std::vector<float*>& buffers,
                      std::size_t count) override {
    ++collective_calls;
    for (std::size_t k = 0; k < count; ++k) {
      float s = buffers[0][k];
      for (std::size_t q = 1; q < buffers.size(); ++q) s += buffers[q][k];
      for (auto* b : buffers) b[k] = s;
    }
  }
  std::pair<int, int> min_compute_capability() const override { return o_.min_compute_capability; }

  // Like a CUDA graph: capturing runs nothing, each launch runs the captured work.
  std::unique_ptr<runtime::DeviceGraph> capture(runtime::Device&, const std::function<void()>& work) override {
    if (!o_.graphs) return nullptr;
    ++graph_captures;
    struct Graph : runtime::DeviceGraph {
      std::function<void()> work;
      void launch() override {
        ++graph_launches;
        work();
      }
    };
    auto g = std::make_unique<Graph>();
    g->work = work;
    return g;
  }

 private:
  TestPlatformOptions o_;
  runtime::PlatformStatus status_;
};

}  // namespace

int collective_calls = 0;
int graph_captures = 0;
int graph_launches = 0;

void install_test_platform(TestPlatformOptions options) {
  auto& dm = runtime::DeviceManager::get();
  dm.reset_for_testing(/*load_plugins=*/false);
  dm.add_platform(std::make_unique<TestGpuPlatform>(std::move(options)));
}

}  // namespace osprey::testing
