// A text file read a line at a time through a bounded buffer, plain or inflated as it is read (GZIP or ZLIB, as
// tf.data's compression_type): the readers of data::make_csv_dataset. Private.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace osprey::data::detail {

enum class Compression { none, gzip, zlib };

/// "" (none), "GZIP" or "ZLIB"; ValueError naming `who` otherwise.
Compression compression_from(const std::string& type, const std::string& who);

class LineReader {
 public:
  /// Opens `path` (NotFoundError when it cannot); `who` starts every error ("make_csv_dataset"). A line longer
  /// than max_line bytes is a ValueError: an untrusted file is never read whole into memory.
  LineReader(std::string path, Compression compression, std::string who, std::size_t max_line);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  /// The next line without its '\n' (nor a '\r' before it); false at the end of the file. A damaged or truncated
  /// compressed stream is a ValueError naming the file.
  bool read_line(std::string& line);
  /// The lines read so far (the last one's number, counted from 1).
  int64_t line_no() const { return line_no_; }
  const std::string& path() const { return path_; }
  /// What reads the file (the start of its errors).
  const std::string& who() const { return who_; }

 private:
  struct Inflater;
  // Makes the next bytes of the file's text available in buf_[pos_, end_); false at its end.
  bool refill();

  std::string path_, who_;
  std::size_t max_line_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<Inflater> inflater_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  int64_t line_no_ = 0;
};

}  // namespace osprey::data::detail
