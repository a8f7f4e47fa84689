// Keras callbacks: the hooks of fit/evaluate/predict, History and the progress bar.
#pragma once

#include <chrono>
#include <concepts>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace osprey::keras {

class Sequential;

/// The values a hook sees: metric name → value, iterated in sorted key order as Keras displays them.
using Logs = std::map<std::string, double>;

/// What fit() tells its callbacks (History.params in Keras).
struct TrainingParams {
  int verbose = 1;
  int epochs = 1;
  int steps = 0;
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

  void set_model(Sequential* model) { model_ = model; }
  void set_params(const TrainingParams& params) { params_ = params; }
  Sequential* model() const { return model_; }
  const TrainingParams& params() const { return params_; }

 private:
  Sequential* model_ = nullptr;
  TrainingParams params_;
};

/// Records each epoch's logs; fit() returns it.
class History : public Callback {
 public:
  void on_epoch_end(int epoch, Logs& logs) override;
  /// Per-key lists of epoch values (keys sorted: "accuracy", "loss", "val_accuracy", "val_loss").
  std::map<std::string, std::vector<double>> history;
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
  std::unique_ptr<Progbar> bar_;
  bool in_fit_ = false;
};

/// A callback passed by value or pointer in `.callbacks = {...}`.
class CallbackRef {
 public:
  template <typename C>
    requires std::derived_from<std::decay_t<C>, Callback>
  CallbackRef(C&& c) : ptr_(std::make_shared<std::decay_t<C>>(std::forward<C>(c))) {}
  template <typename C>
    requires std::derived_from<C, Callback>
  CallbackRef(std::shared_ptr<C> c) : ptr_(std::move(c)) {}
  const std::shared_ptr<Callback>& get() const { return ptr_; }

 private:
  std::shared_ptr<Callback> ptr_;
};

}  // namespace osprey::keras
