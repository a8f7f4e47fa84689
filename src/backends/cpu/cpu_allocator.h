// Host memory for CPU devices: 64-byte aligned blocks, cached by size so a training step that repeats the same
// shapes does no malloc/free after its first run.
#pragma once

#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/allocator.h"

namespace osprey::cpu {

class CpuAllocator : public runtime::Allocator {
 public:
  explicit CpuAllocator(std::string name) : Allocator(std::move(name), std::nullopt) {}
  ~CpuAllocator() override;

 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* ptr, std::size_t bytes) override;

 private:
  static constexpr std::size_t kMaxCachedBytes = std::size_t{256} << 20;
  std::mutex mu_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_bytes_ = 0;
};

/// Rounds a request up to the allocation granule (64 bytes), the size blocks are cached by.
inline std::size_t round_bytes(std::size_t bytes) { return (bytes + 63) & ~std::size_t{63}; }

}  // namespace osprey::cpu
