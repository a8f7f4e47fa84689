#include "keras/trainers/data_adapters.h"

#include <fmt/format.h>

#include "distribute/strategy_impl.h"
#include "distribute/worker_group.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "osprey/random.h"

namespace osprey::keras::utils {

std::pair<Tensor, Tensor> PyDataset::get_batch(int64_t index) {
  throw NotImplementedError(fmt::format("PyDataset: override get_batch() (one input and output), get_batch_lists() "
                                        "(several) or get_weighted_batch() (with sample weights) to give batch {}",
                                        index));
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> PyDataset::get_batch_lists(int64_t index) {
  auto [x, y] = get_batch(index);
  return {{std::move(x)}, {std::move(y)}};
}

PyDatasetBatch PyDataset::get_weighted_batch(int64_t index) {
  auto [x, y] = get_batch_lists(index);
  return {std::move(x), std::move(y), {}};
}

}  // namespace osprey::keras::utils

namespace osprey::keras::trainer {

static Tensor on_host(const Tensor& t) {
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  return !t.defined() || &t.device_ref() == &host ? t : t.to(host);
}

ArraySource::ArraySource(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const Weights& w, int batch_size,
                         bool shuffle, runtime::Device* device, bool rows_in_step)
    : batch_(batch_size), shuffle_(shuffle), device_(device), rows_in_step_(rows_in_step) {
  for (const auto& t : x) all_.x.push_back(on_host(t));
  for (const auto& t : y) all_.y.push_back(on_host(t));
  for (const auto& t : w) all_.w.push_back(on_host(t));
  n_ = x[0].shape()[0];
}

// Every tensor of a batch transformed by f (undefined ones stay undefined).
template <typename F>
static Batch each(const Batch& b, F f) {
  Batch out;
  for (const auto& t : b.x) out.x.push_back(f(t));
  for (const auto& t : b.y) out.y.push_back(f(t));
  for (const auto& t : b.w) out.w.push_back(t.defined() ? f(t) : Tensor());
  return out;
}

void ArraySource::begin_pass() {
  cursor_ = 0;
  order_ = shuffle_ ? random::permutation(n_).to(runtime::DeviceManager::get().host_device()) : Tensor();
  // A recorded step gathers its rows from the arrays itself (each half into its own buffers, on its own thread).
  // Otherwise data up to kShuffleCopyBytes is gathered in the pass's order once and the batches are slices of
  // that copy: the same rows in the same batches as a gather per batch, without a gather op per tensor per step.
  shuffled_ = Batch{};
  direct_ = order_.defined() && !device_ && rows_in_step_;
  int64_t bytes = 0;
  for (const auto& t : all_.w) bytes += t.defined() ? t.nbytes() : 0;
  for (const auto& t : all_.x) bytes += t.nbytes();
  for (const auto& t : all_.y) bytes += t.nbytes();
  if (order_.defined() && !direct_ && bytes <= kShuffleCopyBytes) {
    shuffled_ = each(all_, [&](const Tensor& t) { return osprey::ops::gather_rows(t, order_); });
  }
}

bool ArraySource::next(Batch& out) {
  const int64_t b = cursor_, e = std::min<int64_t>(n_, cursor_ + batch_);
  cursor_ = e;
  if (direct_) {  // the whole arrays (set once, not copied every step) and this batch's row indices
    if (out.x.size() != all_.x.size() || out.x[0].impl() != all_.x[0].impl()) {
      out.x = all_.x;
      out.y = all_.y;
      out.w = all_.w;
    }
    out.rows = order_.slice_rows(b, e);
    return true;
  }
  if (!shuffled_.x.empty()) {
    out = each(shuffled_, [&](const Tensor& t) { return t.slice_rows(b, e); });
  } else if (order_.defined()) {
    Tensor idx = order_.slice_rows(b, e);
    out = each(all_, [&](const Tensor& t) { return osprey::ops::gather_rows(t, idx); });
  } else {
    out = each(all_, [&](const Tensor& t) { return t.slice_rows(b, e); });
  }
  if (device_) out = each(out, [&](const Tensor& t) { return t.to(*device_); });
  return true;
}

// A batch's weights from what its source gave (a list or a name map; none when empty) and class_weight (may be
// null).
static Weights batch_weights(Model& model, const std::vector<Tensor>& ys, Arrays given,
                             const std::map<int, double>* class_weight, const char* fn) {
  return sample_weights(model, ys.at(0).shape()[0], ys, std::move(given),
                        class_weight ? *class_weight : std::map<int, double>{}, fn);
}

bool GeneratorSource::next(Batch& out) {
  auto batch = generator_();
  if (!batch) return false;
  auto [x, y] = data_of(model_, s_, std::move(batch->x), &batch->y, "fit (generator batch)");
  Weights w = batch_weights(model_, y, std::move(batch->sample_weight), class_weight_, "fit (generator batch)");
  out = Batch{std::move(x), std::move(y), std::move(w), Tensor()};
  return true;
}

DatasetSource::DatasetSource(utils::PyDataset& d, bool shuffle, Model& model,
                             const std::map<int, double>* class_weight)
    : d_(d), shuffle_(shuffle), model_(model), class_weight_(class_weight) {
  const auto& o = d.options();
  if (o.workers < 1) throw ValueError(fmt::format("PyDataset: workers must be >= 1, got {}", o.workers));
  if (o.max_queue_size < 1) {
    throw ValueError(fmt::format("PyDataset: max_queue_size must be >= 1, got {}", o.max_queue_size));
  }
  workers_ = o.workers;
  window_ = o.max_queue_size;
}

void DatasetSource::begin_pass() {
  stop();
  const int64_t n = d_.num_batches();
  order_.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order_[i] = i;
  if (shuffle_ && n > 1) {
    auto perm = random::permutation(n).to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i) order_[i] = perm[i];
  }
  next_ = 0;
  if (workers_ > 1) start();
}

bool DatasetSource::next(Batch& out) {
  auto b = next_lists();
  Weights w = batch_weights(model_, b.y, Arrays(std::move(b.sample_weight)), class_weight_, "fit (PyDataset batch)");
  out = Batch{std::move(b.x), std::move(b.y), std::move(w), Tensor()};
  return true;
}

DatasetSource::Lists DatasetSource::next_lists() {
  if (workers_ <= 1) {
    if (next_ >= static_cast<int64_t>(order_.size())) throw InternalError("PyDataset pass exhausted");
    const int64_t k = next_++;
    return checked(d_.get_weighted_batch(order_[k]), order_[k]);
  }
  std::unique_lock lock(mu_);
  if (next_ >= static_cast<int64_t>(order_.size())) throw InternalError("PyDataset pass exhausted");
  const int64_t k = next_++;
  space_cv_.notify_all();  // the window moved
  ready_cv_.wait(lock, [&] { return slots_.count(k) > 0; });
  auto slot = std::move(slots_[k]);
  slots_.erase(k);
  space_cv_.notify_all();
  lock.unlock();
  if (slot.error) std::rethrow_exception(slot.error);
  return checked(std::move(slot.batch), order_[k]);
}

DatasetSource::Lists DatasetSource::checked(Lists b, int64_t index) {
  auto shapes = [](const std::vector<Tensor>& ts) {
    std::vector<std::string> out;
    for (const auto& t : ts) out.push_back(t.defined() ? t.shape().to_string() : "undefined");
    return fmt::format("[{}]", fmt::join(out, ", "));
  };
  bool ok = !b.x.empty() && !b.y.empty();
  int64_t rows = -1;
  for (const auto* ts : {&b.x, &b.y}) {
    for (const auto& t : *ts) {
      ok = ok && t.defined() && t.shape().rank() >= 1 && t.shape()[0] > 0 && (rows < 0 || t.shape()[0] == rows);
      if (ok) rows = t.shape()[0];
    }
  }
  if (!ok) {
    throw ValueError(fmt::format("PyDataset::get_batch({}) must return inputs and targets with the same, non-zero "
                                 "number of rows; got {} and {}",
                                 index, shapes(b.x), shapes(b.y)));
  }
  return b;
}

void DatasetSource::start() {
  stopping_ = false;
  claimed_ = 0;
  for (int w = 0; w < workers_; ++w) {
    threads_.emplace_back([this] {
      while (true) {
        int64_t k;
        {
          std::unique_lock lock(mu_);
          space_cv_.wait(lock, [&] { return stopping_ || claimed_ < std::min<int64_t>(next_ + window_, order_.size()); });
          if (stopping_ || claimed_ >= static_cast<int64_t>(order_.size())) return;
          k = claimed_++;
        }
        Slot slot;
        try {
          slot.batch = d_.get_weighted_batch(order_[k]);
        } catch (...) {
          slot.error = std::current_exception();
        }
        std::lock_guard lock(mu_);
        slots_[k] = std::move(slot);
        ready_cv_.notify_all();
      }
    });
  }
}

void DatasetSource::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  space_cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  slots_.clear();
}

}  // namespace osprey::keras::trainer

namespace osprey::keras::trainer {

namespace {

// An element's x or y as fit takes it: a tensor, a tuple of tensors (one per input or output) or a name map.
Arrays arrays_of(const data::Element& e, const char* fn, const char* what) {
  if (e.is_tensor()) return Arrays(e.tensor());
  std::vector<Tensor> ts;
  std::map<std::string, Tensor> named;
  for (int64_t i = 0; i < e.size(); ++i) {
    const auto& item = e.items()[static_cast<std::size_t>(i)];
    if (!item.is_tensor()) {
      throw ValueError(fmt::format("{}: the dataset's {} is {}; Osprey takes a tensor, a tuple of tensors or a name "
                                   "map of tensors there",
                                   fn, what, e.spec()));
    }
    if (e.kind() == data::Element::Kind::map) named.emplace(e.keys()[static_cast<std::size_t>(i)], item.tensor());
    else ts.push_back(item.tensor());
  }
  if (e.kind() == data::Element::Kind::map) return Arrays(named);
  return Arrays(std::move(ts));
}

}  // namespace

PipelineSource::PipelineSource(const data::Dataset& d, Model& model, State& s, const char* fn, bool targets,
                               const std::map<int, double>* class_weight, runtime::Device* copy_to)
    : d_(d), model_(model), s_(s), fn_(fn), targets_(targets), class_weight_(class_weight),
      cardinality_(d.cardinality()) {
  if (s.strategy && s.strategy->num_workers() > 1 && distribute::shard_policy(d, fn) == data::AutoShardPolicy::OFF) {
    off_ = true;
    d_ = distribute::rebatched_for_worker(*s.strategy, d_);
  }
  if (copy_to) {  // host-to-device copies on the prefetch thread, overlapping the step
    d_ = d_.map([copy_to](const data::Element& e) {
             std::vector<Tensor> flat = e.flatten();
             for (auto& t : flat) t = t.to(*copy_to);
             return e.with_tensors(flat);
           })
             .prefetch(2);
  }
}

int64_t PipelineSource::batches_per_pass() const { return cardinality_ >= 0 ? cardinality_ : INT64_MAX; }

void PipelineSource::begin_pass() {
  it_.reset();  // the previous pass's threads stop first
  it_.emplace(d_.make_iterator());
}

bool PipelineSource::next(Batch& out) { return off_ ? next_pieces(out) : next_element(out); }

// AutoShardPolicy::OFF: one piece of this worker's copy per local replica, joined into one batch; the workers'
// rows are then gathered, so that every worker knows the global batch, and whether any worker still has data.
bool PipelineSource::next_pieces(Batch& out) {
  auto& st = *s_.strategy;
  const int n = st.num_replicas();
  std::vector<Batch> pieces;
  std::vector<int64_t> offsets{0};
  for (int r = 0; r < n; ++r) {
    Batch b;
    if (!next_element(b)) break;
    offsets.push_back(offsets.back() + b.x[0].shape()[0]);
    pieces.push_back(std::move(b));
  }
  offsets.resize(static_cast<std::size_t>(n) + 1, offsets.back());
  if (pieces.size() == 1) {
    out = std::move(pieces[0]);
  } else if (!pieces.empty()) {
    auto join = [&](auto get) {
      std::vector<Tensor> parts;
      for (auto& p : pieces) parts.push_back(get(p));
      return parts[0].defined() ? osprey::ops::concat(parts, 0) : Tensor();
    };
    out = Batch{};
    for (std::size_t i = 0; i < pieces[0].x.size(); ++i) out.x.push_back(join([&](Batch& p) { return p.x[i]; }));
    for (std::size_t i = 0; i < pieces[0].y.size(); ++i) out.y.push_back(join([&](Batch& p) { return p.y[i]; }));
    for (std::size_t i = 0; i < pieces[0].w.size(); ++i) {
      out.w.push_back(join([&](Batch& p) { return i < p.w.size() ? p.w[i] : Tensor(); }));
    }
  }
  if (!pieces.empty() && !no_rows_) {
    no_rows_ = Batch{rows_of(out.x, 0, 0), rows_of(out.y, 0, 0), weight_rows(out.w, 0, 0), Tensor()};
  }
  const int64_t rows = offsets.back();
  const auto all = st.workers()->all_gather(std::vector<int64_t>{rows, no_rows_ ? 1 : 0});
  int64_t global = 0;
  std::vector<int> without;
  for (std::size_t w = 0; w < all.size() / 2; ++w) {
    global += all[2 * w];
    if (!all[2 * w + 1]) without.push_back(static_cast<int>(w));
  }
  if (global == 0) return false;
  if (!without.empty()) {
    throw ValueError(fmt::format("{}: with auto_shard_policy OFF, worker {}'s dataset gave no batch at all while "
                                 "other workers' did: every worker's copy needs at least one batch",
                                 fn_, without[0]));
  }
  if (pieces.empty()) out = *no_rows_;
  out.replica_offsets = std::move(offsets);
  out.global_rows = global;
  return true;
}

bool PipelineSource::next_element(Batch& out) {
  if (!it_) begin_pass();
  auto e = it_->next();
  if (!e) return false;
  // Keras's unpack_x_y_sample_weight: a tuple of 1, 2 or 3 is (x), (x, y), (x, y, sample_weight); else all is x.
  const data::Element* parts[3] = {&*e, nullptr, nullptr};
  if (e->kind() == data::Element::Kind::tuple) {
    if (e->size() < 1 || e->size() > 3) {
      throw ValueError(fmt::format("{}: Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, "
                                   "sample_weight)`, found: a dataset element {}",
                                   fn_, e->spec()));
    }
    for (int64_t i = 0; i < 3; ++i) parts[i] = i < e->size() ? &(*e)[i] : nullptr;
  }
  if (targets_ && !parts[1]) {
    throw ValueError(fmt::format("{}: the dataset's elements are {}; {} needs (x, y) or (x, y, sample_weight) "
                                 "tuples",
                                 fn_, e->spec(), fn_));
  }
  Arrays y = parts[1] && targets_ ? arrays_of(*parts[1], fn_, "y") : Arrays();
  auto [xs, ys] = data_of(model_, s_, arrays_of(*parts[0], fn_, "x"), targets_ ? &y : nullptr, fn_);
  Weights w;
  if ((parts[2] && targets_) || (class_weight_ && !class_weight_->empty())) {
    // One tensor for every output, or a tuple (in the outputs' order) or map (by their names) of one per output.
    std::optional<Arrays> given;
    if (parts[2] && targets_) given = arrays_of(*parts[2], fn_, "sample_weight");
    w = sample_weights(model_, xs[0].shape()[0], ys, given, class_weight_ ? *class_weight_ : std::map<int, double>{},
                       fn_);
  }
  out = Batch{std::move(xs), std::move(ys), std::move(w), Tensor()};
  return true;
}

}  // namespace osprey::keras::trainer
