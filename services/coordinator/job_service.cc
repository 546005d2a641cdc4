#include "services/coordinator/job_service.h"

#include <algorithm>
#include <optional>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {
namespace {

std::string NewJobId() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("job-%012x", rng() & 0xffffffffffffULL);
}

bool ValidName(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

absl::Status CheckRange(bool present, double v, double lo, double hi, const char* field) {
  if (!present) return absl::OkStatus();
  if (!(v >= lo && v <= hi)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be in [%g, %g], got %g", field, lo, hi, v));
  }
  return absl::OkStatus();
}

absl::Status CheckSource(const std::string& source, int64_t max, const char* field) {
  if (source.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  if (static_cast<int64_t>(source.size()) > max) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s is %d bytes; the limit is %d bytes", field, source.size(), max));
  }
  return absl::OkStatus();
}

v1::Job Brief(const v1::Job& job) {
  v1::Job b = job;
  b.mutable_problem()->clear_source();
  b.mutable_problem()->clear_extra_shapes();
  b.mutable_start_kernel()->clear_source();
  b.mutable_result()->mutable_best_kernel()->clear_source();
  return b;
}

}  // namespace

namespace {

// JobConfig.llm_agents against what the loop services offer (ValidateSubmit).
absl::Status CheckLlmAgents(const v1::JobConfig& c, const JobServiceLimits& limits) {
  if (c.llm_agents().empty()) return absl::OkStatus();
  const std::string offered = limits.llm_agents.empty()
                                  ? "none (no agent asks an LLM here)"
                                  : absl::StrJoin(limits.llm_agents, ", ");
  std::set<std::string> chosen;
  for (const std::string& a : c.llm_agents()) {
    if (limits.llm_agents.count(a) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.llm_agents: '", a, "' is not an LLM agent of this server; it offers: ", offered));
    }
    if (!chosen.insert(a).second) {
      return absl::InvalidArgumentError(absl::StrCat("config.llm_agents lists '", a, "' twice"));
    }
  }
  // The rewrite's brain is the job's brain: the two must agree.
  const bool llm_brain = !c.brain().empty() && c.brain() != "heuristic";
  if (chosen.count("rewrite") > 0 && !llm_brain) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.llm_agents lists rewrite, but config.brain is heuristic: name the LLM brain "
        "in config.brain (known: ", absl::StrJoin(limits.brains, ", "), "), or leave rewrite out"));
  }
  if (chosen.count("rewrite") == 0 && llm_brain) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.brain '", c.brain(), "' is an LLM brain, but config.llm_agents leaves out "
        "rewrite: add rewrite, or leave config.brain out for the heuristic rewrite"));
  }
  return absl::OkStatus();
}

// JobConfig.ablation and sweep_seed (ValidateSubmit).
absl::Status CheckAblation(const v1::JobConfig& c) {
  if (!v1::Ablation_IsValid(c.ablation())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.ablation ", static_cast<int>(c.ablation()),
        " is not an ablation; known: NONE (the full loop), NO_COUNTERS, NO_REFLEXION, "
        "BLIND_SWEEP"));
  }
  if (c.has_sweep_seed() && c.ablation() != v1::ABLATION_BLIND_SWEEP) {
    return absl::InvalidArgumentError(
        "config.sweep_seed seeds a blind sweep's random moves: give it with ablation "
        "BLIND_SWEEP, or leave it out");
  }
  const bool llm_brain = !c.brain().empty() && c.brain() != "heuristic";
  if (c.ablation() == v1::ABLATION_BLIND_SWEEP && llm_brain) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.ablation BLIND_SWEEP draws random moves from the heuristic brain's template "
        "library, but config.brain is '", c.brain(), "': leave config.brain out (heuristic)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateSubmit(const v1::SubmitJobRequest& r, const JobServiceLimits& limits) {
  if (!r.has_problem()) return absl::InvalidArgumentError("problem is required");
  const v1::Problem& p = r.problem();
  if (!ValidName(p.name(), 128)) {
    return absl::InvalidArgumentError(
        "problem.name must be 1-128 characters of [A-Za-z0-9._-] (e.g. the file name)");
  }
  KAGENT_RETURN_IF_ERROR(CheckSource(p.source(), limits.max_source_bytes, "problem.source"));
  if (p.source().find("class Model") == std::string::npos ||
      p.source().find("def get_inputs") == std::string::npos) {
    return absl::InvalidArgumentError(
        "problem.source must define `class Model(nn.Module)`, `get_inputs()` and "
        "`get_init_inputs()` (KernelBench format)");
  }
  KAGENT_RETURN_IF_ERROR(CheckRange(p.has_atol(), p.atol(), 1e-12, 1, "problem.atol"));
  KAGENT_RETURN_IF_ERROR(CheckRange(p.has_rtol(), p.rtol(), 1e-12, 1, "problem.rtol"));
  if (p.extra_shapes_size() > limits.max_extra_shapes) {
    return absl::InvalidArgumentError(
        absl::StrCat("at most ", limits.max_extra_shapes, " problem.extra_shapes"));
  }
  std::set<std::string> shape_names;
  for (const auto& s : p.extra_shapes()) {
    if (!ValidName(s.name(), 64) || !shape_names.insert(s.name()).second) {
      return absl::InvalidArgumentError(
          "each problem.extra_shapes[].name must be unique, 1-64 characters of [A-Za-z0-9._-]");
    }
    KAGENT_RETURN_IF_ERROR(
        CheckSource(s.get_inputs_source(), 64 << 10, "problem.extra_shapes[].get_inputs_source"));
  }
  if (r.has_start_kernel()) {
    const v1::KernelSource& k = r.start_kernel();
    // A start_kernel given without a source is a mistake (an empty file, say), not a
    // request to let the brain write the first kernel: that is start_kernel left out.
    if (absl::StripAsciiWhitespace(k.source()).empty()) {
      return absl::InvalidArgumentError(
          "start_kernel.source is empty: give the kernel's source, or leave start_kernel out "
          "to let the brain write the first kernel");
    }
    if (k.language() != v1::KERNEL_LANGUAGE_TRITON && k.language() != v1::KERNEL_LANGUAGE_CUDA) {
      return absl::InvalidArgumentError("start_kernel.language must be TRITON or CUDA");
    }
    KAGENT_RETURN_IF_ERROR(CheckSource(k.source(), limits.max_source_bytes, "start_kernel.source"));
    if (k.source().find("ModelNew") == std::string::npos) {
      return absl::InvalidArgumentError("start_kernel.source must define `class ModelNew`");
    }
  }
  const v1::JobConfig& c = r.config();
  KAGENT_RETURN_IF_ERROR(CheckRange(c.has_beam_width(), c.beam_width(), 1, 16, "config.beam_width"));
  KAGENT_RETURN_IF_ERROR(
      CheckRange(c.has_fixes_per_kernel(), c.fixes_per_kernel(), 1, 16, "config.fixes_per_kernel"));
  if (!v1::SearchStrategy_IsValid(c.strategy())) {
    return absl::InvalidArgumentError("config.strategy must be BEAM or GREEDY");
  }
  // GREEDY keeps one kernel a round: a beam width given beside it must be 1 (without one
  // the job gets 1), never rewritten silently.
  if (c.strategy() == v1::SEARCH_STRATEGY_GREEDY && c.has_beam_width() && c.beam_width() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.strategy GREEDY keeps one kernel a round, but config.beam_width is ",
        c.beam_width(), ": give beam_width 1 (or leave it out) with GREEDY, or use BEAM"));
  }
  KAGENT_RETURN_IF_ERROR(
      CheckRange(c.has_plateau_rounds(), c.plateau_rounds(), 1, 100, "config.plateau_rounds"));
  KAGENT_RETURN_IF_ERROR(CheckRange(c.has_target_efficiency_pct(), c.target_efficiency_pct(), 1,
                                    100, "config.target_efficiency_pct"));
  if (!c.brain().empty() && limits.brains.count(c.brain()) == 0) {
    std::string known;
    for (const auto& b : limits.brains) absl::StrAppend(&known, known.empty() ? "" : ", ", b);
    return absl::InvalidArgumentError(
        absl::StrCat("config.brain '", c.brain(), "' is not configured here; known: ", known));
  }
  KAGENT_RETURN_IF_ERROR(CheckLlmAgents(c, limits));
  KAGENT_RETURN_IF_ERROR(CheckAblation(c));
  for (const auto& a : c.avoid_patterns()) {
    if (a.empty() || a.size() > 128) {
      return absl::InvalidArgumentError("config.avoid_patterns entries must be 1-128 characters");
    }
  }
  const v1::Budget& b = c.budget();
  KAGENT_RETURN_IF_ERROR(CheckRange(b.has_max_rounds(), b.max_rounds(), 1, 1000, "config.budget.max_rounds"));
  KAGENT_RETURN_IF_ERROR(CheckRange(b.has_max_wall_seconds(), b.max_wall_seconds(), 1, 7 * 86400,
                                    "config.budget.max_wall_seconds"));
  KAGENT_RETURN_IF_ERROR(CheckRange(b.has_max_gpu_seconds(), b.max_gpu_seconds(), 1, 1e7,
                                    "config.budget.max_gpu_seconds"));
  KAGENT_RETURN_IF_ERROR(CheckRange(b.has_max_llm_tokens(), static_cast<double>(b.max_llm_tokens()),
                                    1, 1e10, "config.budget.max_llm_tokens"));
  KAGENT_RETURN_IF_ERROR(CheckRange(b.has_max_llm_cost_usd(), b.max_llm_cost_usd(), 0.000001, 1e5,
                                    "config.budget.max_llm_cost_usd"));
  if (r.idempotency_key().size() > 256) {
    return absl::InvalidArgumentError("idempotency_key must be at most 256 characters");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> JobServiceImpl::OwnJob(const Caller& caller, const std::string& job_id) {
  if (job_id.empty()) return absl::InvalidArgumentError("job_id is required");
  if (job_id.size() > 128) return absl::InvalidArgumentError("job_id is too long (max 128)");
  absl::StatusOr<StoredJob> s = storage_->GetJob(job_id);
  if (!s.ok()) {
    if (s.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
    }
    return s.status();
  }
  if (s->job.tenant() != caller.tenant) {
    return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  }
  return s->job;
}

grpc::Status JobServiceImpl::SubmitJob(grpc::ServerContext* context,
                                       const v1::SubmitJobRequest* request,
                                       v1::SubmitJobResponse* response) {
  KAGENT_AUTHENTICATE(caller, auth_, context);
  if (forwarder_ != nullptr && forwarder_->ShouldForward()) {
    return forwarder_->SubmitJob(context, *request, response);
  }
  LogScope scope({.request_id = caller.request_id, .tenant = caller.tenant});
  absl::Status v = ValidateSubmit(*request, limits_);
  if (!v.ok()) return ToGrpcStatus(v);
  // Per-tenant bound on unfinished jobs.
  int active = 0;
  for (v1::JobState st : {v1::JOB_STATE_QUEUED, v1::JOB_STATE_BASELINE, v1::JOB_STATE_ROUNDS}) {
    ListJobsQuery q;
    q.tenant = caller.tenant;
    q.state = st;
    q.page_size = kMaxJobPageSize;
    absl::StatusOr<JobPage> page = storage_->ListJobs(q);
    if (!page.ok()) return ToGrpcStatus(page.status());
    active += static_cast<int>(page->jobs.size());
  }
  if (active >= limits_.max_active_jobs_per_tenant && request->idempotency_key().empty()) {
    return ToGrpcStatus(absl::ResourceExhaustedError(absl::StrCat(
        "tenant ", caller.tenant, " already has ", active,
        " unfinished jobs (the limit); wait for some to finish or cancel them")));
  }
  v1::Job job;
  job.set_id(NewJobId());
  job.set_tenant(caller.tenant);
  *job.mutable_problem() = request->problem();
  if (!request->start_kernel().source().empty()) *job.mutable_start_kernel() = request->start_kernel();
  if (job.start_kernel().origin().empty() && !job.start_kernel().source().empty()) {
    job.mutable_start_kernel()->set_origin("user");
  }
  *job.mutable_config() = request->config();
  absl::StatusOr<v1::Job> stored = jobs_->Submit(job, request->idempotency_key());
  if (!stored.ok()) return ToGrpcStatus(stored.status());
  KLOG(INFO).With("job_id", stored->id()) << "job submitted: " << stored->problem().name();
  *response->mutable_job() = *stored;
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* context, const v1::GetJobRequest* request,
                                    v1::GetJobResponse* response) {
  KAGENT_AUTHENTICATE(caller, auth_, context);
  absl::StatusOr<v1::Job> job = OwnJob(caller, request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response->mutable_job() = *job;
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext* context,
                                      const v1::ListJobsRequest* request,
                                      v1::ListJobsResponse* response) {
  KAGENT_AUTHENTICATE(caller, auth_, context);
  if (request->page_size() < 0 || request->page_size() > kMaxJobPageSize) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrCat("page_size must be in [0, ", kMaxJobPageSize, "] (0 means 50)")));
  }
  if (!v1::JobState_IsValid(request->state())) {
    return ToGrpcStatus(absl::InvalidArgumentError("state is not a known JobState"));
  }
  ListJobsQuery q;
  q.tenant = caller.tenant;
  q.state = request->state();
  q.page_size = request->page_size();
  q.page_token = request->page_token();
  absl::StatusOr<JobPage> page = storage_->ListJobs(q);
  if (!page.ok()) return ToGrpcStatus(page.status());
  for (const StoredJob& s : page->jobs) *response->add_jobs() = Brief(s.job);
  response->set_next_page_token(page->next_page_token);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext* context,
                                       const v1::CancelJobRequest* request,
                                       v1::CancelJobResponse* response) {
  KAGENT_AUTHENTICATE(caller, auth_, context);
  if (forwarder_ != nullptr && forwarder_->ShouldForward()) {
    return forwarder_->CancelJob(context, *request, response);
  }
  absl::StatusOr<v1::Job> job = OwnJob(caller, request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  if (request->reason().size() > 1024) {
    return ToGrpcStatus(absl::InvalidArgumentError("reason must be at most 1024 characters"));
  }
  absl::StatusOr<v1::Job> cancelled = jobs_->Cancel(request->job_id(), request->reason());
  if (!cancelled.ok()) return ToGrpcStatus(cancelled.status());
  *response->mutable_job() = *cancelled;
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::WatchJob(grpc::ServerContext* context,
                                      const v1::WatchJobRequest* request,
                                      grpc::ServerWriter<v1::JobEvent>* writer) {
  KAGENT_AUTHENTICATE(caller, auth_, context);
  if (request->from_sequence() < 0) {
    return ToGrpcStatus(absl::InvalidArgumentError("from_sequence must be >= 0"));
  }
  absl::StatusOr<v1::Job> job = OwnJob(caller, request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  int64_t next = std::max<int64_t>(1, request->from_sequence());
  // The loop persists a job's final state a moment before it appends the JOB_FINISHED
  // event (two writes): a job seen finished without that event yet is waited on this long
  // for it, then the stream ends (a job from before the event existed, or a client that
  // resumed past it).
  constexpr absl::Duration kFinishedEventGrace = absl::Seconds(5);
  std::optional<absl::Time> finished_seen;
  while (!context->IsCancelled()) {
    absl::StatusOr<std::vector<v1::JobEvent>> events =
        storage_->ListEvents(request->job_id(), next, 500);
    if (!events.ok()) return ToGrpcStatus(events.status());
    for (const v1::JobEvent& e : *events) {
      if (!writer->Write(e)) return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
      next = e.sequence() + 1;
      if (e.type() == v1::JOB_EVENT_JOB_FINISHED) return grpc::Status::OK;
    }
    if (!events->empty()) continue;
    // Nothing new on a finished job: its JOB_FINISHED event may still be on its way
    // (kFinishedEventGrace); past that, the stream ends.
    absl::StatusOr<StoredJob> now = storage_->GetJob(request->job_id());
    if (now.ok() && !IsUnfinishedJobState(now->job.state())) {
      absl::StatusOr<std::vector<v1::JobEvent>> tail =
          storage_->ListEvents(request->job_id(), next, 1);
      if (!tail.ok() || !tail->empty()) continue;
      if (!finished_seen) finished_seen = absl::Now();
      const absl::Duration left = kFinishedEventGrace - (absl::Now() - *finished_seen);
      if (left <= absl::ZeroDuration()) return grpc::Status::OK;
      jobs_->WaitForEvent(request->job_id(), next - 1, std::min(left, absl::Seconds(1)),
                          [context] { return context->IsCancelled(); });
      continue;
    }
    // Wakes within 100 ms of a cancellation (the client's, or the server's at shutdown).
    jobs_->WaitForEvent(request->job_id(), next - 1, absl::Seconds(1),
                        [context] { return context->IsCancelled(); });
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
}

grpc::Status JobServiceImpl::ListCandidates(grpc::ServerContext* context,
                                            const v1::ListCandidatesRequest* request,
                                            v1::ListCandidatesResponse* response) {
  KAGENT_AUTHENTICATE(caller, auth_, context);
  absl::StatusOr<v1::Job> job = OwnJob(caller, request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  if (request->round() < 0) return ToGrpcStatus(absl::InvalidArgumentError("round must be >= 0"));
  std::optional<int32_t> round;
  if (request->round() > 0) round = request->round();
  absl::StatusOr<std::vector<v1::Candidate>> cands = storage_->ListCandidates(request->job_id(), round);
  if (!cands.ok()) return ToGrpcStatus(cands.status());
  for (v1::Candidate& c : *cands) {
    if (!request->include_source()) c.mutable_kernel()->clear_source();
    c.mutable_metrics()->clear_raw_csv();
    *response->add_candidates() = std::move(c);
  }
  absl::StatusOr<std::vector<v1::Reflexion>> refl = storage_->ListReflexions(request->job_id());
  if (!refl.ok()) return ToGrpcStatus(refl.status());
  for (const auto& r : *refl) {
    if (!round || r.round() == *round) *response->add_reflexions() = r;
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::GetArtifacts(grpc::ServerContext* context,
                                          const v1::GetArtifactsRequest* request,
                                          v1::GetArtifactsResponse* response) {
  KAGENT_AUTHENTICATE(caller, auth_, context);
  absl::StatusOr<v1::Job> job = OwnJob(caller, request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  if (request->prefix().size() > 512) {
    return ToGrpcStatus(absl::InvalidArgumentError("prefix must be at most 512 characters"));
  }
  absl::StatusOr<std::vector<v1::Artifact>> arts =
      storage_->ListArtifacts(request->job_id(), request->prefix(), /*include_content=*/true);
  if (!arts.ok()) return ToGrpcStatus(arts.status());
  int64_t total = 0;
  for (auto& a : *arts) {
    total += static_cast<int64_t>(a.content().size());
    if (total > (12 << 20)) {
      return ToGrpcStatus(absl::ResourceExhaustedError(
          "artifacts exceed 12 MiB in one reply; ask for a narrower prefix (e.g. round-1/)"));
    }
    *response->add_artifacts() = std::move(a);
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::RegisterWorker(grpc::ServerContext* context,
                                            const v1::RegisterWorkerRequest* request,
                                            v1::RegisterWorkerResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  std::vector<v1::GpuSpec> gpus(request->gpus().begin(), request->gpus().end());
  absl::Status s = scheduler_->RegisterWorker(request->worker_id(), request->address(), gpus,
                                              /*is_static=*/false);
  if (!s.ok()) return ToGrpcStatus(s);
  // Whole seconds, rounded down: a worker renewing within them is never late.
  response->set_lease_seconds(absl::ToInt64Seconds(scheduler_->lease()));
  if (forwarder_ != nullptr && forwarder_->ShouldForward()) {
    // A follower keeps the worker too (it has it when it takes over), and passes the
    // registration on so that the leader can use the worker now.
    v1::RegisterWorkerResponse leader;
    grpc::Status forwarded = forwarder_->RegisterWorker(context, *request, &leader);
    if (!forwarded.ok()) {
      KLOG(WARNING) << "worker " << request->worker_id()
                    << " registered with this follower; passing it to the leader failed: "
                    << forwarded.error_message();
    }
  }
  return grpc::Status::OK;
}

}  // namespace kagent
