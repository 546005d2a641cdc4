// JobManager: owns every job's lifecycle in the coordinator.
//
//   QUEUED -> BASELINE -> ROUNDS -> DONE | FAILED | CANCELLED
//
// BASELINE: the starting kernel (or, when the job has none, a first kernel the brain
// writes for the op signature that a run of the reference alone recorded) must pass the
// correctness gate; eager and torch.compile are measured in the same run. ROUNDS: each
// round profiles the beam's kernels, asks the judge for a diagnosis and the analyzer for
// prescriptions, has the orchestrator plan which beam kernel gets which fix, has the
// optimization manager generate the candidates, measures every candidate on the GPU
// workers (through the Scheduler), writes a reflexion for every attempt, and keeps the
// top K distinct correct kernels by measured median. Round 1 of a job that came with its
// own kernel also measures the brain's first kernel for the op (the library seed,
// pattern id kLibrarySeedPattern) beside the fixes, when the brain has one. A generated
// kernel that comes with variants (GeneratedKernel.variants) is screened first
// (screening.h): one GPU task of kind kScreen times it and its variants, and the fastest
// that passed is the kernel measured; a failed screen, or one where nothing passed,
// measures the kernel as generated. A screen is never a measurement. A job
// stops on a plateau (no gain above 1% for N rounds), on reaching the target roofline
// efficiency (UsefulRooflinePct: the arithmetic-intensity roofline when known, else SOL),
// when a budget is spent (rounds, wall time, GPU-seconds, LLM tokens or cost), or on
// cancel.
//
// LLM budgets: every Generate and Diagnose request carries what is left of the job's
// Budget.max_llm_tokens / max_llm_cost_usd (llm_tokens_left / llm_cost_usd_left); the
// usage each reply reports (or, when Generate fails with RESOURCE_EXHAUSTED, the usage
// attached to the status: common/llm/usage_status.h) is added to Job.llm_tokens_used /
// llm_cost_usd and persisted; a Generate's usage before the round checkpoint that makes
// it final. A job whose LLM budget is spent stops before the next round; a Generate
// refused with RESOURCE_EXHAUSTED ends it with the best kernel so far (or FAILED when
// nothing was measured yet).
//
// GPU accounting: every GPU task the job runs adds its held time to Job.gpu_seconds_used
// (a measurement's, screen's or profile's own gpu_seconds, else the call's wall time);
// each adds its NVML busy time to gpu_busy_seconds_used (a profile's counts the
// profiler's replays); every measurement of a
// kernel (baseline, round candidates, final runs, shape sets; not the reference-only run)
// adds 1 to candidates_measured; a screen adds its kernels to variants_screened. A task
// answered from storage after a restart is not charged again.
//
// When a job ends (DONE, FAILED or CANCELLED, not a shutdown) the scheduler is asked to
// release it on the workers (Scheduler::ReleaseJob, best effort).
//
// Storage failures (IsStorageFailure: a full disk, a locked or unreachable database) are
// infrastructure faults, never a budget or the kernel's fault. A job step that hits one
// is made again from what storage holds (as after a restart: checkpoints and stored GPU
// task results are reused; work whose result could not be stored is done again), with
// backoff from `storage_retry_backoff_seconds` doubling up to 15 s, for up to
// `storage_retry_seconds` (counted afresh when the job got further: another state or a
// round more); storage that recovers by then (space freed) lets the job go on. After that the job fails with error "storage error: ..." (the client message:
// no file path or server URI; the log has the full detail), and storing FAILED is itself
// retried, with the same backoff, until it succeeds: GetJob and the database show the
// failure, never a state held only in memory. Until then they show the last stored
// state; a shutdown meanwhile leaves the job to resume on the next start. Submit writes
// the job and its first event in one transaction: when it fails nothing is stored.
//
// Every transition and every result is persisted before it is announced. After a
// restart, ResumeUnfinished() picks each unfinished job up from its last completed step:
// the round checkpoint stores generated kernels (and, beside it, their variants) before
// they are measured, and GPU tasks (screens included) have deterministic ids whose
// results are stored, so nothing is screened or measured twice.
//
// JobManager keeps the job table (submit, cancel, resume, shutdown, events); each job's
// run through the states above is a JobRun (job_run.h) on the job's own thread.
//
// Thread-safe. Each running job has one thread; at most `max_concurrent_jobs` run at once
// and the rest wait in QUEUED.
#ifndef KAGENT_SERVICES_COORDINATOR_JOB_MANAGER_H_
#define KAGENT_SERVICES_COORDINATOR_JOB_MANAGER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/storage/storage.h"
#include "kagent/v1/common.pb.h"
#include "prometheus/registry.h"
#include "services/coordinator/job_defaults.h"
#include "services/coordinator/job_metrics.h"
#include "services/coordinator/job_run.h"
#include "services/coordinator/loop_services.h"
#include "services/coordinator/scheduler.h"

namespace kagent {

class JobManager {
 public:
  // Borrowed pointers must outlive the manager. `registry` may be null.
  JobManager(JobDefaults defaults, Storage* storage, Scheduler* scheduler,
             LoopServices* services, prometheus::Registry* registry);
  ~JobManager();  // stops the job threads (jobs stay resumable)

  // Applies defaults to unset config fields (used by SubmitJob before storing).
  v1::JobConfig EffectiveConfig(const v1::JobConfig& config) const;

  // Stores a new job (state QUEUED) with its first event, in one transaction, and starts
  // it. Returns the stored job; with an idempotency key already used by this tenant, the
  // earlier job. On error nothing was stored.
  absl::StatusOr<v1::Job> Submit(v1::Job job, const std::string& idempotency_key);

  // Cancels an unfinished job; a finished job is returned unchanged (FAILED_PRECONDITION
  // when it finished otherwise than by cancel).
  absl::StatusOr<v1::Job> Cancel(const std::string& job_id, const std::string& reason);

  // Restarts every unfinished job found in storage. Call once at start.
  absl::Status ResumeUnfinished();

  // Appends an event (assigning its sequence) and wakes watchers.
  absl::StatusOr<int64_t> Emit(const std::string& job_id, v1::JobEvent event);
  // Blocks until the job has an event with sequence > `after`, `timeout` passes, or
  // `cancelled` (may be null; polled every 100 ms) returns true.
  void WaitForEvent(const std::string& job_id, int64_t after, absl::Duration timeout,
                    const std::function<bool()>& cancelled = nullptr);

  // Stops starting new work: running jobs stop at their next step, stay in storage in
  // their state, and resume on the next start. Idempotent.
  void Shutdown();

  int running_jobs() const;

 private:
  struct Running {
    std::unique_ptr<CancelToken> cancel;
    std::thread thread;
    bool finished = false;
  };

  void StartLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeStartQueued() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunJob(const std::string& job_id, CancelToken* cancel);
  bool ShuttingDown() const;
  // Wakes watchers for an event already stored with `sequence`.
  void NoteEvent(const std::string& job_id, int64_t sequence);

  const JobDefaults defaults_;
  Storage* const storage_;
  Scheduler* const scheduler_;
  const JobMetrics metrics_;
  // What each job's JobRun uses (job_run.h); its callbacks reach this manager.
  const JobRunDeps run_deps_;

  mutable absl::Mutex mu_;
  std::map<std::string, Running> running_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> waiting_ ABSL_GUARDED_BY(mu_);  // QUEUED, not started
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;

  mutable absl::Mutex events_mu_;
  std::map<std::string, int64_t> last_sequence_ ABSL_GUARDED_BY(events_mu_);
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_JOB_MANAGER_H_
