// LineReader: lines from a plain, GZIP or ZLIB file through fixed buffers (zlib's streaming inflate: a file of any
// size, or one that inflates to far more than it holds, takes the same memory).
#include "data/line_reader.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "osprey/errors.h"

#if OSPREY_WITH_ZLIB
#include <zlib.h>
#endif

namespace osprey::data::detail {

namespace {
constexpr std::size_t kReadBytes = std::size_t{1} << 18;
}  // namespace

Compression compression_from(const std::string& type, const std::string& who) {
  if (type.empty()) return Compression::none;
  if (type == "GZIP") return Compression::gzip;
  if (type == "ZLIB") return Compression::zlib;
  throw ValueError(fmt::format("{}: unknown compression_type '{}'; expected \"GZIP\", \"ZLIB\" or \"\" (none)", who, type));
}

#if OSPREY_WITH_ZLIB
struct LineReader::Inflater {
  z_stream z{};
  std::vector<unsigned char> in = std::vector<unsigned char>(kReadBytes);
  bool gzip = false, ended = false;
  ~Inflater() { inflateEnd(&z); }
};
#else
struct LineReader::Inflater {};
#endif

LineReader::LineReader(std::string path, Compression compression, std::string who, std::size_t max_line)
    : path_(std::move(path)), who_(std::move(who)), max_line_(max_line), buf_(kReadBytes) {
#if !OSPREY_WITH_ZLIB
  if (compression != Compression::none) {
    throw ValueError(fmt::format("{}: '{}' is compressed, and this Osprey was built without zlib (install zlib1g-dev "
                                 "and rebuild)",
                                 who_, path_));
  }
#endif
  file_ = std::fopen(path_.c_str(), "rb");
  if (!file_) throw NotFoundError(fmt::format("{}: cannot open '{}': {}", who_, path_, std::strerror(errno)));
#if OSPREY_WITH_ZLIB
  if (compression != Compression::none) {
    inflater_ = std::make_unique<Inflater>();
    inflater_->gzip = compression == Compression::gzip;
    // 15 bits of window; +16: a gzip header and trailer instead of zlib's.
    if (inflateInit2(&inflater_->z, inflater_->gzip ? MAX_WBITS + 16 : MAX_WBITS) != Z_OK) {
      std::fclose(file_);
      throw ValueError(fmt::format("{}: zlib could not start inflating '{}'", who_, path_));
    }
  }
#endif
}

LineReader::~LineReader() {
  if (file_) std::fclose(file_);
}

bool LineReader::refill() {
  pos_ = end_ = 0;
  if (!inflater_) {
    end_ = std::fread(buf_.data(), 1, buf_.size(), file_);
    if (end_ == 0 && std::ferror(file_)) {
      throw ValueError(fmt::format("{}: reading '{}' failed: {}", who_, path_, std::strerror(errno)));
    }
    return end_ > 0;
  }
#if OSPREY_WITH_ZLIB
  Inflater& f = *inflater_;
  const char* kind = f.gzip ? "GZIP" : "ZLIB";
  z_stream& z = f.z;
  while (end_ == 0) {
    if (z.avail_in == 0) {
      const std::size_t n = std::fread(f.in.data(), 1, f.in.size(), file_);
      if (n == 0) {
        if (std::ferror(file_)) throw ValueError(fmt::format("{}: reading '{}' failed: {}", who_, path_, std::strerror(errno)));
        if (f.ended) return false;
        throw ValueError(fmt::format("{}: '{}' ends inside its {} stream (the file is truncated; compression_type "
                                     "'{}')",
                                     who_, path_, kind, kind));
      }
      z.next_in = f.in.data();
      z.avail_in = static_cast<uInt>(n);
    }
    if (f.ended) {
      // Bytes after a gzip member: the next member (gzip's concatenation); after a zlib stream: ignored.
      if (!f.gzip) return false;
      inflateReset(&z);
      f.ended = false;
    }
    z.next_out = reinterpret_cast<Bytef*>(buf_.data());
    z.avail_out = static_cast<uInt>(buf_.size());
    const int rc = inflate(&z, Z_NO_FLUSH);
    end_ = buf_.size() - z.avail_out;
    if (rc == Z_STREAM_END) {
      f.ended = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw ValueError(fmt::format("{}: '{}' is not a valid {} stream ({}; compression_type '{}')", who_, path_, kind,
                                   z.msg ? z.msg : "zlib error " + std::to_string(rc), kind));
    }
  }
  return true;
#else
  return false;
#endif
}

bool LineReader::read_line(std::string& line) {
  line.clear();
  bool any = false;
  for (;;) {
    if (pos_ == end_ && !refill()) break;
    any = true;
    const char* start = buf_.data() + pos_;
    const auto* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_));
    const std::size_t n = nl ? static_cast<std::size_t>(nl - start) : end_ - pos_;
    if (line.size() + n > max_line_) {
      throw ValueError(fmt::format("{}: '{}' line {} is longer than {} bytes; is it a CSV file?", who_, path_,
                                   line_no_ + 1, max_line_));
    }
    line.append(start, n);
    pos_ += n;
    if (nl) {
      ++pos_;
      break;
    }
  }
  if (!any) return false;
  ++line_no_;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

}  // namespace osprey::data::detail
