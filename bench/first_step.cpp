// Time from process start to the first completed training step of the seed model (runtime initialisation, data,
// model, compile, one train_on_batch with its oneDNN primitive creation). The launcher passes the wall-clock time
// it started the process at (`date +%s%N`), so loading the libraries counts too. One JSON line.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

static int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int main(int argc, char** argv) {
  const int64_t main_ns = now_ns();
  const int64_t launch_ns = argc > 1 ? std::atoll(argv[1]) : main_ns;
  auto x = osprey::random::uniform({2048, 20});
  auto y = osprey::random::randint(0, 2, {2048, 1}).cast(osprey::float32);
  keras::Sequential model({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(32, "relu"),
                           layers::Dense(1, "sigmoid")});
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  model.train_on_batch(x.slice_rows(0, 64), y.slice_rows(0, 64));
  const int64_t done_ns = now_ns();
  std::printf("{\"framework\": \"osprey\", \"case\": \"start to first step (seed model)\", \"ms\": %.1f, "
              "\"ms_before_main\": %.1f}\n",
              (done_ns - launch_ns) / 1e6, (main_ns - launch_ns) / 1e6);
  return 0;
}
