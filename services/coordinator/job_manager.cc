#include "services/coordinator/job_manager.h"

#include <algorithm>
#include <future>
#include <optional>
#include <set>
#include <sstream>

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/client_message.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"
#include "common/source_text.h"
#include "common/status.h"
#include "engines/heuristic/op_recognition.h"
#include "services/coordinator/screening.h"
#include "services/profiler/hardware_metrics.h"

namespace kagent {

using google::protobuf::util::TimeUtil;

namespace {

constexpr char kStateKey[] = "state";

// True when the measurement came from a CPU worker (the harness's device "cpu" reports
// gpu_name "cpu": Triton's interpreter, no hardware counters, timings that rank nothing).
bool RanOnCpuWorker(const v1::Measurement& m) { return m.gpu_name() == "cpu"; }

// Whether the starting kernel's baseline run can stand as its final run: it passed the
// gate and was timed beside eager and torch.compile in that run.
bool StartRunIsFinal(const v1::Measurement& m) {
  return m.verdict() == v1::VERDICT_CORRECT && m.candidate().median_ms() > 0 &&
         m.eager().median_ms() > 0 && m.compiled().median_ms() > 0;
}

bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_DONE || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

std::string RoundCheckpointKey(int round) { return absl::StrCat("round-", round); }

// The variants of a round's generated kernels, stored with the round checkpoint (in the
// same transaction) since a Candidate has no place for them: a GenerateResponse whose
// kernels carry only assignment.worker_index and variants, one per candidate that has any.
std::string RoundVariantsKey(int round) { return absl::StrCat("round-", round, "-variants"); }

// What a round's candidates are called in log lines: "r1-w0".
std::string CandidateLabel(const v1::Candidate& c) {
  return absl::StrCat("r", c.round(), "-w", c.worker_index());
}

// Thrown-free control flow: a run step either succeeds or gives the status that ends
// the job; kStopQuietly marks a shutdown, where the job is left for the next start.
struct Stop {
  // kBudget: a service refused more work because a budget (LLM tokens or cost) is
  // spent; the job finishes with the best kernel so far. kStorage: the storage failed
  // (IsStorageFailure); the run is made again while JobDefaults::storage_retry_seconds
  // allow, then the job fails. kFinished: the job was already final in storage.
  enum Kind { kNone, kFailed, kCancelled, kShutdown, kBudget, kStorage, kFinished } kind = kNone;
  std::string reason;  // what a client may read (the job's error, events)
  absl::Status detail = absl::OkStatus();  // kStorage: the full status, for the log
};

// Sleeps `d`, waking early when `stopping` turns true.
void SleepUnless(absl::Duration d, const std::function<bool()>& stopping) {
  for (absl::Time wake = absl::Now() + d; absl::Now() < wake && !stopping();) {
    absl::SleepFor(std::min(absl::Milliseconds(100), wake - absl::Now()));
  }
}

}  // namespace


// One job's run: the state machine above, executed on the job's thread.
class JobRun {
 public:
  JobRun(JobManager* m, std::string job_id, CancelToken* cancel)
      : m_(m), job_id_(std::move(job_id)), cancel_(cancel) {}

  void Run();

 private:
  // One pass over the job from what storage holds (as after a restart): load it and its
  // checkpoint, the baseline unless done, rounds, the final runs. Run() calls it again
  // after a storage failure.
  Stop RunSteps();
  // Stores FAILED with `stop.reason` as the error and announces it; a storage failure is
  // retried (backoff up to 15 s) until it is stored or the coordinator shuts down.
  void FailJob(const Stop& stop);
  bool Stopping() const;
  Stop StopFromStatus(const absl::Status& s) const;
  absl::Status Persist(const std::function<void(v1::Job&)>& f);
  absl::Status SetState(v1::JobState state, const std::string& message);
  void EmitLog(const std::string& message);

  Stop Baseline();
  // Runs round `round`; sets *stop_reason when the job should stop after it.
  Stop Round(int round, std::string* stop_reason);
  Stop Finish(const std::string& stop_reason);
  // The brain's first kernel for the problem's op (a Generate with an empty plan), from
  // the op signature kept in signature_, with its variants. INTERNAL with the brain's
  // reason when it wrote none (e.g. the heuristic brain has no template for the op); else
  // the call's status.
  absl::StatusOr<v1::GeneratedKernel> FirstKernel();
  // Round 1 of a job that came with its own starting kernel also measures the brain's own
  // kernel for the op (the library seed) beside the fixes: a hand-written start far from
  // the roofline is often better replaced than tuned. Appended to `rc` as one more
  // candidate (parent: the start), its variants (if any) to `variants`; nothing when the
  // brain has none or it is the start.
  void AddLibrarySeed(v1::RoundCheckpoint* rc, v1::GenerateResponse* variants);
  // Screens candidate `c`'s kernel with its `variants` (screening.h) and returns the
  // kernel to measure: the fastest that passed the screen, or c.kernel() when the screen
  // failed or nothing passed (a LOG event says which). Writes round-R/ID/screen.json and
  // charges the screen's GPU time and variants to the job. An error only when the job is
  // stopping. Called from the round's measuring threads.
  absl::StatusOr<v1::KernelSource> ScreenCandidate(
      const v1::Candidate& c, const google::protobuf::RepeatedPtrField<v1::KernelSource>& variants,
      const std::string& parent_source);

  absl::StatusOr<v1::Measurement> Measure(const std::string& task_id, const v1::KernelSource& k,
                                          bool baselines, const std::string& shape_set,
                                          const v1::KernelSource* reference);
  absl::Status EnsureDiagnosed(v1::Candidate& c, std::vector<v1::Prescription>* rx);
  absl::Status SaveCandidate(const v1::Candidate& c);
  void StoreArtifact(const std::string& name, const std::string& kind, const std::string& body);
  absl::Status SaveCheckpoint();
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

  JobManager* m_;
  std::string job_id_;
  CancelToken* cancel_;
  v1::Job job_;
  v1::JobConfig cfg_;
  v1::JobCheckpoint ckpt_;
  v1::GpuSpec gpu_;
  v1::OpSignature signature_;
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

// ---------------------------------------------------------------------------
// JobManager
// ---------------------------------------------------------------------------

JobManager::JobManager(JobDefaults defaults, Storage* storage, Scheduler* scheduler,
                       LoopServices* services, prometheus::Registry* registry)
    : defaults_(defaults), storage_(storage), scheduler_(scheduler), services_(services) {
  if (registry != nullptr) {
    jobs_submitted_ = &prometheus::BuildCounter()
                           .Name("kagent_jobs_submitted_total")
                           .Help("Jobs accepted by SubmitJob.")
                           .Register(*registry);
    storage_failures_ = &prometheus::BuildCounter()
                            .Name("kagent_storage_failures_total")
                            .Help("Storage failures (disk full, database unreachable, I/O) the "
                                  "coordinator met, by operation: submit, step, fail.")
                            .Register(*registry);
    jobs_finished_ = &prometheus::BuildCounter()
                          .Name("kagent_jobs_finished_total")
                          .Help("Jobs that reached a final state, by state.")
                          .Register(*registry);
    jobs_running_ = &prometheus::BuildGauge()
                         .Name("kagent_jobs")
                         .Help("Jobs known to this coordinator process, by state.")
                         .Register(*registry);
    rounds_ = &prometheus::BuildCounter()
                   .Name("kagent_rounds_total")
                   .Help("Optimization rounds completed.")
                   .Register(*registry);
    candidates_ = &prometheus::BuildCounter()
                       .Name("kagent_candidates_total")
                       .Help("Candidates measured, by verdict.")
                       .Register(*registry);
    best_speedup_ = &prometheus::BuildGauge()
                         .Name("kagent_job_best_speedup")
                         .Help("Best speedup over the starting kernel of running jobs.")
                         .Register(*registry);
    gpu_seconds_ = &prometheus::BuildCounter()
                        .Name("kagent_job_gpu_seconds_total")
                        .Help("GPU-seconds spent on jobs' measurements and profiles.")
                        .Register(*registry);
    llm_tokens_ = &prometheus::BuildCounter()
                       .Name("kagent_job_llm_tokens_total")
                       .Help("LLM tokens (input + output) spent on jobs, as the services report them.")
                       .Register(*registry);
    llm_cost_ = &prometheus::BuildCounter()
                     .Name("kagent_job_llm_cost_usd_total")
                     .Help("LLM cost in US dollars spent on jobs, as the services report it.")
                     .Register(*registry);
    jobs_running_->Add({{"state", "running"}}).Set(0);
    jobs_running_->Add({{"state", "queued"}}).Set(0);
    // Every known series exists from the start, so a scrape shows 0, not "No data".
    jobs_submitted_->Add({});
    for (const char* op : {"submit", "step", "fail"}) storage_failures_->Add({{"operation", op}});
    for (const char* state : {"DONE", "FAILED", "CANCELLED"}) jobs_finished_->Add({{"state", state}});
    rounds_->Add({});
    for (int v = v1::Verdict_MIN + 1; v <= v1::Verdict_MAX; ++v) {
      if (v1::Verdict_IsValid(v)) {
        candidates_->Add({{"verdict", v1::Verdict_Name(static_cast<v1::Verdict>(v))}});
      }
    }
    gpu_seconds_->Add({});
    llm_tokens_->Add({});
    llm_cost_->Add({});
  }
}

JobManager::~JobManager() { Shutdown(); }

v1::JobConfig JobManager::EffectiveConfig(const v1::JobConfig& in) const {
  v1::JobConfig c = in;
  if (!c.has_beam_width()) c.set_beam_width(defaults_.beam_width);
  if (!c.has_fixes_per_kernel()) c.set_fixes_per_kernel(defaults_.fixes_per_kernel);
  if (c.strategy() == v1::SEARCH_STRATEGY_UNSPECIFIED) c.set_strategy(v1::SEARCH_STRATEGY_BEAM);
  if (c.strategy() == v1::SEARCH_STRATEGY_GREEDY) c.set_beam_width(1);
  if (!c.has_plateau_rounds()) c.set_plateau_rounds(defaults_.plateau_rounds);
  if (!c.has_target_efficiency_pct()) c.set_target_efficiency_pct(defaults_.target_efficiency_pct);
  if (c.brain().empty()) c.set_brain("heuristic");
  v1::Budget* b = c.mutable_budget();
  if (!b->has_max_rounds()) b->set_max_rounds(defaults_.max_rounds);
  if (!b->has_max_wall_seconds()) b->set_max_wall_seconds(defaults_.max_wall_seconds);
  return c;
}

absl::StatusOr<v1::Job> JobManager::Submit(v1::Job job, const std::string& idempotency_key) {
  *job.mutable_config() = EffectiveConfig(job.config());
  job.set_state(v1::JOB_STATE_QUEUED);
  auto now = TimeUtil::GetCurrentTime();
  *job.mutable_created_at() = now;
  *job.mutable_updated_at() = now;
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_STATE_CHANGED);
  e.set_state(v1::JOB_STATE_QUEUED);
  e.set_message("job queued");
  e.set_total_rounds(job.config().budget().max_rounds());
  e.set_job_id(job.id());
  *e.mutable_time() = now;
  // The job and its first event in one transaction: a failed Submit leaves nothing (no
  // job without events, which WatchJob would wait on and a restart would run).
  CreateJobResult created;
  int64_t sequence = 0;
  absl::Status stored = storage_->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(created, tx.CreateJob(job, idempotency_key));
    if (!created.created) return absl::OkStatus();
    KAGENT_ASSIGN_OR_RETURN(sequence, tx.AppendEvent(job.id(), e));
    return absl::OkStatus();
  });
  if (!stored.ok()) {
    CountStorageFailure(stored, "submit");
    return stored;
  }
  if (!created.created) return created.stored.job;
  NoteEvent(job.id(), sequence);
  if (jobs_submitted_ != nullptr) jobs_submitted_->Add({}).Increment();
  absl::MutexLock lock(&mu_);
  if (!shutting_down_) {
    waiting_.push_back(job.id());
    MaybeStartQueued();
  }
  return created.stored.job;
}

void JobManager::CountStorageFailure(const absl::Status& status, const char* operation) {
  if (storage_failures_ != nullptr && IsStorageFailure(status)) {
    storage_failures_->Add({{"operation", operation}}).Increment();
  }
}

absl::StatusOr<v1::Job> JobManager::MutateJob(
    const std::string& job_id, const std::function<absl::Status(v1::Job&)>& mutate) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    KAGENT_ASSIGN_OR_RETURN(StoredJob stored, storage_->GetJob(job_id));
    v1::Job job = stored.job;
    KAGENT_RETURN_IF_ERROR(mutate(job));
    *job.mutable_updated_at() = TimeUtil::GetCurrentTime();
    absl::StatusOr<int64_t> rev = storage_->UpdateJob(job, stored.revision);
    if (rev.ok()) return job;
    if (rev.status().code() != absl::StatusCode::kAborted) return rev.status();
  }
  return absl::AbortedError(absl::StrCat("job ", job_id, " is being updated concurrently"));
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& job_id, const std::string& reason) {
  bool changed = false;
  KAGENT_ASSIGN_OR_RETURN(v1::Job job, MutateJob(job_id, [&](v1::Job& j) {
    if (j.state() == v1::JOB_STATE_CANCELLED) return absl::OkStatus();
    if (IsTerminal(j.state())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", job_id, " already finished (", v1::JobState_Name(j.state()), ")"));
    }
    j.set_state(v1::JOB_STATE_CANCELLED);
    j.mutable_result()->set_stop_reason(reason.empty() ? "cancelled" : "cancelled: " + reason);
    changed = true;
    return absl::OkStatus();
  }));
  if (changed) {
    v1::JobEvent e;
    e.set_type(v1::JOB_EVENT_JOB_FINISHED);
    e.set_state(v1::JOB_STATE_CANCELLED);
    e.set_message(job.result().stop_reason());
    (void)Emit(job_id, e);
    if (jobs_finished_ != nullptr) jobs_finished_->Add({{"state", "CANCELLED"}}).Increment();
    absl::MutexLock lock(&mu_);
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), job_id), waiting_.end());
    auto it = running_.find(job_id);
    if (it != running_.end() && !it->second.finished) {
      it->second.cancel->Cancel();  // the job's thread releases it on the workers at its end
    } else {
      scheduler_->ReleaseJob(job_id);  // it may have run before a restart
    }
  }
  return job;
}

absl::Status JobManager::ResumeUnfinished() {
  KAGENT_ASSIGN_OR_RETURN(std::vector<StoredJob> jobs, storage_->ListUnfinishedJobs());
  absl::MutexLock lock(&mu_);
  for (const StoredJob& s : jobs) {
    KLOG(INFO).With("job_id", s.job.id())
        << "resuming job in state " << v1::JobState_Name(s.job.state());
    waiting_.push_back(s.job.id());
  }
  MaybeStartQueued();
  return absl::OkStatus();
}

void JobManager::MaybeStartQueued() {
  // Reap finished threads.
  for (auto it = running_.begin(); it != running_.end();) {
    if (it->second.finished) {
      if (it->second.thread.joinable()) it->second.thread.detach();
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  while (!shutting_down_ && !waiting_.empty() &&
         static_cast<int>(running_.size()) < defaults_.max_concurrent_jobs) {
    std::string id = waiting_.front();
    waiting_.erase(waiting_.begin());
    StartLocked(id);
  }
  if (jobs_running_ != nullptr) {
    jobs_running_->Add({{"state", "running"}}).Set(static_cast<double>(running_.size()));
    jobs_running_->Add({{"state", "queued"}}).Set(static_cast<double>(waiting_.size()));
  }
}

void JobManager::StartLocked(const std::string& job_id) {
  if (running_.count(job_id)) return;
  Running& r = running_[job_id];
  r.cancel = std::make_unique<CancelToken>();
  CancelToken* token = r.cancel.get();
  r.thread = std::thread([this, job_id, token] {
    RunJob(job_id, token);
    absl::MutexLock lock(&mu_);
    auto it = running_.find(job_id);
    if (it != running_.end()) it->second.finished = true;
    MaybeStartQueued();
  });
}

void JobManager::RunJob(const std::string& job_id, CancelToken* cancel) {
  LogScope scope({.job_id = job_id});
  JobRun run(this, job_id, cancel);
  run.Run();
}

absl::StatusOr<int64_t> JobManager::Emit(const std::string& job_id, v1::JobEvent event) {
  event.set_job_id(job_id);
  event.set_sequence(0);
  *event.mutable_time() = TimeUtil::GetCurrentTime();
  KAGENT_ASSIGN_OR_RETURN(int64_t seq, storage_->AppendEvent(job_id, event));
  NoteEvent(job_id, seq);
  return seq;
}

void JobManager::NoteEvent(const std::string& job_id, int64_t sequence) {
  absl::MutexLock lock(&events_mu_);
  int64_t& last = last_sequence_[job_id];
  last = std::max(last, sequence);
}

void JobManager::WaitForEvent(const std::string& job_id, int64_t after, absl::Duration timeout,
                              const std::function<bool()>& cancelled) {
  absl::MutexLock lock(&events_mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(events_mu_) {
    auto it = last_sequence_.find(job_id);
    return it != last_sequence_.end() && it->second > after;
  };
  absl::Time deadline = absl::Now() + timeout;
  while (!ready() && absl::Now() < deadline && !(cancelled && cancelled())) {
    events_mu_.AwaitWithDeadline(absl::Condition(&ready),
                                 std::min(deadline, absl::Now() + absl::Milliseconds(100)));
  }
}

void JobManager::Shutdown() {
  std::map<std::string, Running> running;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_ && running_.empty()) return;
    shutting_down_ = true;
    for (auto& [id, r] : running_) r.cancel->Cancel();
  }
  // Join outside the lock: job threads take mu_ when they end.
  while (true) {
    std::thread t;
    {
      absl::MutexLock lock(&mu_);
      auto it = std::find_if(running_.begin(), running_.end(),
                             [](auto& kv) { return kv.second.thread.joinable(); });
      if (it == running_.end()) break;
      t = std::move(it->second.thread);
    }
    t.join();
  }
  absl::MutexLock lock(&mu_);
  running_.clear();
}

int JobManager::running_jobs() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [id, r] : running_) n += r.finished ? 0 : 1;
  return n;
}

// ---------------------------------------------------------------------------
// JobRun
// ---------------------------------------------------------------------------

template <typename T>
absl::StatusOr<T> JobRun::CallService(const char* what,
                                      const std::function<absl::StatusOr<T>()>& call) {
  const absl::Time end = absl::Now() + absl::Seconds(m_->defaults_.service_retry_seconds);
  absl::Duration backoff = absl::Seconds(m_->defaults_.service_retry_backoff_seconds);
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<T> r = call();
    if (r.ok()) {
      if (attempt > 1) EmitLog(absl::StrCat(what, " answered again (attempt ", attempt, ")"));
      return r;
    }
    absl::StatusCode code = r.status().code();
    bool transient = code == absl::StatusCode::kUnavailable ||
                     code == absl::StatusCode::kDeadlineExceeded;
    if (!transient || Stopping() || absl::Now() + backoff > end) return r;
    if (std::optional<v1::LlmUsage> u = llm::LlmUsageOf(r.status())) ChargeLlm(*u);
    EmitLog(absl::StrCat(what, " call failed (attempt ", attempt, "): ", r.status().message(),
                         "; again in ", absl::FormatDuration(backoff)));
    for (absl::Time wake = absl::Now() + backoff; absl::Now() < wake && !Stopping();) {
      absl::SleepFor(std::min(absl::Milliseconds(100), wake - absl::Now()));
    }
    if (Stopping()) return r;
    backoff = std::min(backoff * 2, absl::Seconds(15));
  }
}

template <typename T>
absl::StatusOr<T> JobRun::CallCharged(const char* what,
                                      const std::function<absl::StatusOr<T>()>& call) {
  absl::StatusOr<T> r = CallService<T>(what, call);
  if (!r.ok()) {
    if (std::optional<v1::LlmUsage> u = llm::LlmUsageOf(r.status())) ChargeLlm(*u);
  } else {
    ChargeLlm(r->llm_usage());
  }
  return r;
}

bool JobRun::Stopping() const {
  absl::MutexLock lock(&m_->mu_);
  return m_->shutting_down_ || cancel_->cancelled();
}

Stop JobRun::StopFromStatus(const absl::Status& s) const {
  {
    absl::MutexLock lock(&m_->mu_);
    if (m_->shutting_down_) return {Stop::kShutdown, "coordinator shutting down"};
  }
  if (cancel_->cancelled()) return {Stop::kCancelled, "cancelled"};
  // Before the budget rule: a full disk is RESOURCE_EXHAUSTED too, and no budget.
  if (IsStorageFailure(s)) return {Stop::kStorage, ClientMessage(s), s};
  if (s.code() == absl::StatusCode::kResourceExhausted) {
    return {Stop::kBudget, absl::StrCat("budget spent: ", s.message())};
  }
  return {Stop::kFailed, std::string(s.message())};
}

absl::Status JobRun::Persist(const std::function<void(v1::Job&)>& f) {
  GpuCharges gpu;
  {
    absl::MutexLock lock(&charges_mu_);
    gpu = gpu_pending_;
  }
  const v1::LlmUsage llm_used = llm_pending_;
  absl::StatusOr<v1::Job> j = m_->MutateJob(job_id_, [&](v1::Job& job) {
    if (IsTerminal(job.state())) {
      return absl::AbortedError(absl::StrCat("job is ", v1::JobState_Name(job.state())));
    }
    job.set_gpu_seconds_used(job.gpu_seconds_used() + gpu.held_seconds);
    job.set_gpu_busy_seconds_used(job.gpu_busy_seconds_used() + gpu.busy_seconds);
    job.set_candidates_measured(job.candidates_measured() + gpu.candidates_measured);
    job.set_variants_screened(job.variants_screened() + gpu.variants_screened);
    job.set_llm_tokens_used(job.llm_tokens_used() + llm_used.input_tokens() +
                            llm_used.output_tokens());
    job.set_llm_cost_usd(job.llm_cost_usd() + llm_used.cost_usd());
    f(job);
    return absl::OkStatus();
  });
  if (!j.ok()) return j.status();
  {
    // Only what was stored: a measuring thread may have charged more meanwhile.
    absl::MutexLock lock(&charges_mu_);
    gpu_pending_.held_seconds -= gpu.held_seconds;
    gpu_pending_.busy_seconds -= gpu.busy_seconds;
    gpu_pending_.candidates_measured -= gpu.candidates_measured;
    gpu_pending_.variants_screened -= gpu.variants_screened;
  }
  llm_pending_.Clear();
  job_ = *std::move(j);
  return absl::OkStatus();
}

absl::Status JobRun::SetState(v1::JobState state, const std::string& message) {
  KAGENT_RETURN_IF_ERROR(Persist([&](v1::Job& j) { j.set_state(state); }));
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_STATE_CHANGED);
  e.set_state(state);
  e.set_message(message);
  e.set_round(job_.current_round());
  e.set_total_rounds(cfg_.budget().max_rounds());
  return m_->Emit(job_id_, e).status();
}

void JobRun::EmitLog(const std::string& message) {
  KLOG(INFO) << message;
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_LOG);
  e.set_state(job_.state());
  e.set_round(job_.current_round());
  e.set_message(message);
  (void)m_->Emit(job_id_, e);
}

void JobRun::SetSignature(const v1::OpSignature& s) {
  if (s.ops_size() == 0) return;
  signature_ = s;
  if (signature_.op_class().empty()) {
    absl::StatusOr<RecognizedOp> op = RecognizeOp(signature_);
    if (op.ok()) {
      signature_.set_op_class(op->op_class);
      KLOG(INFO) << "op recognized: " << DescribeOp(*op);
    }
  }
}

void JobRun::ChargeGpu(double held_seconds, double busy_seconds, int64_t candidates_measured,
                       int64_t variants_screened) {
  {
    absl::MutexLock lock(&charges_mu_);
    gpu_pending_.held_seconds += held_seconds;
    gpu_pending_.busy_seconds += busy_seconds;
    gpu_pending_.candidates_measured += candidates_measured;
    gpu_pending_.variants_screened += variants_screened;
  }
  if (m_->gpu_seconds_ != nullptr) m_->gpu_seconds_->Add({}).Increment(held_seconds);
}

void JobRun::ChargeLlm(const v1::LlmUsage& usage) {
  if (llm::IsEmpty(usage)) return;
  llm::AddLlmUsage(usage, &llm_pending_);
  if (m_->llm_tokens_ != nullptr) {
    m_->llm_tokens_->Add({}).Increment(
        static_cast<double>(usage.input_tokens() + usage.output_tokens()));
  }
  if (m_->llm_cost_ != nullptr) m_->llm_cost_->Add({}).Increment(usage.cost_usd());
}

int64_t JobRun::LlmTokensUsed() const {
  return job_.llm_tokens_used() + llm_pending_.input_tokens() + llm_pending_.output_tokens();
}

double JobRun::LlmCostUsed() const { return job_.llm_cost_usd() + llm_pending_.cost_usd(); }

template <typename Request>
void JobRun::SetLlmBudgetLeft(Request& r) const {
  const v1::Budget& b = cfg_.budget();
  if (b.has_max_llm_tokens()) {
    r.set_llm_tokens_left(std::max<int64_t>(0, b.max_llm_tokens() - LlmTokensUsed()));
  }
  if (b.has_max_llm_cost_usd()) {
    r.set_llm_cost_usd_left(std::max(0.0, b.max_llm_cost_usd() - LlmCostUsed()));
  }
}

std::string JobRun::LlmBudgetSpent() const {
  const v1::Budget& b = cfg_.budget();
  if (b.has_max_llm_tokens() && LlmTokensUsed() >= b.max_llm_tokens()) {
    return absl::StrCat("LLM token budget spent (", LlmTokensUsed(), " of ", b.max_llm_tokens(),
                        " tokens)");
  }
  if (b.has_max_llm_cost_usd() && LlmCostUsed() >= b.max_llm_cost_usd()) {
    return absl::StrFormat("LLM cost budget spent ($%.4f of $%.4f)", LlmCostUsed(),
                           b.max_llm_cost_usd());
  }
  return "";
}

void JobRun::StoreArtifact(const std::string& name, const std::string& kind,
                           const std::string& body) {
  v1::Artifact a;
  a.set_name(name);
  a.set_kind(kind);
  a.set_content_type(kind == "kernel" ? "text/x-python" : "application/json");
  a.set_content(body);
  absl::Status s = m_->storage_->PutArtifact(job_id_, a);
  if (!s.ok()) KLOG(WARNING) << "artifact " << name << " not stored: " << s;
}

absl::Status JobRun::SaveCandidate(const v1::Candidate& c) {
  KAGENT_RETURN_IF_ERROR(m_->storage_->PutCandidate(c));
  std::string dir = absl::StrCat("round-", c.round(), "/", c.id(), "/");
  if (!c.kernel().source().empty()) StoreArtifact(dir + "kernel.py", "kernel", c.kernel().source());
  if (c.has_measurement()) StoreArtifact(dir + "measurement.json", "measurement", ToJson(c.measurement()));
  if (c.has_metrics()) {
    v1::HardwareMetrics m = c.metrics();
    m.clear_raw_csv();
    StoreArtifact(dir + "metrics.json", "metrics", ToJson(m));
  }
  if (c.has_report()) StoreArtifact(dir + "report.json", "report", ToJson(c.report()));
  return absl::OkStatus();
}

absl::Status JobRun::SaveCheckpoint() {
  return m_->storage_->PutCheckpoint(job_id_, kStateKey, ckpt_.SerializeAsString());
}

absl::StatusOr<v1::Measurement> JobRun::Measure(const std::string& task_id,
                                                const v1::KernelSource& k, bool baselines,
                                                const std::string& shape_set,
                                                const v1::KernelSource* reference) {
  GpuTask t;
  t.kind = GpuTask::Kind::kMeasure;
  t.task_id = task_id;
  t.job_id = job_id_;
  t.measure.set_task_id(task_id);
  t.measure.set_job_id(job_id_);
  *t.measure.mutable_problem() = job_.problem();
  *t.measure.mutable_kernel() = k;
  t.measure.set_measure_baselines(baselines);
  t.measure.set_trials(m_->defaults_.correctness_trials);
  t.measure.set_timing_reps(m_->defaults_.timing_reps);
  t.measure.set_shape_set(shape_set);
  if (reference != nullptr) *t.measure.mutable_reference_kernel() = *reference;
  // The reference's op signature is recorded once per job (the baseline, or a profile);
  // later runs on the problem's own shapes skip it. Another shape set's signature differs
  // from the one kept here, so those runs still record their own.
  const bool own_shapes = shape_set.empty();
  if (own_shapes && signature_.ops_size() > 0) t.measure.set_skip_op_signature(true);
  KAGENT_ASSIGN_OR_RETURN(GpuTaskResult r, m_->scheduler_->Run(t, cancel_));
  if (!r.from_storage) {  // a stored result was charged when it ran
    const v1::Measurement& got = r.measure.measurement();
    // A reference-only run (no kernel) measures no candidate.
    ChargeGpu(got.gpu_seconds() > 0 ? got.gpu_seconds() : r.seconds, got.gpu_busy_seconds(),
              k.source().empty() ? 0 : 1, 0);
  }
  v1::Measurement out = r.measure.measurement();
  if (out.worker_id().empty()) out.set_worker_id(r.worker_id);
  // Stored candidates keep carrying the signature (reflexion reads its op class).
  if (own_shapes && out.op_signature().ops_size() == 0 && signature_.ops_size() > 0) {
    *out.mutable_op_signature() = signature_;
  }
  if (m_->candidates_ != nullptr) {
    m_->candidates_->Add({{"verdict", v1::Verdict_Name(out.verdict())}}).Increment();
  }
  return out;
}

absl::StatusOr<v1::KernelSource> JobRun::ScreenCandidate(
    const v1::Candidate& c, const google::protobuf::RepeatedPtrField<v1::KernelSource>& variants,
    const std::string& parent_source) {
  const std::vector<v1::KernelSource> kernels = ScreenKernels(c.kernel(), variants);
  const std::string label = CandidateLabel(c);
  GpuTask t;
  t.kind = GpuTask::Kind::kScreen;
  t.task_id = ScreenTaskId(job_id_, c.round(), c.worker_index(), kernels);
  t.job_id = job_id_;
  t.screen = MakeScreenRequest(t.task_id, job_id_, job_.problem(), kernels);
  absl::StatusOr<GpuTaskResult> r = m_->scheduler_->Run(t, cancel_);
  const std::string artifact = absl::StrCat("round-", c.round(), "/", c.id(), "/screen.json");
  if (!r.ok()) {
    if (Stopping()) return r.status();
    ScreenChoice none;
    none.message = ScreenFailedMessage(label, static_cast<int>(kernels.size()), r.status());
    EmitLog(none.message);
    StoreArtifact(artifact, "screen", ScreenArtifactJson(t.task_id, kernels, nullptr, r.status(), none));
    return c.kernel();
  }
  if (!r->from_storage) {  // a stored screen was charged when it ran
    const v1::ScreenResponse& got = r->screen;
    ChargeGpu(got.gpu_seconds() > 0 ? got.gpu_seconds() : r->seconds, got.gpu_busy_seconds(), 0,
              static_cast<int64_t>(kernels.size()));
  }
  v1::ScreenResponse response = r->screen;
  if (response.worker_id().empty()) response.set_worker_id(r->worker_id);
  ScreenChoice choice = ChooseScreened(label, kernels, response, parent_source);
  EmitLog(choice.message);
  StoreArtifact(artifact, "screen", ScreenArtifactJson(t.task_id, kernels, &response,
                                                       absl::OkStatus(), choice));
  return choice.index >= 0 ? kernels[choice.index] : c.kernel();
}

absl::Status JobRun::EnsureDiagnosed(v1::Candidate& c, std::vector<v1::Prescription>* rx) {
  if (!c.has_metrics() && RanOnCpuWorker(c.measurement())) {
    // No counters to read: the kernel ran under Triton's interpreter, with no GPU.
    EmitLog(absl::StrCat("no profile of ", c.id(), ": it ran on a CPU worker (Triton's "
                         "interpreter has no hardware counters); planning from the op "
                         "class alone"));
  } else if (!c.has_metrics()) {
    GpuTask t;
    t.kind = GpuTask::Kind::kProfile;
    t.task_id = absl::StrCat(job_id_, "/profile/", c.id());
    t.job_id = job_id_;
    t.profile.set_task_id(t.task_id);
    t.profile.set_job_id(job_id_);
    *t.profile.mutable_problem() = job_.problem();
    *t.profile.mutable_kernel() = c.kernel();
    // Known once the baseline ran: the profile need not record it again.
    if (signature_.ops_size() > 0) *t.profile.mutable_op_signature() = signature_;
    absl::StatusOr<GpuTaskResult> r = m_->scheduler_->Run(t, cancel_);
    if (!r.ok()) {
      if (Stopping()) return r.status();
      EmitLog(absl::StrCat("profiling ", c.id(), " failed: ", r.status().message(),
                           "; planning from the op class alone"));
    } else {
      // The time the profile held the worker's GPU (the call's wall time, which includes
      // waiting behind the worker's other tasks, only from a worker that does not say).
      if (!r->from_storage) {
        ChargeGpu(r->profile.gpu_seconds() > 0 ? r->profile.gpu_seconds() : r->seconds, 0, 0,
                  0);
      }
      *c.mutable_metrics() = r->profile.metrics();
      if (r->profile.has_gpu()) gpu_ = r->profile.gpu();
      if (signature_.ops_size() == 0) SetSignature(r->profile.op_signature());
    }
  }
  if (gpu_.name().empty()) {
    absl::StatusOr<v1::GpuSpec> spec = m_->scheduler_->AnyGpuSpec();
    if (spec.ok()) gpu_ = *spec;
  }
  if (c.has_metrics() && c.metrics().kernels_size() > 0 && !c.has_report()) {
    v1::DiagnoseRequest d;
    *d.mutable_metrics() = c.metrics();
    *d.mutable_gpu() = gpu_;
    *d.mutable_op_signature() = signature_;
    *d.mutable_timing() = c.measurement().candidate();
    d.set_job_id(job_id_);
    SetLlmBudgetLeft(d);
    absl::StatusOr<v1::DiagnoseResponse> report = CallCharged<v1::DiagnoseResponse>(
        "judge", [&] { return m_->services_->Diagnose(d, cancel_); });
    if (!report.ok()) return report.status();
    *c.mutable_report() = report->report();
  }
  KAGENT_RETURN_IF_ERROR(SaveCandidate(c));
  v1::PrescribeRequest p;
  *p.mutable_report() = c.report();
  *p.mutable_metrics() = c.metrics();
  *p.mutable_gpu() = gpu_;
  p.set_op_class(signature_.op_class());
  // The job's tolerances decide which patterns can pass the gate at all (TF32 cannot
  // pass an fp32 tolerance of 1e-4).
  if (job_.problem().has_atol()) p.set_atol(job_.problem().atol());
  if (job_.problem().has_rtol()) p.set_rtol(job_.problem().rtol());
  for (const auto& a : cfg_.avoid_patterns()) p.add_avoid_patterns(a);
  p.set_job_id(job_id_);
  KAGENT_ASSIGN_OR_RETURN(v1::PrescribeResponse pr,
                          CallService<v1::PrescribeResponse>("analyzer", [&] {
                            return m_->services_->Prescribe(p, cancel_);
                          }));
  rx->assign(pr.prescriptions().begin(), pr.prescriptions().end());
  return absl::OkStatus();
}

void JobRun::Run() {
  Stop stop = RunSteps();
  // A storage failure (a full disk can be freed, a database server comes back): the run
  // is made again from what storage holds, with backoff, for storage_retry_seconds.
  // A failure after the job got further (another state, a round more) is a new incident
  // with a window of its own.
  auto progress = [this] { return std::make_pair(job_.state(), ckpt_.completed_round()); };
  auto incident = progress();
  absl::Time give_up = absl::Now() + absl::Seconds(m_->defaults_.storage_retry_seconds);
  absl::Duration backoff = absl::Seconds(m_->defaults_.storage_retry_backoff_seconds);
  for (int attempt = 1; stop.kind == Stop::kStorage; ++attempt) {
    if (progress() != incident) {
      incident = progress();
      give_up = absl::Now() + absl::Seconds(m_->defaults_.storage_retry_seconds);
      backoff = absl::Seconds(m_->defaults_.storage_retry_backoff_seconds);
      attempt = 1;
    }
    if (Stopping()) {
      stop = StopFromStatus(stop.detail);  // shutdown or cancel
      break;
    }
    if (absl::Now() + backoff > give_up) {
      KLOG(WARNING) << "storage still failing after " << attempt << " attempts: "
                    << stop.detail.message();
      stop.kind = Stop::kFailed;
      break;
    }
    m_->CountStorageFailure(stop.detail, "step");
    KLOG(WARNING) << "storage failed (attempt " << attempt << "): " << stop.detail.message()
                  << "; the job's step runs again in " << absl::FormatDuration(backoff);
    SleepUnless(backoff, [this] { return Stopping(); });
    backoff = std::min(backoff * 2, absl::Seconds(15));
    v1::JobEvent e;  // best effort: stored only when storage works again
    e.set_type(v1::JOB_EVENT_LOG);
    e.set_state(job_.state());
    e.set_round(job_.current_round());
    e.set_message(absl::StrCat(stop.reason, " (attempt ", attempt, "); running the step again"));
    (void)m_->Emit(job_id_, e);
    stop = RunSteps();
  }
  switch (stop.kind) {
    case Stop::kNone:
    case Stop::kStorage:  // not after the loop above
    case Stop::kFinished:
      break;
    case Stop::kShutdown:
      KLOG(INFO) << "job left for the next start: " << stop.reason;
      break;
    case Stop::kCancelled:
      // Cancel() already stored CANCELLED and announced it.
      KLOG(INFO) << "job cancelled";
      break;
    case Stop::kBudget:  // only before the baseline, where there is nothing to return
    case Stop::kFailed:
      FailJob(stop);
      break;
  }
  // The job ended (DONE, FAILED or CANCELLED): the workers may drop what they keep for it.
  // Not on a shutdown, where the job resumes on the next start. Best effort, off this
  // thread (Scheduler::ReleaseJob).
  if (stop.kind != Stop::kShutdown) m_->scheduler_->ReleaseJob(job_id_);
}

void JobRun::FailJob(const Stop& stop) {
  if (stop.detail.ok()) {
    KLOG(WARNING) << "job failed: " << stop.reason;
  } else {
    KLOG(WARNING) << "job failed: " << stop.reason << " [" << stop.detail.message() << "]";
  }
  absl::Duration backoff = absl::Seconds(m_->defaults_.storage_retry_backoff_seconds);
  for (int attempt = 1;; ++attempt) {
    absl::Status s = Persist([&](v1::Job& j) {
      j.set_state(v1::JOB_STATE_FAILED);
      j.set_error(stop.reason);
    });
    if (s.ok()) break;
    if (!IsStorageFailure(s)) {  // e.g. cancelled meanwhile: the stored state stands
      KLOG(WARNING) << "job's failure not stored: " << s.message();
      return;
    }
    if (Stopping()) {
      KLOG(WARNING) << "job left for the next start: its failure could not be stored: "
                    << s.message();
      return;
    }
    m_->CountStorageFailure(s, "fail");
    KLOG(WARNING) << "job's failure not stored (attempt " << attempt << "): " << s.message()
                  << "; again in " << absl::FormatDuration(backoff);
    SleepUnless(backoff, [this] { return Stopping(); });
    backoff = std::min(backoff * 2, absl::Seconds(15));
  }
  KLOG(INFO) << "job's failure stored";
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_JOB_FINISHED);
  e.set_state(v1::JOB_STATE_FAILED);
  e.set_message(stop.reason);
  (void)m_->Emit(job_id_, e);  // WatchJob also ends on the stored FAILED without it
  if (m_->jobs_finished_ != nullptr) m_->jobs_finished_->Add({{"state", "FAILED"}}).Increment();
}

Stop JobRun::RunSteps() {
  absl::StatusOr<StoredJob> stored = m_->storage_->GetJob(job_id_);
  if (IsStorageFailure(stored.status())) return StopFromStatus(stored.status());
  if (!stored.ok()) {
    KLOG(ERROR) << "cannot load job: " << stored.status();
    return {Stop::kShutdown, "cannot load job"};
  }
  job_ = stored->job;
  cfg_ = job_.config();
  if (IsTerminal(job_.state())) {
    // e.g. cancelled before this thread got to it, or while storage was failing
    return {Stop::kFinished, v1::JobState_Name(job_.state())};
  }
  LogScope scope({.tenant = job_.tenant()});

  Stop stop;
  std::string stop_reason;
  ckpt_.Clear();
  absl::StatusOr<std::string> saved = m_->storage_->GetCheckpoint(job_id_, kStateKey);
  if (IsStorageFailure(saved.status())) return StopFromStatus(saved.status());
  if (saved.ok() && ckpt_.ParseFromString(*saved)) {
    EmitLog(absl::StrCat("resumed after round ", ckpt_.completed_round()));
  } else {
    ckpt_.Clear();
    absl::Status s = SetState(v1::JOB_STATE_BASELINE, "measuring the starting kernel and baselines");
    stop = s.ok() ? Baseline() : StopFromStatus(s);
  }
  absl::Time wall_start = absl::FromUnixSeconds(job_.created_at().seconds());
  while (stop.kind == Stop::kNone) {
    if (job_.state() != v1::JOB_STATE_ROUNDS) {
      absl::Status s = SetState(v1::JOB_STATE_ROUNDS, "optimizing");
      if (!s.ok()) {
        stop = StopFromStatus(s);
        break;
      }
    }
    if (Stopping()) {
      stop = StopFromStatus(absl::CancelledError(""));
      break;
    }
    const v1::Budget& b = cfg_.budget();
    if (ckpt_.completed_round() >= b.max_rounds()) {
      stop_reason = absl::StrCat("round budget spent (", b.max_rounds(), " rounds)");
    } else if (ckpt_.rounds_without_improvement() >= cfg_.plateau_rounds()) {
      stop_reason = absl::StrCat("plateau: no gain above 1% for ", cfg_.plateau_rounds(), " rounds");
    } else if (absl::ToDoubleSeconds(absl::Now() - wall_start) >= b.max_wall_seconds()) {
      stop_reason = absl::StrFormat("wall-time budget spent (%.0f s)", b.max_wall_seconds());
    } else if (b.has_max_gpu_seconds() && job_.gpu_seconds_used() >= b.max_gpu_seconds()) {
      stop_reason = absl::StrFormat("GPU-time budget spent (%.1f GPU-s)", b.max_gpu_seconds());
    } else if (std::string llm_spent = LlmBudgetSpent(); !llm_spent.empty()) {
      stop_reason = std::move(llm_spent);
    }
    if (!stop_reason.empty()) break;
    stop = Round(ckpt_.completed_round() + 1, &stop_reason);
    if (!stop_reason.empty()) break;
  }
  if (stop.kind == Stop::kBudget && !ckpt_.start_candidate_id().empty()) {
    stop = Finish(stop.reason);  // the baseline exists: finish with the best so far
  } else if (stop.kind == Stop::kBudget) {
    stop.kind = Stop::kFailed;   // nothing measured yet: nothing to return
  }
  if (stop.kind == Stop::kNone) stop = Finish(stop_reason);
  return stop;
}

Stop JobRun::Baseline() {
  v1::KernelSource start = job_.start_kernel();
  const bool from_brain = start.source().empty();
  if (from_brain) {
    // The brain writes the first kernel for the reference's op, so the op signature comes
    // first: a run of the reference alone (eager and torch.compile) records it.
    EmitLog("no starting kernel: recording the reference's op signature for the brain");
    absl::StatusOr<v1::Measurement> ref =
        Measure(absl::StrCat(job_id_, "/reference"), v1::KernelSource(), /*baselines=*/true, "",
                nullptr);
    if (!ref.ok()) return StopFromStatus(ref.status());
    if (ref->verdict() == v1::VERDICT_INFRA_ERROR) {  // retried by the scheduler already
      return {Stop::kFailed, absl::StrCat("the reference run could not be measured: ",
                                          ref->correctness().reason())};
    }
    if (ref->op_signature().ops_size() == 0) {
      return {Stop::kFailed,
              absl::StrCat("the reference run recorded no op signature (",
                           v1::Verdict_Name(ref->verdict()), ": ", ref->correctness().reason(),
                           "); the brain cannot write a first kernel without it")};
    }
    SetSignature(ref->op_signature());
    EmitLog("no starting kernel: asking the brain for a first correct kernel");
    // Its variants are not screened: the start is the job's reference point as the brain
    // wrote it (round 1's library seed is the brain's kernel too, and is screened).
    absl::StatusOr<v1::GeneratedKernel> first = FirstKernel();
    if (!first.ok()) {
      if (absl::IsInternal(first.status())) {  // the brain wrote none, and said why
        return {Stop::kFailed, absl::StrCat("the brain could not write a first kernel: ",
                                            first.status().message())};
      }
      return StopFromStatus(first.status());
    }
    start = first->kernel();
  }
  std::string task = absl::StrCat(job_id_, "/baseline");
  absl::StatusOr<v1::Measurement> m = Measure(task, start, /*baselines=*/true, "", nullptr);
  if (!m.ok()) return StopFromStatus(m.status());
  v1::Candidate c;
  c.set_id(absl::StrCat(job_id_, "-c0"));
  c.set_job_id(job_id_);
  c.set_round(0);
  *c.mutable_kernel() = start;
  *c.mutable_measurement() = *m;
  *c.mutable_created_at() = TimeUtil::GetCurrentTime();
  SetSignature(m->op_signature());
  absl::Status s = SaveCandidate(c);
  if (!s.ok()) return StopFromStatus(s);
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_CANDIDATE_MEASURED);
  e.set_state(v1::JOB_STATE_BASELINE);
  v1::Candidate brief = c;
  brief.mutable_kernel()->clear_source();
  *e.mutable_candidate() = brief;
  e.set_message(absl::StrFormat("starting kernel: %s, %.4f ms (eager %.4f ms, compile %.4f ms)",
                                v1::Verdict_Name(m->verdict()), m->candidate().median_ms(),
                                m->eager().median_ms(), m->compiled().median_ms()));
  (void)m_->Emit(job_id_, e);
  if (m->verdict() == v1::VERDICT_INFRA_ERROR) {
    // Not the kernel's fault, and the scheduler has spent its attempts on other workers.
    return {Stop::kFailed, absl::StrCat("the starting kernel could not be measured: ",
                                        m->correctness().reason())};
  }
  if (m->verdict() != v1::VERDICT_CORRECT) {
    return {Stop::kFailed,
            absl::StrCat("the starting kernel failed the correctness gate: ",
                         v1::Verdict_Name(m->verdict()), ": ", m->correctness().reason())};
  }
  ckpt_.set_completed_round(0);
  ckpt_.clear_beam_ids();
  ckpt_.add_beam_ids(c.id());
  ckpt_.set_start_candidate_id(c.id());
  ckpt_.set_start_median_ms(m->candidate().median_ms());
  ckpt_.set_best_median_ms(m->candidate().median_ms());
  ckpt_.set_start_from_brain(from_brain);
  absl::Status ps = m_->storage_->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(tx.PutCheckpoint(job_id_, kStateKey, ckpt_.SerializeAsString()));
    return absl::OkStatus();
  });
  if (ps.ok()) {
    ps = Persist([&](v1::Job& j) {
      *j.mutable_baseline() = *m;
      if (j.start_kernel().source().empty()) *j.mutable_start_kernel() = start;
    });
  }
  if (!ps.ok()) return StopFromStatus(ps);
  return {};
}

absl::StatusOr<v1::GeneratedKernel> JobRun::FirstKernel() {
  if (gpu_.name().empty()) {
    absl::StatusOr<v1::GpuSpec> spec = m_->scheduler_->AnyGpuSpec();
    if (spec.ok()) gpu_ = *spec;
  }
  v1::GenerateRequest g;
  g.set_job_id(job_id_);
  *g.mutable_problem() = job_.problem();
  *g.mutable_op_signature() = signature_;
  if (!gpu_.name().empty()) *g.mutable_gpu() = gpu_;
  g.set_brain(cfg_.brain());
  SetLlmBudgetLeft(g);
  absl::StatusOr<v1::GenerateResponse> r = CallCharged<v1::GenerateResponse>(
      "optimization manager", [&] { return m_->services_->Generate(g, cancel_); });
  if (!r.ok()) return r.status();
  if (r->kernels_size() == 0 || r->kernels(0).kernel().source().empty()) {
    return absl::InternalError(r->kernels_size() > 0 && !r->kernels(0).error().empty()
                                   ? r->kernels(0).error()
                                   : "no kernel returned");
  }
  return r->kernels(0);
}

void JobRun::AddLibrarySeed(v1::RoundCheckpoint* rc, v1::GenerateResponse* variants) {
  if (signature_.ops_size() == 0) {
    EmitLog("no library seed: the reference's op signature is unknown");
    return;
  }
  absl::StatusOr<v1::Candidate> start = m_->storage_->GetCandidate(ckpt_.start_candidate_id());
  if (start.ok() && RanOnCpuWorker(start->measurement())) {
    // The seed is a speed move, and interpreter timings do not rank kernels; a template
    // sized for a GPU's grid can take many minutes there.
    EmitLog("no library seed: the job runs on a CPU worker (Triton's interpreter)");
    return;
  }
  absl::StatusOr<v1::GeneratedKernel> generated = FirstKernel();
  if (!generated.ok()) {
    EmitLog(absl::StrCat("no library seed: ", generated.status().message()));
    return;
  }
  v1::KernelSource* k = generated->mutable_kernel();
  if (start.ok() && NormalizeSource(start->kernel().source()) == NormalizeSource(k->source())) {
    EmitLog("no library seed: the brain's kernel for the op is the starting kernel");
    return;
  }
  int index = 0;
  for (const auto& c : rc->candidates()) index = std::max(index, c.worker_index() + 1);
  v1::Candidate c;
  c.set_id(absl::StrCat(job_id_, "-r", rc->round(), "-w", index));
  c.set_job_id(job_id_);
  c.set_round(rc->round());
  c.set_worker_index(index);
  c.set_parent_id(ckpt_.start_candidate_id());
  v1::Prescription* p = c.mutable_prescription();
  p->set_pattern_id(std::string(kLibrarySeedPattern));
  p->set_title("The brain's own kernel for the op, in place of the starting kernel");
  p->set_fix(absl::StrCat("measure ", k->origin().empty() ? "the brain's first kernel" : k->origin(),
                          " beside the fixes to the starting kernel"));
  p->set_rationale(
      "A hand-written kernel far from the roofline is often better replaced by a kernel "
      "built for the op than tuned one knob at a time.");
  *c.mutable_kernel() = std::move(*k);
  *c.mutable_created_at() = TimeUtil::GetCurrentTime();
  EmitLog(absl::StrCat("round ", rc->round(), " also measures the brain's own kernel for the op (",
                       c.kernel().origin(), ") as ", c.id()));
  if (generated->variants_size() > 0) {
    v1::GeneratedKernel* v = variants->add_kernels();
    v->mutable_assignment()->set_worker_index(index);
    *v->mutable_variants() = generated->variants();
  }
  *rc->add_candidates() = std::move(c);
}

Stop JobRun::Round(int round, std::string* stop_reason) {
  LogScope scope({.request_id = absl::StrCat("round-", round)});
  absl::Status s = Persist([&](v1::Job& j) { j.set_current_round(round); });
  if (!s.ok()) return StopFromStatus(s);
  {
    v1::JobEvent e;
    e.set_type(v1::JOB_EVENT_ROUND_STARTED);
    e.set_state(v1::JOB_STATE_ROUNDS);
    e.set_round(round);
    e.set_total_rounds(cfg_.budget().max_rounds());
    e.set_message(absl::StrCat("round ", round, " started"));
    (void)m_->Emit(job_id_, e);
  }
  // The beam, from storage.
  std::vector<v1::Candidate> beam;
  for (const std::string& id : ckpt_.beam_ids()) {
    absl::StatusOr<v1::Candidate> c = m_->storage_->GetCandidate(id);
    if (IsStorageFailure(c.status())) return StopFromStatus(c.status());
    if (!c.ok()) return {Stop::kFailed, absl::StrCat("beam kernel ", id, " lost: ", c.status().message())};
    beam.push_back(*std::move(c));
  }
  if (signature_.ops_size() == 0 && !beam.empty()) {
    absl::StatusOr<v1::Candidate> start = m_->storage_->GetCandidate(ckpt_.start_candidate_id());
    if (start.ok()) SetSignature(start->measurement().op_signature());
  }

  v1::RoundCheckpoint rc;
  v1::GenerateResponse variants;  // RoundVariantsKey
  absl::StatusOr<std::string> saved = m_->storage_->GetCheckpoint(job_id_, RoundCheckpointKey(round));
  if (saved.ok() && rc.ParseFromString(*saved)) {
    absl::StatusOr<std::string> v = m_->storage_->GetCheckpoint(job_id_, RoundVariantsKey(round));
    if (v.ok() && !variants.ParseFromString(*v)) {
      EmitLog(absl::StrCat("round ", round, ": stored variants unreadable; measuring the kernels "
                           "as generated"));
      variants.Clear();
    }
  } else {
    rc.Clear();
    rc.set_round(round);
    // Profile -> diagnose -> prescribe, per beam kernel.
    v1::PlanRoundRequest plan_req;
    plan_req.set_job_id(job_id_);
    plan_req.set_round(round);
    plan_req.set_fixes_per_kernel(cfg_.fixes_per_kernel());
    for (auto& c : beam) {
      std::vector<v1::Prescription> rx;
      absl::Status ds = EnsureDiagnosed(c, &rx);
      if (!ds.ok()) return StopFromStatus(ds);
      // The useful figure, not SOL: SOL counts redundant cache traffic (hardware_metrics.h).
      if (&c == &beam.front() && c.has_metrics() &&
          UsefulRooflinePct(c.metrics()) >= cfg_.target_efficiency_pct()) {
        *stop_reason = absl::StrFormat(
            "at the roofline target: %.1f%% of the %s >= %.1f%%", UsefulRooflinePct(c.metrics()),
            c.metrics().roofline_bound_pct() > 0 ? "arithmetic-intensity roofline"
                                                 : "speed of light (no FLOPs/bytes known)",
            cfg_.target_efficiency_pct());
        return {};
      }
      v1::BeamEntry* be = plan_req.add_beam();
      *be->mutable_kernel() = c;
      for (auto& p : rx) *be->add_prescriptions() = p;
    }
    absl::StatusOr<std::vector<v1::Reflexion>> memory = m_->storage_->ListReflexions(job_id_);
    if (memory.ok()) {
      for (auto& r : *memory) *plan_req.add_memory() = r;
    }
    for (const auto& a : cfg_.avoid_patterns()) plan_req.add_avoid_patterns(a);
    absl::StatusOr<v1::PlanRoundResponse> plan = CallService<v1::PlanRoundResponse>(
        "orchestrator", [&] { return m_->services_->PlanRound(plan_req, cancel_); });
    if (!plan.ok()) return StopFromStatus(plan.status());
    *rc.mutable_plan() = plan->plan();
    StoreArtifact(absl::StrCat("round-", round, "/plan.json"), "plan", ToJson(plan->plan()));
    if (plan->plan().assignments_size() > 0) {
      v1::GenerateRequest g;
      g.set_job_id(job_id_);
      *g.mutable_problem() = job_.problem();
      *g.mutable_plan() = plan->plan();
      for (const auto& c : beam) {
        (*g.mutable_parents())[c.id()] = c.kernel();
        if (c.has_report()) (*g.mutable_parent_reports())[c.id()] = c.report();
      }
      *g.mutable_op_signature() = signature_;
      *g.mutable_gpu() = gpu_;
      g.set_brain(cfg_.brain());
      for (const auto& r : plan_req.memory()) *g.add_memory() = r;
      SetLlmBudgetLeft(g);
      absl::StatusOr<v1::GenerateResponse> gen = CallCharged<v1::GenerateResponse>(
          "optimization manager", [&] { return m_->services_->Generate(g, cancel_); });
      if (!gen.ok()) return StopFromStatus(gen.status());
      // Stored now: after the round checkpoint below, this Generate is not made again.
      if (absl::Status ps = Persist([](v1::Job&) {}); !ps.ok()) return StopFromStatus(ps);
      for (const auto& gk : gen->kernels()) {
        v1::Candidate c;
        c.set_id(absl::StrCat(job_id_, "-r", round, "-w", gk.assignment().worker_index()));
        c.set_job_id(job_id_);
        c.set_round(round);
        c.set_worker_index(gk.assignment().worker_index());
        c.set_parent_id(gk.assignment().parent_kernel_id());
        *c.mutable_prescription() = gk.assignment().prescription();
        *c.mutable_kernel() = gk.kernel();
        *c.mutable_created_at() = TimeUtil::GetCurrentTime();
        if (gk.kernel().source().empty()) {
          c.mutable_measurement()->set_verdict(v1::VERDICT_COMPILE_ERROR);
          c.mutable_measurement()->mutable_correctness()->set_reason(
              gk.error().empty() ? "the brain returned no kernel" : gk.error());
        }
        std::string dir = absl::StrCat("round-", round, "/", c.id(), "/");
        if (!gk.prompt().empty()) StoreArtifact(dir + "prompt.txt", "prompt", gk.prompt());
        if (!gk.reply().empty()) StoreArtifact(dir + "reply.txt", "reply", gk.reply());
        if (!gk.kernel().source().empty() && gk.variants_size() > 0) {
          v1::GeneratedKernel* v = variants.add_kernels();
          v->mutable_assignment()->set_worker_index(c.worker_index());
          *v->mutable_variants() = gk.variants();
        }
        *rc.add_candidates() = c;
      }
    }
    if (round == 1 && !ckpt_.start_from_brain()) {
      if (Stopping()) return StopFromStatus(absl::CancelledError(""));
      AddLibrarySeed(&rc, &variants);
    }
    absl::Status cs = m_->storage_->RunInTransaction([&](Storage& tx) -> absl::Status {
      KAGENT_RETURN_IF_ERROR(
          tx.PutCheckpoint(job_id_, RoundCheckpointKey(round), rc.SerializeAsString()));
      if (variants.kernels_size() > 0) {
        KAGENT_RETURN_IF_ERROR(
            tx.PutCheckpoint(job_id_, RoundVariantsKey(round), variants.SerializeAsString()));
      }
      return absl::OkStatus();
    });
    if (!cs.ok()) return StopFromStatus(cs);
  }

  // Measure every candidate, in parallel (the scheduler spreads them over the GPUs); a
  // candidate with variants is screened first, and its screen's choice is measured.
  std::vector<v1::Candidate> cands(rc.candidates().begin(), rc.candidates().end());
  std::map<int, const v1::GeneratedKernel*> variants_of;  // by worker index
  for (const auto& v : variants.kernels()) variants_of[v.assignment().worker_index()] = &v;
  std::map<std::string, std::string> beam_sources;  // parent id -> source
  for (const auto& b : beam) beam_sources[b.id()] = b.kernel().source();
  std::vector<std::future<absl::Status>> futures;
  for (auto& c : cands) {
    if (c.has_measurement()) continue;  // generation failed: verdict already set
    absl::StatusOr<v1::Candidate> existing = m_->storage_->GetCandidate(c.id());
    if (existing.ok() && existing->has_measurement()) {
      c = *existing;  // measured before a restart
      continue;
    }
    auto v = variants_of.find(c.worker_index());
    const v1::GeneratedKernel* with_variants = v == variants_of.end() ? nullptr : v->second;
    auto parent = beam_sources.find(c.parent_id());
    const std::string parent_source = parent == beam_sources.end() ? "" : parent->second;
    futures.push_back(std::async(std::launch::async, [this, &c, round, with_variants,
                                                      parent_source]() -> absl::Status {
      LogScope scope({.job_id = job_id_, .request_id = c.id()});
      if (with_variants != nullptr) {
        absl::StatusOr<v1::KernelSource> chosen =
            ScreenCandidate(c, with_variants->variants(), parent_source);
        if (!chosen.ok()) return chosen.status();
        *c.mutable_kernel() = *std::move(chosen);
      }
      absl::StatusOr<v1::Measurement> m =
          Measure(absl::StrCat(job_id_, "/r", round, "/w", c.worker_index()), c.kernel(),
                  /*baselines=*/false, "", nullptr);
      if (!m.ok()) return m.status();
      *c.mutable_measurement() = *m;
      return absl::OkStatus();
    }));
  }
  absl::Status first_error;
  for (auto& f : futures) {
    absl::Status st = f.get();
    if (!st.ok() && first_error.ok()) first_error = st;
  }
  if (!first_error.ok()) return StopFromStatus(first_error);

  // Persist, announce and reflect on every attempt.
  std::map<std::string, v1::Candidate> by_id;
  for (auto& b : beam) by_id[b.id()] = b;
  absl::StatusOr<std::vector<v1::Reflexion>> prior = m_->storage_->ListReflexions(job_id_);
  std::set<std::string> reflected;
  if (prior.ok()) {
    for (auto& r : *prior) reflected.insert(r.candidate_id());
  }
  for (auto& c : cands) {
    absl::Status ss = SaveCandidate(c);
    if (!ss.ok()) return StopFromStatus(ss);
    v1::JobEvent e;
    e.set_type(v1::JOB_EVENT_CANDIDATE_MEASURED);
    e.set_state(v1::JOB_STATE_ROUNDS);
    e.set_round(round);
    v1::Candidate brief = c;
    brief.mutable_kernel()->clear_source();
    *e.mutable_candidate() = brief;
    e.set_message(absl::StrFormat("%s: %s %.4f ms (%s)", c.id(),
                                  v1::Verdict_Name(c.measurement().verdict()),
                                  c.measurement().candidate().median_ms(),
                                  c.prescription().pattern_id()));
    (void)m_->Emit(job_id_, e);
    if (reflected.count(c.id())) continue;
    v1::ReflectRequest rr;
    rr.set_job_id(job_id_);
    if (by_id.count(c.parent_id())) *rr.mutable_parent() = by_id[c.parent_id()];
    *rr.mutable_attempt() = c;
    *rr.mutable_gpu() = gpu_;
    absl::StatusOr<v1::ReflectResponse> refl = m_->services_->Reflect(rr, cancel_);
    if (!refl.ok()) {
      if (Stopping()) return StopFromStatus(refl.status());
      EmitLog(absl::StrCat("no reflexion for ", c.id(), ": ", refl.status().message()));
      continue;
    }
    v1::Reflexion r = refl->reflexion();
    r.set_candidate_id(c.id());
    r.set_round(round);
    r.set_worker_index(c.worker_index());
    r.set_parent_id(c.parent_id());
    if (r.pattern_id().empty()) r.set_pattern_id(c.prescription().pattern_id());
    (void)m_->storage_->AppendReflexion(job_id_, r);
    if (cfg_.share_memory_across_jobs() && !signature_.op_class().empty() && !gpu_.arch().empty()) {
      (void)m_->storage_->AppendSharedReflexion({job_.tenant(), signature_.op_class(), gpu_.arch()},
                                                job_id_, r);
    }
    StoreArtifact(absl::StrCat("round-", round, "/", c.id(), "/reflexion.json"), "reflexion", ToJson(r));
    v1::JobEvent re;
    re.set_type(v1::JOB_EVENT_REFLEXION_WRITTEN);
    re.set_state(v1::JOB_STATE_ROUNDS);
    re.set_round(round);
    *re.mutable_reflexion() = r;
    re.set_message(r.lesson());
    (void)m_->Emit(job_id_, re);
  }

  // Beam update: top K distinct correct kernels by measured median.
  std::vector<v1::Candidate> pool = beam;
  for (auto& c : cands) {
    if (c.measurement().verdict() == v1::VERDICT_CORRECT && c.measurement().candidate().median_ms() > 0) {
      pool.push_back(c);
    }
  }
  std::stable_sort(pool.begin(), pool.end(), [](const v1::Candidate& a, const v1::Candidate& b) {
    return a.measurement().candidate().median_ms() < b.measurement().candidate().median_ms();
  });
  std::set<std::string> seen;
  std::vector<std::string> new_beam;
  for (auto& c : pool) {
    if (static_cast<int>(new_beam.size()) >= cfg_.beam_width()) break;
    if (!seen.insert(NormalizeSource(c.kernel().source())).second) continue;
    new_beam.push_back(c.id());
  }
  double old_best = ckpt_.best_median_ms();
  double new_best = pool.empty() ? old_best : pool.front().measurement().candidate().median_ms();
  bool improved = new_best > 0 && old_best / new_best - 1 > m_->defaults_.improvement_threshold;
  ckpt_.clear_beam_ids();
  for (auto& id : new_beam) ckpt_.add_beam_ids(id);
  ckpt_.set_completed_round(round);
  ckpt_.set_rounds_without_improvement(improved ? 0 : ckpt_.rounds_without_improvement() + 1);
  if (new_best > 0 && new_best < old_best) ckpt_.set_best_median_ms(new_best);
  int correct = 0;
  for (auto& c : cands) correct += c.measurement().verdict() == v1::VERDICT_CORRECT ? 1 : 0;
  double speedup = ckpt_.best_median_ms() > 0 ? ckpt_.start_median_ms() / ckpt_.best_median_ms() : 0;
  absl::Status cs = SaveCheckpoint();
  if (cs.ok()) {
    cs = Persist([&](v1::Job& j) {
      v1::RoundSummary* rs = j.mutable_result()->add_trajectory();
      rs->set_round(round);
      rs->set_best_median_ms(ckpt_.best_median_ms());
      rs->set_best_speedup_vs_start(speedup);
      rs->set_candidates(static_cast<int>(cands.size()));
      rs->set_correct(correct);
    });
  }
  if (!cs.ok()) return StopFromStatus(cs);
  if (m_->rounds_ != nullptr) m_->rounds_->Add({}).Increment();
  if (m_->best_speedup_ != nullptr) m_->best_speedup_->Add({{"job_id", job_id_}}).Set(speedup);
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_BEAM_UPDATED);
  e.set_state(v1::JOB_STATE_ROUNDS);
  e.set_round(round);
  e.set_total_rounds(cfg_.budget().max_rounds());
  e.set_best_speedup(speedup);
  e.set_message(absl::StrFormat("round %d: best %.4f ms (%.2fx the start), %d/%d correct%s", round,
                                ckpt_.best_median_ms(), speedup, correct,
                                static_cast<int>(cands.size()), improved ? "" : ", no gain"));
  (void)m_->Emit(job_id_, e);
  return {};
}

Stop JobRun::Finish(const std::string& stop_reason) {
  absl::StatusOr<v1::Candidate> start = m_->storage_->GetCandidate(ckpt_.start_candidate_id());
  if (IsStorageFailure(start.status())) return StopFromStatus(start.status());
  if (!start.ok()) return {Stop::kFailed, "starting kernel lost: " + std::string(start.status().message())};
  // Verify every beam kernel again, each timed with the start kernel, eager and compile
  // in one run; the fastest that passes is the result (its speedups are ratios from its
  // own final run).
  v1::Candidate best;
  v1::Measurement final_m;
  bool found = false;
  std::string infra;  // the last final run that failed on the infrastructure, and why
  for (const std::string& id : ckpt_.beam_ids()) {
    absl::StatusOr<v1::Candidate> c = m_->storage_->GetCandidate(id);
    if (IsStorageFailure(c.status())) return StopFromStatus(c.status());
    if (!c.ok()) continue;
    absl::StatusOr<v1::Measurement> m;
    if (id == start->id() && StartRunIsFinal(start->measurement())) {
      // The starting kernel's baseline run already timed it beside eager and
      // torch.compile after its gate: a final run would repeat exactly that.
      m = start->measurement();
      EmitLog(absl::StrCat("final figures of ", id, " (the starting kernel): its baseline run"));
    } else {
      m = Measure(absl::StrCat(job_id_, "/final/", id), c->kernel(), /*baselines=*/true, "",
                  &start->kernel());
    }
    if (!m.ok()) return StopFromStatus(m.status());
    if (m->verdict() == v1::VERDICT_INFRA_ERROR) {
      infra = absl::StrCat(id, ": ", m->correctness().reason());
      EmitLog(absl::StrCat("final verification of ", id, " could not run: ",
                           m->correctness().reason()));
      continue;
    }
    if (m->verdict() != v1::VERDICT_CORRECT) {
      EmitLog(absl::StrCat("final verification of ", id, " failed: ", v1::Verdict_Name(m->verdict()),
                           " ", m->correctness().reason()));
      continue;
    }
    if (!found || m->candidate().median_ms() < final_m.candidate().median_ms()) {
      best = *c;
      final_m = *m;
      found = true;
    }
  }
  if (!found && !infra.empty()) {
    return {Stop::kFailed, absl::StrCat("the final verification could not be measured: ", infra)};
  }
  if (!found) return {Stop::kFailed, "no kernel passed the final verification"};
  StoreArtifact("final/measurement.json", "measurement", ToJson(final_m));
  StoreArtifact("final/kernel.py", "kernel", best.kernel().source());

  std::vector<v1::Measurement> extra;
  for (const auto& shape : job_.problem().extra_shapes()) {
    absl::StatusOr<v1::Measurement> m =
        Measure(absl::StrCat(job_id_, "/shape/", shape.name()), best.kernel(), true, shape.name(),
                &start->kernel());
    if (!m.ok()) return StopFromStatus(m.status());
    m->set_shape_set(shape.name());
    extra.push_back(*m);
  }
  // Lineage: parents back to the start.
  std::vector<std::string> lineage;
  std::string cur = best.id();
  for (int guard = 0; !cur.empty() && guard < 10000; ++guard) {
    lineage.insert(lineage.begin(), cur);
    absl::StatusOr<v1::Candidate> c = m_->storage_->GetCandidate(cur);
    if (!c.ok()) break;
    cur = c->parent_id();
  }
  auto ratio = [](double a, double b) { return (a > 0 && b > 0) ? a / b : 0.0; };
  double med = final_m.candidate().median_ms();
  double ref = final_m.reference_kernel().median_ms() > 0 ? final_m.reference_kernel().median_ms()
                                                          : start->measurement().candidate().median_ms();
  // The arithmetic-intensity roofline of the best kernel at the final run's median (the
  // best kernel of the last round was measured, not profiled): the op's own FLOPs and
  // bytes over that time against the GPU's ceilings.
  double final_roofline = 0;
  if (med > 0) {
    v1::HardwareMetrics at_final;
    at_final.mutable_aggregate()->set_duration_ns(med * 1e6);
    if (ApplyRoofline(signature_, gpu_, &at_final)) final_roofline = at_final.roofline_bound_pct();
  }
  absl::Status s = Persist([&](v1::Job& j) {
    v1::JobResult* r = j.mutable_result();
    r->set_best_candidate_id(best.id());
    *r->mutable_best_kernel() = best.kernel();
    *r->mutable_best_measurement() = final_m;
    r->set_speedup_vs_start(ratio(ref, med));
    r->set_speedup_vs_eager(ratio(final_m.eager().median_ms(), med));
    r->set_speedup_vs_compile(ratio(final_m.compiled().median_ms(), med));
    r->set_roofline_efficiency_pct(best.metrics().roofline_efficiency_pct());
    r->set_roofline_bound_pct(final_roofline > 0 ? final_roofline
                                                 : best.metrics().roofline_bound_pct());
    r->clear_lineage();
    for (auto& id : lineage) r->add_lineage(id);
    r->clear_extra_shapes();
    for (auto& m : extra) *r->add_extra_shapes() = m;
    r->set_stop_reason(stop_reason);
    j.set_state(v1::JOB_STATE_DONE);
  });
  if (!s.ok()) return StopFromStatus(s);
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_JOB_FINISHED);
  e.set_state(v1::JOB_STATE_DONE);
  e.set_round(job_.current_round());
  e.set_best_speedup(job_.result().speedup_vs_start());
  e.set_message(absl::StrFormat(
      "done (%s): best %.4f ms, %.2fx the start, %.2fx eager, %.2fx torch.compile", stop_reason,
      med, job_.result().speedup_vs_start(), job_.result().speedup_vs_eager(),
      job_.result().speedup_vs_compile()));
  (void)m_->Emit(job_id_, e);
  if (m_->jobs_finished_ != nullptr) m_->jobs_finished_->Add({{"state", "DONE"}}).Increment();
  return {};
}

}  // namespace kagent
