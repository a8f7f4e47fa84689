// Where fit's batches come from (Keras's data adapters): arrays held on the host, or a PyDataset. Private.
#pragma once

#include <algorithm>

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "keras/trainers/trainer.h"
#include "osprey/data.h"
#include "osprey/keras/data.h"

namespace osprey::keras::trainer {

/// A pass is one walk over the data; next() gives the pass's next batch.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  /// Batches in one pass.
  virtual int64_t batches_per_pass() const = 0;
  /// Starts a pass (a new order when shuffling).
  virtual void begin_pass() = 0;
  /// Fills `out` with the pass's next batch (its vectors keep their memory from step to step); false when the
  /// data ran out (a generator that ended).
  virtual bool next(Batch& out) = 0;
  /// Passes over the pass's next `n` batches (BackupAndRestore resuming mid-pass); false when the data ended first.
  virtual bool skip(int64_t n) {
    Batch b;
    for (int64_t i = 0; i < n; ++i) {
      if (!next(b)) return false;
    }
    return true;
  }
  virtual void end_epoch() {}
  /// True when the pass's length is not known before it ends (a dataset after filter()): without steps_per_epoch,
  /// an epoch is then one pass, however long.
  virtual bool ends_pass_itself() const { return false; }
};

/// Tensors held on the host, cut into batches (gathered in a shuffled order, or sliced in order).
class ArraySource : public BatchSource {
 public:
  /// `rows_in_step`: the training step gathers a shuffled batch's rows itself (then a batch is the whole arrays and
  /// its row indices; else the rows are gathered here). A step that cannot gathers them with ops (train_step).
  ArraySource(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const Weights& w, int batch_size,
              bool shuffle, runtime::Device* device, bool rows_in_step);
  int64_t batches_per_pass() const override { return (n_ + batch_ - 1) / batch_; }
  void begin_pass() override;
  bool next(Batch& out) override;
  bool skip(int64_t n) override {
    cursor_ = std::min(n_, cursor_ + n * batch_);
    return true;
  }

 private:
  static constexpr int64_t kShuffleCopyBytes = int64_t{64} << 20;
  Batch all_, shuffled_;
  Tensor order_;
  int64_t n_ = 0, cursor_ = 0;
  int batch_;
  bool shuffle_;
  runtime::Device* device_;
  bool rows_in_step_;
  bool direct_ = false;
};

/// A C++ generator's batches, as it gives them (fit's generator adapter).
class GeneratorSource : public BatchSource {
 public:
  /// `class_weight` (may be null) weighs each batch's samples by their labels.
  GeneratorSource(Model& model, Model::State& s, Generator generator, const std::map<int, double>* class_weight)
      : model_(model), s_(s), generator_(std::move(generator)), class_weight_(class_weight) {}
  int64_t batches_per_pass() const override { return INT64_MAX; }
  void begin_pass() override {}
  bool next(Batch& out) override;

 private:
  Model& model_;
  Model::State& s_;
  Generator generator_;
  const std::map<int, double>* class_weight_;
};

/// A PyDataset's batches in the pass's order; with workers > 1, worker threads prepare them ahead (at most
/// max_queue_size), delivered in order; an exception in get_batch() reaches fit when its batch is due.
class DatasetSource : public BatchSource {
 public:
  /// `class_weight` (may be null) weighs each batch's samples by their labels.
  DatasetSource(utils::PyDataset& d, bool shuffle, Model& model, const std::map<int, double>* class_weight);
  ~DatasetSource() override { stop(); }
  int64_t batches_per_pass() const override { return d_.num_batches(); }
  void begin_pass() override;
  bool next(Batch& out) override;
  void end_epoch() override { d_.on_epoch_end(); }

 private:
  using Lists = utils::PyDatasetBatch;
  struct Slot {
    Lists batch;
    std::exception_ptr error;
  };
  Lists next_lists();
  static Lists checked(Lists b, int64_t index);
  void start();
  void stop();

  utils::PyDataset& d_;
  bool shuffle_;
  Model& model_;
  const std::map<int, double>* class_weight_;
  int workers_ = 1;
  int64_t window_ = 10;
  std::vector<int64_t> order_;
  int64_t next_ = 0, claimed_ = 0;
  std::mutex mu_;
  std::condition_variable ready_cv_, space_cv_;
  std::map<int64_t, Slot> slots_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

/// A data::Dataset's elements as batches (Keras's TFDatasetAdapter): each element `x`, `(x,)`, `(x, y)` or
/// `(x, y, sample_weight)`, x and y a tensor, a tuple (one per input or output) or a name map. Each pass iterates
/// the dataset anew. When the model sits on another device than the host (and is not distributed), the batches
/// are copied to it on a background thread, a batch ahead of the step. Under a MultiWorkerMirroredStrategy with
/// AutoShardPolicy::OFF each batch is this worker's pieces of its own copy (Batch::replica_offsets), and next() is
/// collective: the workers agree on the step's global rows, and the pass ends when every worker's copy has.
/// The number of batches of a pass stays the dataset's cardinality, as in Keras 3.
class PipelineSource : public BatchSource {
 public:
  /// `targets`: whether elements must carry y (fit, evaluate); `class_weight`: fit's, applied to y.
  PipelineSource(const data::Dataset& d, Model& model, State& s, const char* fn, bool targets,
                 const std::map<int, double>* class_weight, runtime::Device* copy_to);
  int64_t batches_per_pass() const override;
  bool ends_pass_itself() const override { return cardinality_ == data::UNKNOWN_CARDINALITY; }
  void begin_pass() override;
  bool next(Batch& out) override;

 private:
  bool next_element(Batch& out);
  bool next_pieces(Batch& out);

  data::Dataset d_;
  Model& model_;
  State& s_;
  const char* fn_;
  bool targets_;
  const std::map<int, double>* class_weight_;
  int64_t cardinality_;
  std::optional<data::Iterator> it_;
  bool off_ = false;  // AutoShardPolicy::OFF across workers
  std::optional<Batch> no_rows_;  // a batch of no rows, for steps after this worker's copy ended
};

}  // namespace osprey::keras::trainer
