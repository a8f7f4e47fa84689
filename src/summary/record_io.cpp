#include "summary/record_io.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "osprey/errors.h"

namespace osprey::summary::detail {

uint32_t crc32c(std::string_view data) {
  // ISA-L's iSCSI CRC is CRC32C (Castagnoli, RFC 3720), with the instruction set chosen at run time; it takes the
  // register (initially all ones) and returns it, so long inputs go in pieces and the final XOR is ours.
  unsigned int crc = 0xFFFFFFFFu;
  auto* p = reinterpret_cast<unsigned char*>(const_cast<char*>(data.data()));
  for (std::size_t left = data.size(); left > 0;) {
    const int n = static_cast<int>(std::min<std::size_t>(left, INT_MAX / 2));
    crc = crc32_iscsi(p, n, crc);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return ~crc;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

static uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

std::size_t begin_record(std::string& out, std::size_t size) {
  const std::size_t start = out.size();
  put_le(out, size, 8);
  put_le(out, masked_crc32c(std::string_view(out).substr(start, 8)), 4);
  out.resize(out.size() + size);
  return start + 12;
}

void end_record(std::string& out, std::size_t payload_offset, std::size_t size) {
  put_le(out, masked_crc32c(std::string_view(out).substr(payload_offset, size)), 4);
}

void append_record(std::string& out, std::string_view payload) {
  const std::size_t at = begin_record(out, payload.size());
  std::copy(payload.begin(), payload.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
  end_record(out, at, payload.size());
}

bool RecordReader::next(std::string_view& payload, bool allow_partial_tail) {
  if (pos_ == bytes_.size()) return false;
  record_offset_ = pos_;
  const uint64_t left = bytes_.size() - pos_;
  auto damaged = [&](const std::string& why) {
    return ValueError(fmt::format("read_events: '{}' is damaged at record {} (byte offset {}): {}", path_, index_,
                                  record_offset_, why));
  };
  if (left < 12) {
    if (allow_partial_tail) return false;
    throw damaged(fmt::format("the file ends {} bytes into a record header of 12 bytes", left));
  }
  const char* p = bytes_.data() + pos_;
  const uint64_t length = get_le(p, 8);
  if (get_le(p + 8, 4) != masked_crc32c(std::string_view(p, 8)))
    throw damaged("the length's CRC32C does not match (not an event file, or a damaged one)");
  if (length > max_)
    throw damaged(fmt::format("a record of {} bytes is larger than the limit of {} bytes (ReadOptions::max_record_bytes)",
                              length, max_));
  if (length > left - 12 || left - 12 - length < 4) {
    if (allow_partial_tail) return false;
    throw damaged(fmt::format("the file ends inside a record of {} bytes ({} bytes left after its header)", length,
                              left - 12));
  }
  payload = std::string_view(p + 12, length);
  if (get_le(p + 12 + length, 4) != masked_crc32c(payload)) throw damaged("the record's CRC32C does not match");
  pos_ += 12 + length + 4;
  ++index_;
  return true;
}

}  // namespace osprey::summary::detail
