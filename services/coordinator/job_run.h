// JobRun: one job's run through the state machine that job_manager.h describes
// (BASELINE -> ROUNDS -> DONE | FAILED), on the job's own thread, from what storage holds.
//
// A JobRun reaches nothing of the JobManager: everything it uses comes in JobRunDeps.
// JobManager keeps the job table (submit, cancel, resume, shutdown) and makes one JobRun
// per job thread.
//
// The run is split over four files at its seams:
//   job_run.cc        the run and its retries, persistence, charging, GPU tasks,
//                     profile -> diagnose -> prescribe;
//   job_run_start.cc  the baseline, the brain's first kernel, round 1's library seed;
//   job_run_round.cc  one round: plan, generate, screen/measure, reflect, beam update
//                     (beam.h), checkpoint;
//   job_run_finish.cc the final runs and the job's result.
//
// The avoid-list: the job's own (JobConfig.avoid_patterns) goes to the analyzer only
// (PrescribeRequest.avoid_patterns), which drops those patterns (exact ids and "prefix*")
// before it ranks, limits and removes contradictions; the reflexion memory's avoid patterns
// go to the orchestrator's planner only, with the memory (services/orchestrator/planner.h).
// Nothing here filters prescriptions itself.
#ifndef KAGENT_SERVICES_COORDINATOR_JOB_RUN_H_
#define KAGENT_SERVICES_COORDINATOR_JOB_RUN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/cancel.h"
#include "common/storage/storage.h"
#include "kagent/v1/common.pb.h"
#include "kagent/v1/optimization_manager_service.pb.h"
#include "kagent/v1/orchestrator_service.pb.h"
#include "services/coordinator/gpu_worker.h"
#include "services/coordinator/job_defaults.h"
#include "services/coordinator/job_metrics.h"
#include "services/coordinator/loop_services.h"
#include "services/coordinator/scheduler.h"

namespace kagent {

// Reflexions of earlier jobs a plan reads with share_memory_across_jobs (the most recent).
inline constexpr int kSharedMemoryRead = 32;

// What a JobRun uses. Every pointer is borrowed and must outlive each JobRun made with
// these deps (JobManager owns one JobRunDeps and joins its job threads before it goes);
// all of it must be safe to use from several jobs' threads at once (Storage, Scheduler,
// LoopServices and the metric families are).
struct JobRunDeps {
  JobDefaults defaults;
  Storage* storage = nullptr;
  Scheduler* scheduler = nullptr;
  LoopServices* services = nullptr;
  JobMetrics metrics;  // families may be null: nothing counted
  // True once the coordinator is shutting down: the run stops at its next step and leaves
  // the job in storage, to resume on the next start.
  std::function<bool()> shutting_down;
  // Appends `event` to job `job_id`'s events (assigning its sequence and time) and wakes
  // its watchers (JobManager::Emit).
  std::function<absl::StatusOr<int64_t>(const std::string& job_id, v1::JobEvent event)> emit;
};

// Not thread-safe: Run() and everything it calls run on the job's thread, except that a
// round's measuring threads call ScreenCandidate, Measure, ChargeGpu, EmitLog and
// StoreArtifact at once (they only read the run's state; ChargeGpu locks charges_mu_).
class JobRun {
 public:
  // `deps` and `cancel` (the job's cancel token, set by JobManager::Cancel and Shutdown)
  // are borrowed and must outlive the run.
  JobRun(const JobRunDeps& deps, std::string job_id, CancelToken* cancel)
      : deps_(deps), job_id_(std::move(job_id)), cancel_(cancel) {}

  JobRun(const JobRun&) = delete;
  JobRun& operator=(const JobRun&) = delete;

  // Runs the job to its end, a cancel, or a shutdown; a storage failure is retried as
  // JobDefaults says. Call once, on the job's thread. Releases the job on the GPU workers
  // when it ended (not on a shutdown).
  void Run();

 private:
  // How a step ended: kNone goes on; any other kind ends this pass over the job (Run
  // says what each one does). kShutdown leaves the job for the next start.
  struct Stop {
    // kBudget: a service refused more work because a budget (LLM tokens or cost) is
    // spent; the job finishes with the best kernel so far. kStorage: the storage failed
    // (IsStorageFailure); the run is made again while JobDefaults::storage_retry_seconds
    // allow, then the job fails. kFinished: the job was already final in storage.
    enum Kind { kNone, kFailed, kCancelled, kShutdown, kBudget, kStorage, kFinished } kind = kNone;
    std::string reason;  // what a client may read (the job's error, events)
    absl::Status detail = absl::OkStatus();  // kStorage: the full status, for the log
  };

  // --- job_run.cc: the run, its state and its services.

  // One pass over the job from what storage holds (as after a restart): load it and its
  // checkpoint, the baseline unless done, rounds, the final runs. Run() calls it again
  // after a storage failure.
  Stop RunSteps();
  // While `stop` is a storage failure: RunSteps again, with backoff, as JobDefaults's
  // storage_retry_* say (the window starts afresh when the job got further). Returns the
  // first other stop, or kFailed when the window is spent.
  Stop RetryStorageFailures(Stop stop);
  // The reason to stop before the next round (a budget spent or a plateau), else "".
  std::string BudgetStopReason(absl::Time wall_start) const;
  // Stores FAILED with `stop.reason` as the error and announces it; a storage failure is
  // retried (backoff up to 15 s) until it is stored or the coordinator shuts down.
  void FailJob(const Stop& stop);
  bool Stopping() const;
  Stop StopFromStatus(const absl::Status& s) const;
  // Applies `f` and the pending GPU and LLM charges to the stored job; job_ is the result.
  absl::Status Persist(const std::function<void(v1::Job&)>& f);
  absl::Status SetState(v1::JobState state, const std::string& message);
  void Emit(v1::JobEvent e) { (void)deps_.emit(job_id_, std::move(e)); }
  void EmitLog(const std::string& message);

  absl::StatusOr<v1::Measurement> Measure(const std::string& task_id, const v1::KernelSource& k,
                                          bool baselines, const std::string& shape_set,
                                          const v1::KernelSource* reference);
  // Screens candidate `c`'s kernel with its `variants` (screening.h) and returns the
  // kernel to measure: the fastest that passed the screen, or c.kernel() when the screen
  // failed or nothing passed (a LOG event says which). Writes round-R/ID/screen.json and
  // charges the screen's GPU time and variants to the job. An error only when the job is
  // stopping. Called from the round's measuring threads.
  absl::StatusOr<v1::KernelSource> ScreenCandidate(
      const v1::Candidate& c, const google::protobuf::RepeatedPtrField<v1::KernelSource>& variants,
      const std::string& parent_source);
  // Profiles `c` unless it has metrics (or ran on a CPU worker, or the job runs without
  // counters: ABLATION_NO_COUNTERS), has the judge diagnose it
  // unless it has a report (without counters: from its measurement, saying why there are
  // none; a failure of that diagnosis is logged, not an error), stores it, and has the
  // analyzer prescribe fixes into `rx` for round `round` (an LLM prescribe agent's
  // exchange stored under round-R/prescribe/<id>/).
  absl::Status EnsureDiagnosed(int round, v1::Candidate& c, std::vector<v1::Prescription>* rx);
  // Profiles `c` on a GPU worker into its metrics (a failed profile is logged, not an
  // error, unless the job is stopping; `failure` then says why).
  absl::Status Profile(v1::Candidate& c, std::string* failure);
  absl::Status SaveCandidate(const v1::Candidate& c);
  void StoreArtifact(const std::string& name, const std::string& kind, const std::string& body);
  // An LLM agent's exchange (analyzer, orchestrator) as `dir`<prefix>prompt.txt and
  // <prefix>reply.txt; a fallback is logged as an event naming `subject`.
  void StoreExchange(const std::string& dir, const std::string& prefix,
                     const v1::AgentExchange& exchange, const std::string& subject);
  absl::Status SaveCheckpoint();
  // Fills gpu_ when no profile gave it yet: from any worker, else from the spec table by
  // the GPU the baseline ran on (kernel_model/gpu_spec.h).
  void EnsureGpuSpec();
  // Charges GPU work to the job (stored with the next Persist): the time it held a GPU,
  // of it the time the GPU was busy, candidate measurements and screened variants.
  // Thread-safe (a round's measurements run in parallel).
  void ChargeGpu(double held_seconds, double busy_seconds, int64_t candidates_measured,
                 int64_t variants_screened);
  // Charges LLM usage reported by a service to the job (stored with the next Persist).
  void ChargeLlm(const v1::LlmUsage& usage);
  // The job's LLM tokens / cost so far, the pending charges included.
  int64_t LlmTokensUsed() const;
  double LlmCostUsed() const;
  // What is left of the job's LLM budget, for a Generate or Diagnose request: each limit
  // the job sets becomes `llm_tokens_left` / `llm_cost_usd_left` (0 when spent).
  template <typename Request>
  void SetLlmBudgetLeft(Request& r) const;
  // The job's choice of LLM agents (JobConfig.llm_agents) for a Diagnose, Prescribe,
  // PlanRound or Reflect request: the service asks its LLM agent only when it is chosen
  // or none is. (Generate needs none: the job's brain names the rewrite's.)
  template <typename Request>
  void SetLlmAgents(Request& r) const {
    for (const std::string& a : cfg_.llm_agents()) r.add_llm_agents(a);
  }
  // The reason to stop when the job's LLM budget is spent, else "".
  std::string LlmBudgetSpent() const;
  // Keeps the reference's op signature, labelled with its op class (op recognition).
  void SetSignature(const v1::OpSignature& s);
  // Makes a brain-service call (`what` names it in logs), again after a transport failure,
  // as JobDefaults::service_retry_seconds says, while the job is not stopping. The LLM usage
  // of the failed attempts it makes again is charged here; the returned status is the
  // caller's to handle.
  template <typename T>
  absl::StatusOr<T> CallService(const char* what, const std::function<absl::StatusOr<T>()>& call);
  // CallService for a call that may spend LLM tokens (Generate, Diagnose): the usage the
  // reply reports, or on failure the usage attached to the status, is charged to the job.
  template <typename T>
  absl::StatusOr<T> CallCharged(const char* what, const std::function<absl::StatusOr<T>()>& call);

  // --- job_run_generate.cc: a Generate that waits for the brain's LLM endpoint.

  // Makes the Generate call `g` (CallCharged, with what is left of the LLM budget). When
  // no kernel came back and the brain's LLM endpoint failed (GeneratedKernel
  // .endpoint_failure), nothing of the reply is kept: a permanent failure (the model not
  // served, the key refused) is FAILED_PRECONDITION "the LLM endpoint ..."; a transient
  // one pauses the job and asks again, with backoff from
  // JobDefaults::llm_retry_backoff_seconds doubling up to 60 s, or as long as the
  // provider's Retry-After says, while the job's wall budget lasts and (Retry-After aside)
  // for up to llm_outage_seconds; then FAILED_PRECONDITION "the LLM endpoint ...". A reply
  // with at least one kernel is returned as it is. `what` names the call in events
  // ("round 2", "the first kernel"). CANCELLED when the job stops while waiting.
  absl::StatusOr<v1::GenerateResponse> GenerateAwaitingEndpoint(v1::GenerateRequest g,
                                                                const std::string& what);

  // --- job_run_start.cc: the starting kernel.

  Stop Baseline();
  // A run of the reference alone, which records its op signature for the brain (a job
  // without a starting kernel); a stop when it recorded none.
  Stop RecordReferenceSignature();
  // Announces the starting kernel's measurement; a stop when it is not correct.
  Stop CheckStartKernel(const v1::Candidate& c);
  // The brain's first kernel for the problem's op (a Generate with an empty plan), from
  // the op signature kept in signature_, with its variants. INTERNAL with the brain's
  // reason when it wrote none (e.g. the heuristic brain has no template for the op); else
  // the call's status. An LLM brain's prompt and reply are stored as the artifacts
  // `artifact_dir`prompt.txt and reply.txt, also when it wrote no kernel.
  absl::StatusOr<v1::GeneratedKernel> FirstKernel(const std::string& artifact_dir);
  // Round 1 of a job that came with its own starting kernel also measures the brain's own
  // kernel for the op (the library seed) beside the fixes: a hand-written start far from
  // the roofline is often better replaced than tuned. Appended to `rc` as one more
  // candidate (parent: the start), its variants (if any) to `variants`; nothing when the
  // brain has none or it is the start.
  void AddLibrarySeed(v1::RoundCheckpoint* rc, v1::GenerateResponse* variants);

  // --- job_run_round.cc: one round.

  // Runs round `round`; sets *stop_reason when the job should stop after it.
  Stop Round(int round, std::string* stop_reason);
  // The beam's kernels, from storage, in beam order.
  Stop LoadBeam(std::vector<v1::Candidate>* beam);
  // The round's checkpoint and variants as stored before a restart; false when none.
  bool LoadRoundCheckpoint(int round, v1::RoundCheckpoint* rc, v1::GenerateResponse* variants);
  // Plan and generate: diagnoses the beam, plans, generates the candidates (and round 1's
  // library seed) into `rc` and `variants`, and stores them as the round's checkpoint.
  // Sets *stop_reason (and returns no stop) when the best beam kernel is at the roofline
  // target. Adds the profiles and reports it made to `beam`'s kernels.
  Stop PrepareRound(int round, std::vector<v1::Candidate>& beam, std::string* stop_reason,
                    v1::RoundCheckpoint* rc, v1::GenerateResponse* variants);
  // PrepareRound for a blind sweep (ABLATION_BLIND_SWEEP): no profile, diagnosis,
  // prescriptions, plan call or memory; the plan is BlindSweepPlan's (blind_sweep.h),
  // generated and stored like any other.
  Stop PrepareBlindRound(int round, const std::vector<v1::Candidate>& beam,
                         v1::RoundCheckpoint* rc, v1::GenerateResponse* variants);
  // The end of PrepareRound: round 1's library seed, then `rc` and `variants` stored as
  // the round's checkpoint.
  Stop StoreRoundCheckpoint(int round, v1::RoundCheckpoint* rc, v1::GenerateResponse* variants);
  // The reflexion memory a plan (and through it the brain) and a reflection read: none
  // unless UsesReflexionMemory(); else, with share_memory_across_jobs and the op class and
  // GPU architecture known, the tenant's shared memory under that key from other jobs
  // (the most recent kSharedMemoryRead, oldest first; this job's own entries left out of
  // it), then this job's reflexions in order. `shared_count`, when given, receives how
  // many came from other jobs. A storage error leaves that part out.
  std::vector<v1::Reflexion> ReadMemory(int* shared_count = nullptr);
  // Whether the job's plans, kernels and reflexions read its reflexion memory: not under
  // ABLATION_NO_REFLEXION or ABLATION_BLIND_SWEEP (reflexions are still written).
  bool UsesReflexionMemory() const {
    return cfg_.ablation() != v1::ABLATION_NO_REFLEXION &&
           cfg_.ablation() != v1::ABLATION_BLIND_SWEEP;
  }
  // Profile -> diagnose -> prescribe for each beam kernel, into `plan`'s beam; sets
  // `stop_reason` when the front kernel is at the roofline target (MeasuredAtRoofline, or
  // its profile).
  Stop DiagnoseBeam(std::vector<v1::Candidate>& beam, v1::PlanRoundRequest* plan,
                    std::string* stop_reason);
  // True (and `stop_reason` says so) when `c`'s measured median alone reaches the roofline
  // target: the op's own FLOPs and bytes over the whole forward's time. A profile's kernel
  // time is at most that median, so it would read at least as high; the job stops without
  // spending the GPU on one (16 of 67 finished jobs of the H100 suite run stopped at the
  // roofline, each after a 2.5 s profile).
  bool MeasuredAtRoofline(const v1::Candidate& c, std::string* stop_reason);
  // Has the optimization manager write `plan`'s kernels; each becomes a candidate of `rc`
  // (a failed one with verdict COMPILE_ERROR), its variants go to `variants`.
  Stop Generate(int round, const v1::RoundPlan& plan, const std::vector<v1::Candidate>& beam,
                const google::protobuf::RepeatedPtrField<v1::Reflexion>& memory,
                v1::RoundCheckpoint* rc, v1::GenerateResponse* variants);
  // Screens (when it has variants) and measures every candidate without a measurement, in
  // parallel (the scheduler spreads them over the GPUs); one measured before a restart is
  // taken from storage. `task_suffix` follows each GPU task's id ("<job>/r<R>/w<W>"), so
  // that a repaired kernel is not taken for the one it repairs.
  Stop MeasureCandidates(int round, const std::vector<v1::Candidate>& beam,
                         const v1::GenerateResponse& variants, std::vector<v1::Candidate>* cands,
                         const std::string& task_suffix = "");
  // Repair turns (docs/llm.md): up to defaults.llm_repairs times, each candidate of the
  // round that an LLM brain wrote (origin "brain:..." but not the heuristic's) and that
  // failed the gate (a compile error with a kernel, a wrong result, a crash) goes back to
  // the brain with its verdict and error (GenerateRequest.repairs); the repaired kernel
  // is a new candidate "<id>-fix<N>" of the same parent and prescription, measured and
  // appended to `cands`, its prompt and reply stored. One measured before a restart is
  // not asked for again.
  Stop RepairCandidates(int round, const std::vector<v1::Candidate>& beam,
                        std::vector<v1::Candidate>* cands);
  // Stores and announces every attempt and has the orchestrator reflect on each one not
  // reflected on before.
  Stop RecordAttempts(int round, const std::vector<v1::Candidate>& beam,
                      const std::vector<v1::Candidate>& cands);
  // The reflexion on attempt `c` (its parent, when in the beam): stored, shared, announced.
  // An error only when the job is stopping.
  absl::Status Reflect(int round, const v1::Candidate& c, const v1::Candidate* parent);
  // The beam update (beam.h), the job's checkpoint and round summary, BEAM_UPDATED.
  Stop CloseRound(int round, const std::vector<v1::Candidate>& beam,
                  const std::vector<v1::Candidate>& cands);

  // --- job_run_finish.cc: the result.

  // Verifies the beam again, measures the best on the extra shapes, and stores DONE with
  // the result.
  Stop Finish(const std::string& stop_reason);
  // The beam's final runs, fastest first (each timed beside the start, eager and
  // torch.compile) until one passes: that kernel and its run go to *best / *final_m. A
  // stop when none passed.
  Stop VerifyBeam(const v1::Candidate& start, v1::Candidate* best, v1::Measurement* final_m);

  const JobRunDeps& deps_;
  const std::string job_id_;
  CancelToken* const cancel_;
  v1::Job job_;
  v1::JobConfig cfg_;
  v1::JobCheckpoint ckpt_;
  v1::GpuSpec gpu_;
  v1::OpSignature signature_;
  // The GPU the reference run (RecordReferenceSignature) ran on, its measurement's
  // gpu_name: before a job without a starting kernel has a baseline, the first kernel is
  // written for it (EnsureGpuSpec), or for the CPU worker when it is kCpuWorkerGpuName.
  std::string reference_gpu_name_;
  // GPU work charged and not yet stored in the job (ChargeGpu, Persist).
  struct GpuCharges {
    double held_seconds = 0;
    double busy_seconds = 0;
    int64_t candidates_measured = 0;
    int64_t variants_screened = 0;
  };
  absl::Mutex charges_mu_;
  GpuCharges gpu_pending_ ABSL_GUARDED_BY(charges_mu_);
  v1::LlmUsage llm_pending_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_JOB_RUN_H_
