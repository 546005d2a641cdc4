// Helpers shared by the files of JobRun (job_run.h); not for use elsewhere.
#ifndef KAGENT_SERVICES_COORDINATOR_JOB_RUN_INTERNAL_H_
#define KAGENT_SERVICES_COORDINATOR_JOB_RUN_INTERNAL_H_

#include <functional>
#include <string>

#include "absl/time/time.h"

#include "kagent/v1/common.pb.h"

namespace kagent::job_run_internal {

// The checkpoint key of the job's JobCheckpoint.
inline constexpr char kStateKey[] = "state";

// The CANDIDATE_MEASURED event that announces `c` (its kernel source left out) in
// `state`, at c's round; the caller adds the message.
v1::JobEvent CandidateEvent(const v1::Candidate& c, v1::JobState state);

// Sleeps `d`, waking early when `stopping` turns true.
void SleepUnless(absl::Duration d, const std::function<bool()>& stopping);

}  // namespace kagent::job_run_internal

#endif  // KAGENT_SERVICES_COORDINATOR_JOB_RUN_INTERNAL_H_
