// A second thread for the CPU kernels of small training steps, and for the two halves of such a step. A step of a small model is a few dozen kernels of
// 0.2-4 us each; OpenMP's fork/join costs ~0.6 us on this project's machines (the seed model ran its GEMMs on one
// thread because of it). The helper here waits for work by spinning, so handing it half of a kernel costs ~0.2
// us; after ~30 us without work it sleeps until the next one. On a machine busy with other processes the helper
// would take a core's time from the caller: then the caller works alone for a while (set_pair_adaptive). When the caller finishes its half before the helper
// has taken the other (the helper descheduled on a busy machine), the caller runs that half too: a step never
// waits for a thread that is not running. In a child process made by fork() the helper thread
// does not exist: there run_pair() always declines.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/executing_device.h"

namespace osprey::runtime {

namespace detail {
bool run_pair(void (*fn)(void*, int), void* ctx);
}

/// On a busy machine (the calling thread preempted, or the helper missing the halves it waits for) the callers work
/// alone for a while and the helper sleeps, giving its CPU back; the pause doubles while the machine stays busy.
/// set_pair_adaptive(false) (or OSPREY_PAIR_ADAPTIVE=0) keeps handing halves over regardless; pair_solo_periods()
/// counts the pauses so far.
void set_pair_adaptive(bool on);
uint64_t pair_solo_periods();

/// Whether run_pair() can use the helper at all on this thread: intra-op threads ≥ 2, not in a fork() child, not
/// inside a half of a pair.
bool pair_available();
/// True on a thread while it runs a half of a pair: the other core is busy with the other half, so work here stays
/// on this thread (no OpenMP team either).
bool in_pair_half();

/// Runs f(0) on the calling thread and f(1) on the helper at the same time, and returns when both are done
/// (an exception in either is rethrown here). Returns false without running anything when the helper cannot be
/// used: intra-op threads set to 1, or the helper busy with another thread's kernel. The caller then runs the
/// work itself.
/// Both halves run as parts of the calling thread's kernel (executing_device() is the caller's on the helper too).
template <typename F>
bool run_pair(F&& f) {
  struct Ctx {
    std::remove_reference_t<F>* f;
    const Device* device;
  } ctx{&f, executing_device()};
  return detail::run_pair(
      [](void* p, int half) {
        const auto* c = static_cast<const Ctx*>(p);
        ExecutingDevice on(c->device);
        (*c->f)(half);
      },
      &ctx);
}

/// Runs f(begin, end) over [0, n): as two parts split at the multiple of `align` nearest to n/2, on the calling
/// thread and the helper, when `split` is true and the helper is free; else once on the calling thread.
template <typename F>
void split_in_two(int64_t n, bool split, int64_t align, F&& f) {
  if (split) {
    const int64_t mid = std::max<int64_t>(align, (n + align) / (2 * align) * align);
    if (mid < n && run_pair([&](int half) { half == 0 ? f(int64_t{0}, mid) : f(mid, n); })) return;
  }
  f(int64_t{0}, n);
}

}  // namespace osprey::runtime
