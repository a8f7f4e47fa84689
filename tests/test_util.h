// Helpers shared by the tests.
#pragma once

#include <sched.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "osprey/errors.h"
#include "runtime/device_manager.h"

namespace osprey::testing {
/// A fresh runtime, as a new process would see it (the test-only reset hook).
inline void reset_runtime() { runtime::DeviceManager::get().reset_for_testing(); }

/// The what() of the exception of type E (any Osprey error by default) that f() throws, or "<no exception>".
template <typename E = Error, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no exception>";
}

/// Runs f() with the calling thread allowed only the first CPU of its affinity mask (as under `taskset -c N`),
/// then gives the thread its mask back.
template <typename F>
void on_one_cpu(F&& f) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) throw std::runtime_error("sched_getaffinity failed");
  int first = 0;
  while (!CPU_ISSET(first, &allowed)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) throw std::runtime_error("sched_setaffinity failed");
  struct Restore {
    cpu_set_t mask;
    ~Restore() { sched_setaffinity(0, sizeof mask, &mask); }
  } restore{allowed};
  f();
}

/// `name` in a per-suite folder under the system's temporary directory (created on first use).
inline std::string temp_path(const std::string& suite, const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("osprey_" + suite);
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

#ifndef OSPREY_HAVE_HDF5_PLUGIN
#define OSPREY_HAVE_HDF5_PLUGIN 0
#endif
/// In a GoogleTest test: skip, saying why, when the HDF5 plug-in (Keras's .weights.h5 and .keras files) was not
/// built (no libhdf5-dev at configure time).
#define SKIP_WITHOUT_HDF5()                                                                                    \
  if (!OSPREY_HAVE_HDF5_PLUGIN)                                                                                \
  GTEST_SKIP() << "Osprey was built without HDF5 (Debian: libhdf5-dev), so libosprey_hdf5.so does not exist"

#ifdef OSPREY_TEST_DATA_DIR
/// A file of tests/data.
inline std::string data_file(const std::string& name) { return std::string(OSPREY_TEST_DATA_DIR) + "/" + name; }
#endif
}  // namespace osprey::testing
