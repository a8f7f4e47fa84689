// MultiWorkerMirroredStrategy in one process (issue 19): TF_CONFIG against the launch, a cluster of one worker
// (no MPI), and that such a worker trains as MirroredStrategy does. The multi-process cases are
// tests/distribute/multi_worker_test.sh (mpirun).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include <cstdlib>

#include "distribute/worker_group.h"
#include "osprey/osprey.h"
#include "support/cpu_machine.h"
#include "test_util.h"

using namespace osprey;
namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;
using distribute::resolve_cluster;
using osprey::testing::error_of;
using ::testing::HasSubstr;

namespace {

const std::string kTwo = R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}})";
const std::string kChief = R"({"cluster": {"chief": ["c:1"], "worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}})";

TEST(ResolveCluster, WithoutTfConfigTheMpiWorldIsTheCluster) {
  auto alone = resolve_cluster(std::nullopt, false, 0, 1);
  EXPECT_EQ(alone.num_workers, 1);
  EXPECT_EQ(alone.worker_index, 0);
  EXPECT_FALSE(alone.from_tf_config);
  auto launched = resolve_cluster(std::nullopt, true, 2, 4);
  EXPECT_EQ(launched.num_workers, 4);
  EXPECT_EQ(launched.worker_index, 2);
  EXPECT_EQ(launched.task_type, "worker");
  EXPECT_EQ(launched.task_id, 2);
}

TEST(ResolveCluster, TfConfigNumbersTheChiefFirstThenTheWorkers) {
  auto w = resolve_cluster(kTwo, true, 1, 2);
  EXPECT_EQ(w.num_workers, 2);
  EXPECT_EQ(w.worker_index, 1);
  EXPECT_EQ(w.task_id, 1);
  EXPECT_EQ(w.cluster.at("worker"), (std::vector<std::string>{"a:1", "b:1"}));
  auto c = resolve_cluster(kChief, true, 2, 3);
  EXPECT_EQ(c.num_workers, 3);
  EXPECT_EQ(c.worker_index, 2);  // chief is 0, worker 0 is 1, worker 1 is 2
  auto chief = resolve_cluster(R"({"cluster": {"chief": ["c:1"], "worker": ["a:1"]}, "task": {"type": "chief", "index": 0}})",
                               true, 0, 2);
  EXPECT_EQ(chief.worker_index, 0);
  EXPECT_EQ(chief.task_type, "chief");
  // One worker needs no launcher.
  auto one = resolve_cluster(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})", false, 0, 1);
  EXPECT_EQ(one.num_workers, 1);
}

TEST(ResolveCluster, MalformedTfConfigIsAValueErrorSayingWhat) {
  auto err = [](const std::string& cfg, bool launched = true, int rank = 1, int size = 2) {
    return error_of<ValueError>([&] { resolve_cluster(cfg, launched, rank, size); });
  };
  EXPECT_THAT(err(R"({"cluster": )"), HasSubstr("TF_CONFIG is not valid JSON"));
  EXPECT_THAT(err("[1, 2]"), HasSubstr("TF_CONFIG must be a JSON object"));
  EXPECT_THAT(err(R"({"cluster": {"worker": "a:1"}, "task": {"type": "worker", "index": 0}})"),
              HasSubstr("must be a list of \"host:port\" addresses"));
  EXPECT_THAT(err(R"({"cluster": {"worker": ["a:1", 7]}, "task": {"type": "worker", "index": 0}})"),
              HasSubstr("not a string: 7"));
  EXPECT_THAT(err(R"({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}})"),
              HasSubstr("There must be at most one 'chief' job"));
  EXPECT_THAT(err(R"({"cluster": {"worker": ["a:1", "b:1"]}})"), HasSubstr("no task type"));
  EXPECT_THAT(err(R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker"}})"),
              HasSubstr("needs an integer \"index\""));
  EXPECT_THAT(err(R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 2}})"),
              HasSubstr("task index 2 is out of range: job 'worker' has 2 task(s) ['a:1', 'b:1']"));
  EXPECT_THAT(err(R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}})"),
              HasSubstr("task type 'chief' is not a job of its cluster"));
  EXPECT_THAT(err(R"({"cluster": {"worker": ["a:1"], "ps": ["p:1"]}, "task": {"type": "worker", "index": 0}})"),
              HasSubstr("parameter servers"));
  EXPECT_THAT(err(R"({"cluster": {"trainer": ["a:1"]}, "task": {"type": "trainer", "index": 0}})"),
              HasSubstr("unknown job 'trainer'"));
  EXPECT_THAT(err(R"({"cluster": {"worker": ["a:1"], "evaluator": ["e:1"]}, "task": {"type": "evaluator", "index": 0}})"),
              HasSubstr("evaluator"));
}

TEST(ResolveCluster, ATfConfigThatDoesNotMatchTheLaunchIsAValueError) {
  EXPECT_THAT(error_of<ValueError>([] { resolve_cluster(kTwo, false, 0, 1); }),
              HasSubstr("describes a cluster of 2 workers, but this process was started alone (no MPI launcher): "
                        "start every worker with one launch, e.g. `mpirun -np 2 ./train`"));
  EXPECT_THAT(error_of<ValueError>([] { resolve_cluster(kChief, true, 1, 2); }),
              HasSubstr("TF_CONFIG's cluster has 3 worker(s) (chief + worker jobs), but an MPI launch of 2 "
                        "process(es): launch exactly 3 processes"));
  EXPECT_THAT(error_of<ValueError>([] { resolve_cluster(kTwo, true, 0, 2); }),
              HasSubstr("TF_CONFIG says this process is worker 1 (worker 1 of 2: the chief first, then the workers), "
                        "but the MPI launch made it rank 0"));
}

void split_cpu(int n) {
  osprey::testing::reset_runtime_cpu_only();
  std::vector<LogicalDeviceConfiguration> configs(static_cast<std::size_t>(n));
  config::set_logical_device_configuration(config::list_physical_devices("CPU")[0], configs);
}

std::vector<std::vector<float>> train(std::function<std::unique_ptr<keras::Sequential>()> make) {
  random::set_seed(11);
  const Tensor x = random::uniform({100, 6}, -1, 1), y = random::randint(0, 3, {100}).cast(DType::float32);
  random::set_seed(4);
  auto m = make();
  m->compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  m->fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0});
  std::vector<std::vector<float>> out;
  for (auto* v : m->variables()) out.push_back(v->component(0).to_vector<float>());
  for (double r : m->evaluate(x, y, {.verbose = 0})) out.push_back({static_cast<float>(r)});
  return out;
}

std::unique_ptr<keras::Sequential> model() {
  return std::make_unique<keras::Sequential>(
      std::vector<keras::LayerRef>{layers::Input({6}), layers::Dense(8, "relu"), layers::Dense(3, "softmax")});
}

TEST(MultiWorkerMirroredStrategy, AProcessStartedAloneIsAClusterOfOneThatTrainsAsMirroredStrategy) {
  split_cpu(2);
  const auto mirrored = train([] {
    distribute::MirroredStrategy s;
    auto scope = s.scope();
    return model();
  });
  distribute::MultiWorkerMirroredStrategy s;
  EXPECT_EQ(s.num_workers(), 1);
  EXPECT_EQ(s.worker_index(), 0);
  EXPECT_TRUE(s.is_chief());
  EXPECT_EQ(s.num_replicas_in_sync(), 2);
  EXPECT_EQ(s.task_type(), "worker");
  EXPECT_EQ(s.devices(), (std::vector<std::string>{"/job:worker/replica:0/task:0/device:CPU:0",
                                                   "/job:worker/replica:0/task:0/device:CPU:1"}));
  const auto workers = train([&] {
    auto scope = s.scope();
    return model();
  });
  EXPECT_EQ(workers, mirrored);  // bit for bit
  // run() and reduce() over the replicas.
  const auto values = s.run([](const distribute::ReplicaContext& c) {
    return Tensor::full(Shape({2}), static_cast<double>(c.replica_id_in_sync_group + 1));
  });
  EXPECT_EQ(s.reduce(distribute::ReduceOp::SUM, values).to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(s.reduce(distribute::ReduceOp::MEAN, values).to_vector<float>(), (std::vector<float>{1.5, 1.5}));
  EXPECT_EQ(s.reduce(distribute::ReduceOp::SUM, values, 0).to_vector<float>(), (std::vector<float>{6}));
  EXPECT_EQ(s.reduce(distribute::ReduceOp::MEAN, values, 0).to_vector<float>(), (std::vector<float>{1.5}));
  s.barrier();  // one worker: returns at once
  // One input pipeline per worker; its batches go to this worker's replicas.
  distribute::InputContext seen;
  int calls = 0;
  auto dataset = s.distribute_datasets_from_function([&](const distribute::InputContext& ctx) {
    seen = ctx;
    return distribute::BatchGenerator([&calls]() -> std::optional<std::vector<Tensor>> {
      if (calls == 3) return std::nullopt;
      return std::vector<Tensor>{Tensor::full(Shape({1}), ++calls)};
    });
  });
  EXPECT_EQ(seen.num_input_pipelines, 1);
  EXPECT_EQ(seen.input_pipeline_id, 0);
  EXPECT_EQ(seen.num_replicas_in_sync, 2);
  auto first = dataset.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)[0].values.size(), 2u);
  EXPECT_EQ((*first)[0].values[1].to_vector<float>(), (std::vector<float>{2}));
  osprey::testing::reset_runtime();
}

TEST(MultiWorkerMirroredStrategy, BadOptionsAreValueErrors) {
  osprey::testing::reset_runtime_cpu_only();  // "NCCL needs GPUs"
  EXPECT_THAT(error_of<ValueError>([] {
                distribute::MultiWorkerMirroredStrategy s({.implementation = distribute::CommunicationImplementation::NCCL});
              }),
              HasSubstr("NCCL needs GPUs"));
  EXPECT_THAT(error_of<ValueError>([] { distribute::MultiWorkerMirroredStrategy s({.bytes_per_pack = -1}); }),
              HasSubstr("bytes_per_pack must be non-negative, got -1"));
  setenv("OSPREY_COLLECTIVE_TIMEOUT", "soon", 1);
  EXPECT_THAT(error_of<ValueError>([] { distribute::MultiWorkerMirroredStrategy s; }),
              HasSubstr("OSPREY_COLLECTIVE_TIMEOUT must be a number of seconds, got 'soon'"));
  unsetenv("OSPREY_COLLECTIVE_TIMEOUT");
}

TEST(BatchSizesForWorker, AreTensorFlowsPiecesSummingToTheGlobalBatchEveryStep) {
  // TensorFlow's documented example: G = 7, 2 workers x 2 replicas.
  EXPECT_EQ(distribute::batch_sizes_for_worker(7, 2, 2, 0), (std::vector<int64_t>{2, 2, 2, 1}));
  EXPECT_EQ(distribute::batch_sizes_for_worker(7, 2, 2, 1), (std::vector<int64_t>{2, 1, 2, 2}));
  EXPECT_EQ(distribute::batch_sizes_for_worker(7, 2, 1, 1), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(distribute::batch_sizes_for_worker(2, 2, 2, 0), (std::vector<int64_t>{1, 1, 0, 0}));
  // Its constraints, over many shapes: W*R pieces summing to G, sizes within one of each other, and each step (R
  // pieces from every worker, taken in turn) summing to G.
  for (int64_t g : {0, 1, 5, 7, 32, 33, 100}) {
    for (int w = 1; w <= 4; ++w) {
      for (int r = 1; r <= 3; ++r) {
        std::vector<std::vector<int64_t>> all;
        for (int k = 0; k < w; ++k) all.push_back(distribute::batch_sizes_for_worker(g, w, r, k));
        for (const auto& sizes : all) {
          ASSERT_EQ(sizes.size(), static_cast<std::size_t>(w * r));
          EXPECT_EQ(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}), g);
          const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
          EXPECT_LE(*hi - *lo, 1);
        }
        for (int step = 0; step < w; ++step) {
          int64_t sum = 0;
          for (int k = 0; k < w; ++k) {
            for (int j = 0; j < r; ++j) sum += all[static_cast<std::size_t>(k)][static_cast<std::size_t>(step * r + j)];
          }
          EXPECT_EQ(sum, g) << "G " << g << ", " << w << " workers x " << r << ", step " << step;
        }
      }
    }
  }
  EXPECT_THAT(error_of<ValueError>([] { distribute::batch_sizes_for_worker(8, 2, 1, 2); }),
              HasSubstr("worker_index 2 is not in [0, 2)"));
  EXPECT_THAT(error_of<ValueError>([] { distribute::batch_sizes_for_worker(8, 0, 1, 0); }),
              HasSubstr("num_workers and num_replicas_per_worker positive; got 8, 0 and 1"));
}

TEST(MultiWorkerMirroredStrategy, OneWorkerIgnoresTheAutoShardPolicy) {
  // Sharding is between workers: a cluster of one trains on the dataset as it is, whatever the policy says (as
  // TensorFlow, which only shards with several workers).
  osprey::testing::reset_runtime_cpu_only();
  distribute::MultiWorkerMirroredStrategy strategy;
  for (auto policy : {data::AutoShardPolicy::OFF, data::AutoShardPolicy::FILE}) {
    data::Options o;
    o.experimental_distribute.auto_shard_policy = policy;
    auto dist = strategy.experimental_distribute_dataset(
        data::Dataset::from_tensor_slices(data::Element(Tensor::from_vector(std::vector<float>{1, 2, 3}, {3})))
            .batch(2)
            .with_options(o));
    auto first = dist.next();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ((*first)[0].values[0].to_vector<float>(), (std::vector<float>{1, 2}));
  }
  osprey::testing::reset_runtime();
}

}  // namespace
