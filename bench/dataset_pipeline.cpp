// fit() on a data::Dataset whose map() takes 2 ms per batch (issue 20's pipeline benchmark): the wide MLP (batch 128,
// Adam) on from_tensor_slices(x, y).batch(128).map(f, num_parallel_calls).prefetch(AUTOTUNE), f waiting 2 ms (a
// sleep, as storage or a decoder in another process would) or computing for 2 ms (a busy loop on this thread).
// Prints one JSON line per case: the epoch, fit's own input-wait measurement, and the epoch's excess over the same
// epoch without map (the cost the pipeline leaves on the training). Usage: dataset_pipeline [batches] [map_ms]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <osprey/osprey.h>

namespace data = osprey::data;
namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;
using clock_type = std::chrono::steady_clock;

namespace {

void busy_for(double ms) {
  const auto end = clock_type::now() + std::chrono::duration<double, std::milli>(ms);
  volatile double sink = 0;
  while (clock_type::now() < end) {
    for (int i = 0; i < 200; ++i) sink = sink + i * 1e-9;
  }
}

struct Run {
  double epoch_s, input_s, train_s;
};

Run run(const data::Dataset& ds) {
  osprey::random::set_seed(1);
  keras::Sequential model({layers::Input({784}), layers::Dense(512, "relu"), layers::Dense(512, "relu"),
                           layers::Dense(10, "softmax")});
  model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  model.fit(ds, {.epochs = 1, .verbose = 0});  // warm-up epoch
  Run best{1e9, 0, 0};
  for (int r = 0; r < 5; ++r) {  // the best of five epochs
    const auto t0 = clock_type::now();
    auto h = model.fit(ds, {.epochs = 1, .verbose = 0});
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (s < best.epoch_s) best = {s, h.input_seconds[0], h.step_seconds[0]};
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t batches = argc > 1 ? std::atoll(argv[1]) : 200;
  const double map_ms = argc > 2 ? std::atof(argv[2]) : 2.0;
  osprey::random::set_seed(2);
  const int64_t n = 128 * batches;
  const auto x = osprey::random::uniform({n, 784});
  const auto y = osprey::random::randint(0, 10, {n}).cast(osprey::float32);
  const auto base = data::Dataset::from_tensor_slices(data::Element{x, y}).batch(128);
  auto sleeping = [map_ms](const data::Element& e) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(map_ms));
    return e;
  };
  auto computing = [map_ms](const data::Element& e) {
    busy_for(map_ms);
    return e;
  };
  const Run plain = run(base);
  std::printf("{\"framework\": \"osprey\", \"case\": \"no map (the floor)\", \"epoch_s\": %.4f, \"input_fraction\": "
              "%.3f}\n",
              plain.epoch_s, plain.input_s / (plain.input_s + plain.train_s));
  struct Case {
    std::string name;
    data::Dataset ds;
  };
  const Case cases[] = {
      {"no map + prefetch", base.prefetch(data::AUTOTUNE)},
      {"map sleep, no prefetch", base.map(sleeping)},
      {"map sleep + prefetch", base.map(sleeping).prefetch(data::AUTOTUNE)},
      {"map sleep, num_parallel_calls=AUTOTUNE + prefetch", base.map(sleeping, data::AUTOTUNE).prefetch(data::AUTOTUNE)},
      {"map busy + prefetch", base.map(computing).prefetch(data::AUTOTUNE)},
  };
  for (const auto& c : cases) {
    const Run r = run(c.ds);
    std::printf("{\"framework\": \"osprey\", \"case\": \"%s (%.1f ms per batch of 128, %lld batches)\", \"epoch_s\": "
                "%.4f, \"input_wait_s\": %.4f, \"input_fraction\": %.3f, \"excess_over_floor\": %.3f}\n",
                c.name.c_str(), map_ms, static_cast<long long>(batches), r.epoch_s, r.input_s,
                r.input_s / (r.input_s + r.train_s), (r.epoch_s - plain.epoch_s) / r.epoch_s);
  }
  return 0;
}
