// JobRun's finish (job_run.h): the beam verified again, the result stored.
#include "services/coordinator/job_run.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/proto_json.h"
#include "kernel_model/recommendation.h"
#include "kernel_model/roofline.h"
#include "kernel_model/speedup_text.h"
#include "services/coordinator/job_run_internal.h"

namespace kagent {

namespace {


// Whether the starting kernel's baseline run can stand as its final run: it passed the
// gate and was timed beside eager and torch.compile in that run.
bool StartRunIsFinal(const v1::Measurement& m) {
  return m.verdict() == v1::VERDICT_CORRECT && m.candidate().median_ms() > 0 &&
         m.eager().median_ms() > 0 && m.compiled().median_ms() > 0;
}

// Candidate `id` and its parents back to the start, the start first.
std::vector<std::string> Lineage(Storage& storage, const std::string& id) {
  std::vector<std::string> lineage;
  std::string cur = id;
  for (int guard = 0; !cur.empty() && guard < 10000; ++guard) {
    lineage.insert(lineage.begin(), cur);
    absl::StatusOr<v1::Candidate> c = storage.GetCandidate(cur);
    if (!c.ok()) break;
    cur = c->parent_id();
  }
  return lineage;
}

}  // namespace

JobRun::Stop JobRun::Finish(const std::string& stop_reason) {
  absl::StatusOr<v1::Candidate> start = deps_.storage->GetCandidate(ckpt_.start_candidate_id());
  if (IsStorageFailure(start.status())) return StopFromStatus(start.status());
  if (!start.ok()) return {Stop::kFailed, "starting kernel lost: " + std::string(start.status().message())};
  // Verify every beam kernel again, each timed with the start kernel, eager and compile
  // in one run; the fastest that passes is the result (its speedups are ratios from its
  // own final run).
  v1::Candidate best;
  v1::Measurement final_m;
  if (Stop stop = VerifyBeam(*start, &best, &final_m); stop.kind != Stop::kNone) return stop;
  StoreArtifact("final/measurement.json", "measurement", ToPrettyJson(final_m));
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
  const std::vector<std::string> lineage = Lineage(*deps_.storage, best.id());
  auto ratio = [](double a, double b) { return (a > 0 && b > 0) ? a / b : 0.0; };
  double med = final_m.candidate().median_ms();
  double ref = final_m.reference_kernel().median_ms() > 0 ? final_m.reference_kernel().median_ms()
                                                          : start->measurement().candidate().median_ms();
  EnsureGpuSpec();  // no profile may have succeeded: the table's entry for the GPU
  // The best kernel of the last round was measured, not profiled: its roofline at the
  // final run's median.
  const double final_roofline = RooflinePctAt(signature_, gpu_, med);
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
    // What to deploy: the kernel only when it beat eager and torch.compile in its own
    // final run; else the job still ends DONE and says which PyTorch path to keep.
    *r->mutable_recommendation() = Recommend(final_m);
    r->set_op_class(signature_.op_class());
    j.set_state(v1::JOB_STATE_DONE);
  });
  if (!s.ok()) return StopFromStatus(s);
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_JOB_FINISHED);
  e.set_state(v1::JOB_STATE_DONE);
  e.set_round(job_.current_round());
  e.set_best_speedup(job_.result().speedup_vs_start());
  const v1::JobResult& res = job_.result();
  e.set_message(absl::StrFormat("done (%s): best %.4f ms, %s, %s, %s; %s", stop_reason, med,
                                FormatVersus(res.speedup_vs_start(), "the start"),
                                FormatVersus(res.speedup_vs_eager(), "eager"),
                                FormatVersus(res.speedup_vs_compile(), "torch.compile"),
                                res.recommendation().summary()));
  Emit(e);
  if (deps_.metrics.jobs_finished != nullptr) {
    deps_.metrics.jobs_finished->Add({{"state", "DONE"}}).Increment();
  }
  return {};
}

JobRun::Stop JobRun::VerifyBeam(const v1::Candidate& start, v1::Candidate* best,
                                v1::Measurement* final_m) {
  bool found = false;
  std::string infra;  // the last final run that failed on the infrastructure, and why
  for (const std::string& id : ckpt_.beam_ids()) {
    absl::StatusOr<v1::Candidate> c = deps_.storage->GetCandidate(id);
    if (IsStorageFailure(c.status())) return StopFromStatus(c.status());
    if (!c.ok()) continue;
    absl::StatusOr<v1::Measurement> m;
    if (id == start.id() && StartRunIsFinal(start.measurement())) {
      // The starting kernel's baseline run already timed it beside eager and
      // torch.compile after its gate: a final run would repeat exactly that.
      m = start.measurement();
      EmitLog(absl::StrCat("final figures of ", id, " (the starting kernel): its baseline run"));
    } else {
      m = Measure(absl::StrCat(job_id_, "/final/", id), c->kernel(), /*baselines=*/true, "",
                  &start.kernel());
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
    // The beam is fastest first (by its rounds): the first kernel that passes its final
    // run is the result, and the slower ones are not run again (each final run held the
    // GPU about 4 s on the H200, two per job at the default beam).
    *best = *c;
    *final_m = *m;
    found = true;
    break;
  }
  if (!found && !infra.empty()) {
    return {Stop::kFailed, absl::StrCat("the final verification could not be measured: ", infra)};
  }
  if (!found) return {Stop::kFailed, "no kernel passed the final verification"};
  // The result is never slower than the starting kernel in its own final run: when the
  // start, timed beside the best kernel, was faster, the start is the result, with the
  // figures of its baseline run (every ratio again from one run).
  const double start_ms = final_m->reference_kernel().median_ms();
  if (best->id() != start.id() && start_ms > 0 && start_ms < final_m->candidate().median_ms() &&
      StartRunIsFinal(start.measurement())) {
    EmitLog(absl::StrFormat(
        "final run: %s took %.4f ms, slower than the starting kernel's %.4f ms in the same "
        "run; the result is the starting kernel",
        best->id(), final_m->candidate().median_ms(), start_ms));
    *best = start;
    *final_m = start.measurement();
  }
  return {};
}

}  // namespace kagent
