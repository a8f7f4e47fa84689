// The strategies' input side: InputContext, DistributedDataset (with the workers' agreement on whether any has
// data), the generators behind experimental_distribute_dataset and distribute_datasets_from_function, and the
// multi-worker auto-shard policies (DATA: each worker's rows of every global batch; OFF: each worker's own copy,
// rebatched into TensorFlow's batch_sizes_for_worker pieces).
#include <algorithm>

#include <fmt/format.h>

#include "data/pipeline.h"
#include "distribute/strategy_impl.h"
#include "distribute/worker_group.h"
#include "osprey/distribute.h"
#include "osprey/errors.h"

namespace osprey::distribute {

int64_t InputContext::get_per_replica_batch_size(int64_t global_batch_size) const {
  if (num_replicas_in_sync <= 0 || global_batch_size % num_replicas_in_sync != 0) {
    throw ValueError(fmt::format("The `global_batch_size` {} is not divisible by `num_replicas_in_sync` {} ",
                                 global_batch_size, num_replicas_in_sync));
  }
  return global_batch_size / num_replicas_in_sync;
}

DistributedDataset::DistributedDataset(std::shared_ptr<StrategyImpl> strategy, BatchGenerator generator)
    : strategy_(std::move(strategy)), generator_(std::move(generator)) {}

std::optional<std::vector<PerReplica>> DistributedDataset::next() {
  if (finished_) return std::nullopt;
  const int n = strategy_->num_replicas();
  std::vector<PerReplica> out;
  int got = 0;
  for (int r = 0; r < n; ++r) {
    std::optional<std::vector<Tensor>> batch = done_ ? std::nullopt : generator_();
    if (!batch) {
      done_ = true;
      break;
    }
    if (width_ == 0) width_ = batch->size();
    if (out.empty()) out.resize(width_);
    if (batch->size() != out.size()) {
      throw ValueError(fmt::format("The input function's batches changed from {} to {} tensors", out.size(),
                                   batch->size()));
    }
    for (size_t k = 0; k < batch->size(); ++k) out[k].values.push_back((*batch)[k].to(*strategy_->devices()[r]));
    ++got;
  }
  if (strategy_->num_workers() > 1) {  // does any worker still have data?
    const auto all = strategy_->workers()->all_gather(std::vector<int64_t>{got});
    if (std::all_of(all.begin(), all.end(), [](int64_t g) { return g == 0; })) {
      finished_ = true;
      return std::nullopt;
    }
    if (got == 0) {
      if (width_ == 0) {
        throw ValueError(fmt::format("Worker {}'s input has no batch at all while other workers' have: its replicas "
                                     "cannot take part without knowing the batches' structure",
                                     strategy_->worker_index()));
      }
      out.resize(width_);
    }
  } else if (got == 0) {
    finished_ = true;
    return std::nullopt;
  }
  for (auto& pr : out) pr.values.resize(static_cast<std::size_t>(n));  // past the end: undefined values
  return out;
}

DistributedDataset MirroredStrategy::distribute_datasets_from_function(
    const std::function<BatchGenerator(const InputContext&)>& fn) const {
  InputContext ctx{1, 0, impl_->num_replicas()};
  return DistributedDataset(impl_, fn(ctx));
}

BatchGenerator generator_of(const data::Dataset& dataset) {
  auto it = std::make_shared<std::optional<data::Iterator>>();
  return [it, dataset]() -> std::optional<std::vector<Tensor>> {
    if (!*it) it->emplace(dataset.make_iterator());
    auto e = (*it)->next();
    if (!e) return std::nullopt;
    return e->flatten();
  };
}

DistributedDataset MirroredStrategy::distribute_datasets_from_function(
    const std::function<data::Dataset(const InputContext&)>& fn) const {
  InputContext ctx{1, 0, impl_->num_replicas()};
  return DistributedDataset(impl_, generator_of(fn(ctx)));
}

BatchGenerator rebatching_generator(std::shared_ptr<StrategyImpl> strategy, const data::Dataset& dataset) {
  struct Rebatch {
    std::shared_ptr<StrategyImpl> strategy;
    data::Dataset dataset;
    std::optional<data::Iterator> it;
    std::vector<std::vector<Tensor>> pending;  // the current global batch's shards not handed out yet, in order
    std::size_t next = 0;
  };
  auto st = std::make_shared<Rebatch>(Rebatch{std::move(strategy), dataset, std::nullopt, {}, 0});
  return [st]() -> std::optional<std::vector<Tensor>> {
    if (st->next == st->pending.size()) {
      if (!st->it) st->it.emplace(st->dataset.make_iterator());
      auto e = st->it->next();
      if (!e) return std::nullopt;
      const auto flat = e->flatten();
      const int64_t batch = flat.empty() || flat[0].shape().rank() == 0 ? -1 : flat[0].shape()[0];
      for (const auto& t : flat) {
        if (t.shape().rank() == 0 || t.shape()[0] != batch) {
          throw ValueError(fmt::format("experimental_distribute_dataset: an element ({}) is not a global batch: "
                                       "every tensor needs the same first (batch) dimension",
                                       e->spec()));
        }
      }
      const int in_sync = st->strategy->num_replicas_in_sync(), off = st->strategy->replica_offset();
      st->pending.clear();
      st->next = 0;
      for (int r = 0; r < st->strategy->num_replicas(); ++r) {
        const auto [b, end] = replica_rows(batch, in_sync, off + r);
        std::vector<Tensor> rows;
        for (const auto& t : flat) rows.push_back(t.slice_rows(b, end));
        st->pending.push_back(std::move(rows));
      }
    }
    return st->pending[st->next++];
  };
}

DistributedDataset MirroredStrategy::experimental_distribute_dataset(const data::Dataset& dataset) const {
  return DistributedDataset(impl_, rebatching_generator(impl_, dataset));
}

DistributedDataset MultiWorkerMirroredStrategy::distribute_datasets_from_function(
    const std::function<BatchGenerator(const InputContext&)>& fn) const {
  InputContext ctx{num_workers(), worker_index(), num_replicas_in_sync()};
  return DistributedDataset(impl_, fn(ctx));
}

std::vector<int64_t> batch_sizes_for_worker(int64_t global_batch_size, int num_workers, int num_replicas_per_worker,
                                            int worker_index) {
  if (global_batch_size < 0 || num_workers <= 0 || num_replicas_per_worker <= 0) {
    throw ValueError(fmt::format("batch_sizes_for_worker: global_batch_size must be >= 0 and num_workers and "
                                 "num_replicas_per_worker positive; got {}, {} and {}",
                                 global_batch_size, num_workers, num_replicas_per_worker));
  }
  if (worker_index < 0 || worker_index >= num_workers) {
    throw ValueError(fmt::format("batch_sizes_for_worker: worker_index {} is not in [0, {})", worker_index, num_workers));
  }
  const int64_t pieces = static_cast<int64_t>(num_workers) * num_replicas_per_worker;
  const int64_t floor = global_batch_size / pieces, ceil_count = global_batch_size - floor * pieces;
  const int64_t offset = static_cast<int64_t>(worker_index) * num_replicas_per_worker;
  std::vector<int64_t> out(static_cast<std::size_t>(pieces));
  for (int64_t i = 0; i < pieces; ++i) {
    const int64_t at_worker0 = (i + offset) % pieces;  // worker 0's list rotated left by the offset
    out[static_cast<std::size_t>(i)] = floor + (at_worker0 < ceil_count ? 1 : 0);
  }
  return out;
}

data::AutoShardPolicy shard_policy(const data::Dataset& dataset, const char* fn) {
  const auto policy = dataset.options().auto_shard_policy();
  if (policy == data::AutoShardPolicy::FILE) {
    std::string source = dataset.describe();
    source = source.substr(0, source.find(' '));
    throw NotFoundError(fmt::format("{}: the dataset's auto_shard_policy is FILE, but it has no source that reads "
                                    "files: Found an unshardable source dataset: {} (Osprey shards no source by "
                                    "file yet, make_csv_dataset's CsvDataset included). Set "
                                    "data::Options().experimental_distribute.auto_shard_policy to DATA or OFF.",
                                    fn, source));
  }
  return policy == data::AutoShardPolicy::OFF ? policy : data::AutoShardPolicy::DATA;
}

data::Dataset rebatched_for_worker(const StrategyImpl& strategy, const data::Dataset& dataset) {
  const int workers = strategy.num_workers(), replicas = strategy.num_replicas(), me = strategy.worker_index();
  // The global batch: the pipeline's batch() size (as tf.data's compute_batch_size), else the first element's rows.
  const auto fixed = dataset.node()->static_batch_size();
  return data::Dataset(data::detail::make_rebatch(
      dataset.node(),
      [workers, replicas, me, fixed](int64_t first_rows) {
        return batch_sizes_for_worker(fixed.value_or(first_rows), workers, replicas, me);
      },
      false));
}

DistributedDataset MultiWorkerMirroredStrategy::distribute_datasets_from_function(
    const std::function<data::Dataset(const InputContext&)>& fn) const {
  InputContext ctx{num_workers(), worker_index(), num_replicas_in_sync()};
  return DistributedDataset(impl_, generator_of(fn(ctx)));
}

DistributedDataset MultiWorkerMirroredStrategy::experimental_distribute_dataset(const data::Dataset& dataset) const {
  if (impl_->num_workers() > 1 &&
      shard_policy(dataset, "experimental_distribute_dataset") == data::AutoShardPolicy::OFF) {
    // One piece per replica call: the worker's copy, rebatched.
    return DistributedDataset(impl_, generator_of(rebatched_for_worker(*impl_, dataset)));
  }
  return DistributedDataset(impl_, rebatching_generator(impl_, dataset));
}

}  // namespace osprey::distribute
