// Helpers shared by the tests.
#pragma once

#include <filesystem>
#include <string>

#include "runtime/device_manager.h"

namespace osprey::testing {
/// A fresh runtime, as a new process would see it (the test-only reset hook).
inline void reset_runtime() { runtime::DeviceManager::get().reset_for_testing(); }

/// The what() of the exception of type E that f() throws, or "<no exception>".
template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no exception>";
}

/// `name` in a per-suite folder under the system's temporary directory (created on first use).
inline std::string temp_path(const std::string& suite, const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("osprey_" + suite);
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

#ifdef OSPREY_TEST_DATA_DIR
/// A file of tests/data.
inline std::string data_file(const std::string& name) { return std::string(OSPREY_TEST_DATA_DIR) + "/" + name; }
#endif
}  // namespace osprey::testing
