// The multi-process checks of MultiWorkerMirroredStrategy (run by tests/distribute/multi_worker_test.sh under
// mpirun): one program that trains the same model on the same data alone, under MirroredStrategy on N logical CPUs,
// or as one worker of an MPI launch, and writes what it got (weights, history, evaluate, predict) as doubles, so
// that the script can compare the runs; and the failure cases (a worker that hangs, one that is killed).
//   multi_worker_check train <logical CPUs> <none|mirrored|workers> <out> [dataset|off|off_end|off_ref|off_end_ref|
//                          off_w|off_w_ref]
//                          (workers write <out> on the chief, <out>.rank<k> on the others; with a data mode the
//                          batches come from a data::Dataset: see dataset_for)
//   multi_worker_check masked <logical CPUs> <none|mirrored|workers> <out>  (a tagger whose output carries
//                          Embedding(mask_zero)'s mask, weights per step: weights, history, evaluate)
//   multi_worker_check off_checks <out>                                      (under mpirun -np 2)
//   multi_worker_check compare <a> <b> <tolerance>
//   multi_worker_check backup <logical CPUs> <none|workers> <backup dir> <out> [kill at step]
//                          (BackupAndRestore every 4 batches; with a step, the process -- worker 1 of workers --
//                          SIGKILLs itself before that global step unless <backup dir>.killed exists, which it
//                          creates first: the same command run again resumes)
//   multi_worker_check hang | die | mismatch                                 (under mpirun -np 2)
//   multi_worker_check cluster                                               (prints the strategy's cluster)
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <osprey/osprey.h>

using namespace osprey;
namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

namespace {

void split_cpu(int n) {
  std::vector<LogicalDeviceConfiguration> configs(static_cast<std::size_t>(n));
  config::set_logical_device_configuration(config::list_physical_devices("CPU")[0], configs);
}

struct Data {
  Tensor x, y, w;  // w: a weight per sample (the off_w modes)
};
Data make_data() {
  random::set_seed(7);
  DeviceScope cpu("/CPU:0");
  Data d;
  d.x = random::uniform({300, 12}, -1, 1);
  d.y = random::randint(0, 3, {300}).cast(DType::float32);
  d.w = random::uniform({300}, 0, 2);
  return d;
}

// With `weighted`, the sample weights' metric too (weighted_accuracy).
std::unique_ptr<keras::Sequential> make_model(bool weighted = false) {
  random::set_seed(3);
  auto m = std::make_unique<keras::Sequential>(std::vector<keras::LayerRef>{
      layers::Input({12}), layers::Dense(16, "relu"), layers::Dense(3, "softmax")});
  keras::MetricSpec weighted_metrics;
  if (weighted) weighted_metrics = {"accuracy"};
  m->compile({.optimizer = "adam",
              .loss = "sparse_categorical_crossentropy",
              .metrics = {"accuracy"},
              .weighted_metrics = weighted_metrics});
  return m;
}

// The data modes whose elements are (x, y, sample_weight).
bool weighted_mode(const std::string& data) { return data.rfind("off_w", 0) == 0; }

// Trains 3 epochs of 32-row batches (the last one short), shuffled, then evaluates and predicts. The batches come
// from the arrays, or (`data`):
//   dataset      a data::Dataset (seeded shuffle, a parallel map, prefetch): every worker reads all of it and trains
//                on its replicas' rows of each global batch (tf.data's auto-shard DATA);
//   off          the same shuffled 32-row batches with AutoShardPolicy::OFF: every worker reads its own copy in
//                16-row pieces (batch_sizes_for_worker for 2 workers), so each step's global batch is a piece twice;
//                an epoch is the dataset's 10 batches, as in Keras 3;
//   off_end      the same after filter() (cardinality unknown): an epoch runs until the copies end (19 steps, the
//                last of 12 rows on each worker);
//   off_ref, off_end_ref   what those are on one process: 16-row batches, each joined with itself, 10 or all 19
//                of them (under MirroredStrategy on 2 logical CPUs each replica takes one copy of a piece);
//   off_w, off_w_ref       off and off_ref with a weight per sample, (x, y, sample_weight) elements: the loss and
//                weighted_metrics of each worker's rows weighed by weights only that worker holds.
// With a dataset, evaluate and predict also run on it.
data::Dataset dataset_for(const Data& d, const std::string& data) {
  if (weighted_mode(data)) {
    auto shuffled = data::Dataset::from_tensor_slices(data::Element{d.x, d.y, d.w}).shuffle(300, 11);
    data::Options off;
    off.experimental_distribute.auto_shard_policy = data::AutoShardPolicy::OFF;
    if (data == "off_w") return shuffled.batch(32).with_options(off);
    if (data == "off_w_ref") {
      return shuffled.batch(16)
          .map([](const data::Element& e) {
            auto twice = [&](int i) { return ops::concat({e[i].tensor(), e[i].tensor()}, 0); };
            return data::Element{twice(0), twice(1), twice(2)};
          })
          .take(10);
    }
    throw ValueError("unknown data " + data);
  }
  auto shuffled = data::Dataset::from_tensor_slices(data::Element{d.x, d.y}).shuffle(300, 11);
  if (data == "dataset") return shuffled.batch(32).map([](const data::Element& e) { return e; }, 2).prefetch(data::AUTOTUNE);
  data::Options off;
  off.experimental_distribute.auto_shard_policy = data::AutoShardPolicy::OFF;
  const auto keep = [](const data::Element&) { return true; };
  if (data == "off") return shuffled.batch(32).with_options(off);
  if (data == "off_end") return shuffled.batch(32).filter(keep).with_options(off);
  auto twice = shuffled.batch(16).map([](const data::Element& e) {
    return data::Element{ops::concat({e[0].tensor(), e[0].tensor()}, 0), ops::concat({e[1].tensor(), e[1].tensor()}, 0)};
  });
  if (data == "off_ref") return twice.take(10);
  if (data == "off_end_ref") return twice.filter(keep);
  throw ValueError("unknown data " + data);
}

std::vector<double> train_and_report(keras::Sequential& m, int verbose, const std::string& data = "") {
  const Data d = make_data();
  random::set_seed(5);  // the shuffles
  std::optional<data::Dataset> ds;
  if (!data.empty()) ds = dataset_for(d, data);
  auto h = ds ? m.fit(*ds, {.epochs = 3, .verbose = verbose})
              : m.fit(d.x, d.y, {.epochs = 3, .batch_size = 32, .verbose = verbose});
  std::vector<double> out;
  for (auto* v : m.variables()) {
    for (float f : v->component(0).to_vector<float>()) out.push_back(f);
  }
  for (const auto& key : {"loss", "accuracy", "weighted_accuracy"}) {
    if (!h.history.count(key)) continue;
    for (double x : h.history.at(key)) out.push_back(x);
  }
  for (double x : m.evaluate(d.x, d.y, {.batch_size = 64, .verbose = 0})) out.push_back(x);
  for (float f : m.predict(d.x, {.batch_size = 50, .verbose = 0}).to_vector<float>()) out.push_back(f);
  if (ds && data != "dataset") {
    for (double x : m.evaluate(*ds, {.verbose = 0})) out.push_back(x);
    for (float f : m.predict(*ds, {.verbose = 0}).to_vector<float>()) out.push_back(f);
  }
  return out;
}

void write(const std::string& path, const std::vector<double>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(double)));
}

std::vector<double> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<double> v(bytes.size() / sizeof(double));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(double));
  return v;
}

int train(int cpus, const std::string& how, const std::string& out, const std::string& dataset) {
  split_cpu(cpus);
  if (how == "none") {
    auto m = make_model(weighted_mode(dataset));
    write(out, train_and_report(*m, 0, dataset));
    return 0;
  }
  if (how == "mirrored") {
    distribute::MirroredStrategy strategy;
    auto scope = strategy.scope();
    auto m = make_model(weighted_mode(dataset));
    write(out, train_and_report(*m, 0, dataset));
    return 0;
  }
  distribute::MultiWorkerMirroredStrategy strategy;
  std::unique_ptr<keras::Sequential> m;
  {
    auto scope = strategy.scope();
    m = make_model(weighted_mode(dataset));
  }
  std::cout << "worker " << strategy.worker_index() << " of " << strategy.num_workers() << ", "
            << strategy.num_replicas_in_sync() << " replicas in sync" << std::endl;
  if (dataset == "dataset") {  // experimental_distribute_dataset: worker w's replica takes replica w's rows
    std::vector<float> rows;
    for (int i = 0; i < 10; ++i) rows.push_back(static_cast<float>(i));
    auto dist = strategy.experimental_distribute_dataset(
        data::Dataset::from_tensor_slices(data::Element(Tensor::from_vector(rows, {10}))).batch(6));
    const int w = strategy.worker_index();
    const auto first = dist.next(), second = dist.next();
    const auto want_first = w == 0 ? std::vector<float>{0, 1, 2} : std::vector<float>{3, 4, 5};
    const auto want_second = w == 0 ? std::vector<float>{6, 7} : std::vector<float>{8, 9};
    if (!first || !second || (*first)[0].values[0].to_vector<float>() != want_first ||
        (*second)[0].values[0].to_vector<float>() != want_second || dist.next()) {
      std::cerr << "worker " << w << ": experimental_distribute_dataset gave other rows than its replica's\n";
      return 1;
    }
  }
  const auto v = train_and_report(*m, 2, dataset);  // only the chief prints (a test checks)
  write(strategy.is_chief() ? out : out + ".rank" + std::to_string(strategy.worker_index()), v);
  // Saving writes on the chief only (the test checks that worker 1's file does not exist).
  m->save_weights(out + ".worker" + std::to_string(strategy.worker_index()) + ".weights.osp");
  return 0;
}

// Trains with BackupAndRestore; writes the weights, evaluate and predict (not the history: a resumed run's covers
// only its own epochs).
int backup(int cpus, const std::string& how, const std::string& dir, const std::string& out, int kill_at) {
  split_cpu(cpus);
  std::unique_ptr<distribute::MultiWorkerMirroredStrategy> strategy;
  std::unique_ptr<keras::Sequential> m;
  if (how == "workers") {
    strategy = std::make_unique<distribute::MultiWorkerMirroredStrategy>();
    auto scope = strategy->scope();
    m = make_model();
  } else {
    m = make_model();
  }
  const int worker = strategy ? strategy->worker_index() : 0;
  const Data d = make_data();
  random::set_seed(5);  // the shuffles
  auto backup = std::make_shared<keras::callbacks::BackupAndRestore>(dir, keras::callbacks::BackupAndRestoreOptions{.save_freq = 4});
  int step = 0;
  const std::string marker = dir + ".killed";
  auto killer = std::make_shared<keras::callbacks::LambdaCallback>(keras::callbacks::LambdaCallbackOptions{
      .on_train_batch_begin = [&](int, keras::Logs&) {
        if (++step == kill_at && worker == (strategy ? 1 : 0) && !std::ifstream(marker)) {
          std::ofstream(marker) << "killed at step " << step << "\n";
          std::cout << "worker " << worker << ": SIGKILL before step " << step << std::endl;
          raise(SIGKILL);
        }
      }});
  auto h = m->fit(d.x, d.y, {.epochs = 3, .batch_size = 32, .verbose = 0, .callbacks = {backup, killer}});
  std::cout << "worker " << worker << ": ran " << step << " steps, epochs";
  for (int e : h.epoch) std::cout << " " << e;
  std::cout << std::endl;
  std::vector<double> v;
  for (auto* var : m->variables()) {
    for (float f : var->component(0).to_vector<float>()) v.push_back(f);
  }
  for (double x : m->evaluate(d.x, d.y, {.batch_size = 64, .verbose = 0})) v.push_back(x);
  for (float f : m->predict(d.x, {.batch_size = 50, .verbose = 0}).to_vector<float>()) v.push_back(f);
  write(worker == 0 ? out : out + ".rank" + std::to_string(worker), v);
  return 0;
}

int compare(const std::string& a, const std::string& b, double tolerance) {
  const auto x = read(a), y = read(b);
  if (x.size() != y.size() || x.empty()) {
    std::cout << a << " has " << x.size() << " values, " << b << " has " << y.size() << "\n";
    return 1;
  }
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(x[i] - y[i]);
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  std::cout << a << " vs " << b << ": " << x.size() << " values, largest difference " << worst << " (value " << at
            << ")" << (worst <= tolerance ? "" : " > tolerance") << "\n";
  return worst <= tolerance ? 0 : 1;
}

// Under mpirun -np 2: worker 1 stops taking part after a few steps (sleeps), or is killed.
int misbehave(bool die) {
  distribute::MultiWorkerMirroredStrategy strategy;
  std::unique_ptr<keras::Sequential> m;
  {
    auto scope = strategy.scope();
    m = make_model();
  }
  const Data d = make_data();
  int steps = 0;
  auto cb = std::make_shared<keras::callbacks::LambdaCallback>(keras::callbacks::LambdaCallbackOptions{
      .on_train_batch_begin = [&](int, keras::Logs&) {
        if (strategy.worker_index() == 1 && ++steps == 4) {
          if (die) raise(SIGKILL);
          sleep(600);
        }
      }});
  try {
    m->fit(d.x, d.y, {.epochs = 2, .batch_size = 32, .verbose = 0, .callbacks = {cb}});
  } catch (const DeadlineExceededError& e) {
    std::cout << "worker " << strategy.worker_index() << ": DeadlineExceededError: " << e.what() << std::endl;
    return 3;
  }
  std::cout << "worker " << strategy.worker_index() << " finished training\n";
  return 0;
}

// AutoShardPolicy OFF beyond fit's equality with one process (under mpirun -np 2): experimental_distribute_dataset's
// pieces; copies of different lengths (worker 1's ends first: the steps go on until worker 0's ends, the same on
// both, and the weights stay the same); FILE, which no Osprey source supports, is a NotFoundError. Prints
// "worker <w>: off checks passed" or what went wrong.
int off_checks(const std::string& out) {
  distribute::MultiWorkerMirroredStrategy strategy;
  const int w = strategy.worker_index();
  auto fail = [&](const std::string& what) {
    std::cout << "worker " << w << ": " << what << std::endl;
    return 1;
  };
  data::Options off;
  off.experimental_distribute.auto_shard_policy = data::AutoShardPolicy::OFF;
  auto rows = [](int64_t n) {
    std::vector<float> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>(i));
    return data::Dataset::from_tensor_slices(data::Element(Tensor::from_vector(v, {n})));
  };
  // 10 rows in global batches of 7: worker 0's pieces are 4, 3, 4... rows, worker 1's 3, 4, 3... (its copy cut the
  // other way round), across the batches' boundaries; worker 1's copy of 5 rows ends after two steps.
  for (const bool uneven : {false, true}) {
    auto dist = strategy.experimental_distribute_dataset(rows(uneven && w == 1 ? 5 : 10).batch(7).with_options(off));
    std::vector<std::vector<float>> want = w == 0 ? std::vector<std::vector<float>>{{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}}
                                                  : std::vector<std::vector<float>>{{0, 1, 2}, {3, 4, 5, 6}, {7, 8, 9}};
    if (uneven && w == 1) want = {{0, 1, 2}, {3, 4}};
    for (std::size_t step = 0; step < 3; ++step) {
      const auto got = dist.next();
      if (!got) return fail("experimental_distribute_dataset ended before step " + std::to_string(step));
      const auto& value = (*got)[0].values[0];
      if (step < want.size() ? !value.defined() || value.to_vector<float>() != want[step] : value.defined()) {
        return fail("experimental_distribute_dataset's step " + std::to_string(step) + " is " +
                    (value.defined() ? value.to_string() : std::string("undefined")));
      }
    }
    if (dist.next()) return fail("experimental_distribute_dataset did not end after 3 steps");
  }
  // distribute_datasets_from_function with a Dataset: each worker shards by its input pipeline.
  auto sharded = strategy.distribute_datasets_from_function([&](const distribute::InputContext& ctx) {
    return rows(8).shard(ctx.num_input_pipelines, ctx.input_pipeline_id).batch(ctx.get_per_replica_batch_size(4));
  });
  for (int step = 0; step < 2; ++step) {
    const auto got = sharded.next();
    const std::vector<float> want = {static_cast<float>(4 * step + w), static_cast<float>(4 * step + w + 2)};
    if (!got || (*got)[0].values[0].to_vector<float>() != want) {
      return fail("distribute_datasets_from_function's step " + std::to_string(step) + " is not its shard's rows");
    }
  }
  if (sharded.next()) return fail("distribute_datasets_from_function did not end after 2 steps");
  // fit on copies of different lengths.
  std::unique_ptr<keras::Sequential> m;
  {
    auto scope = strategy.scope();
    m = make_model();
  }
  const Data d = make_data();
  const auto keep = [](const data::Element&) { return true; };
  const auto ds = data::Dataset::from_tensor_slices(data::Element{d.x, d.y})
                      .take(w == 1 ? 200 : 300)
                      .batch(32)
                      .filter(keep)
                      .with_options(off);
  int steps = 0;
  auto count = std::make_shared<keras::callbacks::LambdaCallback>(
      keras::callbacks::LambdaCallbackOptions{.on_train_batch_end = [&](int, keras::Logs&) { ++steps; }});
  m->fit(ds, {.epochs = 2, .verbose = 0, .callbacks = {count}});
  if (steps != 2 * 19) return fail("fit ran " + std::to_string(steps) + " steps; 19 per epoch expected (300 rows in 16s)");
  std::vector<double> v;
  for (auto* var : m->variables()) {
    for (float f : var->component(0).to_vector<float>()) v.push_back(f);
  }
  write(w == 0 ? out : out + ".rank" + std::to_string(w), v);
  // FILE: a NotFoundError naming the source, on every worker, before any step.
  data::Options file;
  file.experimental_distribute.auto_shard_policy = data::AutoShardPolicy::FILE;
  try {
    m->fit(ds.with_options(file), {.epochs = 1, .verbose = 0});
    return fail("FILE did not fail");
  } catch (const NotFoundError& e) {
    if (std::string(e.what()).find("Found an unshardable source dataset: TensorSliceDataset") == std::string::npos) {
      return fail(std::string("FILE's error: ") + e.what());
    }
  }
  std::cout << "worker " << w << ": off checks passed" << std::endl;
  return 0;
}

}  // namespace

// Padded token sequences of different lengths (the replicas' shards hold different numbers of real steps), a tag
// and a weight per step; trained, then evaluated, by a tagger whose output carries Embedding(mask_zero)'s mask.
int masked(int cpus, const std::string& how, const std::string& out) {
  split_cpu(cpus);
  std::unique_ptr<distribute::MirroredStrategy> mirrored;
  std::unique_ptr<distribute::MultiWorkerMirroredStrategy> workers;
  if (how == "mirrored") mirrored = std::make_unique<distribute::MirroredStrategy>();
  if (how == "workers") workers = std::make_unique<distribute::MultiWorkerMirroredStrategy>();
  std::optional<distribute::StrategyScope> scope;
  if (mirrored) scope.emplace(mirrored->scope());
  if (workers) scope.emplace(workers->scope());
  random::set_seed(3);
  auto in = keras::Input({8}, {.dtype = DType::int32});
  auto hidden = layers::SimpleRNN(6, {}, {.return_sequences = true})(layers::Embedding(9, 4, {.mask_zero = true})(in));
  keras::Model m(in, layers::Dense(3, "softmax")(hidden));
  m.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .weighted_metrics = {"accuracy"}});
  scope.reset();
  random::set_seed(13);
  Tensor tokens, tags, w;
  {
    DeviceScope cpu("/CPU:0");
    auto ids = random::randint(1, 9, {96, 8}).to_vector<int32_t>();
    const auto lengths = random::randint(1, 9, {96}).to_vector<int32_t>();
    for (int i = 0; i < 96; ++i) {
      for (int t = lengths[static_cast<std::size_t>(i)]; t < 8; ++t) ids[static_cast<std::size_t>(i * 8 + t)] = 0;
    }
    tokens = Tensor::from_vector(ids, Shape({96, 8}));
    tags = random::randint(0, 3, {96, 8}).cast(DType::float32);
    w = random::uniform({96, 8}, 0, 2);
  }
  auto h = m.fit(tokens, tags, {.epochs = 2, .batch_size = 24, .verbose = 0, .shuffle = false, .sample_weight = w});
  std::vector<double> v;
  for (auto* var : m.variables()) {
    for (float f : var->component(0).to_vector<float>()) v.push_back(f);
  }
  for (const auto& [key, values] : h.history) v.insert(v.end(), values.begin(), values.end());
  for (double x : m.evaluate(tokens, tags, {.batch_size = 20, .verbose = 0, .sample_weight = w})) v.push_back(x);
  const bool chief = !workers || workers->is_chief();
  write(chief ? out : out + ".rank" + std::to_string(workers->worker_index()), v);
  return 0;
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "train" && (argc == 5 || argc == 6)) {
      return train(std::atoi(argv[2]), argv[3], argv[4], argc == 6 ? argv[5] : "");
    }
    if (mode == "backup" && (argc == 6 || argc == 7)) {
      return backup(std::atoi(argv[2]), argv[3], argv[4], argv[5], argc == 7 ? std::atoi(argv[6]) : -1);
    }
    if (mode == "off_checks" && argc == 3) return off_checks(argv[2]);
    if (mode == "masked" && argc == 5) return masked(std::atoi(argv[2]), argv[3], argv[4]);
    if (mode == "compare" && argc == 5) return compare(argv[2], argv[3], std::atof(argv[4]));
    if (mode == "hang" || mode == "die") return misbehave(mode == "die");
    if (mode == "mismatch") {  // worker 1 builds a wider first layer
      distribute::MultiWorkerMirroredStrategy strategy;
      auto scope = strategy.scope();
      keras::Sequential m({layers::Input({12}), layers::Dense(16 + strategy.worker_index(), "relu"), layers::Dense(3)});
      m.compile({.optimizer = "sgd", .loss = "mse"});
      const Data d = make_data();
      m.fit(d.x, d.y, {.epochs = 1, .verbose = 0});
      std::cout << "worker " << strategy.worker_index() << " trained a mismatched model\n";
      return 0;
    }
    if (mode == "cluster") {
      distribute::MultiWorkerMirroredStrategy strategy;
      std::cout << "task " << strategy.task_type() << " " << strategy.task_id() << ", worker "
                << strategy.worker_index() << " of " << strategy.num_workers() << std::endl;
      return 0;
    }
  } catch (const Error& e) {
    std::cout << "error: " << e.what() << std::endl;
    return 2;
  }
  std::cerr << "usage: see the header of tests/distribute/multi_worker_check.cpp\n";
  return 64;
}
