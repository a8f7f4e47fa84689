// The parts of tf.summary that need no protocol buffers: histogram bucketing and finding a run's event files.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "osprey/summary.h"

namespace osprey::summary {

std::vector<double> histogram_buckets(const std::vector<double>& values, int buckets) {
  if (buckets < 0) buckets = 0;
  std::vector<double> rows(static_cast<std::size_t>(buckets) * 3, 0.0);
  if (values.empty() || buckets == 0) return rows;
  double lo = values[0], hi = values[0];
  for (double v : values) {
    if (std::isnan(v)) continue;
    lo = std::isnan(lo) || v < lo ? v : lo;
    hi = std::isnan(hi) || v > hi ? v : hi;
  }
  const double range = hi - lo;
  if (range == 0) {  // one distinct value: every bucket's edges are it, the last bucket holds the count
    for (int b = 0; b < buckets; ++b) rows[b * 3] = rows[b * 3 + 1] = hi;
    rows[(buckets - 1) * 3 + 2] = static_cast<double>(values.size());
    return rows;
  }
  const double width = range / buckets;
  for (double v : values) {
    const double index = std::floor((v - lo) / width);
    if (std::isnan(index)) continue;  // TensorFlow's one_hot of NaN's index counts it nowhere
    const int b = index >= buckets - 1 ? buckets - 1 : static_cast<int>(index);  // the maximum: the last bucket
    rows[b * 3 + 2] += 1;
  }
  for (int b = 0; b < buckets; ++b) {  // tf.linspace(min, max, buckets + 1) with its last edge set to max
    rows[b * 3] = lo + b * width;
    rows[b * 3 + 1] = b + 1 == buckets ? hi : lo + (b + 1) * width;
  }
  return rows;
}

std::vector<std::string> event_files(const std::string& logdir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (std::filesystem::directory_iterator it(logdir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find("tfevents") != std::string::npos && it->is_regular_file(ec)) files.push_back(it->path().string());
  }
  if (ec) throw NotFoundError(fmt::format("event_files: cannot list '{}': {}", logdir, ec.message()));
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace osprey::summary
