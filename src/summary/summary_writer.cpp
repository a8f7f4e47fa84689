// tf.summary's file writer: Event protocol buffers (proto/tensorboard_event.proto) framed as TFRecords.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/logging.h"
#include "osprey/errors.h"
#include "osprey/summary.h"
#include "summary/record_io.h"
#include "proto/tensorboard_event.pb.h"

namespace osprey::summary {

namespace pb = tensorboard::pb;

bool available() { return true; }

namespace {

double wall_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Data classes of SummaryMetadata (TensorBoard's summary.proto): how TensorBoard's data provider lists a series.
constexpr int kDataClassScalar = 1;
constexpr int kDataClassTensor = 2;

std::atomic<int64_t> g_writer_count{0};

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

[[noreturn]] void throw_io(const std::string& what, const std::string& path, int err) {
  const std::string reason = std::strerror(err);
  if (err == EACCES || err == EPERM || err == EROFS)
    throw PermissionDeniedError(fmt::format("{} '{}': {} (choose a log_dir this process may write)", what, path, reason));
  if (err == ENOENT || err == ENOTDIR)
    throw NotFoundError(fmt::format("{} '{}': {}", what, path, reason));
  throw InternalError(fmt::format("{} '{}': {}", what, path, reason));
}

}  // namespace

struct SummaryWriter::Impl {
  std::string path;
  WriterOptions options;
  std::FILE* file = nullptr;
  std::string pending;  // framed records not yet written
  int queued = 0;
  double last_flush = wall_time_now();
  // Scalars are kept as values until the queue is written out, then encoded together: a training step's writes
  // cost a copy of a few numbers, and the encoding runs as one warm loop every max_queue records.
  struct Deferred {
    int64_t step = 0;
    double wall_time = 0;
    std::vector<std::pair<std::string, float>> values;  // full tags
  };
  std::vector<Deferred> deferred;
  std::size_t deferred_count = 0;
  pb::Event scalar;  // the scalars' event, reused: only tags, step, time and values change
  // Tags whose metadata this file already holds: TensorBoard (and tf.summary's readers) take a tag's plugin from its
  // first record, so later records of a scalar leave it out (half of a scalar record's bytes and encoding).
  std::unordered_set<std::string> described;

  void check_open() const {
    if (!file) throw FailedPreconditionError(fmt::format("SummaryWriter: '{}' is closed", path));
  }

  void frame(const pb::Event& event) {
    const std::size_t size = event.ByteSizeLong();
    const std::size_t at = detail::begin_record(pending, size);
    event.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(pending.data() + at));
    detail::end_record(pending, at, size);
  }

  void count(double now) {
    ++queued;
    if (queued >= options.max_queue || (now - last_flush) * 1000.0 >= static_cast<double>(options.flush_millis))
      write_out();
  }

  void add(const pb::Event& event) {
    check_open();
    encode_deferred();  // records keep the order they were written in
    frame(event);
    count(event.wall_time());
  }

  void defer(const std::map<std::string, double>& values, int64_t step, const std::string& prefix) {
    check_open();
    if (deferred_count == deferred.size()) deferred.emplace_back();
    Deferred& d = deferred[deferred_count++];
    d.step = step;
    d.wall_time = wall_time_now();
    d.values.resize(values.size());  // the slots keep their strings' storage from earlier records
    std::size_t i = 0;
    for (const auto& [name, v] : values) {
      auto& slot = d.values[i++];
      slot.first.assign(prefix);
      slot.first.append(name);
      slot.second = static_cast<float>(v);
    }
    count(d.wall_time);
  }

  void encode_deferred() {
    auto* summary = scalar.mutable_summary();
    for (std::size_t r = 0; r < deferred_count; ++r) {
      const Deferred& d = deferred[r];
      const int n = static_cast<int>(d.values.size());
      while (summary->value_size() < n) {
        auto* tensor = summary->add_value()->mutable_tensor();
        tensor->set_dtype(pb::DT_FLOAT);
        tensor->mutable_tensor_shape();
        tensor->add_float_val(0.0f);
      }
      while (summary->value_size() > n) summary->mutable_value()->RemoveLast();
      scalar.set_wall_time(d.wall_time);
      scalar.set_step(d.step);
      for (int i = 0; i < n; ++i) {
        auto* value = summary->mutable_value(i);
        const auto& [tag, v] = d.values[static_cast<std::size_t>(i)];
        value->set_tag(tag);
        value->mutable_tensor()->set_float_val(0, v);
        if (described.insert(tag).second) {  // the tag's first record in this file
          auto* meta = value->mutable_metadata();
          meta->mutable_plugin_data()->set_plugin_name("scalars");
          meta->set_data_class(kDataClassScalar);
        } else if (value->has_metadata()) {
          value->clear_metadata();
        }
      }
      frame(scalar);
    }
    deferred_count = 0;
  }

  void write_out() {
    encode_deferred();
    if (!pending.empty()) {
      if (std::fwrite(pending.data(), 1, pending.size(), file) != pending.size() || std::fflush(file) != 0)
        throw_io("SummaryWriter: cannot write the event file", path, errno);
      pending.clear();
    }
    queued = 0;
    last_flush = wall_time_now();
  }

  pb::Summary::Value* new_value(pb::Event& event, const std::string& tag, int64_t step, const std::string& plugin,
                                int data_class) {
    event.set_wall_time(wall_time_now());
    event.set_step(step);
    auto* value = event.mutable_summary()->add_value();
    value->set_tag(tag);
    auto* meta = value->mutable_metadata();
    meta->mutable_plugin_data()->set_plugin_name(plugin);
    if (data_class) meta->set_data_class(data_class);
    return value;
  }
};

SummaryWriter::SummaryWriter(const std::string& logdir, WriterOptions options) : impl_(std::make_unique<Impl>()) {
  if (logdir.empty()) throw ValueError("SummaryWriter: logdir is empty (give the folder to write the run into)");
  if (options.max_queue < 1) throw ValueError(fmt::format("SummaryWriter: max_queue must be >= 1, got {}", options.max_queue));
  if (options.flush_millis < 0)
    throw ValueError(fmt::format("SummaryWriter: flush_millis must be >= 0, got {}", options.flush_millis));
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) throw_io("SummaryWriter: cannot create the log folder", logdir, ec.value());
  if (!std::filesystem::is_directory(logdir, ec))
    throw NotFoundError(fmt::format("SummaryWriter: '{}' exists and is not a folder", logdir));
  const double now = wall_time_now();
  impl_->options = std::move(options);
  impl_->path = (std::filesystem::path(logdir) /
                 fmt::format("events.out.tfevents.{:010d}.{}.{}.{}{}", static_cast<int64_t>(now), host_name(),
                             static_cast<long>(getpid()), g_writer_count.fetch_add(1), impl_->options.filename_suffix))
                    .string();
  // "x": a new file only (never appends to, or follows a link planted at, an existing name).
  impl_->file = std::fopen(impl_->path.c_str(), "wbx");
  if (!impl_->file) throw_io("SummaryWriter: cannot create the event file", impl_->path, errno);
  pb::Event first;
  first.set_wall_time(std::floor(now));
  first.set_file_version("brain.Event:2");
  first.mutable_source_metadata()->set_writer("osprey");
  impl_->add(first);
  impl_->write_out();  // the file is an event file from its first moment
}

SummaryWriter::~SummaryWriter() {
  try {
    close();
  } catch (const std::exception& e) {
    osprey::log::warning(fmt::format("SummaryWriter: closing '{}' failed: {}", impl_->path, e.what()));
  }
}

void SummaryWriter::scalar(const std::string& tag, double value, int64_t step) {
  scalars({{tag, value}}, step);
}

void SummaryWriter::scalars(const std::map<std::string, double>& values, int64_t step, const std::string& prefix) {
  if (!values.empty()) impl_->defer(values, step, prefix);
}

void SummaryWriter::histogram(const std::string& tag, const Tensor& values, int64_t step, int buckets) {
  if (buckets < 0) throw ValueError(fmt::format("histogram '{}': buckets must be >= 0, got {}", tag, buckets));
  std::vector<double> data;
  if (values.dtype() == DType::float32) {  // read as it is (a device's tensor: no cast on the device)
    const std::vector<float> f = values.to_vector<float>();
    data.assign(f.begin(), f.end());
  } else {
    data = values.to_vector<double>();
  }
  const std::vector<double> rows = histogram_buckets(data, buckets);
  pb::Event event;
  auto* tensor = impl_->new_value(event, tag, step, "histograms", kDataClassTensor)->mutable_tensor();
  tensor->set_dtype(pb::DT_DOUBLE);
  tensor->mutable_tensor_shape()->add_dim()->set_size(buckets);
  tensor->mutable_tensor_shape()->add_dim()->set_size(3);
  std::string content(rows.size() * sizeof(double), '\0');
  std::memcpy(content.data(), rows.data(), content.size());  // little-endian hosts (x86-64, aarch64)
  tensor->set_tensor_content(std::move(content));
  impl_->add(event);
}

void SummaryWriter::write_string(const std::string& tag, const std::string& value, int64_t step,
                                 const std::string& plugin, const std::string& plugin_content) {
  pb::Event event;
  auto* v = impl_->new_value(event, tag, step, plugin, plugin == "text" ? kDataClassTensor : 0);
  if (!plugin_content.empty()) v->mutable_metadata()->mutable_plugin_data()->set_content(plugin_content);
  auto* tensor = v->mutable_tensor();
  tensor->set_dtype(pb::DT_STRING);
  tensor->mutable_tensor_shape();
  tensor->add_string_val(value);
  impl_->add(event);
}

void SummaryWriter::text(const std::string& tag, const std::string& value, int64_t step) {
  write_string(tag, value, step, "text");
}

void SummaryWriter::flush() {
  impl_->check_open();
  impl_->write_out();
}

void SummaryWriter::close() {
  if (!impl_->file) return;
  std::FILE* f = impl_->file;
  try {
    impl_->write_out();
  } catch (...) {
    impl_->file = nullptr;
    std::fclose(f);
    throw;
  }
  impl_->file = nullptr;
  if (std::fclose(f) != 0) throw_io("SummaryWriter: cannot close the event file", impl_->path, errno);
}

const std::string& SummaryWriter::path() const { return impl_->path; }

}  // namespace osprey::summary
