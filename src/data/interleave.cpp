// Dataset::interleave (tf.data's InterleaveDataset / ParallelInterleaveDataset): up to cycle_length datasets made
// from the input's elements are read in turn, block_length elements from each; one that ends leaves its place empty
// until the turn comes back to it, when the next input element's dataset opens there. With num_parallel_calls and
// deterministic=false the turn passes over a dataset with no element ready to the next one that has one (tf.data's
// unordered interleave): a slow file holds up only its own elements.
#include <fmt/format.h>

#include "data/pipeline.h"
#include "osprey/device.h"
#include "osprey/errors.h"

namespace osprey::data::detail {

namespace {

class InterleaveNode : public Node {
 public:
  InterleaveNode(std::shared_ptr<const Node> input, Dataset::InterleaveFn fn, int64_t cycle, int64_t block,
                 bool parallel, std::optional<bool> deterministic)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        cycle_(cycle),
        block_(block),
        parallel_(parallel),
        deterministic_(deterministic) {}

  std::unique_ptr<IteratorImpl> iterate() const override {
    struct Slot {
      std::shared_ptr<const Node> pipeline;  // kept alive while its iterator runs
      std::unique_ptr<IteratorImpl> it;
      PollingIterator* poller = nullptr;  // `it`, when the order is unordered
      int64_t input_index = 0;
    };
    struct It : IteratorImpl {
      const InterleaveNode& node;
      std::unique_ptr<IteratorImpl> in;
      std::vector<Slot> slots;
      int64_t at = 0, in_block = 0, open = 0, index = 0;
      bool input_ended = false;
      std::shared_ptr<ReadySignal> signal;  // set: unordered
      It(const InterleaveNode& n, std::unique_ptr<IteratorImpl> i)
          : node(n), in(std::move(i)), slots(static_cast<std::size_t>(n.cycle_)) {
        if (n.parallel_ && !n.deterministic_.value_or(pipeline_options().deterministic.value_or(true))) {
          signal = std::make_shared<ReadySignal>();
        }
      }

      void advance() {
        in_block = 0;
        at = (at + 1) % node.cycle_;
      }
      // Opens the next input element's dataset in the current slot; false when the input has ended.
      bool open_slot(Slot& slot) {
        auto e = in->next();
        if (!e) {
          input_ended = true;
          return false;
        }
        const int64_t i = index++;
        std::shared_ptr<const Node> pipeline;
        try {
          DeviceScope on_cpu("CPU:0");
          pipeline = node.fn_(*e).node();
        } catch (...) {
          rethrow_with_context(std::current_exception(),
                               fmt::format("interleave: the function failed on element {}: ", i));
        }
        // num_parallel_calls: each open dataset makes its elements ahead on its own thread; the order stays
        // the sequential one unless it is unordered.
        if (signal) {
          auto poller = make_polling_prefetch(pipeline->iterate(), node.block_, signal);
          slot.poller = poller.get();
          slot.it = std::move(poller);
        } else {
          if (node.parallel_) pipeline = make_prefetch(pipeline, node.block_);
          slot.it = pipeline->iterate();
        }
        slot.pipeline = std::move(pipeline);
        slot.input_index = i;
        ++open;
        return true;
      }
      void close(Slot& slot) {
        slot.it.reset();
        slot.poller = nullptr;
        slot.pipeline.reset();
        --open;
      }
      // Unordered: from the current slot on, the first open dataset with an element ready (empty slots take the
      // next input elements' datasets first); when none has one, waits for the next element or end of any.
      std::optional<Element> next_unordered() {
        for (;;) {
          uint64_t seen = 0;
          {
            std::lock_guard lk(signal->mu);
            seen = signal->events;
          }
          bool changed = false;
          for (int64_t k = 0; k < node.cycle_; ++k) {
            const int64_t i = (at + k) % node.cycle_;
            Slot& slot = slots[static_cast<std::size_t>(i)];
            if (!slot.it) {
              if (input_ended || !open_slot(slot)) continue;
              changed = true;
            }
            std::optional<Element> e;
            PollingIterator::Poll got;
            try {
              got = slot.poller->poll(e);
            } catch (...) {
              rethrow_with_context(std::current_exception(),
                                   fmt::format("interleave: the dataset of element {} failed: ", slot.input_index));
            }
            if (got == PollingIterator::Poll::ready) {
              if (i != at) {
                at = i;
                in_block = 0;
              }
              if (++in_block == node.block_) advance();
              return e;
            }
            if (got == PollingIterator::Poll::ended) {
              close(slot);
              changed = true;
            }
          }
          if (input_ended && open == 0) return std::nullopt;
          if (changed) continue;  // a slot closed or opened: look again before waiting
          std::unique_lock lk(signal->mu);
          signal->cv.wait(lk, [&] { return signal->events != seen; });
        }
      }
      std::optional<Element> next() override {
        if (signal) return next_unordered();
        while (!input_ended || open > 0) {
          Slot& slot = slots[static_cast<std::size_t>(at)];
          if (slot.it) {
            std::optional<Element> e;
            try {
              e = slot.it->next();
            } catch (...) {
              rethrow_with_context(std::current_exception(),
                                   fmt::format("interleave: the dataset of element {} failed: ", slot.input_index));
            }
            if (e) {
              if (++in_block == node.block_) advance();
              return e;
            }
            close(slot);
            advance();
          } else if (input_ended || !open_slot(slot)) {
            advance();
          }
        }
        return std::nullopt;
      }
    };
    return std::make_unique<It>(*this, input_->iterate());
  }
  int64_t cardinality() const override { return UNKNOWN_CARDINALITY; }
  std::string name() const override { return parallel_ ? "ParallelInterleaveDataset" : "InterleaveDataset"; }
  const Node* input() const override { return input_.get(); }
  std::optional<int64_t> static_batch_size() const override { return std::nullopt; }

 private:
  std::shared_ptr<const Node> input_;
  Dataset::InterleaveFn fn_;
  int64_t cycle_, block_;
  bool parallel_;
  std::optional<bool> deterministic_;
};

}  // namespace

std::shared_ptr<const Node> make_interleave(std::shared_ptr<const Node> input, Dataset::InterleaveFn fn,
                                            int64_t cycle_length, int64_t block_length, bool parallel,
                                            std::optional<bool> deterministic) {
  return std::make_shared<InterleaveNode>(std::move(input), std::move(fn), cycle_length, block_length, parallel,
                                          deterministic);
}

}  // namespace osprey::data::detail
