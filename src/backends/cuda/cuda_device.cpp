// CudaDevice: one logical GPU device's stream, stream-ordered memory pool (TensorFlow's up-front reservation or
// growth), cuBLASLt handle, pinned staging for copies and the error slots kernels report bad inputs through.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "backends/cuda/cublaslt_api.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cuda_platform.h"
#include "core/logging.h"
#include "osprey/errors.h"
#include "runtime/device_manager.h"

namespace osprey::cuda {

// ---- CudaDevice ----

CudaDevice::CudaDevice(std::string name, int ordinal, int platform_id, int64_t limit, bool growth)
    : Allocator(std::move(name), limit), ordinal_(ordinal), policy_(growth, limit) {
  activate();
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaStreamCreateWithFlags(&capture_stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = ordinal;
  check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
  // Other GPUs that can reach this one read its pool directly (copies between devices); without it they copy
  // through the host. Refusals are tolerated (and cleared).
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) (void)cudaGetLastError();
  for (int peer = 0; peer < gpus; ++peer) {
    int can = 0;
    if (peer == ordinal || cudaDeviceCanAccessPeer(&can, peer, ordinal) != cudaSuccess || !can) {
      (void)cudaGetLastError();
      continue;
    }
    cudaMemAccessDesc access{};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = peer;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    if (cudaMemPoolSetAccess(pool_, &access, 1) != cudaSuccess) (void)cudaGetLastError();
  }
  // The pool keeps what it reserved (TensorFlow never gives memory back either): the release threshold follows
  // the reserved regions.
  uint64_t threshold = static_cast<uint64_t>(policy_.reserved());
  check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
  if (!growth && limit > 0) {  // reserve the whole limit up front, as TensorFlow's BFC allocator does
    void* p = nullptr;
    if (cudaMallocFromPoolAsync(&p, static_cast<std::size_t>(limit), pool_, stream_) == cudaSuccess) {
      check(cudaFreeAsync(p, stream_), "cudaFreeAsync");
    } else {
      (void)cudaGetLastError();
      log::warning(fmt::format("Could not reserve {} MB up front on GPU {}; memory will be taken on demand",
                               limit >> 20, platform_id));
    }
  }
  log::info(fmt::format("Using CUDA malloc Async allocator for GPU: {}", platform_id));
  check(lt_api().create(&lt_), "cublasLtCreate");
  check(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc (cuBLASLt workspace)");
  check(cudaMalloc(reinterpret_cast<void**>(&partials_), sizeof(double) * kMaxBlocks), "cudaMalloc (scratch)");
  check(cudaMalloc(reinterpret_cast<void**>(&error_), sizeof(long long) * 4), "cudaMalloc (error slots)");
  check(cudaHostAlloc(reinterpret_cast<void**>(&error_host_), sizeof(long long) * 4, cudaHostAllocDefault),
        "cudaHostAlloc");
  check(cudaHostAlloc(reinterpret_cast<void**>(&captured_errors_), sizeof(long long) * 4 * kCapturedChecks,
                      cudaHostAllocDefault),
        "cudaHostAlloc");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

// Logical devices live as long as the process (the runtime never destroys them while tensors may exist); this
// runs only at exit paths that destroy them explicitly, and must not throw.
CudaDevice::~CudaDevice() {
  cudaSetDevice(ordinal_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (staging_) cudaFreeHost(staging_);
  if (error_host_) cudaFreeHost(error_host_);
  if (captured_errors_) cudaFreeHost(captured_errors_);
  cudaFree(error_);
  cudaFree(partials_);
  cudaFree(workspace_);
  if (lt_) lt_api().destroy(lt_);
  if (pool_) cudaMemPoolDestroy(pool_);
  if (order_event_) cudaEventDestroy(order_event_);
  if (capture_stream_) cudaStreamDestroy(capture_stream_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaDevice::activate() const { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }

void* CudaDevice::raw_allocate(std::size_t bytes) {
  std::lock_guard lock(mu_);
  const auto added = policy_.reserve_for(in_use_ + static_cast<int64_t>(bytes));
  if (!added) return nullptr;
  if (!added->empty()) {
    uint64_t threshold = static_cast<uint64_t>(policy_.reserved());
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
  }
  activate();
  void* p = nullptr;
  const cudaError_t err = cudaMallocFromPoolAsync(&p, std::max<std::size_t>(bytes, 1), pool_, stream());
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // out of device memory: the Allocator turns nullptr into ResourceExhaustedError
    return nullptr;
  }
  in_use_ += static_cast<int64_t>(bytes);
  return p;
}

void CudaDevice::raw_deallocate(void* ptr, std::size_t bytes) {
  std::lock_guard lock(mu_);
  cudaSetDevice(ordinal_);
  // Stream-ordered: after every kernel queued before it. A failure here cannot be raised (tensors free memory in
  // destructors): it is logged and cleared, so that it is not blamed on the next kernel.
  if (const cudaError_t err = cudaFreeAsync(ptr, stream()); err != cudaSuccess) {
    (void)cudaGetLastError();
    log::warning(fmt::format("cudaFreeAsync of {} bytes on GPU {} failed: {}", bytes, ordinal_, cudaGetErrorString(err)));
  }
  in_use_ -= static_cast<int64_t>(bytes);
}

void CudaDevice::release_reserved() {
  std::lock_guard lock(mu_);
  if (cudaSetDevice(ordinal_) != cudaSuccess || cudaStreamSynchronize(stream()) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  policy_.release_all_but(in_use_);
  uint64_t threshold = 0;
  if (cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold) != cudaSuccess ||
      cudaMemPoolTrimTo(pool_, 0) != cudaSuccess) {
    (void)cudaGetLastError();
  }
}

int64_t CudaDevice::reserved_bytes() const {
  std::lock_guard lock(mu_);
  return policy_.reserved();
}

void CudaDevice::clear_error() { check(cudaMemsetAsync(error_, 0, sizeof(long long) * 4, stream()), "cudaMemsetAsync"); }

void CudaDevice::read_error(long long out[4]) {
  check(cudaMemcpyAsync(error_host_, error_, sizeof(long long) * 4, cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  std::memcpy(out, error_host_, sizeof(long long) * 4);
}

void CudaDevice::check_errors(ErrorCheck check) {
  if (!capturing()) {
    long long err[4];
    read_error(err);
    check(err);
    return;
  }
  const auto k = captured_checks_.size();
  if (k == kCapturedChecks) {
    throw InternalError(fmt::format("more than {} kernels that check their inputs in one CUDA graph", kCapturedChecks));
  }
  ::osprey::cuda::check(cudaMemcpyAsync(captured_errors_ + 4 * k, error_, sizeof(long long) * 4,
                                        cudaMemcpyDeviceToHost, stream()),
                        "cudaMemcpyAsync (captured error slots)");
  captured_checks_.push_back(std::move(check));
}

bool CudaDevice::begin_capture() {
  std::thread::id none{};
  if (!capture_thread_.compare_exchange_strong(none, std::this_thread::get_id())) return false;
  captured_checks_.clear();
  return true;
}

std::vector<CudaDevice::ErrorCheck> CudaDevice::end_capture() {
  capture_thread_.store(std::thread::id{});
  return std::move(captured_checks_);
}

void CudaDevice::run_checks(const std::vector<ErrorCheck>& checks) {
  if (checks.empty()) return;
  synchronize();
  for (std::size_t k = 0; k < checks.size(); ++k) checks[k](captured_errors_ + 4 * k);
}

void* CudaDevice::staging(std::size_t bytes) {
  if (bytes > staging_bytes_) {
    if (staging_) check(cudaFreeHost(staging_), "cudaFreeHost");
    staging_ = nullptr;
    staging_bytes_ = 0;
    check(cudaHostAlloc(&staging_, bytes, cudaHostAllocDefault), "cudaHostAlloc (staging)");
    staging_bytes_ = bytes;
  }
  return staging_;
}

static constexpr std::size_t kStagingChunk = std::size_t{64} << 20;

// Up to this size a host-to-device copy from pageable memory is handed to the driver straight from the caller's
// buffer: CUDA returns once it has staged the bytes, with the copy ordered on the stream, so the caller may reuse
// its buffer at once and nothing waits for the transfer (a recorded step's batch: one copy, no round trip).
// Page-locked memory would be read later, by DMA: it takes the staged path, which waits.
static constexpr std::size_t kDirectCopyMax = std::size_t{1} << 20;

static bool pageable(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeUnregistered;
}

void CudaDevice::copy_to_device(void* dst, const void* src, std::size_t bytes) {
  activate();
  if (bytes <= kDirectCopyMax && pageable(src)) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync");
    return;
  }
  std::lock_guard lock(staging_mu_);
  void* buf = staging(std::min(bytes, kStagingChunk));
  for (std::size_t off = 0; off < bytes; off += kStagingChunk) {
    const std::size_t n = std::min(kStagingChunk, bytes - off);
    std::memcpy(buf, static_cast<const char*>(src) + off, n);
    check(cudaMemcpyAsync(static_cast<char*>(dst) + off, buf, n, cudaMemcpyHostToDevice, stream()), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");  // before the staging buffer is reused
  }
}

void CudaDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(staging_mu_);
  activate();
  void* buf = staging(std::min(bytes, kStagingChunk));
  for (std::size_t off = 0; off < bytes; off += kStagingChunk) {
    const std::size_t n = std::min(kStagingChunk, bytes - off);
    check(cudaMemcpyAsync(buf, static_cast<const char*>(src) + off, n, cudaMemcpyDeviceToHost, stream()),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
    std::memcpy(static_cast<char*>(dst) + off, buf, n);
  }
}

void CudaDevice::copy_on_device(void* dst, const void* src, std::size_t bytes) {
  activate();
  // With unified addressing the source may be on another GPU (its queue was synchronised by the caller).
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()), "cudaMemcpyAsync");
}

void CudaDevice::synchronize() {
  activate();
  check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

CudaDevice& cuda_device(runtime::Device& device) { return static_cast<CudaDevice&>(device.allocator()); }

}  // namespace osprey::cuda
