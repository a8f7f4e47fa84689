// The ZIP container of Keras's .keras files: entries stored uncompressed (Keras writes them so: ZIP_STORED).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace osprey::keras::detail {

struct ZipEntry {
  std::string name;
  std::string data;
};

/// Writes `entries` stored (no compression) to `path`, atomically (a temporary file next to it, then renamed).
/// ValueError for an entry over 4 GiB (no ZIP64); NotFoundError when the file cannot be created.
void write_zip(const std::string& path, const std::vector<ZipEntry>& entries);

/// Reads every entry of a ZIP file. NotFoundError when it does not exist; ValueError when it is not a ZIP file,
/// is truncated, fails its CRC check or holds compressed entries (Keras never writes those).
std::map<std::string, std::string> read_zip(const std::string& path);

}  // namespace osprey::keras::detail
