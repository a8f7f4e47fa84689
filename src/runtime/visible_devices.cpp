#include "runtime/visible_devices.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "osprey/errors.h"

namespace osprey::runtime {

static std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t end = s.find(',', start);
    std::string item = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    out.push_back(first == std::string::npos ? "" : item.substr(first, last - first + 1));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

static std::optional<int> parse_int(const std::string& s) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

CudaVisibleDevices apply_cuda_visible_devices(const std::optional<std::string>& value,
                                              const std::vector<std::string>& uuids) {
  CudaVisibleDevices out;
  const int count = static_cast<int>(uuids.size());
  if (!value) {
    for (int i = 0; i < count; ++i) out.physical.push_back(i);
    return out;
  }
  if (value->find_first_not_of(" \t") == std::string::npos) return out;  // "" hides every GPU
  for (const auto& entry : split_commas(*value)) {
    std::optional<int> ordinal;
    if (auto n = parse_int(entry)) {
      if (*n >= 0 && *n < count) ordinal = *n;
    } else if (entry.rfind("GPU-", 0) == 0) {
      int matches = 0;
      for (int i = 0; i < count; ++i) {
        if (uuids[i].rfind(entry, 0) == 0) {
          ordinal = i;
          ++matches;
        }
      }
      if (matches != 1) ordinal.reset();  // unknown or ambiguous prefix
    }
    if (ordinal && std::find(out.physical.begin(), out.physical.end(), *ordinal) != out.physical.end()) {
      ordinal.reset();  // a repeat is invalid too
    }
    if (!ordinal) {
      out.invalid_entry = entry;
      break;
    }
    out.physical.push_back(*ordinal);
  }
  return out;
}

std::vector<int> parse_visible_device_list(const std::string& list, int visible_count) {
  std::vector<int> out;
  if (list.empty()) {
    for (int i = 0; i < visible_count; ++i) out.push_back(i);
    return out;
  }
  for (const auto& entry : split_commas(list)) {
    auto id = parse_int(entry);
    if (!id) {
      throw InvalidArgumentError(fmt::format("Could not parse entry in 'visible_device_list': '{}'. "
                                             "visible_device_list = {}",
                                             entry, list));
    }
    if (*id < 0 || *id >= visible_count) {
      throw InvalidArgumentError(fmt::format("'visible_device_list' listed an invalid Device id '{}' but visible "
                                             "device count is {}",
                                             *id, visible_count));
    }
    if (std::find(out.begin(), out.end(), *id) != out.end()) {
      throw InvalidArgumentError(fmt::format("visible_device_list contained a duplicate entry: {}", list));
    }
    out.push_back(*id);
  }
  return out;
}

}  // namespace osprey::runtime
