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

/// How read_zip names what it reads in its errors, and whether it inflates deflated entries (NumPy's
/// savez_compressed writes those; Keras never does, so .keras files refuse them).
struct ZipReadOptions {
  std::string what = "load_model";
  std::string kind = ".keras (ZIP)";
  bool allow_deflate = false;
};

/// Reads every entry of a ZIP file. NotFoundError when it does not exist; ValueError when it is not a ZIP file,
/// is truncated, fails its CRC check or holds compressed entries that are not allowed. A deflated entry may not
/// claim more than 1032 times its compressed size (deflate's limit), so a small file cannot make a large
/// allocation, and must inflate to exactly its stated size.
std::map<std::string, std::string> read_zip(const std::string& path, const ZipReadOptions& options = {});

}  // namespace osprey::keras::detail
