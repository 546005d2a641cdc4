// Read-modify-write of a stored job, shared by JobManager (Cancel) and JobRun (Persist).
//
// Stateless; thread-safe as far as `storage` is (writes are guarded by the job's
// revision, so concurrent writers retry rather than overwrite each other).
#ifndef KAGENT_SERVICES_COORDINATOR_JOB_STORE_H_
#define KAGENT_SERVICES_COORDINATOR_JOB_STORE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "common/storage/storage.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// DONE, FAILED or CANCELLED.
bool IsTerminal(v1::JobState s);

// Re-reads job `job_id`, applies `mutate` (an error from it is returned and nothing is
// written), stamps updated_at and writes it with the revision read; on a concurrent
// update (ABORTED) it starts over, up to 20 times. Returns the job as written.
absl::StatusOr<v1::Job> MutateJob(Storage& storage, const std::string& job_id,
                                  const std::function<absl::Status(v1::Job&)>& mutate);

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_JOB_STORE_H_
