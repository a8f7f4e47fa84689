// Keras's built-in callbacks beyond History and the progress bar (spec/keras_api.md §6).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include <fmt/args.h>
#include <fmt/format.h>

#include "core/logging.h"
#include "distribute/worker_group.h"
#include "osprey/errors.h"
#include "osprey/keras/callbacks.h"
#include "osprey/keras/model.h"

namespace osprey::keras {

// Keras's "auto": losses and errors go down, everything else that Osprey knows (accuracy, auc, precision, recall)
// goes up.
static bool minimize_for(const std::string& monitor, MonitorMode mode, const char* who) {
  if (mode == MonitorMode::min) return true;
  if (mode == MonitorMode::max) return false;
  for (const char* down : {"loss", "error", "mae", "mse", "mape", "msle"}) {
    if (monitor.find(down) != std::string::npos) return true;
  }
  for (const char* up : {"acc", "auc", "precision", "recall"}) {
    if (monitor.find(up) != std::string::npos) return false;
  }
  throw ValueError(fmt::format("{} callback received monitor={} but Keras isn't able to automatically determine "
                               "whether that metric should be maximized or minimized. Pass `mode='max'` in order to "
                               "monitor based on the highest metric value, or pass `mode='min'` in order to use the "
                               "lowest value.",
                               who, monitor));
}

// Every key of the logs, sorted (both maps).
static std::vector<std::string> log_keys(const Logs& logs) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : logs) keys.push_back(k);
  for (const auto& [k, v] : logs.arrays) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  return keys;
}

static std::string available(const Logs& logs) {
  std::string out;
  for (const auto& k : log_keys(logs)) out += (out.empty() ? "" : ",") + k;
  return out;
}

// A monitored value is one number: a metric with one value per class or threshold cannot be compared (Keras fails
// on the array's truth value).
static void require_single_value(const Logs& logs, const std::string& monitor, const char* callback) {
  auto it = logs.arrays.find(monitor);
  if (it == logs.arrays.end()) return;
  throw ValueError(fmt::format("{} monitors '{}', which has one value per class or threshold ({} values), not one "
                               "number: monitor another value, or give the metric an average (F1Score/FBetaScore: "
                               "average \"macro\", \"micro\" or \"weighted\"; R2Score: class_aggregation "
                               "\"uniform_average\") or one threshold",
                               callback, monitor, it->second.size()));
}

// Python's repr of a float (shortest round trip), as Keras prints learning rates and CSV values; of a float32, as
// NumPy prints one.
template <typename F>
static std::string py_repr(F v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// Keras's CSV cell for an array: '"[v, ...]"' with each value as NumPy prints a float32, quoted by the csv writer
// (the quotes doubled).
static std::string csv_array(const std::vector<double>& values) {
  std::string s = "\"\"\"[";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + py_repr(static_cast<float>(values[i]));
  return s + "]\"\"\"";
}

// ---- EarlyStopping ----

EarlyStopping::EarlyStopping(EarlyStoppingOptions o) : o_(std::move(o)) {
  minimize_ = minimize_for(o_.monitor, o_.mode, "EarlyStopping");
  o_.min_delta = std::abs(o_.min_delta);
}

void EarlyStopping::on_train_begin(Logs&) {
  wait_ = 0;
  stopped_epoch = 0;
  best.reset();
  best_weights_.clear();
  best_epoch = 0;
}

bool EarlyStopping::improved(double current, double reference) const {
  return minimize_ ? current + o_.min_delta < reference : current - o_.min_delta > reference;
}

void EarlyStopping::on_epoch_end(int epoch, Logs& logs) {
  require_single_value(logs, o_.monitor, "EarlyStopping");
  auto it = logs.find(o_.monitor);
  if (it == logs.end() || epoch < o_.start_from_epoch) {
    if (it == logs.end()) {
      log::warning(fmt::format("Early stopping conditioned on metric `{}` which is not available. Available metrics "
                               "are: {}",
                               o_.monitor, available(logs)));
    }
    return;
  }
  const double current = it->second;
  if (o_.restore_best_weights && best_weights_.empty()) best_weights_ = model()->get_weights();
  ++wait_;
  if (!best || improved(current, *best)) {
    best = current;
    best_epoch = epoch;
    if (o_.restore_best_weights) best_weights_ = model()->get_weights();
    if (!o_.baseline || improved(current, *o_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= o_.patience && epoch > 0) {
    stopped_epoch = epoch;
    model()->stop_training = true;
  }
}

void EarlyStopping::on_train_end(Logs&) {
  if (stopped_epoch > 0 && o_.verbose > 0) std::cout << fmt::format("Epoch {}: early stopping\n", stopped_epoch + 1);
  if (o_.restore_best_weights && !best_weights_.empty()) {
    if (o_.verbose > 0) {
      std::cout << fmt::format("Restoring model weights from the end of the best epoch: {}.\n", best_epoch + 1);
    }
    model()->set_weights(best_weights_);
  }
}

// ---- ReduceLROnPlateau ----

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions o) : o_(std::move(o)) {
  if (o_.factor >= 1.0) {
    throw ValueError(fmt::format("ReduceLROnPlateau does not support a factor >= 1.0. Received factor={}", o_.factor));
  }
  // Keras: "min" unless the mode is "max", or "auto" with "acc" in the monitor's name.
  minimize_ = o_.mode == MonitorMode::min ||
              (o_.mode == MonitorMode::auto_ && o_.monitor.find("acc") == std::string::npos);
}

void ReduceLROnPlateau::on_train_begin(Logs&) {
  best_ = minimize_ ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  wait_ = 0;
  cooldown_counter_ = 0;
}

void ReduceLROnPlateau::on_epoch_end(int epoch, Logs& logs) {
  auto& opt = *model()->optimizer();
  logs["learning_rate"] = static_cast<double>(opt.learning_rate());
  require_single_value(logs, o_.monitor, "ReduceLROnPlateau");
  auto it = logs.find(o_.monitor);
  if (it == logs.end()) {
    log::warning(fmt::format("Learning rate reduction is conditioned on metric `{}` which is not available. Available "
                             "metrics are: {}.",
                             o_.monitor, available(logs)));
    return;
  }
  const double current = it->second;
  const bool better = minimize_ ? current < best_ - o_.min_delta : current > best_ + o_.min_delta;
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (better) {
    best_ = current;
    wait_ = 0;
  } else if (cooldown_counter_ <= 0) {
    ++wait_;
    if (wait_ >= o_.patience) {
      const double old_lr = static_cast<double>(opt.learning_rate());
      if (old_lr > o_.min_lr) {
        opt.set_learning_rate(std::max(old_lr * o_.factor, o_.min_lr));
        if (o_.verbose > 0) {
          std::cout << fmt::format("\nEpoch {}: ReduceLROnPlateau reducing learning rate to {}.\n", epoch + 1,
                                   py_repr(static_cast<double>(opt.learning_rate())));
        }
        cooldown_counter_ = o_.cooldown;
        wait_ = 0;
      }
    }
  }
}

// ---- LearningRateScheduler ----

LearningRateScheduler::LearningRateScheduler(std::function<double(int, double)> schedule, int verbose)
    : schedule_(std::move(schedule)), verbose_(verbose) {}

void LearningRateScheduler::on_epoch_begin(int epoch, Logs&) {
  auto& opt = *model()->optimizer();
  const double lr = schedule_(epoch, static_cast<double>(opt.learning_rate()));
  if (!std::isfinite(lr)) {
    throw ValueError(fmt::format("The output of the `schedule` function should be a float. Got: {}", lr));
  }
  opt.set_learning_rate(lr);
  if (verbose_ > 0) {
    std::cout << fmt::format("\nEpoch {}: LearningRateScheduler setting learning rate to {}.\n", epoch + 1,
                             py_repr(lr));
  }
}

void LearningRateScheduler::on_epoch_end(int, Logs& logs) {
  logs["learning_rate"] = static_cast<double>(model()->optimizer()->learning_rate());
}

// ---- CSVLogger ----

CSVLogger::CSVLogger(std::string filename, std::string separator, bool append)
    : filename_(std::move(filename)), separator_(std::move(separator)), append_(append) {}

void CSVLogger::on_train_begin(Logs&) {
  const bool exists = std::filesystem::exists(filename_);
  auto file = std::make_shared<std::ofstream>(filename_, append_ ? std::ios::app : std::ios::trunc);
  if (!*file) throw NotFoundError(fmt::format("CSVLogger: cannot open '{}' for writing", filename_));
  out_ = file;
  keys_.clear();
  if (append_ && exists) keys_ = {"<appending>"};  // Keras does not repeat the header when appending
}

void CSVLogger::on_epoch_end(int epoch, Logs& logs) {
  const bool write_header = keys_.empty();
  if (keys_.empty() || keys_.front() == "<appending>") {
    keys_.clear();
    keys_ = log_keys(logs);
    const bool has_val = std::any_of(keys_.begin(), keys_.end(), [](auto& k) { return k.rfind("val_", 0) == 0; });
    if (!has_val) {
      const auto plain = keys_;
      for (const auto& k : plain) keys_.push_back("val_" + k);
    }
  }
  if (write_header) {
    *out_ << "epoch";
    for (const auto& k : keys_) *out_ << separator_ << k;
    *out_ << "\n";
  }
  *out_ << epoch;
  for (const auto& k : keys_) {
    auto it = logs.find(k);
    auto array = logs.arrays.find(k);
    *out_ << separator_
          << (it != logs.end()              ? py_repr(it->second)
              : array != logs.arrays.end() ? csv_array(array->second)
                                           : std::string("NA"));
  }
  *out_ << "\n" << std::flush;
}

void CSVLogger::on_train_end(Logs&) { out_.reset(); }

// ---- TerminateOnNaN ----

void TerminateOnNaN::on_train_batch_end(int batch, Logs& logs) {
  auto it = logs.find("loss");
  if (it != logs.end() && !std::isfinite(it->second)) {
    std::cout << fmt::format("Batch {}: Invalid loss, terminating training\n", batch);
    model()->stop_training = true;
  }
}

// ---- ModelCheckpoint ----

ModelCheckpoint::ModelCheckpoint(std::string filepath, ModelCheckpointOptions o)
    : filepath_(std::move(filepath)), o_(std::move(o)) {
  whole_model_ = filepath_.ends_with(".keras");
  if (!whole_model_ && !filepath_.ends_with(".weights.h5") && !filepath_.ends_with(".weights.osp")) {
    throw ValueError(fmt::format("The filepath provided must end in `.keras` (Keras model format), `.weights.h5` "
                                 "(Keras weights format) or `.weights.osp` (Osprey's own). Received: filepath={}",
                                 filepath_));
  }
  if (o_.save_freq < 0) throw ValueError(fmt::format("Unrecognized save_freq: {}", o_.save_freq));
  minimize_ = o_.save_best_only ? minimize_for(o_.monitor, o_.mode, "ModelCheckpoint") : true;
  best = o_.initial_value_threshold;
}

void ModelCheckpoint::on_epoch_begin(int epoch, Logs&) { epoch_ = epoch; }

void ModelCheckpoint::on_train_batch_end(int, Logs& logs) {
  if (o_.save_freq > 0 && ++batches_ % o_.save_freq == 0) save(epoch_, logs);
}

void ModelCheckpoint::on_epoch_end(int epoch, Logs& logs) {
  if (o_.save_freq == 0) save(epoch, logs);
}

void ModelCheckpoint::save(int epoch, const Logs& logs) {
  fmt::dynamic_format_arg_store<fmt::format_context> args;
  args.push_back(fmt::arg("epoch", epoch + 1));
  for (const auto& [k, v] : logs) args.push_back(fmt::arg(k.c_str(), v));
  std::string path;
  try {
    path = fmt::vformat(filepath_, args);
  } catch (const fmt::format_error& e) {
    throw ValueError(fmt::format("Failed to format this callback filepath: \"{}\". Reason: {}", filepath_, e.what()));
  }
  // Under a MultiWorkerMirroredStrategy only the chief writes (Keras's other workers write to temporary places
  // and delete them); every worker keeps `best` the same way.
  const auto* group = distribute::WorkerGroup::existing();
  const bool writes = !group || group->is_chief();
  const int verbose = writes ? o_.verbose : 0;
  if (auto dir = std::filesystem::path(path).parent_path(); writes && !dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);  // not std::filesystem_error: Osprey's error with the path
    if (ec) {
      throw PermissionDeniedError(fmt::format("ModelCheckpoint: cannot create the folder '{}' for '{}': {}",
                                              dir.string(), path, ec.message()));
    }
  }
  if (!o_.save_best_only) {
    if (writes) whole_model_ ? model()->save(path) : model()->save_weights(path);
    if (verbose > 0) std::cout << fmt::format("\nEpoch {}: finished saving model to {}\n", epoch + 1, path);
    return;
  }
  require_single_value(logs, o_.monitor, "ModelCheckpoint");
  auto it = logs.find(o_.monitor);
  if (it == logs.end()) {
    log::warning(fmt::format("Can save best model only with {} available, skipping.", o_.monitor));
    return;
  }
  const double current = it->second;
  const bool better = !best || (minimize_ ? current < *best : current > *best);
  if (better) {
    if (verbose > 0) {
      std::cout << fmt::format("\nEpoch {}: {} improved from {} to {:.5f}, saving model to {}\n", epoch + 1, o_.monitor,
                               best ? py_repr(*best) : std::string("None"), current, path);
    }
    best = current;
    if (writes) whole_model_ ? model()->save(path) : model()->save_weights(path);
  } else if (verbose > 0) {
    std::cout << fmt::format("\nEpoch {}: {} did not improve from {:.5f}\n", epoch + 1, o_.monitor, *best);
  }
}

}  // namespace osprey::keras
