// The cluster of a MultiWorkerMirroredStrategy and the collectives between its worker processes. TF_CONFIG is read
// as TensorFlow's TFConfigClusterResolver reads it; the processes themselves come from the MPI launch.
#include "distribute/worker_group.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/env.h"
#include "core/logging.h"
#include "distribute/mpi/mpi_api.h"
#include "osprey/errors.h"
#include "runtime/plugin_paths.h"

namespace osprey::distribute {

namespace {

using json = nlohmann::json;

std::string list_of(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "'" : ", '") + x + "'";
  return "[" + s + "]";
}

}  // namespace

ClusterInfo resolve_cluster(const std::optional<std::string>& tf_config, bool launched, int rank, int size) {
  ClusterInfo info;
  const std::string launch = launched ? fmt::format("an MPI launch of {} process(es)", size)
                                      : "no MPI launch (this process was started alone)";
  if (!tf_config || tf_config->empty()) {  // the cluster is the MPI world
    info.num_workers = launched ? size : 1;
    info.worker_index = launched ? rank : 0;
    info.task_id = info.worker_index;
    return info;
  }
  json cfg;
  try {
    cfg = json::parse(*tf_config, nullptr, true, false);
  } catch (const json::exception& e) {
    throw ValueError(fmt::format("TF_CONFIG is not valid JSON ({}): {:.200}", e.what(), *tf_config));
  }
  if (!cfg.is_object()) throw ValueError(fmt::format("TF_CONFIG must be a JSON object, got: {:.200}", *tf_config));
  const json cluster = cfg.value("cluster", json::object());
  if (!cluster.is_object()) throw ValueError("TF_CONFIG's \"cluster\" must be an object of job name -> list of addresses");
  for (const auto& [job, tasks] : cluster.items()) {
    if (!tasks.is_array()) {
      throw ValueError(fmt::format("TF_CONFIG: cluster job '{}' must be a list of \"host:port\" addresses, got {}", job,
                                   tasks.dump()));
    }
    std::vector<std::string> addresses;
    for (const auto& t : tasks) {
      if (!t.is_string()) {
        throw ValueError(fmt::format("TF_CONFIG: cluster job '{}' has a task address that is not a string: {}", job,
                                     t.dump()));
      }
      addresses.push_back(t.get<std::string>());
    }
    if (job != "chief" && job != "worker" && job != "evaluator" && job != "ps") {
      throw ValueError(fmt::format("TF_CONFIG: unknown job '{}' in the cluster; MultiWorkerMirroredStrategy takes "
                                   "\"chief\" and \"worker\" jobs",
                                   job));
    }
    info.cluster[job] = std::move(addresses);
  }
  if (info.cluster.count("ps")) {
    throw ValueError("TF_CONFIG has a \"ps\" job: parameter servers are ParameterServerStrategy's, not "
                     "MultiWorkerMirroredStrategy's");
  }
  if (info.cluster.count("chief") && info.cluster["chief"].size() > 1) {
    throw ValueError(fmt::format("There must be at most one 'chief' job; TF_CONFIG lists {}: {}",
                                 info.cluster["chief"].size(), list_of(info.cluster["chief"])));
  }
  const json task = cfg.value("task", json::object());
  if (!task.is_object()) throw ValueError("TF_CONFIG's \"task\" must be an object {\"type\": ..., \"index\": ...}");
  const int chiefs = info.cluster.count("chief") ? static_cast<int>(info.cluster["chief"].size()) : 0;
  const int workers = info.cluster.count("worker") ? static_cast<int>(info.cluster["worker"].size()) : 0;
  info.num_workers = chiefs + workers;
  if (info.num_workers == 0) {
    throw ValueError(fmt::format("TF_CONFIG's cluster has no \"chief\" or \"worker\" task: {:.200}", *tf_config));
  }
  if (!task.contains("type") || !task["type"].is_string()) {
    throw ValueError("TF_CONFIG has a cluster but no task type: set \"task\": {\"type\": \"worker\", \"index\": i}");
  }
  info.task_type = task["type"].get<std::string>();
  if (!task.contains("index") || !task["index"].is_number_integer()) {
    throw ValueError(fmt::format("TF_CONFIG's task '{}' needs an integer \"index\"", info.task_type));
  }
  const int64_t index = task["index"].get<int64_t>();
  if (info.task_type == "evaluator") {
    throw ValueError("TF_CONFIG names this task an evaluator: a side-car evaluator does not train under "
                     "MultiWorkerMirroredStrategy; run it without the strategy");
  }
  if (!info.cluster.count(info.task_type)) {
    throw ValueError(fmt::format("TF_CONFIG's task type '{}' is not a job of its cluster (jobs: chief, worker)",
                                 info.task_type));
  }
  const auto& tasks = info.cluster[info.task_type];
  if (index < 0 || index >= static_cast<int64_t>(tasks.size())) {
    throw ValueError(fmt::format("TF_CONFIG's task index {} is out of range: job '{}' has {} task(s) {}", index,
                                 info.task_type, tasks.size(), list_of(tasks)));
  }
  info.task_id = static_cast<int>(index);
  info.worker_index = info.task_type == "chief" ? 0 : chiefs + info.task_id;
  info.from_tf_config = true;
  if (!launched && info.num_workers > 1) {
    throw ValueError(fmt::format("TF_CONFIG describes a cluster of {} workers, but this process was started alone (no "
                                 "MPI launcher): start every worker with one launch, e.g. `mpirun -np {} ./train` "
                                 "or `srun -n {} ./train`",
                                 info.num_workers, info.num_workers, info.num_workers));
  }
  if (launched && size != info.num_workers) {
    throw ValueError(fmt::format("TF_CONFIG's cluster has {} worker(s) (chief + worker jobs), but {}: launch exactly "
                                 "{} processes (`mpirun -np {} ...`) or correct TF_CONFIG",
                                 info.num_workers, launch, info.num_workers, info.num_workers));
  }
  if (launched && rank != info.worker_index) {
    throw ValueError(fmt::format("TF_CONFIG says this process is {} {} (worker {} of {}: the chief first, then the "
                                 "workers), but the MPI launch made it rank {}: give each rank the task of its "
                                 "number",
                                 info.task_type, info.task_id, info.worker_index, info.num_workers, rank));
  }
  return info;
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"}) {
    if (env::get(v)) return true;
  }
  if (auto n = env::get("SLURM_STEP_NUM_TASKS"); n && std::atoi(n->c_str()) > 1) return true;
  return false;
}

namespace {

const MpiApi* load_mpi_plugin() {
  std::string error;
  const std::string path = runtime::find_plugin("libosprey_mpi.so", "OSPREY_MPI_PLUGIN", error);
  const MpiApi* api = nullptr;
  if (!path.empty()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);  // kept open; MPI's own components need GLOBAL
    if (!handle) {
      const char* why = dlerror();
      error = fmt::format("{} could not be loaded: {}", path, why ? why : "dlopen failed");
    } else if (auto entry = reinterpret_cast<const MpiApi* (*)()>(dlsym(handle, "osprey_mpi_api")); !entry) {
      error = fmt::format("{} has no entry point osprey_mpi_api: not Osprey's MPI plug-in", path);
    } else if (api = entry(); !api || api->version != kMpiApiVersion) {
      error = fmt::format("{} is not the MPI plug-in of this Osprey build (API {} expected); rebuild it", path,
                          kMpiApiVersion);
      api = nullptr;
    }
  }
  if (!api) {
    throw UnavailableError(fmt::format("This process was started by an MPI launcher, and MultiWorkerMirroredStrategy "
                                       "needs Osprey's MPI plug-in for it: {}. Build Osprey with MPI (Debian: "
                                       "libopenmpi-dev) or set OSPREY_MPI_PLUGIN to the plug-in's path.",
                                       error));
  }
  return api;
}

}  // namespace

namespace {
std::atomic<const WorkerGroup*> g_group{nullptr};
const MpiApi* g_api = nullptr;
std::atomic<bool> g_skip_finalize{false};
std::atomic<double> g_exit_timeout{300.0};
}  // namespace

WorkerGroup& WorkerGroup::get() {
  // Never destroyed before exit handlers run: MPI is finalised by the atexit handler below.
  static WorkerGroup* group = [] {
    auto* g = new WorkerGroup();
    g_group = g;
    return g;
  }();
  return *group;
}

const WorkerGroup* WorkerGroup::existing() { return g_group.load(); }

WorkerGroup::WorkerGroup() {
  const bool launched = launched_by_mpi();
  int rank = 0, size = 1;
  host_ = "localhost";
  if (launched) {
    api_ = load_mpi_plugin();
    char host[256] = {0}, err[512] = {0};
    if (api_->init(&rank, &size, host, sizeof host, err, sizeof err) != kMpiOk) {
      throw UnavailableError(fmt::format("MPI could not be initialised: {}", err));
    }
    host_ = host;
    g_api = api_;
    std::atexit([] {
      // Not after a time-out or a refused cluster: MPI_Finalize would wait for the workers that are not coming (the
      // launcher ends the job when this process exits unfinalised). Else every worker meets at an exit barrier
      // first, within the time limit.
      if (!g_skip_finalize) g_api->finalize(g_exit_timeout);
    });
  }
  try {
    cluster_ = resolve_cluster(env::get("TF_CONFIG"), launched, rank, size);
  } catch (...) {
    g_skip_finalize = true;  // the other workers may be waiting for this one already
    throw;
  }
  if (!cluster_.from_tf_config) {  // the cluster spec: every worker's host name, in rank order
    std::vector<char> names(static_cast<std::size_t>(size) * 256, '\0');
    std::vector<char> mine(256, '\0');
    std::memcpy(mine.data(), host_.data(), std::min<std::size_t>(255, host_.size()));
    all_gather(mine.data(), names.data(), std::vector<int64_t>(static_cast<std::size_t>(size), 256));
    for (int r = 0; r < size; ++r) cluster_.cluster["worker"].push_back(std::string(names.data() + 256 * r));
  }
  if (cluster_.num_workers > 1 && !api_) {
    throw InternalError("a cluster of several workers without MPI");  // resolve_cluster refuses it
  }
}

WorkerGroup::~WorkerGroup() = default;

void WorkerGroup::set_timeout(double seconds) {
  timeout_s_ = seconds;
  g_exit_timeout = seconds;
}

void WorkerGroup::check(int status, const char* what) {
  if (status == kMpiOk) return;
  if (status == kMpiTimedOut) {
    broken_ = true;
    g_skip_finalize = true;
    std::vector<int> present(static_cast<std::size_t>(size()), 0);
    api_->roll_call(std::min(10.0, std::max(1.0, timeout_s_ / 10)), present.data());
    std::string missing;
    for (int r = 0; r < size(); ++r) {
      if (!present[static_cast<std::size_t>(r)]) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", r);
    }
    broken_why_ = fmt::format(
        "Worker {} of {}: {} timed out after {} s waiting for the other workers. {}. The job cannot go on: restart "
        "it (BackupAndRestore resumes from the last backup); the limit is CommunicationOptions::timeout_seconds.",
        rank(), size(), what, timeout_s_,
        missing.empty() ? "Every worker answered a roll call afterwards, so one is very slow or stuck elsewhere"
                        : fmt::format("Worker(s) {} did not answer: they died, hang or never joined", missing));
    log::error(broken_why_);
    throw DeadlineExceededError(broken_why_);
  }
  throw UnavailableError(fmt::format("Worker {} of {}: {}", rank(), size(), what));
}

#define OSPREY_COLLECTIVE(name, call)                                                                     \
  do {                                                                                                    \
    if (broken_) throw AbortedError("An earlier collective of this worker timed out: " + broken_why_);    \
    if (size() == 1) return;                                                                              \
    char err[512] = {0};                                                                                  \
    const int status = call;                                                                              \
    check(status, status == kMpiTimedOut ? name : err);                                                   \
  } while (0)

void WorkerGroup::all_reduce_sum(float* data, int64_t count) {
  OSPREY_COLLECTIVE("the all-reduce", api_->all_reduce_sum_f32(data, count, timeout_s_, err, sizeof err));
}
void WorkerGroup::all_reduce_sum(double* data, int64_t count) {
  OSPREY_COLLECTIVE("the all-reduce", api_->all_reduce_sum_f64(data, count, timeout_s_, err, sizeof err));
}
void WorkerGroup::all_reduce_sum(const std::vector<float*>& data, const std::vector<int64_t>& counts) {
  OSPREY_COLLECTIVE("the all-reduce", api_->all_reduce_sum_f32_many(data.data(), counts.data(),
                                                                    static_cast<int>(data.size()), timeout_s_, err,
                                                                    sizeof err));
}
void WorkerGroup::all_gather(const void* send, void* recv, const std::vector<int64_t>& counts) {
  if (size() == 1 && counts.size() == 1) {
    if (counts[0] > 0 && recv != send) std::memcpy(recv, send, static_cast<std::size_t>(counts[0]));
    return;
  }
  OSPREY_COLLECTIVE("the all-gather",
                    api_->all_gather(send, counts[static_cast<std::size_t>(rank())], recv, counts.data(), timeout_s_,
                                     err, sizeof err));
}
std::vector<int64_t> WorkerGroup::all_gather(const std::vector<int64_t>& mine) {
  std::vector<int64_t> out(mine.size() * static_cast<std::size_t>(size()));
  const std::vector<int64_t> counts(static_cast<std::size_t>(size()), static_cast<int64_t>(mine.size() * sizeof(int64_t)));
  all_gather(mine.data(), out.data(), counts);
  return out;
}
void WorkerGroup::broadcast(void* data, int64_t bytes, int root) {
  OSPREY_COLLECTIVE("the broadcast", api_->broadcast(data, bytes, root, timeout_s_, err, sizeof err));
}
void WorkerGroup::barrier() { OSPREY_COLLECTIVE("the barrier", api_->barrier(timeout_s_, err, sizeof err)); }

#undef OSPREY_COLLECTIVE

}  // namespace osprey::distribute
