// Feeding fit() from code: keras.utils.PyDataset (a batch source with a length and random access).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "osprey/tensor.h"

namespace osprey::keras::utils {

/// Keras's PyDataset in C++: subclass it, say how many batches an epoch has and how to make batch `index`
/// (load files, decode, augment). fit() calls get_batch() in the order of the epoch (shuffled when
/// FitOptions::shuffle). With workers > 1, that many threads prepare the next batches while the model trains
/// (at most max_queue_size ahead), so get_batch() must then be safe to call from several threads at once.
class PyDataset {
 public:
  struct Options {
    int workers = 1;          ///< 1: batches are made on the training thread, in turn
    int max_queue_size = 10;  ///< batches prepared ahead at most
  };
  PyDataset() = default;
  explicit PyDataset(Options options) : options_(options) {}
  virtual ~PyDataset() = default;

  /// Batches per epoch (__len__).
  virtual int64_t num_batches() const = 0;
  /// Batch `index` in [0, num_batches()): inputs and targets with the same number of rows (__getitem__).
  virtual std::pair<Tensor, Tensor> get_batch(int64_t index);
  /// The same for a model with several inputs or outputs: one tensor per input and per output, in the model's
  /// order. Override one of the two; the default gives get_batch()'s pair as lists of one.
  virtual std::pair<std::vector<Tensor>, std::vector<Tensor>> get_batch_lists(int64_t index);
  /// Called after every epoch (e.g. to reshuffle files).
  virtual void on_epoch_end() {}

  const Options& options() const { return options_; }

 private:
  Options options_{};
};

}  // namespace osprey::keras::utils
