// What `kagent get` and `kagent watch` print (cli.h: PrintJob, WatchPrinter,
// WatchFinishLine): the presentation of a job and of its event stream, apart from the
// commands that fetch them.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>

#include <google/protobuf/util/time_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernel_model/gpu_spec.h"
#include "kernel_model/recommendation.h"
#include "kernel_model/speedup_text.h"
#include "tools/cli.h"
#include "tools/bench.h"
#include "tools/enum_names.h"
#include "tools/report.h"

namespace kagent::cli {

void PrintJob(const v1::Job& j, std::ostream& out) {
  const v1::JobResult& r = j.result();
  const v1::Measurement& b = r.best_measurement();
  out << "job        " << j.id() << "  (" << j.problem().name() << ")\n"
      << "state      " << StateName(j.state());
  if (!j.error().empty()) out << "  error: " << j.error();
  if (!r.stop_reason().empty()) out << "  (" << r.stop_reason() << ")";
  out << "\n";
  if (!r.best_candidate_id().empty()) {
    const v1::Recommendation rec = RecommendationOf(r);
    if (rec.deploy() != v1::DEPLOY_UNSPECIFIED) out << "deploy     " << rec.summary() << "\n";
  }
  out << "round      " << j.current_round() << " of " << j.config().budget().max_rounds() << "\n";
  if (j.config().ablation() != v1::ABLATION_NONE) {
    out << "ablation   " << AblationName(j.config().ablation());
    if (j.config().ablation() == v1::ABLATION_BLIND_SWEEP) {
      out << "  (sweep seed " << j.config().sweep_seed() << ")";
    }
    out << "  (docs/loop.md, \"Ablations\")\n";
  }
  // The report's wording (tools/report.cc): on a CPU worker the held time is the worker's.
  const bool cpu_job = MeasuredOnCpuWorker(b) || MeasuredOnCpuWorker(j.baseline());
  if (cpu_job) {
    out << absl::StrFormat(
        "worker time %.1f worker-seconds (time the job held the CPU worker's slot; no GPU was "
        "used)\n",
        j.gpu_seconds_used());
  } else {
    out << absl::StrFormat("gpu time   %.1f GPU-seconds, GPU busy %s%s\n", j.gpu_seconds_used(),
                           FormatBusyFraction(GpuBusyFraction(j.gpu_busy_seconds_used(),
                                                              j.gpu_seconds_used())),
                           j.config().budget().has_max_gpu_seconds()
                               ? absl::StrFormat("  (budget %.1f GPU-seconds)",
                                                 j.config().budget().max_gpu_seconds())
                               : "");
  }
  out << absl::StrFormat("measured   %d candidates, %s per %s-minute; %d variants screened\n",
                         j.candidates_measured(),
                         FormatPerGpuMinute(CandidatesPerGpuMinute(j.candidates_measured(),
                                                                   j.gpu_seconds_used())),
                         cpu_job ? "worker" : "GPU", j.variants_screened());
  const v1::Budget& budget = j.config().budget();
  if (j.llm_tokens_used() > 0 || j.llm_cost_usd() > 0 || budget.has_max_llm_tokens() ||
      budget.has_max_llm_cost_usd()) {
    out << absl::StrFormat("llm        %d tokens, $%.4f", j.llm_tokens_used(), j.llm_cost_usd());
    if (budget.has_max_llm_tokens() || budget.has_max_llm_cost_usd()) {
      out << "  (budget";
      if (budget.has_max_llm_tokens()) out << absl::StrFormat(" %d tokens", budget.max_llm_tokens());
      if (budget.has_max_llm_cost_usd()) out << absl::StrFormat(" $%.4f", budget.max_llm_cost_usd());
      out << ")";
    }
    out << "\n";
  }
  if (!j.config().llm_agents().empty()) {
    out << "llm agents " << absl::StrJoin(j.config().llm_agents(), ", ")
        << "  (the others heuristic)\n";
  }
  if (j.has_baseline()) {
    out << absl::StrFormat("start      %s %.4f ms  (eager %.4f ms, torch.compile %.4f ms)\n",
                           VerdictName(j.baseline().verdict()), j.baseline().candidate().median_ms(),
                           j.baseline().eager().median_ms(), j.baseline().compiled().median_ms());
  }
  if (!r.trajectory().empty()) {
    // Header, separator and rows share the columns: each '|' of a row is a '+' below the header.
    out << "\n round | best ms    | vs start | correct\n"
        << "-------+------------+----------+--------\n";
    for (const auto& t : r.trajectory()) {
      out << absl::StrFormat(" %5d | %10.4f | %7.2fx | %d/%d\n", t.round(), t.best_median_ms(),
                             t.best_speedup_vs_start(), t.correct(), t.candidates());
    }
  }
  if (!r.best_candidate_id().empty()) {
    out << "\nbest kernel " << r.best_candidate_id() << " (one final run, every time side by side)\n";
    out << absl::StrFormat("  best            %10.4f ms\n", b.candidate().median_ms());
    const bool on_cpu = MeasuredOnCpuWorker(b);
    if (on_cpu) {
      out << "  timings         Triton's interpreter on the CPU: correctness is real, these are not GPU times\n";
    }
    // The lineage starts at the starting kernel: when it is the best, there is no ratio to
    // give. Otherwise the final run timed the start beside the best (the baseline run's
    // median stands in should that run not have timed it).
    const double start_ms = b.reference_kernel().median_ms() > 0
                                ? b.reference_kernel().median_ms()
                                : j.baseline().candidate().median_ms();
    if (r.lineage_size() > 0 && r.lineage(0) == r.best_candidate_id()) {
      out << "  starting kernel the best kernel is the starting kernel: no candidate beat it\n";
    } else if (start_ms > 0 && r.speedup_vs_start() > 0) {
      out << absl::StrFormat("  starting kernel %10.4f ms  -> %s\n", start_ms, FormatSpeedup(r.speedup_vs_start()));
    } else {
      out << "  starting kernel -  (not timed)\n";
    }
    out << absl::StrFormat("  eager PyTorch   %10.4f ms  -> %s\n", b.eager().median_ms(),
                           FormatSpeedup(r.speedup_vs_eager()));
    out << absl::StrFormat("  torch.compile   %10.4f ms  -> %s\n", b.compiled().median_ms(),
                           FormatSpeedup(r.speedup_vs_compile()));
    if (r.roofline_efficiency_pct() > 0) {
      out << absl::StrFormat("  roofline        %.1f%%  (speed of light: the larger of compute and memory SOL)\n",
                             r.roofline_efficiency_pct());
    } else {
      out << "  roofline        n/a  ("
          << (on_cpu ? "no hardware counters under Triton's interpreter" : "the best kernel has no profile")
          << ")\n";
    }
    if (r.roofline_bound_pct() > 0) {
      out << absl::StrFormat("  AI roofline     %.1f%%  (useful work vs the roofline at the op's arithmetic intensity)\n",
                             r.roofline_bound_pct());
    } else {
      out << "  AI roofline     n/a  (the op signature gave no FLOPs and bytes)\n";
    }
    for (const auto& m : r.extra_shapes()) {
      double med = m.candidate().median_ms();
      out << absl::StrFormat("  shape %-10s %s %.4f ms, %s, %s\n", m.shape_set(),
                             VerdictName(m.verdict()), med,
                             FormatVersus(med > 0 ? m.eager().median_ms() / med : 0, "eager"),
                             FormatVersus(med > 0 ? m.compiled().median_ms() / med : 0,
                                          "torch.compile"));
    }
    // What the harness said a user should know about the final run (a wide trial passed
    // only against the float64 reference, ...).
    for (const std::string& w : b.warnings()) out << "  warning         " << w << "\n";
    out << "  lineage: ";
    for (int i = 0; i < r.lineage_size(); ++i) out << (i ? " -> " : "") << r.lineage(i);
    out << "\n  source: kagent get " << j.id() << " --kernel-out best.py   or   kagent export "
        << j.id() << " DIR\n";
  }
}

WatchPrinter::WatchPrinter(std::ostream& out, bool tty) : out_(out), tty_(tty) {}

std::string WatchPrinter::Bar() const {
  constexpr int kWidth = 30;
  int done = total_ > 0 ? std::min(kWidth, kWidth * round_ / total_) : 0;
  return absl::StrCat("[", std::string(done, '#'), std::string(kWidth - done, '.'), "] round ",
                      round_, "/", total_,
                      absl::StrFormat("  best %.2fx  measured %d", best_, measured_));
}

void WatchPrinter::Print(const v1::JobEvent& e) {
  if (e.total_rounds() > 0) total_ = e.total_rounds();
  if (e.round() > 0) round_ = e.round();
  if (e.best_speedup() > 0) best_ = e.best_speedup();
  std::string line;
  switch (e.type()) {
    case v1::JOB_EVENT_CANDIDATE_MEASURED: {
      ++measured_;
      const v1::Candidate& cand = e.candidate();
      // A candidate of no round and no prescription is the starting kernel (its baseline).
      std::string what = cand.prescription().pattern_id();
      if (what.empty() && cand.round() == 0 && cand.parent_id().empty()) what = "starting kernel";
      const v1::Measurement& m = cand.measurement();
      std::string ms = m.candidate().median_ms() > 0
                           ? absl::StrFormat("%10.4f ms", m.candidate().median_ms())
                           : absl::StrFormat("%13s", "-");
      line = absl::StrFormat("  %-28s %-14s %s", cand.id(), VerdictName(m.verdict()), ms);
      if (!what.empty()) absl::StrAppend(&line, "  ", what);
      break;
    }
    case v1::JOB_EVENT_REFLEXION_WRITTEN:
      line = "    reflexion: " + e.message();
      break;
    default:
      line = absl::StrCat("#", e.sequence(), " ", e.message());
  }
  if (tty_) out_ << "\r\033[K";
  out_ << line << "\n";
  if (tty_) out_ << Bar();
  out_ << std::flush;  // progress shows at once in pipes and logs too
  if (e.type() == v1::JOB_EVENT_JOB_FINISHED) final_state_ = e.state();
}

void WatchPrinter::Finish() {
  if (tty_) out_ << "\r\033[K" << Bar() << "\n";
}

std::string WatchFinishLine(const std::string& job_id, v1::JobState state, const v1::Job* job) {
  std::string line = absl::StrCat("job ", job_id, " ", StateName(state));
  if (state != v1::JOB_STATE_DONE || job == nullptr || job->result().best_candidate_id().empty()) {
    return line;
  }
  const v1::Recommendation rec = RecommendationOf(job->result());
  if (rec.deploy() == v1::DEPLOY_UNSPECIFIED) return line;
  return absl::StrCat(line, ": ", rec.summary());
}

}  // namespace kagent::cli
