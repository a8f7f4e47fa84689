// Keras callbacks: the hooks of fit/evaluate/predict, History and the progress bar.
#pragma once

#include <chrono>
#include <concepts>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "osprey/summary.h"
#include "osprey/tensor.h"

namespace osprey::keras {

class Model;

/// The values a hook sees: metric name → value, iterated in sorted key order as Keras displays them. A metric
/// whose result is one value per class or threshold (F1Score/FBetaScore without an average, R2Score without an
/// aggregation, Precision/Recall/the confusion counts at a list of thresholds), which Keras logs as an array, is
/// in `arrays` under its name instead ("f1_score", "val_f1_score"); a name is in one of the two maps, never both.
class Logs : public std::map<std::string, double> {
 public:
  using std::map<std::string, double>::map;
  std::map<std::string, std::vector<double>> arrays;
  /// Empties both maps.
  void clear() {
    std::map<std::string, double>::clear();
    arrays.clear();
  }
};

/// What fit() tells its callbacks (History.params in Keras).
struct TrainingParams {
  int verbose = 1;
  int epochs = 1;
  int steps = 0;  ///< batches per epoch; -1 when unknown until a pass ends (a dataset after filter())
};

/// Base class with every hook Keras calls, in Keras's order; override the ones you need.
class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(Logs&) {}
  virtual void on_train_end(Logs&) {}
  virtual void on_epoch_begin(int /*epoch*/, Logs&) {}
  virtual void on_epoch_end(int /*epoch*/, Logs&) {}
  virtual void on_train_batch_begin(int /*batch*/, Logs&) {}
  virtual void on_train_batch_end(int /*batch*/, Logs&) {}
  virtual void on_test_begin(Logs&) {}
  virtual void on_test_end(Logs&) {}
  virtual void on_test_batch_begin(int /*batch*/, Logs&) {}
  virtual void on_test_batch_end(int /*batch*/, Logs&) {}
  virtual void on_predict_begin(Logs&) {}
  virtual void on_predict_end(Logs&) {}
  virtual void on_predict_batch_begin(int /*batch*/, Logs&) {}
  virtual void on_predict_batch_end(int /*batch*/, Logs&) {}

  void set_model(Model* model) { model_ = model; }
  void set_params(const TrainingParams& params) { params_ = params; }
  Model* model() const { return model_; }
  const TrainingParams& params() const { return params_; }

 private:
  Model* model_ = nullptr;
  TrainingParams params_;
};

/// Records each epoch's logs; fit() returns it.
class History : public Callback {
 public:
  void on_epoch_end(int epoch, Logs& logs) override;
  /// Per-key lists of epoch values (keys sorted: "accuracy", "loss", "val_accuracy", "val_loss").
  std::map<std::string, std::vector<double>> history;
  /// The same for the logs' arrays (Logs::arrays): per key, each epoch's values ("f1_score" → one per class).
  std::map<std::string, std::vector<std::vector<double>>> arrays;
  /// The epoch indices recorded (0-based).
  std::vector<int> epoch;
};

/// Keras 3.15's Progbar: "cur/target", a 20-character bar, time, step time and " - key: value" pairs.
class Progbar {
 public:
  /// verbose 1 redraws in place (at most every `interval` seconds); verbose 2 prints one line at the end.
  Progbar(int target, int verbose, std::ostream& out, double interval = 0.05, std::string unit_name = "step");
  /// Shows progress `current` with `values`; `finalize` ends the line.
  void update(int current, const Logs& values, bool finalize);
  /// A target < 0 is unknown (a pass whose length is known only at its end): "12/Unknown" with the elapsed time.
  void set_target(int target) { target_ = target; }

 private:
  double estimate_step_duration(int current, double now);
  std::string format_time(double time_per_unit) const;

  int target_, verbose_;
  std::ostream& out_;
  double interval_;
  std::string unit_;
  double start_, last_update_ = 0.0;
  double time_after_first_step_ = -1.0;
  int prev_total_width_ = 0;
};

/// Prints Keras's progress output for fit/evaluate/predict ("Epoch 1/3" when epochs > 1).
class ProgbarLogger : public Callback {
 public:
  explicit ProgbarLogger(std::ostream& out);
  void on_train_begin(Logs&) override;
  void on_train_end(Logs&) override;
  void on_epoch_begin(int epoch, Logs&) override;
  void on_train_batch_end(int batch, Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_test_begin(Logs&) override;
  void on_test_batch_end(int batch, Logs& logs) override;
  void on_test_end(Logs& logs) override;
  void on_predict_begin(Logs&) override;
  void on_predict_batch_end(int batch, Logs&) override;
  void on_predict_end(Logs&) override;

 private:
  std::ostream& out_;
  int target() const;
  std::unique_ptr<Progbar> bar_;
  bool in_fit_ = false;
  int seen_ = 0, learned_steps_ = -1;
};

/// Whether a monitored value should go down ("min") or up ("max"); "auto" decides from its name.
enum class MonitorMode { auto_, min, max };

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;
  int patience = 0;
  int verbose = 0;
  MonitorMode mode = MonitorMode::auto_;
  std::optional<double> baseline{};
  bool restore_best_weights = false;
  int start_from_epoch = 0;
};
/// keras.callbacks.EarlyStopping: stops when `monitor` has not improved by min_delta for `patience` epochs; with
/// restore_best_weights the best epoch's weights are restored at the end of training (also without a stop).
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});
  void on_train_begin(Logs&) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(Logs&) override;
  int stopped_epoch = 0;  ///< 0 when training was not stopped
  int best_epoch = 0;
  std::optional<double> best;

 private:
  bool improved(double current, double reference) const;
  EarlyStoppingOptions o_;
  bool minimize_ = true;
  int wait_ = 0;
  std::vector<Tensor> best_weights_;
};

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  int verbose = 0;
  MonitorMode mode = MonitorMode::auto_;
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0.0;
};
/// keras.callbacks.ReduceLROnPlateau: lr = max(lr·factor, min_lr) after `patience` epochs without improvement;
/// adds "learning_rate" to every epoch's logs.
class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  void on_train_begin(Logs&) override;
  void on_epoch_end(int epoch, Logs& logs) override;

 private:
  ReduceLROnPlateauOptions o_;
  bool minimize_ = true;
  double best_ = 0;
  int wait_ = 0, cooldown_counter_ = 0;
};

/// keras.callbacks.LearningRateScheduler: lr = schedule(epoch, lr) at the start of every epoch.
class LearningRateScheduler : public Callback {
 public:
  explicit LearningRateScheduler(std::function<double(int epoch, double lr)> schedule, int verbose = 0);
  void on_epoch_begin(int epoch, Logs&) override;
  void on_epoch_end(int epoch, Logs& logs) override;

 private:
  std::function<double(int, double)> schedule_;
  int verbose_;
};

/// keras.callbacks.CSVLogger: one row per epoch, "epoch" (0-based) then the sorted log keys (val_ keys added when
/// absent, "NA" where a value is missing); values written as Python's repr of a float, an array of the logs
/// (Logs::arrays) as Keras writes it: `"""[0.5, 0.25]"""` (its float32 values, quoted).
class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string filename, std::string separator = ",", bool append = false);
  void on_train_begin(Logs&) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(Logs&) override;

 private:
  std::string filename_, separator_;
  bool append_;
  std::shared_ptr<std::ostream> out_;
  std::vector<std::string> keys_;
};

/// keras.callbacks.TerminateOnNaN: stops training at the first batch whose loss is NaN or infinite.
class TerminateOnNaN : public Callback {
 public:
  void on_train_batch_end(int batch, Logs& logs) override;
};

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  int verbose = 0;
  bool save_best_only = false;
  MonitorMode mode = MonitorMode::auto_;
  /// 0: every epoch; n > 0: every n batches.
  int save_freq = 0;
  std::optional<double> initial_value_threshold{};
};
/// keras.callbacks.ModelCheckpoint: the path ends in ".keras" (the whole model, Sequential::save), ".weights.h5"
/// (Keras's weights file) or ".weights.osp" (Osprey's). It may use {epoch} (1-based) and any log key with Python-style specs: "ckpt-{epoch:02d}-{loss:.2f}.weights.h5".
/// Files are replaced atomically.
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(std::string filepath, ModelCheckpointOptions options = {});
  void on_train_batch_end(int batch, Logs& logs) override;
  void on_epoch_begin(int epoch, Logs&) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  std::optional<double> best;

 private:
  void save(int epoch, const Logs& logs);
  bool whole_model_ = false;
  std::string filepath_;
  ModelCheckpointOptions o_;
  bool minimize_ = true;
  int epoch_ = 0, batches_ = 0;
};

struct BackupAndRestoreOptions {
  /// 0: a backup at the end of every epoch (Keras's "epoch"); n > 0: every n batches.
  int save_freq = 0;
  /// Remove the backup when fit ends normally (a run that was interrupted keeps it to resume from).
  bool delete_checkpoint = true;
};
/// keras.callbacks.BackupAndRestore: backs up the training state in `backup_dir` (every epoch or every
/// `save_freq` batches), and a fit started again with the same command resumes from the last backup. Where Keras
/// restores the weights and restarts the epoch, Osprey restores the weights, the optimizer's state (slots,
/// iterations, learning rate), the position (epoch and batch), the global random generator and the data order
/// (the pass's shuffle drawn again, its used batches passed over), so that a run killed at any point and started
/// again ends with the same weights, bit for bit, as one never interrupted. A backup is a new file and then
/// training_metadata.json naming it, each written atomically: a kill at any moment leaves the previous backup or
/// the new one. Under a MultiWorkerMirroredStrategy the chief writes and every worker reads (one folder all
/// workers see). The epoch's running loss and metrics before the backup are not restored (the resumed epoch's
/// logs cover its remaining batches), nor are other callbacks' states, as in Keras.
class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options = {});
  void on_train_begin(Logs& logs) override;
  void on_train_batch_end(int batch, Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;
  /// Backups written by this callback in this process (for tests and logs).
  int backups_written() const { return written_; }

 private:
  void save();
  std::string dir_;
  BackupAndRestoreOptions o_;
  int64_t since_last_ = 0;
  int written_ = 0;
  uint64_t generation_ = 0;
};

/// TensorBoard's update_freq: "epoch" (scalars once per epoch), "batch" (every batch) or a number n (every n
/// batches). Anything else is a ValueError.
class UpdateFreq {
 public:
  UpdateFreq(const char* name) : UpdateFreq(std::string(name)) {}
  UpdateFreq(const std::string& name);
  UpdateFreq(int batches);
  /// 0 for "epoch".
  int batches() const { return batches_; }

 private:
  int batches_ = 0;
};

struct TensorBoardOptions {
  /// Every this many epochs, a histogram of every weight of every layer ("<variable path>/histogram"); 0: none.
  int histogram_freq = 0;
  /// The model's config (to_json()) under the tag "keras", which TensorBoard's Graphs tab draws as Keras's
  /// conceptual graph (there is no op graph to write: Osprey runs no TensorFlow graph).
  bool write_graph = true;
  /// Also "batch_steps_per_second" (with batch updates) and "epoch_steps_per_second".
  bool write_steps_per_second = false;
  UpdateFreq update_freq = "epoch";
};

/// keras.callbacks.TensorBoard: writes the run as Keras 3 does, into `log_dir`/train and `log_dir`/validation,
/// one TensorBoard event file per folder and fit (osprey::summary's writer): "epoch_<metric>" at every epoch
/// (step: the epoch, 0-based) including "epoch_learning_rate"; with batch updates "batch_<metric>" (the epoch's
/// running values, step: the batch counted from 1 across epochs); after each validation
/// "evaluation_<metric>_vs_iterations" (step: the optimizer's iterations); histograms; the model's graph. Then
/// `tensorboard --logdir <log_dir>` shows it. The folders are made when training begins: a log_dir that cannot be
/// written is a PermissionDeniedError (or NotFoundError) before the first step. Where Keras 3.15 writes batch
/// scalars at every batch whatever update_freq's number, this writes them every update_freq batches, as Keras
/// documents. Not written: profiles (profile_batch), weight images (write_images), embeddings.
class TensorBoard : public Callback {
 public:
  explicit TensorBoard(std::string log_dir = "logs", TensorBoardOptions options = {});
  void on_train_begin(Logs&) override;
  void on_train_end(Logs&) override;
  void on_epoch_begin(int epoch, Logs&) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_begin(int batch, Logs&) override;
  void on_train_batch_end(int batch, Logs& logs) override;
  void on_test_end(Logs& logs) override;
  /// The run's folders.
  std::string train_dir() const;
  std::string validation_dir() const;

 private:
  summary::SummaryWriter& train_writer();
  summary::SummaryWriter& val_writer();
  std::string log_dir_;
  TensorBoardOptions o_;
  std::unique_ptr<summary::SummaryWriter> train_, val_;
  bool training_ = false;
  int64_t global_train_batch_ = 0, epoch_start_iterations_ = 0;
  std::chrono::steady_clock::time_point batch_start_{}, epoch_start_{};
};

/// The hooks of keras.callbacks.LambdaCallback: any of them, as functions or lambdas.
struct LambdaCallbackOptions {
  std::function<void(int epoch, Logs&)> on_epoch_begin{}, on_epoch_end{};
  std::function<void(int batch, Logs&)> on_train_batch_begin{}, on_train_batch_end{};
  std::function<void(Logs&)> on_train_begin{}, on_train_end{};
};
/// keras.callbacks.LambdaCallback: a callback made of functions, e.g.
/// `LambdaCallback({.on_epoch_end = [&](int epoch, Logs& logs) { losses.push_back(logs["loss"]); }})`.
class LambdaCallback : public Callback {
 public:
  explicit LambdaCallback(LambdaCallbackOptions hooks) : h_(std::move(hooks)) {}
  void on_epoch_begin(int epoch, Logs& logs) override { if (h_.on_epoch_begin) h_.on_epoch_begin(epoch, logs); }
  void on_epoch_end(int epoch, Logs& logs) override { if (h_.on_epoch_end) h_.on_epoch_end(epoch, logs); }
  void on_train_batch_begin(int b, Logs& logs) override { if (h_.on_train_batch_begin) h_.on_train_batch_begin(b, logs); }
  void on_train_batch_end(int b, Logs& logs) override { if (h_.on_train_batch_end) h_.on_train_batch_end(b, logs); }
  void on_train_begin(Logs& logs) override { if (h_.on_train_begin) h_.on_train_begin(logs); }
  void on_train_end(Logs& logs) override { if (h_.on_train_end) h_.on_train_end(logs); }

 private:
  LambdaCallbackOptions h_;
};

/// A callback in `.callbacks = {...}`: your own object (an lvalue: fit calls it itself, never a copy, so what it
/// records, such as EarlyStopping's stopped_epoch, is there afterwards; it must outlive the call), a temporary
/// (moved in and owned), or a shared_ptr.
class CallbackRef {
 public:
  template <typename C>
    requires std::derived_from<C, Callback>
  CallbackRef(C& c) : ptr_(std::shared_ptr<Callback>(), &c) {}  // aliasing, not owning: the caller's object
  template <typename C>
    requires std::derived_from<C, Callback>
  CallbackRef(const C& c) = delete;  // a const callback could not record anything: pass it non-const
  template <typename C>
    requires std::derived_from<std::decay_t<C>, Callback> && (!std::is_lvalue_reference_v<C>)
  CallbackRef(C&& c) : ptr_(std::make_shared<std::decay_t<C>>(std::forward<C>(c))) {}
  template <typename C>
    requires std::derived_from<C, Callback>
  CallbackRef(std::shared_ptr<C> c) : ptr_(std::move(c)) {}
  const std::shared_ptr<Callback>& get() const { return ptr_; }

 private:
  std::shared_ptr<Callback> ptr_;
};

/// keras.callbacks: the callbacks under Keras's module name (keras::callbacks::EarlyStopping).
namespace callbacks {
using keras::BackupAndRestore;
using keras::BackupAndRestoreOptions;
using keras::Callback;
using keras::CallbackRef;
using keras::CSVLogger;
using keras::EarlyStopping;
using keras::EarlyStoppingOptions;
using keras::History;
using keras::LambdaCallback;
using keras::LambdaCallbackOptions;
using keras::LearningRateScheduler;
using keras::ModelCheckpoint;
using keras::ModelCheckpointOptions;
using keras::ProgbarLogger;
using keras::ReduceLROnPlateau;
using keras::ReduceLROnPlateauOptions;
using keras::TensorBoard;
using keras::TensorBoardOptions;
using keras::TerminateOnNaN;
using keras::UpdateFreq;
}  // namespace callbacks

}  // namespace osprey::keras
