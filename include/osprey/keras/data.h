// Feeding fit() from code: keras.utils.PyDataset (a batch source with a length and random access), and keras.utils'
// data helpers (to_categorical, normalize, split_dataset, confusion_matrix, pad_sequences).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/data.h"
#include "osprey/tensor.h"

namespace osprey::keras::utils {

/// One batch of a PyDataset with its sample weights: Keras's (x, y, sample_weight) from __getitem__.
struct PyDatasetBatch {
  std::vector<Tensor> x, y;  ///< one tensor per input and per output, in the model's order
  /// None (empty), one tensor for every output, or one per output in the outputs' order (an undefined one leaves its
  /// output unweighted): as fit's sample_weight, with the batch's rows.
  std::vector<Tensor> sample_weight{};
};

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
  /// The same with sample weights (Keras's __getitem__ returning (x, y, sample_weight)): override this one to weigh
  /// the loss and weighted_metrics per batch. The default gives get_batch_lists() without weights.
  virtual PyDatasetBatch get_weighted_batch(int64_t index);
  /// Called after every epoch (e.g. to reshuffle files).
  virtual void on_epoch_end() {}

  const Options& options() const { return options_; }

 private:
  Options options_{};
};

}  // namespace osprey::keras::utils

namespace osprey::keras::utils {

/// keras.utils.to_categorical: integer class labels (any shape; a trailing dimension of 1 is dropped) as one-hot
/// float32 rows of num_classes (default: the largest label + 1). ValueError for a negative label or one >= num_classes.
Tensor to_categorical(const Tensor& y, std::optional<int64_t> num_classes = std::nullopt);

/// keras.utils.normalize: x divided by its L`order` norm along `axis` (order 1 or 2; rows of zeros stay zeros).
Tensor normalize(const Tensor& x, int axis = -1, int order = 2);

/// A split size for split_dataset: an integer is a count of elements, a floating-point number a fraction in (0, 1)
/// (Keras tells them apart by their Python type).
struct SplitSize {
  SplitSize(int count) : value(count), fraction(false) {}
  SplitSize(int64_t count) : value(static_cast<double>(count)), fraction(false) {}
  SplitSize(double f) : value(f), fraction(true) {}
  double value;
  bool fraction;
};

/// keras.utils.split_dataset: the dataset's elements (a finite dataset, each component of one shape) as a left and
/// a right dataset: the first left_size elements and the last right_size (either may be omitted: the other's
/// complement; a fraction is rounded as Python's round()). With shuffle, the elements are shuffled first (Osprey's
/// generator from `seed`, not NumPy's: another order than Keras for the same seed).
std::pair<data::Dataset, data::Dataset> split_dataset(const data::Dataset& dataset,
                                                      std::optional<SplitSize> left_size,
                                                      std::optional<SplitSize> right_size = std::nullopt,
                                                      bool shuffle = false, std::optional<uint64_t> seed = std::nullopt);
/// The same for tensors sliced along their first dimension (a tuple of tensors slices them together).
std::pair<data::Dataset, data::Dataset> split_dataset(const data::Element& arrays, std::optional<SplitSize> left_size,
                                                      std::optional<SplitSize> right_size = std::nullopt,
                                                      bool shuffle = false, std::optional<uint64_t> seed = std::nullopt);

/// tf.math.confusion_matrix: counts (num_classes, num_classes) int64 with rows the true labels and columns the
/// predicted ones (num_classes default: the largest label + 1); optional per-sample weights (then float32).
Tensor confusion_matrix(const Tensor& labels, const Tensor& predictions, std::optional<int64_t> num_classes = std::nullopt,
                        const Tensor& weights = Tensor());

/// keras.utils.pad_sequences's arguments.
struct PadSequencesOptions {
  std::optional<int64_t> maxlen = std::nullopt;  ///< steps per row (default: the longest sequence's length)
  DType dtype = DType::int32;      ///< the result's type
  std::string padding = "pre";     ///< "pre" or "post": the padding before or after each sequence
  std::string truncating = "pre";  ///< "pre" or "post": a longer sequence loses its first or its last steps
  double value = 0.0;              ///< the padding (cast to dtype)
};

/// keras.utils.pad_sequences: sequences of token ids as one (num_sequences, maxlen) tensor, shorter ones padded
/// with `value` (before them by default: Keras's "pre", which an Embedding with mask_zero turns into left-padded
/// masks) and longer ones truncated. ValueError for an unknown padding or truncating, a negative maxlen, no
/// sequences without a maxlen, or an id outside dtype's range (naming the sequence and position).
Tensor pad_sequences(const std::vector<std::vector<int64_t>>& sequences, const PadSequencesOptions& options = {});
/// The same from literal lists: pad_sequences({{1}, {2, 3}}).
inline Tensor pad_sequences(std::initializer_list<std::initializer_list<int64_t>> sequences,
                            const PadSequencesOptions& options = {}) {
  std::vector<std::vector<int64_t>> v;
  for (const auto& s : sequences) v.emplace_back(s);
  return pad_sequences(v, options);
}
/// The same for sequences as tensors (len, *sample_shape): steps of feature vectors for a Masking layer, say.
/// Every non-empty sequence has the first one's sample shape (Keras's ValueError otherwise); the result is
/// (num_sequences, maxlen, *sample_shape), each sequence cast to dtype.
Tensor pad_sequences(const std::vector<Tensor>& sequences, const PadSequencesOptions& options = {});

}  // namespace osprey::keras::utils
