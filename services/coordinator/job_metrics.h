// The coordinator's job metrics (kagent_jobs*, kagent_rounds_total, kagent_candidates_total,
// kagent_job_*_total, kagent_storage_failures_total): the families JobManager and JobRun
// update, registered once per registry.
//
// Plain pointers into the registry: they are null when there is no registry (then nothing
// is counted) and are valid as long as the registry lives. prometheus-cpp families and
// their series are thread-safe.
#ifndef KAGENT_SERVICES_COORDINATOR_JOB_METRICS_H_
#define KAGENT_SERVICES_COORDINATOR_JOB_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "absl/status/status.h"

namespace kagent {

struct JobMetrics {
  // Registers every family in `registry` and creates each known series at 0 (so a scrape
  // shows 0, not "No data"). A null `registry` gives all-null families.
  static JobMetrics Register(prometheus::Registry* registry);

  // Adds 1 to kagent_storage_failures_total{operation} when `status` is a storage failure
  // (IsStorageFailure).
  void CountStorageFailure(const absl::Status& status, const char* operation) const;

  prometheus::Family<prometheus::Counter>* jobs_finished = nullptr;
  prometheus::Family<prometheus::Counter>* jobs_submitted = nullptr;
  // Storage failures met, by operation: "submit" (a SubmitJob that stored nothing), "step"
  // (a job's step, run again), "fail" (storing a job's FAILED state, retried).
  prometheus::Family<prometheus::Counter>* storage_failures = nullptr;
  prometheus::Family<prometheus::Gauge>* jobs_running = nullptr;
  prometheus::Family<prometheus::Counter>* rounds = nullptr;
  prometheus::Family<prometheus::Counter>* candidates = nullptr;
  prometheus::Family<prometheus::Gauge>* best_speedup = nullptr;
  prometheus::Family<prometheus::Counter>* gpu_seconds = nullptr;
  prometheus::Family<prometheus::Counter>* llm_tokens = nullptr;
  prometheus::Family<prometheus::Counter>* llm_cost = nullptr;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_JOB_METRICS_H_
