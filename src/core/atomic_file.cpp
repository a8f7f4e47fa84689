// write_file_atomically (atomic_file.h).
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

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

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

void write_file_atomically(const std::string& path, std::string_view data, const std::string& what) {
  const fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  const std::string name = target.filename().string();
  if (name.empty()) throw ValueError(fmt::format("{}: '{}' names a directory, not a file", what, path));
  remove_stale(dir, name);
  const std::string temp =
      (dir / fmt::format(".{}.osprey-{}-{}", name, static_cast<long>(::getpid()), g_counter.fetch_add(1))).string();

  // An unnamed file first: a kill before it is linked leaves nothing.
  int raw = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  const bool unnamed = raw >= 0;
  if (!unnamed) {
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) fail(what, "creating a file in", dir.string(), errno);
    raw = ::open(temp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (raw < 0) fail(what, "creating", temp, errno);
  }
  Fd fd(raw);
  try {
    write_all(fd.get(), data, what, unnamed ? dir.string() : temp);
    if (unnamed) {
      const std::string proc = fmt::format("/proc/self/fd/{}", fd.get());
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) != 0) {
        fail(what, "naming", temp, errno);
      }
    }
    if (::rename(temp.c_str(), path.c_str()) != 0) fail(what, "renaming to", path, errno);
  } catch (...) {
    std::error_code ec;
    fs::remove(temp, ec);
    throw;
  }
}

}  // namespace osprey::core
