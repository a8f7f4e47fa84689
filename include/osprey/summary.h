// tf.summary: TensorBoard event files. A SummaryWriter appends scalars, histograms and text to one
// "events.out.tfevents.*" file in TensorBoard's own format (TFRecord framing with masked CRC32C around Event
// protocol buffers); read_events() reads such files back (ours or TensorFlow's), checking every record.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "osprey/tensor.h"

namespace osprey::summary {

/// Whether this build writes and reads event files (it needs protobuf and ISA-L at build time; without them
/// every call below raises FailedPreconditionError saying so).
bool available();

struct WriterOptions {
  /// Events kept in memory before they are written out (tf.summary.create_file_writer's max_queue).
  int max_queue = 10;
  /// At most this long between a write and its reaching the file (flush_millis).
  int64_t flush_millis = 120000;
  /// Appended to the file name (TensorFlow 2's writers use ".v2").
  std::string filename_suffix = ".v2";
};

/// tf.summary.create_file_writer(logdir): creates `logdir` (and its parents) and a new event file in it named as
/// TensorFlow names them ("events.out.tfevents.<seconds>.<host>.<pid>.<n><suffix>"), whose first record is the
/// file version. PermissionDeniedError / NotFoundError (with the path and the system's reason) when the folder
/// cannot be made or written. Values are tensor summaries tagged with TensorBoard's plugin names, as TensorFlow 2
/// writes them (a scalar's plugin metadata in its tag's first record of the file only, which is where TensorBoard
/// reads it); steps are the caller's. Scalars are queued as values and encoded when the queue is written out.
/// Not thread-safe: one thread writes through a writer.
class SummaryWriter {
 public:
  explicit SummaryWriter(const std::string& logdir, WriterOptions options = {});
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  /// tf.summary.scalar: a float32 scalar (plugin "scalars").
  void scalar(const std::string& tag, double value, int64_t step);
  /// Several scalars of one step in one event ("<prefix><name>" each): what scalar() writes, in a single record.
  void scalars(const std::map<std::string, double>& values, int64_t step, const std::string& prefix = "");
  /// tf.summary.histogram: `buckets` rows of [left edge, right edge, count] (float64, plugin "histograms") made
  /// from all of `values`' elements as TensorBoard's summary_v2 makes them; an empty tensor gives rows of zeros.
  void histogram(const std::string& tag, const Tensor& values, int64_t step, int buckets = 30);
  /// tf.summary.text: a string scalar (plugin "text"), shown as Markdown.
  void text(const std::string& tag, const std::string& value, int64_t step);
  /// A string scalar under another plugin (Keras's model graph: plugin "graph_keras_model", content "1").
  void write_string(const std::string& tag, const std::string& value, int64_t step, const std::string& plugin,
                    const std::string& plugin_content = "");
  /// Writes the queued events to the file (the file stays open).
  void flush();
  /// Flushes and closes; later writes raise FailedPreconditionError. The destructor closes too (errors there are
  /// logged, not thrown).
  void close();
  /// The event file's path.
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The buckets tf.summary.histogram makes of `values` (flattened, as float64): `buckets` rows of
/// [left, right, count], row-major.
std::vector<double> histogram_buckets(const std::vector<double>& values, int buckets = 30);

/// One value of one event as read back.
struct Value {
  std::string tag;
  std::string plugin;          ///< metadata's plugin name ("scalars", "histograms", ...): the record's, else (as
                               ///< TensorBoard reads it) the tag's first in the file; "" when none
  std::string plugin_content;  ///< metadata's plugin content bytes
  enum class Kind { simple_value, tensor, histogram } kind = Kind::tensor;
  std::string dtype;           ///< "float32", "float64", "int32", "int64", "string", "bool", ...
  std::vector<int64_t> shape;  ///< tensor shape ([] for a scalar)
  std::vector<double> numbers; ///< numeric elements, row-major (a TF1 histogram: its bucket counts)
  std::vector<std::string> strings;  ///< string elements
};

/// One record of an event file.
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;  ///< set on the first record ("brain.Event:2")
  std::vector<Value> values;
};

struct ReadOptions {
  /// Records larger than this are refused (ValueError) before anything is allocated.
  uint64_t max_record_bytes = uint64_t{256} << 20;
};

/// tf.compat.v1.train.summary_iterator: every event of one file, in order. A record whose length or CRC does not
/// match, a truncated record or a record that is not an Event is a ValueError naming the file, the record's index
/// and offset (a file still being written may end in a partial record: pass `allow_partial_tail` to stop there).
std::vector<Event> read_events(const std::string& path, const ReadOptions& options = {}, bool allow_partial_tail = false);

/// The event files of a run folder ("events.out.tfevents.*"), sorted by name (TensorBoard's order).
std::vector<std::string> event_files(const std::string& logdir);

}  // namespace osprey::summary
