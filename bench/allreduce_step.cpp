// The multi-worker all-reduce against bare MPI (issue 19): the wide MLP's gradients (784·512 + 512 + 512·512 + 512
// + 512·10 + 10 = 669,706 floats) summed across the workers of `mpirun -np W` by Osprey's WorkerGroup (the
// strategy's path: with its time limit, a polled non-blocking barrier and then the blocking all-reduce; without,
// the blocking one alone) and by a bare MPI_Allreduce of the same buffer. The chief prints one JSON line per way: µs per all-reduce (best of 5
// rounds of `reps`) and GB/s of the buffer.
//   mpirun -np 2 bench/allreduce_step [reps] [floats]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "distribute/worker_group.h"

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  const long n = argc > 2 ? std::atol(argv[2]) : 669706;
  auto& group = osprey::distribute::WorkerGroup::get();  // initialises MPI through the plug-in
  std::vector<float> buffer(static_cast<std::size_t>(n), 1.0f);
  auto time = [&](auto&& allreduce) {
    for (int i = 0; i < 10; ++i) allreduce();
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i) allreduce();
      best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps);
    }
    return best;
  };
  const double bare = time([&] { MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
  group.set_timeout(300);
  const double limited = time([&] { group.all_reduce_sum(buffer.data(), n); });
  group.set_timeout(0);
  const double unlimited = time([&] { group.all_reduce_sum(buffer.data(), n); });
  if (group.rank() == 0) {
    const double bytes = 4.0 * static_cast<double>(n);
    for (auto [what, us] : {std::pair{"bare MPI_Allreduce", bare}, std::pair{"Osprey, 300 s limit (MPI_Ibarrier polled + MPI_Allreduce)", limited},
                            std::pair{"Osprey, no limit (MPI_Allreduce)", unlimited}}) {
      std::printf("{\"case\": \"all-reduce of %ld floats over %d workers, %s\", \"us\": %.1f, \"GB_per_s\": %.2f}\n", n,
                  group.size(), what, us, bytes / us / 1e3);
    }
  }
  return 0;
}
