#include "services/coordinator/job_run.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/client_message.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"
#include "common/proto_json.h"
#include "common/status.h"
#include "kernel_model/gpu_spec.h"
#include "kernel_model/op_recognition.h"
#include "services/coordinator/job_run_internal.h"
#include "services/coordinator/job_store.h"
#include "services/coordinator/screening.h"

namespace kagent {

namespace job_run_internal {


v1::JobEvent CandidateEvent(const v1::Candidate& c, v1::JobState state) {
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_CANDIDATE_MEASURED);
  e.set_state(state);
  e.set_round(c.round());
  v1::Candidate brief = c;
  brief.mutable_kernel()->clear_source();
  *e.mutable_candidate() = brief;
  return e;
}

void SleepUnless(absl::Duration d, const std::function<bool()>& stopping) {
  for (absl::Time wake = absl::Now() + d; absl::Now() < wake && !stopping();) {
    absl::SleepFor(std::min(absl::Milliseconds(100), wake - absl::Now()));
  }
}

}  // namespace job_run_internal

namespace {

// The GPU time a measurement held. A worker that reports its preparation
// (prepare_seconds) reports the slot it held too, 0 for a verdict reached before the GPU
// was taken (a compile error, a compile dry run's TIMEOUT: on the H100 such a baseline
// took 242 s of preparing and was charged all of it as GPU time); only from a worker that
// says neither, the call's wall time (`call_seconds`).
double MeasurementHeldSeconds(const v1::Measurement& m, double call_seconds) {
  if (m.gpu_seconds() > 0 || m.prepare_seconds() > 0) return m.gpu_seconds();
  return call_seconds;
}

using job_run_internal::kStateKey;
using job_run_internal::SleepUnless;

// What a round's candidates are called in log lines: "r1-w0".
std::string CandidateLabel(const v1::Candidate& c) {
  return absl::StrCat("r", c.round(), "-w", c.worker_index());
}


}  // namespace

void JobRun::Run() {
  const Stop stop = RetryStorageFailures(RunSteps());
  switch (stop.kind) {
    case Stop::kNone:
    case Stop::kStorage:  // not after RetryStorageFailures
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
  if (stop.kind != Stop::kShutdown) deps_.scheduler->ReleaseJob(job_id_);
}

JobRun::Stop JobRun::RetryStorageFailures(Stop stop) {
  // A storage failure (a full disk can be freed, a database server comes back): the run
  // is made again from what storage holds, with backoff, for storage_retry_seconds.
  // A failure after the job got further (another state, a round more) is a new incident
  // with a window of its own.
  auto progress = [this] { return std::make_pair(job_.state(), ckpt_.completed_round()); };
  auto incident = progress();
  absl::Time give_up = absl::Now() + absl::Seconds(deps_.defaults.storage_retry_seconds);
  absl::Duration backoff = absl::Seconds(deps_.defaults.storage_retry_backoff_seconds);
  for (int attempt = 1; stop.kind == Stop::kStorage; ++attempt) {
    if (progress() != incident) {
      incident = progress();
      give_up = absl::Now() + absl::Seconds(deps_.defaults.storage_retry_seconds);
      backoff = absl::Seconds(deps_.defaults.storage_retry_backoff_seconds);
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
    deps_.metrics.CountStorageFailure(stop.detail, "step");
    KLOG(WARNING) << "storage failed (attempt " << attempt << "): " << stop.detail.message()
                  << "; the job's step runs again in " << absl::FormatDuration(backoff);
    SleepUnless(backoff, [this] { return Stopping(); });
    backoff = std::min(backoff * 2, absl::Seconds(15));
    v1::JobEvent e;  // best effort: stored only when storage works again
    e.set_type(v1::JOB_EVENT_LOG);
    e.set_state(job_.state());
    e.set_round(job_.current_round());
    e.set_message(absl::StrCat(stop.reason, " (attempt ", attempt, "); running the step again"));
    Emit(e);
    stop = RunSteps();
  }
  return stop;
}

void JobRun::FailJob(const Stop& stop) {
  if (stop.detail.ok()) {
    KLOG(WARNING) << "job failed: " << stop.reason;
  } else {
    KLOG(WARNING) << "job failed: " << stop.reason << " [" << stop.detail.message() << "]";
  }
  absl::Duration backoff = absl::Seconds(deps_.defaults.storage_retry_backoff_seconds);
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
    deps_.metrics.CountStorageFailure(s, "fail");
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
  Emit(e);  // WatchJob also ends on the stored FAILED without it
  if (deps_.metrics.jobs_finished != nullptr) {
    deps_.metrics.jobs_finished->Add({{"state", "FAILED"}}).Increment();
  }
}

JobRun::Stop JobRun::RunSteps() {
  absl::StatusOr<StoredJob> stored = deps_.storage->GetJob(job_id_);
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
  absl::StatusOr<std::string> saved = deps_.storage->GetCheckpoint(job_id_, kStateKey);
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
    stop_reason = BudgetStopReason(wall_start);
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


std::string JobRun::BudgetStopReason(absl::Time wall_start) const {
  const v1::Budget& b = cfg_.budget();
  if (ckpt_.completed_round() >= b.max_rounds()) {
    return absl::StrCat("round budget spent (", b.max_rounds(), " rounds)");
  }
  if (ckpt_.rounds_without_improvement() >= cfg_.plateau_rounds()) {
    return absl::StrCat("plateau: no gain above 1% for ", cfg_.plateau_rounds(), " rounds");
  }
  if (absl::ToDoubleSeconds(absl::Now() - wall_start) >= b.max_wall_seconds()) {
    return absl::StrFormat("wall-time budget spent (%.0f s)", b.max_wall_seconds());
  }
  if (b.has_max_gpu_seconds() && job_.gpu_seconds_used() >= b.max_gpu_seconds()) {
    return absl::StrFormat("GPU-time budget spent (%.1f GPU-s)", b.max_gpu_seconds());
  }
  return LlmBudgetSpent();
}

template <typename T>
absl::StatusOr<T> JobRun::CallService(const char* what,
                                      const std::function<absl::StatusOr<T>()>& call) {
  const absl::Time end = absl::Now() + absl::Seconds(deps_.defaults.service_retry_seconds);
  absl::Duration backoff = absl::Seconds(deps_.defaults.service_retry_backoff_seconds);
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
    SleepUnless(backoff, [this] { return Stopping(); });
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
  return deps_.shutting_down() || cancel_->cancelled();
}

JobRun::Stop JobRun::StopFromStatus(const absl::Status& s) const {
  if (deps_.shutting_down()) return {Stop::kShutdown, "coordinator shutting down"};
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
  absl::StatusOr<v1::Job> j = MutateJob(*deps_.storage, job_id_, [&](v1::Job& job) {
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
  return deps_.emit(job_id_, e).status();
}

void JobRun::EmitLog(const std::string& message) {
  KLOG(INFO) << message;
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_LOG);
  e.set_state(job_.state());
  e.set_round(job_.current_round());
  e.set_message(message);
  Emit(e);
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
  if (deps_.metrics.gpu_seconds != nullptr) deps_.metrics.gpu_seconds->Add({}).Increment(held_seconds);
}

void JobRun::ChargeLlm(const v1::LlmUsage& usage) {
  if (llm::IsEmpty(usage)) return;
  llm::AddLlmUsage(usage, &llm_pending_);
  if (deps_.metrics.llm_tokens != nullptr) {
    deps_.metrics.llm_tokens->Add({}).Increment(
        static_cast<double>(usage.input_tokens() + usage.output_tokens()));
  }
  if (deps_.metrics.llm_cost != nullptr) deps_.metrics.llm_cost->Add({}).Increment(usage.cost_usd());
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
  a.set_content_type(kind == "kernel"                        ? "text/x-python"
                     : kind == "prompt" || kind == "reply" ? "text/plain"
                                                           : "application/json");
  a.set_content(body);
  absl::Status s = deps_.storage->PutArtifact(job_id_, a);
  if (!s.ok()) KLOG(WARNING) << "artifact " << name << " not stored: " << s;
}

void JobRun::StoreExchange(const std::string& dir, const std::string& prefix,
                           const v1::AgentExchange& exchange, const std::string& subject) {
  if (!exchange.prompt().empty()) StoreArtifact(dir + prefix + "prompt.txt", "prompt", exchange.prompt());
  if (!exchange.reply().empty()) StoreArtifact(dir + prefix + "reply.txt", "reply", exchange.reply());
  if (!exchange.fallback().empty()) {
    EmitLog(absl::StrCat("the ", exchange.agent(), " agent (", exchange.brain(),
                         ") fell back to the heuristic for ", subject, ": ", exchange.fallback()));
  }
}

absl::Status JobRun::SaveCandidate(const v1::Candidate& c) {
  KAGENT_RETURN_IF_ERROR(deps_.storage->PutCandidate(c));
  std::string dir = absl::StrCat("round-", c.round(), "/", c.id(), "/");
  if (!c.kernel().source().empty()) StoreArtifact(dir + "kernel.py", "kernel", c.kernel().source());
  if (c.has_measurement()) StoreArtifact(dir + "measurement.json", "measurement", ToPrettyJson(c.measurement()));
  if (c.has_metrics()) {
    v1::HardwareMetrics m = c.metrics();
    m.clear_raw_csv();
    StoreArtifact(dir + "metrics.json", "metrics", ToPrettyJson(m));
  }
  if (c.has_report()) StoreArtifact(dir + "report.json", "report", ToPrettyJson(c.report()));
  return absl::OkStatus();
}

absl::Status JobRun::SaveCheckpoint() {
  return deps_.storage->PutCheckpoint(job_id_, kStateKey, ckpt_.SerializeAsString());
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
  t.measure.set_trials(deps_.defaults.correctness_trials);
  t.measure.set_timing_reps(deps_.defaults.timing_reps);
  t.measure.set_timing_budget_ms(deps_.defaults.timing_budget_ms);
  t.measure.set_shape_set(shape_set);
  if (reference != nullptr) *t.measure.mutable_reference_kernel() = *reference;
  // The reference's op signature is recorded once per job (the baseline, or a profile);
  // later runs on the problem's own shapes skip it. Another shape set's signature differs
  // from the one kept here, so those runs still record their own.
  const bool own_shapes = shape_set.empty();
  if (own_shapes && signature_.ops_size() > 0) t.measure.set_skip_op_signature(true);
  KAGENT_ASSIGN_OR_RETURN(GpuTaskResult r, deps_.scheduler->Run(t, cancel_));
  if (!r.from_storage) {  // a stored result was charged when it ran
    const v1::Measurement& got = r.measure.measurement();
    // A reference-only run (no kernel) measures no candidate.
    ChargeGpu(MeasurementHeldSeconds(got, r.seconds), got.gpu_busy_seconds(),
              k.source().empty() ? 0 : 1, 0);
  }
  v1::Measurement out = r.measure.measurement();
  if (out.worker_id().empty()) out.set_worker_id(r.worker_id);
  // Stored candidates keep carrying the signature (reflexion reads its op class).
  if (own_shapes && out.op_signature().ops_size() == 0 && signature_.ops_size() > 0) {
    *out.mutable_op_signature() = signature_;
  }
  if (deps_.metrics.candidates != nullptr) {
    deps_.metrics.candidates->Add({{"verdict", v1::Verdict_Name(out.verdict())}}).Increment();
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
  absl::StatusOr<GpuTaskResult> r = deps_.scheduler->Run(t, cancel_);
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

absl::Status JobRun::Profile(v1::Candidate& c, std::string* failure) {
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
  absl::StatusOr<GpuTaskResult> r = deps_.scheduler->Run(t, cancel_);
  if (!r.ok()) {
    if (Stopping()) return r.status();
    *failure = absl::StrCat("its profile failed: ", r.status().message());
    EmitLog(absl::StrCat("profiling ", c.id(), " failed: ", r.status().message(),
                         "; planning from the op class alone"));
    return absl::OkStatus();
  }
  // The time the profile held the worker's GPU (the call's wall time, which includes
  // waiting behind the worker's other tasks, only from a worker that does not say).
  if (!r->from_storage) {
    ChargeGpu(r->profile.gpu_seconds() > 0 ? r->profile.gpu_seconds() : r->seconds,
              r->profile.gpu_busy_seconds(), 0, 0);
  }
  *c.mutable_metrics() = r->profile.metrics();
  if (r->profile.has_gpu()) gpu_ = r->profile.gpu();
  if (signature_.ops_size() == 0) SetSignature(r->profile.op_signature());
  return absl::OkStatus();
}

void JobRun::EnsureGpuSpec() {
  if (!gpu_.name().empty()) return;
  absl::StatusOr<v1::GpuSpec> spec = deps_.scheduler->AnyGpuSpec();
  // Workers that report no GPU at registration (kagentd's own) and no profile yet (or a
  // failed one): the spec table's entry for the GPU the baseline ran on; before a job
  // without a starting kernel has one, for the GPU its reference run ran on (so the brain's
  // first kernel is sized and chosen for that GPU, not for an unknown one).
  const std::string& ran_on = job_.baseline().gpu_name().empty() ? reference_gpu_name_
                                                                   : job_.baseline().gpu_name();
  if (!spec.ok() && !ran_on.empty() && ran_on != kCpuWorkerGpuName) {
    spec = LookupGpuSpec(ran_on, 0);
  }
  if (spec.ok()) gpu_ = *spec;
}

absl::Status JobRun::EnsureDiagnosed(int round, v1::Candidate& c,
                                     std::vector<v1::Prescription>* rx) {
  std::string no_profile;  // why `c` has no counters, when it has none
  if (!c.has_metrics() && cfg_.ablation() == v1::ABLATION_NO_COUNTERS) {
    // The ablation without hardware counters: the judge and analyzer get none.
    no_profile = "the job runs without hardware counters (ablation NO_COUNTERS)";
    EmitLog(absl::StrCat("no profile of ", c.id(), ": ", no_profile,
                         "; diagnosing from the measured times"));
  } else if (!c.has_metrics() && MeasuredOnCpuWorker(c.measurement())) {
    // No counters to read: the kernel ran under Triton's interpreter, with no GPU.
    no_profile = "it ran on a CPU worker (Triton's interpreter has no hardware counters)";
    EmitLog(absl::StrCat("no profile of ", c.id(), ": ", no_profile,
                         "; planning from the op class alone"));
  } else if (!c.has_metrics()) {
    KAGENT_RETURN_IF_ERROR(Profile(c, &no_profile));
  }
  EnsureGpuSpec();
  const bool profiled = c.has_metrics() && c.metrics().kernels_size() > 0;
  if (!profiled && no_profile.empty()) no_profile = "its profile recorded no kernel";
  // Without counters the judge still narrates from the measured times (no category).
  if (!c.has_report() && (profiled || c.measurement().candidate().median_ms() > 0)) {
    v1::DiagnoseRequest d;
    if (profiled) {
      *d.mutable_metrics() = c.metrics();
    } else {
      d.set_no_profile_reason(no_profile);
    }
    if (!gpu_.name().empty() || profiled) *d.mutable_gpu() = gpu_;
    *d.mutable_op_signature() = signature_;
    *d.mutable_timing() = c.measurement().candidate();
    *d.mutable_measurement() = c.measurement();
    d.mutable_measurement()->clear_log();
    d.mutable_measurement()->clear_op_signature();
    d.mutable_measurement()->clear_phases_ms();
    d.mutable_measurement()->clear_checks();
    d.set_job_id(job_id_);
    SetLlmBudgetLeft(d);
    SetLlmAgents(d);
    absl::StatusOr<v1::DiagnoseResponse> report = CallCharged<v1::DiagnoseResponse>(
        "judge", [&] { return deps_.services->Diagnose(d, cancel_); });
    if (report.ok()) {
      *c.mutable_report() = report->report();
      if (report->has_exchange()) {  // beside the report SaveCandidate stores
        StoreExchange(absl::StrCat("round-", c.round(), "/", c.id(), "/"), "narrate-",
                      report->exchange(), absl::StrCat("the diagnosis of ", c.id()));
      }
    } else if (profiled || Stopping()) {
      return report.status();
    } else {
      // A narrative is all a diagnosis without counters adds: the job goes on without it.
      EmitLog(absl::StrCat("the judge's diagnosis of ", c.id(), " without counters failed: ",
                           report.status().message(), "; planning from the op class alone"));
    }
  }
  KAGENT_RETURN_IF_ERROR(SaveCandidate(c));
  v1::PrescribeRequest p;
  *p.mutable_report() = c.report();
  *p.mutable_gpu() = gpu_;
  p.set_op_class(signature_.op_class());
  // The job's tolerances decide which patterns can pass the gate at all (TF32 cannot
  // pass an fp32 tolerance of 1e-4).
  if (job_.problem().has_atol()) p.set_atol(job_.problem().atol());
  if (job_.problem().has_rtol()) p.set_rtol(job_.problem().rtol());
  // The job's avoid-list is applied here, by the analyzer, and nowhere else (job_run.h).
  for (const auto& a : cfg_.avoid_patterns()) p.add_avoid_patterns(a);
  p.set_job_id(job_id_);
  p.set_kernel_source(c.kernel().source());
  SetLlmBudgetLeft(p);
  SetLlmAgents(p);
  KAGENT_ASSIGN_OR_RETURN(v1::PrescribeResponse pr,
                          CallCharged<v1::PrescribeResponse>("analyzer", [&] {
                            return deps_.services->Prescribe(p, cancel_);
                          }));
  if (pr.has_exchange()) {
    StoreExchange(absl::StrCat("round-", round, "/prescribe/", c.id(), "/"), "", pr.exchange(),
                  absl::StrCat("the prescriptions for ", c.id()));
  }
  rx->assign(pr.prescriptions().begin(), pr.prescriptions().end());
  return absl::OkStatus();
}

// The instances the other files of JobRun use.
template absl::StatusOr<v1::PlanRoundResponse> JobRun::CallCharged(
    const char*, const std::function<absl::StatusOr<v1::PlanRoundResponse>()>&);
template absl::StatusOr<v1::GenerateResponse> JobRun::CallCharged(
    const char*, const std::function<absl::StatusOr<v1::GenerateResponse>()>&);
template void JobRun::SetLlmBudgetLeft(v1::GenerateRequest&) const;
template void JobRun::SetLlmBudgetLeft(v1::ReflectRequest&) const;
template void JobRun::SetLlmBudgetLeft(v1::PlanRoundRequest&) const;

}  // namespace kagent
