#include "common/storage/forwarding_storage.h"

#include <utility>

#include "common/status.h"

namespace kagent::storage {

absl::Status ForwardingStorage::CheckNotReentrant() const {
  if (transaction_thread_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    return absl::FailedPreconditionError(
        "Storage called from inside its own RunInTransaction body; use the Storage& "
        "passed to the body");
  }
  return absl::OkStatus();
}

template <typename Fn>
auto ForwardingStorage::Forward(Fn fn) -> decltype(fn(std::declval<Storage&>())) {
  KAGENT_RETURN_IF_ERROR(CheckNotReentrant());
  std::optional<decltype(fn(std::declval<Storage&>()))> result;
  KAGENT_RETURN_IF_ERROR(WithConnection([&](Storage& connection) {
    result.emplace(fn(connection));
    return absl::OkStatus();
  }));
  return *std::move(result);
}

#define KAGENT_FORWARD(call) \
  return Forward([&](Storage& connection) { return connection.call; })

absl::StatusOr<CreateJobResult> ForwardingStorage::CreateJob(
    const v1::Job& job, absl::string_view idempotency_key) {
  KAGENT_FORWARD(CreateJob(job, idempotency_key));
}
absl::StatusOr<StoredJob> ForwardingStorage::GetJob(absl::string_view job_id) {
  KAGENT_FORWARD(GetJob(job_id));
}
absl::StatusOr<int64_t> ForwardingStorage::UpdateJob(const v1::Job& job,
                                                     int64_t expected_revision) {
  KAGENT_FORWARD(UpdateJob(job, expected_revision));
}
absl::StatusOr<JobPage> ForwardingStorage::ListJobs(const ListJobsQuery& query) {
  KAGENT_FORWARD(ListJobs(query));
}
absl::StatusOr<std::vector<StoredJob>> ForwardingStorage::ListUnfinishedJobs() {
  KAGENT_FORWARD(ListUnfinishedJobs());
}
absl::Status ForwardingStorage::DeleteJob(absl::string_view job_id) {
  KAGENT_FORWARD(DeleteJob(job_id));
}
absl::StatusOr<int64_t> ForwardingStorage::AppendEvent(absl::string_view job_id,
                                                       const v1::JobEvent& event) {
  KAGENT_FORWARD(AppendEvent(job_id, event));
}
absl::StatusOr<std::vector<v1::JobEvent>> ForwardingStorage::ListEvents(
    absl::string_view job_id, int64_t from_sequence, int limit) {
  KAGENT_FORWARD(ListEvents(job_id, from_sequence, limit));
}
absl::Status ForwardingStorage::PutCandidate(const v1::Candidate& candidate) {
  KAGENT_FORWARD(PutCandidate(candidate));
}
absl::StatusOr<v1::Candidate> ForwardingStorage::GetCandidate(absl::string_view candidate_id) {
  KAGENT_FORWARD(GetCandidate(candidate_id));
}
absl::StatusOr<std::vector<v1::Candidate>> ForwardingStorage::ListCandidates(
    absl::string_view job_id, std::optional<int32_t> round) {
  KAGENT_FORWARD(ListCandidates(job_id, round));
}
absl::StatusOr<std::string> ForwardingStorage::PutTaskResult(absl::string_view job_id,
                                                             absl::string_view task_id,
                                                             absl::string_view result) {
  KAGENT_FORWARD(PutTaskResult(job_id, task_id, result));
}
absl::StatusOr<std::string> ForwardingStorage::GetTaskResult(absl::string_view task_id) {
  KAGENT_FORWARD(GetTaskResult(task_id));
}
absl::StatusOr<int64_t> ForwardingStorage::AppendReflexion(absl::string_view job_id,
                                                           const v1::Reflexion& reflexion) {
  KAGENT_FORWARD(AppendReflexion(job_id, reflexion));
}
absl::StatusOr<std::vector<v1::Reflexion>> ForwardingStorage::ListReflexions(
    absl::string_view job_id) {
  KAGENT_FORWARD(ListReflexions(job_id));
}
absl::Status ForwardingStorage::AppendSharedReflexion(const SharedMemoryKey& key,
                                                      absl::string_view source_job_id,
                                                      const v1::Reflexion& reflexion) {
  KAGENT_FORWARD(AppendSharedReflexion(key, source_job_id, reflexion));
}
absl::StatusOr<std::vector<v1::Reflexion>> ForwardingStorage::ListSharedReflexions(
    const SharedMemoryKey& key, int limit) {
  KAGENT_FORWARD(ListSharedReflexions(key, limit));
}
absl::Status ForwardingStorage::PutArtifact(absl::string_view job_id,
                                            const v1::Artifact& artifact) {
  KAGENT_FORWARD(PutArtifact(job_id, artifact));
}
absl::StatusOr<v1::Artifact> ForwardingStorage::GetArtifact(absl::string_view job_id,
                                                            absl::string_view name) {
  KAGENT_FORWARD(GetArtifact(job_id, name));
}
absl::StatusOr<std::vector<v1::Artifact>> ForwardingStorage::ListArtifacts(
    absl::string_view job_id, absl::string_view prefix, bool include_content) {
  KAGENT_FORWARD(ListArtifacts(job_id, prefix, include_content));
}
absl::Status ForwardingStorage::PutCheckpoint(absl::string_view job_id, absl::string_view key,
                                              absl::string_view value) {
  KAGENT_FORWARD(PutCheckpoint(job_id, key, value));
}
absl::StatusOr<std::string> ForwardingStorage::GetCheckpoint(absl::string_view job_id,
                                                             absl::string_view key) {
  KAGENT_FORWARD(GetCheckpoint(job_id, key));
}
absl::StatusOr<int64_t> ForwardingStorage::SchemaVersion() { KAGENT_FORWARD(SchemaVersion()); }

absl::StatusOr<LeaderLease> ForwardingStorage::AcquireLease(absl::string_view name,
                                                           absl::string_view holder,
                                                           absl::string_view address,
                                                           absl::Duration ttl) {
  KAGENT_FORWARD(AcquireLease(name, holder, address, ttl));
}
absl::StatusOr<LeaderLease> ForwardingStorage::GetLease(absl::string_view name) {
  KAGENT_FORWARD(GetLease(name));
}
absl::Status ForwardingStorage::CheckLease(absl::string_view name, absl::string_view holder,
                                           int64_t term) {
  KAGENT_FORWARD(CheckLease(name, holder, term));
}
absl::Status ForwardingStorage::ReleaseLease(absl::string_view name, absl::string_view holder,
                                             int64_t term) {
  KAGENT_FORWARD(ReleaseLease(name, holder, term));
}

#undef KAGENT_FORWARD

absl::Status ForwardingStorage::RunInTransaction(
    absl::FunctionRef<absl::Status(Storage&)> body) {
  KAGENT_RETURN_IF_ERROR(CheckNotReentrant());
  absl::MutexLock lock(&transaction_mu_);
  return WithConnection([&](Storage& connection) {
    transaction_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    absl::Status status = connection.RunInTransaction(body);
    transaction_thread_.store(std::thread::id(), std::memory_order_relaxed);
    return status;
  });
}

}  // namespace kagent::storage
