// The transformations with background threads: map(num_parallel_calls) and prefetch() (whose iterator also polls,
// for interleave's unordered order). Each pass starts its threads and its destructor stops and joins them; an
// element's failure is kept in its place in the order and thrown when the consumer reaches it, and no element
// after it is asked of the input.
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "data/pipeline.h"
#include "osprey/device.h"
#include "osprey/errors.h"

namespace osprey::data::detail {

namespace {

class ParallelMapNode : public Node {
 public:
  ParallelMapNode(std::shared_ptr<const Node> input, Dataset::MapFn fn, int64_t threads,
                  std::optional<bool> deterministic)
      : input_(std::move(input)), fn_(std::move(fn)), threads_(threads), deterministic_(deterministic) {}
  std::unique_ptr<IteratorImpl> iterate() const override;
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return fmt::format("ParallelMapDataset({})", threads_); }
  const Node* input() const override { return input_.get(); }

  std::shared_ptr<const Node> input_;
  Dataset::MapFn fn_;
  int64_t threads_;
  std::optional<bool> deterministic_;  ///< unset: the pipeline's Options::deterministic, else true
};

class ParallelMapIterator : public IteratorImpl {
 public:
  ParallelMapIterator(const ParallelMapNode& node, std::unique_ptr<IteratorImpl> in)
      : node_(node),
        in_(std::move(in)),
        window_(2 * node.threads_),
        ordered_(node.deterministic_.value_or(pipeline_options().deterministic.value_or(true))) {
    for (int64_t i = 0; i < node.threads_; ++i) threads_.emplace_back([this] { work(); });
  }
  ~ParallelMapIterator() override {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
    }
    space_cv_.notify_all();
    ready_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // In order: element `delivered_` next. Unordered: the earliest one ready (`delivered_` then counts them; the
  // input's end or failure still stops the elements after it).
  std::optional<Element> next() override {
    std::unique_lock lk(mu_);
    ready_cv_.wait(lk, [&] {
      return delivered_ >= end_ || (ordered_ ? done_.count(delivered_) > 0 : !done_.empty());
    });
    if (done_.empty() || (ordered_ && !done_.count(delivered_))) return std::nullopt;
    auto node = done_.extract(ordered_ ? done_.find(delivered_) : done_.begin());
    const int64_t seq = node.key();
    ++delivered_;
    lk.unlock();
    space_cv_.notify_all();
    Slot& slot = node.mapped();
    if (slot.error) {
      if (slot.from_input) std::rethrow_exception(slot.error);
      rethrow_with_context(slot.error, fmt::format("map: the function failed on element {}: ", seq));
    }
    return std::move(slot.element);
  }

 private:
  struct Slot {
    std::optional<Element> element;
    std::exception_ptr error;
    bool from_input = false;
  };

  void work() {
    DeviceScope on_cpu("CPU:0");
    for (;;) {
      int64_t seq = 0;
      std::optional<Element> e;
      std::exception_ptr error;
      {
        std::lock_guard in_lk(in_mu_);  // the input is read by one thread at a time, in order
        {
          std::unique_lock lk(mu_);
          space_cv_.wait(lk, [&] { return stopping_ || next_seq_ >= end_ || next_seq_ - delivered_ < window_; });
          if (stopping_ || next_seq_ >= end_) return;
          seq = next_seq_++;
        }
        try {
          e = in_->next();
        } catch (...) {
          error = std::current_exception();
        }
        if (!e) {  // the input ended (or failed) at seq: nothing after it
          std::lock_guard lk(mu_);
          end_ = error ? seq + 1 : seq;
          if (error) done_.emplace(seq, Slot{std::nullopt, error, true});
          ready_cv_.notify_all();
          space_cv_.notify_all();
          return;
        }
      }
      Slot slot;
      try {
        slot.element = node_.fn_(*e);
      } catch (...) {
        slot.error = std::current_exception();
      }
      {
        std::lock_guard lk(mu_);
        done_.emplace(seq, std::move(slot));
      }
      ready_cv_.notify_all();
    }
  }

  const ParallelMapNode& node_;
  std::unique_ptr<IteratorImpl> in_;
  const int64_t window_;
  const bool ordered_;
  std::mutex in_mu_, mu_;
  std::condition_variable ready_cv_, space_cv_;
  std::map<int64_t, Slot> done_;
  int64_t next_seq_ = 0, delivered_ = 0, end_ = INT64_MAX;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

std::unique_ptr<IteratorImpl> ParallelMapNode::iterate() const {
  return std::make_unique<ParallelMapIterator>(*this, input_->iterate());
}

class PrefetchNode : public Node {
 public:
  PrefetchNode(std::shared_ptr<const Node> input, int64_t buffer) : input_(std::move(input)), buffer_(buffer) {}
  std::unique_ptr<IteratorImpl> iterate() const override;
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return fmt::format("PrefetchDataset({})", buffer_); }
  const Node* input() const override { return input_.get(); }

  std::shared_ptr<const Node> input_;
  int64_t buffer_;
};

class PrefetchIterator : public PollingIterator {
 public:
  PrefetchIterator(std::unique_ptr<IteratorImpl> in, int64_t buffer, std::shared_ptr<ReadySignal> signal = nullptr)
      : in_(std::move(in)), buffer_(buffer), signal_(std::move(signal)) {
    thread_ = std::thread([this] { work(); });
  }
  ~PrefetchIterator() override {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
    }
    space_cv_.notify_all();
    thread_.join();
  }
  std::optional<Element> next() override {
    std::unique_lock lk(mu_);
    ready_cv_.wait(lk, [&] { return !queue_.empty() || finished_; });
    if (queue_.empty()) {
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      return std::nullopt;
    }
    Element e = std::move(queue_.front());
    queue_.pop_front();
    lk.unlock();
    space_cv_.notify_one();
    return e;
  }
  Poll poll(std::optional<Element>& out) override {
    std::unique_lock lk(mu_);
    if (queue_.empty()) {
      if (!finished_) return Poll::pending;
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      return Poll::ended;
    }
    out = std::move(queue_.front());
    queue_.pop_front();
    lk.unlock();
    space_cv_.notify_one();
    return Poll::ready;
  }

 private:
  void work() {
    DeviceScope on_cpu("CPU:0");
    for (;;) {
      {
        std::unique_lock lk(mu_);
        space_cv_.wait(lk, [&] { return stopping_ || static_cast<int64_t>(queue_.size()) < buffer_; });
        if (stopping_) return;
      }
      std::optional<Element> e;
      std::exception_ptr error;
      try {
        e = in_->next();
      } catch (...) {
        error = std::current_exception();
      }
      const bool ended = !e;
      {
        std::lock_guard lk(mu_);
        if (ended) {
          finished_ = true;
          error_ = error;
          ready_cv_.notify_all();
        } else {
          queue_.push_back(std::move(*e));
          ready_cv_.notify_one();
        }
      }
      // After mu_ is released: the consumer takes the signal's lock and then polls, never both at once.
      if (signal_) signal_->notify();
      if (ended) return;
    }
  }

  std::unique_ptr<IteratorImpl> in_;
  int64_t buffer_;
  std::mutex mu_;
  std::condition_variable ready_cv_, space_cv_;
  std::deque<Element> queue_;
  bool finished_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::shared_ptr<ReadySignal> signal_;
  std::thread thread_;
};

std::unique_ptr<IteratorImpl> PrefetchNode::iterate() const {
  return std::make_unique<PrefetchIterator>(input_->iterate(), buffer_);
}

}  // namespace

std::shared_ptr<const Node> make_parallel_map(std::shared_ptr<const Node> input, Dataset::MapFn fn, int64_t threads,
                                              std::optional<bool> deterministic) {
  return std::make_shared<ParallelMapNode>(std::move(input), std::move(fn), threads, deterministic);
}

std::shared_ptr<const Node> make_prefetch(std::shared_ptr<const Node> input, int64_t buffer) {
  return std::make_shared<PrefetchNode>(std::move(input), buffer);
}

void ReadySignal::notify() {
  {
    std::lock_guard lk(mu);
    ++events;
  }
  cv.notify_all();
}

std::unique_ptr<PollingIterator> make_polling_prefetch(std::unique_ptr<IteratorImpl> in, int64_t buffer,
                                                       std::shared_ptr<ReadySignal> signal) {
  return std::make_unique<PrefetchIterator>(std::move(in), buffer, std::move(signal));
}

}  // namespace osprey::data::detail
