// The workers of a MultiWorkerMirroredStrategy: the cluster (from the MPI launch and TF_CONFIG), and the
// collectives between the worker processes (MPI, through the plug-in libosprey_mpi.so). One per process.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace osprey::distribute {

/// Who this process is in the cluster. Workers are numbered chief first (when TF_CONFIG has a "chief" job), then the
/// "worker" job's tasks in order; worker i is MPI rank i.
struct ClusterInfo {
  int num_workers = 1;
  int worker_index = 0;        ///< 0 is the chief
  std::string task_type = "worker";
  int task_id = 0;
  std::map<std::string, std::vector<std::string>> cluster;  ///< job -> addresses ("host:port"; MPI: the host names)
  bool from_tf_config = false;
};

/// The cluster as TF_CONFIG (`tf_config`, the variable's value, or nothing when unset) and the launch say it is:
/// `launched` when an MPI launcher (mpirun, srun) started this process as rank `rank` of `size`. Checks TF_CONFIG
/// (valid JSON, a "cluster" of "chief"/"worker" jobs with lists of addresses, at most one chief, a "task" naming one
/// of them) against the launch: ValueError naming what does not match, and what to do.
ClusterInfo resolve_cluster(const std::optional<std::string>& tf_config, bool launched, int rank, int size);

/// True when an MPI launcher started this process (its environment: OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK,
/// SLURM_STEP_NUM_TASKS > 1 ...).
bool launched_by_mpi();

/// The process's worker group: the MPI world when launched by an MPI launcher (MPI initialised on first use), else
/// this process alone (no MPI at all). Collectives throw DeadlineExceededError after `timeout_s` seconds (the
/// workers that did not arrive are named when they can be found), UnavailableError for MPI's own failures; after
/// a time-out the group is broken and every later collective throws at once.
class WorkerGroup {
 public:
  static WorkerGroup& get();
  /// The group when a MultiWorkerMirroredStrategy made it, else null (nothing is initialised by asking).
  static const WorkerGroup* existing();

  const ClusterInfo& cluster() const { return cluster_; }
  int size() const { return cluster_.num_workers; }
  int rank() const { return cluster_.worker_index; }
  bool is_chief() const { return cluster_.worker_index == 0; }
  const std::string& host() const { return host_; }

  /// Each collective's time limit (<= 0: none); also the exit barrier's.
  void set_timeout(double seconds);
  double timeout() const { return timeout_s_; }

  void all_reduce_sum(float* data, int64_t count);
  void all_reduce_sum(double* data, int64_t count);
  /// Several buffers summed in place with one rendezvous.
  void all_reduce_sum(const std::vector<float*>& data, const std::vector<int64_t>& counts);
  /// Every worker's bytes, worker by worker (`counts` the byte count of each; this worker's is counts[rank()]).
  void all_gather(const void* send, void* recv, const std::vector<int64_t>& counts);
  /// Each worker's int64 values (n each) into out (size n · workers).
  std::vector<int64_t> all_gather(const std::vector<int64_t>& mine);
  void broadcast(void* data, int64_t bytes, int root = 0);
  void barrier();

 private:
  WorkerGroup();
  ~WorkerGroup();
  void check(int status, const char* what);

  ClusterInfo cluster_;
  std::string host_;
  const struct MpiApi* api_ = nullptr;
  double timeout_s_ = 300.0;
  bool broken_ = false;
  std::string broken_why_;
};

}  // namespace osprey::distribute
