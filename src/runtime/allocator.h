// The memory interface of a logical device: allocate/free with current and peak statistics and an optional limit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace osprey::runtime {

struct MemoryStats {
  int64_t current = 0;  ///< bytes handed out and not yet freed
  int64_t peak = 0;     ///< highest `current` since creation or the last reset
  std::optional<int64_t> limit;  ///< bytes this allocator may hand out, when capped
  int64_t reserved = 0;  ///< bytes taken from the device (regions of a GPU pool; equals current for the CPU)
  int64_t num_allocs = 0;       ///< allocations since creation or the last reset
  int64_t largest_alloc = 0;    ///< largest single request since creation or the last reset
};

/// One per logical device. Subclasses provide raw memory; this class keeps the statistics and the limit.
class Allocator {
 public:
  /// `name` is TensorFlow's allocator name ("cpu", "GPU_0_bfc"); `limit` caps the bytes in use.
  Allocator(std::string name, std::optional<int64_t> limit) : name_(std::move(name)), limit_(limit) {}
  virtual ~Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  /// Returns at least `bytes` bytes aligned to 64. Throws ResourceExhaustedError past the limit or when the
  /// memory is not there; the message gives the bytes requested, in use and the limit.
  void* allocate(std::size_t bytes);
  /// Returns memory from allocate(); `bytes` is the size that was asked for.
  void deallocate(void* ptr, std::size_t bytes);

  MemoryStats stats() const;
  /// The device is retired (a test's runtime reset; tensors made before may still use it): the pool gives back
  /// what it holds beyond the memory in use, and takes memory on demand from then on. Never throws.
  virtual void release_reserved() {}
  /// Sets peak to the current use and clears num_allocs/largest_alloc (tf.config.experimental.reset_memory_stats).
  void reset_peak();
  const std::string& name() const { return name_; }
  std::optional<int64_t> limit() const { return limit_; }

 protected:
  virtual void* raw_allocate(std::size_t bytes) = 0;  ///< nullptr when out of memory
  virtual void raw_deallocate(void* ptr, std::size_t bytes) = 0;
  /// Bytes held from the device; pools that reserve regions override this.
  virtual int64_t reserved_bytes() const { return current_.load(); }
  /// Logs TensorFlow's "ran out of memory" warning with the statistics, before the error is thrown.
  void log_out_of_memory(std::size_t bytes, int64_t in_use) const;

 private:
  std::string name_;
  std::optional<int64_t> limit_;
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> num_allocs_{0};
  std::atomic<int64_t> largest_alloc_{0};
};

/// "1.50GiB", "512.0KiB", "12B": TensorFlow's human-readable byte counts.
std::string human_bytes(int64_t bytes);

}  // namespace osprey::runtime
