#include "backends/cpu/cpu_allocator.h"

#include <cstdlib>

namespace osprey::cpu {

CpuAllocator::~CpuAllocator() {
  for (auto& [size, blocks] : free_) {
    for (void* p : blocks) std::free(p);
  }
}

void* CpuAllocator::raw_allocate(std::size_t bytes) {
  const std::size_t size = round_bytes(bytes == 0 ? 1 : bytes);
  {
    std::lock_guard lock(mu_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= size;
      return p;
    }
  }
  return std::aligned_alloc(64, size);
}

void CpuAllocator::raw_deallocate(void* ptr, std::size_t bytes) {
  const std::size_t size = round_bytes(bytes == 0 ? 1 : bytes);
  {
    std::lock_guard lock(mu_);
    if (cached_bytes_ + size <= kMaxCachedBytes) {
      free_[size].push_back(ptr);
      cached_bytes_ += size;
      return;
    }
  }
  std::free(ptr);
}

}  // namespace osprey::cpu
