// The CUDA platform (libosprey_cuda.so): discovery through the CUDA runtime, a stream-ordered memory pool and a
// stream per logical device, host<->device copies through pinned staging buffers, and the kernels (cuda_ops.cpp).
#pragma once

#include <cstdint>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "backends/cuda/cuda_kernels.h"
#include "runtime/memory_policy.h"
#include "runtime/platform.h"

namespace osprey::cuda {

/// Throws InternalError naming the call and CUDA's message when `err` is not cudaSuccess.
void check(cudaError_t err, const char* what);
/// Same for cuBLAS(Lt) status codes.
void check(cublasStatus_t status, const char* what);

/// What one logical GPU owns: its stream, memory pool, cuBLASLt handle and workspace, device scratch and pinned
/// staging memory. It is the logical device's allocator, so kernels reach it through the device.
class CudaDevice : public runtime::Allocator {
 public:
  CudaDevice(std::string name, int ordinal, int platform_id, int64_t limit, bool growth);
  ~CudaDevice() override;

  int ordinal() const { return ordinal_; }
  /// The stream the calling thread queues work on: the device's, or while this thread captures a graph
  /// (begin_capture) the capture stream, so that other threads' work (a Dataset prefetching batches onto the
  /// device, say) runs meanwhile instead of joining the graph.
  cudaStream_t stream() const { return capturing() ? capture_stream_ : stream_; }
  /// Whether the calling thread is capturing a graph on this device.
  bool capturing() const { return capture_thread_.load() == std::this_thread::get_id(); }
  cublasLtHandle_t lt() const { return lt_; }
  void* workspace() const { return workspace_; }
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
  Scratch scratch() const { return {partials_, error_}; }

  /// Makes this GPU current for the calling thread.
  void activate() const;
  /// Clears the error slots before a kernel that may report one.
  void clear_error();
  /// Waits for the stream and returns the error slots ([0] is non-zero when a kernel reported an error).
  void read_error(long long out[4]);
  /// Throws a kernel's input error, given the error slots (does nothing when [0] is zero).
  using ErrorCheck = std::function<void(const long long err[4])>;
  /// read_error() then `check`. While a graph is captured (begin_capture), instead captures a copy of the slots
  /// into pinned memory and keeps `check` for after each launch of the graph (run_checks): waiting for the GPU is
  /// not possible inside a graph. Up to kCapturedChecks per graph (more: InternalError, the capture fails).
  void check_errors(ErrorCheck check);
  static constexpr int kCapturedChecks = 16;
  /// The calling thread's work goes to the capture stream until end_capture; false when another thread is
  /// capturing on this device (one capture at a time).
  bool begin_capture();
  /// Ends a capture: the checks its kernels deferred, in order (check i reads slot copy i).
  std::vector<ErrorCheck> end_capture();
  /// After a launch of a graph with checks: waits for it, then runs them on their copies (the first error throws).
  void run_checks(const std::vector<ErrorCheck>& checks);
  /// Host <-> device copy on this device's stream, staged through pinned memory; returns when done (up to 1 MiB
  /// from pageable memory to the device: when CUDA has taken the bytes, the copy ordered before later work).
  void copy_to_device(void* dst, const void* src, std::size_t bytes);
  void copy_to_host(void* dst, const void* src, std::size_t bytes);
  void copy_on_device(void* dst, const void* src, std::size_t bytes);
  /// An event of this device's stream for ordering other streams after its work (re-recorded at each use).
  cudaEvent_t order_event() const { return order_event_; }
  void synchronize();

 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* ptr, std::size_t bytes) override;
  int64_t reserved_bytes() const override;

 public:
  /// Synchronises, drops the pool's release threshold to the bytes in use and trims the pool to them.
  void release_reserved() override;

 protected:

 private:
  void* staging(std::size_t bytes);

  int ordinal_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t capture_stream_ = nullptr;
  std::atomic<std::thread::id> capture_thread_{};
  cudaEvent_t order_event_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  double* partials_ = nullptr;
  long long* error_ = nullptr;
  long long* error_host_ = nullptr;
  long long* captured_errors_ = nullptr;  // pinned: kCapturedChecks copies of the slots, written by graphs
  std::vector<ErrorCheck> captured_checks_;
  mutable std::mutex mu_;
  runtime::RegionPolicy policy_;
  int64_t in_use_ = 0;
  std::mutex staging_mu_;
  void* staging_ = nullptr;
  std::size_t staging_bytes_ = 0;
};

/// The device context of a kernel's logical device.
CudaDevice& cuda_device(runtime::Device& device);

/// Registers the CUDA kernels for DeviceType::GPU (cuda_ops.cpp).
void register_cuda_kernels();
/// Registers the convolution and pooling kernels (cuda_conv.cpp): cuDNN, opened on first use, and own pooling.
void register_cuda_conv_kernels();
/// Registers the kernels of the ops behind keras::ops (cuda_toolkit.cpp).
void register_cuda_toolkit_kernels();
/// Registers the linear-algebra kernels (cuda_linalg.cpp).
void register_cuda_linalg_kernels();
/// Registers the whole-sequence LSTM, GRU and simple RNN kernels on cuDNN's RNNs (cuda_rnn.cpp).
void register_cuda_rnn_kernels();

}  // namespace osprey::cuda
