// The MPI plug-in (libosprey_mpi.so): MultiWorkerMirroredStrategy's process launch, rendezvous and CPU collectives
// on the MPI library it was built with (Debian: Open MPI). With a time limit, every collective starts with a
// non-blocking barrier polled until all ranks arrived or the time is up (a worker that hangs or never joined is an
// error in bounded time, not a hang; one that dies is ended by the launcher), then runs MPI's blocking call. The
// blocking calls are Open MPI's tuned algorithms: its non-blocking all-reduce (libnbc), polled, moved the wide MLP's
// gradients at a third of their speed (bench/allreduce_step).
#include <mpi.h>

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "distribute/mpi/mpi_api.h"

namespace osprey::distribute {
namespace {

void put(char* err, int len, const char* what, int code) {
  if (!err || len <= 0) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int n = 0;
  if (code != MPI_SUCCESS) MPI_Error_string(code, text, &n);
  std::snprintf(err, static_cast<std::size_t>(len), "%s failed: %s", what, n ? text : "(no MPI message)");
}

// Waits for `request` at most `timeout_s`: MPI_Test in a loop, yielding the core for the first millisecond (a
// peer usually arrives within it), then sleeping 50 µs between tests.
int wait(MPI_Request& request, double timeout_s, const char* what, char* err, int len) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (long polls = 0;; ++polls) {
    int done = 0;
    const int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      put(err, len, what, rc);
      return kMpiFailed;
    }
    if (done) return kMpiOk;
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    if (waited > timeout_s) {
      if (err && len > 0) std::snprintf(err, static_cast<std::size_t>(len), "%s did not complete in %.3g s", what, timeout_s);
      return kMpiTimedOut;
    }
    if (waited < 1e-3) {
      sched_yield();
    } else {
      const timespec nap{0, 50'000};
      nanosleep(&nap, nullptr);
    }
  }
}

int finish(int rc, MPI_Request& request, double timeout_s, const char* what, char* err, int len) {
  if (rc != MPI_SUCCESS) {
    put(err, len, what, rc);
    return kMpiFailed;
  }
  return wait(request, timeout_s, what, err, len);
}

int checked(int rc, const char* what, char* err, int len) {
  if (rc == MPI_SUCCESS) return kMpiOk;
  put(err, len, what, rc);
  return kMpiFailed;
}

MPI_Comm exit_comm = MPI_COMM_NULL;  // the exit barrier's own communicator

int init(int* rank, int* size, char* host, int host_len, char* err, int err_len) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided); rc != MPI_SUCCESS) {
      return checked(rc, "MPI_Init_thread", err, err_len);
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      std::snprintf(err, static_cast<std::size_t>(err_len),
                    "MPI_Init_thread gave thread level %d; Osprey needs MPI_THREAD_SERIALIZED (%d)", provided,
                    MPI_THREAD_SERIALIZED);
      return kMpiFailed;
    }
  }
  // Errors are returned (and turned into Osprey's exceptions), not fatal.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (exit_comm == MPI_COMM_NULL) MPI_Comm_dup(MPI_COMM_WORLD, &exit_comm);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int n = 0;
  MPI_Get_processor_name(name, &n);
  std::snprintf(host, static_cast<std::size_t>(host_len), "%s", name);
  return kMpiOk;
}

// Every rank at the collective, within the time limit (nothing to wait for without one).
int arrive(double timeout_s, const char* what, char* err, int len) {
  if (timeout_s <= 0) return kMpiOk;
  MPI_Request request;
  const int rc = MPI_Ibarrier(MPI_COMM_WORLD, &request);
  const int s = finish(rc, request, timeout_s, what, err, len);
  if (s == kMpiTimedOut && err && len > 0) {
    std::snprintf(err, static_cast<std::size_t>(len), "%s: the other workers did not arrive in %.3g s", what, timeout_s);
  }
  return s;
}

// MPI counts are ints: large buffers go in pieces of 2^30 elements.
constexpr int64_t kPiece = int64_t{1} << 30;

template <typename T>
int all_reduce_sum(T* data, int64_t count, MPI_Datatype type, double timeout_s, char* err, int len) {
  if (int s = arrive(timeout_s, "MPI_Allreduce", err, len); s != kMpiOk) return s;
  for (int64_t at = 0; at < count; at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, count - at));
    if (int rc = MPI_Allreduce(MPI_IN_PLACE, data + at, n, type, MPI_SUM, MPI_COMM_WORLD); rc != MPI_SUCCESS) {
      return checked(rc, "MPI_Allreduce", err, len);
    }
  }
  return kMpiOk;
}

int all_reduce_sum_f32(float* data, int64_t count, double timeout_s, char* err, int len) {
  return all_reduce_sum(data, count, MPI_FLOAT, timeout_s, err, len);
}
int all_reduce_sum_f64(double* data, int64_t count, double timeout_s, char* err, int len) {
  return all_reduce_sum(data, count, MPI_DOUBLE, timeout_s, err, len);
}
int all_reduce_sum_f32_many(float* const* data, const int64_t* counts, int n, double timeout_s, char* err, int len) {
  if (int s = arrive(timeout_s, "MPI_Allreduce", err, len); s != kMpiOk) return s;
  for (int i = 0; i < n; ++i) {
    if (int s = all_reduce_sum(data[i], counts[i], MPI_FLOAT, 0, err, len); s != kMpiOk) return s;
  }
  return kMpiOk;
}

int all_gather(const void* send, int64_t bytes, void* recv, const int64_t* counts, double timeout_s, char* err,
               int len) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> c(static_cast<std::size_t>(size)), d(static_cast<std::size_t>(size));
  int64_t at = 0;
  for (int r = 0; r < size; ++r) {
    if (counts[r] < 0 || counts[r] > INT_MAX || at > INT_MAX) {
      std::snprintf(err, static_cast<std::size_t>(len), "MPI_Allgatherv: %lld bytes from rank %d do not fit MPI's int counts",
                    static_cast<long long>(counts[r]), r);
      return kMpiFailed;
    }
    c[static_cast<std::size_t>(r)] = static_cast<int>(counts[r]);
    d[static_cast<std::size_t>(r)] = static_cast<int>(at);
    at += counts[r];
  }
  if (int s = arrive(timeout_s, "MPI_Allgatherv", err, len); s != kMpiOk) return s;
  return checked(MPI_Allgatherv(send, static_cast<int>(bytes), MPI_BYTE, recv, c.data(), d.data(), MPI_BYTE,
                                MPI_COMM_WORLD),
                 "MPI_Allgatherv", err, len);
}

int broadcast(void* data, int64_t bytes, int root, double timeout_s, char* err, int len) {
  if (int s = arrive(timeout_s, "MPI_Bcast", err, len); s != kMpiOk) return s;
  auto* p = static_cast<char*>(data);
  for (int64_t at = 0; at < bytes; at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, bytes - at));
    if (int rc = MPI_Bcast(p + at, n, MPI_BYTE, root, MPI_COMM_WORLD); rc != MPI_SUCCESS) {
      return checked(rc, "MPI_Bcast", err, len);
    }
  }
  return kMpiOk;
}

int barrier(double timeout_s, char* err, int len) {
  if (timeout_s <= 0) return checked(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", err, len);
  return arrive(timeout_s, "MPI_Barrier", err, len);
}

// Every rank that is still alive and timed out too answers: each sends one byte to every other rank and listens for
// theirs (a tag of its own, so nothing else matches it).
void roll_call(double grace_s, int* present) {
  constexpr int kTag = 7301;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static char out = 1;
  std::vector<char> in(static_cast<std::size_t>(size), 0);
  std::vector<MPI_Request> sends, recvs(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
  for (int r = 0; r < size; ++r) {
    present[r] = r == rank;
    if (r == rank) continue;
    MPI_Request s;
    MPI_Isend(&out, 1, MPI_CHAR, r, kTag, MPI_COMM_WORLD, &s);
    sends.push_back(s);
    MPI_Irecv(&in[static_cast<std::size_t>(r)], 1, MPI_CHAR, r, kTag, MPI_COMM_WORLD, &recvs[static_cast<std::size_t>(r)]);
  }
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < grace_s) {
    bool all = true;
    for (int r = 0; r < size; ++r) {
      if (r == rank || present[r]) continue;
      int done = 0;
      MPI_Test(&recvs[static_cast<std::size_t>(r)], &done, MPI_STATUS_IGNORE);
      present[r] = done;
      all = all && done;
    }
    if (all) break;
    const timespec nap{0, 1'000'000};
    nanosleep(&nap, nullptr);
  }
}

int finalize(double timeout_s) {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised) return kMpiOk;
  if (exit_comm != MPI_COMM_NULL) {
    MPI_Request request;
    if (MPI_Ibarrier(exit_comm, &request) != MPI_SUCCESS) return kMpiFailed;
    if (int s = wait(request, timeout_s > 0 ? timeout_s : 1e300, "the exit barrier", nullptr, 0); s != kMpiOk) return s;
  }
  MPI_Finalize();
  return kMpiOk;
}

const MpiApi kApi{kMpiApiVersion, init, all_reduce_sum_f32, all_reduce_sum_f64, all_reduce_sum_f32_many, all_gather,
                  broadcast, barrier,
                  roll_call, finalize};

}  // namespace
}  // namespace osprey::distribute

extern "C" __attribute__((visibility("default"))) const osprey::distribute::MpiApi* osprey_mpi_api() {
  return &osprey::distribute::kApi;
}
