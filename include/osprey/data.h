// Input pipelines in tf.data's shape: data::Dataset (from_tensor_slices, map, shuffle, batch, cache, prefetch...)
// and readers for .npy/.npz files and CSV. fit/evaluate/predict take a Dataset as Keras takes a tf.data.Dataset.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osprey/tensor.h"

namespace osprey::data {

/// One element of a dataset (tf.data's nested structure): a tensor, a tuple of elements, or a name map of
/// elements. `Element(t)` is one tensor; `Element{x, y}` a tuple (as Python's `(x, y)`); `Element::named(...)` a
/// name map (as a dict). fit() reads a tuple as (x, y) or (x, y, sample_weight), and anything else as x alone.
class Element {
 public:
  enum class Kind { tensor, tuple, map };
  /// An empty tuple.
  Element() : kind_(Kind::tuple) {}
  Element(Tensor t) : kind_(Kind::tensor), tensor_(std::move(t)) {}
  Element(std::initializer_list<Element> items) : kind_(Kind::tuple), items_(items) {}
  static Element tuple(std::vector<Element> items);
  static Element named(std::map<std::string, Element> items);

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::tensor; }
  /// The tensor of a tensor element; ValueError otherwise.
  const Tensor& tensor() const;
  /// Items of a tuple or map (a map's in key order).
  int64_t size() const { return static_cast<int64_t>(items_.size()); }
  const Element& operator[](int64_t i) const;
  const Element& operator[](const std::string& key) const;
  const std::vector<Element>& items() const { return items_; }
  /// A map's keys, sorted.
  const std::vector<std::string>& keys() const;
  /// Every tensor, depth first (a map's in key order): tf.nest.flatten.
  std::vector<Tensor> flatten() const;
  /// The same structure with these tensors in flatten()'s order: tf.nest.pack_sequence_as.
  Element with_tensors(const std::vector<Tensor>& flat) const;
  /// The structure and each tensor's dtype and shape, e.g. "(float32[4], {age: int64[]})".
  std::string spec() const;
  /// The structure alone, e.g. "(tensor, {age: tensor})".
  std::string structure() const;
  /// Whether `other` has this structure (structure() == other.structure(), without building the strings).
  bool same_structure(const Element& other) const;

 private:
  Kind kind_;
  Tensor tensor_;
  std::vector<Element> items_;
  std::shared_ptr<const std::vector<std::string>> keys_;  // a map's; shared by the elements made from it
  void flatten_into(std::vector<Tensor>& out) const;
  Element with_tensors_from(const std::vector<Tensor>& flat, std::size_t& at) const;
};

/// tf.data.AUTOTUNE: let the pipeline pick (for num_parallel_calls: one call per core; for prefetch: 2 elements).
inline constexpr int64_t AUTOTUNE = -1;
/// cardinality() of a dataset that never ends (repeat()) and of one whose length is not known before iterating it
/// (filter(), from_generator()), as tf.data.INFINITE_CARDINALITY and tf.data.UNKNOWN_CARDINALITY.
inline constexpr int64_t INFINITE_CARDINALITY = -1;
inline constexpr int64_t UNKNOWN_CARDINALITY = -2;

namespace detail {
class Node;
class IteratorImpl;
}  // namespace detail

/// padded_batch()'s arguments. padded_shapes: per component (flatten() order), the shape to pad to, -1 for a
/// dimension padded to the longest in the batch; empty: every dimension to the longest. padding_values: per
/// component, else `padding_value` for all.
struct PaddedBatchOptions {
  bool drop_remainder = false;
  std::vector<std::vector<int64_t>> padded_shapes{};
  double padding_value = 0.0;
  std::vector<double> padding_values{};
};

/// tf.data.experimental.AutoShardPolicy: how a MultiWorkerMirroredStrategy splits a dataset between its workers
/// (fit, evaluate, predict and experimental_distribute_dataset).
///  - AUTO: DATA (TensorFlow tries FILE first; no Osprey source reads files lazily, so AUTO is always DATA here).
///  - FILE: shard the files a source reads; Osprey's sources hold their data in memory, so FILE is a NotFoundError
///    naming the source, as TensorFlow's for a dataset without a file reader.
///  - DATA: every worker iterates the whole dataset and takes its replicas' rows of each global batch.
///  - OFF: no sharding: every worker iterates its own copy, cut into pieces of
///    distribute::batch_sizes_for_worker's sizes (tf.data's rebatch, across batch boundaries), and takes
///    replicas-per-worker of them each step; an epoch is still the dataset's cardinality in steps (Keras 3), so
///    with identical copies every worker reads the first 1/workers of its copy. Steps continue until every
///    worker's copy has ended (a worker whose copy ended contributes nothing).
enum class AutoShardPolicy { AUTO, FILE, DATA, OFF };

/// tf.data.experimental.DistributeOptions.
struct DistributeOptions {
  std::optional<AutoShardPolicy> auto_shard_policy{};  ///< unset: AUTO
};

/// tf.data.Options: set on a dataset with with_options(), read with options(). Fields left unset do not override
/// what an earlier with_options() (or an input dataset's) set.
struct Options {
  DistributeOptions experimental_distribute{};
  /// tf.data.Options.deterministic: false lets every map(num_parallel_calls) without its own `deterministic`
  /// hand out elements as they are ready (unset: in order).
  std::optional<bool> deterministic{};
  /// The policy in effect (AUTO when unset).
  AutoShardPolicy auto_shard_policy() const {
    return experimental_distribute.auto_shard_policy.value_or(AutoShardPolicy::AUTO);
  }
  /// These options with `other`'s set fields over them (tf.data.Options.merge).
  Options merge(const Options& other) const;
};
/// "AUTO", "FILE", "DATA", "OFF".
const char* to_string(AutoShardPolicy p);

/// A pass over a dataset (Python's `iter(dataset)`): next() gives the elements in order, then std::nullopt.
/// Background threads of map(num_parallel_calls) and prefetch() start with it and stop when it is destroyed. It
/// keeps its pipeline alive: the Dataset it came from may be gone.
class Iterator {
 public:
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();
  std::optional<Element> next();

 private:
  friend class Dataset;
  Iterator(std::unique_ptr<detail::IteratorImpl> impl, std::shared_ptr<const detail::Node> pipeline);
  std::shared_ptr<const detail::Node> pipeline_;  // declared first: destroyed after impl_, whose threads use it
  std::unique_ptr<detail::IteratorImpl> impl_;
};

/// tf.data.Dataset: an immutable description of a pipeline; each transformation returns a new Dataset, each
/// iteration (make_iterator(), an epoch of fit) runs it from the start. Functions given to map() and filter() run
/// on the pipeline's threads with CPU:0 as their device; with num_parallel_calls they run on several at once and
/// must be safe to call so. An exception they throw reaches whoever iterates (fit, evaluate...), with the index of
/// the element; the pipeline's threads then stop.
class Dataset {
 public:
  using MapFn = std::function<Element(const Element&)>;
  using Predicate = std::function<bool(const Element&)>;
  /// interleave()'s function: the dataset an input element opens.
  using InterleaveFn = std::function<Dataset(const Element&)>;
  /// A generator: the next element, or std::nullopt at its end.
  using GeneratorFn = std::function<std::optional<Element>()>;

  /// The rows of every tensor in `e`, one element per row; all tensors need the same number of rows.
  static Dataset from_tensor_slices(const Element& e);
  static Dataset from_tensor_slices(const std::map<std::string, Tensor>& named);
  /// `e` as the only element.
  static Dataset from_tensors(const Element& e);
  /// Scalars start, start + step, ... before stop (int64), as tf.data.Dataset.range.
  static Dataset range(int64_t stop);
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  /// Elements of a generator; `make` is called at the start of every iteration for a fresh one (tf.data calls the
  /// Python generator function again each epoch).
  static Dataset from_generator(std::function<GeneratorFn()> make);
  /// Tuples of the datasets' elements, until the shortest ends.
  static Dataset zip(const std::vector<Dataset>& datasets);

  /// fn applied to every element; num_parallel_calls 0 runs it on the iterating thread, n > 0 (or AUTOTUNE) on
  /// that many background threads, elements in order; with deterministic=false (or, unset, the pipeline's
  /// Options::deterministic false) each element as soon as it is ready, so a slow one does not hold up the ones
  /// after it (tf.data's deterministic argument).
  Dataset map(MapFn fn, int64_t num_parallel_calls = 0, std::optional<bool> deterministic = std::nullopt) const;
  /// tf.data's interleave: `fn` makes a dataset of each input element; up to cycle_length of them (AUTOTUNE: one
  /// per core) are read in turn, block_length consecutive elements from each, and one that ends leaves its place to
  /// the next input element's dataset when the turn comes back to it (e.g. reading several files at once). With
  /// num_parallel_calls (n > 0 or AUTOTUNE) each open dataset makes its elements ahead on a background thread; the
  /// order stays the same unless deterministic=false (or, unset, the pipeline's Options::deterministic false): then
  /// a dataset with no element ready passes the turn to the next one that has one, so a slow file holds up only its
  /// own elements (tf.data's deterministic argument; without num_parallel_calls it changes nothing). An exception
  /// in `fn` or in an opened dataset reaches the iterating side with the input element's index.
  Dataset interleave(InterleaveFn fn, int64_t cycle_length = AUTOTUNE, int64_t block_length = 1,
                     int64_t num_parallel_calls = 0, std::optional<bool> deterministic = std::nullopt) const;
  /// The elements for which `predicate` is true.
  Dataset filter(Predicate predicate) const;
  /// tf.data's shuffle: a buffer of `buffer_size` elements, each output drawn from it at random and replaced by
  /// the next input. With a seed the orders are reproducible; reshuffle_each_iteration: a new order every pass
  /// (else every pass repeats the first's). Without a seed, orders come from the global seed (random::set_seed).
  Dataset shuffle(int64_t buffer_size, std::optional<uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  /// Consecutive elements stacked into batches of `batch_size` (the last one smaller unless drop_remainder).
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  /// batch() for elements whose shapes differ: each component padded (at the end of every dimension).
  Dataset padded_batch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  /// tf.data's rebatch: the rows of consecutive elements (every component batched alike) cut into batches of
  /// `batch_size` rows, across the input's element boundaries (unbatch().batch(n) without copying twice); the last
  /// one smaller unless drop_remainder.
  Dataset rebatch(int64_t batch_size, bool drop_remainder = false) const;
  /// The same with the sizes cycled through in order (a size of 0 gives an element with no rows).
  Dataset rebatch(std::vector<int64_t> batch_sizes, bool drop_remainder = false) const;
  /// The rows of every element as elements (the inverse of batch()).
  Dataset unbatch() const;
  /// The elements `count` times over (-1: for ever).
  Dataset repeat(int64_t count = -1) const;
  /// The first `count` elements (-1: all).
  Dataset take(int64_t count) const;
  /// All but the first `count` elements (-1: none).
  Dataset skip(int64_t count) const;
  /// Every num_shards-th element from `index` on (tf.data's shard).
  Dataset shard(int64_t num_shards, int64_t index) const;
  /// The first complete pass is kept, in memory (no filename) or in a file, and later passes read it instead of
  /// running the pipeline above. A pass that stops early keeps nothing. A file cache streams (tf.data's: for data
  /// larger than memory): each element is appended to a temporary file as it passes, the file is named only when
  /// the pass completes, and later passes read it one element at a time; an existing cache file is checked whole
  /// (its structure and sizes) before its first pass.
  Dataset cache(const std::string& filename = "") const;
  /// Elements made ahead of need on a background thread, at most buffer_size (AUTOTUNE: 2) waiting.
  Dataset prefetch(int64_t buffer_size = AUTOTUNE) const;
  /// This dataset's elements, then other's (the same structure).
  Dataset concatenate(const Dataset& other) const;
  /// The same elements with `options` set (merged over those already set; tf.data's with_options).
  Dataset with_options(const Options& options) const;
  /// The options in effect: those of every with_options() in the pipeline, inputs first, later ones winning
  /// (zip and concatenate merge their inputs' in order).
  Options options() const;

  /// The number of elements, or INFINITE_CARDINALITY / UNKNOWN_CARDINALITY.
  int64_t cardinality() const;
  /// A new pass (Python's iter(dataset)).
  Iterator make_iterator() const;
  /// Every element of one pass (as list(dataset.as_numpy_iterator())); ValueError for an infinite dataset.
  std::vector<Element> collect() const;
  /// The pipeline, e.g. "TensorSliceDataset -> MapDataset -> BatchDataset".
  std::string describe() const;

  explicit Dataset(std::shared_ptr<const detail::Node> node) : node_(std::move(node)) {}
  const std::shared_ptr<const detail::Node>& node() const { return node_; }

 private:
  std::shared_ptr<const detail::Node> node_;
};

/// One of make_csv_dataset's column_defaults, as tf.data's: a value whose C++ type gives the column's dtype as the
/// Python value's does (an int: int32, int64_t: int64, a floating value: float32 — write 0.0, not 0, for a float
/// column), of(float64, v) for any dtype, or a dtype alone (required(int64)): the column is required, an empty or
/// na_value field there is an error.
struct CsvDefault {
  DType dtype = float32;
  std::optional<double> value{};  ///< std::nullopt: required
  int64_t int_value = 0;          ///< an integer column's default, exactly
  CsvDefault(int v) : dtype(int32), value(v), int_value(v) {}
  CsvDefault(int64_t v) : dtype(int64), value(static_cast<double>(v)), int_value(v) {}
  CsvDefault(float v) : dtype(float32), value(v) {}
  CsvDefault(double v) : dtype(float32), value(v) {}
  static CsvDefault of(DType dtype, double v) { return CsvDefault(dtype, v); }
  static CsvDefault required(DType dtype) { return CsvDefault(dtype, std::nullopt); }

 private:
  CsvDefault(DType d, std::optional<double> v)
      : dtype(d), value(v), int_value(v && !is_floating(d) && *v > -9.2e18 && *v < 9.2e18 ? static_cast<int64_t>(*v) : 0) {}
};

/// A column of make_csv_dataset's select_columns: its name or its index (as tf.data, which takes either).
struct CsvColumn {
  std::string name{};
  int64_t index = -1;  ///< used when name is empty
  CsvColumn(const char* n) : name(n) {}
  CsvColumn(std::string n) : name(std::move(n)) {}
  CsvColumn(int i) : index(i) {}
  CsvColumn(int64_t i) : index(i) {}
};

/// make_csv_dataset's arguments (tf.data.experimental.make_csv_dataset), with its defaults. Columns are numeric
/// (Osprey's tensors hold no text: a text field is an error). Without column_defaults each column's dtype comes
/// from its values in the first num_rows_for_inference rows, as tf.data infers it: int32, else int64, else float32,
/// else float64 (a value beyond float32's range), each the narrowest that holds every value; missing fields (empty,
/// or na_value) are 0 then. With column_defaults (one per column, or per selected column with select_columns) the
/// defaults give the dtypes and the rows are not read ahead.
struct CsvOptions {
  int64_t batch_size = 32;
  std::vector<std::string> column_names{};  ///< default: the header line's
  std::string label_name{};                 ///< this column becomes the label; empty: elements are features only
  /// The columns in the elements (names or indices; the label among them); empty: every column.
  std::vector<CsvColumn> select_columns{};
  std::vector<CsvDefault> column_defaults{};
  char field_delim = ',';
  /// true: RFC 4180 quoting ("a ""b""", fields spanning lines); false: '"' is an ordinary character.
  bool use_quote_delim = true;
  std::string na_value{};  ///< a field that is missing, as an empty one is
  bool header = true;
  int64_t num_epochs = -1;  ///< -1: repeat for ever, as tf.data
  bool shuffle = true;  ///< the files' order each pass, then the rows through the buffer
  int64_t shuffle_buffer_size = 10000;
  std::optional<uint64_t> shuffle_seed{};
  bool drop_remainder = false;
  /// The rows (of the files in turn) the column types come from without column_defaults; std::nullopt: every row.
  /// A later value the type does not hold (a fraction in an int32 column) is a ValueError when the pass reaches it.
  std::optional<int64_t> num_rows_for_inference = 100;
  /// Files read at once, each parsed on its own thread, their rows taken in turn (tf.data's order with
  /// sloppy=False; AUTOTUNE: one per core); 1: a file after the other.
  int64_t num_parallel_reads = 1;
  /// With num_parallel_reads > 1: rows come from whichever file has them parsed first (tf.data's sloppy; the
  /// order then varies from run to run).
  bool sloppy = false;
  /// "" (plain files), "GZIP" or "ZLIB": the files are inflated as they are read.
  std::string compression_type{};
  /// true: a malformed row (ragged, text, a value its column's type does not hold, a required field missing) is
  /// skipped, as tf.data's ignore_errors; a damaged compressed stream or an unreadable file still raises.
  bool ignore_errors = false;
};
/// Batches of (features by column name, label), or the feature map alone without a label_name, read from the
/// CSV files (paths or glob patterns). Making the dataset reads every file's header and the rows the types come
/// from; each pass reads the files a line at a time (files larger than memory stream through; a pipeline that
/// fits in memory keeps its rows with .cache(), as with tf.data). Malformed rows are ValueErrors naming the file,
/// line and column (or skipped, with ignore_errors): when the dataset is made for the rows read then, else when
/// the pass reaches them. Blank lines are skipped.
Dataset make_csv_dataset(const std::vector<std::string>& file_patterns, CsvOptions options = {});

/// tf.data.experimental.CsvDataset's arguments, with its defaults (header false here).
struct CsvDatasetOptions {
  std::string compression_type{};  ///< "", "GZIP" or "ZLIB"
  int64_t buffer_size = -1;        ///< tf.data's read buffer; accepted (positive, or -1), Osprey's is fixed
  bool header = false;             ///< skip each file's first line
  char field_delim = ',';
  bool use_quote_delim = true;
  std::string na_value{};
  /// The fields read, strictly increasing (record_defaults: one per selected field; later fields are ignored).
  std::vector<int64_t> select_cols{};
  /// Or the fields left out, strictly increasing (each record has record_defaults' count of fields more).
  std::vector<int64_t> exclude_cols{};
};
/// tf.data.experimental.CsvDataset: one element per record of the files (paths, in order), a tuple of scalars,
/// one per record_defaults entry, whose dtypes and defaults it gives (CsvDefault::required: the field must be
/// there). Records parse as make_csv_dataset's; a record with another count of fields is a ValueError naming the
/// file and line.
Dataset CsvDataset(const std::vector<std::string>& filenames, std::vector<CsvDefault> record_defaults,
                   CsvDatasetOptions options = {});

/// A NumPy .npy file (np.save): float32, float64, int32 and int64 as they are; bool and the smaller integer
/// types widened to int32, uint32 to int64, float16 to float32; both byte orders, C or Fortran order. Object
/// arrays (pickles) are refused.
Tensor load_npy(const std::string& path);
/// Writes a .npy file NumPy reads (np.load).
void save_npy(const std::string& path, const Tensor& t);
/// The arrays of a .npz file (np.savez, np.savez_compressed) by name.
std::map<std::string, Tensor> load_npz(const std::string& path);

}  // namespace osprey::data
