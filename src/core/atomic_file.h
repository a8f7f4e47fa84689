// Writing a file so that readers see the old one or the new one, and so that a process killed at any moment
// leaves no temporary file behind (SECURITY.md, issue 16 item 9).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace osprey::core {

/// Replaces `path` with `data`: written to an unnamed file in the same directory (O_TMPFILE), given a name only
/// once complete, then renamed over `path`. Where the filesystem has no O_TMPFILE, a named temporary
/// (".<name>.osprey-<pid>-<n>") is used instead; either way, temporaries left by killed processes are removed by
/// the next write to the same path. `what` begins error messages ("save_weights"). NotFoundError when the
/// directory does not exist, PermissionDeniedError when it is not writable, InternalError for I/O failures.
void write_file_atomically(const std::string& path, std::string_view data, const std::string& what);

/// The same file written piece by piece, for data too large to hold whole (data::Dataset's file cache): the
/// temporary is made at construction, commit() names it `path`; destroyed uncommitted (a pass that stopped early,
/// an exception), it is removed and `path` is left as it was. Errors as write_file_atomically's.
class AtomicFileWriter {
 public:
  AtomicFileWriter(const std::string& path, std::string what);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  /// Appends `data`.
  void write(std::string_view data);
  /// Overwrites bytes already written from `offset` on (a count known only at the end).
  void write_at(uint64_t offset, std::string_view data);
  /// Gives the file its name: `path` now holds everything written.
  void commit();

 private:
  std::string path_, what_, dir_, temp_;
  int fd_ = -1;
  bool unnamed_ = false, linked_ = false, committed_ = false;
};

}  // namespace osprey::core
