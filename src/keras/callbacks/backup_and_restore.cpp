// keras.callbacks.BackupAndRestore with an exact resume: the weights, the optimizer's state, fit's position, the
// global random generator and the data order (keras/trainers/trainer.cpp replays the pass's order and passes over
// its used batches). A backup is backup-<n>.osprey, then training_metadata.json naming it: the metadata's atomic
// replacement is the commit point, so a process killed at any moment leaves one complete backup.
//   backup-<n>.osprey: "OSPREYB1" | u32 variables | per variable: u8 dtype, u32 rank, i64 dims..., raw data |
//   u8 optimizer built | i64 iterations | f32 learning rate | u32 tracked | u32 slot kinds |
//   per tracked variable and kind: u8 present [, u8 dtype, u32 rank, i64 dims..., raw data]
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "distribute/worker_group.h"
#include "keras/models/model_state.h"
#include "osprey/errors.h"
#include "osprey/keras/callbacks.h"
#include "osprey/keras/model.h"
#include "osprey/keras/optimizers.h"
#include "osprey/random.h"
#include "runtime/device_manager.h"

namespace osprey::keras {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'O', 'S', 'P', 'R', 'E', 'Y', 'B', '1'};
constexpr const char* kMetadata = "training_metadata.json";

bool writes_backups() {
  const auto* group = distribute::WorkerGroup::existing();
  return !group || group->is_chief();
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_tensor(std::string& out, const Tensor& t0) {
  const Tensor t = t0.to(runtime::DeviceManager::get().host_device());
  put<uint8_t>(out, static_cast<uint8_t>(t.dtype()));
  put<uint32_t>(out, static_cast<uint32_t>(t.shape().rank()));
  for (int64_t d : t.shape().dims()) put<int64_t>(out, d);
  out.append(static_cast<const char*>(t.raw_data()), static_cast<std::size_t>(t.nbytes()));
}

// Reads a backup image with every size checked against what is left of it.
struct Reader {
  const std::string& data;
  const std::string& path;
  std::size_t at = 0;
  [[noreturn]] void corrupt(const std::string& what) const {
    throw ValueError(fmt::format("BackupAndRestore: '{}' is corrupt or not a backup of this model ({}); delete the "
                                 "backup folder to start afresh",
                                 path, what));
  }
  template <typename T>
  T get() {
    if (data.size() - at < sizeof(T)) corrupt("truncated");
    T v;
    std::memcpy(&v, data.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  // A tensor that must have `want`'s shape and dtype.
  Tensor tensor(const Tensor& want, const std::string& name) {
    const auto dtype = static_cast<DType>(get<uint8_t>());
    const auto rank = get<uint32_t>();
    if (rank > 8) corrupt(fmt::format("rank {} for {}", rank, name));
    std::vector<int64_t> dims;
    for (uint32_t i = 0; i < rank; ++i) dims.push_back(get<int64_t>());
    for (int64_t d : dims) {
      if (d < 0 || d > (int64_t{1} << 40)) corrupt(fmt::format("dimension {} for {}", d, name));
    }
    if (Shape(dims) != want.shape() || dtype != want.dtype()) {
      corrupt(fmt::format("{} is {} {} in the backup, {} {} in the model", name, Shape(dims).to_string(),
                          dtype_name(dtype), want.shape().to_string(), dtype_name(want.dtype())));
    }
    Tensor t = Tensor::empty(want.shape(), want.dtype(), &runtime::DeviceManager::get().host_device());
    const auto bytes = static_cast<std::size_t>(t.nbytes());
    if (data.size() - at < bytes) corrupt("truncated");
    std::memcpy(t.raw_data(), data.data() + at, bytes);
    at += bytes;
    return t;
  }
};

std::string read_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw ValueError(fmt::format("BackupAndRestore: '{}' is missing or not a regular file", path.string()));
  }
  std::ifstream in(path, std::ios::binary);
  std::string s{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw ValueError(fmt::format("BackupAndRestore: reading '{}' failed", path.string()));
  return s;
}

}  // namespace

BackupAndRestore::BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options)
    : dir_(std::move(backup_dir)), o_(options) {
  if (dir_.empty()) throw ValueError("Empty `backup_dir` argument passed");
  if (o_.save_freq < 0) {
    throw ValueError(fmt::format("Invalid value for argument `save_freq`. Received: save_freq={}. Expected either "
                                 "0 (\"epoch\") or a positive number of batches.",
                                 o_.save_freq));
  }
}

void BackupAndRestore::on_train_begin(Logs&) {
  Model& m = *model();
  if (m.variables().empty()) {
    throw ValueError(fmt::format("To use the BackupAndRestore callback, you model must be built before you call "
                                 "`fit()`. Model {} is unbuilt. You can build it beforehand by calling it on a batch "
                                 "of data.",
                                 m.name()));
  }
  since_last_ = 0;
  const fs::path meta_path = fs::path(dir_) / kMetadata;
  std::error_code ec;
  if (!fs::exists(meta_path, ec)) return;  // nothing to resume: a fresh run
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(read_file(meta_path), nullptr, true, false);
    const std::string file = meta.at("checkpoint").get<std::string>();
    if (file.find('/') != std::string::npos || !file.starts_with("backup-")) {
      throw ValueError(fmt::format("the checkpoint it names, '{}', is not a backup file of this folder", file));
    }
    generation_ = meta.at("generation").get<uint64_t>();
    const std::string backup_path = (fs::path(dir_) / file).string();
    const std::string image = read_file(backup_path);
    Reader r{image, backup_path};
    if (image.size() < sizeof kMagic || std::memcmp(image.data(), kMagic, sizeof kMagic) != 0) r.corrupt("no OSPREYB1 header");
    r.at = sizeof kMagic;
    const auto vars = m.variables();
    if (r.get<uint32_t>() != vars.size()) r.corrupt(fmt::format("the model has {} variables", vars.size()));
    std::vector<Tensor> weights;
    for (auto* v : vars) weights.push_back(r.tensor(v->component(0), v->path()));
    auto opt = m.optimizer();
    const bool opt_built = r.get<uint8_t>() != 0;
    const auto iterations = r.get<int64_t>();
    const auto lr = r.get<float>();
    const auto tracked = r.get<uint32_t>();
    const auto kinds = r.get<uint32_t>();
    std::vector<std::pair<Variable*, Tensor>> slots;
    if (opt_built) {
      if (!opt) r.corrupt("it has optimizer state and the model is not compiled");
      opt->build_slots(m.trainable_variables());
      if (tracked != opt->num_tracked()) r.corrupt(fmt::format("the optimizer tracks {} variables", opt->num_tracked()));
      for (uint32_t i = 0; i < tracked; ++i) {
        const auto mine = opt->slots_of(i);
        if (mine.size() != kinds) r.corrupt(fmt::format("the optimizer has {} slots per variable", mine.size()));
        for (uint32_t k = 0; k < kinds; ++k) {
          const bool present = r.get<uint8_t>() != 0;
          if (present != (mine[k] != nullptr)) r.corrupt("the optimizer's slots differ");
          if (present) slots.emplace_back(mine[k], r.tensor(mine[k]->component(0), mine[k]->path()));
        }
      }
    }
    if (r.at != image.size()) r.corrupt(fmt::format("{} bytes left over", image.size() - r.at));
    const nlohmann::json& pos = meta.at("osprey_position");
    double scale = 1.0;
    int64_t counter = 0;
    if (pos.contains("loss_scale")) {
      scale = pos["loss_scale"].at(0).get<double>();
      counter = pos["loss_scale"].at(1).get<int64_t>();
      if (!(scale > 0.0) || !std::isfinite(scale) || counter < 0) {
        throw ValueError(fmt::format("BackupAndRestore: '{}' gives the loss scale {} and step counter {}; delete the "
                                     "backup folder to start afresh",
                                     meta_path.string(), scale, counter));
      }
    }
    // Everything read and checked: now the model changes.
    m.set_weights(weights);
    for (auto& [v, t] : slots) v->assign(t);
    if (opt && opt->loss_scale() && pos.contains("loss_scale")) opt->set_loss_scale_state(scale, counter);
    if (opt_built) {
      opt->set_iterations(iterations);
      if (!opt->has_schedule()) opt->set_learning_rate(lr);
    }
    Model::State::FitPosition p;
    p.epoch = meta.at("epoch").get<int>();
    p.step = meta.at("batch").get<int64_t>();
    p.pass_seed = pos.at("pass_seed").get<uint64_t>();
    p.pass_stream = pos.at("pass_stream").get<uint64_t>();
    p.pass_used = pos.at("pass_used").get<int64_t>();
    p.seed = pos.at("seed").get<uint64_t>();
    p.stream = pos.at("stream").get<uint64_t>();
    if (p.epoch < 0 || p.step < 0 || p.pass_used < 0) throw ValueError("a negative epoch, batch or pass position");
    m.state().resume_from = p;
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(fmt::format("BackupAndRestore: '{}' is not a valid training metadata file ({}); delete the backup "
                                 "folder to start afresh",
                                 meta_path.string(), e.what()));
  }
}

void BackupAndRestore::save() {
  ++generation_;
  ++written_;
  if (!writes_backups()) return;  // the chief writes, every worker counts
  Model& m = *model();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    throw PermissionDeniedError(fmt::format("BackupAndRestore: cannot create the backup folder '{}': {}", dir_,
                                            ec.message()));
  }
  std::string image(kMagic, sizeof kMagic);
  const auto vars = m.variables();
  put<uint32_t>(image, static_cast<uint32_t>(vars.size()));
  for (auto* v : vars) put_tensor(image, v->component(0));
  auto opt = m.optimizer();
  const bool built = opt && opt->built();
  put<uint8_t>(image, built);
  put<int64_t>(image, built ? opt->iterations() : 0);
  put<float>(image, opt ? opt->learning_rate() : 0.f);
  const auto tracked = built ? opt->num_tracked() : 0;
  const auto kinds = tracked ? opt->slots_of(0).size() : 0;
  put<uint32_t>(image, static_cast<uint32_t>(tracked));
  put<uint32_t>(image, static_cast<uint32_t>(kinds));
  for (std::size_t i = 0; i < tracked; ++i) {
    for (auto* slot : opt->slots_of(i)) {
      put<uint8_t>(image, slot != nullptr);
      if (slot) put_tensor(image, slot->component(0));
    }
  }
  const std::string file = fmt::format("backup-{}.osprey", generation_);
  core::write_file_atomically((fs::path(dir_) / file).string(), image, "BackupAndRestore");
  auto p = m.state().fit_position;
  std::tie(p.seed, p.stream) = random::global_state();
  nlohmann::json meta = {{"epoch", p.epoch},
                     {"batch", p.step},
                     {"checkpoint", file},
                     {"generation", generation_},
                     {"osprey_position",
                      {{"pass_seed", p.pass_seed},
                       {"pass_stream", p.pass_stream},
                       {"pass_used", p.pass_used},
                       {"seed", p.seed},
                       {"stream", p.stream}}}};
  if (opt && opt->loss_scale()) {  // dynamic loss scaling's state: the scale and the finite steps counted
    meta["osprey_position"]["loss_scale"] = {opt->loss_scale()->dynamic_scale, opt->loss_scale()->step_counter};
  }
  core::write_file_atomically((fs::path(dir_) / kMetadata).string(), meta.dump(), "BackupAndRestore");
  // The metadata names the new backup: older ones go.
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("backup-") && name.ends_with(".osprey") && name != file) fs::remove(entry.path(), ec);
  }
}

void BackupAndRestore::on_train_batch_end(int, Logs&) {
  if (o_.save_freq <= 0) return;
  if (++since_last_ >= o_.save_freq) {
    since_last_ = 0;
    save();
  }
}

void BackupAndRestore::on_epoch_end(int, Logs&) {
  if (o_.save_freq == 0) save();
}

void BackupAndRestore::on_train_end(Logs&) {
  if (!o_.delete_checkpoint || !writes_backups()) return;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == kMetadata || (name.starts_with("backup-") && name.ends_with(".osprey"))) fs::remove(entry.path(), ec);
  }
  fs::remove(dir_, ec);  // only when empty: the folder may hold other files
}

}  // namespace osprey::keras
