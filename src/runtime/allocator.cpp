#include "runtime/allocator.h"

#include <fmt/format.h>

#include "core/logging.h"
#include "osprey/errors.h"

namespace osprey::runtime {

void* Allocator::allocate(std::size_t bytes) {
  const auto n = static_cast<int64_t>(bytes);
  int64_t now = current_.fetch_add(n) + n;
  if (limit_ && now > *limit_) {
    current_.fetch_sub(n);
    log_out_of_memory(bytes, now - n);
    throw ResourceExhaustedError(fmt::format(
        "Allocator ({}) ran out of memory trying to allocate {} bytes: {} bytes in use, limit {} bytes", name_, bytes,
        now - n, *limit_));
  }
  void* p = raw_allocate(bytes);
  if (!p) {
    current_.fetch_sub(n);
    log_out_of_memory(bytes, now - n);
    throw ResourceExhaustedError(fmt::format("Allocator ({}) ran out of memory trying to allocate {} bytes: {} bytes in use",
                                             name_, bytes, now - n));
  }
  num_allocs_.fetch_add(1, std::memory_order_relaxed);
  int64_t largest = largest_alloc_.load();
  while (n > largest && !largest_alloc_.compare_exchange_weak(largest, n)) {
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

MemoryStats Allocator::stats() const {
  return {current_.load(), peak_.load(), limit_, reserved_bytes(), num_allocs_.load(), largest_alloc_.load()};
}

void Allocator::reset_peak() {
  peak_.store(current_.load());
  num_allocs_.store(0);
  largest_alloc_.store(0);
}

std::string human_bytes(int64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{}B", bytes);
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return fmt::format("{:.2f}{}", v, units[u]);
}

void Allocator::log_out_of_memory(std::size_t bytes, int64_t in_use) const {
  const auto s = stats();
  log::warning(fmt::format(
      "Allocator ({}) ran out of memory trying to allocate {} (rounded to {})\n"
      "Stats:\nLimit:        {:>20}\nInUse:        {:>20}\nMaxInUse:     {:>20}\nNumAllocs:    {:>20}\n"
      "MaxAllocSize: {:>20}\nReserved:     {:>20}",
      name_, human_bytes(static_cast<int64_t>(bytes)), bytes, limit_.value_or(-1), in_use, s.peak, s.num_allocs,
      s.largest_alloc, s.reserved));
}

}  // namespace osprey::runtime
