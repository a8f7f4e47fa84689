// How much device memory a GPU's logical device takes, and how it takes it, following TensorFlow: without memory
// growth the limit is the free memory minus a reserve for the driver and libraries, reserved up front as one
// region; with growth the first region is 2 MiB and each later one doubles, and nothing is given back.
// Shared by every GPU platform (CUDA plug-in, the test platform).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/allocator.h"

namespace osprey::runtime {

inline constexpr int64_t kMiB = int64_t{1} << 20;

/// TensorFlow's MinSystemMemory: 225 MiB when less than 2 GiB is free, else 500/1050/1536/1800 MiB for compute
/// capability major ≤ 6/≤ 7/≤ 8/above. OSPREY_DEVICE_MIN_SYS_MEMORY_IN_MB (or TF_DEVICE_MIN_SYS_MEMORY_IN_MB)
/// overrides it; an invalid value is logged and ignored.
int64_t min_system_memory(int64_t free_bytes, int cc_major);
/// The default allocator limit of a GPU with no memory_limit: free memory minus min_system_memory().
int64_t default_gpu_memory_limit(int64_t free_bytes, int cc_major);

/// The region sizes a growing pool takes from the device: first min(limit, 2 MiB), then doubling, never past the
/// limit. Without growth a single region of the whole limit is taken at creation.
class RegionPolicy {
 public:
  RegionPolicy(bool allow_growth, int64_t limit);
  /// Makes sure `needed` bytes fit in the reserved regions, taking more regions as required; returns the sizes of
  /// the regions added (possibly none). Returns nothing and adds nothing when `needed` exceeds the limit.
  std::optional<std::vector<int64_t>> reserve_for(int64_t needed);
  /// Keeps only `in_use` bytes reserved (one region) and grows on demand from then on (a retired device).
  void release_all_but(int64_t in_use);
  int64_t reserved() const { return reserved_; }
  int64_t limit() const { return limit_; }
  const std::vector<int64_t>& regions() const { return regions_; }

 private:
  bool allow_growth_;
  int64_t limit_;
  int64_t next_region_;
  int64_t reserved_ = 0;
  std::vector<int64_t> regions_;
};

}  // namespace osprey::runtime
