// Model weights: get/set, Keras's .weights.h5 (the HDF5 plug-in, keras/weights_h5.h) and Osprey's own checkpoint file:
//   "OSPREYW1" | u32 count | per variable: u32 path length, path, u8 dtype, u32 rank, i64 dims..., raw data
// All integers little-endian as the host writes them (x86-64, aarch64).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "keras/models/model_state.h"
#include "keras/saving/weights_h5.h"
#include "osprey/errors.h"
#include "osprey/keras/model.h"
#include "runtime/device_manager.h"

namespace osprey::keras {

static constexpr char kMagic[8] = {'O', 'S', 'P', 'R', 'E', 'Y', 'W', '1'};
static const std::string kExtension = ".weights.osp";
static const std::string kH5Extension = ".weights.h5";

std::vector<Tensor> Model::get_weights() const {
  auto& host = runtime::DeviceManager::get().host_device();
  std::vector<Tensor> out;
  for (auto* v : variables()) out.push_back(v->component(0).to(host));  // to() always copies
  return out;
}

void Model::set_weights(const std::vector<Tensor>& weights) {
  const auto vars = variables();
  if (weights.size() != vars.size()) {
    throw ValueError(fmt::format("set_weights: the model has {} variables, got {} weights", vars.size(), weights.size()));
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (weights[i].shape() != vars[i]->shape() || weights[i].dtype() != vars[i]->value().dtype()) {
      throw ValueError(fmt::format("set_weights: weight {} has shape {} and dtype {}, but variable '{}' has shape {} and "
                                   "dtype {}",
                                   i, weights[i].shape().to_string(), dtype_name(weights[i].dtype()), vars[i]->path(),
                                   vars[i]->shape().to_string(), dtype_name(vars[i]->value().dtype())));
    }
  }
  for (size_t i = 0; i < vars.size(); ++i) vars[i]->assign(weights[i]);  // every replica's component
}

template <typename T>
static void put(std::ostream& out, T v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
static T get(std::istream& in, const std::string& path) {
  T v{};
  if (!in.read(reinterpret_cast<char*>(&v), sizeof v)) {
    throw ValueError(fmt::format("load_weights: '{}' is truncated or not an Osprey weights file", path));
  }
  return v;
}

/// True for Keras's format, false for Osprey's; ValueError for any other name.
static bool keras_format(const std::string& path) {
  if (path.ends_with(kH5Extension)) return true;
  if (path.ends_with(kExtension)) return false;
  throw ValueError(fmt::format("The filename must end in `{}` (or `{}`, Osprey's own format). Received: filepath={}",
                               kH5Extension, kExtension, path));
}

// Keras's .weights.h5 layout keys a subclass's layers by their Python attribute names (track("name", layer)); one
// whose call() has not run has no variables yet.
static const Model& h5_model(const Model& m, const std::string& path) {
  if (m.inputs().empty() && !dynamic_cast<const Sequential*>(&m) && m.variables().empty()) {
    throw ValueError(fmt::format("Model subclass '{}' has no variables yet: call it (or fit) once before saving or "
                                 "loading `{}`",
                                 m.name(), path));
  }
  return m;
}

void Model::save_weights(const std::string& path) const {
  const bool h5 = keras_format(path);
  if (!state().saves_files()) return;  // a multi-worker strategy's other workers: the chief writes
  if (h5) return detail::save_weights_h5(h5_model(*this, path), path);
  const auto vars = variables();
  const auto weights = get_weights();
  std::ostringstream out(std::ios::binary);
  {
    out.write(kMagic, sizeof kMagic);
    put<uint32_t>(out, static_cast<uint32_t>(vars.size()));
    for (size_t i = 0; i < vars.size(); ++i) {
      const std::string& p = vars[i]->path();
      put<uint32_t>(out, static_cast<uint32_t>(p.size()));
      out.write(p.data(), static_cast<std::streamsize>(p.size()));
      put<uint8_t>(out, static_cast<uint8_t>(weights[i].dtype()));
      put<uint32_t>(out, static_cast<uint32_t>(weights[i].shape().rank()));
      for (int64_t d : weights[i].shape().dims()) put<int64_t>(out, d);
      out.write(static_cast<const char*>(weights[i].raw_data()), weights[i].nbytes());
    }
  }
  core::write_file_atomically(path, out.view(), "save_weights");  // readers see the old file or the new one
}

void Model::load_weights(const std::string& path) {
  if (keras_format(path)) return detail::load_weights_h5(const_cast<Model&>(h5_model(*this, path)), path);
  // A regular file only: opening a FIFO or a device would block or read forever.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw ValueError(fmt::format("load_weights: '{}' is not a regular file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFoundError(fmt::format("load_weights: cannot open '{}': {}", path, std::strerror(errno)));
  char magic[8];
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    throw ValueError(fmt::format("load_weights: '{}' is not an Osprey weights file", path));
  }
  const auto vars = variables();
  const auto count = get<uint32_t>(in, path);
  if (count != vars.size()) {
    throw ValueError(fmt::format("load_weights: '{}' holds {} variables, the model has {}", path, count, vars.size()));
  }
  auto& host = runtime::DeviceManager::get().host_device();
  std::vector<Tensor> weights;
  std::vector<std::string> names;
  for (uint32_t i = 0; i < count; ++i) {
    const auto len = get<uint32_t>(in, path);
    if (len > 4096) throw ValueError(fmt::format("load_weights: '{}' is corrupt (variable name of {} bytes)", path, len));
    std::string name(len, '\0');
    if (!in.read(name.data(), len)) throw ValueError(fmt::format("load_weights: '{}' is truncated", path));
    const auto dtype = static_cast<DType>(get<uint8_t>(in, path));
    const auto rank = get<uint32_t>(in, path);
    if (rank > 8) throw ValueError(fmt::format("load_weights: '{}' is corrupt (rank {})", path, rank));
    std::vector<int64_t> dims;
    for (uint32_t r = 0; r < rank; ++r) dims.push_back(get<int64_t>(in, path));
    const Shape shape(dims);
    if (shape != vars[i]->shape() || dtype != vars[i]->value().dtype()) {
      // Another order of the same variables (files written before model.layers() took Keras's order): by name.
      bool named = false;
      for (const auto* v : vars) named = named || (v->path() == name && v->shape() == shape && v->value().dtype() == dtype);
      if (!named) {
        throw ValueError(fmt::format("load_weights: variable {} in '{}' is '{}' {} {}, but the model's is '{}' {} {}", i,
                                     path, name, shape.to_string(), dtype_name(dtype), vars[i]->path(),
                                     vars[i]->shape().to_string(), dtype_name(vars[i]->value().dtype())));
      }
    }
    Tensor t = Tensor::empty(shape, dtype, &host);
    if (!in.read(static_cast<char*>(t.raw_data()), t.nbytes())) {
      throw ValueError(fmt::format("load_weights: '{}' is truncated", path));
    }
    weights.push_back(t);
    names.push_back(std::move(name));
  }
  // Matched by name where the file names every variable of the model once (the same model, or one built with the
  // same names: a file written in another order of the variables still lands right); else by position, like
  // Keras's weight files (auto-names differ between model instances).
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < names.size(); ++i) at.emplace(names[i], i);
  bool by_name = at.size() == vars.size();
  for (std::size_t i = 0; by_name && i < vars.size(); ++i) {
    auto it = at.find(vars[i]->path());
    by_name = it != at.end() && weights[it->second].shape() == vars[i]->shape() &&
              weights[it->second].dtype() == vars[i]->value().dtype();
  }
  if (by_name) {
    std::vector<Tensor> ordered;
    for (const auto* v : vars) ordered.push_back(weights[at.at(v->path())]);
    weights = std::move(ordered);
  }
  set_weights(weights);
}

}  // namespace osprey::keras
