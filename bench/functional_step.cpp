// The first seed's model as Sequential and as a two-input functional model of the same size (x split into two
// inputs of 10 features, joined by Concatenate, then 64 -> 32 -> 1): time per training step through fit() and
// train_on_batch(), so the cost of the functional engine over Sequential shows side by side in one run.
// Usage: functional_step [epochs] [intra_op_threads] [rounds]; prints one JSON line per model and call.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;
using osprey::Tensor;

namespace {

struct Times {
  double fit_us, tob_us;
};

Times time_model(keras::Model& model, const keras::Arrays& x, const Tensor& y, const keras::Arrays& xb, const Tensor& yb,
                 int epochs) {
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  model.fit(x, y, {.epochs = 1, .batch_size = 64, .verbose = 0});  // warm-up: plans, primitives, caches
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  model.fit(x, y, {.epochs = epochs, .batch_size = 64, .verbose = 0});
  const double fit_us = std::chrono::duration<double, std::micro>(clock::now() - t0).count() / (epochs * 32.0);
  const int steps = epochs * 32;
  t0 = clock::now();
  for (int i = 0; i < steps; ++i) model.train_on_batch(xb, yb);
  return {fit_us, std::chrono::duration<double, std::micro>(clock::now() - t0).count() / steps};
}

void print(const char* model, int threads, const Times& t) {
  std::printf("{\"framework\": \"osprey\", \"case\": \"%s fit, intra_op_threads=%d\", \"us_per_step\": %.1f}\n", model,
              threads, t.fit_us);
  std::printf("{\"framework\": \"osprey\", \"case\": \"%s train_on_batch, intra_op_threads=%d\", \"us_per_step\": %.1f}\n",
              model, threads, t.tob_us);
}

}  // namespace

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 20;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 0;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  osprey::config::set_intra_op_parallelism_threads(threads);
  osprey::random::set_seed(0);
  const Tensor x = osprey::random::uniform({2048, 20});
  const Tensor y = osprey::random::randint(0, 2, {2048, 1}).cast(osprey::float32);
  // The two inputs: x's first and last 10 features (copies, as a user's two arrays would be).
  const Tensor xa = osprey::ops::slice_axis(x, 1, 0, 10), xc = osprey::ops::slice_axis(x, 1, 10, 10);
  for (int round = 0; round < rounds; ++round) {  // alternated, so both see the machine in the same state
    osprey::random::set_seed(1);
    keras::Sequential seq({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(32, "relu"),
                           layers::Dense(1, "sigmoid")});
    print("sequential", threads, time_model(seq, x, y, x.slice_rows(0, 64), y.slice_rows(0, 64), epochs));
    osprey::random::set_seed(1);
    auto a = keras::Input({10}), b = keras::Input({10});
    auto h = layers::Dense(64, "relu")(layers::Concatenate()({a, b}));
    keras::Model fun({a, b}, layers::Dense(1, "sigmoid")(layers::Dense(32, "relu")(h)));
    print("functional two-input", threads,
          time_model(fun, {xa, xc}, y, {xa.slice_rows(0, 64), xc.slice_rows(0, 64)}, y.slice_rows(0, 64), epochs));
  }
  return 0;
}
