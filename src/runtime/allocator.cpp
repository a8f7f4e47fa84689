#include "runtime/allocator.h"

#include <fmt/format.h>

#include "osprey/errors.h"

namespace osprey::runtime {

void* Allocator::allocate(std::size_t bytes) {
  const auto n = static_cast<int64_t>(bytes);
  int64_t now = current_.fetch_add(n) + n;
  if (limit_ && now > *limit_) {
    current_.fetch_sub(n);
    throw ResourceExhaustedError(fmt::format(
        "Allocator ({}) ran out of memory trying to allocate {} bytes: {} bytes in use, limit {} bytes", name_, bytes,
        now - n, *limit_));
  }
  void* p = raw_allocate(bytes);
  if (!p) {
    current_.fetch_sub(n);
    throw ResourceExhaustedError(fmt::format("Allocator ({}) ran out of memory trying to allocate {} bytes: {} bytes in use",
                                             name_, bytes, now - n));
  }
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void Allocator::deallocate(void* ptr, std::size_t bytes) {
  if (!ptr) return;
  raw_deallocate(ptr, bytes);
  current_.fetch_sub(static_cast<int64_t>(bytes));
}

MemoryStats Allocator::stats() const { return {current_.load(), peak_.load(), limit_}; }

void Allocator::reset_peak() { peak_.store(current_.load()); }

}  // namespace osprey::runtime
