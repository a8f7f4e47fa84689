// Reading event files back (tf.compat.v1.train.summary_iterator): every record's length and CRC checked before
// its payload is parsed; sizes checked before anything is allocated.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/summary.h"
#include "summary/record_io.h"
#include "proto/tensorboard_event.pb.h"

namespace osprey::summary {

namespace pb = tensorboard::pb;

namespace {

// Reads a regular file whole; a link is not followed (O_NOFOLLOW), sizes are checked before the buffer is made.
std::string read_regular_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) throw ValueError(fmt::format("read_events: '{}' is a symbolic link; links are not followed", path));
    if (err == EACCES || err == EPERM) throw PermissionDeniedError(fmt::format("read_events: '{}': {}", path, std::strerror(err)));
    throw NotFoundError(fmt::format("read_events: '{}': {}", path, std::strerror(err)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw ValueError(fmt::format("read_events: '{}' is not a regular file", path));
  constexpr off_t kMaxFile = off_t{64} << 30;
  if (st.st_size > kMaxFile)
    throw ResourceExhaustedError(fmt::format("read_events: '{}' is {} bytes, over the {} bytes this reader takes",
                                             path, st.st_size, kMaxFile));
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InternalError(fmt::format("read_events: reading '{}': {}", path, std::strerror(errno)));
    if (n == 0) break;  // the file shrank while being read: what was read is what there is
    got += static_cast<std::size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

const char* dtype_name(int dtype) {
  switch (dtype) {
    case pb::DT_FLOAT: return "float32";
    case pb::DT_DOUBLE: return "float64";
    case pb::DT_INT32: return "int32";
    case pb::DT_UINT8: return "uint8";
    case pb::DT_INT16: return "int16";
    case pb::DT_INT8: return "int8";
    case pb::DT_STRING: return "string";
    case pb::DT_INT64: return "int64";
    case pb::DT_BOOL: return "bool";
    default: return "unsupported";
  }
}

// A numeric tensor's elements: from tensor_content (little-endian T, its size checked against the shape), else
// from the typed repeated field.
template <typename T, typename Repeated>
void read_numbers(const pb::Tensor& t, const Repeated& typed, uint64_t elements, const std::string& where,
                  std::vector<double>& out) {
  const std::string& c = t.tensor_content();
  if (c.empty()) {
    out.assign(typed.begin(), typed.end());
    return;
  }
  if (c.size() != elements * sizeof(T))
    throw ValueError(fmt::format("read_events: {}: tensor_content holds {} bytes where its shape needs {} ({} x {})",
                                 where, c.size(), elements * sizeof(T), elements, sizeof(T)));
  out.reserve(elements);
  for (uint64_t i = 0; i < elements; ++i) {
    T v;
    std::memcpy(&v, c.data() + i * sizeof(T), sizeof(T));
    out.push_back(static_cast<double>(v));
  }
}

Value read_tensor(const pb::Tensor& t, const std::string& where) {
  Value v;
  v.kind = Value::Kind::tensor;
  v.dtype = dtype_name(t.dtype());
  uint64_t elements = 1;
  for (const auto& d : t.tensor_shape().dim()) {
    if (d.size() < 0 || (d.size() > 0 && elements > (uint64_t{1} << 40) / static_cast<uint64_t>(d.size())))
      throw ValueError(fmt::format("read_events: {}: tensor dimension {} is not a valid size", where, d.size()));
    elements *= static_cast<uint64_t>(d.size());
    v.shape.push_back(d.size());
  }
  switch (t.dtype()) {
    case pb::DT_FLOAT: read_numbers<float>(t, t.float_val(), elements, where, v.numbers); break;
    case pb::DT_DOUBLE: read_numbers<double>(t, t.double_val(), elements, where, v.numbers); break;
    case pb::DT_INT32: read_numbers<int32_t>(t, t.int_val(), elements, where, v.numbers); break;
    case pb::DT_INT16: read_numbers<int16_t>(t, t.int_val(), elements, where, v.numbers); break;
    case pb::DT_INT8: read_numbers<int8_t>(t, t.int_val(), elements, where, v.numbers); break;
    case pb::DT_UINT8: read_numbers<uint8_t>(t, t.int_val(), elements, where, v.numbers); break;
    case pb::DT_INT64: read_numbers<int64_t>(t, t.int64_val(), elements, where, v.numbers); break;
    case pb::DT_BOOL: read_numbers<uint8_t>(t, t.bool_val(), elements, where, v.numbers); break;
    case pb::DT_STRING:
      v.strings.assign(t.string_val().begin(), t.string_val().end());
      break;
    default:
      break;  // kept with dtype "unsupported" and no elements
  }
  return v;
}

}  // namespace

std::vector<Event> read_events(const std::string& path, const ReadOptions& options, bool allow_partial_tail) {
  const std::string bytes = read_regular_file(path);
  detail::RecordReader records(bytes, path, options.max_record_bytes);
  std::vector<Event> events;
  std::map<std::string, std::pair<std::string, std::string>> plugins;  // tag -> its metadata's plugin and content
  std::string_view payload;
  pb::Event event;
  while (records.next(payload, allow_partial_tail)) {
    const std::string where = fmt::format("'{}' record {} (byte offset {})", path, records.index() - 1, records.offset());
    if (!event.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
      throw ValueError(fmt::format("read_events: {} is not an Event protocol buffer", where));
    Event out;
    out.wall_time = event.wall_time();
    out.step = event.step();
    if (event.what_case() == pb::Event::kFileVersion) out.file_version = event.file_version();
    if (event.what_case() == pb::Event::kSummary) {
      for (const auto& value : event.summary().value()) {
        Value v;
        switch (value.value_case()) {
          case pb::Summary::Value::kTensor:
            v = read_tensor(value.tensor(), where + " tag '" + value.tag() + "'");
            break;
          case pb::Summary::Value::kSimpleValue:
            v.kind = Value::Kind::simple_value;
            v.dtype = "float32";
            v.numbers = {value.simple_value()};
            break;
          case pb::Summary::Value::kHisto:
            v.kind = Value::Kind::histogram;
            v.dtype = "float64";
            v.numbers.assign(value.histo().bucket().begin(), value.histo().bucket().end());
            v.shape = {static_cast<int64_t>(v.numbers.size())};
            break;
          default:
            continue;  // images, audio: not read
        }
        v.tag = value.tag();
        if (value.has_metadata()) {
          auto& first = plugins[v.tag];
          if (first.first.empty()) first = {value.metadata().plugin_data().plugin_name(),
                                            value.metadata().plugin_data().content()};
          v.plugin = value.metadata().plugin_data().plugin_name();
          v.plugin_content = value.metadata().plugin_data().content();
        } else if (auto it = plugins.find(v.tag); it != plugins.end()) {  // as TensorBoard: the tag's first record's
          v.plugin = it->second.first;
          v.plugin_content = it->second.second;
        }
        out.values.push_back(std::move(v));
      }
    }
    events.push_back(std::move(out));
  }
  return events;
}

}  // namespace osprey::summary
