// The GPU scheduler: spreads GPU tasks (measure, profile) over the registered GPU
// workers, one task at a time per worker (each worker is one GPU), fairly across jobs.
//
// - Workers register (RegisterWorker RPC, renewed before their lease runs out) or are
//   given statically at start (--workers). A worker whose lease ran out, or whose call
//   failed with a transport error (UNAVAILABLE, DEADLINE_EXCEEDED), is taken out of
//   rotation (a static worker for a cool-down) and the task is re-run on another, at most
//   `max_attempts` times.
// - Fairness: pending tasks queue per job; a free worker takes the head task of the next
//   job in round-robin order, so one job with many candidates cannot starve another.
// - Idempotence: a task's result is stored under its task id before it is returned; a
//   task whose id already has a stored result (e.g. after a coordinator restart) is
//   answered from storage and not run again.
// - A task that finds no live worker for `no_worker_timeout` fails with UNAVAILABLE and
//   a message saying how to start one, so a job never hangs waiting for a GPU.
//
// Thread-safe. Run() blocks the calling thread until the task is done.
#ifndef KAGENT_SERVICES_COORDINATOR_SCHEDULER_H_
#define KAGENT_SERVICES_COORDINATOR_SCHEDULER_H_

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
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
  int max_attempts = 3;
};

struct GpuTask {
  enum class Kind { kMeasure, kProfile };
  Kind kind = Kind::kMeasure;
  std::string task_id;   // unique; a stored result for it is reused
  std::string job_id;
  v1::MeasureRequest measure;
  v1::ProfileRequest profile;
};

struct GpuTaskResult {
  v1::MeasureResponse measure;
  v1::ProfileResponse profile;
  std::string worker_id;
  bool from_storage = false;  // answered from a stored result, not run
  double seconds = 0;         // wall time on the worker
};

struct WorkerInfo {
  std::string id;
  std::string address;
  bool is_static = false;
  bool alive = false;
  bool busy = false;
  int64_t tasks_done = 0;
  int64_t failures = 0;
  double busy_seconds = 0;
  std::vector<v1::GpuSpec> gpus;
};

class Scheduler {
 public:
  // `storage` (for idempotent results) and `factory` must outlive the scheduler.
  // `registry` may be null (no metrics).
  Scheduler(SchedulerOptions options, Storage* storage, GpuWorkerFactory* factory,
            prometheus::Registry* registry);
  ~Scheduler();

  // Adds or renews a worker. Static workers never expire.
  absl::Status RegisterWorker(const std::string& worker_id, const std::string& address,
                              const std::vector<v1::GpuSpec>& gpus, bool is_static);
  void RemoveWorker(const std::string& worker_id);

  // Runs the task on some worker; blocks. CANCELLED when `cancel` fires first.
  absl::StatusOr<GpuTaskResult> Run(const GpuTask& task, CallCancelToken* cancel);

  std::vector<WorkerInfo> Workers() const;
  int QueueDepth() const;
  // How long a registered (not static) worker stays usable after RegisterWorker.
  absl::Duration lease() const { return options_.lease; }
  // The GPU spec of any live worker (the first), for planning; NOT_FOUND when none.
  absl::StatusOr<v1::GpuSpec> AnyGpuSpec() const;

 private:
  struct Worker {
    WorkerInfo info;
    std::unique_ptr<GpuWorker> client;
    absl::Time lease_expiry = absl::InfiniteFuture();
    absl::Time down_until = absl::InfinitePast();
  };
  struct Pending {
    const GpuTask* task;
    std::string granted;  // worker id once granted
    bool done = false;
  };

  bool Usable(const Worker& w, absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AnyUsable(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Grants free workers to queued tasks, round-robin over jobs.
  void Grant() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<GpuTaskResult> RunOnce(const GpuTask& task, CallCancelToken* cancel,
                                        std::string* worker_id);
  void UpdateGauges() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SchedulerOptions options_;
  Storage* const storage_;
  GpuWorkerFactory* const factory_;

  mutable absl::Mutex mu_;
  std::map<std::string, Worker> workers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::deque<Pending*>> queues_ ABSL_GUARDED_BY(mu_);  // by job
  std::string last_job_ ABSL_GUARDED_BY(mu_);  // round-robin cursor

  prometheus::Family<prometheus::Gauge>* queue_depth_ = nullptr;
  prometheus::Family<prometheus::Gauge>* workers_gauge_ = nullptr;
  prometheus::Family<prometheus::Gauge>* worker_busy_ = nullptr;
  prometheus::Family<prometheus::Counter>* worker_busy_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* tasks_ = nullptr;
  prometheus::Family<prometheus::Histogram>* task_seconds_ = nullptr;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_SCHEDULER_H_
