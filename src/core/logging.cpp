#include "core/logging.h"

#include <sys/time.h>

#include <cstdio>
#include <ctime>
#include <mutex>

#include "core/env.h"

namespace osprey::log {

static int min_level() {
  static const int level = [] {
    auto v = env::get_first({"OSPREY_CPP_MIN_LOG_LEVEL", "TF_CPP_MIN_LOG_LEVEL"});
    if (!v || v->empty()) return 0;
    try {
      return std::stoi(*v);
    } catch (...) {
      return 0;
    }
  }();
  return level;
}

bool enabled(Severity severity) { return static_cast<int>(severity) >= min_level(); }

void write(Severity severity, const std::string& message, std::source_location where) {
  if (!enabled(severity)) return;
  static std::mutex mu;
  timeval tv{};
  gettimeofday(&tv, nullptr);
  std::tm tm{};
  localtime_r(&tv.tv_sec, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  std::string file = where.file_name();
  if (auto pos = file.rfind("/src/"); pos != std::string::npos) file = file.substr(pos + 5);
  const char letter = "IWE"[static_cast<int>(severity)];
  std::lock_guard lock(mu);
  std::fprintf(stderr, "%s.%06ld: %c %s:%u] %s\n", stamp, static_cast<long>(tv.tv_usec), letter, file.c_str(),
               where.line(), message.c_str());
  std::fflush(stderr);
}

}  // namespace osprey::log
