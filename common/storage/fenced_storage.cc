#include "common/storage/fenced_storage.h"

#include <optional>
#include <type_traits>
#include <utility>

#include "common/status.h"

namespace kagent {

template <typename Fn>
auto FencedStorage::Fenced(Fn write) -> decltype(write(std::declval<Storage&>())) {
  std::optional<decltype(write(std::declval<Storage&>()))> result;
  absl::Status status = inner_->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(fence_(tx));
    result.emplace(write(tx));
    // A failed write rolls the transaction back; its own status is the answer.
    if constexpr (std::is_same_v<decltype(write(tx)), absl::Status>) {
      return *result;
    } else {
      return result->status();
    }
  });
  if (!status.ok()) {
    // The fence failed, the write failed (its status, which `result` holds too), or the
    // commit failed.
    return status;
  }
  return *std::move(result);
}

#define KAGENT_FENCED(call) return Fenced([&](Storage& tx) { return tx.call; })

absl::StatusOr<CreateJobResult> FencedStorage::CreateJob(const v1::Job& job,
                                                         absl::string_view idempotency_key) {
  KAGENT_FENCED(CreateJob(job, idempotency_key));
}
absl::StatusOr<StoredJob> FencedStorage::GetJob(absl::string_view job_id) {
  return inner_->GetJob(job_id);
}
absl::StatusOr<int64_t> FencedStorage::UpdateJob(const v1::Job& job, int64_t expected_revision) {
  KAGENT_FENCED(UpdateJob(job, expected_revision));
}
absl::StatusOr<JobPage> FencedStorage::ListJobs(const ListJobsQuery& query) {
  return inner_->ListJobs(query);
}
absl::StatusOr<std::vector<StoredJob>> FencedStorage::ListUnfinishedJobs() {
  return inner_->ListUnfinishedJobs();
}
absl::Status FencedStorage::DeleteJob(absl::string_view job_id) {
  KAGENT_FENCED(DeleteJob(job_id));
}
absl::StatusOr<int64_t> FencedStorage::AppendEvent(absl::string_view job_id,
                                                   const v1::JobEvent& event) {
  KAGENT_FENCED(AppendEvent(job_id, event));
}
absl::StatusOr<std::vector<v1::JobEvent>> FencedStorage::ListEvents(absl::string_view job_id,
                                                                    int64_t from_sequence,
                                                                    int limit) {
  return inner_->ListEvents(job_id, from_sequence, limit);
}
absl::Status FencedStorage::PutCandidate(const v1::Candidate& candidate) {
  KAGENT_FENCED(PutCandidate(candidate));
}
absl::StatusOr<v1::Candidate> FencedStorage::GetCandidate(absl::string_view candidate_id) {
  return inner_->GetCandidate(candidate_id);
}
absl::StatusOr<std::vector<v1::Candidate>> FencedStorage::ListCandidates(
    absl::string_view job_id, std::optional<int32_t> round) {
  return inner_->ListCandidates(job_id, round);
}
absl::StatusOr<std::string> FencedStorage::PutTaskResult(absl::string_view job_id,
                                                         absl::string_view task_id,
                                                         absl::string_view result) {
  KAGENT_FENCED(PutTaskResult(job_id, task_id, result));
}
absl::StatusOr<std::string> FencedStorage::GetTaskResult(absl::string_view task_id) {
  return inner_->GetTaskResult(task_id);
}
absl::StatusOr<int64_t> FencedStorage::AppendReflexion(absl::string_view job_id,
                                                       const v1::Reflexion& reflexion) {
  KAGENT_FENCED(AppendReflexion(job_id, reflexion));
}
absl::StatusOr<std::vector<v1::Reflexion>> FencedStorage::ListReflexions(
    absl::string_view job_id) {
  return inner_->ListReflexions(job_id);
}
absl::Status FencedStorage::AppendSharedReflexion(const SharedMemoryKey& key,
                                                  absl::string_view source_job_id,
                                                  const v1::Reflexion& reflexion) {
  KAGENT_FENCED(AppendSharedReflexion(key, source_job_id, reflexion));
}
absl::StatusOr<std::vector<v1::Reflexion>> FencedStorage::ListSharedReflexions(
    const SharedMemoryKey& key, int limit) {
  return inner_->ListSharedReflexions(key, limit);
}
absl::Status FencedStorage::PutArtifact(absl::string_view job_id, const v1::Artifact& artifact) {
  KAGENT_FENCED(PutArtifact(job_id, artifact));
}
absl::StatusOr<v1::Artifact> FencedStorage::GetArtifact(absl::string_view job_id,
                                                        absl::string_view name) {
  return inner_->GetArtifact(job_id, name);
}
absl::StatusOr<std::vector<v1::Artifact>> FencedStorage::ListArtifacts(absl::string_view job_id,
                                                                       absl::string_view prefix,
                                                                       bool include_content) {
  return inner_->ListArtifacts(job_id, prefix, include_content);
}
absl::Status FencedStorage::PutCheckpoint(absl::string_view job_id, absl::string_view key,
                                          absl::string_view value) {
  KAGENT_FENCED(PutCheckpoint(job_id, key, value));
}
absl::StatusOr<std::string> FencedStorage::GetCheckpoint(absl::string_view job_id,
                                                         absl::string_view key) {
  return inner_->GetCheckpoint(job_id, key);
}
absl::StatusOr<LeaderLease> FencedStorage::AcquireLease(absl::string_view name,
                                                       absl::string_view holder,
                                                       absl::string_view address,
                                                       absl::Duration ttl) {
  return inner_->AcquireLease(name, holder, address, ttl);
}
absl::StatusOr<LeaderLease> FencedStorage::GetLease(absl::string_view name) {
  return inner_->GetLease(name);
}
absl::Status FencedStorage::CheckLease(absl::string_view name, absl::string_view holder,
                                       int64_t term) {
  return inner_->CheckLease(name, holder, term);
}
absl::Status FencedStorage::ReleaseLease(absl::string_view name, absl::string_view holder,
                                         int64_t term) {
  return inner_->ReleaseLease(name, holder, term);
}
absl::Status FencedStorage::RunInTransaction(absl::FunctionRef<absl::Status(Storage&)> body) {
  return inner_->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(fence_(tx));
    return body(tx);
  });
}
absl::StatusOr<int64_t> FencedStorage::SchemaVersion() { return inner_->SchemaVersion(); }

}  // namespace kagent
