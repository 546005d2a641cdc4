// JobRun's Generate calls when the brain's LLM endpoint fails (job_run.h): the job waits
// for the endpoint, or fails saying it is the endpoint's fault, instead of recording every
// assignment as a failed kernel.
#include "services/coordinator/job_run.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "services/coordinator/job_run_internal.h"

namespace kagent {

namespace {

// What a Generate reply says about the brain's LLM endpoint.
struct EndpointTrouble {
  int failed = 0;     // kernels with an endpoint failure
  int generated = 0;  // kernels that came back
  bool permanent = false;
  absl::Duration retry_after = absl::ZeroDuration();
  std::string message;  // the first failure's
};

EndpointTrouble TroubleOf(const v1::GenerateResponse& r) {
  EndpointTrouble t;
  for (const v1::GeneratedKernel& k : r.kernels()) {
    if (!k.kernel().source().empty()) ++t.generated;
    if (!k.has_endpoint_failure()) continue;
    const v1::LlmEndpointFailure& f = k.endpoint_failure();
    if (t.failed++ == 0) t.message = f.message();
    t.permanent = t.permanent || f.permanent();
    t.retry_after = std::max(t.retry_after, absl::Seconds(f.retry_after_seconds()));
  }
  return t;
}

}  // namespace

absl::StatusOr<v1::GenerateResponse> JobRun::GenerateAwaitingEndpoint(v1::GenerateRequest g,
                                                                      const std::string& what) {
  const absl::Time wall_end = absl::FromUnixSeconds(job_.created_at().seconds()) +
                              absl::Seconds(cfg_.budget().max_wall_seconds());
  absl::Duration backoff = absl::Seconds(deps_.defaults.llm_retry_backoff_seconds);
  absl::Time outage_start = absl::InfiniteFuture();
  for (int attempt = 1;; ++attempt) {
    SetLlmBudgetLeft(g);  // what the earlier attempts left
    absl::StatusOr<v1::GenerateResponse> r = CallCharged<v1::GenerateResponse>(
        "optimization manager", [&] { return deps_.services->Generate(g, cancel_); });
    if (!r.ok()) return r;
    const EndpointTrouble t = TroubleOf(*r);
    if (t.failed == 0 || t.generated > 0) {
      if (t.failed > 0) {
        EmitLog(absl::StrCat("the LLM endpoint failed for ", t.failed, " of ",
                             r->kernels_size(), " assignments of ", what, ": ", t.message,
                             "; going on with the kernels that came back"));
      } else if (attempt > 1) {
        EmitLog(absl::StrCat("the LLM endpoint answered again (", what, ", attempt ", attempt,
                             ")"));
      }
      return r;
    }
    // Not one kernel, and the endpoint is at fault: no candidate is a verdict on a fix.
    if (t.permanent) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the LLM endpoint cannot serve this job (the model is not served or the key is "
          "refused; no kernel was at fault): ",
          t.message));
    }
    const absl::Time now = absl::Now();
    if (outage_start == absl::InfiniteFuture()) outage_start = now;
    const absl::Duration wait = std::max(backoff, t.retry_after);
    if (now + wait > wall_end) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the LLM endpoint is unavailable and waiting %.0f s more for it would pass the "
          "job's wall-time budget (%.0f s); no kernel was at fault: %s",
          absl::ToDoubleSeconds(wait), cfg_.budget().max_wall_seconds(), t.message));
    }
    // A Retry-After is waited for in full (within the wall budget); the backoff only
    // while the outage is younger than llm_outage_seconds.
    if (t.retry_after == absl::ZeroDuration() &&
        now + wait - outage_start > absl::Seconds(deps_.defaults.llm_outage_seconds)) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the LLM endpoint stayed unavailable for %.0f s (%d attempts); no kernel was at "
          "fault: %s",
          absl::ToDoubleSeconds(now - outage_start), attempt, t.message));
    }
    EmitLog(absl::StrCat("the LLM endpoint failed for every assignment of ", what, ": ",
                         t.message, "; generation paused, asking again in ",
                         absl::FormatDuration(wait),
                         t.retry_after > absl::ZeroDuration() ? " (the provider's Retry-After)"
                                                               : ""));
    job_run_internal::SleepUnless(wait, [this] { return Stopping(); });
    if (Stopping()) return absl::CancelledError("stopping");
    backoff = std::min(backoff * 2, absl::Seconds(60));
  }
}

}  // namespace kagent
