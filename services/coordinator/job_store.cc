#include "services/coordinator/job_store.h"

#include <google/protobuf/util/time_util.h>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace kagent {

bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_DONE || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

absl::StatusOr<v1::Job> MutateJob(Storage& storage, const std::string& job_id,
                                  const std::function<absl::Status(v1::Job&)>& mutate) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    KAGENT_ASSIGN_OR_RETURN(StoredJob stored, storage.GetJob(job_id));
    v1::Job job = stored.job;
    KAGENT_RETURN_IF_ERROR(mutate(job));
    *job.mutable_updated_at() = google::protobuf::util::TimeUtil::GetCurrentTime();
    absl::StatusOr<int64_t> rev = storage.UpdateJob(job, stored.revision);
    if (rev.ok()) return job;
    if (rev.status().code() != absl::StatusCode::kAborted) return rev.status();
  }
  return absl::AbortedError(absl::StrCat("job ", job_id, " is being updated concurrently"));
}

}  // namespace kagent
