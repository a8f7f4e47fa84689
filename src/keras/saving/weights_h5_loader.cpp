// Opens the HDF5 plug-in (libosprey_hdf5.so) the first time a .weights.h5 or .keras file is read or written.
#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <regex>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "keras/saving/weights_h5.h"
#include "osprey/errors.h"
#include "runtime/plugin_paths.h"

namespace osprey::keras::detail {

std::string to_snake_case(const std::string& class_name) {
  static const std::regex upper_word("(.)([A-Z][a-z]+)"), lower_upper("([a-z])([A-Z])");
  std::string s = std::regex_replace(class_name, upper_word, "$1_$2");
  s = std::regex_replace(s, lower_upper, "$1_$2");
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

namespace {

constexpr const char* kPluginFile = "libosprey_hdf5.so";

const Hdf5Api& api() {
  static const Hdf5Api* loaded = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path = runtime::find_plugin(kPluginFile, "OSPREY_HDF5_PLUGIN", error);
    if (path.empty()) return;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the life of the process
    if (!handle) {
      const char* why = dlerror();
      error = fmt::format("{} could not be loaded: {}", path, why ? why : "dlopen failed");
      return;
    }
    auto entry = reinterpret_cast<const Hdf5Api* (*)()>(dlsym(handle, "osprey_hdf5_api"));
    const Hdf5Api* a = entry ? entry() : nullptr;
    if (!a || a->version != kHdf5ApiVersion) {
      error = fmt::format("{} is not the HDF5 plug-in of this Osprey build (API {} expected); rebuild it", path,
                          kHdf5ApiVersion);
      return;
    }
    loaded = a;
  });
  if (!loaded) {
    throw UnavailableError(fmt::format("Keras .weights.h5 and .keras files need Osprey's HDF5 plug-in: {}. Build "
                                       "Osprey with HDF5 (Debian: libhdf5-dev) or set OSPREY_HDF5_PLUGIN to the "
                                       "plug-in's path.",
                                       error));
  }
  return *loaded;
}

}  // namespace

void save_weights_h5(const Model& model, const std::string& path) {
  const std::string image = api().save(model);
  core::write_file_atomically(path, image, "save_weights");
}

void load_weights_h5(Model& model, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {  // not a FIFO or a device: those could block or never end
    throw NotFoundError(fmt::format("load_weights: no such file: '{}'", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFoundError(fmt::format("load_weights: cannot open '{}'", path));
  const std::string image{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw InternalError(fmt::format("load_weights: reading '{}' failed", path));
  api().load(model, image, path);
}

std::string weights_h5_image(const Model& model) { return api().save(model); }
void load_weights_h5_image(Model& model, const std::string& image, const std::string& what) {
  api().load(model, image, what);
}

}  // namespace osprey::keras::detail
