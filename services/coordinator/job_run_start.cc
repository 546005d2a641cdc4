// JobRun's start (job_run.h): the baseline, the brain's first kernel, round 1's library seed.
#include "services/coordinator/job_run.h"

#include <algorithm>
#include <utility>

#include <google/protobuf/util/time_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/source_text.h"
#include "common/status.h"
#include "kernel_model/gpu_spec.h"
#include "services/coordinator/job_run_internal.h"

namespace kagent {

using google::protobuf::util::TimeUtil;
using job_run_internal::CandidateEvent;
using job_run_internal::kStateKey;

JobRun::Stop JobRun::Baseline() {
  v1::KernelSource start = job_.start_kernel();
  const bool from_brain = start.source().empty();
  if (from_brain) {
    // The brain writes the first kernel for the reference's op, so the op signature comes
    // first: a run of the reference alone (eager and torch.compile) records it.
    if (Stop s = RecordReferenceSignature(); s.kind != Stop::kNone) return s;
    EmitLog("no starting kernel: asking the brain for a first correct kernel");
    // Its variants are not screened: the start is the job's reference point as the brain
    // wrote it (round 1's library seed is the brain's kernel too, and is screened).
    absl::StatusOr<v1::GeneratedKernel> first =
        FirstKernel(absl::StrCat("round-0/", job_id_, "-c0/"));
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
  if (Stop stop = CheckStartKernel(c); stop.kind != Stop::kNone) return stop;
  ckpt_.set_completed_round(0);
  ckpt_.clear_beam_ids();
  ckpt_.add_beam_ids(c.id());
  ckpt_.set_start_candidate_id(c.id());
  ckpt_.set_start_median_ms(m->candidate().median_ms());
  ckpt_.set_best_median_ms(m->candidate().median_ms());
  ckpt_.set_start_from_brain(from_brain);
  absl::Status ps = deps_.storage->RunInTransaction([&](Storage& tx) -> absl::Status {
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

JobRun::Stop JobRun::RecordReferenceSignature() {
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
  reference_gpu_name_ = ref->gpu_name();
  return {};
}

JobRun::Stop JobRun::CheckStartKernel(const v1::Candidate& c) {
  const v1::Measurement& m = c.measurement();
  v1::JobEvent e = CandidateEvent(c, v1::JOB_STATE_BASELINE);
  e.set_message(absl::StrFormat("starting kernel: %s, %.4f ms (eager %.4f ms, compile %.4f ms)",
                                v1::Verdict_Name(m.verdict()), m.candidate().median_ms(),
                                m.eager().median_ms(), m.compiled().median_ms()));
  Emit(e);
  if (m.verdict() == v1::VERDICT_INFRA_ERROR) {
    // Not the kernel's fault, and the scheduler has spent its attempts on other workers.
    return {Stop::kFailed, absl::StrCat("the starting kernel could not be measured: ",
                                        m.correctness().reason())};
  }
  if (m.verdict() != v1::VERDICT_CORRECT) {
    return {Stop::kFailed,
            absl::StrCat("the starting kernel failed the correctness gate: ",
                         v1::Verdict_Name(m.verdict()), ": ", m.correctness().reason())};
  }
  return {};
}

absl::StatusOr<v1::GeneratedKernel> JobRun::FirstKernel(const std::string& artifact_dir) {
  EnsureGpuSpec();
  v1::GenerateRequest g;
  g.set_job_id(job_id_);
  *g.mutable_problem() = job_.problem();
  *g.mutable_op_signature() = signature_;
  if (!gpu_.name().empty()) {
    *g.mutable_gpu() = gpu_;
  } else if (reference_gpu_name_ == kCpuWorkerGpuName) {
    *g.mutable_gpu() = CpuWorkerGpuSpec();  // an LLM brain's prompt then says so
  }
  g.set_brain(cfg_.brain());
  absl::StatusOr<v1::GenerateResponse> r = GenerateAwaitingEndpoint(g, "the first kernel");
  if (!r.ok()) return r.status();
  for (const auto& gk : r->kernels()) {
    if (!gk.prompt().empty()) StoreArtifact(artifact_dir + "prompt.txt", "prompt", gk.prompt());
    if (!gk.reply().empty()) StoreArtifact(artifact_dir + "reply.txt", "reply", gk.reply());
  }
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
  absl::StatusOr<v1::Candidate> start = deps_.storage->GetCandidate(ckpt_.start_candidate_id());
  if (start.ok() && MeasuredOnCpuWorker(start->measurement())) {
    // The seed is a speed move, and interpreter timings do not rank kernels; a template
    // sized for a GPU's grid can take many minutes there.
    EmitLog("no library seed: the job runs on a CPU worker (Triton's interpreter)");
    return;
  }
  int index = 0;
  for (const auto& c : rc->candidates()) index = std::max(index, c.worker_index() + 1);
  const std::string id = absl::StrCat(job_id_, "-r", rc->round(), "-w", index);
  absl::StatusOr<v1::GeneratedKernel> generated =
      FirstKernel(absl::StrCat("round-", rc->round(), "/", id, "/"));
  if (!generated.ok()) {
    EmitLog(absl::StrCat("no library seed: ", generated.status().message()));
    return;
  }
  v1::KernelSource* k = generated->mutable_kernel();
  if (start.ok() && NormalizeSource(start->kernel().source()) == NormalizeSource(k->source())) {
    EmitLog("no library seed: the brain's kernel for the op is the starting kernel");
    return;
  }
  v1::Candidate c;
  c.set_id(id);
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

}  // namespace kagent
