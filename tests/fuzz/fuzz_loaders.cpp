// A mutation fuzzer for Osprey's loaders of untrusted files (issue 16): .weights.h5, .keras, .weights.osp and JSON
// configs, images, and the input pipeline's files ("data": NumPy .npy/.npz, data::Dataset cache files and CSV). It mutates the seed files (bit flips, special bytes, overwritten integers, truncation, repeated chunks)
// and loads each result; a loader must answer with an Osprey error or succeed -- any other exception, a crash or a
// sanitizer report is a finding. ctest runs each kind for OSPREY_FUZZ_SECONDS (default 5; CI's sanitizer run: 60)
// under ASan+UBSan there.
//   fuzz_loaders <h5|keras|osp|json|img|data> <work dir> <seed files...>
// The input being loaded is always <work dir>/input.<ext>: after a crash it is the crashing file.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "osprey/data.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/image.h"
#include "osprey/summary.h"
#if OSPREY_HAVE_TENSORBOARD
#include "summary/record_io.h"
#endif

using namespace osprey;
namespace fs = std::filesystem;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

std::string mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](std::size_t n) { return n ? static_cast<std::size_t>(rng() % n) : 0; };
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    switch (rng() % 6) {
      case 0: s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8)); break;
      case 1: {
        static const unsigned char special[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe};
        s[pick(s.size())] = static_cast<char>(special[rng() % sizeof special]);
        break;
      }
      case 2: {  // an integer field: a random or extreme 4- or 8-byte value
        const std::size_t width = rng() % 2 ? 4 : 8;
        if (s.size() < width) break;
        const std::size_t at = pick(s.size() - width + 1);
        uint64_t v = rng() % 3 == 0 ? ~uint64_t{0} : rng() % 2 ? (uint64_t{1} << (rng() % 63)) : rng();
        for (std::size_t i = 0; i < width; ++i, v >>= 8) s[at + i] = static_cast<char>(v & 0xff);
        break;
      }
      case 3: s.resize(pick(s.size())); break;  // truncated
      case 4: {                                   // a chunk repeated in place
        const std::size_t at = pick(s.size()), len = 1 + pick(std::min<std::size_t>(64, s.size() - at));
        s.insert(at, s.substr(at, len));
        break;
      }
      default: {  // JSON-ish: a digit, bracket or quote somewhere
        static const char chars[] = "0123456789[]{}\",:-.e";
        s[pick(s.size())] = chars[rng() % (sizeof chars - 1)];
        break;
      }
    }
  }
  return s;
}

// The model every weights file of the seed corpus belongs to: Sequential([Input((3,)), Dense(2)]), compiled so
// that optimizer state is read too.
keras::Sequential target_model() {
  keras::Sequential m({keras::layers::Input({3}), keras::layers::Dense(2)});
  m.compile({.optimizer = "adam", .loss = "mse"});
  return m;
}

}  // namespace

// Recomputes the CRCs of every whole record in an event file's bytes, so that a mutation reaches the records'
// lengths and payloads instead of stopping at the first checksum.
static void reseal_records([[maybe_unused]] std::string& bytes) {
#if OSPREY_HAVE_TENSORBOARD
  std::size_t at = 0;
  while (at + 12 <= bytes.size()) {
    uint64_t length = 0;
    std::memcpy(&length, bytes.data() + at, 8);
    const uint32_t head = summary::detail::masked_crc32c(std::string_view(bytes.data() + at, 8));
    std::memcpy(bytes.data() + at + 8, &head, 4);
    if (length > bytes.size() - at - 12 || bytes.size() - at - 12 - length < 4) return;
    const uint32_t body = summary::detail::masked_crc32c(std::string_view(bytes.data() + at + 12, length));
    std::memcpy(bytes.data() + at + 12 + length, &body, 4);
    at += 12 + length + 4;
  }
#endif
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: fuzz_loaders <h5|keras|osp|json|img|data|events> <work dir> [seed files...]\n";
    return 2;
  }
  const std::string kind = argv[1];
  const std::string ext = kind == "h5"    ? ".weights.h5"
                          : kind == "keras" ? ".keras"
                          : kind == "osp"   ? ".weights.osp"
                          : kind == "img"   ? ".png"
                          : kind == "data"  ? ".npy"
                          : kind == "events" ? ".tfevents"
                                            : ".json";
  fs::create_directories(argv[2]);
  const std::string input = (fs::path(argv[2]) / ("input" + ext)).string();
  std::vector<std::string> corpus, corpus_ext;  // "data": each seed's kind by its extension (.npy, .npz, .cache)
  for (int i = 3; i < argc; ++i) {
    corpus.push_back(read(argv[i]));
    corpus_ext.push_back(fs::path(argv[i]).extension().string());
  }
  const char* env = std::getenv("OSPREY_FUZZ_SECONDS");
  const double seconds = env ? std::atof(env) : 5.0;
  // The seed is printed first, so that a crash (which leaves no finding file behind) can be replayed with
  // OSPREY_FUZZ_SEED.
  const char* seed_env = std::getenv("OSPREY_FUZZ_SEED");
  const auto fuzz_seed = seed_env ? std::strtoull(seed_env, nullptr, 10)
                                  : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::cout << "fuzz_loaders " << kind << ": seed " << fuzz_seed << std::endl;
  std::mt19937_64 rng(fuzz_seed);
  auto model = target_model();
  {  // the target model's own files join the seeds (trained once: optimizer state included)
    const Tensor x = Tensor::ones(Shape({4, 3})), y = Tensor::zeros(Shape({4, 2}));
    (void)model.train_on_batch(x, y);
    const std::string seed = (fs::path(argv[2]) / ("seed" + ext)).string();
    if (kind == "json") {
      corpus.push_back(model.to_json());
    } else if (kind == "events") {  // a TensorBoard event file of every kind of value the writer makes
      if (!summary::available()) {
        std::cout << "fuzz_loaders events: skipped (built without TensorBoard event files)\n";
        return 0;
      }
      const std::string dir = (fs::path(argv[2]) / "seed_events").string();
      fs::remove_all(dir);
      std::string path;
      {
        summary::SummaryWriter w(dir);
        path = w.path();
        w.scalars({{"loss", 0.5}, {"accuracy", 0.75}}, 1, "epoch_");
        w.histogram("w/histogram", Tensor::ones(Shape({4, 3})), 1);
        w.text("note", "hello", 2);
        w.write_string("keras", model.to_json(), 0, "graph_keras_model", "1");
      }
      corpus.push_back(read(path));
    } else if (kind == "img") {  // images: the seed files (PNG, JPEG, BMP and GIF) are the corpus
    } else if (kind == "data") {  // a cache file of nested elements joins the NumPy seeds
      const std::string cache = (fs::path(argv[2]) / "seed.cache").string();
      fs::remove(cache);
      const Tensor a = Tensor::ones(Shape({4, 3})), b = Tensor::zeros(Shape({4}));
      (void)data::Dataset::from_tensor_slices(data::Element{data::Element::named({{"a", a}}), b}).cache(cache).collect();
      corpus.push_back(read(cache));
      corpus_ext.push_back(".cache");
      // and a CSV file (make_csv_dataset: quoted fields, an empty one, a fraction, a label).
      corpus.push_back("age,\"fare, in $\",survived\n22,7.25,0\n38,,1\r\n\"26\",8.05,1\n35,53.1,1\n");
      corpus_ext.push_back(".csv");
    } else {
      if (kind == "keras") model.save(seed);
      else model.save_weights(seed);
      corpus.push_back(read(seed));
    }
  }
  const auto start = std::chrono::steady_clock::now();
  uint64_t runs = 0, accepted = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    const std::size_t pick = rng() % corpus.size();
    std::string data = mutate(corpus[pick], rng);
    if (kind == "events" && rng() % 2) reseal_records(data);  // past the CRCs, into the protocol buffers
    const std::string path = kind == "data" ? (fs::path(argv[2]) / ("input" + corpus_ext[pick])).string() : input;
    write(path, data);
    ++runs;
    try {
      if (kind == "data") {
        if (corpus_ext[pick] == ".npz") (void)data::load_npz(path);
        else if (corpus_ext[pick] == ".cache") (void)data::Dataset::range(1).cache(path).collect();
        else if (corpus_ext[pick] == ".csv" || corpus_ext[pick] == ".gz") {
          // Inferred types or column_defaults; with or without ignore_errors; a gzip seed inflated as it is read.
          data::CsvOptions o{.batch_size = 2, .num_epochs = 1, .shuffle = rng() % 2 == 0, .num_rows_for_inference = 2,
                             .ignore_errors = rng() % 2 == 0};
          if (corpus_ext[pick] == ".gz") o.compression_type = "GZIP";
          else if (rng() % 2) o.label_name = "survived";
          if (rng() % 2) o.column_defaults = {0, -1.0, 0};
          (void)data::make_csv_dataset({path}, o).collect();
        }
        else (void)data::load_npy(path);
      } else if (kind == "events") {
        (void)summary::read_events(path, {}, rng() % 2 == 0);
      } else if (kind == "json") {
        (void)keras::models::model_from_json(data);
      } else if (kind == "img") {
        const std::string mode = rng() % 3 == 0 ? "rgba" : rng() % 2 ? "rgb" : "grayscale";
        if (rng() % 2) {  // Pillow's decoding (load_img) or TensorFlow's (the dataset's)
          (void)keras::utils::load_img(input, mode, std::pair<int64_t, int64_t>{8, 8});
        } else {
          (void)keras::utils::image_dataset_from_directory(
              argv[2], {.labels = "", .label_mode = "", .color_mode = mode, .image_size = {8, 8}, .shuffle = false,
                        .verbose = false})->load_all();
        }
      } else if (kind == "keras") {
        (void)keras::models::load_model(input);
      } else {
        model.load_weights(input);
      }
      ++accepted;
    } catch (const Error&) {
      // the answer a bad file must get
    } catch (const std::exception& e) {
      const std::string kept = (fs::path(argv[2]) / ("finding" + (kind == "data" ? corpus_ext[pick] : ext))).string();
      write(kept, data);
      std::cerr << "fuzz_loaders " << kind << ": a " << typeid(e).name() << " that is not an Osprey error: "
                << e.what() << " (input kept as " << kept << ")\n";
      return 1;
    }
  }
  std::cout << "fuzz_loaders " << kind << ": " << runs << " inputs in " << seconds << " s, " << accepted
            << " loaded, no finding\n";
  return 0;
}
