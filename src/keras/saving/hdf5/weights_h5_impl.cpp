// The HDF5 plug-in (libosprey_hdf5.so): Keras 3's .weights.h5 files through the HDF5 C library. A plug-in, loaded
// on first use (weights_h5_loader.cpp), because libhdf5 brings ~30 libraries (curl, TLS, Kerberos) whose loading
// would add ~6 ms to the start of every Osprey program.
//
// Keras 3's .weights.h5 layout (keras/src/saving/saving_lib.py, H5IOStore), as Keras 3.15 writes it:
//   /vars                      attr name = the model's name (a Sequential has no own variables)
//   /layers/<key>/vars         attr name = the layer's name; datasets "0", "1", ... = its variables, trainable first
//                              (a functional model's InputLayers too, without datasets; a nested model is a
//                              /layers/<key> group of its own /layers/... and /vars)
//   /optimizer/vars            attr name = the optimizer's name; "0" iterations (int64 scalar), "1" learning_rate
//                              (float32 scalar; absent with a schedule), then the slots in the optimizer's order.
//                              With loss scaling (a LossScaleOptimizer): first the wrapper's own iterations (0),
//                              learning_rate (0.0), step_counter (int64) and dynamic_scale (float32), then the inner
//                              optimizer's variables as above; the inner ones once more in
//                              /optimizer/inner_optimizer/vars (attr name = the inner optimizer's name)
// <key> is the snake_case class name, made unique within the model in layer order: dense, dense_1, dropout, ...
// Files are matched by those keys, not by layer names, so weights move between models built the same way.
#include "keras/saving/weights_h5.h"

#include <hdf5.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "core/logging.h"
#include "osprey/errors.h"
#include "osprey/keras/model.h"
#include "runtime/device_manager.h"

namespace osprey::keras::detail {

namespace {

// ---- thin RAII over the HDF5 C API; every return code checked ----

/// Silences HDF5's own error-stack printing while Osprey reports errors itself; restores the caller's handler.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t), const std::string& what) : id_(id), close_(close) {
    if (id_ < 0) throw InternalError("HDF5: " + what + " failed");
  }
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  operator hid_t() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

void check(herr_t rc, const std::string& what) {
  if (rc < 0) throw InternalError("HDF5: " + what + " failed");
}

Handle create_group(hid_t parent, const std::string& name) {
  return Handle(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                "creating group '" + name + "'");
}

/// A variable-length UTF-8 string attribute, as h5py writes a Python str.
void write_name_attr(hid_t group, const std::string& value) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose, "string type");
  check(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset");
  Handle space(H5Screate(H5S_SCALAR), H5Sclose, "scalar dataspace");
  Handle attr(H5Acreate2(group, "name", type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, "creating attribute");
  const char* s = value.c_str();
  check(H5Awrite(attr, type, &s), "writing attribute 'name'");
}

/// Writes a host tensor (float32 or int64) as dataset `name`; rank 0 becomes a scalar dataset.
void write_dataset(hid_t group, const std::string& name, const Tensor& t) {
  std::vector<hsize_t> dims(t.shape().dims().begin(), t.shape().dims().end());
  Handle space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
               H5Sclose, "dataspace");
  const bool i64 = t.dtype() == int64;
  if (!i64 && t.dtype() != float32) {
    throw InvalidArgumentError(fmt::format("save_weights: .weights.h5 holds float32 and int64 values; got {}",
                                         dtype_name(t.dtype())));
  }
  Handle ds(H5Dcreate2(group, name.c_str(), i64 ? H5T_STD_I64LE : H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                       H5P_DEFAULT),
            H5Dclose, "creating dataset '" + name + "'");
  check(H5Dwrite(ds, i64 ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()),
        "writing dataset '" + name + "'");
}

// A link HDF5 would follow out of this file (a soft or external link: to /etc/passwd, another file, a FIFO) is
// refused: every group and dataset Osprey reads is reached by hard links only.
void check_hard_link(hid_t loc, const std::string& name, const std::string& where) {
  H5L_info_t info;
  if (H5Lget_info(loc, name.c_str(), &info, H5P_DEFAULT) < 0 || info.type != H5L_TYPE_HARD) {
    throw ValueError(fmt::format("load_weights: '{}' is a soft or external link; Osprey reads only objects stored "
                                 "in the file itself (a damaged or crafted file)",
                                 where));
  }
}

bool exists(hid_t loc, const std::string& path) {
  // H5Lexists needs every intermediate link to exist: check each prefix "a", "a/b", ... in turn.
  for (std::size_t end = path.find('/');; end = path.find('/', end + 1)) {
    const std::string prefix = path.substr(0, end);
    if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    check_hard_link(loc, prefix, "/" + prefix);
    if (end == std::string::npos) return true;
  }
}

hsize_t num_links(hid_t group) {
  H5G_info_t info;
  check(H5Gget_info(group, &info), "H5Gget_info");
  return info.nlinks;
}

/// Reads dataset `name` of `group`, which must hold `expected` numbers, into a host tensor of `dtype` (HDF5
/// converts the stored type). Everything is checked before anything is allocated: the link is hard, the layout is
/// stored in this file (contiguous, chunked or compact; no external storage, no virtual dataset), the shape is the
/// expected one, and a contiguous or compact dataset's storage holds exactly its elements.
Tensor read_dataset(hid_t group, const std::string& name, DType dtype, const std::string& where, const Shape& expected,
                    const std::string& variable, bool dry = false) {
  const std::string at = where + "/" + name;
  check_hard_link(group, name, "/" + at);
  Handle ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose, "opening dataset '" + at + "'");
  Handle dcpl(H5Dget_create_plist(ds), H5Pclose, "H5Dget_create_plist");
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if ((layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT) || H5Pget_external_count(dcpl) != 0) {
    throw ValueError(fmt::format("load_weights: dataset '/{}' is not stored in the file itself (external storage or a "
                                 "virtual layout); refused",
                                 at));
  }
  Handle space(H5Dget_space(ds), H5Sclose, "H5Dget_space");
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0 || rank > 8) throw ValueError(fmt::format("load_weights: dataset '/{}' has rank {}", at, rank));
  std::vector<hsize_t> hdims(static_cast<std::size_t>(rank));
  if (rank > 0) check(H5Sget_simple_extent_dims(space, hdims.data(), nullptr), "H5Sget_simple_extent_dims");
  bool same = rank == expected.rank();
  for (int i = 0; same && i < rank; ++i) same = hdims[static_cast<std::size_t>(i)] == static_cast<hsize_t>(expected[i]);
  if (!same) {
    std::vector<std::string> shown;
    for (hsize_t d : hdims) shown.push_back(std::to_string(d));
    throw ValueError(fmt::format("load_weights: the shape of {} is {}, but the file holds ({}) for it (/{})", variable,
                                 expected.to_string(), fmt::join(shown, ", "), at));
  }
  Handle type(H5Dget_type(ds), H5Tclose, "H5Dget_type");
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t type_size = H5Tget_size(type);
  if ((cls != H5T_FLOAT && cls != H5T_INTEGER) || type_size == 0 || type_size > 8) {
    throw ValueError(fmt::format("load_weights: dataset '/{}' does not hold numbers", at));
  }
  if (layout != H5D_CHUNKED) {
    const hsize_t stored = H5Dget_storage_size(ds);
    const hsize_t needed = static_cast<hsize_t>(expected.num_elements()) * type_size;
    if (stored != needed) {
      throw ValueError(fmt::format("load_weights: dataset '/{}' stores {} bytes for {} values of {} bytes (a damaged "
                                   "file)",
                                   at, stored, expected.num_elements(), type_size));
    }
  }
  if (dry) {  // the check process: the same reads into plain memory (no tensors, no device)
    std::vector<char> buffer(static_cast<std::size_t>(expected.num_elements()) * 8 + 8);
    check(H5Dread(ds, dtype == int64 ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                  buffer.data()),
          "reading dataset '/" + at + "'");
    return Tensor();
  }
  Tensor t = Tensor::empty(expected, dtype, &runtime::DeviceManager::get().host_device());
  check(H5Dread(ds, dtype == int64 ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_data()),
        "reading dataset '/" + at + "'");
  return t;
}

/// A copy of `t` on CPU:0 (Tensor::to always copies).
Tensor host_copy(const Tensor& t) { return t.to(runtime::DeviceManager::get().host_device()); }

/// Opens `path` ("a/b/c"), creating the groups that are missing.
Handle ensure_group(hid_t file, const std::string& path) {
  for (std::size_t end = path.find('/'); end != std::string::npos; end = path.find('/', end + 1)) {
    const std::string prefix = path.substr(0, end);
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) create_group(file, prefix);
  }
  return create_group(file, path);
}

// ---- the optimizer's variables in Keras's order ----

struct OptimizerEntry {
  enum Kind { iterations, learning_rate, slot, u_product, wrapper_iterations, wrapper_learning_rate, step_counter,
              dynamic_scale } kind;
  Variable* variable = nullptr;
  bool int64_valued() const { return kind == iterations || kind == wrapper_iterations || kind == step_counter; }
};

/// Keras's optimizer.variables: iterations, learning_rate (not with a schedule), then -- once built -- the slots
/// and per-step state; with loss scaling and not `inner_only`, LossScaleOptimizer's four variables before them.
std::vector<OptimizerEntry> optimizer_layout(optimizers::Optimizer& opt, bool inner_only = false) {
  std::vector<OptimizerEntry> out;
  if (opt.loss_scale() && !inner_only) {
    out = {{OptimizerEntry::wrapper_iterations}, {OptimizerEntry::wrapper_learning_rate},
           {OptimizerEntry::step_counter}, {OptimizerEntry::dynamic_scale}};
  }
  out.push_back({OptimizerEntry::iterations});
  if (!opt.has_schedule()) out.push_back({OptimizerEntry::learning_rate});
  if (!opt.built()) return out;
  const std::size_t n = opt.num_tracked();
  const std::string cls = opt.class_name();
  // Adam, AdamW, Adamax and Nadam create their two slots per variable together; the others create one list of
  // slots over all variables after another (RMSprop: velocities, momentums, average gradients).
  const bool paired = cls == "Adam" || cls == "AdamW" || cls == "Adamax" || cls == "Nadam";
  const std::size_t kinds = n ? opt.slots_of(0).size() : 0;
  std::size_t first_block = 0;
  if (paired) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto s = opt.slots_of(i);
      out.push_back({OptimizerEntry::slot, s[0]});
      out.push_back({OptimizerEntry::slot, s[1]});
    }
    first_block = 2;  // Adam's amsgrad velocity_hats follow as a block
  }
  for (std::size_t k = first_block; k < kinds; ++k) {
    if (!opt.slots_of(0)[k]) continue;
    for (std::size_t i = 0; i < n; ++i) out.push_back({OptimizerEntry::slot, opt.slots_of(i)[k]});
  }
  if (cls == "Nadam") out.push_back({OptimizerEntry::u_product});
  return out;
}

}  // namespace

namespace {

std::atomic<unsigned> g_images{0};

/// File-access properties of an in-memory file (HDF5's core driver, never written to disk), holding `image` when
/// given (copied by HDF5).
Handle memory_fapl(const std::string* image) {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
  check(H5Pset_fapl_core(fapl, 1 << 20, 0), "H5Pset_fapl_core");
  // Closing the file closes whatever a failed read left open in it (a damaged file must not leak library state).
  check(H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG), "H5Pset_fclose_degree");
  if (image) check(H5Pset_file_image(fapl, const_cast<char*>(image->data()), image->size()), "H5Pset_file_image");
  return fapl;
}

/// A name no other open in-memory file has (HDF5 identifies open files by name).
std::string image_name() { return fmt::format("osprey-memory-{}.h5", g_images.fetch_add(1)); }

/// HDF5's signature at offset 0, 512, 1024, ... (a user block may precede the superblock).
bool has_hdf5_signature(const std::string& image) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  for (std::size_t at = 0; at + 8 <= image.size(); at = at == 0 ? 512 : at * 2) {
    if (std::memcmp(image.data() + at, kSignature, 8) == 0) return true;
  }
  return false;
}

// ---- libhdf5 on untrusted input: a first read in a child process ----
//
// libhdf5 1.10 crashes on some corrupt files (a NULL memcpy source for a compact layout of size 0, over-reads in its
// metadata cache, a negative-size memcpy that corrupts the heap): a few changed bytes must not kill a training
// process. So every image is first walked in a short-lived child (fork): each link, each dataset's layout, type and
// space, and the data of every dataset no larger than the model's largest variable (what the real load reads).
// A child killed by a signal means the library would have crashed here: the load is refused with a ValueError.
// OSPREY_HDF5_IN_PROCESS=1 skips the child (trusted files, or where fork is unwanted).

struct ProbeState {
  hsize_t max_bytes;
};

herr_t probe_link(hid_t group, const char* name, const H5L_info_t* info, void* data) {
  if (info->type != H5L_TYPE_HARD) return 0;  // never followed; the real load refuses them
  const auto* state = static_cast<const ProbeState*>(data);
  if (H5Oexists_by_name(group, name, H5P_DEFAULT) <= 0) return 0;
  hid_t ds = H5Dopen2(group, name, H5P_DEFAULT);
  if (ds < 0) return 0;  // a group (visited by H5Lvisit itself) or another object
  hid_t dcpl = H5Dget_create_plist(ds), space = H5Dget_space(ds), type = H5Dget_type(ds);
  if (dcpl >= 0 && space >= 0 && type >= 0) {
    const H5D_layout_t layout = H5Pget_layout(dcpl);
    const hssize_t points = H5Sget_simple_extent_npoints(space);
    const std::size_t size = H5Tget_size(type);
    const H5T_class_t cls = H5Tget_class(type);
    const bool plain = (layout == H5D_CONTIGUOUS || layout == H5D_CHUNKED || layout == H5D_COMPACT) &&
                       H5Pget_external_count(dcpl) == 0 && (cls == H5T_FLOAT || cls == H5T_INTEGER);
    if (layout != H5D_CHUNKED) (void)H5Dget_storage_size(ds);
    if (plain && points >= 0 && size > 0 && size <= 8 &&
        static_cast<hsize_t>(points) * 8 <= state->max_bytes) {
      std::vector<char> buffer(static_cast<std::size_t>(points) * 8 + 8);
      (void)H5Dread(ds, cls == H5T_FLOAT ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                    buffer.data());
    }
  }
  if (type >= 0) H5Tclose(type);
  if (space >= 0) H5Sclose(space);
  if (dcpl >= 0) H5Pclose(dcpl);
  H5Dclose(ds);
  return 0;
}

/// Walks `image` in a child process; ValueError when the child dies by a signal (or runs past its time).
void probe_in_child(const std::string& image, hsize_t max_bytes, const std::string& path,
                    const std::function<void(hid_t)>& dry_load) {
  const char* skip = std::getenv("OSPREY_HDF5_IN_PROCESS");
  if (skip && std::string(skip) == "1") return;
  const unsigned seconds = 30 + static_cast<unsigned>(image.size() >> 26);  // + 1 s per 64 MiB
  const pid_t pid = ::fork();
  if (pid < 0) {
    log::warning(fmt::format("load_weights: fork() failed ({}); reading '{}' without the check process",
                             std::strerror(errno), path));
    return;
  }
  if (pid == 0) {  // the child: only async-signal-tolerant work, then _exit (no atexit handlers, no stdio flush)
    // A crash is reported by the signal that ends the child (a sanitizer's handler would report and exit instead).
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);
    ::alarm(seconds);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0 || H5Pset_fapl_core(fapl, 1 << 20, 0) < 0 ||
        H5Pset_file_image(fapl, const_cast<char*>(image.data()), image.size()) < 0) {
      ::_exit(0);  // nothing was parsed; the parent reports its own errors
    }
    const hid_t file = H5Fopen("osprey-probe.h5", H5F_ACC_RDONLY, fapl);
    if (file >= 0) {
      // First the very reads the load makes (its lookups by name take other paths through the library than a
      // walk), then every other object of the file.
      try {
        dry_load(file);
      } catch (...) {  // an error the real load reports itself
      }
      ProbeState state{max_bytes};
      (void)H5Lvisit(file, H5_INDEX_NAME, H5_ITER_NATIVE, probe_link, &state);
    }
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {  // a sanitizer's report in the child
    throw ValueError(fmt::format("load_weights: reading '{}' failed in the check process (exit status {}) -- a damaged "
                                 "or crafted file; refused",
                                 path, WEXITSTATUS(status)));
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGALRM) {
      throw ValueError(fmt::format("load_weights: reading '{}' did not finish within {} s in the check process (a "
                                   "crafted file that makes the HDF5 library loop?); refused. Set "
                                   "OSPREY_HDF5_IN_PROCESS=1 to read a trusted file without the check.",
                                   path, seconds));
    }
    throw ValueError(fmt::format("load_weights: '{}' crashes the HDF5 library (signal {}: {}) -- a damaged or crafted "
                                 "file; refused (it was read in a check process, so this one is unharmed)",
                                 path, sig, strsignal(sig)));
  }
}

}  // namespace

static std::string save_impl(const Model& model) {
  QuietErrors quiet;
  Handle fapl = memory_fapl(nullptr);
  const std::string name = image_name();
  {
    hid_t fid = H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fid < 0) throw InternalError("save_weights: HDF5 could not create an in-memory file");
    Handle file(fid, H5Fclose, "H5Fcreate");
    {
      for (const auto& e : layer_groups(model)) {
        Handle vg = ensure_group(file, e.path);
        write_name_attr(vg, e.name);
        for (std::size_t j = 0; j < e.vars.size(); ++j) {
          write_dataset(vg, e.keys[j], host_copy(e.vars[j]->component(0)));
        }
      }
    }
    auto opt = model.compiled() ? model.optimizer() : nullptr;
    if (opt) {
      Handle og = create_group(file, "optimizer");
      const auto* ls = opt->loss_scale();
      auto write_vars = [&](hid_t parent, const std::string& name, bool inner_only) {
        Handle vg = create_group(parent, "vars");
        write_name_attr(vg, name);
        const auto layout = optimizer_layout(*opt, inner_only);
        for (std::size_t j = 0; j < layout.size(); ++j) {
          const auto& e = layout[j];
          Tensor t;
          switch (e.kind) {
            case OptimizerEntry::iterations: t = Tensor::scalar(static_cast<double>(opt->iterations()), int64); break;
            case OptimizerEntry::learning_rate: t = Tensor::scalar(opt->learning_rate(), float32); break;
            case OptimizerEntry::u_product:
              t = Tensor::scalar(dynamic_cast<optimizers::Nadam&>(*opt).u_product(), float32);
              break;
            case OptimizerEntry::slot: t = e.variable->component(0); break;
            case OptimizerEntry::wrapper_iterations: t = Tensor::scalar(0.0, int64); break;
            case OptimizerEntry::wrapper_learning_rate: t = Tensor::scalar(0.0, float32); break;
            case OptimizerEntry::step_counter: t = Tensor::scalar(static_cast<double>(ls->step_counter), int64); break;
            case OptimizerEntry::dynamic_scale: t = Tensor::scalar(ls->dynamic_scale, float32); break;
          }
          write_dataset(vg, std::to_string(j), host_copy(t));
        }
      };
      write_vars(og, ls ? ls->options.name : opt->name(), false);
      if (ls) {  // Keras also saves the inner optimizer as a child of its wrapper
        Handle ig = create_group(og, "inner_optimizer");
        write_vars(ig, opt->name(), true);
      }
    }
    {
      Handle vg = create_group(file, "vars");
      write_name_attr(vg, model.name());
    }
    check(H5Fflush(file, H5F_SCOPE_GLOBAL), "flushing the in-memory file");
    const ssize_t size = H5Fget_file_image(file, nullptr, 0);
    if (size < 0) throw InternalError("save_weights: HDF5 could not give the in-memory file's image");
    std::string image(static_cast<std::size_t>(size), '\0');
    if (H5Fget_file_image(file, image.data(), image.size()) != size) {
      throw InternalError("save_weights: HDF5 could not copy the in-memory file's image");
    }
    return image;
  }
}

static void read_all(Model& model, hid_t file, const std::string& path, bool dry);

static void load_impl(Model& model, const std::string& image, const std::string& path) {
  QuietErrors quiet;
  if (!has_hdf5_signature(image)) {
    throw ValueError(fmt::format("load_weights: '{}' is not an HDF5 file (a Keras .weights.h5 file is one)", path));
  }
  {
    hsize_t max_bytes = 64;  // scalars: iterations, learning rate
    for (const auto& e : layer_groups(model)) {  // the layers' variables and those saved under keys of their own
      for (auto* v : e.vars) max_bytes = std::max<hsize_t>(max_bytes, static_cast<hsize_t>(v->num_elements()) * 8);
    }
    probe_in_child(image, max_bytes, path, [&](hid_t file) { read_all(model, file, path, /*dry=*/true); });
  }
  Handle fapl = memory_fapl(&image);
  const hid_t fid = H5Fopen(image_name().c_str(), H5F_ACC_RDONLY, fapl);
  if (fid < 0) {
    throw ValueError(fmt::format("load_weights: the HDF5 library cannot open '{}' (a damaged or truncated file)", path));
  }
  Handle file(fid, H5Fclose, "opening '" + path + "'");
  read_all(model, file, path, /*dry=*/false);
}

// Reads and checks the whole file, then assigns (a failed load leaves the model unchanged). `dry` (the check
// process): the same reads, into plain memory, and nothing built or assigned.
static void read_all(Model& model, hid_t file, const std::string& path, bool dry) {
  // Read and check everything first, then assign: a failed load leaves the model unchanged.
  std::vector<std::pair<Variable*, Tensor>> assignments;
  for (const auto& e : layer_groups(model)) {
    const auto& vars = e.vars;
    const std::string& where = e.path;
    if (!exists(file, where)) {
      if (vars.empty()) continue;  // Keras skips stateless layers missing from a file
      throw ValueError(fmt::format("load_weights: '{}' has no weights for layer '{}' (expected the group /{}). The "
                                   "model and the file must have the same layers, in the same order.",
                                   path, e.name, where));
    }
    Handle group(H5Gopen2(file, where.c_str(), H5P_DEFAULT), H5Gclose, "opening /" + where);
    const hsize_t stored = num_links(group);
    if (stored != vars.size()) {
      std::string expected;
      for (auto* v : vars) expected += (expected.empty() ? "'" : ", '") + v->name() + "'";
      throw ValueError(fmt::format("Layer '{}' expected {} variables, but received {} variables during loading. "
                                   "Expected: [{}]",
                                   e.name, vars.size(), stored, expected));
    }
    for (std::size_t j = 0; j < vars.size(); ++j) {
      const DType dtype = vars[j]->value().dtype() == int64 ? int64 : float32;  // Normalization's count is int64
      assignments.emplace_back(vars[j], read_dataset(group, e.keys[j], dtype, where, vars[j]->shape(),
                                                     "variable '" + vars[j]->path() + "'", dry));
    }
  }

  // The optimizer: loaded when the model is compiled and the file has one, so training resumes where it stopped.
  auto opt = model.compiled() ? model.optimizer() : nullptr;
  std::vector<std::pair<OptimizerEntry, Tensor>> opt_values;
  if (opt && exists(file, "optimizer/vars")) {
    Handle group(H5Gopen2(file, "optimizer/vars", H5P_DEFAULT), H5Gclose, "opening /optimizer/vars");
    const hsize_t stored = num_links(group);
    // A file with slots restores a fresh optimizer too: build it first (Keras needs optimizer.build() for that),
    // and undo that build if the optimizer's part is then skipped or fails, so the model is left as it was.
    const bool built_here = !opt->built() && stored > optimizer_layout(*opt).size();
    if (dry && built_here) {  // the slots' shapes are the trainable variables': each dataset is probed as it is
      ProbeState state{64};
      for (auto* v : model.trainable_variables()) {
        state.max_bytes = std::max<hsize_t>(state.max_bytes, static_cast<hsize_t>(v->num_elements()) * 8);
      }
      for (hsize_t j = 0; j < stored; ++j) {
        const std::string name = std::to_string(j);
        if (H5Lexists(group, name.c_str(), H5P_DEFAULT) <= 0) continue;
        H5L_info_t info;
        if (H5Lget_info(group, name.c_str(), &info, H5P_DEFAULT) < 0) continue;
        probe_link(group, name.c_str(), &info, &state);
      }
      return;
    }
    if (built_here) opt->build_slots(model.trainable_variables());
    try {
      const auto layout = optimizer_layout(*opt);
      if (stored != layout.size()) {
        if (!dry) {
          log::warning(fmt::format("Skipping variable loading for optimizer '{}', because it has {} variables "
                                   "whereas the saved optimizer has {} variables.",
                                   opt->name(), layout.size(), stored));
        }
        if (built_here) opt->unbuild_slots();
      } else {
        for (std::size_t j = 0; j < layout.size(); ++j) {
          const OptimizerEntry& e = layout[j];
          const Shape want = e.kind == OptimizerEntry::slot ? e.variable->shape() : Shape({});
          opt_values.emplace_back(e, read_dataset(group, std::to_string(j), e.int64_valued() ? int64 : float32,
                                                  "optimizer/vars", want, fmt::format("optimizer variable {}", j),
                                                  dry));
          if ((e.kind == OptimizerEntry::dynamic_scale || e.kind == OptimizerEntry::step_counter) && !dry) {
            const auto& t = opt_values.back().second;
            const double v = e.kind == OptimizerEntry::dynamic_scale ? static_cast<const float*>(t.raw_data())[0]
                                                                     : static_cast<double>(
                                                                           static_cast<const int64_t*>(t.raw_data())[0]);
            const bool bad = e.kind == OptimizerEntry::dynamic_scale ? !(v > 0.0) || !std::isfinite(v) : v < 0.0;
            if (bad) {
              throw ValueError(fmt::format("load_weights: '{}' gives the loss scale's {} the value {} (a damaged file: "
                                           "the scale must be positive and finite, the step counter at least 0)",
                                           path, e.kind == OptimizerEntry::dynamic_scale ? "dynamic_scale" : "step_counter",
                                           v));
            }
          }
          if (e.kind == OptimizerEntry::iterations && !dry) {
            const int64_t it = static_cast<const int64_t*>(opt_values.back().second.raw_data())[0];
            if (it < 0 || it > (int64_t{1} << 62)) {
              throw ValueError(fmt::format("load_weights: '{}' gives the optimizer {} iterations (outside [0, 2^62]: a "
                                           "damaged file)",
                                           path, it));
            }
          }
        }
      }
    } catch (...) {
      opt_values.clear();  // they point into the slots about to be freed
      if (built_here) opt->unbuild_slots();
      throw;
    }
  }

  if (dry) return;
  for (auto& [v, t] : assignments) v->assign(t);
  double scale = 0.0;
  int64_t counter = -1;
  for (auto& [e, t] : opt_values) {
    if (e.kind == OptimizerEntry::dynamic_scale) scale = static_cast<const float*>(t.raw_data())[0];
    if (e.kind == OptimizerEntry::step_counter) counter = static_cast<const int64_t*>(t.raw_data())[0];
  }
  if (counter != -1) opt->set_loss_scale_state(scale, counter);  // checked when read
  for (auto& [e, t] : opt_values) {
    switch (e.kind) {
      case OptimizerEntry::iterations: opt->set_iterations(static_cast<const int64_t*>(t.raw_data())[0]); break;
      case OptimizerEntry::learning_rate: opt->set_learning_rate(static_cast<const float*>(t.raw_data())[0]); break;
      case OptimizerEntry::u_product:
        dynamic_cast<optimizers::Nadam&>(*opt).set_u_product(static_cast<const float*>(t.raw_data())[0]);
        break;
      case OptimizerEntry::slot: e.variable->assign(t); break;
      default: break;  // the wrapper's own iterations and learning rate (unused), the loss scale (above)
    }
  }
}

}  // namespace osprey::keras::detail

extern "C" const osprey::keras::detail::Hdf5Api* osprey_hdf5_api() {
  static const osprey::keras::detail::Hdf5Api api{osprey::keras::detail::kHdf5ApiVersion,
                                                  &osprey::keras::detail::save_impl,
                                                  &osprey::keras::detail::load_impl};
  return &api;
}
