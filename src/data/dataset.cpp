// data::Dataset: its sources (tensor slices, range, generators, zip), the Iterator, and the public methods that
// check their arguments and make the transformations' nodes (transforms.cpp, parallel.cpp, shuffle_cache.cpp).
#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "data/pipeline.h"
#include "osprey/errors.h"

namespace osprey::data {

using detail::IteratorImpl;
using detail::Node;

namespace detail {

int64_t autotuned_threads() { return std::max<int64_t>(1, std::thread::hardware_concurrency()); }

namespace {

// A node whose iterator is a lambda over its input's iterator.
class SliceNode : public Node {
 public:
  SliceNode(Element e, int64_t n) : element_(std::move(e)), n_(n) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      const SliceNode& node;
      std::vector<Tensor> flat;
      int64_t i = 0;
      explicit It(const SliceNode& n) : node(n), flat(n.element_.flatten()) {}
      std::optional<Element> next() override {
        if (i >= node.n_) return std::nullopt;
        std::vector<Tensor> row;
        row.reserve(flat.size());
        for (const auto& t : flat) row.push_back(row_of(t, i));
        ++i;
        return node.element_.with_tensors(row);
      }
      bool gives_rows() const override { return true; }
      std::optional<Element> next_rows(int64_t n) override {
        if (i >= node.n_) return std::nullopt;
        const int64_t e = std::min(node.n_, i + n);
        std::vector<Tensor> rows;
        rows.reserve(flat.size());
        for (const auto& t : flat) rows.push_back(t.slice_rows(i, e));
        i = e;
        return node.element_.with_tensors(rows);
      }
    };
    return std::make_unique<It>(*this);
  }
  int64_t cardinality() const override { return n_; }
  std::string name() const override { return "TensorSliceDataset"; }

 private:
  Element element_;
  int64_t n_;
};

class TensorsNode : public Node {
 public:
  explicit TensorsNode(Element e) : element_(std::move(e)) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      const Element& e;
      bool done = false;
      explicit It(const Element& el) : e(el) {}
      std::optional<Element> next() override {
        if (done) return std::nullopt;
        done = true;
        return e;
      }
    };
    return std::make_unique<It>(element_);
  }
  int64_t cardinality() const override { return 1; }
  std::string name() const override { return "TensorDataset"; }

 private:
  Element element_;
};

class RangeNode : public Node {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step) : start_(start), stop_(stop), step_(step) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      int64_t at, stop, step;
      std::optional<Element> next() override {
        if (step > 0 ? at >= stop : at <= stop) return std::nullopt;
        Tensor t = Tensor::empty(Shape{}, int64, &host());
        *t.data<int64_t>() = at;
        at += step;
        return Element(std::move(t));
      }
    };
    auto it = std::make_unique<It>();
    it->at = start_;
    it->stop = stop_;
    it->step = step_;
    return it;
  }
  int64_t cardinality() const override {
    if (step_ > 0) return stop_ > start_ ? (stop_ - start_ + step_ - 1) / step_ : 0;
    return start_ > stop_ ? (start_ - stop_ - step_ - 1) / -step_ : 0;
  }
  std::string name() const override { return "RangeDataset"; }

 private:
  int64_t start_, stop_, step_;
};

class GeneratorNode : public Node {
 public:
  explicit GeneratorNode(std::function<Dataset::GeneratorFn()> make) : make_(std::move(make)) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      Dataset::GeneratorFn gen;
      int64_t index = 0;
      std::optional<Element> next() override {
        std::optional<Element> e;
        try {
          e = gen();
        } catch (...) {
          rethrow_with_context(std::current_exception(),
                               fmt::format("from_generator: the generator failed at element {}: ", index));
        }
        ++index;
        return e;
      }
    };
    auto it = std::make_unique<It>();
    it->gen = make_();
    if (!it->gen) throw ValueError("from_generator: the function returned an empty generator (std::function)");
    return it;
  }
  int64_t cardinality() const override { return UNKNOWN_CARDINALITY; }
  std::string name() const override { return "FlatMapDataset(generator)"; }

 private:
  std::function<Dataset::GeneratorFn()> make_;
};

class ZipNode : public Node {
 public:
  explicit ZipNode(std::vector<std::shared_ptr<const Node>> inputs) : inputs_(std::move(inputs)) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      std::vector<std::unique_ptr<IteratorImpl>> its;
      std::optional<Element> next() override {
        std::vector<Element> items;
        for (auto& it : its) {
          auto e = it->next();
          if (!e) return std::nullopt;
          items.push_back(std::move(*e));
        }
        return Element::tuple(std::move(items));
      }
    };
    auto it = std::make_unique<It>();
    for (const auto& n : inputs_) it->its.push_back(n->iterate());
    return it;
  }
  int64_t cardinality() const override {
    int64_t out = INFINITE_CARDINALITY;
    bool unknown = false;
    for (const auto& n : inputs_) {
      const int64_t c = n->cardinality();
      if (c == UNKNOWN_CARDINALITY) unknown = true;
      else if (c >= 0) out = out == INFINITE_CARDINALITY ? c : std::min(out, c);
    }
    if (unknown && out == INFINITE_CARDINALITY) return UNKNOWN_CARDINALITY;
    return out;
  }
  std::string name() const override { return "ZipDataset"; }
  std::vector<const Node*> inputs() const override {
    std::vector<const Node*> out;
    for (const auto& n : inputs_) out.push_back(n.get());
    return out;
  }
  std::optional<int64_t> static_batch_size() const override {
    std::optional<int64_t> out;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const auto b = inputs_[i]->static_batch_size();
      if (!b || (i > 0 && b != out)) return std::nullopt;
      out = b;
    }
    return out;
  }

 private:
  std::vector<std::shared_ptr<const Node>> inputs_;
};

}  // namespace
}  // namespace detail

using namespace detail;

Iterator::Iterator(std::unique_ptr<IteratorImpl> impl, std::shared_ptr<const Node> pipeline)
    : pipeline_(std::move(pipeline)), impl_(std::move(impl)) {}
Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&& other) noexcept {
  impl_.reset();  // this pass's threads stop while its pipeline still exists
  pipeline_ = std::move(other.pipeline_);
  impl_ = std::move(other.impl_);
  return *this;
}
Iterator::~Iterator() { impl_.reset(); }
std::optional<Element> Iterator::next() {
  if (!impl_) return std::nullopt;
  return impl_->next();
}

Dataset Dataset::from_tensor_slices(const Element& e) {
  const auto flat = e.flatten();
  if (flat.empty()) throw ValueError("from_tensor_slices: the element has no tensors");
  std::vector<Tensor> hosted;
  for (const auto& t : flat) {
    const Tensor h = on_host(t);
    if (h.shape().rank() == 0) {
      throw ValueError(fmt::format("from_tensor_slices: component {} is a scalar ({}); slicing needs a first "
                                   "dimension. Use from_tensors() for one element.",
                                   hosted.size(), e.spec()));
    }
    hosted.push_back(h);
  }
  const int64_t n = hosted[0].shape()[0];
  for (std::size_t i = 1; i < hosted.size(); ++i) {
    if (hosted[i].shape()[0] != n) {
      throw ValueError(fmt::format("from_tensor_slices: all components must have the same size in the 0th dimension: "
                                   "component 0 has {} rows and component {} has {} ({})",
                                   n, i, hosted[i].shape()[0], e.spec()));
    }
  }
  return Dataset(std::make_shared<SliceNode>(e.with_tensors(hosted), n));
}

Dataset Dataset::from_tensor_slices(const std::map<std::string, Tensor>& named) {
  std::map<std::string, Element> m;
  for (const auto& [k, t] : named) m.emplace(k, Element(t));
  return from_tensor_slices(Element::named(std::move(m)));
}

Dataset Dataset::from_tensors(const Element& e) {
  std::vector<Tensor> hosted;
  for (const auto& t : e.flatten()) hosted.push_back(on_host(t));
  return Dataset(std::make_shared<TensorsNode>(e.with_tensors(hosted)));
}

Dataset Dataset::range(int64_t stop) { return range(0, stop, 1); }
Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) throw InvalidArgumentError("range: step must not be 0");
  return Dataset(std::make_shared<RangeNode>(start, stop, step));
}

Dataset Dataset::from_generator(std::function<GeneratorFn()> make) {
  if (!make) throw ValueError("from_generator: the generator function is empty (a default-constructed std::function)");
  return Dataset(std::make_shared<GeneratorNode>(std::move(make)));
}

Dataset Dataset::zip(const std::vector<Dataset>& datasets) {
  if (datasets.empty()) throw ValueError("zip: needs at least one dataset");
  std::vector<std::shared_ptr<const Node>> nodes;
  for (const auto& d : datasets) nodes.push_back(d.node_);
  return Dataset(std::make_shared<ZipNode>(std::move(nodes)));
}

Dataset Dataset::map(MapFn fn, int64_t num_parallel_calls, std::optional<bool> deterministic) const {
  if (!fn) throw ValueError("map: the function is empty (a default-constructed std::function)");
  if (num_parallel_calls < AUTOTUNE) {
    throw ValueError(fmt::format("map: num_parallel_calls must be >= 0 or AUTOTUNE (-1), got {}", num_parallel_calls));
  }
  if (num_parallel_calls == 0) return Dataset(make_map(node_, std::move(fn)));
  const int64_t threads = num_parallel_calls == AUTOTUNE ? autotuned_threads() : num_parallel_calls;
  return Dataset(make_parallel_map(node_, std::move(fn), threads, deterministic));
}

Dataset Dataset::filter(Predicate predicate) const {
  if (!predicate) throw ValueError("filter: the predicate is empty (a default-constructed std::function)");
  return Dataset(make_filter(node_, std::move(predicate)));
}

Dataset Dataset::shuffle(int64_t buffer_size, std::optional<uint64_t> seed, bool reshuffle_each_iteration) const {
  if (buffer_size <= 0) throw ValueError(fmt::format("shuffle: buffer_size must be positive, got {}", buffer_size));
  return Dataset(make_shuffle(node_, buffer_size, seed, reshuffle_each_iteration));
}

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  if (batch_size <= 0) throw ValueError(fmt::format("batch: batch_size must be positive, got {}", batch_size));
  return Dataset(make_batch(node_, batch_size, drop_remainder, std::nullopt));
}

Dataset Dataset::padded_batch(int64_t batch_size, PaddedBatchOptions options) const {
  if (batch_size <= 0) throw ValueError(fmt::format("padded_batch: batch_size must be positive, got {}", batch_size));
  const bool drop = options.drop_remainder;
  return Dataset(make_batch(node_, batch_size, drop, std::move(options)));
}

Dataset Dataset::rebatch(int64_t batch_size, bool drop_remainder) const {
  if (batch_size <= 0) throw ValueError(fmt::format("rebatch: batch_size must be positive, got {}", batch_size));
  return rebatch(std::vector<int64_t>{batch_size}, drop_remainder);
}

Dataset Dataset::rebatch(std::vector<int64_t> batch_sizes, bool drop_remainder) const {
  if (batch_sizes.empty()) throw ValueError("rebatch: batch_sizes is empty");
  int64_t total = 0;
  for (int64_t n : batch_sizes) {
    if (n < 0) throw ValueError(fmt::format("rebatch: batch sizes must be >= 0, got {}", n));
    total += n;
  }
  if (total == 0) throw ValueError("rebatch: batch_sizes are all 0; at least one must be positive");
  return Dataset(make_rebatch(node_, [batch_sizes](int64_t) { return batch_sizes; }, drop_remainder));
}

Dataset Dataset::interleave(InterleaveFn fn, int64_t cycle_length, int64_t block_length, int64_t num_parallel_calls,
                            std::optional<bool> deterministic) const {
  if (!fn) throw ValueError("interleave: the function is empty");
  if (cycle_length <= 0 && cycle_length != AUTOTUNE) {
    throw ValueError(fmt::format("interleave: cycle_length must be positive or AUTOTUNE (-1), got {}", cycle_length));
  }
  if (block_length <= 0) throw ValueError(fmt::format("interleave: block_length must be positive, got {}", block_length));
  if (num_parallel_calls < 0 && num_parallel_calls != AUTOTUNE) {
    throw ValueError(fmt::format("interleave: num_parallel_calls must be >= 0 or AUTOTUNE (-1), got {}",
                                 num_parallel_calls));
  }
  return Dataset(make_interleave(node_, std::move(fn), cycle_length == AUTOTUNE ? autotuned_threads() : cycle_length,
                                 block_length, num_parallel_calls != 0, deterministic));
}

Dataset Dataset::unbatch() const { return Dataset(make_unbatch(node_)); }

Dataset Dataset::repeat(int64_t count) const {
  if (count < -1) throw ValueError(fmt::format("repeat: count must be >= 0, or -1 for ever; got {}", count));
  return Dataset(make_repeat(node_, count));
}

Dataset Dataset::take(int64_t count) const {
  if (count < -1) throw ValueError(fmt::format("take: count must be >= 0, or -1 for all; got {}", count));
  return Dataset(make_take(node_, count));
}

Dataset Dataset::skip(int64_t count) const {
  if (count < -1) throw ValueError(fmt::format("skip: count must be >= 0, or -1 for all; got {}", count));
  return Dataset(make_skip(node_, count));
}

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  if (num_shards <= 0) throw InvalidArgumentError(fmt::format("shard: num_shards must be positive, got {}", num_shards));
  if (index < 0 || index >= num_shards) {
    throw InvalidArgumentError(fmt::format("shard: index must be in [0, {}), got {}", num_shards, index));
  }
  return Dataset(make_shard(node_, num_shards, index));
}

Dataset Dataset::cache(const std::string& filename) const { return Dataset(make_cache(node_, filename)); }

Dataset Dataset::prefetch(int64_t buffer_size) const {
  if (buffer_size < AUTOTUNE || buffer_size == 0) {
    throw ValueError(fmt::format("prefetch: buffer_size must be positive or AUTOTUNE (-1), got {}", buffer_size));
  }
  return Dataset(make_prefetch(node_, buffer_size == AUTOTUNE ? 2 : buffer_size));
}

Dataset Dataset::concatenate(const Dataset& other) const {
  return Dataset(make_concatenate(node_, other.node_));
}

Dataset Dataset::with_options(const Options& options) const { return Dataset(make_options(node_, options)); }

namespace {
// The options of a node's pipeline: its inputs' (in order) merged, then its own over them. Iterative over the
// unary chain, so a long pipeline does not recurse deeply; zip/concatenate recurse once per branch.
Options options_of(const Node* node) {
  std::vector<std::pair<const Node*, std::vector<const Node*>>> chain;  // each node with its inputs
  for (const Node* n = node; n;) {
    chain.emplace_back(n, n->inputs());
    n = chain.back().second.size() == 1 ? chain.back().second[0] : nullptr;
  }
  Options out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (it->second.size() > 1) {
      for (const Node* in : it->second) out = out.merge(options_of(in));
    }
    if (const Options* own = it->first->own_options()) out = out.merge(*own);
  }
  return out;
}
}  // namespace

Options Dataset::options() const { return options_of(node_.get()); }

Options Options::merge(const Options& other) const {
  Options out = *this;
  if (other.experimental_distribute.auto_shard_policy) {
    out.experimental_distribute.auto_shard_policy = other.experimental_distribute.auto_shard_policy;
  }
  if (other.deterministic) out.deterministic = other.deterministic;
  return out;
}

const char* to_string(AutoShardPolicy p) {
  switch (p) {
    case AutoShardPolicy::AUTO: return "AUTO";
    case AutoShardPolicy::FILE: return "FILE";
    case AutoShardPolicy::DATA: return "DATA";
    case AutoShardPolicy::OFF: return "OFF";
  }
  return "?";
}

int64_t Dataset::cardinality() const { return node_->cardinality(); }

Iterator Dataset::make_iterator() const {
  PipelineScope scope(options_of(node_.get()));  // what the nodes' iterators read while they are made
  return Iterator(node_->iterate(), node_);
}

namespace detail {
namespace {
thread_local const Options* current_options = nullptr;
}  // namespace
PipelineScope::PipelineScope(Options options) : options_(std::move(options)), previous_(current_options) {
  current_options = &options_;
}
PipelineScope::~PipelineScope() { current_options = previous_; }
Options pipeline_options() { return current_options ? *current_options : Options(); }
}  // namespace detail

std::vector<Element> Dataset::collect() const {
  if (cardinality() == INFINITE_CARDINALITY) {
    throw ValueError(fmt::format("collect: the dataset is infinite ({}); take() a part of it first", describe()));
  }
  std::vector<Element> out;
  auto it = make_iterator();
  while (auto e = it.next()) out.push_back(std::move(*e));
  return out;
}

std::string Dataset::describe() const {
  std::vector<std::string> names;
  for (const Node* n = node_.get(); n; n = n->input()) names.push_back(n->name());
  std::string out;
  for (auto it = names.rbegin(); it != names.rend(); ++it) out += (out.empty() ? "" : " -> ") + *it;
  return out;
}

}  // namespace osprey::data
