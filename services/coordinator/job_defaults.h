// The coordinator's per-job defaults (JobManager::EffectiveConfig fills unset config
// fields from them) and the limits a job's run works under (retries, trials). Plain data.
#ifndef KAGENT_SERVICES_COORDINATOR_JOB_DEFAULTS_H_
#define KAGENT_SERVICES_COORDINATOR_JOB_DEFAULTS_H_

namespace kagent {

// The pattern id of round 1's library seed: the brain's own kernel for the op, measured
// beside the fixes to a user's starting kernel (not an optimization-database pattern).
inline constexpr char kLibrarySeedPattern[] = "library-seed";

struct JobDefaults {
  int beam_width = 2;
  int fixes_per_kernel = 2;
  int max_rounds = 5;
  int plateau_rounds = 2;
  double target_efficiency_pct = 90;
  double max_wall_seconds = 4 * 3600;
  double improvement_threshold = 0.01;  // "no gain above 1%"
  int max_concurrent_jobs = 4;
  int correctness_trials = 5;
  int timing_reps = 100;
  // MeasureRequest.timing_budget_ms: 0 the harness's default, negative none.
  double timing_budget_ms = 0;
  // A judge/analyzer/orchestrator/optimization-manager call that fails in transit
  // (UNAVAILABLE or DEADLINE_EXCEEDED: its host restarting, unreachable or cut off) is made
  // again, with backoff from `service_retry_backoff_seconds` doubling up to 15 s, for up to
  // this long after the first attempt; only then does it fail the job.
  double service_retry_seconds = 300;
  double service_retry_backoff_seconds = 1;
  // A job step that fails on storage (IsStorageFailure) runs again, with backoff from
  // `storage_retry_backoff_seconds` doubling up to 15 s, for up to this long; then the job
  // fails (see job_manager.h).
  double storage_retry_seconds = 300;
  double storage_retry_backoff_seconds = 1;
  // A Generate whose every assignment failed on the brain's LLM endpoint (unavailable,
  // rate or quota limits outlasting the client's retries) is made again, with backoff from
  // `llm_retry_backoff_seconds` doubling up to 60 s (or the provider's Retry-After), for up
  // to this long (a Retry-After is waited for in full), within the job's wall budget; then
  // the job fails saying the LLM endpoint is at fault (job_run.h).
  double llm_outage_seconds = 600;
  double llm_retry_backoff_seconds = 5;
  // Repair turns per failing LLM-written candidate within its round (--llm-repairs).
  int llm_repairs = 1;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_JOB_DEFAULTS_H_
