// Process-wide logging to stderr in TensorFlow's line format, filtered by OSPREY_CPP_MIN_LOG_LEVEL
// (TensorFlow's TF_CPP_MIN_LOG_LEVEL is accepted too): 0 all, 1 hides INFO, 2 hides WARNING, 3 hides ERROR.
#pragma once

#include <source_location>
#include <string>

namespace osprey::log {

enum class Severity { info = 0, warning = 1, error = 2 };

/// True when messages of this severity are printed. The level is read once, at the first call.
bool enabled(Severity severity);
/// Writes "YYYY-mm-dd HH:MM:SS.uuuuuu: I file.cpp:line] message" to stderr.
void write(Severity severity, const std::string& message,
           std::source_location where = std::source_location::current());

inline void info(const std::string& m, std::source_location w = std::source_location::current()) {
  write(Severity::info, m, w);
}
inline void warning(const std::string& m, std::source_location w = std::source_location::current()) {
  write(Severity::warning, m, w);
}
inline void error(const std::string& m, std::source_location w = std::source_location::current()) {
  write(Severity::error, m, w);
}

}  // namespace osprey::log
