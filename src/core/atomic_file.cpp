// write_file_atomically and AtomicFileWriter (atomic_file.h).
#include "core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "osprey/errors.h"

namespace osprey::core {

namespace fs = std::filesystem;

namespace {

std::atomic<unsigned> g_counter{0};

[[noreturn]] void fail(const std::string& what, const std::string& action, const std::string& at, int err) {
  const std::string msg = fmt::format("{}: {} '{}' failed: {}", what, action, at, std::strerror(err));
  if (err == ENOENT || err == ENOTDIR) throw NotFoundError(msg);
  if (err == EACCES || err == EPERM || err == EROFS) throw PermissionDeniedError(msg);
  throw InternalError(msg);
}

void write_all(int fd, std::string_view data, const std::string& what, const std::string& at) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(what, "writing", at, errno);
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Temporaries ".<name>.osprey-<pid>-<n>" of processes that no longer run (killed between naming and renaming).
void remove_stale(const fs::path& dir, const std::string& name) {
  const std::string prefix = "." + name + ".osprey-";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    if (!entry.starts_with(prefix)) continue;
    const std::string rest = entry.substr(prefix.size());
    const auto dash = rest.find('-');
    if (dash == std::string::npos) continue;
    const std::string digits = rest.substr(0, dash);
    char* end_ptr = nullptr;
    const long pid = std::strtol(digits.c_str(), &end_ptr, 10);
    if (pid <= 0 || (end_ptr && *end_ptr)) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // that process still runs
    std::error_code rm;
    fs::remove(it->path(), rm);
  }
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(const std::string& path, std::string what) : path_(path), what_(std::move(what)) {
  const fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  const std::string name = target.filename().string();
  if (name.empty()) throw ValueError(fmt::format("{}: '{}' names a directory, not a file", what_, path));
  remove_stale(dir, name);
  dir_ = dir.string();
  temp_ = (dir / fmt::format(".{}.osprey-{}-{}", name, static_cast<long>(::getpid()), g_counter.fetch_add(1))).string();

  // An unnamed file first: a kill before it is linked leaves nothing.
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
  unnamed_ = fd_ >= 0;
  if (!unnamed_) {
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) fail(what_, "creating a file in", dir.string(), errno);
    fd_ = ::open(temp_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(what_, "creating", temp_, errno);
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && (!unnamed_ || linked_)) {
    std::error_code ec;
    fs::remove(temp_, ec);
  }
}

void AtomicFileWriter::write(std::string_view data) {
  write_all(fd_, data, what_, unnamed_ ? dir_ : temp_);
}

void AtomicFileWriter::write_at(uint64_t offset, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(what_, "writing", unnamed_ ? dir_ : temp_, errno);
    }
    data.remove_prefix(static_cast<std::size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (unnamed_) {
    const std::string proc = fmt::format("/proc/self/fd/{}", fd_);
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, temp_.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      fail(what_, "naming", temp_, errno);
    }
    linked_ = true;
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail(what_, "renaming to", path_, errno);
  committed_ = true;
}

void write_file_atomically(const std::string& path, std::string_view data, const std::string& what) {
  AtomicFileWriter file(path, what);
  file.write(data);
  file.commit();
}

}  // namespace osprey::core
