#include "services/coordinator/job_metrics.h"

#include "common/storage/storage.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

JobMetrics JobMetrics::Register(prometheus::Registry* registry) {
  JobMetrics m;
  if (registry == nullptr) return m;
  m.jobs_submitted = &prometheus::BuildCounter()
                          .Name("kagent_jobs_submitted_total")
                          .Help("Jobs accepted by SubmitJob.")
                          .Register(*registry);
  m.storage_failures = &prometheus::BuildCounter()
                            .Name("kagent_storage_failures_total")
                            .Help(
                                "Storage failures (disk full, database unreachable, I/O) the "
                                "coordinator met, by operation: submit, step, fail.")
                            .Register(*registry);
  m.jobs_finished = &prometheus::BuildCounter()
                         .Name("kagent_jobs_finished_total")
                         .Help("Jobs that reached a final state, by state.")
                         .Register(*registry);
  m.jobs_running = &prometheus::BuildGauge()
                        .Name("kagent_jobs")
                        .Help("Jobs known to this coordinator process, by state.")
                        .Register(*registry);
  m.rounds = &prometheus::BuildCounter()
                  .Name("kagent_rounds_total")
                  .Help("Optimization rounds completed.")
                  .Register(*registry);
  m.candidates = &prometheus::BuildCounter()
                      .Name("kagent_candidates_total")
                      .Help("Candidates measured, by verdict.")
                      .Register(*registry);
  m.best_speedup = &prometheus::BuildGauge()
                        .Name("kagent_job_best_speedup")
                        .Help("Best speedup over the starting kernel of running jobs.")
                        .Register(*registry);
  m.gpu_seconds = &prometheus::BuildCounter()
                       .Name("kagent_job_gpu_seconds_total")
                       .Help("GPU-seconds spent on jobs' measurements and profiles.")
                       .Register(*registry);
  m.llm_tokens =
      &prometheus::BuildCounter()
           .Name("kagent_job_llm_tokens_total")
           .Help("LLM tokens (input + output) spent on jobs, as the services report them.")
           .Register(*registry);
  m.llm_cost = &prometheus::BuildCounter()
                    .Name("kagent_job_llm_cost_usd_total")
                    .Help("LLM cost in US dollars spent on jobs, as the services report it.")
                    .Register(*registry);
  m.jobs_running->Add({{"state", "running"}}).Set(0);
  m.jobs_running->Add({{"state", "queued"}}).Set(0);
  // Every known series exists from the start, so a scrape shows 0, not "No data".
  m.jobs_submitted->Add({});
  for (const char* op : {"submit", "step", "fail"}) m.storage_failures->Add({{"operation", op}});
  for (const char* state : {"DONE", "FAILED", "CANCELLED"})
    m.jobs_finished->Add({{"state", state}});
  m.rounds->Add({});
  for (int v = v1::Verdict_MIN + 1; v <= v1::Verdict_MAX; ++v) {
    if (v1::Verdict_IsValid(v)) {
      m.candidates->Add({{"verdict", v1::Verdict_Name(static_cast<v1::Verdict>(v))}});
    }
  }
  m.gpu_seconds->Add({});
  m.llm_tokens->Add({});
  m.llm_cost->Add({});
  return m;
}

void JobMetrics::CountStorageFailure(const absl::Status& status, const char* operation) const {
  if (storage_failures != nullptr && IsStorageFailure(status)) {
    storage_failures->Add({{"operation", operation}}).Increment();
  }
}

}  // namespace kagent
