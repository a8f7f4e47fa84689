// Writing a file so that readers see the old one or the new one, and so that a process killed at any moment
// leaves no temporary file behind (SECURITY.md, issue 16 item 9).
#pragma once

#include <string>
#include <string_view>

namespace osprey::core {

/// Replaces `path` with `data`: written to an unnamed file in the same directory (O_TMPFILE), given a name only
/// once complete, then renamed over `path`. Where the filesystem has no O_TMPFILE, a named temporary
/// (".<name>.osprey-<pid>-<n>") is used instead; either way, temporaries left by killed processes are removed by
/// the next write to the same path. `what` begins error messages ("save_weights"). NotFoundError when the
/// directory does not exist, PermissionDeniedError when it is not writable, InternalError for I/O failures.
void write_file_atomically(const std::string& path, std::string_view data, const std::string& what);

}  // namespace osprey::core
