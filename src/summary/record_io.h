// TFRecord framing, as TensorFlow's record writer lays it out: a little-endian uint64 length, the masked CRC32C of
// those 8 bytes, the payload, and the masked CRC32C of the payload.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace osprey::summary::detail {

/// CRC32C (Castagnoli) of `data` (Intel ISA-L's crc32_iscsi).
uint32_t crc32c(std::string_view data);
/// TensorFlow's masked form: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(std::string_view data);
/// Appends one framed record holding `payload` to `out`.
void append_record(std::string& out, std::string_view payload);
/// The same in two halves, for a payload serialised in place: begin_record() appends the header of a record of
/// `size` bytes and room for them, returning where the payload goes; end_record() appends the payload's CRC.
std::size_t begin_record(std::string& out, std::size_t size);
void end_record(std::string& out, std::size_t payload_offset, std::size_t size);

/// Reads framed records from a file's bytes, checking lengths and CRCs before using them.
class RecordReader {
 public:
  RecordReader(std::string_view bytes, std::string path, uint64_t max_record_bytes)
      : bytes_(bytes), path_(std::move(path)), max_(max_record_bytes) {}
  /// The next record's payload (a view into the bytes); false at the end. A damaged record is a ValueError with
  /// the file, the record's index and its offset; a partial last record is one too unless `allow_partial_tail`,
  /// where it ends the reading.
  bool next(std::string_view& payload, bool allow_partial_tail);
  uint64_t index() const { return index_; }
  uint64_t offset() const { return record_offset_; }

 private:
  std::string_view bytes_;
  std::string path_;
  uint64_t max_;
  uint64_t pos_ = 0, index_ = 0, record_offset_ = 0;
};

}  // namespace osprey::summary::detail
