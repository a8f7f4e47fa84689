// The CPU backend's helper thread (pair_runner.h) and the split-invariance of its small GEMM.
#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/pair_runner.h"
#include "backends/cpu/small_gemm.h"
#include "osprey/random.h"
#include "osprey/tensor.h"

using namespace osprey;

TEST(PairRunner, RunsTheTwoHalvesOnceEachAndTheHelperTakesTheSecond) {
  runtime::set_pair_adaptive(false);  // these check the hand-off itself, whatever the machine's load
  std::thread::id ids[2];
  std::atomic<int> calls{0};
  const bool split = runtime::run_pair([&](int half) {
    ids[half] = std::this_thread::get_id();
    ++calls;
  });
  if (!split) GTEST_SKIP() << "intra-op threads are 1 here: the helper is not used";
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(ids[0], std::this_thread::get_id());
  // The second half runs on the helper unless the caller finished first and took it (a helper still starting or
  // descheduled). With a first half that waits up to 50 ms for the second to start, the helper takes it.
  bool on_helper = false;
  for (int attempt = 0; attempt < 20 && !on_helper; ++attempt) {
    std::atomic<bool> second_started{false};
    std::thread::id second;
    runtime::run_pair([&](int half) {
      if (half == 1) {
        second = std::this_thread::get_id();
        second_started = true;
        return;
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
      while (!second_started && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    });
    on_helper = second != std::this_thread::get_id();
  }
  EXPECT_TRUE(on_helper);
}

TEST(PairRunner, ANestedCallIsRefusedAndTheCallerRunsItInline) {
  runtime::set_pair_adaptive(false);  // these check the hand-off itself, whatever the machine's load
  bool nested_split = true;
  const bool split = runtime::run_pair([&](int half) {
    if (half == 0) nested_split = runtime::run_pair([](int) {});
  });
  if (!split) GTEST_SKIP() << "intra-op threads are 1 here: the helper is not used";
  EXPECT_FALSE(nested_split);
  // split_in_two falls back to one call over the whole range.
  std::vector<std::pair<int64_t, int64_t>> parts;
  runtime::run_pair([&](int half) {
    if (half == 0) runtime::split_in_two(100, true, 8, [&](int64_t b, int64_t e) { parts.emplace_back(b, e); });
  });
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0], std::make_pair(int64_t{0}, int64_t{100}));
}

TEST(PairRunner, AnExceptionInTheHelperReachesTheCallerAndTheHelperStaysUsable) {
  runtime::set_pair_adaptive(false);  // these check the hand-off itself, whatever the machine's load
  auto throwing = [](int half) {
    if (half == 1) throw std::runtime_error("from the helper");
  };
  if (!runtime::run_pair([](int) {})) GTEST_SKIP() << "intra-op threads are 1 here: the helper is not used";
  EXPECT_THROW(runtime::run_pair(throwing), std::runtime_error);
  std::atomic<int> calls{0};
  EXPECT_TRUE(runtime::run_pair([&](int) { ++calls; }));
  EXPECT_EQ(calls.load(), 2);
}

// The helper on the caller's CPU would make every pair run its halves one after the other (and spin away the
// caller's time slices) until the kernel's load balancer parts them: after a few halves it missed, the caller
// moves it off its CPU. Forced here by pinning the caller to the helper's CPU while another thread keeps the other
// CPU busy (an idle CPU would pull the helper over at once; a busy one leaves two tasks against one alone).
TEST(PairRunner, AHelperOnTheCallersCpuIsMovedOff) {
  runtime::set_pair_adaptive(false);  // these check the hand-off itself, whatever the machine's load
  cpu_set_t allowed;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one CPU allowed: the halves cannot run on two";
  // Halves of ~20 µs, each reporting its CPU.
  auto pair = [](int cpus[2]) {
    return runtime::run_pair([&](int half) {
      cpus[half] = sched_getcpu();
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
      while (std::chrono::steady_clock::now() < until) {
      }
    });
  };
  int cpus[2] = {-1, -1};
  if (!pair(cpus)) GTEST_SKIP() << "intra-op threads are 1 here: the helper is not used";
  int helper_cpu = -1;
  for (int i = 0; i < 2000 && helper_cpu < 0; ++i) {  // a pair whose second half the helper ran
    std::thread::id second;
    runtime::run_pair([&](int half) {
      if (half == 1) {
        second = std::this_thread::get_id();
        helper_cpu = sched_getcpu();
      } else {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
        while (std::chrono::steady_clock::now() < until) {
        }
      }
    });
    if (second == std::this_thread::get_id()) helper_cpu = -1;
  }
  ASSERT_GE(helper_cpu, 0) << "the helper never ran a half";
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(helper_cpu, &only);
  int other_cpu = -1;
  for (int c = 0; c < CPU_SETSIZE && other_cpu < 0; ++c) {
    if (CPU_ISSET(c, &allowed) && c != helper_cpu) other_cpu = c;
  }
  std::atomic<bool> stop{false};
  std::thread hog([&] {
    cpu_set_t there;
    CPU_ZERO(&there);
    CPU_SET(other_cpu, &there);
    pthread_setaffinity_np(pthread_self(), sizeof there, &there);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof only, &only), 0);  // the caller joins the helper's CPU
  int apart = 0;
  for (int i = 0; i < 2000 && apart < 20; ++i) {
    pair(cpus);
    apart += cpus[0] != cpus[1] && cpus[1] >= 0 ? 1 : 0;
  }
  stop = true;
  hog.join();
  pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
  EXPECT_GE(apart, 20) << "the halves kept running on one CPU";
}

// On a machine whose other processes leave a core for the caller but none for the helper (one spinning child per
// CPU but one), the callers work alone for a while (the helper sleeps, the caller keeps a core), and every pair
// still runs each half exactly once.
TEST(PairRunner, ABusyMachineMakesTheCallerWorkAlone) {
  runtime::set_pair_adaptive(true);
  if (!runtime::pair_available()) GTEST_SKIP() << "intra-op threads are 1 here: the helper is not used";
  cpu_set_t allowed;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed), 0);
  const int spinners_wanted = std::max(1, CPU_COUNT(&allowed) - 1);
  std::vector<pid_t> spinners;
  for (int i = 0; i < spinners_wanted; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (;;) __asm__ volatile("" ::: "memory");
    }
    spinners.push_back(pid);
  }
  const uint64_t before = runtime::pair_solo_periods();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int64_t pairs = 0, wrong = 0;
  while (runtime::pair_solo_periods() == before && std::chrono::steady_clock::now() < until) {
    int ran[2] = {0, 0};
    auto work = [&](int half) {
      ++ran[half];
      const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
      while (std::chrono::steady_clock::now() < end) {
      }
    };
    if (!runtime::run_pair(work)) {
      work(0);
      work(1);
    }
    wrong += ran[0] == 1 && ran[1] == 1 ? 0 : 1;
    ++pairs;
  }
  for (pid_t pid : spinners) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  runtime::set_pair_adaptive(false);
  EXPECT_GT(runtime::pair_solo_periods(), before) << "no pause in " << pairs << " pairs on a busy machine";
  EXPECT_EQ(wrong, 0);
}

TEST(PairRunner, SplitInTwoCoversTheRangeOnceAtAnAlignedMiddle) {
  runtime::set_pair_adaptive(false);  // these check the hand-off itself, whatever the machine's load
  for (int64_t n : {0, 1, 7, 16, 17, 64, 100, 2048, 4099}) {
    std::vector<std::atomic<int>> seen(static_cast<std::size_t>(n));
    std::atomic<int64_t> first_end{-1};
    runtime::split_in_two(n, true, 16, [&](int64_t b, int64_t e) {
      if (b == 0) first_end = e;
      for (int64_t i = b; i < e; ++i) ++seen[static_cast<std::size_t>(i)];
    });
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(seen[static_cast<std::size_t>(i)].load(), 1) << "n=" << n << " i=" << i;
    }
    if (first_end.load() < n) {
      EXPECT_EQ(first_end.load() % 16, 0) << "n=" << n;
    }
  }
}

// A product large enough to be split between the threads equals, bit for bit, the same rows computed one at a
// time (never split).
TEST(SmallGemm, SplitBetweenThreadsGivesTheBitsOfOneRowAtATime) {
  random::set_seed(3);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int64_t m = 64, n = 48, k = 40;
      ASSERT_GE(m * n * k, cpu::kSmallGemmSplitWork);
      if (!cpu::small_gemm_applies(m, n, k)) GTEST_SKIP() << "this CPU has no AVX2/FMA: oneDNN runs every product";
      auto a = random::uniform(ta ? Shape{k, m} : Shape{m, k}, -1, 1).to_vector<float>();
      auto b = random::uniform(tb ? Shape{n, k} : Shape{k, n}, -1, 1).to_vector<float>();
      std::vector<float> bias(n, 0.25f), whole(m * n), rows(m * n);
      cpu::small_gemm(ta, tb, m, n, k, a.data(), b.data(), whole.data(), bias.data(), false, true);
      for (int64_t i = 0; i < m; ++i) {
        if (ta) {  // row i of op(A) is column i of the stored k x m matrix: copy it out
          std::vector<float> col(k);
          for (int64_t p = 0; p < k; ++p) col[p] = a[p * m + i];
          cpu::small_gemm(false, tb, 1, n, k, col.data(), b.data(), rows.data() + i * n, bias.data(), false, true);
        } else {
          cpu::small_gemm(false, tb, 1, n, k, a.data() + i * k, b.data(), rows.data() + i * n, bias.data(), false,
                          true);
        }
      }
      EXPECT_EQ(whole, rows) << "ta=" << ta << " tb=" << tb;
    }
  }
}

// The packed path for larger products (panels of B copied contiguous, a transposed A copied at a padded stride,
// rows split between the OpenMP threads) computes every element as the same in-order FMA chain: the bits of
// small_gemm(), for every transpose, odd sizes (partial tiles and panels), bias, accumulation and ReLU; and within
// float rounding of a double-precision product.
TEST(SmallGemm, PackedPathGivesTheSameBitsAndTheProduct) {
  random::set_seed(4);
  struct Case {
    int64_t m, n, k;
  };
  if (!cpu::cpu_has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  for (const Case& sh : {Case{131, 77, 300}, Case{512, 512, 128}, Case{37, 530, 512}, Case{200, 10, 64},
                         Case{70, 33, 1030}}) {
    for (int flags = 0; flags < 8; ++flags) {
      const bool ta = flags & 1, tb = flags & 2, extras = flags & 4;
      const int64_t m = sh.m, n = sh.n, k = sh.k;
      auto a = random::uniform(ta ? Shape{k, m} : Shape{m, k}, -1, 1).to_vector<float>();
      auto b = random::uniform(tb ? Shape{n, k} : Shape{k, n}, -1, 1).to_vector<float>();
      auto start = random::uniform({m, n}, -1, 1).to_vector<float>();
      std::vector<float> bias(static_cast<std::size_t>(n), 0.125f);
      std::vector<float> packed = start, small = start;
      const float* bp = extras ? bias.data() : nullptr;
      cpu::packed_gemm(ta, tb, m, n, k, a.data(), b.data(), packed.data(), bp, extras, extras);
      cpu::small_gemm(ta, tb, m, n, k, a.data(), b.data(), small.data(), bp, extras, extras);
      ASSERT_EQ(packed, small) << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb;
      double worst = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t p = 0; p < k; ++p) {
            s += static_cast<double>(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
          }
          if (extras) s = std::max(s + 0.125 + start[i * n + j], 0.0);
          worst = std::max(worst, std::abs(s - packed[i * n + j]));
        }
      }
      EXPECT_LT(worst, 1e-4 * k) << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb;
    }
  }
}
