// A minimal ZIP (PKWARE APPNOTE 6.3) reader and writer for stored entries: local headers, central directory,
// end-of-central-directory record; little-endian fields, CRC-32 (polynomial 0xEDB88320).
#include "keras/saving/zip_store.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#if OSPREY_WITH_ZLIB
#include <zlib.h>
#endif

#include "core/atomic_file.h"
#include "osprey/errors.h"

namespace osprey::keras::detail {

namespace {

// A raw deflate stream (ZIP method 8) inflated to exactly `size` bytes.
template <typename Bad>
std::string inflate_raw(const std::string& in, uint32_t size, Bad bad) {
#if OSPREY_WITH_ZLIB
  std::string out(size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw bad("zlib could not start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = size;
  const int rc = inflate(&z, Z_FINISH);
  const uLong produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != size) {
    throw bad(fmt::format("its deflate stream is damaged or does not inflate to its stated {} bytes", size));
  }
  return out;
#else
  (void)in;
  (void)size;
  throw bad("it is deflated, and this Osprey was built without zlib (Debian: zlib1g-dev)");
#endif
}

uint32_t crc32(const std::string& data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void put16(std::string& out, uint16_t v) {
  out += static_cast<char>(v & 0xFF);
  out += static_cast<char>(v >> 8);
}
void put32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint16_t get16(const std::string& s, std::size_t at) {
  return static_cast<uint16_t>(static_cast<unsigned char>(s[at]) | (static_cast<unsigned char>(s[at + 1]) << 8));
}
uint32_t get32(const std::string& s, std::size_t at) {
  return static_cast<uint32_t>(get16(s, at)) | (static_cast<uint32_t>(get16(s, at + 2)) << 16);
}

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint16_t kDosDate1980 = (1 << 5) | 1;  // 1980-01-01, 00:00:00 (what Python's zipfile writes for writestr)

}  // namespace

void write_zip(const std::string& path, const std::vector<ZipEntry>& entries) {
  std::string body, central;
  for (const auto& e : entries) {
    if (e.data.size() >= 0xFFFFFFFFu || body.size() >= 0xFFFFFFFFu) {
      throw ValueError(fmt::format("save: entry '{}' of '{}' is over 4 GiB ({} bytes); ZIP64 is not written", e.name,
                                   path, e.data.size()));
    }
    const uint32_t crc = crc32(e.data), size = static_cast<uint32_t>(e.data.size());
    const auto offset = static_cast<uint32_t>(body.size());
    const auto name_len = static_cast<uint16_t>(e.name.size());
    put32(body, kLocalSig);
    put16(body, 20);  // version needed: 2.0
    put16(body, 0);   // flags
    put16(body, 0);   // stored
    put16(body, 0);   // time
    put16(body, kDosDate1980);
    put32(body, crc);
    put32(body, size);
    put32(body, size);
    put16(body, name_len);
    put16(body, 0);  // extra
    body += e.name;
    body += e.data;

    put32(central, kCentralSig);
    put16(central, 0x0314);  // made by: Unix, 2.0
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, kDosDate1980);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    put16(central, name_len);
    put16(central, 0);  // extra
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0600u << 16);  // external attributes: rw-------, as zipfile.writestr
    put32(central, offset);
    central += e.name;
  }
  std::string end;
  put32(end, kEndSig);
  put16(end, 0);
  put16(end, 0);
  put16(end, static_cast<uint16_t>(entries.size()));
  put16(end, static_cast<uint16_t>(entries.size()));
  put32(end, static_cast<uint32_t>(central.size()));
  put32(end, static_cast<uint32_t>(body.size()));
  put16(end, 0);

  body += central;
  body += end;
  core::write_file_atomically(path, body, "save");
}

std::map<std::string, std::string> read_zip(const std::string& path, const ZipReadOptions& o) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFoundError(fmt::format("{}: cannot open '{}': {}", o.what, path, std::strerror(errno)));
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto bad = [&](const std::string& why) {
    return ValueError(fmt::format("{}: '{}' is not a valid {} file: {}", o.what, path, o.kind, why));
  };
  if (s.size() < 22) throw bad("too short");
  // The end record is the last 22 bytes plus an optional comment of up to 65535 bytes.
  std::size_t end = std::string::npos;
  for (std::size_t at = s.size() - 22;; --at) {
    if (get32(s, at) == kEndSig) {
      end = at;
      break;
    }
    if (at == 0 || s.size() - at > 22 + 65535) break;
  }
  if (end == std::string::npos) throw bad("no end-of-central-directory record");
  const uint16_t count = get16(s, end + 10);
  const uint32_t cd_size = get32(s, end + 12), cd_offset = get32(s, end + 16);
  if (static_cast<uint64_t>(cd_offset) + cd_size > end) throw bad("the central directory lies outside the file");
  std::map<std::string, std::string> out;
  std::size_t at = cd_offset;
  for (uint16_t i = 0; i < count; ++i) {
    if (at + 46 > end || get32(s, at) != kCentralSig) throw bad("a damaged central directory");
    const uint16_t method = get16(s, at + 10);
    const uint32_t crc = get32(s, at + 16), csize = get32(s, at + 20), usize = get32(s, at + 24);
    const uint16_t name_len = get16(s, at + 28), extra_len = get16(s, at + 30), comment_len = get16(s, at + 32);
    const uint32_t local = get32(s, at + 42);
    if (at + 46 + name_len > end) throw bad("a damaged central directory");
    const std::string name = s.substr(at + 46, name_len);
    at += 46u + name_len + extra_len + comment_len;
    const bool deflated = o.allow_deflate && method == 8;
    if (!deflated && (method != 0 || csize != usize)) {
      throw bad(fmt::format("entry '{}' is compressed (method {}); {} files store their entries uncompressed{}", name,
                            method, o.kind, o.allow_deflate ? " or deflated" : ""));
    }
    if (deflated && static_cast<uint64_t>(usize) > 1032ull * csize + 64) {
      throw bad(fmt::format("entry '{}' claims {} bytes from {} deflated bytes, more than deflate can give", name,
                            usize, csize));
    }
    if (static_cast<uint64_t>(local) + 30 > s.size() || get32(s, local) != kLocalSig) {
      throw bad(fmt::format("entry '{}' has no local header", name));
    }
    // The local header must say what the central directory says: a reader that trusts either one (Python's
    // zipfile, Keras) must see the same entry.
    // (With a data descriptor, flag bit 3, the local header's CRC and sizes are left 0 and come after the data.)
    const uint16_t local_name_len = get16(s, local + 26);
    const bool descriptor = (get16(s, local + 6) & 0x8) != 0;
    uint64_t local_csize = get32(s, local + 18), local_usize = get32(s, local + 22);
    if (local_csize == 0xFFFFFFFFu || local_usize == 0xFFFFFFFFu) {
      // ZIP64 sizes in the local header's extra field (id 1: the sizes that are 0xFFFFFFFF above, uncompressed
      // first), as Python's zipfile writes with force_zip64 (NumPy's savez does).
      const std::size_t extra_at = local + 30u + get16(s, local + 26), extra_end = extra_at + get16(s, local + 28);
      for (std::size_t e = extra_at; e + 4 <= extra_end && extra_end <= s.size();) {
        const uint16_t id = get16(s, e), len = get16(s, e + 2);
        if (id == 1) {
          std::size_t f = e + 4;
          auto take = [&](uint64_t& v) {
            if (v == 0xFFFFFFFFu && f + 8 <= e + 4 + len) {
              v = get32(s, f) | (static_cast<uint64_t>(get32(s, f + 4)) << 32);
              f += 8;
            }
          };
          take(local_usize);
          take(local_csize);
          break;
        }
        e += 4u + len;
      }
    }
    const bool sizes_agree =
        descriptor || (get32(s, local + 14) == crc && local_csize == csize && local_usize == usize);
    if (get16(s, local + 8) != method || !sizes_agree || local_name_len != name_len ||
        static_cast<uint64_t>(local) + 30 + local_name_len > s.size() || s.compare(local + 30, name_len, name) != 0) {
      throw bad(fmt::format("entry '{}': its local header disagrees with the central directory", name));
    }
    const std::size_t data_at = local + 30u + local_name_len + get16(s, local + 28);
    if (static_cast<uint64_t>(data_at) + csize > s.size()) throw bad(fmt::format("entry '{}' is truncated", name));
    std::string data = s.substr(data_at, csize);
    if (deflated) data = inflate_raw(data, usize, [&](const std::string& why) { return bad(fmt::format("entry '{}': {}", name, why)); });
    if (crc32(data) != crc) throw bad(fmt::format("entry '{}' fails its CRC-32 check", name));
    // Two entries of one name: Osprey would read one and Python's zipfile (Keras) the other.
    if (!out.emplace(name, std::move(data)).second) throw bad(fmt::format("entry '{}' appears twice", name));
  }
  return out;
}

}  // namespace osprey::keras::detail
