// The transformations of data::Dataset that run on the iterating thread: map, filter, batch and padded_batch,
// unbatch, repeat, take, skip, shard, concatenate. Each is a Node whose iterator pulls from its input's.
#include <algorithm>

#include <fmt/format.h>

#include "data/pipeline.h"
#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::data::detail {

namespace {

// A transformation of one input: `Derived::It` is its iterator, constructed from the node and the input's.
class UnaryNode : public Node {
 public:
  explicit UnaryNode(std::shared_ptr<const Node> input) : input_(std::move(input)) {}
  const Node* input() const override { return input_.get(); }

 protected:
  std::shared_ptr<const Node> input_;
};

class MapNode : public UnaryNode {
 public:
  MapNode(std::shared_ptr<const Node> input, Dataset::MapFn fn) : UnaryNode(std::move(input)), fn_(std::move(fn)) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      const MapNode& node;
      std::unique_ptr<IteratorImpl> in;
      int64_t index = 0;
      It(const MapNode& n, std::unique_ptr<IteratorImpl> i) : node(n), in(std::move(i)) {}
      std::optional<Element> next() override {
        auto e = in->next();
        if (!e) return std::nullopt;
        const int64_t at = index++;
        try {
          DeviceScope on_cpu("CPU:0");
          return node.fn_(*e);
        } catch (...) {
          rethrow_with_context(std::current_exception(), fmt::format("map: the function failed on element {}: ", at));
        }
      }
    };
    return std::make_unique<It>(*this, input_->iterate());
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "MapDataset"; }

 private:
  Dataset::MapFn fn_;
};

class FilterNode : public UnaryNode {
 public:
  FilterNode(std::shared_ptr<const Node> input, Dataset::Predicate p) : UnaryNode(std::move(input)), p_(std::move(p)) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      const FilterNode& node;
      std::unique_ptr<IteratorImpl> in;
      int64_t index = 0;
      It(const FilterNode& n, std::unique_ptr<IteratorImpl> i) : node(n), in(std::move(i)) {}
      std::optional<Element> next() override {
        while (auto e = in->next()) {
          const int64_t at = index++;
          bool keep = false;
          try {
            DeviceScope on_cpu("CPU:0");
            keep = node.p_(*e);
          } catch (...) {
            rethrow_with_context(std::current_exception(),
                                 fmt::format("filter: the predicate failed on element {}: ", at));
          }
          if (keep) return e;
        }
        return std::nullopt;
      }
    };
    return std::make_unique<It>(*this, input_->iterate());
  }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    return c == INFINITE_CARDINALITY ? c : UNKNOWN_CARDINALITY;
  }
  std::string name() const override { return "FilterDataset"; }

 private:
  Dataset::Predicate p_;
};

class BatchNode : public UnaryNode {
 public:
  BatchNode(std::shared_ptr<const Node> input, int64_t n, bool drop, std::optional<PaddedBatchOptions> pad)
      : UnaryNode(std::move(input)), n_(n), drop_(drop), pad_(std::move(pad)) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      const BatchNode& node;
      std::unique_ptr<IteratorImpl> in;
      int64_t index = 0;
      It(const BatchNode& n, std::unique_ptr<IteratorImpl> i) : node(n), in(std::move(i)) {}
      std::optional<Element> next() override {
        if (!node.pad_ && in->gives_rows()) {  // slices of contiguous rows: the batch is a view, nothing is copied
          auto b = in->next_rows(node.n_);
          if (!b || (node.drop_ && b->flatten()[0].shape()[0] < node.n_)) return std::nullopt;
          return b;
        }
        std::vector<Element> rows;
        rows.reserve(static_cast<std::size_t>(std::min<int64_t>(node.n_, 4096)));
        const int64_t first = index;
        while (static_cast<int64_t>(rows.size()) < node.n_) {
          auto e = in->next();
          if (!e) break;
          ++index;
          rows.push_back(std::move(*e));
        }
        if (rows.empty() || (node.drop_ && static_cast<int64_t>(rows.size()) < node.n_)) return std::nullopt;
        return node.pad_ ? pad_stack(rows, *node.pad_, first) : stack(rows, first);
      }
    };
    return std::make_unique<It>(*this, input_->iterate());
  }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    if (c < 0) return c;
    return drop_ ? c / n_ : (c + n_ - 1) / n_;
  }
  std::string name() const override { return pad_ ? "PaddedBatchDataset" : "BatchDataset"; }
  std::optional<int64_t> static_batch_size() const override { return n_; }

 private:
  int64_t n_;
  bool drop_;
  std::optional<PaddedBatchOptions> pad_;
};

class UnbatchNode : public UnaryNode {
 public:
  using UnaryNode::UnaryNode;
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      std::unique_ptr<IteratorImpl> in;
      std::optional<Element> current;
      std::vector<Tensor> flat;
      int64_t row = 0, rows = 0, index = 0;
      std::optional<Element> next() override {
        while (row >= rows) {
          current = in->next();
          if (!current) return std::nullopt;
          flat = current->flatten();
          if (flat.empty() || flat[0].shape().rank() == 0) {
            throw InvalidArgumentError(fmt::format("unbatch: element {} ({}) has a scalar component; unbatch needs "
                                                   "every component to have a first dimension",
                                                   index, current->spec()));
          }
          rows = flat[0].shape()[0];
          for (const auto& t : flat) {
            if (t.shape().rank() == 0 || t.shape()[0] != rows) {
              throw InvalidArgumentError(fmt::format("unbatch: the components of element {} ({}) have different "
                                                     "first dimensions",
                                                     index, current->spec()));
            }
          }
          ++index;
          row = 0;
        }
        std::vector<Tensor> r;
        for (const auto& t : flat) r.push_back(row_of(t, row));
        ++row;
        return current->with_tensors(r);
      }
    };
    auto it = std::make_unique<It>();
    it->in = input_->iterate();
    return it;
  }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    return c == INFINITE_CARDINALITY ? c : UNKNOWN_CARDINALITY;
  }
  std::string name() const override { return "UnbatchDataset"; }
  std::optional<int64_t> static_batch_size() const override { return std::nullopt; }
};

class RepeatNode : public UnaryNode {
 public:
  RepeatNode(std::shared_ptr<const Node> input, int64_t count) : UnaryNode(std::move(input)), count_(count) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      const RepeatNode& node;
      std::unique_ptr<IteratorImpl> in;
      int64_t pass = 0;
      bool empty_pass = true;
      const Options options = pipeline_options();  // for the later passes' iterators
      explicit It(const RepeatNode& n) : node(n) {}
      std::optional<Element> next() override {
        while (node.count_ < 0 || pass < node.count_) {
          if (!in) {
            PipelineScope scope(options);
            in = node.input_->iterate();
            empty_pass = true;
          }
          if (auto e = in->next()) {
            empty_pass = false;
            return e;
          }
          in.reset();
          ++pass;
          if (empty_pass) return std::nullopt;  // an empty input repeated for ever is still empty (tf.data)
        }
        return std::nullopt;
      }
    };
    return std::make_unique<It>(*this);
  }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    if (c == 0 || count_ == 0) return 0;
    if (count_ < 0 || c == INFINITE_CARDINALITY) return INFINITE_CARDINALITY;
    if (c == UNKNOWN_CARDINALITY) return c;
    return c * count_;
  }
  std::string name() const override { return "RepeatDataset"; }

 private:
  int64_t count_;
};

// take(n) when !skip, skip(n) when skip; shard(k, i) keeps every k-th from i.
class CountNode : public UnaryNode {
 public:
  enum class Mode { take, skip, shard };
  CountNode(std::shared_ptr<const Node> input, Mode mode, int64_t a, int64_t b = 0)
      : UnaryNode(std::move(input)), mode_(mode), a_(a), b_(b) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      const CountNode& node;
      std::unique_ptr<IteratorImpl> in;
      int64_t seen = 0;
      It(const CountNode& n, std::unique_ptr<IteratorImpl> i) : node(n), in(std::move(i)) {}
      std::optional<Element> next() override {
        switch (node.mode_) {
          case Mode::take:
            if (node.a_ >= 0 && seen >= node.a_) return std::nullopt;
            ++seen;
            return in->next();
          case Mode::skip:
            while (node.a_ < 0 || seen < node.a_) {
              ++seen;
              if (!in->next()) return std::nullopt;
            }
            return in->next();
          case Mode::shard:
            while (auto e = in->next()) {
              if (seen++ % node.a_ == node.b_) return e;
            }
            return std::nullopt;
        }
        return std::nullopt;
      }
    };
    return std::make_unique<It>(*this, input_->iterate());
  }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    switch (mode_) {
      case Mode::take:
        if (a_ < 0) return c;
        if (c == INFINITE_CARDINALITY) return a_;
        return c == UNKNOWN_CARDINALITY ? c : std::min(c, a_);
      case Mode::skip:
        if (c < 0) return c;
        return a_ < 0 ? 0 : std::max<int64_t>(0, c - a_);
      case Mode::shard:
        if (c < 0) return c;
        return c / a_ + (b_ < c % a_ ? 1 : 0);
    }
    return UNKNOWN_CARDINALITY;
  }
  std::string name() const override {
    return mode_ == Mode::take ? "TakeDataset" : mode_ == Mode::skip ? "SkipDataset" : "ShardDataset";
  }

 private:
  Mode mode_;
  int64_t a_, b_;
};

class ConcatenateNode : public UnaryNode {
 public:
  ConcatenateNode(std::shared_ptr<const Node> input, std::shared_ptr<const Node> other)
      : UnaryNode(std::move(input)), other_(std::move(other)) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      const ConcatenateNode& node;
      std::unique_ptr<IteratorImpl> in;
      bool second = false;
      std::optional<std::string> first_structure;
      int64_t index = 0;
      const Options options = pipeline_options();  // for the second dataset's iterator
      explicit It(const ConcatenateNode& n) : node(n), in(n.input_->iterate()) {}
      std::optional<Element> next() override {
        for (;;) {
          if (auto e = in->next()) {
            if (!first_structure) first_structure = e->structure();
            else if (second && e->structure() != *first_structure) {
              throw InvalidArgumentError(fmt::format("concatenate: the second dataset's element {} has the structure "
                                                     "{}, the first's {}",
                                                     index, e->structure(), *first_structure));
            }
            ++index;
            return e;
          }
          if (second) return std::nullopt;
          second = true;
          index = 0;
          PipelineScope scope(options);
          in = node.other_->iterate();
        }
      }
    };
    return std::make_unique<It>(*this);
  }
  int64_t cardinality() const override {
    const int64_t a = input_->cardinality(), b = other_->cardinality();
    if (a == INFINITE_CARDINALITY || b == INFINITE_CARDINALITY) return INFINITE_CARDINALITY;
    if (a < 0 || b < 0) return UNKNOWN_CARDINALITY;
    return a + b;
  }
  std::string name() const override { return "ConcatenateDataset"; }
  std::vector<const Node*> inputs() const override { return {input_.get(), other_.get()}; }
  std::optional<int64_t> static_batch_size() const override {
    const auto a = input_->static_batch_size();
    return a == other_->static_batch_size() ? a : std::nullopt;
  }

 private:
  std::shared_ptr<const Node> other_;
};

// rebatch(): the rows of the input's elements cut into batches of the sizes given, cycled through, across the
// input's element boundaries (tf.data's RebatchDatasetV2). The sizes may depend on the first element's rows (the
// global batch a MultiWorkerMirroredStrategy splits); a size of 0 gives an element with no rows.
class RebatchNode : public UnaryNode {
 public:
  RebatchNode(std::shared_ptr<const Node> input, RebatchSizes sizes, bool drop)
      : UnaryNode(std::move(input)), sizes_(std::move(sizes)), drop_(drop) {}
  std::unique_ptr<IteratorImpl> iterate() const override {
    struct It : IteratorImpl {
      const RebatchNode& node;
      std::unique_ptr<IteratorImpl> in;
      std::vector<int64_t> sizes;
      std::optional<Element> current;
      std::vector<Tensor> flat;
      int64_t row = 0, rows = 0, index = 0, k = 0;
      It(const RebatchNode& n, std::unique_ptr<IteratorImpl> i) : node(n), in(std::move(i)) {}
      // The next input element with rows left; false at the end.
      bool fill() {
        while (row >= rows) {
          auto e = in->next();
          if (!e) return false;
          auto f = e->flatten();
          if (f.empty() || f[0].shape().rank() == 0) {
            throw InvalidArgumentError(fmt::format("rebatch: element {} ({}) has a scalar component; rebatch needs "
                                                   "batched elements (every component with a first dimension)",
                                                   index, e->spec()));
          }
          for (const auto& t : f) {
            if (t.shape().rank() == 0 || t.shape()[0] != f[0].shape()[0]) {
              throw InvalidArgumentError(fmt::format("rebatch: the components of element {} ({}) have different "
                                                     "first dimensions",
                                                     index, e->spec()));
            }
          }
          if (current && (f.size() != flat.size() || !e->same_structure(*current))) {
            throw InvalidArgumentError(fmt::format("rebatch: element {} ({}) has another structure than element 0 "
                                                   "({})",
                                                   index, e->spec(), current->spec()));
          }
          if (sizes.empty()) {
            sizes = node.sizes_(f[0].shape()[0]);
            if (std::all_of(sizes.begin(), sizes.end(), [](int64_t n) { return n <= 0; })) {
              throw ValueError(fmt::format("rebatch: no positive batch size to cut element {} ({}) into", index,
                                           e->spec()));
            }
          }
          current = std::move(e);
          flat = std::move(f);
          rows = flat[0].shape()[0];
          row = 0;
          ++index;
        }
        return true;
      }
      std::optional<Element> next() override {
        if (!fill()) return std::nullopt;
        const int64_t want = sizes[static_cast<std::size_t>(k % static_cast<int64_t>(sizes.size()))];
        std::vector<std::vector<Tensor>> parts(flat.size());
        int64_t got = 0;
        if (want == 0) {
          for (std::size_t c = 0; c < flat.size(); ++c) parts[c].push_back(flat[c].slice_rows(row, row));
        }
        while (got < want && fill()) {
          const int64_t m = std::min(want - got, rows - row);
          for (std::size_t c = 0; c < flat.size(); ++c) parts[c].push_back(flat[c].slice_rows(row, row + m));
          row += m;
          got += m;
        }
        if (got < want && node.drop_) return std::nullopt;
        ++k;
        std::vector<Tensor> out;
        for (auto& p : parts) out.push_back(p.size() == 1 ? p[0] : ops::concat(p, 0));
        return current->with_tensors(out);
      }
    };
    return std::make_unique<It>(*this, input_->iterate());
  }
  int64_t cardinality() const override {
    const int64_t c = input_->cardinality();
    return c == INFINITE_CARDINALITY ? c : UNKNOWN_CARDINALITY;
  }
  std::string name() const override { return "RebatchDataset"; }
  std::optional<int64_t> static_batch_size() const override { return std::nullopt; }

 private:
  RebatchSizes sizes_;
  bool drop_;
};

// with_options(): the elements pass through unchanged; the node only carries the options.
class OptionsNode : public UnaryNode {
 public:
  OptionsNode(std::shared_ptr<const Node> input, Options options) : UnaryNode(std::move(input)), options_(options) {}
  std::unique_ptr<IteratorImpl> iterate() const override { return input_->iterate(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "OptionsDataset"; }
  const Options* own_options() const override { return &options_; }

 private:
  Options options_;
};

}  // namespace

std::shared_ptr<const Node> make_map(std::shared_ptr<const Node> input, Dataset::MapFn fn) {
  return std::make_shared<MapNode>(std::move(input), std::move(fn));
}
std::shared_ptr<const Node> make_filter(std::shared_ptr<const Node> input, Dataset::Predicate predicate) {
  return std::make_shared<FilterNode>(std::move(input), std::move(predicate));
}
std::shared_ptr<const Node> make_batch(std::shared_ptr<const Node> input, int64_t n, bool drop_remainder,
                                       std::optional<PaddedBatchOptions> padding) {
  return std::make_shared<BatchNode>(std::move(input), n, drop_remainder, std::move(padding));
}
std::shared_ptr<const Node> make_unbatch(std::shared_ptr<const Node> input) {
  return std::make_shared<UnbatchNode>(std::move(input));
}
std::shared_ptr<const Node> make_repeat(std::shared_ptr<const Node> input, int64_t count) {
  return std::make_shared<RepeatNode>(std::move(input), count);
}
std::shared_ptr<const Node> make_take(std::shared_ptr<const Node> input, int64_t count) {
  return std::make_shared<CountNode>(std::move(input), CountNode::Mode::take, count);
}
std::shared_ptr<const Node> make_skip(std::shared_ptr<const Node> input, int64_t count) {
  return std::make_shared<CountNode>(std::move(input), CountNode::Mode::skip, count);
}
std::shared_ptr<const Node> make_shard(std::shared_ptr<const Node> input, int64_t num_shards, int64_t index) {
  return std::make_shared<CountNode>(std::move(input), CountNode::Mode::shard, num_shards, index);
}
std::shared_ptr<const Node> make_rebatch(std::shared_ptr<const Node> input, RebatchSizes sizes, bool drop_remainder) {
  return std::make_shared<RebatchNode>(std::move(input), std::move(sizes), drop_remainder);
}

std::shared_ptr<const Node> make_options(std::shared_ptr<const Node> input, Options options) {
  return std::make_shared<OptionsNode>(std::move(input), options);
}

std::shared_ptr<const Node> make_concatenate(std::shared_ptr<const Node> input, std::shared_ptr<const Node> other) {
  return std::make_shared<ConcatenateNode>(std::move(input), std::move(other));
}

}  // namespace osprey::data::detail
