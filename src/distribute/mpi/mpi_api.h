// The MPI plug-in's interface (libosprey_mpi.so, opened with dlopen by distribute/worker_group.cpp when a
// MultiWorkerMirroredStrategy needs other processes): libosprey.so itself never links MPI, so programs that train
// on one machine load none of it. Plain C types only: the plug-in and the library may be built apart.
#pragma once

#include <cstdint>

namespace osprey::distribute {

constexpr int kMpiApiVersion = 2;

/// Return codes of the collectives.
enum MpiStatus : int { kMpiOk = 0, kMpiTimedOut = 1, kMpiFailed = 2 };

struct MpiApi {
  int version;
  /// MPI_Init_thread (MPI_THREAD_SERIALIZED: calls come from one thread at a time, not always the same one) unless
  /// MPI is initialised already; the rank and size of MPI_COMM_WORLD and this host's name.
  int (*init)(int* rank, int* size, char* host, int host_len, char* err, int err_len);
  /// Collectives over MPI_COMM_WORLD. Each waits at most `timeout_s` seconds (<= 0: as long as it takes) for every
  /// rank to arrive and returns kMpiOk, kMpiTimedOut (a barrier is then still pending: the caller must not use MPI
  /// again) or kMpiFailed with MPI's message in `err`.
  int (*all_reduce_sum_f32)(float* data, int64_t count, double timeout_s, char* err, int err_len);
  int (*all_reduce_sum_f64)(double* data, int64_t count, double timeout_s, char* err, int err_len);
  /// `n` buffers summed in place, one rendezvous for all of them (a step's gradients, without packing copies).
  int (*all_reduce_sum_f32_many)(float* const* data, const int64_t* counts, int n, double timeout_s, char* err,
                                 int err_len);
  /// Every rank's `bytes` (counts[r] from rank r) into `recv`, rank by rank.
  int (*all_gather)(const void* send, int64_t bytes, void* recv, const int64_t* counts, double timeout_s, char* err,
                    int err_len);
  int (*broadcast)(void* data, int64_t bytes, int root, double timeout_s, char* err, int err_len);
  int (*barrier)(double timeout_s, char* err, int err_len);
  /// After a time-out: which ranks answer a message from this one within `grace_s` seconds (present[r] = 1; this
  /// rank counts as present). Point-to-point, so it works while the timed-out collective is still pending.
  void (*roll_call)(double grace_s, int* present);
  /// At exit: a barrier of every rank on a communicator of its own (it cannot mix with a collective the others may
  /// be waiting in), at most `timeout_s`; then MPI_Finalize when every rank arrived (kMpiOk). Otherwise MPI is left
  /// unfinalised (kMpiTimedOut): MPI_Finalize would wait for the missing ranks, and the launcher ends the job instead.
  int (*finalize)(double timeout_s);
};

}  // namespace osprey::distribute
