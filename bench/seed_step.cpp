// Time per training step of the first seed's model (2048x20 -> 64 -> 32 -> 1, Adam, BCE, batch 64), as fit()
// runs it (shuffling, batching, metrics) and as train_on_batch() runs it. Prints one JSON line per case.
//   seed_step [epochs=20] [intra_op_threads=0 (Osprey's default)] [busy=0]
// busy: that many other processes spinning on the CPU the whole time (a machine loaded by other work).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 20;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 0;  // 0: Osprey's default
  const int busy = argc > 3 ? std::atoi(argv[3]) : 0;
  std::vector<pid_t> spinners;
  for (int i = 0; i < busy; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (;;) __asm__ volatile("" ::: "memory");  // spins until killed
    }
    spinners.push_back(pid);
  }
  osprey::config::set_intra_op_parallelism_threads(threads);
  osprey::random::set_seed(0);
  auto x = osprey::random::uniform({2048, 20});
  auto y = osprey::random::randint(0, 2, {2048, 1}).cast(osprey::float32);
  keras::Sequential model({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(32, "relu"),
                           layers::Dense(1, "sigmoid")});
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  model.fit(x, y, {.epochs = 1, .batch_size = 64, .verbose = 0});  // warm-up: primitives, allocator caches

  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  model.fit(x, y, {.epochs = epochs, .batch_size = 64, .verbose = 0});
  const double fit_us = std::chrono::duration<double, std::micro>(clock::now() - t0).count() / (epochs * 32.0);

  auto xb = x.slice_rows(0, 64), yb = y.slice_rows(0, 64);
  const int steps = epochs * 32;
  t0 = clock::now();
  for (int i = 0; i < steps; ++i) model.train_on_batch(xb, yb);
  const double tob_us = std::chrono::duration<double, std::micro>(clock::now() - t0).count() / steps;
  for (pid_t pid : spinners) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  std::printf("{\"framework\": \"osprey\", \"case\": \"fit, intra_op_threads=%d, busy=%d\", \"us_per_step\": %.1f}\n",
              threads, busy, fit_us);
  std::printf("{\"framework\": \"osprey\", \"case\": \"train_on_batch, intra_op_threads=%d, busy=%d\", "
              "\"us_per_step\": %.1f}\n",
              threads, busy, tob_us);
  return 0;
}
