#include "backends/cuda/cuda_platform.h"
#include "backends/cuda/nccl_api.h"

#include "backends/cuda/cublaslt_api.h"
#include "backends/cuda/driver_rule.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <type_traits>

#include <fmt/format.h>
#if __has_include(<nccl.h>)
#include <nccl.h>  // only to check nccl_api.h against it (below); the plug-in builds without it
#endif

#include "core/env.h"
#include "core/logging.h"
#include "osprey/errors.h"
#include "runtime/device_manager.h"


#ifndef OSPREY_CUDA_MIN_CC_MAJOR
#define OSPREY_CUDA_MIN_CC_MAJOR 9
#define OSPREY_CUDA_MIN_CC_MINOR 0
#endif

namespace osprey::cuda {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw InternalError(fmt::format("{} failed: {} ({})", what, cudaGetErrorString(err), cudaGetErrorName(err)));
  }
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw InternalError(fmt::format("{} failed with cuBLAS status {}", what, static_cast<int>(status)));
  }
}

/// Looks `name` up in a dlopen'ed library into `fn`, typed as `fn` is; false when the symbol is missing.
template <typename F>
bool load_symbol(void* handle, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

// ---- cuBLASLt, loaded on first use ----

const LtApi& lt_api() {
  static const LtApi api = [] {
    const std::string soname = fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR);
    void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);  // searched on the plug-in's RUNPATH too
#ifdef OSPREY_CUDA_LIBRARY_DIR
    if (!h) h = dlopen((std::string(OSPREY_CUDA_LIBRARY_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    if (!h) {
      const char* err = dlerror();
      throw InternalError(fmt::format("cuBLASLt could not be loaded: {}. Install the CUDA toolkit's cuBLAS (or put "
                                      "its directory on LD_LIBRARY_PATH).",
                                      err ? err : soname));
    }
    LtApi a;
    auto sym = [&](auto& fn, const char* name) {
      if (!load_symbol(h, fn, name)) throw InternalError(fmt::format("{} has no symbol {}", soname, name));
    };
    sym(a.create, "cublasLtCreate");
    sym(a.destroy, "cublasLtDestroy");
    sym(a.matmul, "cublasLtMatmul");
    sym(a.heuristic, "cublasLtMatmulAlgoGetHeuristic");
    sym(a.desc_create, "cublasLtMatmulDescCreate");
    sym(a.desc_destroy, "cublasLtMatmulDescDestroy");
    sym(a.desc_set, "cublasLtMatmulDescSetAttribute");
    sym(a.pref_create, "cublasLtMatmulPreferenceCreate");
    sym(a.pref_destroy, "cublasLtMatmulPreferenceDestroy");
    sym(a.pref_set, "cublasLtMatmulPreferenceSetAttribute");
    sym(a.layout_create, "cublasLtMatrixLayoutCreate");
    sym(a.layout_destroy, "cublasLtMatrixLayoutDestroy");
    sym(a.layout_set, "cublasLtMatrixLayoutSetAttribute");
    return a;
  }();
  return api;
}

// ---- The platform ----

namespace {

std::string format_uuid(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  return fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                     b[15]);
}

std::string version_string(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

#if __has_include(<nccl.h>)
// Where the toolkit has nccl.h, the declarations in nccl_api.h are checked against it when the plug-in compiles.
static_assert(sizeof(ncclResult_t) == sizeof(nccl::Result) && ncclSuccess == static_cast<int>(nccl::kSuccess));
static_assert(sizeof(ncclDataType_t) == sizeof(nccl::DataType) && ncclFloat32 == static_cast<int>(nccl::kFloat32));
static_assert(sizeof(ncclRedOp_t) == sizeof(nccl::RedOp) && ncclSum == static_cast<int>(nccl::kSum));
static_assert(std::is_same_v<ncclComm_t, nccl::Comm>);
#endif

// NCCL, loaded with dlopen so that the plug-in works without it (MirroredStrategy then reduces through one
// device, with TensorFlow's "Nccl kernel is not found" warning).
struct Nccl {
  nccl::GetVersionFn get_version = nullptr;
  nccl::CommInitAllFn comm_init_all = nullptr;
  nccl::AllReduceFn all_reduce = nullptr;
  nccl::GroupFn group_start = nullptr;
  nccl::GroupFn group_end = nullptr;
  nccl::GetErrorStringFn error_string = nullptr;
  int version = 0;

  bool load() {
    void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    const bool complete = load_symbol(h, get_version, "ncclGetVersion") &&
                          load_symbol(h, comm_init_all, "ncclCommInitAll") &&
                          load_symbol(h, all_reduce, "ncclAllReduce") && load_symbol(h, group_start, "ncclGroupStart") &&
                          load_symbol(h, group_end, "ncclGroupEnd") &&
                          load_symbol(h, error_string, "ncclGetErrorString");
    return complete && get_version(&version) == nccl::kSuccess;
  }
  void check(nccl::Result r, const char* what) const {
    if (r != nccl::kSuccess) throw InternalError(fmt::format("{} failed: {}", what, error_string(r)));
  }
};

// An instantiated CUDA graph, launched on its device's stream.
class CudaGraph : public runtime::DeviceGraph {
 public:
  CudaGraph(CudaDevice& device, cudaGraphExec_t exec, std::vector<CudaDevice::ErrorCheck> checks)
      : device_(device), exec_(exec), checks_(std::move(checks)) {}
  ~CudaGraph() override {
    // A launch may still be running (a plan dropped right after its step): let it finish first.
    cudaSetDevice(device_.ordinal());
    cudaStreamSynchronize(device_.stream());
    cudaGraphExecDestroy(exec_);
    cudaGetLastError();  // at exit the context may be gone: nothing to report then
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  // With input checks (sparse labels in range), waits for the graph and raises the first kernel's error, as the
  // launches one by one would have (the optimizer, after the graph, then never runs on its gradients).
  void launch() override {
    device_.activate();
    check(cudaGraphLaunch(exec_, device_.stream()), "cudaGraphLaunch");
    device_.run_checks(checks_);
  }

 private:
  CudaDevice& device_;
  cudaGraphExec_t exec_;
  std::vector<CudaDevice::ErrorCheck> checks_;
};

class CudaPlatform : public runtime::Platform {
 public:
  runtime::DeviceType type() const override { return runtime::DeviceType::GPU; }
  std::string name() const override { return "CUDA"; }

  std::vector<runtime::PhysicalDeviceInfo> discover() override {
    std::vector<runtime::PhysicalDeviceInfo> out;
    int runtime_version = 0;
    cudaRuntimeGetVersion(&runtime_version);
    // The driver library first: its absence is the most common reason, and the loader's message says it exactly.
    void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!libcuda) {
      const char* err = dlerror();
      status_ = {fmt::format("CUDA runtime {}, no driver", version_string(runtime_version)),
                 fmt::format("No NVIDIA driver found: {}", err ? err : "libcuda.so.1 could not be loaded"),
                 "Install the NVIDIA driver (nvidia-smi must work); inside a container, run it with the GPU "
                 "exposed (e.g. docker run --gpus all)."};
      return out;
    }
    int driver_version = 0;
    cudaDriverGetVersion(&driver_version);
    status_.description = fmt::format("driver supports CUDA {}, runtime {}", version_string(driver_version),
                                      version_string(runtime_version));
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (driver_too_old(err == cudaErrorInsufficientDriver, driver_version, runtime_version)) {
      status_.reason = fmt::format("The NVIDIA driver is older than the CUDA runtime: the driver supports CUDA {}, "
                                   "Osprey's plug-in needs {}.",
                                   version_string(driver_version), version_string(runtime_version));
      status_.fix = "Update the NVIDIA driver, or rebuild Osprey with a CUDA toolkit the driver supports.";
      return out;
    }
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
      log::error("failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected");
      if (auto cvd = env::get("CUDA_VISIBLE_DEVICES")) {
        status_.reason = fmt::format("CUDA_VISIBLE_DEVICES=\"{}\" hides every GPU (the driver reports none).", *cvd);
        status_.fix = "Unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (e.g. CUDA_VISIBLE_DEVICES=0).";
      } else {
        status_.reason = "The driver reports no CUDA-capable device.";
        status_.fix = "Check that the GPU is installed and that nvidia-smi lists it.";
      }
      return out;
    }
    if (err != cudaSuccess) {
      status_.reason = fmt::format("cudaGetDeviceCount failed: {} ({})", cudaGetErrorString(err), cudaGetErrorName(err));
      status_.fix = "Check the driver with nvidia-smi; the error names what failed.";
      return out;
    }
    if (nccl_.load()) status_.description += fmt::format(", NCCL {}", nccl_.version);
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
        (void)cudaGetLastError();  // tolerated: that GPU is left out; the error must not surface later
        continue;
      }
      runtime::PhysicalDeviceInfo info;
      info.type = runtime::DeviceType::GPU;
      info.platform_id = i;
      info.model_name = p.name;
      info.total_memory = static_cast<int64_t>(p.totalGlobalMem);
      info.free_memory = info.total_memory;
      std::size_t free_b = 0, total_b = 0;
      if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
        info.free_memory = static_cast<int64_t>(free_b);
      } else {
        (void)cudaGetLastError();  // tolerated: the total memory stands in for the free memory
      }
      info.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
      info.uuid = format_uuid(p.uuid);
      info.cc_major = p.major;
      info.cc_minor = p.minor;
      out.push_back(info);
    }
    return out;
  }

  std::unique_ptr<runtime::Allocator> create_allocator(const runtime::PhysicalDeviceInfo& d,
                                                       const runtime::AllocatorOptions& opts) override {
    const int64_t limit = opts.memory_limit.value_or(runtime::default_gpu_memory_limit(d.free_memory, d.cc_major));
    return std::make_unique<CudaDevice>(fmt::format("GPU_{}_bfc", opts.logical_index), d.platform_id, d.platform_id,
                                        limit, opts.allow_growth);
  }

  void copy(runtime::Device& device, void* dst, bool dst_on_device, const void* src, bool src_on_device,
            std::size_t bytes) override {
    auto& c = cuda_device(device);
    if (dst_on_device && src_on_device) {
      c.copy_on_device(dst, src, bytes);
    } else if (dst_on_device) {
      c.copy_to_device(dst, src, bytes);
    } else {
      c.copy_to_host(dst, src, bytes);
    }
  }

  void synchronize(runtime::Device& device) override { cuda_device(device).synchronize(); }

  // Between two devices, ordered on the GPU without waiting on the host: the copy (on dst's stream) waits for the
  // work queued on src's stream, and src's stream waits for the copy, so that a free of the source (stream-ordered
  // on src's stream) cannot overtake it. Between physical GPUs a peer copy (it works with or without peer access,
  // through the host where needed; each pool grants peers access where they have it).
  void copy_between(runtime::Device& src_device, runtime::Device& dst_device, void* dst, const void* src,
                    std::size_t bytes) override {
    auto& s = cuda_device(src_device);
    auto& d = cuda_device(dst_device);
    s.activate();
    check(cudaEventRecord(s.order_event(), s.stream()), "cudaEventRecord");
    d.activate();
    check(cudaStreamWaitEvent(d.stream(), s.order_event(), 0), "cudaStreamWaitEvent");
    if (s.ordinal() == d.ordinal()) {
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, d.stream()), "cudaMemcpyAsync");
    } else {
      check(cudaMemcpyPeerAsync(dst, d.ordinal(), src, s.ordinal(), bytes, d.stream()), "cudaMemcpyPeerAsync");
    }
    check(cudaEventRecord(d.order_event(), d.stream()), "cudaEventRecord");
    s.activate();
    check(cudaStreamWaitEvent(s.stream(), d.order_event(), 0), "cudaStreamWaitEvent");
  }

  // The launches `work` queues on the device's stream, captured as a CUDA graph (stream capture, this thread
  // only) and instantiated once. Kernels that check their inputs (sparse labels in range) capture a copy of the
  // error slots, checked after each launch (CudaDevice::check_errors). Work that cannot be captured (anything
  // that waits for the GPU) returns nothing, and the caller runs the work itself. The capture is on a stream of
  // its own, so that other threads' work meanwhile stays out of the graph (on the first GPU, a Dataset's prefetch
  // thread copying the next batch into the captured stream crashed cudaGraphInstantiate). The graph is launched
  // on the device's stream. OSPREY_CUDA_GRAPHS=0 switches graphs off (to compare, or to rule them out).
  std::unique_ptr<runtime::DeviceGraph> capture(runtime::Device& device, const std::function<void()>& work) override {
    if (const auto v = env::get("OSPREY_CUDA_GRAPHS"); v && (*v == "0" || *v == "false")) return nullptr;
    auto& c = cuda_device(device);
    c.activate();
    // Said once per recorded step (a model has at most a few): why it is replayed launch by launch.
    auto give_up = [&](const std::string& why) -> std::unique_ptr<runtime::DeviceGraph> {
      cudaGetLastError();  // a failed capture's error must not surface in a later check
      log::info(fmt::format("A recorded training step on {} is replayed launch by launch, not as a CUDA graph: {}",
                            device.name(), why));
      return nullptr;
    };
    // This thread's launches go to the device's capture stream (CudaDevice::stream): other threads' work on the
    // device (a Dataset prefetching the next batch) keeps running on its stream instead of joining the graph.
    if (!c.begin_capture()) return give_up("another thread is capturing a step on this device");
    if (const cudaError_t err = cudaStreamBeginCapture(c.stream(), cudaStreamCaptureModeThreadLocal);
        err != cudaSuccess) {
      c.end_capture();
      return give_up(fmt::format("cudaStreamBeginCapture: {}", cudaGetErrorString(err)));
    }
    std::string failed;
    try {
      work();
    } catch (const std::exception& e) {
      failed = e.what();  // the capture is ended below; the error is not sticky
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(c.stream(), &graph);
    auto checks = c.end_capture();
    if (!failed.empty() || ended != cudaSuccess || !graph) {
      if (graph) cudaGraphDestroy(graph);
      return give_up(!failed.empty() ? failed : fmt::format("cudaStreamEndCapture: {}", cudaGetErrorString(ended)));
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (made != cudaSuccess) return give_up(fmt::format("cudaGraphInstantiate: {}", cudaGetErrorString(made)));
    return std::make_unique<CudaGraph>(c, exec, std::move(checks));
  }

  bool has_collective_all_reduce() const override { return nccl_.all_reduce != nullptr; }

  // One NCCL communicator clique per set of GPUs (created once), then a grouped all-reduce, each on its device's
  // stream: ordered after the gradients were written and before the replicas read the sums.
  void all_reduce_sum(const std::vector<runtime::Device*>& devices, const std::vector<float*>& buffers,
                      std::size_t count) override {
    std::vector<int> ordinals;
    for (auto* d : devices) ordinals.push_back(cuda_device(*d).ordinal());
    std::lock_guard lock(nccl_mu_);
    auto it = comms_.find(ordinals);
    if (it == comms_.end()) {
      std::vector<nccl::Comm> comms(ordinals.size());
      nccl_.check(nccl_.comm_init_all(comms.data(), static_cast<int>(ordinals.size()), ordinals.data()),
                  "ncclCommInitAll");
      it = comms_.emplace(ordinals, std::move(comms)).first;
    }
    nccl_.check(nccl_.group_start(), "ncclGroupStart");
    for (size_t i = 0; i < devices.size(); ++i) {
      auto& dev = cuda_device(*devices[i]);
      dev.activate();
      nccl_.check(nccl_.all_reduce(buffers[i], buffers[i], count, nccl::kFloat32, nccl::kSum, it->second[i],
                                  dev.stream()),
                  "ncclAllReduce");
    }
    nccl_.check(nccl_.group_end(), "ncclGroupEnd");
  }
  void register_kernels() override { register_cuda_kernels(); }
  runtime::PlatformStatus status() const override { return status_; }
  std::pair<int, int> min_compute_capability() const override {
    return {OSPREY_CUDA_MIN_CC_MAJOR, OSPREY_CUDA_MIN_CC_MINOR};
  }

 private:
  runtime::PlatformStatus status_;
  Nccl nccl_;
  std::mutex nccl_mu_;
  std::map<std::vector<int>, std::vector<nccl::Comm>> comms_;
};

}  // namespace

}  // namespace osprey::cuda

/// The plug-in's entry point, looked up with dlsym by the runtime (runtime/plugin_loader.cpp).
extern "C" __attribute__((visibility("default"))) osprey::runtime::Platform* osprey_create_cuda_platform(
    int abi_version) {
  if (abi_version != osprey::runtime::kPluginAbiVersion) return nullptr;
  return new osprey::cuda::CudaPlatform();
}
