#include "runtime/pair_runner.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "runtime/executing_device.h"

namespace osprey::runtime {

namespace {

// Whether a busy machine makes the callers work alone for a while (Helper::note_hand_off); OSPREY_PAIR_ADAPTIVE=0
// turns it off.
std::atomic<bool> adaptive{[] {
  const char* v = std::getenv("OSPREY_PAIR_ADAPTIVE");
  return !(v && std::string(v) == "0");
}()};
std::atomic<uint64_t> solo_periods{0};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// True on a thread while it runs a half of a pair: a nested run_pair() declines at once, without touching the
// helper's flags (whose cache line the other core holds: ~0.1 µs per attempt, and a step's half makes a dozen).
thread_local bool t_in_half = false;

struct InHalf {
  InHalf() { t_in_half = true; }
  ~InHalf() { t_in_half = false; }
};

// Moves `thread` off `cpu` (when another CPU is allowed), then allows it every CPU again: it stays where it was
// moved. The helper and its caller on one CPU share one core: each step then runs its halves one after the other
// while the spinning helper takes time slices from the caller (fit() of the seed model at 20-25 µs per step
// instead of 14). It happens because a new thread starts on its creator's CPU, or when the scheduler puts them
// together later, and Linux's load balancer took 2-17 ms to part them on this project's machines.
void move_off_cpu(pthread_t thread, int cpu) {
  cpu_set_t allowed;
  if (cpu < 0 || pthread_getaffinity_np(thread, sizeof allowed, &allowed) != 0) return;
  if (!CPU_ISSET(cpu, &allowed) || CPU_COUNT(&allowed) < 2) return;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (pthread_setaffinity_np(thread, sizeof others, &others) != 0) return;  // migrates the thread now
  pthread_setaffinity_np(thread, sizeof allowed, &allowed);
}

class Helper {
 public:
  // The thread lives as long as the process (the one Helper is never destroyed).
  Helper() : thread_([this] { loop(); }) { move_off_cpu(thread_.native_handle(), sched_getcpu()); }

  bool run(void (*fn)(void*, int), void* ctx) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    if (solo_left_ > 0 && !adaptive.load(std::memory_order_relaxed)) solo_left_ = 0;
    if (solo_left_ > 0) {  // the machine has had no core for the helper lately: this thread works alone
      --solo_left_;
      // Every 1024 refused pairs (the helper asleep: the others are the runnable threads but this one): pairing
      // again pays when the others leave a core for the helper, or when they fill every core anyway (then two
      // threads get this process more of the machine than one). Two counts in a row.
      if ((solo_left_ & 1023) == 0 && solo_left_ > 0) {
        const int others = runnable_threads() - 1;
        room_samples_ = others >= 0 && (others + 2 <= cpus_ || others >= cpus_) ? room_samples_ + 1 : 0;
        if (room_samples_ >= 2) solo_left_ = 0;
      }
      busy_.store(false, std::memory_order_release);
      return false;
    }
    fn_ = fn;
    ctx_ = ctx;
    device_ = executing_device();
    const uint64_t job = posted_.fetch_add(1, std::memory_order_seq_cst) + 1;
    // Only a helper that was spinning for work when it was posted, and still missed it, lacked a CPU (one starting
    // or waking from sleep is merely late).
    const bool was_spinning = spinning_.load(std::memory_order_relaxed);
    if (sleeping_.load(std::memory_order_seq_cst)) {
      std::lock_guard lock(mu_);
      cv_.notify_one();
    }
    std::exception_ptr mine;
    std::exception_ptr theirs;
    bool second_here = false;
    {
      InHalf in_half;
      try {
        fn(ctx, 0);
      } catch (...) {
        mine = std::current_exception();
      }
      uint64_t expected = job - 1;
      second_here = claimed_.compare_exchange_strong(expected, job, std::memory_order_acq_rel);
      if (second_here) {
        // The helper has not started (descheduled on a busy machine, or still waking up): the other half runs
        // here rather than waiting for it.
        try {
          fn(ctx, 1);
        } catch (...) {
          theirs = std::current_exception();
        }
      }
    }
    uint32_t spins = 0;
    if (!second_here) {
      while (finished_.load(std::memory_order_acquire) != job) {
        cpu_relax();
        ++spins;
      }
      theirs = error_;
      missed_ = 0;
    } else if (++missed_ == kMissesBeforeMove) {
      // The helper keeps missing its halves: it shares this thread's CPU (or is starved); moved off it.
      missed_ = 0;
      move_off_cpu(thread_.native_handle(), sched_getcpu());
    }
    if (adaptive.load(std::memory_order_relaxed)) {
      note_hand_off(/*bad=*/second_here ? was_spinning : spins > kSlowWaitSpins);
    }
    busy_.store(false, std::memory_order_release);
    if (mine) std::rethrow_exception(mine);
    if (theirs) std::rethrow_exception(theirs);
    return true;
  }

 private:
  // A machine whose cores are busy with other processes may have no core for the helper: a half it took then waits
  // for its next time slice (the caller spins meanwhile), it misses halves while it was spinning for them, or it
  // takes the caller's core (three threads want two cores). Every 256 hand-offs the machine's runnable threads are
  // counted (/proc/loadavg, ~1 µs). When the others (all but the caller and the helper) leave the caller a core but
  // not the helper, twice in a row, or 4 of the last 16 hand-offs went wrong, this thread works alone: the helper,
  // without work, stops spinning and sleeps, and the caller gets a core to itself. It pairs again when two counts
  // in a row show room for the helper (or every core taken by others, where two threads get a larger share of the
  // machine than one). A solo step runs the same halves one after the other: the same numbers as a paired one.
  // Counted in pairs, not read from a clock: a clock read per pair would cost as much as the hand-off.
  void note_hand_off(bool bad) {
    history_ = static_cast<uint16_t>((history_ << 1) | (bad ? 1u : 0u));
    if (++since_check_ >= kCheckEvery) {
      since_check_ = 0;
      const int others = runnable_threads() - 2;
      busy_samples_ = others >= 0 && others + 2 > cpus_ && others + 1 <= cpus_ ? busy_samples_ + 1 : 0;
      if (busy_samples_ >= 2) {
        busy_samples_ = 0;
        bad = true;
        history_ = 0xffff;  // work alone now
      }
    }
    if (bad && __builtin_popcount(history_) >= 4) {
      solo_left_ = kMaxSolo;
      room_samples_ = 0;
      solo_periods.fetch_add(1, std::memory_order_relaxed);
      history_ = 0;
    }
  }

  // The machine's runnable threads now (the 4th field of /proc/loadavg, "running/total"), this one included; -1
  // when it cannot be read.
  static int runnable_threads() {
    static const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[128];
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1;
    buf[n] = '\0';
    const char* slash = std::strchr(buf, '/');
    if (!slash) return -1;
    const char* p = slash;
    while (p > buf && p[-1] >= '0' && p[-1] <= '9') --p;
    return p < slash ? std::atoi(p) : -1;
  }

  static int allowed_cpus() {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      wait_for_work(seen);
      seen = posted_.load(std::memory_order_acquire);
      uint64_t expected = seen - 1;
      if (!claimed_.compare_exchange_strong(expected, seen, std::memory_order_acq_rel)) continue;  // the caller ran it
      error_ = nullptr;
      try {
        InHalf in_half;
        ExecutingDevice on(device_);  // the half belongs to the caller's kernel, on the caller's device
        fn_(ctx_, 1);
      } catch (...) {
        error_ = std::current_exception();
      }
      finished_.store(seen, std::memory_order_release);
    }
  }

  // Spins while work came recently, then sleeps.
  void wait_for_work(uint64_t seen) {
    std::chrono::steady_clock::time_point since{};
    spinning_.store(true, std::memory_order_relaxed);
    for (uint32_t spins = 1;; ++spins) {
      if (posted_.load(std::memory_order_acquire) != seen) {
        spinning_.store(false, std::memory_order_relaxed);
        return;
      }
      cpu_relax();
      if ((spins & 1023) == 0) {  // the clock is read rarely: it costs as much as a hand-over
        const auto now = std::chrono::steady_clock::now();
        if (spins == 1024) since = now;
        else if (now - since > kSpinFor) break;
      }
    }
    spinning_.store(false, std::memory_order_relaxed);
    std::unique_lock lock(mu_);
    sleeping_.store(true, std::memory_order_seq_cst);
    cv_.wait(lock, [&] { return posted_.load(std::memory_order_seq_cst) != seen; });
    sleeping_.store(false, std::memory_order_relaxed);
  }

  static constexpr std::chrono::microseconds kSpinFor{30};
  static constexpr int kMissesBeforeMove = 8;
  // A half is 0.2-4 µs of work: waiting for it through 4096 pauses (~20-200 µs) means the helper lost its CPU.
  static constexpr uint32_t kSlowWaitSpins = 4096;
  static constexpr uint32_t kCheckEvery = 256;
  static constexpr uint32_t kMaxSolo = uint32_t{1} << 30;  // alone until the counts show room again
  // The caller's and the helper's flags on separate cache lines: each side spins on a line only the other writes.
  alignas(64) std::atomic<bool> busy_{false};  // a caller owns the helper
  std::atomic<uint64_t> posted_{0};            // jobs handed over
  void (*fn_)(void*, int) = nullptr;           // the job, on the line the helper reads anyway
  void* ctx_ = nullptr;
  const Device* device_ = nullptr;             // the caller's executing device
  alignas(64) std::atomic<uint64_t> claimed_{0};   // the last job whose second half someone took
  alignas(64) std::atomic<uint64_t> finished_{0};  // the last job the helper finished
  std::exception_ptr error_;
  int missed_ = 0;  // consecutive jobs whose second half the caller ran (written by callers, under busy_)
  // The hand-offs' recent history and the pause from it (callers, under busy_).
  uint16_t history_ = 0;
  uint32_t solo_left_ = 0, since_check_ = 0, busy_samples_ = 0, room_samples_ = 0;
  const int cpus_ = allowed_cpus();
  alignas(64) std::atomic<bool> sleeping_{false};
  std::atomic<bool> spinning_{false};  // the helper is in its spin loop, waiting for work
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace

// Set in a child of fork(): the helper thread was not copied into it, so handing it work would wait forever.
std::atomic<bool> forked_child{false};

void set_pair_adaptive(bool on) { adaptive.store(on); }
uint64_t pair_solo_periods() { return solo_periods.load(); }

bool in_pair_half() { return t_in_half; }

bool pair_available() {
  return !t_in_half && omp_get_max_threads() >= 2 && !forked_child.load(std::memory_order_relaxed);
}

bool detail::run_pair(void (*fn)(void*, int), void* ctx) {
  if (!pair_available()) return false;
  static Helper& helper = *[] {
    pthread_atfork(nullptr, nullptr, [] { forked_child.store(true); });
    return new Helper;  // never destroyed: kernels may still run while other statics are torn down at exit
  }();
  return helper.run(fn, ctx);
}

}  // namespace osprey::runtime
