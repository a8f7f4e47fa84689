// The two device-list syntaxes of the GPU world: CUDA_VISIBLE_DEVICES (read by the CUDA driver; Osprey's test
// platform and `osprey doctor` apply the same rules) and TensorFlow's GPUOptions.visible_device_list.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace osprey::runtime {

/// What CUDA_VISIBLE_DEVICES exposes of a machine's GPUs.
struct CudaVisibleDevices {
  std::vector<int> physical;  ///< physical ordinals in enumeration order: platform id i is physical[i]
  std::string invalid_entry;  ///< the first entry that stopped the list ("" when every entry was used)
};

/// Applies CUDA_VISIBLE_DEVICES to a machine whose GPUs have these UUIDs ("GPU-8932f937-..."), as the CUDA
/// driver does: unset means every GPU; "" means none; entries are ordinals or unique "GPU-" UUID prefixes,
/// enumerated in list order; the list stops at the first invalid entry (out of range, -1, ambiguous or unknown
/// UUID, a repeat, MIG ids).
CudaVisibleDevices apply_cuda_visible_devices(const std::optional<std::string>& value,
                                              const std::vector<std::string>& uuids);

/// Parses TensorFlow's visible_device_list ("2,0") against `visible_count` platform GPUs. Throws
/// InvalidArgumentError with TensorFlow's texts for unparsable entries, ids out of range and duplicates.
std::vector<int> parse_visible_device_list(const std::string& list, int visible_count);

}  // namespace osprey::runtime
