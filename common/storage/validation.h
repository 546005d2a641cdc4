// Input validation and page tokens shared by every Storage backend, so that all
// backends reject the same input with the same code and message (the conformance suite
// checks codes and the field names in messages).
//
// Pure functions: thread-safe, no state.
#ifndef KAGENT_COMMON_STORAGE_VALIDATION_H_
#define KAGENT_COMMON_STORAGE_VALIDATION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/storage/storage.h"
#include "kagent/v1/common.pb.h"
#include "kagent/v1/job_service.pb.h"

namespace kagent::storage {

// An id-like value: 1..max_bytes printable ASCII bytes (0x21..0x7e). `field` names it
// in the message, e.g. "job.id".
absl::Status ValidateIdentifier(absl::string_view field, absl::string_view value,
                                size_t max_bytes = kMaxStorageIdBytes);

// A name-like value (artifact name, checkpoint key): 1..max_bytes bytes of valid UTF-8
// without control characters (< 0x20 and 0x7f). UTF-8 and no NUL so that every
// backend can keep names as text (PostgreSQL's TEXT refuses both).
absl::Status ValidateName(absl::string_view field, absl::string_view value,
                          size_t max_bytes);

// INVALID_ARGUMENT unless `value` is well-formed UTF-8.
absl::Status ValidateUtf8(absl::string_view field, absl::string_view value);

// RESOURCE_EXHAUSTED when `size` exceeds `limit`.
absl::Status ValidateSize(absl::string_view what, int64_t size, int64_t limit);

absl::Status ValidateJob(const v1::Job& job);
absl::Status ValidateIdempotencyKey(absl::string_view key);
// Validates the event for AppendEvent(job_id, event).
absl::Status ValidateEvent(absl::string_view job_id, const v1::JobEvent& event);
absl::Status ValidateCandidate(const v1::Candidate& candidate);
absl::Status ValidateReflexion(absl::string_view field, const v1::Reflexion& reflexion);
absl::Status ValidateSharedMemoryKey(const SharedMemoryKey& key);
absl::Status ValidateArtifact(const v1::Artifact& artifact);
absl::Status ValidateCheckpoint(absl::string_view key, absl::string_view value);
absl::Status ValidateTaskResult(absl::string_view task_id, absl::string_view result);

// Returns the effective limit: `value` when in 1..max, `default_value` when 0,
// INVALID_ARGUMENT otherwise.
absl::StatusOr<int> NormalizeLimit(absl::string_view field, int value, int default_value,
                                   int max);

// ListJobs page tokens. A token carries the tenant and state filter it was issued for
// and the position (a backend's monotonically increasing creation counter) of the last
// job returned; decoding a token issued for another query is INVALID_ARGUMENT.
std::string EncodeJobPageToken(const ListJobsQuery& query, int64_t last_position);
// Returns the position stored in the token. Precondition: query.page_token not empty.
absl::StatusOr<int64_t> DecodeJobPageToken(const ListJobsQuery& query);

// Validates the whole query (tenant, state, page size, token); returns the effective
// page size.
absl::StatusOr<int> ValidateListJobsQuery(const ListJobsQuery& query);

// Where a ListJobs page starts: the page holds jobs whose position is below the one
// returned (the token's, or the largest int64_t for the first page).
absl::StatusOr<int64_t> JobPageStart(const ListJobsQuery& query);

// The arguments of one Storage method each, checked in the order every backend uses
// (the first error wins). Those with a limit return the effective limit.
absl::Status ValidateCreateJob(const v1::Job& job, absl::string_view idempotency_key);
absl::Status ValidateUpdateJob(const v1::Job& job, int64_t expected_revision);
absl::StatusOr<int> ValidateListEvents(absl::string_view job_id, int64_t from_sequence,
                                       int limit);
absl::Status ValidateListCandidates(absl::string_view job_id, std::optional<int32_t> round);
absl::Status ValidatePutTaskResult(absl::string_view job_id, absl::string_view task_id,
                                   absl::string_view result);
absl::Status ValidateAppendReflexion(absl::string_view job_id, const v1::Reflexion& reflexion);
absl::Status ValidateAppendSharedReflexion(const SharedMemoryKey& key,
                                           absl::string_view source_job_id,
                                           const v1::Reflexion& reflexion);
absl::StatusOr<int> ValidateListSharedReflexions(const SharedMemoryKey& key, int limit);
absl::Status ValidatePutArtifact(absl::string_view job_id, const v1::Artifact& artifact);
absl::Status ValidateGetArtifact(absl::string_view job_id, absl::string_view name);
absl::Status ValidateListArtifacts(absl::string_view job_id, absl::string_view prefix);
absl::Status ValidatePutCheckpoint(absl::string_view job_id, absl::string_view key,
                                   absl::string_view value);
absl::Status ValidateGetCheckpoint(absl::string_view job_id, absl::string_view key);

// Quotes a user-supplied value for an error message: C-escaped, at most 64 bytes shown.
std::string QuoteValue(absl::string_view value);

// Messages for NOT_FOUND, shared so that backends say the same thing.
absl::Status JobNotFound(absl::string_view job_id);
absl::Status CandidateNotFound(absl::string_view candidate_id);
absl::Status TaskResultNotFound(absl::string_view task_id);
absl::Status ArtifactNotFound(absl::string_view job_id, absl::string_view name);
absl::Status CheckpointNotFound(absl::string_view job_id, absl::string_view key);

// The checks a backend makes against what is stored, with the shared messages.
// ALREADY_EXISTS: CreateJob with an id that is taken.
absl::Status JobIdTaken(absl::string_view job_id);
// UpdateJob of `job` whose stored row has `stored_tenant` and `stored_revision`:
// INVALID_ARGUMENT when the tenant differs, ABORTED when the revision is not
// `expected_revision`, OK otherwise.
absl::Status CheckJobUpdate(const v1::Job& job, absl::string_view stored_tenant,
                            int64_t stored_revision, int64_t expected_revision);
// INVALID_ARGUMENT: PutCandidate of `candidate`, stored under `stored_job_id`.
absl::Status CandidateMoved(const v1::Candidate& candidate, absl::string_view stored_job_id);
// PutTaskResult(job_id, task_id, ...) where the task is recorded under
// `stored_job_id`: INVALID_ARGUMENT unless that is `job_id`.
absl::Status CheckTaskJob(absl::string_view task_id, absl::string_view stored_job_id,
                          absl::string_view job_id);

// Leader leases (storage.h): the argument checks, and the shared messages.
absl::Status ValidateAcquireLease(absl::string_view name, absl::string_view holder,
                                  absl::string_view address, absl::Duration ttl);
absl::Status ValidateLeaseName(absl::string_view name);
absl::Status ValidateLeaseHolder(absl::string_view name, absl::string_view holder,
                                 int64_t term);
absl::Status LeaseNotFound(absl::string_view name);
// FAILED_PRECONDITION for CheckLease(name, holder, term) when the database holds
// `stored` (null: never taken).
absl::Status LeaseNotHeld(absl::string_view name, absl::string_view holder, int64_t term,
                          const LeaderLease* stored);
// FAILED_PRECONDITION from every lease method of a backend without leases (SQLite).
absl::Status LeasesUnsupported(absl::string_view backend);

}  // namespace kagent::storage

#endif  // KAGENT_COMMON_STORAGE_VALIDATION_H_
