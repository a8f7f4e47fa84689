#include "runtime/memory_policy.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/env.h"
#include "core/logging.h"

namespace osprey::runtime {

int64_t min_system_memory(int64_t free_bytes, int cc_major) {
  if (auto v = env::get_first({"OSPREY_DEVICE_MIN_SYS_MEMORY_IN_MB", "TF_DEVICE_MIN_SYS_MEMORY_IN_MB"})) {
    int64_t mb = -1;
    auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), mb);
    if (ec == std::errc() && ptr == v->data() + v->size() && mb >= 0 && mb * kMiB < free_bytes) return mb * kMiB;
    log::warning(fmt::format("The requested reserved device memory {} is invalid. The request will be ignored.", *v));
  }
  if (free_bytes < (int64_t{1} << 31)) return 225 * kMiB;
  if (cc_major <= 6) return 500 * kMiB;
  if (cc_major <= 7) return 1050 * kMiB;
  if (cc_major <= 8) return 1536 * kMiB;
  return 1800 * kMiB;
}

int64_t default_gpu_memory_limit(int64_t free_bytes, int cc_major) {
  return std::max<int64_t>(0, free_bytes - min_system_memory(free_bytes, cc_major));
}

RegionPolicy::RegionPolicy(bool allow_growth, int64_t limit)
    : allow_growth_(allow_growth), limit_(limit), next_region_(std::min(limit, 2 * kMiB)) {
  if (!allow_growth_ && limit_ > 0) {
    regions_.push_back(limit_);
    reserved_ = limit_;
  }
}

std::optional<std::vector<int64_t>> RegionPolicy::reserve_for(int64_t needed) {
  if (needed > limit_) return std::nullopt;
  std::vector<int64_t> added;
  while (reserved_ < needed) {
    // A region big enough for what is missing, at least the doubling schedule's next size, capped by the limit.
    int64_t size = std::max(next_region_, needed - reserved_);
    size = std::min(size, limit_ - reserved_);
    regions_.push_back(size);
    added.push_back(size);
    reserved_ += size;
    next_region_ = std::min(limit_, next_region_ * 2);
  }
  return added;
}

void RegionPolicy::release_all_but(int64_t in_use) {
  allow_growth_ = true;
  regions_.clear();
  reserved_ = std::max<int64_t>(in_use, 0);
  if (reserved_ > 0) regions_.push_back(reserved_);
  next_region_ = std::min(limit_, 2 * kMiB);
}

}  // namespace osprey::runtime
