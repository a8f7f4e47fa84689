// The pieces of data::Dataset: a Node per transformation (immutable, shared by the Datasets built on it) and an
// IteratorImpl per pass. Private.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "osprey/data.h"
#include "runtime/device_manager.h"

namespace osprey::data::detail {

class IteratorImpl {
 public:
  virtual ~IteratorImpl() = default;
  /// The next element, std::nullopt at the end.
  virtual std::optional<Element> next() = 0;
  /// The next n elements stacked (fewer at the end), as views of contiguous rows, by an iterator that has them so
  /// (tensor slices): batch() then copies nothing. Others return std::nullopt and batch() stacks next()'s.
  virtual std::optional<Element> next_rows(int64_t /*n*/) { return std::nullopt; }
  /// Whether next_rows() gives rows.
  virtual bool gives_rows() const { return false; }
};

class Node {
 public:
  virtual ~Node() = default;
  virtual std::unique_ptr<IteratorImpl> iterate() const = 0;
  virtual int64_t cardinality() const = 0;
  /// tf.data's name of the dataset class, e.g. "MapDataset".
  virtual std::string name() const = 0;
  /// The dataset this one transforms (null for a source).
  virtual const Node* input() const { return nullptr; }
  /// Every dataset this one reads (zip and concatenate: several).
  virtual std::vector<const Node*> inputs() const {
    const Node* in = input();
    return in ? std::vector<const Node*>{in} : std::vector<const Node*>{};
  }
  /// The batch size of the elements when the pipeline fixes it (tf.data's compute_batch_size: the nearest batch()
  /// above, through transformations that keep the batch dimension); nullopt when it does not.
  virtual std::optional<int64_t> static_batch_size() const {
    const auto ins = inputs();
    return ins.size() == 1 ? ins[0]->static_batch_size() : std::nullopt;
  }
  /// The options a with_options() node sets (null for every other node).
  virtual const Options* own_options() const { return nullptr; }
};

/// A shape as tf.data's messages write it: "[2, 3]".
std::string dims_text(const Shape& s);
/// The host (CPU:0) device, where every pipeline tensor lives.
runtime::Device& host();
/// t on the host (a copy when it is elsewhere); ValueError for an undefined tensor.
Tensor on_host(const Tensor& t);
/// Row i of t without its first dimension (a view).
Tensor row_of(const Tensor& t, int64_t i);
/// InvalidArgumentError unless e has first's structure.
void check_same_structure(const Element& first, const Element& e, int64_t index, const char* what);
/// The elements stacked along a new first dimension (each component the same shape and dtype, else
/// InvalidArgumentError with tf.data's words); `first_index`: the first row's index in the input, for errors.
Element stack(const std::vector<Element>& rows, int64_t first_index);
/// The same with every component padded to the batch's longest (or to options.padded_shapes).
Element pad_stack(const std::vector<Element>& rows, const PaddedBatchOptions& options, int64_t first_index);
/// Throws error again, its message after `prefix`, as the same Osprey error class (other exceptions become
/// InvalidArgumentError).
[[noreturn]] void rethrow_with_context(std::exception_ptr error, const std::string& prefix);
/// The thread count AUTOTUNE stands for (the cores).
int64_t autotuned_threads();

// The transformations' nodes: on the iterating thread (transforms.cpp); with threads or state (parallel.cpp,
// shuffle_cache.cpp).
std::shared_ptr<const Node> make_map(std::shared_ptr<const Node> input, Dataset::MapFn fn);
std::shared_ptr<const Node> make_filter(std::shared_ptr<const Node> input, Dataset::Predicate predicate);
std::shared_ptr<const Node> make_batch(std::shared_ptr<const Node> input, int64_t n, bool drop_remainder,
                                       std::optional<PaddedBatchOptions> padding);
std::shared_ptr<const Node> make_unbatch(std::shared_ptr<const Node> input);
std::shared_ptr<const Node> make_repeat(std::shared_ptr<const Node> input, int64_t count);
std::shared_ptr<const Node> make_take(std::shared_ptr<const Node> input, int64_t count);
std::shared_ptr<const Node> make_skip(std::shared_ptr<const Node> input, int64_t count);
std::shared_ptr<const Node> make_shard(std::shared_ptr<const Node> input, int64_t num_shards, int64_t index);
/// rebatch()'s sizes, given the rows of the first element (called once per pass).
using RebatchSizes = std::function<std::vector<int64_t>(int64_t first_rows)>;
std::shared_ptr<const Node> make_rebatch(std::shared_ptr<const Node> input, RebatchSizes sizes, bool drop_remainder);
/// parallel: each open dataset prefetched on its own thread; deterministic (unset: the pipeline's
/// Options::deterministic, else true) applies with it.
std::shared_ptr<const Node> make_interleave(std::shared_ptr<const Node> input, Dataset::InterleaveFn fn,
                                            int64_t cycle_length, int64_t block_length, bool parallel,
                                            std::optional<bool> deterministic);
std::shared_ptr<const Node> make_options(std::shared_ptr<const Node> input, Options options);
std::shared_ptr<const Node> make_concatenate(std::shared_ptr<const Node> input, std::shared_ptr<const Node> other);
std::shared_ptr<const Node> make_parallel_map(std::shared_ptr<const Node> input, Dataset::MapFn fn, int64_t threads,
                                              std::optional<bool> deterministic);

/// The options of the pipeline whose iterator is being made (make_iterator() sets them for the nodes' iterate()
/// calls on this thread; iterators that make their input's iterator again later, repeat's and concatenate's,
/// keep them for then). Unset fields when none is.
Options pipeline_options();
class PipelineScope {
 public:
  explicit PipelineScope(Options options);
  ~PipelineScope();
  PipelineScope(const PipelineScope&) = delete;
  PipelineScope& operator=(const PipelineScope&) = delete;

 private:
  Options options_;
  const Options* previous_;
};
std::shared_ptr<const Node> make_prefetch(std::shared_ptr<const Node> input, int64_t buffer);
/// A prefetching iterator that also answers without waiting: interleave's unordered order (deterministic=false)
/// reads whichever of its open datasets has an element ready.
class PollingIterator : public IteratorImpl {
 public:
  enum class Poll { ready, pending, ended };
  /// ready: `out` holds the next element; pending: none yet; ended: no more (the input's failure is thrown here).
  virtual Poll poll(std::optional<Element>& out) = 0;
};
/// Wakes a consumer polling several PollingIterators: each element they queue and each end adds to `events`.
struct ReadySignal {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t events = 0;
  void notify();
};
/// prefetch()'s iterator over `in` (`buffer` elements ahead on its own thread), notifying `signal`.
std::unique_ptr<PollingIterator> make_polling_prefetch(std::unique_ptr<IteratorImpl> in, int64_t buffer,
                                                       std::shared_ptr<ReadySignal> signal);
std::shared_ptr<const Node> make_shuffle(std::shared_ptr<const Node> input, int64_t buffer,
                                         std::optional<uint64_t> seed, bool reshuffle);
std::shared_ptr<const Node> make_cache(std::shared_ptr<const Node> input, const std::string& filename);

}  // namespace osprey::data::detail
