// make_csv_dataset's read rate (issue 20's CSV reader): one pass over a CSV file of `rows` rows x 5 columns (four
// float32 features, an int32 label), plain and gzip, in order and shuffled (the files' order, then a 10,000-row
// buffer), batch 256. Writes the files first (bench/tf_csv.py reads the same ones with tf.data). Prints one JSON
// line per case: the best of three passes, rows per second, and the process's peak RSS.
// Usage: csv_read [rows] [dir]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <osprey/osprey.h>

namespace data = osprey::data;

int main(int argc, char** argv) {
  const long rows = argc > 1 ? std::atol(argv[1]) : 1000000;
  const std::string dir = argc > 2 ? argv[2] : "/tmp/osprey_csv_bench";
  std::filesystem::create_directories(dir);
  const std::string plain = dir + "/rows.csv";
  {
    std::ofstream out(plain);
    out << "a,b,c,d,label\n";
    unsigned s = 12345;
    auto next = [&] { return (s = s * 1103515245u + 12345u) >> 8; };
    char line[128];
    for (long i = 0; i < rows; ++i) {
      std::snprintf(line, sizeof line, "%.4f,%.4f,%.4f,%.4f,%u\n", (next() % 100000) / 1e4, (next() % 100000) / 1e4,
                    (next() % 100000) / 1e4, (next() % 100000) / 1e4, next() % 10);
      out << line;
    }
  }
  if (std::system(("gzip -kf -6 '" + plain + "'").c_str()) != 0) return 1;
  for (const bool gzip : {false, true}) {
    for (const bool shuffle : {false, true}) {
      data::CsvOptions o{.batch_size = 256, .label_name = "label", .num_epochs = 1, .shuffle = shuffle,
                         .shuffle_seed = 1, .compression_type = gzip ? "GZIP" : ""};
      const auto d = data::make_csv_dataset({gzip ? plain + ".gz" : plain}, o);
      double best = 1e9;
      long seen = 0;
      for (int r = 0; r < 3; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        long n = 0;
        auto it = d.make_iterator();
        while (auto b = it.next()) n += (*b)[1].tensor().shape()[0];
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        seen = n;
      }
      rusage u{};
      getrusage(RUSAGE_SELF, &u);
      std::printf("{\"bench\": \"csv_read\", \"framework\": \"osprey\", \"rows\": %ld, \"compression\": \"%s\", "
                  "\"shuffle\": %s, \"pass_s\": %.3f, \"rows_per_s\": %.0f, \"peak_rss_mib\": %.1f}\n",
                  seen, gzip ? "GZIP" : "", shuffle ? "true" : "false", best, seen / best, u.ru_maxrss / 1024.0);
      std::fflush(stdout);
    }
  }
  return 0;
}
