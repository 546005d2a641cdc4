// The GPU scheduler: spreads GPU tasks (measure, profile, screen) over the registered
// GPU workers (each worker is one GPU), fairly across jobs.
//
// - Depth: a worker is given up to `tasks_per_worker` tasks at once. Its own GPU slot
//   (services/benchmark/gpu_slot.*) runs one of them at a time on the GPU; the others
//   meanwhile prepare and compile on the worker's CPU cores, so the GPU need not wait for
//   the next candidate's process, imports and Triton compilation. Never more than
//   `tasks_per_worker` tasks are in flight on one worker; a free slot goes to the least
//   loaded usable worker. With 1 a worker runs one task at a time, as before the option.
//
// - Workers register (RegisterWorker RPC, renewed before their lease runs out) or are
//   given statically at start (--workers). A worker whose lease ran out, or whose call
//   failed with a transport error (UNAVAILABLE, DEADLINE_EXCEEDED), is taken out of
//   rotation (a static worker for a cool-down) and the task is re-run on another, at most
//   `max_attempts` times.
// - Infrastructure verdicts: a measurement that comes back VERDICT_INFRA_ERROR (the
//   worker's harness failed, not the candidate) is run again too, up to `max_attempts` in
//   all, each retry logged and counted in kagent_gpu_task_infra_retries_total{kind}. A
//   retry goes to a usable worker that has not failed the task (waiting for one to be
//   free); to one that has only when no other is usable (a worker alone in the pool: its
//   next call waits for its restarted harness). Such a result is not stored until the
//   attempts are spent; then it keeps VERDICT_INFRA_ERROR, its reason saying how many
//   attempts on which workers and the last reason, and is stored and returned (outcome
//   infra_error in kagent_gpu_tasks_total). Screens and profiles carry no verdict: a
//   harness failure there is an error status, retried as a transport failure.
// - Fairness: pending tasks queue per job; a free worker takes the head task of the next
//   job in round-robin order, so one job with many candidates cannot starve another
//   (common/round_robin_queue.h; a worker's GpuSlot applies the same rule to the tasks
//   given to it, for its one GPU).
// - Idempotence: a task's result is stored under its task id before it is returned; a
//   task whose id already has a stored result (e.g. after a coordinator restart) is
//   answered from storage and not run again.
// - A task that finds no live worker for `no_worker_timeout` fails with UNAVAILABLE and
//   a message saying how to start one, so a job never hangs waiting for a GPU.
// - ReleaseJob(job) tells every live worker to drop what it keeps for a finished job
//   (trial inputs and reference outputs on its GPU, prepared candidate processes), best
//   effort and off the caller's path: one background thread owned by the scheduler sends
//   the calls, to all workers in parallel, each bounded by `release_timeout`; a failure is
//   logged and forgotten.
//
// Thread-safe. Run() blocks the calling thread until the task is done. The destructor
// sends the releases still queued (each bounded by `release_timeout`) and joins the
// release thread; no Run() may be in progress then.
#ifndef KAGENT_SERVICES_COORDINATOR_SCHEDULER_H_
#define KAGENT_SERVICES_COORDINATOR_SCHEDULER_H_

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/cancel.h"
#include "common/round_robin_queue.h"
#include "common/storage/storage.h"
#include "kagent/v1/benchmark_service.pb.h"
#include "kagent/v1/profiler_service.pb.h"
#include "prometheus/registry.h"
#include "services/coordinator/gpu_worker.h"

namespace kagent {

struct SchedulerOptions {
  absl::Duration no_worker_timeout = absl::Seconds(60);
  absl::Duration lease = absl::Seconds(30);          // for registered workers
  absl::Duration static_cooldown = absl::Seconds(10);  // after a static worker fails
  absl::Duration measure_timeout = absl::Seconds(900);
  absl::Duration profile_timeout = absl::Seconds(600);
  absl::Duration screen_timeout = absl::Seconds(900);
  absl::Duration release_timeout = absl::Seconds(5);  // one ReleaseJob call
  int max_attempts = 3;
  // Tasks in flight on one worker at most, 1..kMaxTasksPerWorker (see the file comment).
  int tasks_per_worker = 2;
};
inline constexpr int kMaxTasksPerWorker = 16;

struct GpuTask {
  enum class Kind { kMeasure, kProfile, kScreen };
  Kind kind = Kind::kMeasure;
  std::string task_id;   // unique; a stored result for it is reused
  std::string job_id;
  v1::MeasureRequest measure;  // kMeasure
  v1::ProfileRequest profile;  // kProfile
  v1::ScreenRequest screen;    // kScreen
};

struct GpuTaskResult {
  v1::MeasureResponse measure;  // kMeasure
  v1::ProfileResponse profile;  // kProfile
  v1::ScreenResponse screen;    // kScreen
  std::string worker_id;
  bool from_storage = false;  // answered from a stored result, not run
  // Wall time of the call to the worker. With tasks_per_worker > 1 it includes the time
  // the task waited on the worker for its GPU slot behind another task.
  double seconds = 0;
};

struct WorkerInfo {
  std::string id;
  std::string address;
  bool is_static = false;
  bool alive = false;
  int in_flight = 0;  // tasks given to the worker and not yet finished (<= tasks_per_worker)
  int64_t tasks_done = 0;
  int64_t failures = 0;
  double busy_seconds = 0;  // wall time with at least one task in flight
  std::vector<v1::GpuSpec> gpus;
  bool busy() const { return in_flight > 0; }
};

// Why `r` is an infrastructure failure (a measurement with VERDICT_INFRA_ERROR: its
// reason); empty when it is not one. Exposed for tests and the job manager.
std::string InfraReason(const GpuTask& task, const GpuTaskResult& r);
// Rewrites an infrastructure failure's reason once its attempts are spent: "infrastructure
// failure on all N attempts (workers A, B, ...); last: REASON". Nothing for other kinds.
void MarkInfraSpent(const GpuTask& task, const std::vector<std::string>& workers,
                    GpuTaskResult* r);

class Scheduler {
 public:
  // `storage` (for idempotent results) and `factory` must outlive the scheduler.
  // `registry` may be null (no metrics). Precondition: 1 <= options.tasks_per_worker <=
  // kMaxTasksPerWorker (crashes otherwise; CoordinatorOptions validates the flag).
  Scheduler(SchedulerOptions options, Storage* storage, GpuWorkerFactory* factory,
            prometheus::Registry* registry);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Adds or renews a worker. Static workers never expire.
  absl::Status RegisterWorker(const std::string& worker_id, const std::string& address,
                              const std::vector<v1::GpuSpec>& gpus, bool is_static);
  void RemoveWorker(const std::string& worker_id);

  // Runs the task on some worker; blocks. CANCELLED when `cancel` fires first.
  absl::StatusOr<GpuTaskResult> Run(const GpuTask& task, CancelToken* cancel);

  // Queues a ReleaseJob call to every worker that is live when the call is sent; returns
  // at once (see the file comment). Never fails.
  void ReleaseJob(const std::string& job_id);

  std::vector<WorkerInfo> Workers() const;
  int QueueDepth() const;
  // How long a registered (not static) worker stays usable after RegisterWorker.
  absl::Duration lease() const { return options_.lease; }
  // The GPU spec of any live worker (the first), for planning; NOT_FOUND when none.
  absl::StatusOr<v1::GpuSpec> AnyGpuSpec() const;

 private:
  struct Worker {
    WorkerInfo info;
    // Shared with the calls in flight, so that a re-registration at another address
    // (which replaces the client) cannot destroy one under a running call.
    std::shared_ptr<GpuWorker> client;
    absl::Time lease_expiry = absl::InfiniteFuture();
    absl::Time down_until = absl::InfinitePast();
    absl::Time busy_since;  // last time info.busy_seconds was brought up to date
  };
  struct Pending {
    const GpuTask* task;
    std::string granted;  // worker id once granted
    bool done = false;
    // Workers that failed this task before: granted one only when no other is usable.
    const std::set<std::string>* avoid = nullptr;
  };

  bool Usable(const Worker& w, absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AnyUsable(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `p` may go to worker `id` (see Pending::avoid).
  bool MayRunOn(const Pending& p, const std::string& id, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Grants free task slots of usable workers (the least loaded first) to queued tasks,
  // round-robin over jobs.
  void Grant() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds the time since w.busy_since to w's busy time when it has tasks in flight.
  void AccountBusy(Worker& w, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The release thread: sends the queued ReleaseJob calls until stopping and drained.
  void ReleaseLoop();
  // One attempt; `avoid` (may be null) as Pending::avoid.
  absl::StatusOr<GpuTaskResult> RunOnce(const GpuTask& task, CancelToken* cancel,
                                        const std::set<std::string>* avoid,
                                        std::string* worker_id);
  void StoreResult(const GpuTask& task, const GpuTaskResult& r);
  void UpdateGauges() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SchedulerOptions options_;
  Storage* const storage_;
  GpuWorkerFactory* const factory_;

  mutable absl::Mutex mu_;
  std::map<std::string, Worker> workers_ ABSL_GUARDED_BY(mu_);
  RoundRobinQueue<Pending*> queue_ ABSL_GUARDED_BY(mu_);  // by job
  std::string last_worker_ ABSL_GUARDED_BY(mu_);  // over equally loaded workers

  absl::Mutex release_mu_;
  std::deque<std::string> release_queue_ ABSL_GUARDED_BY(release_mu_);  // job ids
  bool release_stop_ ABSL_GUARDED_BY(release_mu_) = false;
  std::thread release_thread_;  // runs ReleaseLoop; joined by the destructor

  prometheus::Family<prometheus::Gauge>* queue_depth_ = nullptr;
  prometheus::Family<prometheus::Gauge>* workers_gauge_ = nullptr;
  prometheus::Family<prometheus::Gauge>* worker_busy_ = nullptr;
  prometheus::Family<prometheus::Gauge>* worker_in_flight_ = nullptr;
  prometheus::Family<prometheus::Counter>* worker_busy_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* tasks_ = nullptr;
  prometheus::Family<prometheus::Counter>* infra_retries_ = nullptr;
  prometheus::Family<prometheus::Histogram>* task_seconds_ = nullptr;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_SCHEDULER_H_
