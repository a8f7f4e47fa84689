// The transformations with state across passes: shuffle() (its seeds and passes) and cache() (in memory or in a
// file). The cache file: "OSPREYDSCACHE001", the element count (u64), the elements (a tag per node: tensor with
// dtype, rank, dims and bytes; tuple or map with a count, map keys with a length), "END!"; little-endian. A reader
// checks every count and size against the bytes left before allocating, and nesting against a depth limit.
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/logging.h"
#include "data/pipeline.h"
#include "osprey/errors.h"
#include "osprey/random.h"

namespace osprey::data::detail {

namespace {

class ShuffleNode : public Node {
 public:
  ShuffleNode(std::shared_ptr<const Node> input, int64_t buffer, std::optional<uint64_t> seed, bool reshuffle)
      : input_(std::move(input)), buffer_(buffer), seed_(seed), reshuffle_(reshuffle) {
    if (!seed_ && !reshuffle_) fixed_ = random::next_seed_and_stream();  // one order, drawn now, for every pass
  }
  std::unique_ptr<IteratorImpl> iterate() const override {
    std::pair<uint64_t, uint64_t> key;
    if (seed_) key = {*seed_, reshuffle_ ? passes_.fetch_add(1) : 0};
    else key = reshuffle_ ? random::next_seed_and_stream() : fixed_;
    struct It : IteratorImpl {
      std::unique_ptr<IteratorImpl> in;
      random::Philox rng;
      std::vector<Element> buffer;
      int64_t size;
      bool input_done = false;
      It(std::unique_ptr<IteratorImpl> i, std::pair<uint64_t, uint64_t> k, int64_t n)
          : in(std::move(i)), rng(k.first, k.second), size(n) {}
      std::optional<Element> next() override {
        while (!input_done && static_cast<int64_t>(buffer.size()) < size) {
          auto e = in->next();
          if (!e) {
            input_done = true;
            break;
          }
          buffer.push_back(std::move(*e));
        }
        if (buffer.empty()) return std::nullopt;
        const uint64_t r = (static_cast<uint64_t>(rng.next_u32()) << 32) | rng.next_u32();
        const std::size_t i = static_cast<std::size_t>(r % buffer.size());
        Element out = std::move(buffer[i]);
        if (i + 1 != buffer.size()) buffer[i] = std::move(buffer.back());
        buffer.pop_back();
        return out;
      }
    };
    return std::make_unique<It>(input_->iterate(), key, buffer_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return fmt::format("ShuffleDataset({})", buffer_); }
  const Node* input() const override { return input_.get(); }

 private:
  std::shared_ptr<const Node> input_;
  int64_t buffer_;
  std::optional<uint64_t> seed_;
  bool reshuffle_;
  std::pair<uint64_t, uint64_t> fixed_{};
  mutable std::atomic<uint64_t> passes_{0};
};

// ---- the cache file ----
constexpr char kMagic[] = "OSPREYDSCACHE001";
constexpr std::size_t kMagicLen = 16;
constexpr int kMaxDepth = 32;
constexpr int kMaxRank = 16;

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void write_element(std::string& out, const Element& e) {
  switch (e.kind()) {
    case Element::Kind::tensor: {
      const Tensor t = on_host(e.tensor());
      put<uint8_t>(out, 0);
      put<uint8_t>(out, static_cast<uint8_t>(t.dtype()));
      put<uint8_t>(out, static_cast<uint8_t>(t.shape().rank()));
      for (int64_t d : t.shape().dims()) put<int64_t>(out, d);
      out.append(static_cast<const char*>(t.raw_data()), static_cast<std::size_t>(t.nbytes()));
      return;
    }
    case Element::Kind::tuple:
    case Element::Kind::map: {
      const bool map = e.kind() == Element::Kind::map;
      put<uint8_t>(out, map ? 2 : 1);
      put<uint32_t>(out, static_cast<uint32_t>(e.size()));
      for (int64_t i = 0; i < e.size(); ++i) {
        if (map) {
          const auto& k = e.keys()[static_cast<std::size_t>(i)];
          put<uint32_t>(out, static_cast<uint32_t>(k.size()));
          out += k;
        }
        write_element(out, e.items()[static_cast<std::size_t>(i)]);
      }
      return;
    }
  }
}

// Reads a cache file as a stream, one element at a time: every count and size is checked against the bytes left
// in the file before anything is allocated. check_all() walks the whole file without reading the tensors' bytes.
class CacheReader {
 public:
  explicit CacheReader(std::string path) : path_(std::move(path)) {
    std::error_code ec;
    size_ = std::filesystem::file_size(path_, ec);
    in_.open(path_, std::ios::binary);
    if (ec || !in_) throw PermissionDeniedError(fmt::format("cache: cannot read '{}'", path_));
    char magic[kMagicLen];
    if (size_ < kMagicLen + 12 || (read(magic, kMagicLen), std::memcmp(magic, kMagic, kMagicLen) != 0)) {
      throw bad("it does not start with Osprey's cache header (not a cache file, or from another version)");
    }
    count_ = get<uint64_t>();
    // Every element takes at least 2 bytes: a count larger than the file allows is damage, not an allocation.
    if (count_ > (size_ - at_) / 2) throw bad(fmt::format("it claims {} elements in {} bytes", count_, size_));
  }

  /// The next element; none after the last, once the end marker is where the count says.
  std::optional<Element> next() {
    if (read_ == count_) {
      check_end();
      return std::nullopt;
    }
    ++read_;
    return element(0, true);
  }

  void check_all() {
    while (read_ < count_) {
      ++read_;
      element(0, false);
    }
    check_end();
  }

 private:
  ValueError bad(const std::string& why) const {
    return ValueError(fmt::format("cache: '{}' is not a valid cache file: {} (at byte {}). Delete it to rebuild the "
                                  "cache.",
                                  path_, why, at_));
  }
  void need(uint64_t n) const {
    if (n > size_ - at_) throw bad(fmt::format("it is truncated ({} bytes needed, {} left)", n, size_ - at_));
  }
  void read(void* dst, uint64_t n) {
    need(n);
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in_.gcount()) != n) throw bad("it changed while being read");
    at_ += n;
  }
  void skip(uint64_t n) {
    need(n);
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    if (!in_) throw bad("it changed while being read");
    at_ += n;
  }
  template <typename T>
  T get() {
    T v;
    read(&v, sizeof(T));
    return v;
  }
  void check_end() {
    if (ended_) return;
    char end[4];
    if (size_ - at_ != 4 || (read(end, 4), std::memcmp(end, "END!", 4) != 0)) {
      throw bad("it does not end where its count says");
    }
    ended_ = true;
  }
  // The element at the read position; with !keep its tensors are skipped (empty tensors in their place).
  Element element(int depth, bool keep) {
    if (depth > kMaxDepth) throw bad(fmt::format("elements nest deeper than {} levels", kMaxDepth));
    const auto tag = get<uint8_t>();
    if (tag == 0) {
      const auto dt = get<uint8_t>();
      const auto rank = get<uint8_t>();
      if (dt > static_cast<uint8_t>(DType::int64)) throw bad(fmt::format("unknown dtype code {}", dt));
      if (rank > kMaxRank) throw bad(fmt::format("rank {} is over {}", rank, kMaxRank));
      std::vector<int64_t> dims;
      uint64_t bytes = dtype_size(static_cast<DType>(dt));
      for (int i = 0; i < rank; ++i) {
        const auto d = get<int64_t>();
        if (d < 0) throw bad(fmt::format("a negative dimension {}", d));
        if (d > 0 && bytes > (size_ - at_) / static_cast<uint64_t>(d)) throw bad("a tensor larger than the file");
        bytes *= static_cast<uint64_t>(d);
        dims.push_back(d);
      }
      need(bytes);
      if (!keep) {
        skip(bytes);
        return Element(Tensor());
      }
      Tensor t = Tensor::empty(Shape(dims), static_cast<DType>(dt), &host());
      if (bytes) read(t.raw_data(), bytes);
      return Element(std::move(t));
    }
    if (tag != 1 && tag != 2) throw bad(fmt::format("unknown element tag {}", tag));
    const auto count = get<uint32_t>();
    if (count > size_ - at_) throw bad(fmt::format("a structure of {} items in {} bytes", count, size_ - at_));
    std::vector<Element> items;
    std::map<std::string, Element> named;
    for (uint32_t i = 0; i < count; ++i) {
      if (tag == 2) {
        const auto len = get<uint32_t>();
        need(len);
        std::string key(len, '\0');
        read(key.data(), len);
        Element item = element(depth + 1, keep);
        if (!named.emplace(key, std::move(item)).second) throw bad(fmt::format("key '{}' appears twice", key));
      } else {
        items.push_back(element(depth + 1, keep));
      }
    }
    return tag == 2 ? Element::named(std::move(named)) : Element::tuple(std::move(items));
  }

  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0, at_ = 0, count_ = 0, read_ = 0;
  bool ended_ = false;
};

constexpr char kPartialPassWarning[] =
    "The calling iterator did not fully read the dataset being cached. In order to avoid unexpected truncation of the "
    "dataset, the partially cached contents of the dataset will be discarded.";

// A memory cache keeps its first complete pass as elements; a file cache streams every pass to or from its file
// and keeps nothing in memory (tf.data's file cache: a dataset larger than memory is what it is for).
class CacheNode : public Node {
 public:
  CacheNode(std::shared_ptr<const Node> input, std::string filename)
      : input_(std::move(input)), filename_(std::move(filename)) {}

  std::unique_ptr<IteratorImpl> iterate() const override {
    return filename_.empty() ? iterate_memory() : iterate_file();
  }

  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return filename_.empty() ? "CacheDataset(memory)" : "CacheDataset(file)"; }
  const Node* input() const override { return input_.get(); }

 private:
  std::unique_ptr<IteratorImpl> iterate_memory() const {
    std::shared_ptr<const std::vector<Element>> cached;
    {
      std::lock_guard lk(mu_);
      cached = cached_;
    }
    if (cached) {
      struct Replay : IteratorImpl {
        std::shared_ptr<const std::vector<Element>> all;
        std::size_t i = 0;
        std::optional<Element> next() override {
          if (i >= all->size()) return std::nullopt;
          return (*all)[i++];
        }
      };
      auto it = std::make_unique<Replay>();
      it->all = std::move(cached);
      return it;
    }
    struct Fill : IteratorImpl {
      const CacheNode& node;
      std::unique_ptr<IteratorImpl> in;
      std::vector<Element> seen;
      bool done = false;
      Fill(const CacheNode& n, std::unique_ptr<IteratorImpl> i) : node(n), in(std::move(i)) {}
      ~Fill() override {
        if (!done && !seen.empty()) log::warning(kPartialPassWarning);
      }
      std::optional<Element> next() override {
        if (done) return std::nullopt;
        auto e = in->next();
        if (e) {
          seen.push_back(*e);
          return e;
        }
        done = true;
        std::lock_guard lk(node.mu_);
        if (!node.cached_) node.cached_ = std::make_shared<const std::vector<Element>>(std::move(seen));
        return std::nullopt;
      }
    };
    return std::make_unique<Fill>(*this, input_->iterate());
  }

  std::unique_ptr<IteratorImpl> iterate_file() const {
    if (std::filesystem::exists(filename_)) {
      // An existing file (another pipeline's, another process's) is checked whole before its first pass.
      if (!checked_.load()) {
        CacheReader(filename_).check_all();
        checked_ = true;
      }
      struct Stream : IteratorImpl {
        CacheReader reader;
        explicit Stream(const std::string& path) : reader(path) {}
        std::optional<Element> next() override { return reader.next(); }
      };
      return std::make_unique<Stream>(filename_);
    }
    // The first pass: each element appended to a temporary file as it passes, the file named at the end of the
    // pass (its count written then); a pass that stops early or fails leaves no file.
    struct Fill : IteratorImpl {
      const CacheNode& node;
      std::unique_ptr<IteratorImpl> in;
      core::AtomicFileWriter file;
      std::string pending;
      uint64_t count = 0;
      bool done = false;
      Fill(const CacheNode& n, std::unique_ptr<IteratorImpl> i)
          : node(n), in(std::move(i)), file(n.filename_, "cache"), pending(kMagic, kMagicLen) {
        put<uint64_t>(pending, 0);
      }
      ~Fill() override {
        if (!done && count > 0) log::warning(kPartialPassWarning);
      }
      std::optional<Element> next() override {
        if (done) return std::nullopt;
        auto e = in->next();
        if (e) {
          write_element(pending, *e);
          ++count;
          if (pending.size() >= kFlushBytes) {
            file.write(pending);
            pending.clear();
          }
          return e;
        }
        pending += "END!";
        file.write(pending);
        std::string n;
        put<uint64_t>(n, count);
        file.write_at(kMagicLen, n);
        file.commit();
        done = true;
        node.checked_ = true;
        return std::nullopt;
      }
    };
    return std::make_unique<Fill>(*this, input_->iterate());
  }

  static constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

  std::shared_ptr<const Node> input_;
  std::string filename_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const std::vector<Element>> cached_;  // the memory cache's pass
  mutable std::atomic<bool> checked_{false};                    // the file cache's file checked (or written) here
};

}  // namespace

std::shared_ptr<const Node> make_shuffle(std::shared_ptr<const Node> input, int64_t buffer,
                                         std::optional<uint64_t> seed, bool reshuffle) {
  return std::make_shared<ShuffleNode>(std::move(input), buffer, seed, reshuffle);
}

std::shared_ptr<const Node> make_cache(std::shared_ptr<const Node> input, const std::string& filename) {
  if (!filename.empty()) {
    const auto dir = std::filesystem::path(filename).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir)) {
      throw NotFoundError(fmt::format("cache: the directory of '{}' does not exist; create it first", filename));
    }
  }
  return std::make_shared<CacheNode>(std::move(input), filename);
}

}  // namespace osprey::data::detail
