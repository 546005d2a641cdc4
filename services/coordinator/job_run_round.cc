// JobRun's rounds (job_run.h): plan, generate, screen and measure, reflect, beam update,
// checkpoint.
#include "services/coordinator/job_run.h"

#include <future>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <google/protobuf/util/time_util.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"
#include "common/proto_json.h"
#include "common/status.h"
#include "kernel_model/gpu_spec.h"
#include "kernel_model/roofline.h"
#include "services/coordinator/beam.h"
#include "services/coordinator/blind_sweep.h"
#include "services/coordinator/job_run_internal.h"

namespace kagent {

namespace {

using google::protobuf::util::TimeUtil;
using job_run_internal::CandidateEvent;

std::string RoundCheckpointKey(int round) { return absl::StrCat("round-", round); }

// The variants of a round's generated kernels, stored with the round checkpoint (in the
// same transaction) since a Candidate has no place for them: a GenerateResponse whose
// kernels carry only assignment.worker_index and variants, one per candidate that has any.
std::string RoundVariantsKey(int round) { return absl::StrCat("round-", round, "-variants"); }

// The candidate for generated kernel `gk` of round `round` (verdict DUPLICATE when the
// brain's kernel was a duplicate, GENERATION_FAILED when its LLM endpoint failed,
// COMPILE_ERROR when it returned no kernel otherwise).
v1::Candidate GeneratedCandidate(const std::string& job_id, int round,
                                 const v1::GeneratedKernel& gk) {
  v1::Candidate c;
  c.set_id(absl::StrCat(job_id, "-r", round, "-w", gk.assignment().worker_index()));
  c.set_job_id(job_id);
  c.set_round(round);
  c.set_worker_index(gk.assignment().worker_index());
  c.set_parent_id(gk.assignment().parent_kernel_id());
  *c.mutable_prescription() = gk.assignment().prescription();
  *c.mutable_kernel() = gk.kernel();
  *c.mutable_created_at() = TimeUtil::GetCurrentTime();
  if (gk.kernel().source().empty()) {
    v1::Measurement* m = c.mutable_measurement();
    if (gk.duplicate()) {
      m->set_verdict(v1::VERDICT_DUPLICATE);
    } else if (gk.has_endpoint_failure()) {
      m->set_verdict(v1::VERDICT_GENERATION_FAILED);
    } else {
      m->set_verdict(v1::VERDICT_COMPILE_ERROR);
    }
    m->mutable_correctness()->set_reason(
        gk.has_endpoint_failure() ? absl::StrCat("no candidate: the LLM endpoint failed: ",
                                                 gk.endpoint_failure().message())
        : gk.error().empty()      ? std::string("the brain returned no kernel")
                                  : gk.error());
  }
  return c;
}

}  // namespace

JobRun::Stop JobRun::Round(int round, std::string* stop_reason) {
  LogScope scope({.request_id = absl::StrCat("round-", round)});
  absl::Status s = Persist([&](v1::Job& j) { j.set_current_round(round); });
  if (!s.ok()) return StopFromStatus(s);
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_ROUND_STARTED);
  e.set_state(v1::JOB_STATE_ROUNDS);
  e.set_round(round);
  e.set_total_rounds(cfg_.budget().max_rounds());
  e.set_message(absl::StrCat("round ", round, " started"));
  Emit(e);

  std::vector<v1::Candidate> beam;
  if (Stop stop = LoadBeam(&beam); stop.kind != Stop::kNone) return stop;
  v1::RoundCheckpoint rc;
  v1::GenerateResponse variants;  // RoundVariantsKey
  if (!LoadRoundCheckpoint(round, &rc, &variants)) {
    Stop stop = PrepareRound(round, beam, stop_reason, &rc, &variants);
    if (stop.kind != Stop::kNone || !stop_reason->empty()) return stop;
  }
  std::vector<v1::Candidate> cands(rc.candidates().begin(), rc.candidates().end());
  if (Stop stop = MeasureCandidates(round, beam, variants, &cands); stop.kind != Stop::kNone) {
    return stop;
  }
  if (Stop stop = RepairCandidates(round, beam, &cands); stop.kind != Stop::kNone) return stop;
  if (Stop stop = RecordAttempts(round, beam, cands); stop.kind != Stop::kNone) return stop;
  return CloseRound(round, beam, cands);
}

JobRun::Stop JobRun::LoadBeam(std::vector<v1::Candidate>* beam) {
  for (const std::string& id : ckpt_.beam_ids()) {
    absl::StatusOr<v1::Candidate> c = deps_.storage->GetCandidate(id);
    if (IsStorageFailure(c.status())) return StopFromStatus(c.status());
    if (!c.ok()) return {Stop::kFailed, absl::StrCat("beam kernel ", id, " lost: ", c.status().message())};
    beam->push_back(*std::move(c));
  }
  if (signature_.ops_size() == 0 && !beam->empty()) {
    absl::StatusOr<v1::Candidate> start = deps_.storage->GetCandidate(ckpt_.start_candidate_id());
    if (start.ok()) SetSignature(start->measurement().op_signature());
  }
  return {};
}

bool JobRun::LoadRoundCheckpoint(int round, v1::RoundCheckpoint* rc,
                                 v1::GenerateResponse* variants) {
  absl::StatusOr<std::string> saved = deps_.storage->GetCheckpoint(job_id_, RoundCheckpointKey(round));
  if (!saved.ok() || !rc->ParseFromString(*saved)) return false;
  absl::StatusOr<std::string> v = deps_.storage->GetCheckpoint(job_id_, RoundVariantsKey(round));
  if (v.ok() && !variants->ParseFromString(*v)) {
    EmitLog(absl::StrCat("round ", round, ": stored variants unreadable; measuring the kernels "
                         "as generated"));
    variants->Clear();
  }
  return true;
}

JobRun::Stop JobRun::PrepareRound(int round, std::vector<v1::Candidate>& beam,
                                  std::string* stop_reason, v1::RoundCheckpoint* rc,
                                  v1::GenerateResponse* variants) {
  rc->Clear();
  rc->set_round(round);
  if (cfg_.ablation() == v1::ABLATION_BLIND_SWEEP) return PrepareBlindRound(round, beam, rc, variants);
  v1::PlanRoundRequest plan_req;
  plan_req.set_job_id(job_id_);
  plan_req.set_round(round);
  plan_req.set_fixes_per_kernel(cfg_.fixes_per_kernel());
  Stop stop = DiagnoseBeam(beam, &plan_req, stop_reason);
  if (stop.kind != Stop::kNone || !stop_reason->empty()) return stop;
  int shared = 0;
  for (v1::Reflexion& r : ReadMemory(&shared)) *plan_req.add_memory() = std::move(r);
  if (shared > 0) {
    EmitLog(absl::StrCat("round ", round, ": the plan reads ", shared,
                         " reflexion(s) of earlier jobs on ", signature_.op_class(), " (",
                         gpu_.arch(), ") beside this job's ",
                         plan_req.memory_size() - shared, " (share_memory_across_jobs)"));
  }
  // No avoid_patterns: the analyzer already dropped the job's avoid-list from the
  // prescriptions; the planner applies the memory's (job_run.h).
  SetLlmAgents(plan_req);
  SetLlmBudgetLeft(plan_req);  // after the diagnoses and prescriptions charged theirs
  absl::StatusOr<v1::PlanRoundResponse> plan = CallCharged<v1::PlanRoundResponse>(
      "orchestrator", [&] { return deps_.services->PlanRound(plan_req, cancel_); });
  if (!plan.ok()) return StopFromStatus(plan.status());
  *rc->mutable_plan() = plan->plan();
  StoreArtifact(absl::StrCat("round-", round, "/plan.json"), "plan", ToPrettyJson(plan->plan()));
  if (plan->has_exchange()) {
    StoreExchange(absl::StrCat("round-", round, "/"), "plan-", plan->exchange(),
                  absl::StrCat("the plan of round ", round));
  }
  if (plan->plan().assignments_size() > 0) {
    stop = Generate(round, plan->plan(), beam, plan_req.memory(), rc, variants);
    if (stop.kind != Stop::kNone) return stop;
  }
  return StoreRoundCheckpoint(round, rc, variants);
}

JobRun::Stop JobRun::PrepareBlindRound(int round, const std::vector<v1::Candidate>& beam,
                                       v1::RoundCheckpoint* rc, v1::GenerateResponse* variants) {
  // No profile, diagnosis, prescriptions, plan or memory: the GPU spec still sizes a
  // template switch, as it does for the other arms.
  EnsureGpuSpec();
  std::vector<std::string> ids;
  for (const auto& c : beam) ids.push_back(c.id());
  const v1::RoundPlan plan =
      BlindSweepPlan(ids, cfg_.fixes_per_kernel(), round, cfg_.sweep_seed());
  *rc->mutable_plan() = plan;
  StoreArtifact(absl::StrCat("round-", round, "/plan.json"), "plan", ToPrettyJson(plan));
  EmitLog(absl::StrCat("round ", round, ": blind sweep, ", plan.assignments_size(),
                       " random move(s) of the brain (sweep seed ", cfg_.sweep_seed(),
                       "); no profile, diagnosis, prescriptions or memory"));
  if (Stop stop = Generate(round, plan, beam, {}, rc, variants); stop.kind != Stop::kNone) {
    return stop;
  }
  return StoreRoundCheckpoint(round, rc, variants);
}

JobRun::Stop JobRun::StoreRoundCheckpoint(int round, v1::RoundCheckpoint* rc,
                                          v1::GenerateResponse* variants) {
  if (round == 1 && !ckpt_.start_from_brain()) {
    if (Stopping()) return StopFromStatus(absl::CancelledError(""));
    AddLibrarySeed(rc, variants);
  }
  absl::Status cs = deps_.storage->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(
        tx.PutCheckpoint(job_id_, RoundCheckpointKey(round), rc->SerializeAsString()));
    if (variants->kernels_size() > 0) {
      KAGENT_RETURN_IF_ERROR(
          tx.PutCheckpoint(job_id_, RoundVariantsKey(round), variants->SerializeAsString()));
    }
    return absl::OkStatus();
  });
  if (!cs.ok()) return StopFromStatus(cs);
  return {};
}

JobRun::Stop JobRun::DiagnoseBeam(std::vector<v1::Candidate>& beam, v1::PlanRoundRequest* plan,
                                  std::string* stop_reason) {
  for (auto& c : beam) {
    if (&c == &beam.front() && !c.has_metrics() && MeasuredAtRoofline(c, stop_reason)) {
      return {};
    }
    std::vector<v1::Prescription> rx;
    absl::Status ds = EnsureDiagnosed(plan->round(), c, &rx);
    if (!ds.ok()) return StopFromStatus(ds);
    // The useful figure, not SOL: SOL counts redundant cache traffic (kernel_model/roofline.h).
    if (&c == &beam.front() && c.has_metrics() &&
        UsefulRooflinePct(c.metrics()) >= cfg_.target_efficiency_pct()) {
      *stop_reason = absl::StrFormat(
          "at the roofline target: %.1f%% of the %s >= %.1f%%", UsefulRooflinePct(c.metrics()),
          c.metrics().roofline_bound_pct() > 0 ? "arithmetic-intensity roofline"
                                               : "speed of light (no FLOPs/bytes known)",
          cfg_.target_efficiency_pct());
      return {};
    }
    v1::BeamEntry* be = plan->add_beam();
    be->set_kernel_id(c.id());
    for (auto& p : rx) *be->add_prescriptions() = p;
    // For the plan agent's prompt: the medians and the diagnosis, not the logs.
    if (c.has_measurement()) {
      *be->mutable_measurement() = c.measurement();
      be->mutable_measurement()->clear_log();
      be->mutable_measurement()->clear_op_signature();
      be->mutable_measurement()->clear_phases_ms();
      be->mutable_measurement()->clear_checks();
    }
    if (c.has_report()) *be->mutable_report() = c.report();
  }
  return {};
}

bool JobRun::MeasuredAtRoofline(const v1::Candidate& c, std::string* stop_reason) {
  if (signature_.flops() <= 0 || signature_.min_bytes() <= 0 ||
      c.measurement().candidate().median_ms() <= 0 || MeasuredOnCpuWorker(c.measurement())) {
    return false;
  }
  EnsureGpuSpec();
  const double pct = RooflinePctAt(signature_, gpu_, c.measurement().candidate().median_ms());
  if (pct <= 0 || pct < cfg_.target_efficiency_pct()) return false;
  *stop_reason = absl::StrFormat(
      "at the roofline target: %.1f%% of the arithmetic-intensity roofline at the measured "
      "median (no profile needed) >= %.1f%%",
      pct, cfg_.target_efficiency_pct());
  EmitLog(absl::StrCat(c.id(), ": ", *stop_reason));
  return true;
}

JobRun::Stop JobRun::Generate(int round, const v1::RoundPlan& plan,
                              const std::vector<v1::Candidate>& beam,
                              const google::protobuf::RepeatedPtrField<v1::Reflexion>& memory,
                              v1::RoundCheckpoint* rc, v1::GenerateResponse* variants) {
  v1::GenerateRequest g;
  g.set_job_id(job_id_);
  *g.mutable_problem() = job_.problem();
  *g.mutable_plan() = plan;
  for (const auto& c : beam) {
    (*g.mutable_parents())[c.id()] = c.kernel();
    if (c.has_report()) (*g.mutable_parent_reports())[c.id()] = c.report();
    if (c.has_measurement()) {
      v1::Measurement& m = (*g.mutable_parent_measurements())[c.id()];
      m = c.measurement();
      m.clear_log();
      m.clear_op_signature();
      m.clear_phases_ms();
      m.clear_checks();
    }
    if (c.has_metrics()) {
      v1::HardwareMetrics& hm = (*g.mutable_parent_metrics())[c.id()];
      hm = c.metrics();
      hm.clear_kernels();
      hm.clear_aggregate();
      hm.clear_raw_csv();
    }
  }
  *g.mutable_op_signature() = signature_;
  *g.mutable_gpu() = gpu_;
  g.set_brain(cfg_.brain());
  for (const auto& r : memory) *g.add_memory() = r;
  absl::StatusOr<v1::GenerateResponse> gen =
      GenerateAwaitingEndpoint(std::move(g), absl::StrCat("round ", round));
  if (!gen.ok()) return StopFromStatus(gen.status());
  // Stored now: after the round checkpoint, this Generate is not made again.
  if (absl::Status ps = Persist([](v1::Job&) {}); !ps.ok()) return StopFromStatus(ps);
  for (const auto& gk : gen->kernels()) {
    v1::Candidate c = GeneratedCandidate(job_id_, round, gk);
    std::string dir = absl::StrCat("round-", round, "/", c.id(), "/");
    if (!gk.prompt().empty()) StoreArtifact(dir + "prompt.txt", "prompt", gk.prompt());
    if (!gk.reply().empty()) StoreArtifact(dir + "reply.txt", "reply", gk.reply());
    if (!gk.kernel().source().empty() && gk.variants_size() > 0) {
      v1::GeneratedKernel* v = variants->add_kernels();
      v->mutable_assignment()->set_worker_index(c.worker_index());
      *v->mutable_variants() = gk.variants();
    }
    *rc->add_candidates() = std::move(c);
  }
  return {};
}

JobRun::Stop JobRun::MeasureCandidates(int round, const std::vector<v1::Candidate>& beam,
                                       const v1::GenerateResponse& variants,
                                       std::vector<v1::Candidate>* cands,
                                       const std::string& task_suffix) {
  std::map<int, const v1::GeneratedKernel*> variants_of;  // by worker index
  for (const auto& v : variants.kernels()) variants_of[v.assignment().worker_index()] = &v;
  std::map<std::string, std::string> beam_sources;  // parent id -> source
  for (const auto& b : beam) beam_sources[b.id()] = b.kernel().source();
  std::vector<std::future<absl::Status>> futures;
  for (auto& c : *cands) {
    if (c.has_measurement()) continue;  // generation failed: verdict already set
    absl::StatusOr<v1::Candidate> existing = deps_.storage->GetCandidate(c.id());
    if (existing.ok() && existing->has_measurement()) {
      c = *existing;  // measured before a restart
      continue;
    }
    auto v = variants_of.find(c.worker_index());
    const v1::GeneratedKernel* with_variants = v == variants_of.end() ? nullptr : v->second;
    auto parent = beam_sources.find(c.parent_id());
    const std::string parent_source = parent == beam_sources.end() ? "" : parent->second;
    futures.push_back(std::async(std::launch::async, [this, &c, round, with_variants,
                                                      parent_source, task_suffix]() -> absl::Status {
      LogScope scope({.job_id = job_id_, .request_id = c.id()});
      if (with_variants != nullptr) {
        absl::StatusOr<v1::KernelSource> chosen =
            ScreenCandidate(c, with_variants->variants(), parent_source);
        if (!chosen.ok()) return chosen.status();
        *c.mutable_kernel() = *std::move(chosen);
      }
      absl::StatusOr<v1::Measurement> m =
          Measure(absl::StrCat(job_id_, "/r", round, "/w", c.worker_index(), task_suffix), c.kernel(),
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
  return {};
}

namespace {

// A candidate an LLM brain wrote that failed the gate with a kernel to repair.
bool Repairable(const v1::Candidate& c) {
  const v1::Verdict v = c.measurement().verdict();
  const std::string& origin = c.kernel().origin();
  return !c.kernel().source().empty() &&
         (v == v1::VERDICT_COMPILE_ERROR || v == v1::VERDICT_INCORRECT || v == v1::VERDICT_CRASH) &&
         absl::StartsWith(origin, "brain:") && origin != "brain:heuristic";
}

// What the gate reported: its reason, then the tail of the harness's log.
std::string FailureText(const v1::Measurement& m) {
  constexpr size_t kMaxLog = 2000;
  std::string out = m.correctness().reason();
  if (!m.log().empty()) {
    absl::StrAppend(&out, out.empty() ? "" : "\n", "the harness's log (tail):\n",
                    m.log().size() > kMaxLog ? m.log().substr(m.log().size() - kMaxLog) : m.log());
  }
  return out;
}

}  // namespace

JobRun::Stop JobRun::RepairCandidates(int round, const std::vector<v1::Candidate>& beam,
                                      std::vector<v1::Candidate>* cands) {
  std::vector<size_t> pending;
  for (size_t i = 0; i < cands->size(); ++i) {
    if (Repairable((*cands)[i])) pending.push_back(i);
  }
  for (int attempt = 1; attempt <= deps_.defaults.llm_repairs && !pending.empty(); ++attempt) {
    v1::GenerateRequest g;
    g.set_job_id(job_id_);
    *g.mutable_problem() = job_.problem();
    *g.mutable_op_signature() = signature_;
    *g.mutable_gpu() = gpu_;
    g.set_brain(cfg_.brain());
    g.mutable_plan()->set_round(round);
    std::vector<v1::Candidate> repaired;
    std::map<std::string, const v1::Candidate*> failed_by_id;
    for (size_t i : pending) {
      const v1::Candidate& f = (*cands)[i];
      const std::string id = absl::StrCat(f.id(), "-fix", attempt);
      absl::StatusOr<v1::Candidate> existing = deps_.storage->GetCandidate(id);
      if (existing.ok() && existing->has_measurement()) {  // repaired before a restart
        repaired.push_back(*std::move(existing));
        continue;
      }
      failed_by_id[f.id()] = &f;
      v1::Assignment* a = g.mutable_plan()->add_assignments();
      a->set_parent_kernel_id(f.id());
      *a->mutable_prescription() = f.prescription();
      a->set_worker_index(f.worker_index());
      (*g.mutable_parents())[f.id()] = f.kernel();
      v1::Repair& r = (*g.mutable_repairs())[f.id()];
      r.set_verdict(v1::Verdict_Name(f.measurement().verdict()));
      r.set_error(FailureText(f.measurement()));
      r.set_attempt(attempt);
    }
    if (g.plan().assignments_size() > 0) {
      EmitLog(absl::StrCat("round ", round, ", repair turn ", attempt, ": ",
                           g.plan().assignments_size(),
                           " candidate(s) that failed the gate sent back to the brain with "
                           "their verdict and error"));
      absl::StatusOr<v1::GenerateResponse> gen =
          GenerateAwaitingEndpoint(std::move(g), absl::StrCat("round ", round, " repair ", attempt));
      if (!gen.ok()) return StopFromStatus(gen.status());
      if (absl::Status ps = Persist([](v1::Job&) {}); !ps.ok()) return StopFromStatus(ps);
      for (const auto& gk : gen->kernels()) {
        auto failed = failed_by_id.find(gk.assignment().parent_kernel_id());
        if (failed == failed_by_id.end()) continue;
        v1::Candidate c = GeneratedCandidate(job_id_, round, gk);
        c.set_id(absl::StrCat(failed->second->id(), "-fix", attempt));
        c.set_parent_id(failed->second->parent_id());
        const std::string dir = absl::StrCat("round-", round, "/", c.id(), "/");
        if (!gk.prompt().empty()) StoreArtifact(dir + "prompt.txt", "prompt", gk.prompt());
        if (!gk.reply().empty()) StoreArtifact(dir + "reply.txt", "reply", gk.reply());
        repaired.push_back(std::move(c));
      }
    }
    if (Stop stop = MeasureCandidates(round, beam, v1::GenerateResponse(), &repaired,
                                      absl::StrCat("/fix", attempt));
        stop.kind != Stop::kNone) {
      return stop;
    }
    pending.clear();
    for (v1::Candidate& c : repaired) {
      cands->push_back(std::move(c));
      if (Repairable(cands->back())) pending.push_back(cands->size() - 1);
    }
  }
  return {};
}

JobRun::Stop JobRun::RecordAttempts(int round, const std::vector<v1::Candidate>& beam,
                                    const std::vector<v1::Candidate>& cands) {
  std::map<std::string, const v1::Candidate*> by_id;
  for (const auto& b : beam) by_id[b.id()] = &b;
  absl::StatusOr<std::vector<v1::Reflexion>> prior = deps_.storage->ListReflexions(job_id_);
  std::set<std::string> reflected;
  if (prior.ok()) {
    for (auto& r : *prior) reflected.insert(r.candidate_id());
  }
  for (const auto& c : cands) {
    absl::Status ss = SaveCandidate(c);
    if (!ss.ok()) return StopFromStatus(ss);
    v1::JobEvent e = CandidateEvent(c, v1::JOB_STATE_ROUNDS);
    e.set_message(absl::StrFormat("%s: %s %.4f ms (%s)", c.id(),
                                  v1::Verdict_Name(c.measurement().verdict()),
                                  c.measurement().candidate().median_ms(),
                                  c.prescription().pattern_id()));
    Emit(e);
    if (reflected.count(c.id())) continue;
    // The endpoint's failure says nothing about the fix: no reflexion, no avoid-list.
    if (c.measurement().verdict() == v1::VERDICT_GENERATION_FAILED) continue;
    auto parent = by_id.find(c.parent_id());
    absl::Status rs = Reflect(round, c, parent == by_id.end() ? nullptr : parent->second);
    if (!rs.ok()) return StopFromStatus(rs);
  }
  return {};
}

std::vector<v1::Reflexion> JobRun::ReadMemory(int* shared_count) {
  std::vector<v1::Reflexion> memory;
  if (shared_count != nullptr) *shared_count = 0;
  if (!UsesReflexionMemory()) return memory;
  absl::StatusOr<std::vector<v1::Reflexion>> own = deps_.storage->ListReflexions(job_id_);
  if (cfg_.share_memory_across_jobs() && !signature_.op_class().empty() && !gpu_.arch().empty()) {
    absl::StatusOr<std::vector<v1::Reflexion>> shared = deps_.storage->ListSharedReflexions(
        {job_.tenant(), signature_.op_class(), gpu_.arch()}, kSharedMemoryRead);
    if (shared.ok()) {
      std::set<std::string> mine;  // this job's own entries come from its own list
      if (own.ok()) {
        for (const v1::Reflexion& r : *own) mine.insert(r.candidate_id());
      }
      for (v1::Reflexion& r : *shared) {
        if (mine.count(r.candidate_id()) != 0) continue;
        memory.push_back(std::move(r));
      }
      if (shared_count != nullptr) *shared_count = static_cast<int>(memory.size());
    }
  }
  if (own.ok()) {
    for (v1::Reflexion& r : *own) memory.push_back(std::move(r));
  }
  return memory;
}

absl::Status JobRun::Reflect(int round, const v1::Candidate& c, const v1::Candidate* parent) {
  v1::ReflectRequest rr;
  rr.set_job_id(job_id_);
  if (parent != nullptr) *rr.mutable_parent() = *parent;
  *rr.mutable_attempt() = c;
  *rr.mutable_gpu() = gpu_;
  for (v1::Reflexion& m : ReadMemory()) *rr.add_memory() = std::move(m);
  SetLlmBudgetLeft(rr);
  SetLlmAgents(rr);
  absl::StatusOr<v1::ReflectResponse> refl = deps_.services->Reflect(rr, cancel_);
  if (refl.ok()) {
    ChargeLlm(refl->llm_usage());
  } else if (std::optional<v1::LlmUsage> u = llm::LlmUsageOf(refl.status())) {
    ChargeLlm(*u);
  }
  if (!refl.ok()) {
    if (Stopping()) return refl.status();
    EmitLog(absl::StrCat("no reflexion for ", c.id(), ": ", refl.status().message()));
    return absl::OkStatus();
  }
  v1::Reflexion r = refl->reflexion();
  r.set_candidate_id(c.id());
  r.set_round(round);
  r.set_worker_index(c.worker_index());
  r.set_parent_id(c.parent_id());
  if (r.pattern_id().empty()) r.set_pattern_id(c.prescription().pattern_id());
  (void)deps_.storage->AppendReflexion(job_id_, r);
  if (cfg_.share_memory_across_jobs() && !signature_.op_class().empty() && !gpu_.arch().empty()) {
    (void)deps_.storage->AppendSharedReflexion({job_.tenant(), signature_.op_class(), gpu_.arch()},
                                               job_id_, r);
  }
  StoreArtifact(absl::StrCat("round-", round, "/", c.id(), "/reflexion.json"), "reflexion", ToPrettyJson(r));
  if (refl->has_exchange()) {
    StoreExchange(absl::StrCat("round-", round, "/", c.id(), "/"), "reflect-", refl->exchange(),
                  absl::StrCat("the reflexion on ", c.id()));
  }
  v1::JobEvent re;
  re.set_type(v1::JOB_EVENT_REFLEXION_WRITTEN);
  re.set_state(v1::JOB_STATE_ROUNDS);
  re.set_round(round);
  *re.mutable_reflexion() = r;
  re.set_message(r.lesson());
  Emit(re);
  return absl::OkStatus();
}

JobRun::Stop JobRun::CloseRound(int round, const std::vector<v1::Candidate>& beam,
                                const std::vector<v1::Candidate>& cands) {
  const BeamUpdate next = UpdateBeam(
      beam, cands,
      {.best_median_ms = ckpt_.best_median_ms(),
       .rounds_without_improvement = ckpt_.rounds_without_improvement()},
      {.width = cfg_.beam_width(), .improvement_threshold = deps_.defaults.improvement_threshold});
  ckpt_.clear_beam_ids();
  for (const auto& id : next.beam_ids) ckpt_.add_beam_ids(id);
  ckpt_.set_completed_round(round);
  ckpt_.set_rounds_without_improvement(next.progress.rounds_without_improvement);
  ckpt_.set_best_median_ms(next.progress.best_median_ms);
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
      rs->set_gpu_seconds_used(j.gpu_seconds_used());  // this write's charges included
    });
  }
  if (!cs.ok()) return StopFromStatus(cs);
  if (deps_.metrics.rounds != nullptr) deps_.metrics.rounds->Add({}).Increment();
  if (deps_.metrics.best_speedup != nullptr) {
    deps_.metrics.best_speedup->Add({{"job_id", job_id_}}).Set(speedup);
  }
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_BEAM_UPDATED);
  e.set_state(v1::JOB_STATE_ROUNDS);
  e.set_round(round);
  e.set_total_rounds(cfg_.budget().max_rounds());
  e.set_best_speedup(speedup);
  e.set_message(absl::StrFormat("round %d: best %.4f ms (%.2fx the start), %d/%d correct%s", round,
                                ckpt_.best_median_ms(), speedup, correct,
                                static_cast<int>(cands.size()), next.improved ? "" : ", no gain"));
  Emit(e);
  return {};
}

}  // namespace kagent
